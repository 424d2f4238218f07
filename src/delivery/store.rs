//! The compact store under the per-object table: per object a 16-byte
//! slot (last delivered resourceVersion, where its record is, its
//! namespace's id, two flags) and a record packed in 64 KiB chunks — its uid
//! (16 bytes for a canonical UUID), name, and the resourceVersion's text when
//! that is not an integer. What the slots mean is the table's
//! (`delivery::table`); this file only keeps the bytes small.

use std::hash::{Hash, Hasher};

use crate::resource_version::{Rv, RvKey};

/// 16 bytes; the table holds nothing else.
#[derive(Clone, Copy)]
pub(super) struct Slot {
    pub(super) rv: RvKey,
    /// Where the record is in [`Records`].
    pub(super) at: u32,
    pub(super) namespace: u16,
    /// Seen in the current attempt at a full state.
    pub(super) seen: bool,
    /// Delivered as part of the current full state (by any attempt at it):
    /// a retry after a cut does not send it again. Live events do not count:
    /// a re-sync still reports every object it finds.
    pub(super) sent: bool,
}

/// Object records packed in fixed chunks: `uid`, `name`, and the
/// resourceVersion's text when it is opaque, and the namespace when it is
/// not interned, each a varint length then bytes (a uid of length 0 is a
/// canonical UUID: 16 bytes follow).
#[derive(Default)]
pub(super) struct Records {
    chunks: Vec<Box<[u8]>>,
    /// Bytes used in the last chunk.
    used: usize,
    /// Bytes of records still referenced, and all bytes written.
    live: usize,
    written: usize,
    /// The record being encoded ([`Records::put`]), its buffer kept.
    scratch: Vec<u8>,
}

pub(super) const CHUNK: usize = 64 << 10;

/// A uid: a canonical UUID as a number, or any other text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Uid<'a> {
    Uuid(u128),
    Text(&'a str),
}

impl<'a> Uid<'a> {
    pub(super) fn of(text: &'a str) -> Uid<'a> {
        parse_uuid(text).map_or(Uid::Text(text), Uid::Uuid)
    }

    /// A key for the tombstones.
    pub(super) fn key(&self) -> u128 {
        match self {
            Uid::Uuid(u) => *u,
            Uid::Text(t) => {
                let h = |salt: u8| {
                    let mut h = std::collections::hash_map::DefaultHasher::new();
                    (salt, t).hash(&mut h);
                    h.finish()
                };
                (u128::from(h(1)) << 64) | u128::from(h(2))
            }
        }
    }

    pub(super) fn text(&self) -> String {
        match self {
            Uid::Uuid(u) => format_uuid(*u),
            Uid::Text(t) => t.to_string(),
        }
    }
}

/// A record, read back.
pub(super) struct Record<'a> {
    pub(super) uid: Uid<'a>,
    pub(super) name: &'a str,
    /// Empty when the resourceVersion is an integer (the slot holds it).
    pub(super) rv_text: &'a str,
    /// Empty unless the namespace was not interned.
    pub(super) namespace: &'a str,
    pub(super) len: usize,
}

fn put_varint(out: &mut Vec<u8>, mut n: usize) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn get_varint(b: &[u8], at: &mut usize) -> usize {
    let (mut n, mut shift) = (0usize, 0);
    loop {
        let byte = b[*at];
        *at += 1;
        n |= usize::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return n;
        }
        shift += 7;
    }
}

impl Records {
    pub(super) fn encode(uid: &Uid, name: &str, rv: &Rv, namespace: &str) -> Vec<u8> {
        let mut r = Vec::with_capacity(24 + name.len());
        Records::encode_into(&mut r, uid, name, rv, namespace);
        r
    }

    fn encode_into(r: &mut Vec<u8>, uid: &Uid, name: &str, rv: &Rv, namespace: &str) {
        match uid {
            Uid::Uuid(u) => {
                r.push(0);
                r.extend_from_slice(&u.to_le_bytes());
            }
            Uid::Text(t) => {
                put_varint(r, t.len());
                r.extend_from_slice(t.as_bytes());
            }
        }
        for s in [name, rv.number().map_or(rv.as_str(), |_| ""), namespace] {
            put_varint(r, s.len());
            r.extend_from_slice(s.as_bytes());
        }
    }

    /// Encodes a record and stores it, with no allocation of its own;
    /// where it is.
    pub(super) fn put(&mut self, uid: &Uid, name: &str, rv: &Rv, namespace: &str) -> u32 {
        let mut r = std::mem::take(&mut self.scratch);
        r.clear();
        Records::encode_into(&mut r, uid, name, rv, namespace);
        let at = self.add(&r);
        self.scratch = r;
        at
    }

    /// Stores a record; where it is.
    pub(super) fn add(&mut self, record: &[u8]) -> u32 {
        // Records are at most a few KiB (decode bounds every field).
        if self.chunks.is_empty() || self.used + record.len() > CHUNK {
            if !self.chunks.is_empty() {
                // The old chunk's unused tail is lost space, like a hole.
                self.written += CHUNK - self.used;
            }
            self.chunks
                .push(vec![0; CHUNK.max(record.len())].into_boxed_slice());
            self.used = 0;
        }
        let chunk = self.chunks.len() - 1;
        self.chunks[chunk][self.used..self.used + record.len()].copy_from_slice(record);
        // 65,536 chunks (4 GiB of records) are far beyond any resource.
        let at = (chunk * CHUNK + self.used) as u32;
        self.used += record.len();
        self.live += record.len();
        self.written += record.len();
        at
    }

    pub(super) fn get(&self, at: u32) -> Record<'_> {
        let (c, o) = (at as usize / CHUNK, at as usize % CHUNK);
        let b = &self.chunks[c][..];
        let mut i = o;
        let uid_len = get_varint(b, &mut i);
        let uid = if uid_len == 0 {
            let u = u128::from_le_bytes(b[i..i + 16].try_into().expect("16 bytes"));
            i += 16;
            Uid::Uuid(u)
        } else {
            i += uid_len;
            Uid::Text(std::str::from_utf8(&b[i - uid_len..i]).unwrap_or_default())
        };
        let mut text = || {
            let n = get_varint(b, &mut i);
            i += n;
            std::str::from_utf8(&b[i - n..i]).unwrap_or_default()
        };
        let (name, rv_text, namespace) = (text(), text(), text());
        Record {
            uid,
            name,
            rv_text,
            namespace,
            len: i - o,
        }
    }

    /// The record at `at` is no longer referenced.
    pub(super) fn release(&mut self, at: u32) {
        self.live -= self.get(at).len;
    }

    /// A released record at `at` is referenced again (an undone update).
    pub(super) fn revive(&mut self, at: u32) {
        self.live += self.get(at).len;
    }

    /// All bytes written, holes included.
    #[cfg(test)]
    pub(super) fn written(&self) -> usize {
        self.written
    }

    /// More than a sixth of the chunks' bytes are holes.
    pub(super) fn wasteful(&self) -> bool {
        self.written > 4 * CHUNK && self.live * 6 < self.written * 5
    }
}

/// A canonical lower-case UUID (`8-4-4-4-12`) as a number; anything else is `None`.
pub(super) fn parse_uuid(uid: &str) -> Option<u128> {
    let b = uid.as_bytes();
    if b.len() != 36 {
        return None;
    }
    let mut v: u128 = 0;
    for (i, &c) in b.iter().enumerate() {
        if matches!(i, 8 | 13 | 18 | 23) {
            if c != b'-' {
                return None;
            }
            continue;
        }
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => return None,
        };
        v = (v << 4) | u128::from(d);
    }
    Some(v)
}

pub(super) fn format_uuid(u: u128) -> String {
    let h = format!("{u:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}
