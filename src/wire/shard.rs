//! Shards: which objects one of `count` replicas streams, by the FNV-1a 64
//! hash of the object's uid over `count` equal ranges of the hash space,
//! placed exactly where the apiserver's `shardSelector` puts them (KEP-5866,
//! `ShardedListAndWatch`, alpha in 1.36), so that the same shard can be asked
//! of a server that shards and filtered here when it does not.
//!
//! What the server does, as read in kubernetes/kubernetes,
//! `staging/src/k8s.io/apimachinery/pkg/sharding/`:
//! - `hash.go` (commit 6732d913237bd282d81fe99df860938c5d60480a):
//!   `HashField` is Go's `hash/fnv` `New64a` over the field's bytes
//!   (`object.metadata.uid` here), printed `%016x`: 16 lower-case digits.
//! - `selector.go` (commit ef72f831b432af92b51e53853d79cbd4674ac970): an
//!   object matches a requirement when `!HexLess(hash, Start) &&
//!   HexLess(hash, End)`, start inclusive and end exclusive, with `hash` =
//!   `"0x"` + those 16 digits; several requirements are joined by `" || "`;
//!   `String()` writes `shardRange(<field>, '<start>', '<end>')`. `HexLess`
//!   compares by length first, then byte by byte: numeric only when both
//!   values have 16 digits after `0x` (17 for 2^64), so tattler writes its
//!   bounds zero-padded to 16 lower-case digits.
//! - `types.go` (commit 5d7e2a3924f4418c4b213e49c2bcfc836b35368d): `Start`
//!   is inclusive, at least `0x0000000000000000`; `End` exclusive, at most
//!   `0x10000000000000000` (2^64), both `0x`-prefixed lower-case hex.
//! - The `shardSelector` list option's API documentation (the same commits'
//!   OpenAPI): single-quoted CEL string literals with a `0x` prefix, the full
//!   range `[0x0, 0x10000000000000000)`; its 2- and 4-shard examples are
//!   this module's ranges for those counts.
//!
//! So shard `i` of `n` owns `[floor(i·2^64/n), floor((i+1)·2^64/n))`, the
//! last one ending at 2^64 (written `0x10000000000000000`, as the server
//! takes it); kube-state-metrics' server-side sharding computes the same
//! bounds (`bits.Div64(i, 0, n)`).

use std::fmt;

use crate::error::Error;

/// FNV-1a 64: the apiserver's shard hash.
pub(crate) fn fnv1a64(bytes: &[u8]) -> u64 {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes
        .iter()
        .fold(OFFSET_BASIS, |h, &b| (h ^ u64::from(b)).wrapping_mul(PRIME))
}

/// The most shards tattler splits a resource into: far more replicas than a
/// collector runs, and small enough that every range is wide.
pub(crate) const MAX_SHARDS: u32 = 1024;

/// One shard of `count`: the objects whose uid hashes (FNV-1a 64) into the
/// `index`-th of `count` equal ranges of the 64-bit hash space, as the
/// apiserver's `shardSelector=shardRange(object.metadata.uid, …)` places
/// them (KEP-5866). Every object belongs to exactly one shard of `count`.
///
/// A resource with a shard asks the server for its range (a server with
/// `ShardedListAndWatch` sends only those objects) and drops any other
/// object it is sent (a server without it sends everything): either way
/// the consumer gets only the shard's objects.
///
/// ```
/// use kube_tattler::{ResourceSpec, Shard};
/// let second_of_three = Shard::new(3, 1)?;
/// let pods = "pods".parse::<ResourceSpec>()?.in_shard(second_of_three);
/// assert_eq!(second_of_three.to_string(), "1/3");
/// # Ok::<(), kube_tattler::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Shard {
    count: u32,
    index: u32,
}

impl Shard {
    /// Shard `index` (from 0) of `count`.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] naming `shard` unless `1 <= count <=` 1024 and
    /// `index < count`.
    pub fn new(count: u32, index: u32) -> Result<Shard, Error> {
        if count == 0 || count > MAX_SHARDS {
            return Err(Error::Config(format!(
                "shard: count {count} is not between 1 and {MAX_SHARDS}"
            )));
        }
        if index >= count {
            return Err(Error::Config(format!(
                "shard: index {index} is not below count {count} (shards count from 0)"
            )));
        }
        Ok(Shard { count, index })
    }

    /// How many shards there are.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// Which one this is, from 0.
    pub fn index(&self) -> u32 {
        self.index
    }

    /// The hashes this shard owns: `start..end`, end exclusive, as `u128`
    /// because the last shard's end is 2^64.
    pub(crate) fn range(&self) -> (u128, u128) {
        (
            boundary(self.index, self.count),
            boundary(self.index + 1, self.count),
        )
    }

    /// Whether an object with this uid (`metadata.uid`) is in the shard.
    ///
    /// ```
    /// use kube_tattler::Shard;
    /// let halves = [Shard::new(2, 0)?, Shard::new(2, 1)?];
    /// let uid = "0d4c4c2e-7c1b-4b8e-9f3a-2f6d1e8a5b7c";
    /// assert!(halves[0].owns(uid) != halves[1].owns(uid));
    /// # Ok::<(), kube_tattler::Error>(())
    /// ```
    pub fn owns(&self, uid: &str) -> bool {
        let (start, end) = self.range();
        let h = u128::from(fnv1a64(uid.as_bytes()));
        start <= h && h < end
    }

    /// The `shardSelector` query value that asks the server for this
    /// shard's objects.
    pub(crate) fn selector(&self) -> String {
        let (start, end) = self.range();
        format!("shardRange(object.metadata.uid, '0x{start:016x}', '0x{end:016x}')")
    }

    /// Whether `selector` (a LIST's `metadata.shardInfo.selector`, the
    /// server's echo of what it applied) names exactly this shard's range.
    /// Compared by the range it parses to, not as text: the server writes
    /// its own spacing and may drop or keep leading zeros.
    pub(crate) fn named_by(&self, selector: &str) -> bool {
        parse_selector(selector).is_some_and(|ranges| ranges == [self.range()])
    }

    /// Whether the shard is everything (a count of 1): nothing to ask for
    /// or to filter.
    pub(crate) fn is_whole(&self) -> bool {
        self.count == 1
    }
}

/// `index/count`, as metrics and logs name a shard.
impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// The ranges a `shardSelector` names, start inclusive and end exclusive:
/// `shardRange(object.metadata.uid, '0x…', '0x…')` requirements joined by
/// `||`, white space anywhere between tokens, quotes single or double (CEL's
/// string literals), hex digits in either case. `None` for anything else
/// (another field, a bound past 2^64, a start after its end).
pub(crate) fn parse_selector(selector: &str) -> Option<Vec<(u128, u128)>> {
    let bound = |v: &str| -> Option<u128> {
        let v = v.trim();
        let quote = v.chars().next().filter(|q| matches!(q, '\'' | '"'))?;
        let hex = v
            .strip_prefix(quote)?
            .strip_suffix(quote)?
            .strip_prefix("0x")?;
        if hex.is_empty() || hex.len() > 32 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        u128::from_str_radix(hex, 16).ok().filter(|n| *n <= 1 << 64)
    };
    selector
        .split("||")
        .map(|req| {
            let args = req
                .trim()
                .strip_prefix("shardRange")?
                .trim_start()
                .strip_prefix('(')?
                .strip_suffix(')')?;
            let [field, start, end] = args.split(',').collect::<Vec<_>>()[..] else {
                return None;
            };
            let (start, end) = (bound(start)?, bound(end)?);
            (field.trim() == "object.metadata.uid" && start <= end).then_some((start, end))
        })
        .collect()
}

/// `floor(i · 2^64 / count)`: shard `i`'s first hash, and shard `i-1`'s end.
fn boundary(i: u32, count: u32) -> u128 {
    (u128::from(i) << 64) / u128::from(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a64_known_vectors() {
        // The FNV reference vectors (Landon Curt Noll's test suite).
        for (input, want) in [
            ("", 0xcbf2_9ce4_8422_2325_u64),
            ("a", 0xaf63_dc4c_8601_ec8c),
            ("b", 0xaf63_df4c_8601_f1a5),
            ("foobar", 0x8594_4171_f739_67e8),
        ] {
            assert_eq!(fnv1a64(input.as_bytes()), want, "{input:?}");
        }
    }

    #[test]
    fn ranges_are_equal_parts_of_the_hash_space() {
        const END: u128 = 1 << 64;
        // (count, index) -> (start, end)
        let rows: [(u32, u32, u128, u128); 10] = [
            (1, 0, 0, END),
            (2, 0, 0, 0x8000_0000_0000_0000),
            (2, 1, 0x8000_0000_0000_0000, END),
            (3, 0, 0, 0x5555_5555_5555_5555),
            (3, 1, 0x5555_5555_5555_5555, 0xaaaa_aaaa_aaaa_aaaa),
            (3, 2, 0xaaaa_aaaa_aaaa_aaaa, END),
            (4, 0, 0, 0x4000_0000_0000_0000),
            (4, 1, 0x4000_0000_0000_0000, 0x8000_0000_0000_0000),
            (4, 2, 0x8000_0000_0000_0000, 0xc000_0000_0000_0000),
            (4, 3, 0xc000_0000_0000_0000, END),
        ];
        for (count, index, start, end) in rows {
            let s = Shard::new(count, index).unwrap();
            assert_eq!(s.range(), (start, end), "{s}");
        }
    }

    #[test]
    fn selectors_are_the_server_s_own_strings() {
        // The 2- and 4-shard examples of the shardSelector API documentation.
        let rows = [
            (1, 0, "'0x0000000000000000', '0x10000000000000000'"),
            (2, 0, "'0x0000000000000000', '0x8000000000000000'"),
            (2, 1, "'0x8000000000000000', '0x10000000000000000'"),
            (3, 1, "'0x5555555555555555', '0xaaaaaaaaaaaaaaaa'"),
            (4, 0, "'0x0000000000000000', '0x4000000000000000'"),
            (4, 1, "'0x4000000000000000', '0x8000000000000000'"),
            (4, 2, "'0x8000000000000000', '0xc000000000000000'"),
            (4, 3, "'0xc000000000000000', '0x10000000000000000'"),
        ];
        for (count, index, bounds) in rows {
            assert_eq!(
                Shard::new(count, index).unwrap().selector(),
                format!("shardRange(object.metadata.uid, {bounds})")
            );
        }
    }

    /// The server's comparison (`selector.go`'s `HexLess` on `"0x"` +
    /// `%016x`), to hold `owns` to it.
    fn server_matches(selector: &str, uid: &str) -> bool {
        let bounds: Vec<&str> = selector.split('\'').skip(1).step_by(2).collect();
        let hex_less = |a: &str, b: &str| (a.len(), a) < (b.len(), b);
        let hash = format!("0x{:016x}", fnv1a64(uid.as_bytes()));
        !hex_less(&hash, bounds[0]) && hex_less(&hash, bounds[1])
    }

    #[test]
    fn every_uid_is_in_exactly_one_shard_as_the_server_places_it() {
        let uids: Vec<String> = (0..4000u32)
            .map(|i| {
                let h = fnv1a64(&i.to_le_bytes());
                format!(
                    "{:08x}-{:04x}-4{:03x}-a{:03x}-{:012x}",
                    h >> 32,
                    (h >> 16) & 0xffff,
                    h & 0xfff,
                    (h >> 20) & 0xfff,
                    h & 0xffff_ffff_ffff
                )
            })
            .chain(["", "a", "x"].map(String::from))
            .collect();
        for count in [1, 2, 3, 4, 7, 16, MAX_SHARDS] {
            let shards: Vec<Shard> = (0..count).map(|i| Shard::new(count, i).unwrap()).collect();
            let mut sizes = vec![0usize; count as usize];
            for uid in &uids {
                let owners: Vec<u32> = shards
                    .iter()
                    .filter(|s| s.owns(uid))
                    .map(Shard::index)
                    .collect();
                assert_eq!(owners.len(), 1, "{uid} in {owners:?} of {count}");
                sizes[owners[0] as usize] += 1;
                for s in shards.iter().take(16) {
                    assert_eq!(server_matches(&s.selector(), uid), s.owns(uid), "{uid} {s}");
                }
            }
            if count <= 4 {
                // Equal ranges: no shard is starved.
                let fair = uids.len() / count as usize;
                assert!(
                    sizes.iter().all(|&n| n > fair * 8 / 10),
                    "{count}: {sizes:?}"
                );
            }
        }
    }

    #[test]
    fn bounds_are_inclusive_at_the_start_and_exclusive_at_the_end() {
        let halves = [Shard::new(2, 0).unwrap(), Shard::new(2, 1).unwrap()];
        // A uid whose hash falls in the upper half, and one in the lower.
        let upper = (0..)
            .map(|i: u32| i.to_string())
            .find(|u| fnv1a64(u.as_bytes()) >= 1 << 63)
            .unwrap();
        assert!(!halves[0].owns(&upper) && halves[1].owns(&upper));
        let s = halves[1];
        let (start, end) = s.range();
        let inside = |h: u128| start <= h && h < end;
        assert!(inside(1 << 63) && !inside((1 << 63) - 1) && inside(u128::from(u64::MAX)));
    }

    #[test]
    fn a_selector_names_a_shard_by_its_range_not_its_text() {
        let s = |count, index| Shard::new(count, index).unwrap();
        // (selector, shard, named): the server's echo, measured on v1.36.3,
        // puts a space after each comma whatever the request had.
        let rows = [
            (s(2, 0).selector(), s(2, 0), true),
            (s(2, 1).selector(), s(2, 1), true),
            (s(3, 1).selector(), s(3, 1), true),
            (
                "shardRange(object.metadata.uid,'0x0000000000000000','0x8000000000000000')".into(),
                s(2, 0),
                true,
            ),
            (
                "shardRange(object.metadata.uid, '0X0', '0x8000000000000000')".into(),
                s(2, 0),
                false,
            ),
            (
                "shardRange(object.metadata.uid, '0x5555555555555555', '0xAAAAAAAAAAAAAAAA')"
                    .into(),
                s(3, 1),
                true,
            ),
            (
                "shardRange( object.metadata.uid ,  \"0x0\" , '0x8000000000000000' )".into(),
                s(2, 0),
                true,
            ),
            (
                "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')"
                    .into(),
                s(2, 1),
                true,
            ),
            (
                "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')"
                    .into(),
                s(2, 0),
                false,
            ),
            // Another shard of the same count, or the same start of another count.
            (s(4, 0).selector(), s(2, 0), false),
            (s(2, 0).selector(), s(4, 0), false),
            // Two requirements are not one shard, even when one is ours.
            (
                format!("{} || {}", s(2, 0).selector(), s(2, 1).selector()),
                s(2, 0),
                false,
            ),
            (
                "shardRange(object.metadata.name, '0x0', '0x8000000000000000')".into(),
                s(2, 0),
                false,
            ),
            (
                "shardRange(object.metadata.uid, 0x0, '0x8000000000000000')".into(),
                s(2, 0),
                false,
            ),
            (
                "shardRange(object.metadata.uid, '0x0', '0x20000000000000000')".into(),
                s(2, 0),
                false,
            ),
            (
                "shardRange(object.metadata.uid, '0x', '0x8000000000000000')".into(),
                s(2, 0),
                false,
            ),
            ("".into(), s(2, 0), false),
        ];
        for (selector, shard, named) in rows {
            assert_eq!(shard.named_by(&selector), named, "{selector} for {shard}");
        }
        assert_eq!(
            parse_selector(&format!("{} || {}", s(2, 0).selector(), s(2, 1).selector())),
            Some(vec![s(2, 0).range(), s(2, 1).range()])
        );
        assert_eq!(
            parse_selector("shardRange(object.metadata.uid, '0x9', '0x8')"),
            None,
            "a start after its end"
        );
    }

    #[test]
    fn bad_shards_are_refused_naming_the_key() {
        for (count, index) in [(0, 0), (2, 2), (1, 1), (MAX_SHARDS + 1, 0), (3, u32::MAX)] {
            let e = Shard::new(count, index).unwrap_err().to_string();
            assert!(e.contains("shard:"), "{e}");
        }
        assert_eq!(
            Shard::new(MAX_SHARDS, MAX_SHARDS - 1).unwrap().to_string(),
            "1023/1024"
        );
    }
}
