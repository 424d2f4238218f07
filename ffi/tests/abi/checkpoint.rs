//! Checkpoints: taken after stop and drain, resumed with only what changed,
//! refused when damaged.

// The legacy calls are called here on purpose: C programs link them.
#![allow(deprecated)]

use std::ffi::CString;
use std::ptr::{self, null, null_mut};

use tattler_fakeapi::FakeApi;

use tattler::tattler_status::*;
use tattler::*;

use crate::support::*;

/// `tattler_checkpoint` into a buffer of exactly the size it asks for.
fn checkpoint(r: *mut tattler_reader) -> Vec<u8> {
    let mut needed = 0;
    // SAFETY: a live reader; NULL buffer with length 0 asks for the size.
    let st = unsafe { tattler_checkpoint(r, null_mut(), 0, &mut needed) };
    assert_eq!(st, TATTLER_ERR_BUFFER_TOO_SMALL);
    let mut small = vec![0xffu8; needed - 1];
    let mut again = 0;
    // SAFETY: a live reader and a buffer of small.len() bytes.
    let st = unsafe { tattler_checkpoint(r, small.as_mut_ptr(), small.len(), &mut again) };
    assert_eq!((st, again), (TATTLER_ERR_BUFFER_TOO_SMALL, needed));
    assert!(
        small.iter().all(|&b| b == 0xff),
        "buffer written on failure"
    );
    let mut buf = vec![0u8; needed];
    // SAFETY: as above, with room for it all.
    let st = unsafe { tattler_checkpoint(r, buf.as_mut_ptr(), buf.len(), &mut again) };
    assert_eq!(
        (st, again),
        (TATTLER_OK, needed),
        "the same size once drained"
    );
    buf
}

/// `tattler_open_resume`, which must succeed.
fn open_resume(json: &str, cp: &[u8]) -> *mut tattler_reader {
    let json = CString::new(json).unwrap();
    let mut r = null_mut();
    let mut err = [0u8; 512];
    // SAFETY: valid string, bytes, out-pointer and buffer.
    let st = unsafe {
        tattler_open_resume(
            json.as_ptr(),
            cp.as_ptr(),
            cp.len(),
            &mut r,
            err.as_mut_ptr().cast(),
            err.len(),
        )
    };
    assert_eq!(st, TATTLER_OK, "{}", text(&err));
    r
}

#[test]
fn a_checkpoint_resumes_with_only_what_changed_meanwhile() {
    for compacted in [false, true] {
        let api = FakeApi::start();
        api.apply("pods", FakeApi::pod("ns", "a"));
        let rv_b = api.apply("pods", FakeApi::pod("ns", "b"));
        let rv_c = api.apply("pods", FakeApi::pod("ns", "c"));
        let cfg = config(&api, &["pods"]);
        let r = open(&cfg).unwrap();
        until_synced(r, 1);
        assert_eq!(stop_and_drain(r), Vec::<String>::new());
        let cp = checkpoint(r);
        close(r);
        let doc: serde_json::Value = serde_json::from_slice(&cp).unwrap();
        assert_eq!(doc["tattler_checkpoint"], 1, "{doc}");
        let held = doc["resources"][0]["objects"].as_array().unwrap().len();
        assert_eq!((doc["resources"].as_array().unwrap().len(), held), (1, 3));

        // While no reader runs.
        let rv_a2 = api.apply("pods", FakeApi::pod("ns", "a"));
        let rv_del = api.delete("pods", Some("ns"), "b").unwrap();
        let rv_d = api.apply("pods", FakeApi::pod("ns", "d"));
        if compacted {
            api.compact();
        }
        let r = open_resume(&cfg, &cp);
        // One Synced, once what changed meanwhile came (by the replayed
        // watch, or by a re-sync against the restored state).
        let got = entries(r, 1);
        assert_eq!(
            got.last().unwrap(),
            &format!("Synced v1/pods {}", api.current_rv()),
            "{got:?}"
        );
        if compacted {
            let mut middle = got[..got.len() - 1].to_vec();
            middle.sort();
            assert_eq!(
                middle,
                [
                    format!("Add ns/d {rv_d}"),
                    format!("Delete ns/b {rv_b} (inferred)"),
                    format!("Snapshot ns/c {rv_c}"),
                    // The checkpoint's resourceVersion is compacted away.
                    "Stale pods Resyncing".to_string(),
                    format!("Update ns/a {rv_a2}"),
                ],
                "{got:?}"
            );
        } else {
            assert_eq!(
                got[..got.len() - 1],
                [
                    format!("Update ns/a {rv_a2}"),
                    format!("Delete ns/b {rv_del}"),
                    format!("Add ns/d {rv_d}"),
                ]
            );
        }
        close(r);
    }
}

#[test]
fn a_checkpoint_applies_only_to_the_same_scope() {
    let api = FakeApi::start();
    let rv = api.apply("pods", FakeApi::pod("ns", "a"));
    let r = open(&config(&api, &["pods"])).unwrap();
    until_synced(r, 1);
    stop_and_drain(r);
    let cp = checkpoint(r);
    close(r);
    // The same pods metadata-only, and nodes: neither is in the checkpoint,
    // both sync in full.
    let cfg = serde_json::json!({
        "server": api.url(),
        "resources": [{"resource": "pods", "metadata_only": true}, "nodes"],
    })
    .to_string();
    let r = open_resume(&cfg, &cp);
    let mut got = entries(r, 2);
    got.sort();
    let cur = api.current_rv();
    assert_eq!(
        got,
        [
            format!("Add ns/a {rv}"),
            format!("Synced v1/nodes {cur}"),
            format!("Synced v1/pods {cur}")
        ]
    );
    close(r);
}

#[test]
fn bad_checkpoints_are_refused_and_none_is_an_open() {
    let api = FakeApi::start();
    let cfg = CString::new(config(&api, &["pods"])).unwrap();
    let cases: [(&[u8], &str); 4] = [
        // A part without a resume point is a re-sync against its objects;
        // an object without a resourceVersion is damaged.
        (b"not json", "checkpoint: not a tattler checkpoint (line 1, column"),
        (
            br#"{"tattler_checkpoint":9,"resources":[]}"#,
            "checkpoint: version 9",
        ),
        (br#"{"tattler_checkpoint":1,"resou"#, "checkpoint: not a tattler checkpoint"),
        (
            br#"{"tattler_checkpoint":1,"resources":[{"group":"","version":"v1","resource":"pods","resource_version":"","objects":[["ns","a","u",""]]}]}"#,
            "resources[0].objects[0]",
        ),
    ];
    for (bytes, needle) in cases {
        let sentinel = ptr::dangling_mut::<tattler_reader>();
        let mut r = sentinel;
        let mut err = [0u8; 512];
        // SAFETY: valid string, bytes, out-pointer and buffer.
        let st = unsafe {
            tattler_open_resume(
                cfg.as_ptr(),
                bytes.as_ptr(),
                bytes.len(),
                &mut r,
                err.as_mut_ptr().cast(),
                err.len(),
            )
        };
        let msg = text(&err);
        assert_eq!(st, TATTLER_ERR_INVALID_CHECKPOINT, "{msg}");
        assert!(msg.contains(needle), "{msg:?} lacks {needle:?}");
        assert_eq!(r, sentinel, "*out written on failure");
    }
    let mut r = null_mut();
    let mut err = [0u8; 64];
    // SAFETY: NULL checkpoint with a length (refused), then with 0 (an open).
    unsafe {
        assert_eq!(
            tattler_open_resume(cfg.as_ptr(), null(), 5, &mut r, err.as_mut_ptr().cast(), 64),
            TATTLER_ERR_NULL_ARG
        );
        assert_eq!(text(&err), "checkpoint is NULL");
        // A bad configuration is still the configuration's failure.
        assert_eq!(
            tattler_open_resume(c"{".as_ptr(), null(), 0, &mut r, null_mut(), 0),
            TATTLER_ERR_INVALID_CONFIG
        );
        assert!(r.is_null());
        assert_eq!(
            tattler_open_resume(cfg.as_ptr(), null(), 0, &mut r, null_mut(), 0),
            TATTLER_OK
        );
        let mut needed = 0;
        assert_eq!(
            tattler_checkpoint(r, null_mut(), 3, &mut needed),
            TATTLER_ERR_NULL_ARG
        );
        assert_eq!(
            tattler_checkpoint(null_mut(), null_mut(), 0, &mut needed),
            TATTLER_ERR_NULL_ARG
        );
    }
    assert_eq!(
        until_synced(r, 1),
        [format!("Synced v1/pods {}", api.current_rv())]
    );
    close(r);
}
