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

/// The ConfigMap to PUT (with `resource_version`) or POST (without);
/// `None` for a checkpoint that is not text (it is JSON, so never).
pub(crate) fn configmap_body(
    namespace: &str,
    name: &str,
    resource_version: Option<&str>,
    checkpoint: &[u8],
) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(checkpoint).ok()?;
    let metadata = super::write_metadata(namespace, name, resource_version);
    let doc = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata,
        "data": { KEY: text },
    });
    serde_json::to_vec(&doc).ok()
}

/// A ConfigMap as the server sends it: its resourceVersion and the
/// checkpoint's bytes, if it has the key. `None` when it is not a ConfigMap.
pub(crate) fn parse_configmap(body: &[u8]) -> Option<(String, Option<Vec<u8>>)> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let rv = v
        .get("metadata")?
        .get("resourceVersion")?
        .as_str()?
        .to_string();
    let data = v
        .get("data")
        .and_then(|d| d.get(KEY))
        .and_then(Value::as_str)
        .map(|s| s.as_bytes().to_vec());
    Some((rv, data))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checkpoint_round_trips_through_its_configmap() {
        let cp = crate::checkpoint::Checkpoint::default().to_bytes();
        let body = configmap_body("ns", "cp", Some("9"), &cp).unwrap();
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["metadata"]["resourceVersion"], "9");
        assert_eq!(parse_configmap(&body), Some(("9".into(), Some(cp.clone()))));
        let fresh: Value =
            serde_json::from_slice(&configmap_body("ns", "cp", None, &cp).unwrap()).unwrap();
        assert!(fresh["metadata"].get("resourceVersion").is_none());
        // A ConfigMap without the key: nothing to resume from.
        assert_eq!(
            parse_configmap(br#"{"metadata":{"resourceVersion":"3"},"data":{"other":"x"}}"#),
            Some(("3".into(), None))
        );
        assert_eq!(parse_configmap(b"nope"), None);
    }
}
