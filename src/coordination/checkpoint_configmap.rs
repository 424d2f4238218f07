//! The checkpoint kept in the cluster: a ConfigMap whose data key
//! `checkpoint` holds [`Checkpoint::to_bytes`](crate::Checkpoint::to_bytes)
//! (pure: the documents both ways).
//!
//! A ConfigMap, not the Lease's annotations: the apiserver limits an
//! object's annotations to 256 KiB in all, a ConfigMap to 1 MiB. A
//! checkpoint holds per object its namespace, name, uid and resourceVersion
//! (about 100 bytes), never its content: no Secret's value can enter it.

use serde_json::{json, Value};

/// The data key holding the checkpoint.
pub(crate) const KEY: &str = "checkpoint";

/// The largest checkpoint written: a ConfigMap is at most 1 MiB (1,048,576
/// bytes) with its metadata, and the JSON string escapes a few bytes.
pub(crate) const MAX_BYTES: usize = 1_000_000;

/// The ConfigMap as read: its resourceVersion (the next write's
/// precondition), the checkpoint's bytes if it has the key, and the whole
/// object, which the next write updates: its other keys, labels,
/// annotations and owner references stay.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct KeptMap {
    pub resource_version: String,
    pub checkpoint: Option<Vec<u8>>,
    pub object: Value,
}

/// The annotation on the kept ConfigMap that records the term of the
/// leader that wrote it: a Lease created again (it was deleted) counts its
/// terms on from there, and a replica that never saw the Lease does not
/// create it at once while the election has run before.
pub(crate) const TERM_ANNOTATION: &str = "tattler.io/term";

/// The ConfigMap to PUT over `read` or to POST (`read` is `None`), its
/// `checkpoint` key set and `annotations` (the shard count,
/// [`SHARDS_ANNOTATION`](super::lease::SHARDS_ANNOTATION), and the
/// [`TERM_ANNOTATION`]); `None` for a checkpoint that is not text (it is
/// JSON, so never).
pub(crate) fn configmap_body(
    namespace: &str,
    name: &str,
    read: Option<&KeptMap>,
    checkpoint: &[u8],
    annotations: &[(&str, String)],
) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(checkpoint).ok()?;
    let mut doc = match read.map(|k| &k.object) {
        Some(Value::Object(o)) => Value::Object(o.clone()),
        _ => json!({"apiVersion": "v1", "kind": "ConfigMap"}),
    };
    super::set_metadata(
        &mut doc,
        namespace,
        name,
        read.map(|k| k.resource_version.as_str()),
    );
    for (k, v) in annotations {
        doc["metadata"]["annotations"][*k] = json!(v);
    }
    if !doc.get("data").is_some_and(Value::is_object) {
        doc["data"] = json!({});
    }
    doc["data"][KEY] = json!(text);
    serde_json::to_vec(&doc).ok()
}

/// A ConfigMap as the server sends it; `None` when it is not a ConfigMap.
pub(crate) fn parse_configmap(body: &[u8]) -> Option<KeptMap> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let resource_version = v
        .get("metadata")?
        .get("resourceVersion")?
        .as_str()?
        .to_string();
    let checkpoint = v
        .get("data")
        .and_then(|d| d.get(KEY))
        .and_then(Value::as_str)
        .map(|s| s.as_bytes().to_vec());
    Some(KeptMap {
        resource_version,
        checkpoint,
        object: v,
    })
}

/// The term recorded on a kept ConfigMap ([`TERM_ANNOTATION`]).
pub(crate) fn recorded_term(m: &KeptMap) -> Option<u64> {
    m.object["metadata"]["annotations"][TERM_ANNOTATION]
        .as_str()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checkpoint_round_trips_through_its_configmap() {
        let cp = crate::checkpoint::Checkpoint::default().to_bytes();
        let fresh = configmap_body("ns", "cp", None, &cp, &[]).unwrap();
        let v: Value = serde_json::from_slice(&fresh).unwrap();
        assert_eq!(v["metadata"], json!({"name": "cp", "namespace": "ns"}));
        let mut read = parse_configmap(&fresh).unwrap_or_else(|| {
            // As the server answers: with a resourceVersion.
            let mut v = v.clone();
            v["metadata"]["resourceVersion"] = json!("9");
            parse_configmap(&serde_json::to_vec(&v).unwrap()).unwrap()
        });
        assert_eq!(read.checkpoint.as_deref(), Some(&cp[..]));
        read.resource_version = "9".into();
        let put: Value = serde_json::from_slice(
            &configmap_body(
                "ns",
                "cp",
                Some(&read),
                &cp,
                &[
                    ("tattler.io/shards", "3".into()),
                    (TERM_ANNOTATION, "7".into()),
                ],
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(put["metadata"]["resourceVersion"], "9");
        assert_eq!(put["metadata"]["annotations"]["tattler.io/shards"], "3");
        assert_eq!(put["metadata"]["annotations"]["tattler.io/term"], "7");
        let back = parse_configmap(&serde_json::to_vec(&put).unwrap()).unwrap();
        assert_eq!(recorded_term(&back), Some(7));
        // A ConfigMap without the key: nothing to resume from.
        let other =
            parse_configmap(br#"{"metadata":{"resourceVersion":"3"},"data":{"other":"x"}}"#)
                .unwrap();
        assert_eq!(
            (other.resource_version.as_str(), other.checkpoint),
            ("3", None)
        );
        assert_eq!(parse_configmap(b"nope"), None);
    }

    /// Issue 37: a write updates the ConfigMap it read; what it did not set
    /// stays (other keys, labels, annotations, owner references).
    #[test]
    fn a_write_keeps_what_it_did_not_set() {
        let read = parse_configmap(
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cp","namespace":"ns","resourceVersion":"5",
                "labels":{"team":"a"},"annotations":{"note":"x"},
                "ownerReferences":[{"apiVersion":"apps/v1","kind":"Deployment","name":"d","uid":"u"}]},
                "data":{"checkpoint":"old","other":"kept"}}"#,
        )
        .unwrap();
        let body = configmap_body("ns", "cp", Some(&read), b"new", &[]).unwrap();
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["data"], json!({"checkpoint": "new", "other": "kept"}));
        assert_eq!(v["metadata"]["labels"], json!({"team": "a"}));
        assert_eq!(v["metadata"]["annotations"], json!({"note": "x"}));
        assert_eq!(v["metadata"]["ownerReferences"][0]["name"], "d");
        assert_eq!(v["metadata"]["resourceVersion"], "5");
    }
}
