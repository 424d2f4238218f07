#!/usr/bin/env python3
"""The core crate's layers run one way, and its root is a face.

Each top-level module of src/ (a folder or a file) may use only the modules
listed below it in LAYERS; no module reaches a public type through the crate
root (`crate::Entry`): it imports from the file that defines it. Code only:
comments and each file's `#[cfg(test)] mod tests` are not read. Prints the
arrows between modules, then fails on any that runs back up.

    python3 .ci/layers.py        (from the repository's root)
"""
import pathlib
import re
import sys

# Top to bottom: a module may use the ones after it.
LAYERS = [
    "reader",  # the consumer's API, the watch set, relists
    "coordination",  # leader election, the kept checkpoint
    "stream",  # one resource on one thread
    "api",  # asking the apiserver
    "config_json",  # the configuration as one JSON document
    "config",
    "delivery",  # per-resource state, the channel out
    "checkpoint",
    "resource",
    "access",  # reaching the cluster
    "wire",  # the apiserver's bytes, pure
    "objects",  # what tattler does to an object, pure
    "entry",
    "error",
    "sync",
    "resource_version",
]
# The root (the public face) and the fuzz targets' entry points use anything.
EXEMPT = {"lib", "fuzz_hooks"}


def code(text):
    cut = text.find("#[cfg(test)]\nmod tests")
    if cut >= 0:
        text = text[:cut]
    return "\n".join(l for l in text.split("\n") if not l.lstrip().startswith("//"))


def main():
    src = pathlib.Path("src")
    arrows, bad = {}, []
    for f in sorted(src.rglob("*.rs")):
        top = f.relative_to(src).parts[0].removesuffix(".rs")
        if top in EXEMPT:
            continue
        if top not in LAYERS:
            bad.append(f"{f}: module {top!r} is not in .ci/layers.py's LAYERS")
            continue
        text = code(f.read_text())
        for m in re.finditer(r"crate::([A-Za-z_]+)", text):
            dep = m.group(1)
            if dep == top:
                continue
            if dep[0].isupper() or dep == "REDACTED":
                bad.append(f"{f}: crate::{dep} goes through the crate root; import it from where it is defined")
                continue
            if dep not in LAYERS:
                continue
            arrows.setdefault((top, dep), set()).add(str(f))
            if LAYERS.index(dep) < LAYERS.index(top):
                bad.append(f"{f}: {top} uses {dep}, which stands above it")
    for (a, b), files in sorted(arrows.items(), key=lambda x: (LAYERS.index(x[0][0]), LAYERS.index(x[0][1]))):
        print(f"{a} -> {b} ({len(files)} files)")
    print(f"{len(arrows)} arrows between {len(LAYERS)} modules; {len(bad)} problems")
    for b in bad:
        print("layers.py:", b, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
