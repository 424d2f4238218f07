//! Whether the server shards a stream's collection, or tattler filters it:
//! what the server's answers prove, and the verdict they lead to.
//!
//! What proves what, as measured on kube-apiserver v1.36.3 with
//! `--feature-gates=ShardedListAndWatch=true`:
//! - A LIST page's `metadata.shardInfo.selector` (`ListMeta` field 5,
//!   `ShardInfo` field 1 in protobuf) echoes the selector the server
//!   applied: if it names the stream's range, the server shards. The echo
//!   is the server's own text (its spacing, not the request's), so it is
//!   compared by the range it parses to. A `PartialObjectMetadataList` (a
//!   metadata-only stream's LIST) carries none, even from a server that
//!   shards.
//! - A watch's events, its initial ones and the initial-events-end bookmark
//!   included, carry no `shardInfo`: a stream that only watches proves
//!   nothing that way.
//! - An object outside the stream's range proves the server did not shard:
//!   it ignored `shardSelector` (the gate off, or a server before 1.36).
//!
//! The latest proof wins: behind one address, apiservers of a rolling
//! upgrade may differ, and the verdict says what the last answer showed.

use std::fmt;

use crate::wire::shard::Shard;

/// Who keeps a stream to its [`Shard`]: the server, or tattler, as far as
/// the stream has seen (in [`StreamStats::sharding`](crate::StreamStats::sharding)
/// and the `sharding` label of the stream's metrics).
///
/// The consumer gets the same entries either way; what differs is what the
/// server sends, and so what each replica costs the apiserver and the
/// network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Sharding {
    /// Nothing has shown it yet. A stream read by watch-list stays here
    /// while the server sends nothing outside the shard: a watch carries no
    /// `shardInfo`, and neither does a metadata-only LIST.
    #[default]
    Unknown,
    /// The server shards (`ShardedListAndWatch`): a LIST page's
    /// `metadata.shardInfo` named the stream's range.
    Server,
    /// The server sent an object outside the shard (it does not shard):
    /// tattler filters here, and counts what it drops
    /// ([`StreamStats::other_shard_drops`](crate::StreamStats::other_shard_drops)).
    Here,
}

impl Sharding {
    /// `"unknown"`, `"server"` or `"here"`: the value of the metrics'
    /// `sharding` label.
    pub fn as_str(&self) -> &'static str {
        match self {
            Sharding::Unknown => "unknown",
            Sharding::Server => "server",
            Sharding::Here => "here",
        }
    }

    /// The verdict after the stream of shard `shard` saw `seen`.
    pub(crate) fn after(self, shard: &Shard, seen: Seen<'_>) -> Sharding {
        match seen {
            Seen::Outside => Sharding::Here,
            Seen::ShardInfo(selector) if shard.named_by(selector) => Sharding::Server,
            // An echo of another range proves nothing about this one.
            Seen::ShardInfo(_) => self,
        }
    }
}

/// The metrics' label value (see [`Sharding::as_str`]).
impl fmt::Display for Sharding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a stream saw that says who shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Seen<'a> {
    /// A LIST page's `metadata.shardInfo.selector`.
    ShardInfo(&'a str),
    /// An object outside the stream's shard.
    Outside,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_each_answer_proves() {
        let half = Shard::new(2, 0).unwrap();
        let ours = "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')";
        let ours_unspaced = "shardRange(object.metadata.uid,'0x0','0x8000000000000000')";
        let theirs = "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')";
        use Seen::*;
        use Sharding::*;
        // (before, seen, after)
        let rows = [
            (Unknown, ShardInfo(ours), Server),
            (Unknown, ShardInfo(ours_unspaced), Server),
            (Unknown, ShardInfo(theirs), Unknown),
            (Unknown, ShardInfo("garbage"), Unknown),
            (Unknown, Outside, Here),
            (Server, ShardInfo(ours), Server),
            (Server, ShardInfo(theirs), Server),
            // A server that sharded and then sent another shard's object (an
            // apiserver of a rolling upgrade, or one restarted without the
            // gate) no longer shards.
            (Server, Outside, Here),
            (Here, Outside, Here),
            (Here, ShardInfo(theirs), Here),
            // And one that starts to shard is believed from its next LIST.
            (Here, ShardInfo(ours), Server),
        ];
        for (before, seen, after) in rows {
            assert_eq!(before.after(&half, seen), after, "{before:?} + {seen:?}");
        }
    }

    #[test]
    fn label_values() {
        assert_eq!(
            [Sharding::Unknown, Sharding::Server, Sharding::Here].map(|s| s.to_string()),
            ["unknown", "server", "here"]
        );
        assert_eq!(Sharding::default(), Sharding::Unknown);
    }
}
