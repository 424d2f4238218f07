//! The Leases a reader with leader election runs for, pure: one for all its
//! resources, or with `shards: N` one per shard, each shard's resources cut
//! to its range and its checkpoint kept in a ConfigMap of its own.

use crate::config::{InClusterCheckpoint, LeaderElection};
use crate::error::Error;
use crate::resource::ResourceSpec;
use crate::wire::shard::Shard;

/// One Lease's share of a reader's work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LeaseShare {
    /// The election on this Lease.
    pub election: LeaderElection,
    /// Where this Lease's holder keeps its checkpoint.
    pub kept: Option<InClusterCheckpoint>,
    /// The streams its holder runs.
    pub named: Vec<ResourceSpec>,
    /// The shard map it belongs to.
    pub map: ShardMap,
}

/// The shard map a reader's Leases make: how many shards (1: none), and
/// the names the Leases and kept checkpoints take, `base` alone or
/// `base-0` … `base-{N-1}`. A rollout that changes `shards` meets the
/// other count's names (`elector`: never two maps at once, and the new
/// map's checkpoints merged from the old's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ShardMap {
    pub count: u32,
    pub lease_base: String,
    pub kept_base: Option<String>,
}

impl ShardMap {
    /// The names a map of `count` shards gives its objects over `base`.
    pub(crate) fn names(base: &str, count: u32) -> Vec<String> {
        match count {
            0 | 1 => vec![base.to_string()],
            n => (0..n).map(|i| format!("{base}-{i}")).collect(),
        }
    }
}

/// The shares of `election` over `named`: `lease` alone, or `lease-0` …
/// `lease-{N-1}` with the resources of shard `i` and the ConfigMap
/// `name-i`.
///
/// # Errors
///
/// [`Error::Config`] when `shards` is more than 1 and a resource has a
/// shard of its own (the election decides the shards then).
pub(crate) fn shares(
    election: &LeaderElection,
    kept: Option<&InClusterCheckpoint>,
    named: &[ResourceSpec],
) -> Result<Vec<LeaseShare>, Error> {
    let n = election.shards;
    if n <= 1 {
        return Ok(vec![LeaseShare {
            election: election.clone(),
            kept: kept.cloned(),
            named: named.to_vec(),
            map: ShardMap {
                count: 1,
                lease_base: election.lease.clone(),
                kept_base: kept.map(|k| k.name.clone()),
            },
        }]);
    }
    if let Some(spec) = named.iter().find(|s| s.shard.is_some()) {
        return Err(Error::Config(format!(
            "leader_election.shards: the resource {} has a shard of its own (leave `shard` out: the election gives each replica its shards)",
            spec.resource
        )));
    }
    (0..n)
        .map(|i| {
            let shard = Shard::new(n, i)?;
            let mut e = election.clone();
            e.lease = format!("{}-{i}", election.lease);
            e.shards = 1;
            Ok(LeaseShare {
                election: e,
                kept: kept.map(|k| {
                    let mut k = k.clone();
                    k.name = format!("{}-{i}", k.name);
                    k
                }),
                named: named.iter().map(|s| s.clone().in_shard(shard)).collect(),
                map: ShardMap {
                    count: n,
                    lease_base: election.lease.clone(),
                    kept_base: kept.map(|k| k.name.clone()),
                },
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str) -> ResourceSpec {
        ResourceSpec::parse(name).unwrap().remove(0)
    }

    #[test]
    fn one_lease_or_one_per_shard() {
        let mut e = LeaderElection::new("coll", "feed");
        let k = InClusterCheckpoint::new("coll", "feed-state");
        let named = [spec("pods"), spec("configmaps")];
        let one = shares(&e, Some(&k), &named).unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].election, e);
        assert_eq!(one[0].kept.as_ref(), Some(&k));
        assert_eq!(one[0].named, named);

        e.shards = 3;
        let three = shares(&e, Some(&k), &named).unwrap();
        let rows: Vec<(String, String, Vec<Option<Shard>>, u32)> = three
            .iter()
            .map(|t| {
                (
                    t.election.lease.clone(),
                    t.kept.as_ref().unwrap().name.clone(),
                    t.named.iter().map(|s| s.shard).collect(),
                    t.election.shards,
                )
            })
            .collect();
        let s = |i| Some(Shard::new(3, i).unwrap());
        assert_eq!(
            rows,
            [
                ("feed-0".into(), "feed-state-0".into(), vec![s(0), s(0)], 1),
                ("feed-1".into(), "feed-state-1".into(), vec![s(1), s(1)], 1),
                ("feed-2".into(), "feed-state-2".into(), vec![s(2), s(2)], 1),
            ]
        );
        assert_eq!(ShardMap::names("feed", 3), ["feed-0", "feed-1", "feed-2"]);
        assert_eq!(ShardMap::names("feed", 1), ["feed"]);
        assert!(three
            .iter()
            .all(|t| t.map.count == 3 && t.map.lease_base == "feed"));
        assert_eq!(one[0].map.kept_base.as_deref(), Some("feed-state"));
        // Without a kept checkpoint, none per shard either.
        assert!(shares(&e, None, &named)
            .unwrap()
            .iter()
            .all(|t| t.kept.is_none()));
    }

    #[test]
    fn a_resource_with_its_own_shard_is_refused_with_shards() {
        let mut e = LeaderElection::new("coll", "feed");
        e.shards = 2;
        let own = spec("pods").in_shard(Shard::new(2, 1).unwrap());
        let err = shares(&e, None, std::slice::from_ref(&own))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("leader_election.shards") && err.contains("pods"),
            "{err}"
        );
        // One Lease: a resource's own shard is its business.
        e.shards = 1;
        assert_eq!(shares(&e, None, &[own]).unwrap().len(), 1);
    }
}
