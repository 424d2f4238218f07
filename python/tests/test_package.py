"""The package's metadata agrees with the crate's, and an installed package carries its library."""

import os
import re

import pytest

import kube_tattler
from conftest import REPO


def cargo(key: str) -> str:
    text = open(os.path.join(REPO, "Cargo.toml"), encoding="utf-8").read()
    return re.search(r'^%s = "([^"]*)"' % key, text, re.M).group(1)


def pyproject(pattern: str) -> str:
    text = open(os.path.join(REPO, "python", "pyproject.toml"), encoding="utf-8").read()
    return re.search(pattern, text, re.M).group(1)


def test_the_version_is_the_crates() -> None:
    assert kube_tattler.__version__ == cargo("version") == pyproject(r'^version = "([^"]*)"')
    assert kube_tattler.library_version() == cargo("version")


def test_the_project_url_is_the_repositorys() -> None:
    assert pyproject(r'^Repository = "([^"]*)"') == cargo("repository") == "https://example.invalid/kube-tattler"


@pytest.mark.skipif(os.environ.get("KUBE_TATTLER_EXPECT_INSTALLED") != "1", reason="tests the installed wheel")
def test_the_installed_metadata() -> None:
    from importlib import metadata

    meta = metadata.metadata("kube-tattler")
    assert meta["Version"] == kube_tattler.__version__
    assert "Repository, https://example.invalid/kube-tattler" in meta.get_all("Project-URL")
    assert meta["License-Expression"] == "MIT OR Apache-2.0"
    files = {str(f) for f in metadata.files("kube-tattler")}
    assert "kube_tattler/libtattler.so" in files and "kube_tattler/py.typed" in files
    wheel = metadata.distribution("kube-tattler").read_text("WHEEL")
    assert "Tag: py3-none-linux_x86_64" in wheel and "Root-Is-Purelib: false" in wheel


def test_kube_tattler_lib_is_the_only_candidate_when_set(monkeypatch, tmp_path) -> None:
    from kube_tattler import _native

    monkeypatch.setenv("KUBE_TATTLER_LIB", str(tmp_path / "nothing.so"))
    assert list(_native.candidates()) == [("KUBE_TATTLER_LIB", str(tmp_path / "nothing.so"))]
    monkeypatch.delenv("KUBE_TATTLER_LIB")
    hows = [how for how, _ in _native.candidates()]
    assert hows[0] == "the wheel" and hows[-1] == "the system loader"
