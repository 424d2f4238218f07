"""Every Python block of the READMEs and the guides (docs/python.md) runs, against the fake
apiserver found through $KUBECONFIG.

A block that streams would run forever: the runner makes each reader stop
itself once every resource it streams has reached SYNCED (or ended with an
ERROR), so the block's loop ends as it would on a stop() from elsewhere. A
block whose info string says `fragment` (```python fragment) is not run; the
text around it must say why.
"""

import glob
import os
import re
import subprocess
import sys

import pytest

from conftest import REPO, Fake

FILES = ([os.path.join(REPO, "README.md"), os.path.join(REPO, "python", "README.md")]
         + sorted(glob.glob(os.path.join(REPO, "docs", "*.md"))))
BLOCK = re.compile(r"^```python(?P<info>[^\n]*)\n(?P<code>.*?)^```", re.S | re.M)

RUNNER = """
import runpy, sys
from kube_tattler import Change, reader

_next = reader.Reader.next

def next_until_synced(self, timeout=None):
    e = _next(self, timeout)
    if e is not None and (e.change == Change.SYNCED or (e.change == Change.ERROR and e.error.ended)):
        ended = self.__dict__.setdefault("_snippet_ended", set())
        ended.add(str(e.resource))
        if len(ended) >= len(self.stats()):
            self.stop()
    return e

reader.Reader.next = next_until_synced
runpy.run_path(sys.argv[1], run_name="__main__")
"""

KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster: {server: "%s"}
users:
- name: nobody
  user: {}
contexts:
- name: fake
  context: {cluster: fake, user: nobody}
current-context: fake
"""


def blocks():
    for path in FILES:
        text = open(path, encoding="utf-8").read()
        for m in BLOCK.finditer(text):
            line = text[: m.start("code")].count("\n") + 1
            where = "%s:%d" % (os.path.relpath(path, REPO), line)
            fragment = "fragment" in m.group("info").split()
            yield pytest.param(m.group("code"), id=where, marks=[pytest.mark.skip("fragment")] if fragment else [])


def test_the_readmes_have_python_blocks() -> None:
    assert len(list(blocks())) >= 4


@pytest.mark.parametrize("code", list(blocks()))
def test_a_readme_block_runs(code: str, fake: Fake, tmp_path) -> None:
    snippet = tmp_path / "snippet.py"
    snippet.write_text(code)
    (tmp_path / "kubeconfig").write_text(KUBECONFIG % fake.url)
    env = dict(os.environ, KUBECONFIG=str(tmp_path / "kubeconfig"))
    env.pop("PYTHONPATH", None)
    if os.environ.get("KUBE_TATTLER_EXPECT_INSTALLED") != "1":
        env["PYTHONPATH"] = os.path.join(REPO, "python")
    p = subprocess.run([sys.executable, "-c", RUNNER, str(snippet)], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=25)
    assert p.returncode == 0, "the block failed:\n%s\n%s" % (p.stdout, p.stderr)
