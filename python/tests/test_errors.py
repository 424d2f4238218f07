"""Typed exceptions: each failing tattler_status is its own class, under kube_tattler.Error."""

import json

import pytest

import kube_tattler
from kube_tattler import errors
from conftest import Fake, until_synced

UNREACHABLE = "http://127.0.0.1:1"


def test_a_mistyped_key_is_invalid_config_naming_it() -> None:
    with pytest.raises(kube_tattler.InvalidConfig) as caught:
        kube_tattler.open({"sever": UNREACHABLE, "resources": ["pods"]})
    e = caught.value
    assert e.status == 101 and isinstance(e, kube_tattler.Error) and isinstance(e, ValueError)
    assert "unknown key `sever`" in e.message and str(e) == e.message
    # The C library names the key it takes for the one mistyped.
    assert e.message.endswith("(did you mean `server`?)"), e.message


@pytest.mark.parametrize(
    "config, cls, says",
    [
        ("{not json", kube_tattler.InvalidConfig, "not valid JSON"),
        ('["pods"]', kube_tattler.InvalidConfig, "must be an object"),
        ({"server": UNREACHABLE, "resources": "pods"}, kube_tattler.InvalidConfig, "resources"),
        ({"server": UNREACHABLE, "resources": ["pods"], "page_size": "many"}, kube_tattler.InvalidConfig, "page_size"),
        ({"server": UNREACHABLE, "resources": ["a/b/c/d"]}, kube_tattler.InvalidResource, "a/b/c/d"),
        ({"server": UNREACHABLE, "resources": ["pods"], "ca_file": "/nonexistent/ca.crt"}, kube_tattler.Io, "/nonexistent/ca.crt"),
        ('{"resources":["pods"],"server":"' + UNREACHABLE + '"}\0', kube_tattler.InvalidConfig, "NUL"),
    ],
)
def test_a_bad_configuration_raises_its_class(config, cls, says) -> None:
    with pytest.raises(cls) as caught:
        kube_tattler.open(config)
    assert caught.value.status == cls.STATUS
    assert says in caught.value.message


def test_keyword_keys_join_a_dict_and_refuse_a_string() -> None:
    with pytest.raises(kube_tattler.InvalidConfig, match="bogus"):
        kube_tattler.open({"server": UNREACHABLE}, resources=["pods"], bogus=1)
    with pytest.raises(TypeError):
        kube_tattler.open('{"resources":["pods"]}', server=UNREACHABLE)
    with pytest.raises(TypeError):
        kube_tattler.open(["pods"])  # type: ignore[arg-type]


def test_a_bad_checkpoint_is_invalid_checkpoint(fake: Fake) -> None:
    with pytest.raises(kube_tattler.InvalidCheckpoint, match="version 7"):
        kube_tattler.open(fake.config("pods"), checkpoint=json.dumps({"tattler_checkpoint": 7, "resources": []}).encode())
    with kube_tattler.open(fake.config("pods"), checkpoint=b"") as r:  # empty: a plain open
        until_synced(r)


def test_set_resources_errors(fake: Fake) -> None:
    with kube_tattler.open(fake.config("pods")) as r:
        with pytest.raises(kube_tattler.InvalidResource, match=r"resources\[1\]\.nmespace"):
            r.set_resources(["pods", {"resource": "configmaps", "nmespace": "x"}])
        with pytest.raises(kube_tattler.InvalidConfig):
            r.set_resources([])
        until_synced(r)  # nothing changed: the pods stream runs on
        r.stop()
        with pytest.raises(kube_tattler.Closed):
            r.set_resources(["configmaps"])


def test_every_failure_status_has_a_class() -> None:
    numbers = {cls.STATUS for cls in errors._BY_STATUS.values()}
    assert numbers == {2} | set(range(100, 114))
    assert all(issubclass(cls, kube_tattler.Error) for cls in errors._BY_STATUS.values())
    # A status newer than this package is still an Error, with the library's text.
    e = errors.from_status(150)
    assert type(e) is kube_tattler.Error and e.status == 150 and e.message == "unknown status"
    assert errors.from_status(101).message == kube_tattler._native.lib().tattler_status_str(101).decode()
