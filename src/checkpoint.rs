//! Checkpoints: what a reader has delivered (per resource its resume point
//! and per-object state), to resume from in a new reader after a restart
//! without delivering everything again.

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::resource::ResourceSpec;
use crate::resource_version::{Rv, MAX_LEN};

/// The format's version, in the document.
const VERSION: u32 = 1;

/// What a reader has delivered, per resource: where its watch can resume,
/// and the objects the consumer holds. Made by
/// [`Reader::checkpoint`](crate::Reader::checkpoint), kept as bytes
/// ([`to_bytes`](Self::to_bytes)), given to a new reader in
/// [`Config::resume`](crate::Config::resume); see
/// [`Reader::checkpoint`](crate::Reader::checkpoint) for the whole round.
///
/// ```no_run
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let (reader, mut config): (kube_tattler::Reader, kube_tattler::Config) = unimplemented!();
/// std::fs::write("state.checkpoint", reader.checkpoint().to_bytes())?;
/// let saved = kube_tattler::Checkpoint::from_bytes(&std::fs::read("state.checkpoint")?)?;
/// println!("{} objects of {} resources", saved.objects(), saved.resources());
/// config.resume = Some(saved);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Checkpoint {
    pub(crate) resources: Vec<CheckpointPart>,
}

/// One resource's part of a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CheckpointPart {
    pub spec: ResourceSpec,
    pub resource_version: Rv,
    pub objects: Vec<Held>,
}

/// An object the consumer holds, as the tracker keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Held {
    pub namespace: Option<String>,
    pub name: String,
    pub uid: String,
    pub resource_version: Rv,
}

#[derive(Serialize, Deserialize)]
struct Doc {
    tattler_checkpoint: u32,
    resources: Vec<DocResource>,
}

#[derive(Serialize, Deserialize)]
struct DocResource {
    group: String,
    version: String,
    resource: String,
    #[serde(default)]
    lookup: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    label_selector: Option<String>,
    #[serde(default)]
    field_selector: Option<String>,
    #[serde(default)]
    metadata_only: bool,
    /// Absent in checkpoints of readers without shards (and of tattler
    /// before shards): everything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    shard: Option<DocShard>,
    resource_version: String,
    /// `[namespace or "", name, uid, resourceVersion]` each.
    objects: Vec<[String; 4]>,
}

/// A shard as the document keeps it.
#[derive(Serialize, Deserialize)]
struct DocShard {
    count: u32,
    index: u32,
}

/// Whether two specs stream the same thing (a checkpoint's part applies):
/// a checkpoint of shard 0 holds none of shard 1's objects, so it cannot
/// resume shard 1.
pub(crate) fn same_scope(a: &ResourceSpec, b: &ResourceSpec) -> bool {
    a.group == b.group
        && a.version == b.version
        && a.resource == b.resource
        && a.lookup == b.lookup
        && a.namespace == b.namespace
        && a.label_selector == b.label_selector
        && a.field_selector == b.field_selector
        && a.metadata_only == b.metadata_only
        && a.shard == b.shard
}

impl Checkpoint {
    /// The checkpoint as bytes to keep (a JSON document).
    pub fn to_bytes(&self) -> Vec<u8> {
        let doc = Doc {
            tattler_checkpoint: VERSION,
            resources: self
                .resources
                .iter()
                .map(|r| DocResource {
                    group: r.spec.group.clone(),
                    version: r.spec.version.clone(),
                    resource: r.spec.resource.clone(),
                    lookup: r.spec.lookup.clone(),
                    namespace: r.spec.namespace.clone(),
                    label_selector: r.spec.label_selector.clone(),
                    field_selector: r.spec.field_selector.clone(),
                    metadata_only: r.spec.metadata_only,
                    shard: r.spec.shard.map(|s| DocShard {
                        count: s.count(),
                        index: s.index(),
                    }),
                    resource_version: r.resource_version.as_str().to_string(),
                    objects: r
                        .objects
                        .iter()
                        .map(|o| {
                            [
                                o.namespace.clone().unwrap_or_default(),
                                o.name.clone(),
                                o.uid.clone(),
                                o.resource_version.as_str().to_string(),
                            ]
                        })
                        .collect(),
                })
                .collect(),
        };
        serde_json::to_vec(&doc).unwrap_or_default()
    }

    /// Reads a checkpoint [`to_bytes`](Self::to_bytes) made.
    ///
    /// ```
    /// use kube_tattler::Checkpoint;
    /// let empty = Checkpoint::default();
    /// let back = Checkpoint::from_bytes(&empty.to_bytes())?;
    /// assert_eq!((back.resources(), back.objects()), (0, 0));
    /// assert!(Checkpoint::from_bytes(b"not one").is_err());
    /// # Ok::<(), kube_tattler::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Checkpoint`] for bytes that are not a checkpoint, one of
    /// another format version, or one with a name, uid or resourceVersion
    /// out of bounds; the message says where, never quoting values.
    pub fn from_bytes(bytes: &[u8]) -> Result<Checkpoint, Error> {
        let bad = Error::Checkpoint;
        let doc: Doc = serde_json::from_slice(bytes).map_err(|e| {
            bad(format!(
                "not a tattler checkpoint (line {}, column {})",
                e.line(),
                e.column()
            ))
        })?;
        if doc.tattler_checkpoint != VERSION {
            return Err(bad(format!(
                "version {} (this tattler reads {VERSION})",
                doc.tattler_checkpoint
            )));
        }
        let checked_rv = |text: &str, what: &str| {
            if text.is_empty() || text.len() > MAX_LEN {
                Err(bad(format!(
                    "{what}: a resourceVersion of {} bytes",
                    text.len()
                )))
            } else {
                Ok(Rv::new(text))
            }
        };
        let mut resources = Vec::with_capacity(doc.resources.len());
        for (i, r) in doc.resources.into_iter().enumerate() {
            let what = format!("resources[{i}]");
            let mut spec = ResourceSpec::new(&r.group, &r.version, &r.resource, "", true);
            spec.lookup = r.lookup;
            spec.namespace = r.namespace;
            spec.label_selector = r.label_selector;
            spec.field_selector = r.field_selector;
            spec.metadata_only = r.metadata_only;
            if let Some(s) = r.shard {
                let shard = crate::wire::shard::Shard::new(s.count, s.index)
                    .map_err(|_| bad(format!("{what}: shard {} of {}", s.index, s.count)))?;
                spec.shard = Some(shard);
            }
            // Empty: taken while the resource was not synced; a reader
            // resumed from it re-syncs against the objects.
            let resource_version = if r.resource_version.is_empty() {
                Rv::empty()
            } else {
                checked_rv(&r.resource_version, &what)?
            };
            let mut objects = Vec::with_capacity(r.objects.len());
            for (j, [ns, name, uid, rv]) in r.objects.into_iter().enumerate() {
                let what = format!("{what}.objects[{j}]");
                if name.is_empty()
                    || uid.is_empty()
                    || name.len() > 2048
                    || uid.len() > 128
                    || ns.len() > 253
                {
                    return Err(bad(format!("{what}: a name or uid out of bounds")));
                }
                objects.push(Held {
                    namespace: (!ns.is_empty()).then_some(ns),
                    name,
                    uid,
                    resource_version: checked_rv(&rv, &what)?,
                });
            }
            resources.push(CheckpointPart {
                spec,
                resource_version,
                objects,
            });
        }
        Ok(Checkpoint { resources })
    }

    /// Whether every part has a resume point: each stream was synced when
    /// it was taken (a new leader can watch from it).
    pub(crate) fn resumable(&self) -> bool {
        self.resources
            .iter()
            .all(|p| !p.resource_version.as_str().is_empty())
    }

    /// Each part without a resume point (its stream was replaying or
    /// re-syncing when it was taken) replaced by `earlier`'s part for the
    /// same stream, when that one has a resume point: a reader resumed from
    /// it replays what changed since, whatever the consumer took meanwhile
    /// (taken twice is a duplicate, never a gap), where a part without one
    /// would re-sync.
    pub(crate) fn keep_resume_points(&mut self, earlier: &Checkpoint) {
        for part in &mut self.resources {
            if !part.resource_version.as_str().is_empty() {
                continue;
            }
            if let Some(old) = earlier.part(&part.spec) {
                if !old.resource_version.as_str().is_empty() {
                    *part = old.clone();
                }
            }
        }
    }

    /// One shard's checkpoint of a new shard map (`specs`, each in its
    /// shard), from the checkpoints of every shard of another map (a
    /// rollout that changed the shard count): per spec, the objects of the
    /// same stream in any of them that the new shard owns, and the oldest
    /// of their resume points, so that a watch from it replays whatever
    /// changed since in the new shard's range (changes some old shard
    /// already delivered come again: the ledger takes them as duplicates).
    /// Empty when a part has no resume point or they are not numbers (the
    /// stream re-syncs against the objects); a spec no old part covers
    /// gets no part.
    pub(crate) fn merged_for(specs: &[ResourceSpec], old: &[Checkpoint]) -> Checkpoint {
        let unsharded = |s: &ResourceSpec| ResourceSpec {
            shard: None,
            ..s.clone()
        };
        let mut resources = Vec::new();
        for spec in specs {
            let want = unsharded(spec);
            let parts: Vec<&CheckpointPart> = old
                .iter()
                .flat_map(|c| &c.resources)
                .filter(|p| same_scope(&unsharded(&p.spec), &want))
                .collect();
            if parts.is_empty() {
                continue;
            }
            let numbers: Option<Vec<u64>> =
                parts.iter().map(|p| p.resource_version.number()).collect();
            let resource_version = match numbers.and_then(|n| n.into_iter().min()) {
                Some(n) => Rv::new(&n.to_string()),
                None => Rv::empty(),
            };
            let owns = |uid: &str| spec.shard.is_none_or(|s| s.owns(uid));
            let objects = parts
                .iter()
                .flat_map(|p| &p.objects)
                .filter(|o| owns(&o.uid))
                .cloned()
                .collect();
            resources.push(CheckpointPart {
                spec: spec.clone(),
                resource_version,
                objects,
            });
        }
        Checkpoint { resources }
    }

    /// The part for `spec`, if the checkpoint has one.
    pub(crate) fn part(&self, spec: &ResourceSpec) -> Option<&CheckpointPart> {
        self.resources.iter().find(|r| same_scope(&r.spec, spec))
    }

    /// How many resources it holds.
    pub fn resources(&self) -> usize {
        self.resources.len()
    }

    /// How many objects it holds, over all resources.
    pub fn objects(&self) -> usize {
        self.resources.iter().map(|r| r.objects.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What an object costs in a checkpoint, the figure docs/agents.md and
    /// the README give: its namespace, name, uid and resourceVersion and
    /// 14 bytes of JSON. Pods as a Deployment names them (namespace 10
    /// bytes, name 40, a uid, an 8-digit resourceVersion): 108 bytes, so a
    /// ConfigMap (1,000,000 bytes written at most) keeps about 9,200.
    #[test]
    fn an_object_costs_its_four_strings_and_fourteen_bytes() {
        let pods = ResourceSpec::parse("pods").unwrap().remove(0);
        let part = |n: usize| Checkpoint {
            resources: vec![CheckpointPart {
                spec: pods.clone(),
                resource_version: Rv::new("12345678"),
                objects: (0..n)
                    .map(|i| Held {
                        namespace: Some("payments-a".into()),
                        name: format!("checkout-7f9c8d6b5-{i:021}"),
                        uid: "0b6e0f38-3a53-4d3f-9d8e-2c5a1e7b9f01".into(),
                        resource_version: Rv::new("12345678"),
                    })
                    .collect(),
            }],
        };
        let (one, many) = (part(1).to_bytes().len(), part(1001).to_bytes().len());
        let each = (many - one) / 1000;
        assert_eq!(each, 10 + 40 + 36 + 8 + 14);
        assert_eq!(
            crate::coordination::checkpoint_configmap::MAX_BYTES / each,
            9_259
        );
    }

    /// A part taken without a resume point keeps the earlier one's, so
    /// that a leader that resumed and dies mid-replay leaves one to watch
    /// from; a part with its own resume point stays.
    #[test]
    fn parts_without_a_resume_point_keep_the_earlier_ones() {
        let pods = ResourceSpec::parse("pods").unwrap().remove(0);
        let cms = ResourceSpec::parse("configmaps").unwrap().remove(0);
        let part = |spec: &ResourceSpec, rv: &str, n: usize| CheckpointPart {
            spec: spec.clone(),
            resource_version: Rv::new(rv),
            objects: (0..n)
                .map(|i| Held {
                    namespace: Some("a".into()),
                    name: format!("o{i}"),
                    uid: format!("u{i}"),
                    resource_version: Rv::new("1"),
                })
                .collect(),
        };
        let earlier = Checkpoint {
            resources: vec![part(&pods, "40", 2), part(&cms, "41", 3)],
        };
        let mut now = Checkpoint {
            resources: vec![part(&pods, "", 5), part(&cms, "77", 4)],
        };
        now.keep_resume_points(&earlier);
        assert_eq!(now.resources[0], earlier.resources[0]);
        assert_eq!(now.resources[1].resource_version.as_str(), "77");
        assert_eq!(now.resources[1].objects.len(), 4);
        // Nothing earlier for it: left as it is.
        let mut fresh = Checkpoint {
            resources: vec![part(&pods, "", 5)],
        };
        fresh.keep_resume_points(&Checkpoint::default());
        assert_eq!(fresh.resources[0].objects.len(), 5);
    }

    /// A rollout from 2 to 3 shards: each new shard's checkpoint holds the
    /// objects it owns from both old ones, from the older resume point.
    #[test]
    fn a_new_shard_map_merges_the_old_maps_checkpoints() {
        use crate::wire::shard::Shard;
        let pods = ResourceSpec::parse("pods").unwrap().remove(0);
        let held = |uid: &str| Held {
            namespace: Some("a".into()),
            name: format!("p-{uid}"),
            uid: uid.into(),
            resource_version: Rv::new("5"),
        };
        let uids: Vec<String> = (0..40).map(|i| format!("uid-{i}")).collect();
        let old: Vec<Checkpoint> = (0..2)
            .map(|i| {
                let shard = Shard::new(2, i).unwrap();
                Checkpoint {
                    resources: vec![CheckpointPart {
                        spec: pods.clone().in_shard(shard),
                        resource_version: Rv::new(["90", "70"][i as usize]),
                        objects: uids
                            .iter()
                            .filter(|u| shard.owns(u))
                            .map(|u| held(u))
                            .collect(),
                    }],
                }
            })
            .collect();
        let mut seen = 0;
        for i in 0..3 {
            let shard = Shard::new(3, i).unwrap();
            let spec = pods.clone().in_shard(shard);
            let cp = Checkpoint::merged_for(std::slice::from_ref(&spec), &old);
            let part = cp.part(&spec).expect("a part for the new shard");
            assert_eq!(part.resource_version.as_str(), "70", "the older point");
            assert!(part.objects.iter().all(|o| shard.owns(&o.uid)));
            let want = uids.iter().filter(|u| shard.owns(u)).count();
            assert_eq!(part.objects.len(), want);
            seen += want;
        }
        assert_eq!(seen, uids.len(), "every object in exactly one new shard");
        // An old part with no resume point: re-sync against the objects.
        let mut unsynced = old.clone();
        unsynced[1].resources[0].resource_version = Rv::empty();
        let spec = pods.clone().in_shard(Shard::new(3, 0).unwrap());
        let cp = Checkpoint::merged_for(std::slice::from_ref(&spec), &unsynced);
        assert_eq!(cp.part(&spec).unwrap().resource_version.as_str(), "");
        // A resource no old part covers: no part.
        let cms = ResourceSpec::parse("configmaps").unwrap().remove(0);
        assert_eq!(Checkpoint::merged_for(&[cms], &old).resources(), 0);
    }

    #[test]
    fn a_checkpoint_round_trips_and_bad_ones_are_refused() {
        let spec = ResourceSpec::parse("pods")
            .unwrap()
            .remove(0)
            .in_namespace("a")
            .metadata_only();
        let cp = Checkpoint {
            resources: vec![CheckpointPart {
                spec: spec.clone(),
                resource_version: Rv::new("42"),
                objects: vec![
                    Held {
                        namespace: Some("a".into()),
                        name: "p1".into(),
                        uid: "u1".into(),
                        resource_version: Rv::new("40"),
                    },
                    Held {
                        namespace: None,
                        name: "x".into(),
                        uid: "u2".into(),
                        resource_version: Rv::new("opaque"),
                    },
                ],
            }],
        };
        let back = Checkpoint::from_bytes(&cp.to_bytes()).unwrap();
        assert_eq!(back.resources[0].objects, cp.resources[0].objects);
        // Taken during a re-sync: no resume point, the objects kept.
        let mut resyncing = cp.clone();
        resyncing.resources[0].resource_version = Rv::empty();
        let back = Checkpoint::from_bytes(&resyncing.to_bytes()).unwrap();
        assert_eq!(back.resources[0].resource_version, Rv::empty());
        assert_eq!(back.resources[0].objects, cp.resources[0].objects);
        assert!(back.part(&spec).is_some());
        assert!(
            back.part(&ResourceSpec::parse("pods").unwrap().remove(0))
                .is_none(),
            "another scope"
        );
        assert_eq!((back.resources(), back.objects()), (1, 2));
        for (bad, want) in [
            (&b"nope"[..], "not a tattler checkpoint (line 1, column"),
            (br#"{"tattler_checkpoint":9,"resources":[]}"#, "version 9"),
            (br#"{"tattler_checkpoint":1,"resources":[{"group":"","version":"v1","resource":"pods","resource_version":"1","objects":[["","n","u",""]]}]}"#, "resources[0].objects[0]"),
            (br#"{"tattler_checkpoint":1,"resources":[{"group":"","version":"v1","resource":"pods","resource_version":"1","objects":[["","","u","1"]]}]}"#, "resources[0].objects[0]"),
        ] {
            let e = Checkpoint::from_bytes(bad).unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
        }
    }

    #[test]
    fn a_checkpoint_of_one_shard_resumes_only_that_shard() {
        let shard = |i| crate::wire::shard::Shard::new(2, i).unwrap();
        let pods = ResourceSpec::parse("pods").unwrap().remove(0);
        let cp = Checkpoint {
            resources: vec![CheckpointPart {
                spec: pods.clone().in_shard(shard(0)),
                resource_version: Rv::new("42"),
                objects: Vec::new(),
            }],
        };
        let bytes = cp.to_bytes();
        assert!(
            String::from_utf8_lossy(&bytes).contains(r#""shard":{"count":2,"index":0}"#),
            "{}",
            String::from_utf8_lossy(&bytes)
        );
        let back = Checkpoint::from_bytes(&bytes).unwrap();
        assert!(back.part(&pods.clone().in_shard(shard(0))).is_some());
        assert!(back.part(&pods.clone().in_shard(shard(1))).is_none());
        assert!(back.part(&pods).is_none());
        // A checkpoint from before shards: unsharded, and it says nothing of shards.
        let old = br#"{"tattler_checkpoint":1,"resources":[{"group":"","version":"v1","resource":"pods","resource_version":"1","objects":[]}]}"#;
        let back = Checkpoint::from_bytes(old).unwrap();
        assert!(back.part(&pods).is_some());
        assert!(!String::from_utf8_lossy(&back.to_bytes()).contains("shard"));
        let bad = br#"{"tattler_checkpoint":1,"resources":[{"group":"","version":"v1","resource":"pods","shard":{"count":2,"index":2},"resource_version":"1","objects":[]}]}"#;
        let e = Checkpoint::from_bytes(bad).unwrap_err().to_string();
        assert!(e.contains("resources[0]: shard 2 of 2"), "{e}");
    }
}
