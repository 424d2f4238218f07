//! A built-in object that came as protobuf, written as the JSON the
//! apiserver would have sent for it: the fields of each struct in the order
//! its Go type declares them, under `encoding/json`'s rules (`omitempty`
//! leaves out empty strings, numbers, booleans, lists and maps and nil
//! pointers, never a struct; an absent list or map without it is `null`;
//! map keys sorted; embedded structs' fields in the embedding object), with
//! the types that write themselves (`Time`, `MicroTime`, `Duration`,
//! `Quantity`, `IntOrString`, `RawExtension`, `FieldsV1`) as they do.
//! `ObjectMeta` is `metav1`'s, Go's JSON `go_json`'s. The schema is `schema`'s. Pure.
//!
//! The one pass (issue 39): the writer knows each value's place, so it
//! applies the redaction policy (`objects::policy`, the states the walk of a
//! JSON object computes from the same keys) as it writes and notes where
//! the metadata is ([`Pass`]): what it hands out is what walking the plain
//! JSON would have given, with no second pass over it. Raw JSON inside
//! (`RawExtension`, `FieldsV1`) is walked where it stands when it could
//! hold anything the policy acts on.
//!
//! The recursion follows the schema, which has no cycle: the input cannot
//! make it deeper. A field number the schema does not have is an error
//! (a newer server's field would otherwise vanish without a word).

use std::collections::BTreeMap;

use base64::Engine as _;

use crate::objects::edits::{Edits, Found};
use crate::objects::policy::{self, State};
use crate::objects::reuse::Reuse;
use crate::objects::scrub::{self, CopyText, REDACTED_JSON};
use crate::wire::go_json::{self, string};
use crate::wire::metav1;
use crate::wire::protobuf::{Fields, PbError, Value};
use crate::wire::schema::{schema, Field, Msg, Schema, Shape, Ty};

/// An object's protobuf message (`raw` of its `runtime.Unknown`) as its
/// JSON document, `kind` and `apiVersion` first, appended to `out`.
#[cfg(test)]
pub(crate) fn object_doc(
    out: &mut Vec<u8>,
    kind: &[u8],
    api_version: &[u8],
    raw: &[u8],
    scratch: &mut Scratch,
) -> Result<(), PbError> {
    object_doc_in(out, kind, api_version, raw, scratch, &mut Pass::plain())
}

/// An object's protobuf message (`raw` of its `runtime.Unknown`) as its
/// JSON document, `kind` and `apiVersion` first, appended to `out`, in
/// `pass` (its edits made as it is written, its metadata noted).
pub(crate) fn object_doc_in(
    out: &mut Vec<u8>,
    kind: &[u8],
    api_version: &[u8],
    raw: &[u8],
    scratch: &mut Scratch,
    pass: &mut Pass,
) -> Result<(), PbError> {
    let s = schema();
    let Some(msg) = s.kind(api_version, kind) else {
        return Err(PbError::not_in_schema(format!(
            "kind {:?} of {:?} is not in tattler's schema",
            String::from_utf8_lossy(&kind[..kind.len().min(64)]),
            String::from_utf8_lossy(&api_version[..api_version.len().min(64)]),
        )));
    };
    let mut w = Writer {
        s,
        out,
        first: true,
        pool: &mut scratch.lists,
        pass,
    };
    let st = State::Root;
    w.out.push(b'{');
    if !kind.is_empty() {
        w.key(b"\"kind\":");
        let k = w.pass.member(st, b"kind");
        w.pass.string(w.out, kind, k);
    }
    if !api_version.is_empty() {
        w.key(b"\"apiVersion\":");
        let k = w.pass.member(st, b"apiVersion");
        w.pass.string(w.out, api_version, k);
    }
    w.fields(s.msg(msg), raw, st)?;
    w.out.push(b'}');
    Ok(())
}

/// What the one pass does as it writes an object: the edits asked for,
/// made as the redaction policy says where each value stands, and the
/// metadata strings located — what the walk of the written JSON
/// (`objects::scrub::walk`) would have done and found.
#[derive(Debug)]
pub(crate) struct Pass {
    edits: Edits,
    /// False for the plain conversion: no edits, nothing noted.
    on: bool,
    /// Raw JSON written, never walked nor checked beyond Go's rules (the
    /// fallback, whose output is walked).
    writes_only: bool,
    /// Where the object starts in the output: spans are from there.
    base: usize,
    /// Where the metadata strings are, from `base` (quotes included).
    pub(crate) found: Found,
    /// Met something that only the walk of the written JSON does as the
    /// walk does (raw JSON that is not UTF-8 or not what the walk takes,
    /// an annotation's copy that is not UTF-8 or holds a copy with edits):
    /// the caller writes the object plainly and walks it.
    pub(crate) bailed: bool,
    /// The walks' working memory (an annotation's copy, raw JSON).
    reuse: Reuse,
    /// `ObjectMeta`'s lists, from object to object.
    lists: metav1::Lists,
}

impl Pass {
    /// The plain conversion: no edits, nothing noted.
    pub(crate) fn plain() -> Pass {
        Pass {
            edits: Edits::NONE,
            on: false,
            writes_only: true,
            base: 0,
            found: Found::default(),
            bailed: false,
            reuse: Reuse::default(),
            lists: metav1::Lists::default(),
        }
    }

    /// One pass with `edits`, for an object starting at `base` in the
    /// output, its walks' memory lent by `scratch` (see [`Pass::end`]).
    pub(crate) fn new(edits: Edits, base: usize, scratch: &mut Scratch) -> Pass {
        Pass {
            edits,
            on: true,
            writes_only: false,
            base,
            found: Found::default(),
            bailed: false,
            reuse: std::mem::take(&mut scratch.walks),
            lists: std::mem::take(&mut scratch.lists_of_meta),
        }
    }

    /// Gives the memory it was lent back to `scratch`.
    pub(crate) fn end(&mut self, scratch: &mut Scratch) {
        scratch.walks = std::mem::take(&mut self.reuse);
        scratch.lists_of_meta = std::mem::take(&mut self.lists);
    }

    /// `ObjectMeta`'s lists, to be given back.
    pub(crate) fn take_lists(&mut self) -> metav1::Lists {
        std::mem::take(&mut self.lists)
    }

    pub(crate) fn give_lists(&mut self, lists: metav1::Lists) {
        self.lists = lists;
    }

    /// The object starts at `base` in the output.
    pub(crate) fn rebase(&mut self, base: usize) {
        self.base = base;
    }

    /// What a pass that bailed writes instead, for the walk to take: the
    /// plain conversion, but managedFields that go are passed over unread
    /// as the one pass passes them over, so that both ways agree on what
    /// they never look at.
    pub(crate) fn fallback(edits: Edits) -> Pass {
        Pass {
            edits: Edits {
                drop_managed_fields: edits.drop_managed_fields,
                ..Edits::NONE
            },
            on: true,
            writes_only: true,
            base: 0,
            found: Found::default(),
            bailed: false,
            reuse: Reuse::default(),
            lists: metav1::Lists::default(),
        }
    }

    /// The state of member `key` of an object in state `parent`.
    #[inline]
    pub(crate) fn member(&self, parent: State, key: &[u8]) -> State {
        if !self.on || (parent == State::Plain && !policy::plain_key_matters(key, self.edits)) {
            return State::Plain;
        }
        policy::member(parent, key, self.edits)
    }

    /// The state of an array's items.
    #[inline]
    pub(crate) fn item(&self, array: State) -> State {
        if !self.on {
            return State::Plain;
        }
        policy::item(array)
    }

    /// A string value in state `st`.
    #[inline]
    pub(crate) fn string(&mut self, out: &mut Vec<u8>, s: &[u8], st: State) {
        match st {
            State::Plain | State::Skip => string(out, s),
            State::Redact => out.extend_from_slice(REDACTED_JSON),
            State::Copy => self.copy(out, s),
            State::Kind | State::Name | State::Namespace | State::Uid | State::ResourceVersion => {
                let start = out.len();
                string(out, s);
                let span = Some((start - self.base, out.len() - self.base));
                match st {
                    State::Kind => self.found.kind = span,
                    State::Name => self.found.name = span,
                    State::Namespace => self.found.namespace = span,
                    State::Uid => self.found.uid = span,
                    _ => self.found.resource_version = span,
                }
            }
            _ => string(out, s),
        }
    }

    /// A value in state `st` was written from `start`: redacted, unless `null`.
    #[inline]
    pub(crate) fn end_value(&mut self, out: &mut Vec<u8>, start: usize, st: State) {
        if st == State::Redact && &out[start..] != b"null" {
            out.truncate(start);
            out.extend_from_slice(REDACTED_JSON);
        }
    }

    /// An annotation's copy of the object, `text` its value: scrubbed by the
    /// same rules, or withheld whole (`objects::annotation_copies`).
    fn copy(&mut self, out: &mut Vec<u8>, text: &[u8]) {
        if std::str::from_utf8(text).is_err() {
            self.bailed = true;
            string(out, text);
            return;
        }
        match scrub::copy_text(text, self.edits, &mut self.reuse) {
            CopyText::Unchanged => string(out, text),
            CopyText::Redacted(t) => {
                string(out, &t);
                self.reuse.give_bytes(t);
            }
            CopyText::Withheld => out.extend_from_slice(REDACTED_JSON),
            CopyText::Nested => {
                self.bailed = true;
                string(out, text);
            }
        }
    }

    /// Raw JSON (`RawExtension`, `FieldsV1`) in state `st`, written by
    /// Go's rules and walked where it stands when the policy could act in it.
    pub(crate) fn raw_json(
        &mut self,
        out: &mut Vec<u8>,
        raw: &[u8],
        st: State,
    ) -> Result<(), PbError> {
        let start = out.len();
        go_json::raw_json(out, raw)?;
        if self.writes_only {
            return Ok(());
        }
        // Go copies a Marshaler's bytes as they are: the walk of the
        // written JSON would refuse what is not UTF-8.
        if std::str::from_utf8(&out[start..]).is_err() {
            self.bailed = true;
            return Ok(());
        }
        if matches!(st, State::Skip | State::Redact | State::Managed) {
            return Ok(());
        }
        // serde_json checked it; the walk takes all it takes but `\u`
        // escapes, which it reads itself in keys (FieldsV1's `k:{\"name\":…}`
        // keys hold only `\"`). Below `Plain`, only keys the policy names
        // leave it, and none is there.
        let written = &out[start..];
        if st == State::Plain
            && memchr::memmem::find(written, b"\\u").is_none()
            && (!self.edits.scrub || memchr::memmem::find(written, b"\"env\"").is_none())
            && (!self.edits.any_redaction()
                || memchr::memmem::find(written, b"\"annotations\"").is_none())
        {
            return Ok(());
        }
        match scrub::walk_value(written, self.edits, st, &mut self.reuse) {
            Ok(None) => {}
            Ok(Some(edited)) => {
                out.truncate(start);
                out.extend_from_slice(&edited);
            }
            Err(_) => self.bailed = true,
        }
        Ok(())
    }
}

/// Memory the conversion reuses from object to object (a reader keeps one):
/// no allocation per message once warm, so the stream's heap does not
/// fragment between the records it keeps.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    lists: Vec<Vec<(u16, At)>>,
    /// The walks' memory and `ObjectMeta`'s lists, lent to each [`Pass`].
    walks: Reuse,
    lists_of_meta: metav1::Lists,
}

/// A field's value as an offset into its message's bytes: what a
/// [`Scratch`] list holds, with no borrow of one object's bytes.
#[derive(Debug, Clone, Copy)]
enum At {
    Varint(u64),
    Fixed64(u64),
    Fixed32(u32),
    Bytes(usize, usize),
}

impl At {
    /// `v`, a value read from `raw`.
    fn of(v: Value<'_>, raw: &[u8]) -> At {
        match v {
            Value::Varint(x) => At::Varint(x),
            Value::Fixed64(x) => At::Fixed64(x),
            Value::Fixed32(x) => At::Fixed32(x),
            Value::Bytes(b) => At::Bytes(b.as_ptr() as usize - raw.as_ptr() as usize, b.len()),
        }
    }

    fn get(self, raw: &[u8]) -> Value<'_> {
        match self {
            At::Varint(x) => Value::Varint(x),
            At::Fixed64(x) => Value::Fixed64(x),
            At::Fixed32(x) => Value::Fixed32(x),
            At::Bytes(at, n) => Value::Bytes(&raw[at..at + n]),
        }
    }
}

/// Writes one JSON object's members.
struct Writer<'a> {
    s: &'a Schema,
    out: &'a mut Vec<u8>,
    first: bool,
    /// Field lists of one message each, reused from message to message.
    pool: &'a mut Vec<Vec<(u16, At)>>,
    pass: &'a mut Pass,
}

impl Writer<'_> {
    /// A schema field's key (plain ASCII: no escape).
    fn field_key(&mut self, name: &str) {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        self.out.push(b'"');
        self.out.extend_from_slice(name.as_bytes());
        self.out.extend_from_slice(b"\":");
    }

    fn key(&mut self, key: &[u8]) {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        self.out.extend_from_slice(key);
    }

    /// `msg`'s fields from its message bytes, into the current object, an
    /// object in state `st`.
    fn fields(&mut self, msg: &Msg, raw: &[u8], st: State) -> Result<(), PbError> {
        // (position in msg.fields, value), in wire order; then grouped by
        // position, keeping each field's occurrences in wire order.
        let mut seen = self.pool.pop().unwrap_or_default();
        seen.clear();
        let mut f = Fields::new(raw);
        while let Some((n, v)) = f.next_field()? {
            let Some(p) = msg.position(n) else {
                return Err(PbError::not_in_schema(format!(
                    "field {n} of {} is not in tattler's schema (a newer server?)",
                    short(msg.name)
                )));
            };
            seen.push((p as u16, At::of(v, raw)));
        }
        // The server writes fields by number, mostly the struct's order.
        if !seen.windows(2).all(|w| w[0].0 <= w[1].0) {
            seen.sort_by_key(|&(p, _)| p);
        }
        let mut at = 0;
        for (p, field) in msg.fields.iter().enumerate() {
            let from = at;
            while at < seen.len() && usize::from(seen[at].0) == p {
                at += 1;
            }
            let values = &seen[from..at];
            let last = values.last().map(|&(_, a)| a.get(raw));
            match field.shape {
                Shape::Inline => {
                    let Ty::Msg(i) = field.ty else {
                        return Err(PbError::new("an inline field that is not a struct"));
                    };
                    let bytes = match last {
                        Some(v) => v.bytes("an embedded struct")?,
                        None => &[],
                    };
                    self.fields(self.s.msg(i), bytes, st)?;
                }
                Shape::One => {
                    if field.omitempty && field.ty.can_be_empty() && is_empty(field.ty, last)? {
                        continue;
                    }
                    let fst = self.pass.member(st, field.key.as_bytes());
                    if fst == State::Managed {
                        continue;
                    }
                    self.field_key(field.key);
                    self.item(field, last, fst)?;
                }
                Shape::Pointer => {
                    if last.is_none() && field.omitempty {
                        continue;
                    }
                    let fst = self.pass.member(st, field.key.as_bytes());
                    if fst == State::Managed {
                        continue;
                    }
                    self.field_key(field.key);
                    match last {
                        None => self.out.extend_from_slice(b"null"),
                        Some(v) => self.item(field, Some(v), fst)?,
                    }
                }
                Shape::List => {
                    let fst = self.pass.member(st, field.key.as_bytes());
                    if fst == State::Managed {
                        continue;
                    }
                    let ist = self.pass.item(fst);
                    let numeric =
                        matches!(field.ty, Ty::Bool | Ty::I32 | Ty::I64 | Ty::U32 | Ty::U64);
                    // Where the list's `[` is, once written.
                    let mut wrote = None;
                    for &(_, a) in values {
                        match a.get(raw) {
                            // Packed numbers: one value, many items.
                            Value::Bytes(mut packed) if numeric => {
                                while !packed.is_empty() {
                                    let (n, used) = crate::wire::protobuf::varint(packed)?;
                                    self.list_item(field, &mut wrote, Value::Varint(n), ist)?;
                                    packed = &packed[used..];
                                }
                            }
                            v => self.list_item(field, &mut wrote, v, ist)?,
                        }
                    }
                    if let Some(start) = wrote {
                        self.out.push(b']');
                        self.pass.end_value(self.out, start, fst);
                    } else if !field.omitempty {
                        self.field_key(field.key);
                        self.out.extend_from_slice(b"null");
                    }
                }
                Shape::Map => {
                    let fst = if values.is_empty() && field.omitempty {
                        continue;
                    } else {
                        self.pass.member(st, field.key.as_bytes())
                    };
                    if fst == State::Managed {
                        continue;
                    }
                    if values.is_empty() {
                        self.field_key(field.key);
                        self.out.extend_from_slice(b"null");
                        continue;
                    }

                    // The server writes entries sorted by key (Go's order
                    // too): written as they come; otherwise sorted here, a
                    // later duplicate winning as in Go.
                    let mut sorted = true;
                    let mut prev: Option<&[u8]> = None;
                    for &(_, a) in values {
                        let (k, _) = entry(a.get(raw).bytes("a map entry")?)?;
                        if prev.is_some_and(|p| p >= k) {
                            sorted = false;
                        }
                        prev = Some(k);
                    }
                    self.field_key(field.key);
                    let start_map = self.out.len();
                    self.out.push(b'{');
                    if sorted {
                        for (i, &(_, a)) in values.iter().enumerate() {
                            let (k, v) = entry(a.get(raw).bytes("a map entry")?)?;
                            self.map_item(field, i, k, v, fst)?;
                        }
                    } else {
                        let mut entries: BTreeMap<&[u8], Option<Value<'_>>> = BTreeMap::new();
                        for &(_, a) in values {
                            let (k, v) = entry(a.get(raw).bytes("a map entry")?)?;
                            entries.insert(k, v);
                        }
                        for (i, (k, v)) in entries.into_iter().enumerate() {
                            self.map_item(field, i, k, v, fst)?;
                        }
                    }
                    self.out.push(b'}');
                    self.pass.end_value(self.out, start_map, fst);
                }
            }
        }
        self.pool.push(seen);
        Ok(())
    }

    /// One item of a list field (items in state `st`): the key and `[`
    /// before the first.
    fn list_item(
        &mut self,
        field: &Field,
        wrote: &mut Option<usize>,
        v: Value<'_>,
        st: State,
    ) -> Result<(), PbError> {
        if wrote.is_some() {
            self.out.push(b',');
        } else {
            self.field_key(field.key);
            *wrote = Some(self.out.len());
            self.out.push(b'[');
        }
        self.item(field, Some(v), st)
    }

    /// The `i`th entry of a map field in state `st`.
    fn map_item(
        &mut self,
        field: &Field,
        i: usize,
        k: &[u8],
        v: Option<Value<'_>>,
        st: State,
    ) -> Result<(), PbError> {
        if i > 0 {
            self.out.push(b',');
        }
        string(self.out, k);
        self.out.push(b':');
        let est = self.pass.member(st, k);
        self.item(field, v, est)
    }

    /// One value of `field` in state `st`: its type's, led by the constant
    /// `kind` and `apiVersion` the field's structs carry, if any.
    fn item(&mut self, field: &Field, v: Option<Value<'_>>, st: State) -> Result<(), PbError> {
        match (field.ty, &field.type_meta) {
            (Ty::Msg(i), Some(type_meta)) => {
                let raw = bytes(v, "a struct")?;
                let start = self.out.len();
                let mut inner = Writer {
                    s: self.s,
                    out: &mut *self.out,
                    first: false,
                    pool: &mut *self.pool,
                    pass: &mut *self.pass,
                };
                inner.out.push(b'{');
                inner.out.extend_from_slice(type_meta);
                inner.fields(self.s.msg(i), raw, st)?;
                inner.out.push(b'}');
                self.pass.end_value(self.out, start, st);
                Ok(())
            }
            (ty, _) => self.value(ty, v, st),
        }
    }

    /// One value of type `ty` in state `st`; `None` is the type's zero value.
    fn value(&mut self, ty: Ty, v: Option<Value<'_>>, st: State) -> Result<(), PbError> {
        if st == State::Redact && (ty == Ty::Str || ty == Ty::Bytes && v.is_some()) {
            // A string either way: not written only to be redacted.
            bytes(v, "a string")?;
            self.out.extend_from_slice(REDACTED_JSON);
            return Ok(());
        }
        let start = self.out.len();
        self.value_as_is(ty, v, st)?;
        self.pass.end_value(self.out, start, st);
        Ok(())
    }

    /// [`Writer::value`] before its own redaction.
    fn value_as_is(&mut self, ty: Ty, v: Option<Value<'_>>, st: State) -> Result<(), PbError> {
        let out = &mut *self.out;
        match ty {
            Ty::Str => self.pass.string(out, bytes(v, "a string")?, st),
            Ty::Bool => out.extend_from_slice(if varint(v, "a bool")? != 0 {
                b"true"
            } else {
                b"false"
            }),
            Ty::I32 => go_json::int(out, i64::from(varint(v, "an int32")? as i32)),
            Ty::I64 => go_json::int(out, varint(v, "an int64")? as i64),
            Ty::U32 => go_json::int(out, i64::from(varint(v, "a uint32")? as u32)),
            Ty::U64 => {
                use std::io::Write as _;
                let _ = write!(out, "{}", varint(v, "a uint64")?);
            }
            Ty::Bytes => match v {
                // A nil []byte; an empty one is "" (protobuf cannot tell).
                None => out.extend_from_slice(b"null"),
                Some(v) => {
                    out.push(b'"');
                    let b = v.bytes("bytes")?;
                    out.extend_from_slice(
                        base64::engine::general_purpose::STANDARD
                            .encode(b)
                            .as_bytes(),
                    );
                    out.push(b'"');
                }
            },
            Ty::Time => {
                let raw = bytes(v, "a Time")?;
                metav1::time(out, metav1::seconds(raw)?)?;
            }
            Ty::MicroTime => micro_time(out, bytes(v, "a MicroTime")?)?,
            Ty::Duration => {
                let mut nanos = 0i64;
                let mut f = Fields::new(bytes(v, "a Duration")?);
                while let Some((n, v)) = f.next_field()? {
                    if n == 1 {
                        nanos = v.varint("Duration.duration")? as i64;
                    }
                }
                out.push(b'"');
                duration(out, nanos);
                out.push(b'"');
            }
            Ty::Quantity => {
                let mut s: &[u8] = b"";
                let mut f = Fields::new(bytes(v, "a Quantity")?);
                while let Some((n, v)) = f.next_field()? {
                    if n == 1 {
                        s = v.bytes("Quantity.string")?;
                    }
                }
                string(out, if s.is_empty() { b"0" } else { s });
            }
            Ty::IntOrString => {
                let (mut kind, mut int, mut text): (u64, u64, &[u8]) = (0, 0, b"");
                let mut f = Fields::new(bytes(v, "an IntOrString")?);
                while let Some((n, v)) = f.next_field()? {
                    match n {
                        1 => kind = v.varint("IntOrString.type")?,
                        2 => int = v.varint("IntOrString.intVal")?,
                        3 => text = v.bytes("IntOrString.strVal")?,
                        _ => {}
                    }
                }
                match kind {
                    0 => go_json::int(out, i64::from(int as i32)),
                    1 => string(out, text),
                    _ => return Err(PbError::new("an IntOrString of an unknown type")),
                }
            }
            Ty::Raw | Ty::FieldsV1 => {
                let mut raw: Option<&[u8]> = None;
                let mut f = Fields::new(bytes(v, "raw JSON")?);
                while let Some((n, v)) = f.next_field()? {
                    if n == 1 {
                        raw = Some(v.bytes("raw")?);
                    }
                }
                match raw {
                    // A nil Raw is `null`; an empty one is too (protobuf
                    // cannot tell them apart).
                    None | Some(b"") => out.extend_from_slice(b"null"),
                    Some(raw) => self.pass.raw_json(out, raw, st)?,
                }
            }
            Ty::ObjectMeta => {
                metav1::object_meta_in(out, bytes(v, "an ObjectMeta")?, self.pass, st)?
            }
            Ty::Msg(i) => {
                let raw = bytes(v, "a struct")?;
                let mut inner = Writer {
                    s: self.s,
                    out,
                    first: true,
                    pool: &mut *self.pool,
                    pass: &mut *self.pass,
                };
                inner.out.push(b'{');
                inner.fields(self.s.msg(i), raw, st)?;
                inner.out.push(b'}');
            }
        }
        Ok(())
    }
}

/// A Go type name without its package path.
fn short(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

fn bytes<'v>(v: Option<Value<'v>>, what: &str) -> Result<&'v [u8], PbError> {
    v.map_or(Ok(&[][..]), |v| v.bytes(what))
}

fn varint(v: Option<Value<'_>>, what: &str) -> Result<u64, PbError> {
    v.map_or(Ok(0), |v| v.varint(what))
}

/// Whether a scalar field's value is what `omitempty` leaves out.
fn is_empty(ty: Ty, v: Option<Value<'_>>) -> Result<bool, PbError> {
    Ok(match ty {
        Ty::Str | Ty::Bytes => bytes(v, "a string")?.is_empty(),
        _ => varint(v, "a number")? == 0,
    })
}

/// A map entry's key and value (absent: the value type's zero).
fn entry(raw: &[u8]) -> Result<(&[u8], Option<Value<'_>>), PbError> {
    let (mut k, mut v): (&[u8], Option<Value<'_>>) = (b"", None);
    let mut f = Fields::new(raw);
    while let Some((n, value)) = f.next_field()? {
        match n {
            1 => k = value.bytes("a map key")?,
            2 => v = Some(value),
            _ => {}
        }
    }
    Ok((k, v))
}

/// A `MicroTime` message as it writes itself: `null` when zero, else
/// `"2006-01-02T15:04:05.000000Z"`.
fn micro_time(out: &mut Vec<u8>, raw: &[u8]) -> Result<(), PbError> {
    let (mut secs, mut nanos) = (0i64, 0i64);
    let mut f = Fields::new(raw);
    while let Some((n, v)) = f.next_field()? {
        match n {
            1 => secs = v.varint("MicroTime.seconds")? as i64,
            2 => nanos = i64::from(v.varint("MicroTime.nanos")? as i32),
            _ => {}
        }
    }
    if raw.is_empty() || (secs == 0 && nanos == 0) {
        out.extend_from_slice(b"null");
        return Ok(());
    }
    let mut whole = Vec::with_capacity(24);
    metav1::time(&mut whole, Some(secs))?;
    // "…:05Z" → "…:05.000000Z"
    whole.truncate(whole.len() - 2);
    out.extend_from_slice(&whole);
    let micros = nanos.rem_euclid(1_000_000_000) / 1000;
    out.push(b'.');
    for p in [100_000, 10_000, 1000, 100, 10, 1] {
        out.push(b'0' + (micros / p % 10) as u8);
    }
    out.extend_from_slice(b"Z\"");
    Ok(())
}

/// Go's `time.Duration.String()`: `0s`, `1.5s`, `2m3s`, `1h0m0s`, `250ms`,
/// `3µs`, `9ns`.
fn duration(out: &mut Vec<u8>, nanos: i64) {
    if nanos == 0 {
        out.extend_from_slice(b"0s");
        return;
    }
    if nanos < 0 {
        out.push(b'-');
    }
    let u = nanos.unsigned_abs();
    // Below a second: one unit, with a fraction.
    let frac = |out: &mut Vec<u8>, v: u64, digits: u32| {
        let p = 10u64.pow(digits);
        out.extend_from_slice((v / p).to_string().as_bytes());
        let f = v % p;
        if f != 0 {
            let s = format!("{f:0width$}", width = digits as usize);
            out.push(b'.');
            out.extend_from_slice(s.trim_end_matches('0').as_bytes());
        }
    };
    if u < 1_000 {
        out.extend_from_slice(format!("{u}ns").as_bytes());
    } else if u < 1_000_000 {
        frac(out, u, 3);
        out.extend_from_slice("µs".as_bytes());
    } else if u < 1_000_000_000 {
        frac(out, u, 6);
        out.extend_from_slice(b"ms");
    } else {
        let secs = u / 1_000_000_000;
        let (h, m) = (secs / 3600, secs / 60 % 60);
        if h > 0 {
            out.extend_from_slice(format!("{h}h").as_bytes());
        }
        if h > 0 || m > 0 {
            out.extend_from_slice(format!("{m}m").as_bytes());
        }
        frac(out, u % 60_000_000_000, 9);
        out.push(b's');
    }
}

#[cfg(test)]
mod one_pass;

#[cfg(test)]
mod tests {
    use super::*;

    /// Protobuf encoding, enough for the tests.
    fn key(n: u32, wire: u64, out: &mut Vec<u8>) {
        varint_to(u64::from(n) << 3 | wire, out);
    }
    fn varint_to(mut v: u64, out: &mut Vec<u8>) {
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(b);
                return;
            }
            out.push(b | 0x80);
        }
    }
    fn bytes_field(n: u32, b: &[u8], out: &mut Vec<u8>) {
        key(n, 2, out);
        varint_to(b.len() as u64, out);
        out.extend_from_slice(b);
    }
    fn int_field(n: u32, v: u64, out: &mut Vec<u8>) {
        key(n, 0, out);
        varint_to(v, out);
    }

    fn doc(kind: &str, api_version: &str, raw: &[u8]) -> String {
        let mut out = Vec::new();
        object_doc(
            &mut out,
            kind.as_bytes(),
            api_version.as_bytes(),
            raw,
            &mut Scratch::default(),
        )
        .unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn durations_read_as_go_writes_them() {
        for (nanos, want) in [
            (0, "0s"),
            (9, "9ns"),
            (1_500, "1.5µs"),
            (250_000_000, "250ms"),
            (1_500_000_000, "1.5s"),
            (123_000_000_000, "2m3s"),
            (3_600_000_000_000, "1h0m0s"),
            (-90_000_000_000, "-1m30s"),
        ] {
            let mut out = Vec::new();
            duration(&mut out, nanos);
            assert_eq!(String::from_utf8(out).unwrap(), want, "{nanos}");
        }
    }

    #[test]
    fn an_empty_configmap_is_what_the_server_writes() {
        // ObjectMeta with a name only; no data.
        let mut meta = Vec::new();
        bytes_field(1, b"c", &mut meta);
        let mut raw = Vec::new();
        bytes_field(1, &meta, &mut raw);
        assert_eq!(
            doc("ConfigMap", "v1", &raw),
            r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"c"}}"#
        );
    }

    #[test]
    fn maps_sort_pointers_and_lists_follow_omitempty_and_structs_are_never_empty() {
        // A Secret: data (map of bytes) out of order, immutable (*bool), type.
        let mut raw = Vec::new();
        bytes_field(1, &[], &mut raw);
        for (k, v) in [(&b"z"[..], &b"\x00\xff"[..]), (b"a", b"hi")] {
            let mut e = Vec::new();
            bytes_field(1, k, &mut e);
            bytes_field(2, v, &mut e);
            bytes_field(2, &e, &mut raw);
        }
        bytes_field(3, b"Opaque", &mut raw);
        int_field(5, 0, &mut raw);
        assert_eq!(
            doc("Secret", "v1", &raw),
            r#"{"kind":"Secret","apiVersion":"v1","metadata":{},"immutable":false,"data":{"a":"aGk=","z":"AP8="},"type":"Opaque"}"#
        );
        // A Service with an empty spec: ports (omitempty) left out,
        // structs written whole with their non-omitempty members.
        let mut raw = Vec::new();
        bytes_field(1, &[], &mut raw);
        bytes_field(2, &[], &mut raw);
        let got = doc("Service", "v1", &raw);
        assert!(
            got.starts_with(r#"{"kind":"Service","apiVersion":"v1","metadata":{},"spec":{}"#),
            "{got}"
        );
        assert!(got.ends_with(r#""status":{"loadBalancer":{}}}"#), "{got}");
    }

    #[test]
    fn int_or_string_quantity_and_micro_time_write_themselves() {
        // A container port probe: tcpSocket.port = "http" (IntOrString
        // string); resources.limits.cpu = 500m.
        let mut ios = Vec::new();
        int_field(1, 1, &mut ios);
        bytes_field(3, b"http", &mut ios);
        let (mut q, mut t) = (Vec::new(), Vec::new());
        bytes_field(1, b"500m", &mut q);
        int_field(1, 1_700_000_000, &mut t);
        int_field(2, 123_456_789, &mut t);
        let mut out = Vec::new();
        let mut pool = Vec::new();
        let mut w = Writer {
            s: schema(),
            out: &mut out,
            first: true,
            pool: &mut pool,
            pass: &mut Pass::plain(),
        };
        w.value(Ty::IntOrString, Some(Value::Bytes(&ios)), State::Plain)
            .unwrap();
        w.value(Ty::IntOrString, None, State::Plain).unwrap();
        w.value(Ty::Quantity, Some(Value::Bytes(&q)), State::Plain)
            .unwrap();
        w.value(Ty::Quantity, None, State::Plain).unwrap();
        w.value(Ty::MicroTime, Some(Value::Bytes(&t)), State::Plain)
            .unwrap();
        w.value(Ty::MicroTime, None, State::Plain).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#""http"0"500m""0""2023-11-14T22:13:20.123456Z"null"#
        );
    }

    #[test]
    fn unknown_fields_kinds_and_wrong_wire_types_are_errors_not_panics() {
        let mut raw = Vec::new();
        bytes_field(1, &[], &mut raw);
        bytes_field(99, b"x", &mut raw);
        let mut out = Vec::new();
        let e =
            object_doc(&mut out, b"ConfigMap", b"v1", &raw, &mut Scratch::default()).unwrap_err();
        assert!(e.message.contains("field 99 of"), "{}", e.message);
        assert!(e.not_in_schema);
        assert!(object_doc(&mut out, b"Widget", b"v1", &[], &mut Scratch::default()).is_err());
        let mut raw = Vec::new();
        int_field(1, 5, &mut raw); // metadata as a varint
        assert!(object_doc(&mut out, b"ConfigMap", b"v1", &raw, &mut Scratch::default()).is_err());
        // Truncated bytes.
        assert!(object_doc(
            &mut out,
            b"ConfigMap",
            b"v1",
            &[0x0a, 0x05, 1],
            &mut Scratch::default()
        )
        .is_err());
    }
}

#[cfg(test)]
mod measure {
    /// A LIST body captured from a real apiserver both ways
    /// (`TATTLER_PB_LIST`, `TATTLER_JSON_LIST`: the same `?limit=N` page
    /// as `application/vnd.kubernetes.protobuf` and as JSON): every item
    /// byte-equal, and the conversion's time per item.
    /// `cargo test --release -p kube-tattler --lib measure_list -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn measure_list() {
        use crate::wire::frames::ListItem;
        use crate::wire::proto_frames::ProtoListReader;
        let (Ok(pb), Ok(json)) = (
            std::env::var("TATTLER_PB_LIST"),
            std::env::var("TATTLER_JSON_LIST"),
        ) else {
            return;
        };
        let pb = std::fs::read(pb).unwrap();
        let json = std::fs::read(json).unwrap();
        #[derive(serde::Deserialize)]
        struct List<'a> {
            #[serde(borrow)]
            items: Vec<&'a serde_json::value::RawValue>,
        }
        let list: List = serde_json::from_slice(&json).unwrap();
        let mut r = ProtoListReader::new(&pb[..], 1 << 30);
        let mut i = 0;
        while let Some(item) = r.next_item().unwrap() {
            let ListItem::Item(b) = item else {
                panic!("item {i}")
            };
            let b = std::str::from_utf8(b).unwrap();
            let b = b.replacen("\"kind\":\"Pod\",\"apiVersion\":\"v1\",", "", 1);
            assert_eq!(b, list.items[i].get(), "item {i}");
            i += 1;
        }
        assert_eq!(i, list.items.len());
        let t = std::time::Instant::now();
        let rounds = 20;
        for _ in 0..rounds {
            let mut r = ProtoListReader::new(&pb[..], 1 << 30);
            while let Some(item) = r.next_item().unwrap() {
                std::hint::black_box(item);
            }
        }
        let per = t.elapsed() / (rounds * i as u32);
        println!(
            "{i} items, {} bytes of protobuf: {per:?} per item",
            pb.len()
        );
    }
}
