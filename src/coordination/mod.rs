//! Replicas of one collector, coordinated through the cluster: leader
//! election on a Lease (`lease`: what to do, pure; `elector`: the thread
//! that does it), the checkpoint kept in a ConfigMap (`checkpoint_configmap`:
//! its documents, pure; `elector::checkpoint`: reading and writing it), and
//! with shards (`wire::shard`) under election, one Lease per shard
//! (`lease_shares`, pure).

pub(crate) mod checkpoint_configmap;
pub(crate) mod elector;
pub(crate) mod lease;
pub(crate) mod lease_shares;

use serde_json::{json, Value};

use crate::checkpoint::Checkpoint;
use crate::entry::Term;
use crate::error::Error;

/// Sets the `metadata` of an object the elector writes over what it read:
/// its name and namespace, and the resourceVersion a replacement (PUT) is
/// conditional on (none for a create); labels, annotations, owner
/// references and finalizers read stay.
pub(crate) fn set_metadata(
    doc: &mut Value,
    namespace: &str,
    name: &str,
    resource_version: Option<&str>,
) {
    if !doc.get("metadata").is_some_and(Value::is_object) {
        doc["metadata"] = json!({});
    }
    let m = &mut doc["metadata"];
    m["name"] = json!(name);
    m["namespace"] = json!(namespace);
    match (resource_version, m.as_object_mut()) {
        (Some(rv), _) => m["resourceVersion"] = json!(rv),
        (None, Some(o)) => {
            o.remove("resourceVersion");
        }
        (None, None) => {}
    }
}

/// What the elector asks of the reader's streams: the reader owns them,
/// the elector says when they run.
pub(crate) trait Streams: Send + Sync {
    /// Starts the named streams, each from its part of `resume` (a watch
    /// from its resourceVersion; a re-sync against its objects when the
    /// server no longer has it), their entries stamped with `term`.
    fn start(&self, resume: Option<&Checkpoint>, term: &Term) -> Result<(), Error>;

    /// Stops and joins the streams: once it returns, none sends again.
    fn stop(&self);

    /// A checkpoint holding exactly what the consumer has taken out of the
    /// channel, or `None` when entries wait in it or a delivery is under
    /// way (try again shortly).
    fn quiet_checkpoint(&self) -> Option<Checkpoint>;
}
