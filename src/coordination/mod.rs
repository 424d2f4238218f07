//! Running as one of several replicas: shards (and leader election, added
//! separately).

pub(crate) mod shard;
