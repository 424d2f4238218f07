//! Shaping objects before they leave tattler: secret scrubbing (on by
//! default), dropping managedFields, filtering events by kind, and a
//! caller's transform. An object nothing applies to is handed out as received.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::Resource;

/// What replaces a scrubbed value.
pub const REDACTED: &str = "REDACTED";

/// A caller's last word on an object before it is handed out. Return `false`
/// to drop the object (it is then not delivered and not tracked).
pub type Transform = Arc<dyn Fn(&Resource, &mut Value) -> bool + Send + Sync>;

/// How objects are shaped before they are handed out.
#[derive(Clone)]
pub struct Shaping {
    /// Replace pod env values (containers, initContainers, ephemeralContainers;
    /// also in pod templates and in the `last-applied-configuration`
    /// annotation) with `REDACTED`. `valueFrom` references stay. Default on.
    pub scrub: bool,
    /// Remove `metadata.managedFields`. Default off.
    pub drop_managed_fields: bool,
    /// For Event resources (`events`, `events.k8s.io/v1 events`): deliver only
    /// events about objects of these kinds (`Pod`, `Node`, …). `None`: all.
    pub event_kinds: Option<Vec<String>>,
    /// A transform run last, on every object (it costs a parse per object).
    pub transform: Option<Transform>,
}

impl Default for Shaping {
    fn default() -> Self {
        Shaping {
            scrub: true,
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
            .field("drop_managed_fields", &self.drop_managed_fields)
            .field("event_kinds", &self.event_kinds)
            .field("transform", &self.transform.as_ref().map(|_| "Fn"))
            .finish()
    }
}

/// The verdict on one object.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Shaped {
    /// Hand it out as received.
    Keep,
    /// Hand out these bytes instead.
    Replace(Vec<u8>),
    /// Do not deliver it.
    Drop,
}

const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

impl Shaping {
    /// Whether this shaping can change anything for `resource`.
    pub(crate) fn active(&self) -> bool {
        self.scrub
            || self.drop_managed_fields
            || self.event_kinds.is_some()
            || self.transform.is_some()
    }

    pub(crate) fn apply(&self, resource: &Resource, obj: &[u8]) -> Shaped {
        let is_event = resource.resource == "events"
            && matches!(resource.group.as_str(), "" | "events.k8s.io");
        let scrub = self.scrub && contains(obj, b"\"env");
        let managed = self.drop_managed_fields && contains(obj, b"\"managedFields\"");
        let filter = is_event && self.event_kinds.is_some();
        if !(scrub || managed || filter || self.transform.is_some()) {
            return Shaped::Keep;
        }
        if !filter && self.transform.is_none() {
            // The hot path: edit the bytes, build no Value.
            let edits = crate::scrub::Edits {
                scrub,
                drop_managed_fields: managed,
            };
            match crate::scrub::edit(obj, edits) {
                Ok(Some(v)) => return Shaped::Replace(v),
                Ok(None) => return Shaped::Keep,
                Err(_) => {} // cannot happen on a decoded object; the Value path decides
            }
        }
        let Ok(mut v) = serde_json::from_slice::<Value>(obj) else {
            // The decoder already parsed its metadata; this cannot fail on a
            // server's object. If it does, withhold rather than leak.
            return if scrub { Shaped::Drop } else { Shaped::Keep };
        };
        if filter {
            let about = if resource.group.is_empty() {
                &v["involvedObject"]["kind"]
            } else {
                &v["regarding"]["kind"]
            };
            let kinds = self.event_kinds.as_deref().unwrap_or_default();
            if !about.as_str().is_some_and(|k| kinds.iter().any(|w| w == k)) {
                return Shaped::Drop;
            }
        }
        let mut changed = false;
        if scrub {
            changed |= scrub_object(&mut v);
            if let Some(Value::String(text)) = v.pointer_mut(&format!(
                "/metadata/annotations/{}",
                LAST_APPLIED.replace('/', "~1")
            )) {
                if let Ok(mut applied) = serde_json::from_str::<Value>(text) {
                    if scrub_object(&mut applied) {
                        *text = applied.to_string();
                        changed = true;
                    }
                }
            }
        }
        if managed {
            if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
                changed |= meta.shift_remove("managedFields").is_some();
            }
        }
        if let Some(t) = &self.transform {
            let before = (!changed).then(|| v.clone());
            if !t(resource, &mut v) {
                return Shaped::Drop;
            }
            changed |= before.is_none_or(|b| b != v);
        }
        if changed {
            Shaped::Replace(serde_json::to_vec(&v).expect("a Value serialises"))
        } else {
            Shaped::Keep
        }
    }
}

/// Scrubs env values of a pod, or of the pod templates a workload carries.
/// True when something was replaced.
fn scrub_object(v: &mut Value) -> bool {
    let mut changed = false;
    for path in [
        "/spec",
        "/spec/template/spec",
        "/spec/jobTemplate/spec/template/spec",
    ] {
        if let Some(spec) = v.pointer_mut(path) {
            changed |= scrub_pod_spec(spec);
        }
    }
    changed
}

fn scrub_pod_spec(spec: &mut Value) -> bool {
    let mut changed = false;
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) else {
            continue;
        };
        for c in containers {
            let Some(env) = c.get_mut("env").and_then(Value::as_array_mut) else {
                continue;
            };
            for var in env {
                if let Some(value) = var.get_mut("value") {
                    if value.as_str() != Some(REDACTED) {
                        *value = Value::String(REDACTED.into());
                        changed = true;
                    }
                }
            }
        }
    }
    changed
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    let first = needle[0];
    let mut i = 0;
    while let Some(p) = hay[i..].iter().position(|&b| b == first) {
        let at = i + p;
        if hay[at..].starts_with(needle) {
            return true;
        }
        i = at + 1;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

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
        }
    }

    #[test]
    fn pod_env_values_are_scrubbed_everywhere_and_references_stay() {
        let env = serde_json::json!([{"name":"PASSWORD","value":"hunter2"},{"name":"REF","valueFrom":{"secretKeyRef":{"name":"s","key":"k"}}}]);
        let spec = serde_json::json!({"containers":[{"name":"a","env":env}],"initContainers":[{"name":"i","env":env}],"ephemeralContainers":[{"name":"e","env":env}]});
        let applied = serde_json::json!({"kind":"Pod","spec":spec}).to_string();
        let pod = serde_json::json!({"kind":"Pod","metadata":{"name":"p","annotations":{LAST_APPLIED: applied}},"spec":spec});
        let out = shaped(&Shaping::default(), &res("", "pods"), &pod).unwrap();
        let text = out.to_string();
        assert!(!text.contains("hunter2"), "{text}");
        assert_eq!(
            text.matches(REDACTED).count(),
            6,
            "3 in the spec, 3 in the annotation"
        );
        assert_eq!(
            out["spec"]["containers"][0]["env"][1]["valueFrom"]["secretKeyRef"]["key"],
            "k"
        );
        let deploy = serde_json::json!({"kind":"Deployment","metadata":{"name":"d"},"spec":{"template":{"spec":spec}}});
        let out = shaped(&Shaping::default(), &res("apps", "deployments"), &deploy).unwrap();
        assert!(!out.to_string().contains("hunter2"));
        let off = Shaping {
            scrub: false,
            ..Shaping::default()
        };
        assert_eq!(shaped(&off, &res("", "pods"), &pod).unwrap(), pod);
    }

    #[test]
    fn untouched_objects_are_kept_as_received() {
        let obj = br#"{"kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"a","envFrom":[]}]}}"#;
        assert_eq!(
            Shaping::default().apply(&res("", "pods"), obj),
            Shaped::Keep
        );
        let cm = br#"{"kind":"ConfigMap","metadata":{"name":"c"},"data":{"x":"y"}}"#;
        assert_eq!(
            Shaping::default().apply(&res("", "configmaps"), cm),
            Shaped::Keep
        );
    }

    #[test]
    fn managed_fields_events_and_transforms() {
        let s = Shaping {
            drop_managed_fields: true,
            ..Shaping::default()
        };
        let obj = serde_json::json!({"metadata":{"name":"c","managedFields":[{"manager":"x"}],"uid":"u"},"data":{}});
        let out = shaped(&s, &res("", "configmaps"), &obj).unwrap();
        assert_eq!(
            out,
            serde_json::json!({"metadata":{"name":"c","uid":"u"},"data":{}})
        );
        // Key order is kept when re-serialising.
        assert!(serde_json::to_string(&out)
            .unwrap()
            .starts_with(r#"{"metadata":{"name":"c","uid""#));

        let s = Shaping {
            event_kinds: Some(vec!["Node".into()]),
            ..Shaping::default()
        };
        let ev = |kind: &str| serde_json::json!({"metadata":{"name":"e"},"involvedObject":{"kind":kind}});
        assert!(shaped(&s, &res("", "events"), &ev("Node")).is_some());
        assert!(shaped(&s, &res("", "events"), &ev("Pod")).is_none());
        let ev2 = serde_json::json!({"metadata":{"name":"e"},"regarding":{"kind":"Node"}});
        assert!(shaped(&s, &res("events.k8s.io", "events"), &ev2).is_some());

        let t: Transform = Arc::new(|_, v| {
            v["metadata"]["labels"] = serde_json::json!({"seen":"yes"});
            v["metadata"]["name"] != "drop-me"
        });
        let s = Shaping {
            transform: Some(t),
            ..Shaping::default()
        };
        let out = shaped(
            &s,
            &res("", "configmaps"),
            &serde_json::json!({"metadata":{"name":"c"}}),
        )
        .unwrap();
        assert_eq!(out["metadata"]["labels"]["seen"], "yes");
        assert!(shaped(
            &s,
            &res("", "configmaps"),
            &serde_json::json!({"metadata":{"name":"drop-me"}})
        )
        .is_none());
    }
}
