#!/usr/bin/env python3
"""Builds every C, C++ and Go code block of the READMEs and guides against an
installed tattler, so that no snippet a user copies can rot.

    ffi/check_snippets.py PREFIX [FILE.md ...]   (default: README.md ffi/README.md docs/*.md)

A block that is a whole program (it has `main`) is built as it stands. Any
other block is the body of `main` (C, C++) or of `func run() error` (Go):
its `#include` / `import` lines go to the top of the file, and an HTML
comment right before the block, `<!-- prelude ... -->`, may declare what the
block uses without showing it (`tattler_reader *r; char err[512];`). A block
whose info string says `fragment` (```c fragment) is not built; it must say
why in the text around it. Nothing else is added: a block that calls
`printf` must include <stdio.h> itself.

C is built as C11 and C++ as C++17, at -Wall -Wextra -Werror (unused
variables and parameters aside: a snippet may declare what it shows), through
pkg-config; Go as a module that requires the package with a `replace` to a
copy of ffi/go, through pkg-config too (`go vet`, `go build`).
"""

import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BLOCK = re.compile(r"(?:<!--\s*prelude\n(?P<prelude>.*?)-->\s*\n)?^```(?P<info>[^\n]*)\n(?P<code>.*?)^```", re.S | re.M)
LANGS = {"c": "c", "cpp": "cpp", "c++": "cpp", "go": "go"}
WARN = ["-Wall", "-Wextra", "-Werror", "-Wno-unused-variable", "-Wno-unused-parameter",
        "-Wno-unused-but-set-variable"]


def blocks(path):
    text = open(path, encoding="utf-8").read()
    for m in BLOCK.finditer(text):
        words = m.group("info").split()
        if not words or words[0] not in LANGS:
            continue
        line = text[: m.start("code")].count("\n")
        yield line, LANGS[words[0]], "fragment" in words[1:], m.group("prelude") or "", m.group("code")


def split_top(code, prelude, top_prefix):
    top, body = [], []
    for part in (prelude, code):
        for l in part.splitlines():
            (top if l.lstrip().startswith(top_prefix) else body).append(l)
    return "\n".join(top), "\n".join(body)


# A function defined at the left margin: the block is declarations, not a body.
C_FUNCTION = re.compile(r"^[A-Za-z_][\w \t\*&:<>,]*?\b(\w+)\s*\([^;{]*\)\s*(const\s*)?\{", re.M)
GO_IMPORTS = re.compile(r"^import\s*\(.*?^\)\s*$|^import\s+[^\n(]*$", re.S | re.M)


def c_source(lang, prelude, code):
    sig = "int main(void)" if lang == "c" else "int main()"
    names = [m.group(1) for m in C_FUNCTION.finditer(code)]
    if "main" in names:
        return prelude + "\n" + code
    if names:
        return f"{prelude}\n{code}\n{sig} {{ return 0; }}\n"
    top, body = split_top(code, prelude, "#include")
    return f"{top}\n\n{sig} {{\n{body}\n    return 0;\n}}\n"


def go_source(prelude, code):
    text = prelude + "\n" + code
    imports = "\n".join(m.group(0) for m in GO_IMPORTS.finditer(text))
    rest = GO_IMPORTS.sub("", text)
    if re.search(r"^func main\(\)", rest, re.M):
        return f"package main\n\n{imports}\n{rest}"
    if re.search(r"^func ", rest, re.M):
        return f"package main\n\n{imports}\n{rest}\n\nfunc main() {{}}\n"
    return f"package main\n\n{imports}\n\nfunc run() error {{\n{rest}\n\treturn nil\n}}\n\nfunc main() {{ _ = run() }}\n"


def run(cmd, cwd, env=None):
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    return p.returncode == 0, (p.stdout + p.stderr).strip()


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    prefix = os.path.abspath(sys.argv[1])
    files = sys.argv[2:] or ([os.path.join(ROOT, "README.md"), os.path.join(ROOT, "ffi", "README.md")]
                             + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))))
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(prefix, "lib", "pkgconfig"))
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "tattler"], env=env,
                           capture_output=True, text=True, check=True).stdout.split()
    work = tempfile.mkdtemp(prefix="tattler-snippets.")
    gopkg = os.path.join(work, "gopkg")
    shutil.copytree(os.path.join(ROOT, "ffi", "go"), gopkg,
                    ignore=shutil.ignore_patterns("*_test.go", "example"))
    modpath = re.search(r"^module\s+(\S+)", open(os.path.join(gopkg, "go.mod")).read(), re.M).group(1)
    built, skipped, failed = 0, 0, []
    try:
        for path in files:
            shown = os.path.relpath(path, ROOT)
            for n, (line, lang, fragment, prelude, code) in enumerate(blocks(path)):
                where = f"{shown}:{line + 1} ({lang})"
                if fragment:
                    skipped += 1
                    continue
                d = os.path.join(work, f"s{built + len(failed) + skipped}")
                os.makedirs(d)
                if lang in ("c", "cpp"):
                    src = os.path.join(d, "snippet." + lang)
                    open(src, "w").write(c_source(lang, prelude, code))
                    cc = ["cc", "-std=c11"] if lang == "c" else ["c++", "-std=c++17"]
                    ok, out = run(cc + WARN + [src, "-o", os.path.join(d, "a.out")] + flags, d, env)
                else:
                    open(os.path.join(d, "main.go"), "w").write(go_source(prelude, code))
                    open(os.path.join(d, "go.mod"), "w").write(
                        f"module snippet\n\ngo 1.23\n\nrequire {modpath} v0.0.0\n\nreplace {modpath} => {gopkg}\n")
                    ok, out = run(["go", "vet", "./..."], d, env)
                    if ok:
                        ok, out = run(["go", "build", "-o", os.devnull, "."], d, env)
                if ok:
                    built += 1
                else:
                    failed.append((where, out))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for where, out in failed:
        print(f"check_snippets: {where} does not build:\n{out}\n", file=sys.stderr)
    print(f"check_snippets: {built} built, {skipped} fragments skipped, {len(failed)} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
