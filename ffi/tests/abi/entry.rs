//! `tattler_entry`: its getters, every kind of change, and an entry outliving
//! its reader.

use std::ffi::CStr;
use std::ptr::null_mut;
use std::time::Duration;

use tattler_fakeapi::FakeApi;

use tattler::tattler_status::*;
use tattler::*;

use crate::support::*;

#[test]
fn entries_carry_the_object_and_outlive_their_reader() {
    let api = FakeApi::start();
    let rv1 = api.apply("pods", FakeApi::pod("default", "web-1"));
    let r = open(&config(&api, &["pods"])).unwrap();
    let (st, add) = next(r, WAIT_MS);
    assert_eq!(st, TATTLER_OK);
    let (st, synced) = next(r, WAIT_MS);
    assert_eq!(st, TATTLER_OK);
    close(r);

    // SAFETY: live entries, read after their reader was closed, freed once.
    unsafe {
        assert_eq!(
            tattler_entry_change(add),
            tattler_change::TATTLER_CHANGE_ADD
        );
        assert_eq!(s(tattler_entry_group(add)), "");
        assert_eq!(s(tattler_entry_version(add)), "v1");
        assert_eq!(s(tattler_entry_resource(add)), "pods");
        assert_eq!(s(tattler_entry_kind(add)), "Pod");
        assert_eq!(s(tattler_entry_namespace(add)), "default");
        assert_eq!(s(tattler_entry_name(add)), "web-1");
        assert!(!s(tattler_entry_uid(add)).is_empty());
        assert_eq!(tattler_entry_resource_version(add), rv1);
        assert_eq!(
            CStr::from_ptr(tattler_entry_resource_version_str(add))
                .to_str()
                .unwrap(),
            rv1.to_string()
        );
        assert!(!tattler_entry_inferred(add));
        // No leader election: no term, no holder, no identity.
        let mut term = 7;
        assert!(!tattler_entry_term(add, &mut term));
        assert_eq!(term, 7, "*out written without a term");
        assert_eq!(
            (s(tattler_entry_holder(add)), s(tattler_entry_identity(add))),
            (String::new(), String::new())
        );
        assert_eq!(
            (
                tattler_entry_error_code(add),
                s(tattler_entry_error_message(add))
            ),
            (0, String::new())
        );
        let mut len = 0;
        let obj = tattler_entry_object(add, &mut len);
        let obj: serde_json::Value =
            serde_json::from_slice(std::slice::from_raw_parts(obj, len)).unwrap();
        assert_eq!(obj["metadata"]["name"], "web-1");
        assert_eq!(
            obj["metadata"]["uid"].as_str().unwrap(),
            s(tattler_entry_uid(add))
        );
        tattler_entry_free(add);

        assert_eq!(
            tattler_entry_change(synced),
            tattler_change::TATTLER_CHANGE_SYNCED
        );
        assert_eq!(tattler_entry_resource_version(synced), rv1);
        assert_eq!(
            (
                s(tattler_entry_namespace(synced)),
                s(tattler_entry_name(synced))
            ),
            (String::new(), String::new())
        );
        let mut len = 99;
        assert!(tattler_entry_object(synced, &mut len).is_null());
        assert_eq!(len, 0);
        tattler_entry_free(synced);
    }
}

#[test]
fn updates_deletes_and_errors_come_through() {
    let api = FakeApi::start();
    api.forbid("nodes", true);
    let rv = api.apply("pods", FakeApi::pod("ns", "a"));
    let r = open(&config(&api, &["pods", "nodes"])).unwrap();
    let mut first: Vec<String> = (0..3).map(|_| line(next(r, WAIT_MS).1)).collect();
    first.sort();
    assert_eq!(
        first,
        [
            format!("Add ns/a {rv}"),
            "Error nodes 403 Forbidden".into(),
            format!("Synced v1/pods {rv}")
        ]
    );
    assert!(api.wait_open_watches(1, Duration::from_secs(10)));
    let rv2 = api.apply("pods", FakeApi::pod("ns", "a"));
    assert_eq!(line(next(r, WAIT_MS).1), format!("Update ns/a {rv2}"));
    let rv3 = api.delete("pods", Some("ns"), "a").unwrap();
    assert_eq!(line(next(r, WAIT_MS).1), format!("Delete ns/a {rv3}"));
    close(r);
}

/// A reader under leader election, on a Lease another replica held in its
/// fourth term and stopped renewing: `Following` names that holder, then
/// this reader takes the Lease in term 5 and every entry it delivers
/// carries the term.
#[test]
fn entries_under_leader_election_carry_their_term_and_name_the_holder() {
    let api = FakeApi::start();
    api.add_resource("coordination.k8s.io", "v1", "leases", "Lease", true);
    api.apply(
        "coordination.k8s.io/v1/leases",
        serde_json::json!({
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"namespace": "ns", "name": "feed"},
            "spec": {"holderIdentity": "other", "leaseDurationSeconds": 1, "leaseTransitions": 4},
        }),
    );
    api.apply("pods", FakeApi::pod("default", "web-1"));
    let json = serde_json::json!({
        "server": api.url(),
        "resources": ["pods"],
        "leader_election": {
            "namespace": "ns", "lease": "feed", "identity": "me",
            "lease_duration_secs": 3, "renew_deadline_secs": 2, "retry_period_secs": 1,
        },
    });
    let r = open(&json.to_string()).unwrap();
    // The change, identity, holder and term (None: the getter said false).
    let seen = |e: *mut tattler_entry| {
        let mut term = u64::MAX;
        // SAFETY: a live entry and a valid out-pointer.
        let has = unsafe { tattler_entry_term(e, &mut term) };
        // SAFETY: as above; NULL asks only whether there is one.
        assert_eq!(has, unsafe { tattler_entry_term(e, null_mut()) });
        assert_eq!(has, term != u64::MAX, "*out written exactly with a term");
        let got = (
            s(tattler_change_str(
                tattler_entry_change(e) as std::ffi::c_int
            )),
            s(tattler_entry_identity(e)),
            s(tattler_entry_holder(e)),
            has.then_some(term),
        );
        tattler_entry_free(e);
        got
    };
    let entries: Vec<_> = (0..4).map(|_| seen(next(r, WAIT_MS).1)).collect();
    close(r);
    let want = |change: &str, identity: &str, holder: &str, term| {
        (
            change.to_string(),
            identity.to_string(),
            holder.to_string(),
            term,
        )
    };
    assert_eq!(
        entries,
        [
            want("Following", "me", "other", None),
            want("Leading", "me", "me", Some(5)),
            want("Add", "", "", Some(5)),
            want("Synced", "", "", Some(5)),
        ],
    );
    let lease = api
        .get("coordination.k8s.io/v1/leases", Some("ns"), "feed")
        .unwrap();
    assert_eq!(lease["spec"]["leaseTransitions"], 5);
}

#[test]
fn change_numbers_are_the_rust_ones() {
    use kube_tattler::Change;
    for c in [
        Change::Add,
        Change::Update,
        Change::Delete,
        Change::Snapshot,
        Change::Synced,
        Change::Error,
    ] {
        assert_eq!(tattler_change::from(c) as u8, c as u8, "{c}");
    }
}
