"""The stream against the fake apiserver: the initial state, Synced, live changes, errors, resumes."""

import json
import selectors

import kube_tattler
from kube_tattler import Change
from conftest import Fake, line, next_entry, until, until_synced


def test_the_initial_state_then_synced(fake: Fake) -> None:
    with kube_tattler.open(fake.config("pods")) as r:
        got = until_synced(r)
        want = sorted("Add %s %d" % kv for kv in fake.seeded.items())
        assert sorted(line(e) for e in got) == want
        for e in got:
            assert e.change is Change.ADD and isinstance(e.change, Change)
            assert e.resource == kube_tattler.Resource("", "v1", "pods", "Pod")
            assert e.resource_version_str == str(e.resource_version)
            assert e.uid and not e.inferred and e.error is None
            obj = e.object()
            assert obj["metadata"]["name"] == e.name and obj["metadata"]["uid"] == e.uid
            assert json.loads(e.raw_object) == obj and isinstance(e.raw_object, bytes)
        # The Synced entry: at the newest version, without an object.
        stats = r.stats()
        assert [(s["resource"], s["synced"], s["objects"]) for s in stats] == [("v1/pods", True, 3)]
        assert 'tattler_objects{resource="v1/pods"} 3\n' in r.metrics_text()


def test_synced_carries_the_version_the_state_is_complete_at(fake: Fake) -> None:
    with kube_tattler.open(server=fake.url, resources=["pods"]) as r:
        entries = until(r, lambda e: e.change == Change.SYNCED)
        synced = entries[-1]
        assert line(synced) == "Synced v1/pods %d" % max(fake.seeded.values())
        assert synced.raw_object is None and synced.object() is None
        assert (synced.namespace, synced.name, synced.uid) == ("", "", "")


def test_live_changes_after_synced(fake: Fake) -> None:
    with kube_tattler.open(fake.config("pods")) as r:
        until_synced(r)
        add = fake.do("apply pods shop web")
        assert line(next_entry(r)) == "Add shop/web %d" % add
        update = fake.do("apply pods shop web")
        e = next_entry(r)
        assert line(e) == "Update shop/web %d" % update
        assert e.object()["metadata"]["resourceVersion"] == str(update)
        delete = fake.do("delete pods default pod-1")
        e = next_entry(r)
        assert line(e) == "Delete default/pod-1 %d" % delete
        assert not e.inferred
        assert r.next(timeout=0) is None  # nothing else queued


def test_a_forbidden_resource_ends_with_an_error_entry_and_the_others_go_on(fake: Fake) -> None:
    fake.do("forbid nodes on")
    with kube_tattler.open(fake.config("nodes", "pods")) as r:
        # Resources stream independently: the two ends come in either order.
        ends = set()
        entries = until(r, lambda e: e.change in (Change.SYNCED, Change.ERROR) and ends.add(e.change) is None and len(ends) == 2)
        errors = [e for e in entries if e.change == Change.ERROR]
        assert [line(e) for e in errors] == ["Error v1/nodes 403 Forbidden ended=True"]
        info = errors[0].error
        assert info is not None and info.message
        assert sum(1 for e in entries if e.change == Change.ADD) == 3
        # The stream of pods goes on.
        rv = fake.do("apply pods default pod-9")
        assert line(next_entry(r)) == "Add default/pod-9 %d" % rv
        failed = {s["resource"]: s["failed"] for s in r.stats()}
        assert failed == {"v1/nodes": True, "v1/pods": False}


def test_set_resources_adds_and_removes_streams(fake: Fake) -> None:
    with kube_tattler.open(fake.config("pods")) as r:
        until_synced(r)
        cm = fake.do("apply configmaps default settings")
        assert r.set_resources(["pods", {"resource": "configmaps", "namespace": "default"}]) is True
        got = until_synced(r, "configmaps")
        assert [line(e) for e in got] == ["Add default/settings %d" % cm]
        assert r.set_resources(json.dumps(["pods", {"resource": "configmaps", "namespace": "default"}])) is False
        assert r.set_resources(["configmaps"]) is True
        assert [s["resource"] for s in r.stats()] == ["v1/configmaps"]


def test_a_checkpoint_resumes_with_only_what_changed(fake: Fake) -> None:
    cp = _checkpoint_after_sync(fake)
    add = fake.do("apply pods shop new")
    update = fake.do("apply pods default pod-1")
    delete = fake.do("delete pods default pod-2")
    with kube_tattler.open(fake.config("pods"), checkpoint=cp) as r:
        got = [line(next_entry(r)) for _ in range(4)]
        assert got == [
            "Add shop/new %d" % add,
            "Update default/pod-1 %d" % update,
            "Delete default/pod-2 %d" % delete,
            "Synced v1/pods %d" % delete,
        ]


def test_a_resume_past_compaction_resyncs_and_infers_the_delete(fake: Fake) -> None:
    cp = _checkpoint_after_sync(fake)
    add = fake.do("apply pods shop new")
    update = fake.do("apply pods default pod-1")
    fake.do("delete pods default pod-2")
    fake.do("compact")
    with kube_tattler.open(fake.config("pods"), checkpoint=cp) as r:
        got = until_synced(r)
        # The re-sync a compacted resume point calls for is told first.
        stale = [e.error.reason for e in got if e.change == Change.STALE and e.error]
        assert stale == ["Resyncing"]
        assert sorted(line(e) for e in got if e.change != Change.STALE) == [
            "Add shop/new %d" % add,
            "Delete default/pod-2 %d inferred" % fake.seeded["default/pod-2"],
            "Snapshot default/pod-3 %d" % fake.seeded["default/pod-3"],
            "Update default/pod-1 %d" % update,
        ]


def _checkpoint_after_sync(fake: Fake) -> bytes:
    # Shutting down as the header says: stop, drain, checkpoint, close.
    with kube_tattler.open(fake.config("pods")) as r:
        until_synced(r)
        r.stop()
        assert list(r) == []
        cp = r.checkpoint()
    assert isinstance(cp, bytes) and json.loads(cp)
    return cp


def test_the_readiness_fd_works_with_selectors(fake: Fake) -> None:
    with kube_tattler.open(fake.config("pods")) as r, selectors.DefaultSelector() as sel:
        sel.register(r, selectors.EVENT_READ)
        got = []
        while not got or got[-1].change != Change.SYNCED:
            assert sel.select(timeout=10), "the fd never became readable"
            while True:
                e = r.next(timeout=0)
                if e is None:
                    break
                got.append(e)
        assert len(got) == 4


def test_under_leader_election_entries_carry_their_term_and_name_the_holder(fake: Fake) -> None:
    # Without leader election: no term, no holder.
    with kube_tattler.open(fake.config("pods")) as r:
        e = next_entry(r)
        assert e.change is Change.ADD and e.term is None and e.holder is None
    # A Lease another replica held in its fourth term and stopped renewing:
    # FOLLOWING names it; this reader takes it in term 5, which LEADING and
    # every entry after it carry.
    fake.do("add-resource coordination.k8s.io v1 leases Lease namespaced")
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"namespace": "ns", "name": "feed"},
        "spec": {"holderIdentity": "other", "leaseDurationSeconds": 1, "leaseTransitions": 4},
    }
    fake.do("apply-json coordination.k8s.io/v1/leases " + json.dumps(lease))
    election = {
        "namespace": "ns",
        "lease": "feed",
        "identity": "me",
        "lease_duration_secs": 3,
        "renew_deadline_secs": 2,
        "retry_period_secs": 1,
    }
    with kube_tattler.open(fake.config("pods", leader_election=election)) as r:
        got = until(r, lambda e: e.change == Change.SYNCED)
    assert [(str(e.change), e.identity, e.holder, e.term) for e in got] == [
        ("Following", "me", "other", None),
        ("Leading", "me", "me", 5),
        ("Add", "", None, 5),
        ("Add", "", None, 5),
        ("Add", "", None, 5),
        ("Synced", "", None, 5),
    ]
    assert "term=5 holder=me" in repr(got[1])
