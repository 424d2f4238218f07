//! Shaping objects before they leave tattler: secret scrubbing (on by
//! default), dropping managedFields, filtering events by kind, and a
//! caller's transform. Scrubbing and managedFields are byte edits the decoder
//! makes in its one pass over each object (scrub.rs); the event filter and
//! the transform, which need a `serde_json::Value`, come after, on the
//! already scrubbed object. An object nothing applies to is handed out as
//! received.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::entry::Resource;
use crate::objects::edits::Edits;

/// What replaces a scrubbed value.
pub const REDACTED: &str = "REDACTED";

/// A caller's last word on an object before it is handed out. Return `false`
/// to drop the object: it is then not delivered, and an object the consumer
/// already has gets a Delete (as when it leaves a label selector).
///
/// ```
/// use std::sync::Arc;
/// use kube_tattler::{Shaping, Transform};
/// // Keep only pods that run on a node, and drop their status.
/// let transform: Transform = Arc::new(|_resource, object| {
///     if let Some(o) = object.as_object_mut() {
///         o.remove("status");
///     }
///     object.pointer("/spec/nodeName").is_some()
/// });
/// let mut shaping = Shaping::default();
/// shaping.transform = Some(transform);
/// ```
pub type Transform = Arc<dyn Fn(&Resource, &mut Value) -> bool + Send + Sync>;

/// How objects are shaped before they are handed out.
///
/// ```
/// use kube_tattler::{Access, Config, REDACTED};
/// let mut config = Config::new(Access::new("https://10.0.0.1:6443")).watch(["pods", "events"])?;
/// config.shaping.drop_managed_fields = true;
/// config.shaping.event_kinds = Some(vec!["Pod".into()]);
/// assert!(config.shaping.scrub); // env values become REDACTED
/// assert_eq!(REDACTED, "REDACTED");
/// # Ok::<(), kube_tattler::Error>(())
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct Shaping {
    /// Replace container env values with `REDACTED` — in pods, in the pod
    /// templates of workloads, PodTemplates and ControllerRevisions, in any
    /// object that embeds a pod spec, and in the `last-applied-configuration`
    /// annotation. `valueFrom` references stay. Default on.
    pub scrub: bool,
    /// For Secrets (core `v1` `secrets`): replace every value of `data` and
    /// `stringData` with `REDACTED` (also in the last-applied annotation);
    /// keys, type and metadata stay. Default on.
    pub scrub_secret_data: bool,
    /// Remove `metadata.managedFields`. Default off.
    pub drop_managed_fields: bool,
    /// For Event resources (`events`, `events.k8s.io/v1 events`): deliver only
    /// events about objects of these kinds (`Pod`, `Node`, …). `None`: all.
    pub event_kinds: Option<Vec<String>>,
    /// A transform run last, on every (scrubbed) object; it costs a parse per
    /// object. Objects nested deeper than `serde_json`'s 128 levels cannot be
    /// given to it: they are reported as Error entries (`TransformFailed`).
    pub transform: Option<Transform>,
}

impl Default for Shaping {
    fn default() -> Self {
        Shaping {
            scrub: true,
            scrub_secret_data: true,
            drop_managed_fields: false,
            event_kinds: None,
            transform: None,
        }
    }
}

impl fmt::Debug for Shaping {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shaping")
            .field("scrub", &self.scrub)
            .field("scrub_secret_data", &self.scrub_secret_data)
            .field("drop_managed_fields", &self.drop_managed_fields)
            .field("event_kinds", &self.event_kinds)
            .field("transform", &self.transform.as_ref().map(|_| "Fn"))
            .finish()
    }
}

/// The verdict on one object.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Shaped {
    /// Hand it out as it is.
    Keep,
    /// Hand out these bytes instead.
    Replace(Vec<u8>),
    /// Do not deliver it.
    Drop,
    /// It could not be shaped (the reason): reported, not delivered.
    Failed(String),
}

fn is_event(resource: &Resource) -> bool {
    resource.resource == "events" && matches!(resource.group.as_str(), "" | "events.k8s.io")
}

impl Shaping {
    /// The byte edits the decoder makes for `resource`.
    pub(crate) fn edits(&self, resource: &Resource) -> Edits {
        Edits {
            scrub: self.scrub,
            secret_data: self.scrub_secret_data
                && resource.group.is_empty()
                && resource.resource == "secrets",
            drop_managed_fields: self.drop_managed_fields,
        }
    }

    /// Whether objects of `resource` need [`apply`](Self::apply) after the
    /// decoder's edits.
    pub(crate) fn needs_value(&self, resource: &Resource) -> bool {
        self.transform.is_some() || (self.event_kinds.is_some() && is_event(resource))
    }

    /// The event filter and the transform, on an object the decoder has
    /// checked and edited.
    pub(crate) fn apply(&self, resource: &Resource, obj: &[u8]) -> Shaped {
        let filter = self.event_kinds.as_deref().filter(|_| is_event(resource));
        if filter.is_none() && self.transform.is_none() {
            return Shaped::Keep;
        }
        let mut v = match serde_json::from_slice::<Value>(obj) {
            Ok(v) => v,
            // The decoder accepted it: only serde_json's nesting limit is left.
            Err(e) => return Shaped::Failed(format!("cannot be read as a serde_json Value: {e}")),
        };
        if let Some(kinds) = filter {
            let about = if resource.group.is_empty() {
                &v["involvedObject"]["kind"]
            } else {
                &v["regarding"]["kind"]
            };
            if !about.as_str().is_some_and(|k| kinds.iter().any(|w| w == k)) {
                return Shaped::Drop;
            }
        }
        let Some(t) = &self.transform else {
            return Shaped::Keep;
        };
        let before = v.clone();
        if !t(resource, &mut v) {
            return Shaped::Drop;
        }
        if v == before {
            return Shaped::Keep;
        }
        match serde_json::to_vec(&v) {
            Ok(bytes) => Shaped::Replace(bytes),
            Err(e) => Shaped::Failed(format!("the transform's result does not serialise: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn res(group: &str, resource: &str) -> Resource {
        Resource {
            group: group.into(),
            version: "v1".into(),
            resource: resource.into(),
            kind: String::new(),
        }
    }

    fn shaped(s: &Shaping, r: &Resource, obj: &Value) -> Option<Value> {
        match s.apply(r, &serde_json::to_vec(obj).unwrap()) {
            Shaped::Keep => Some(obj.clone()),
            Shaped::Replace(b) => Some(serde_json::from_slice(&b).unwrap()),
            Shaped::Drop => None,
            Shaped::Failed(why) => panic!("{why}"),
        }
    }

    #[test]
    fn edits_follow_the_options_and_the_resource() {
        let s = Shaping::default();
        assert_eq!(
            s.edits(&res("", "secrets")),
            Edits {
                scrub: true,
                secret_data: true,
                drop_managed_fields: false
            }
        );
        assert!(!s.edits(&res("", "configmaps")).secret_data);
        assert!(!s.edits(&res("example.com", "secrets")).secret_data);
        let off = Shaping {
            scrub_secret_data: false,
            ..Shaping::default()
        };
        assert!(!off.edits(&res("", "secrets")).secret_data);
        assert!(!s.needs_value(&res("", "pods")));
    }

    #[test]
    fn events_are_filtered_and_transforms_run_last() {
        let s = Shaping {
            event_kinds: Some(vec!["Node".into()]),
            ..Shaping::default()
        };
        let ev = |kind: &str| json!({"metadata":{"name":"e"},"involvedObject":{"kind":kind}});
        assert!(s.needs_value(&res("", "events")));
        assert!(shaped(&s, &res("", "events"), &ev("Node")).is_some());
        assert!(shaped(&s, &res("", "events"), &ev("Pod")).is_none());
        let ev2 = json!({"metadata":{"name":"e"},"regarding":{"kind":"Node"}});
        assert!(shaped(&s, &res("events.k8s.io", "events"), &ev2).is_some());
        assert_eq!(s.apply(&res("", "pods"), b"{}"), Shaped::Keep);

        let t: Transform = Arc::new(|_, v| {
            v["metadata"]["labels"] = json!({"seen":"yes"});
            v["metadata"]["name"] != "drop-me"
        });
        let s = Shaping {
            transform: Some(t),
            ..Shaping::default()
        };
        let out = shaped(
            &s,
            &res("", "configmaps"),
            &json!({"metadata":{"name":"c"}}),
        )
        .unwrap();
        assert_eq!(out["metadata"]["labels"]["seen"], "yes");
        assert!(shaped(
            &s,
            &res("", "configmaps"),
            &json!({"metadata":{"name":"drop-me"}})
        )
        .is_none());
        // Too deep for a Value: a failure of its own, not a silent drop.
        let deep = format!("{{\"a\":{}1{}}}", "[".repeat(200), "]".repeat(200));
        assert!(
            matches!(s.apply(&res("", "configmaps"), deep.as_bytes()), Shaped::Failed(m) if m.contains("recursion"))
        );
    }
}
