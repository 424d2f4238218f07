//! The `metav1` types of the apiserver's protobuf written as the JSON it
//! would have sent: `ObjectMeta` (with owner references and managed
//! fields), `Status` (with its details), `ListMeta`, and `Time`, under Go's
//! rules as the 1.36 apiserver applies them: struct fields in declaration
//! order, `omitempty` (and `omitzero` on `creationTimestamp`), map keys
//! sorted bytewise, `metav1.Time` as RFC 3339 in whole seconds (the
//! protobuf nanos are dropped, as the apiserver drops them).

use crate::objects::policy::State;
use crate::resource_version::Rv;
use crate::wire::dates::civil_from_days;
use crate::wire::frames::ListMeta;
use crate::wire::go_json::{int, Obj};
use crate::wire::proto_json::Pass;
use crate::wire::protobuf::{Fields, PbError, Value};

/// Go's zero `time.Time` in Unix seconds: such a Time is written as `null`
/// (or left out, under `omitzero`).
const ZERO_TIME: i64 = -62_135_596_800;

/// The `resourceVersion`, `continue` and `shardInfo.selector` of a LIST's
/// `ListMeta`. `shardInfo` is field 5, a `ShardInfo` whose `selector` is
/// field 1 (kubernetes/apimachinery `pkg/apis/meta/v1/generated.proto`,
/// commit 3f48e279c1cc5829a479abfdf7eb184a6229f1ed, `ShardedListAndWatch`).
pub(crate) fn list_meta(raw: &[u8]) -> Result<ListMeta, PbError> {
    let (mut rv, mut cont, mut shard_selector) = (String::new(), None, None);
    let mut f = Fields::new(raw);
    while let Some((n, v)) = f.next_field()? {
        match n {
            2 => rv = utf8(v.bytes("resourceVersion")?, "resourceVersion")?,
            3 => {
                let c = utf8(v.bytes("continue")?, "continue")?;
                cont = (!c.is_empty()).then_some(c);
            }
            5 => {
                let mut info = Fields::new(v.bytes("shardInfo")?);
                // Present, even empty: the server says it sharded by this.
                let mut selector = String::new();
                while let Some((n, v)) = info.next_field()? {
                    if n == 1 {
                        selector = utf8(v.bytes("shardInfo.selector")?, "shardInfo.selector")?;
                    }
                }
                shard_selector = Some(selector);
            }
            _ => {}
        }
    }
    Ok(ListMeta {
        resource_version: Rv::new(&rv),
        continue_token: cont,
        shard_selector,
    })
}

fn utf8(b: &[u8], what: &str) -> Result<String, PbError> {
    String::from_utf8(b.to_vec()).map_err(|_| PbError::new(format!("{what} is not UTF-8")))
}

#[derive(Default)]
struct Meta<'a> {
    name: &'a [u8],
    generate_name: &'a [u8],
    namespace: &'a [u8],
    self_link: &'a [u8],
    uid: &'a [u8],
    resource_version: &'a [u8],
    generation: i64,
    creation: Option<&'a [u8]>,
    deletion: Option<&'a [u8]>,
    grace: Option<i64>,
}

/// An `ObjectMeta`'s repeated fields (labels, annotations, owner
/// references, finalizers, managed fields) as offsets into its bytes, kept
/// from object to object so that writing one allocates nothing once warm.
#[derive(Debug, Default)]
pub(crate) struct Lists {
    /// (field number, key, value) in the order received; the key only for
    /// map entries.
    items: Vec<(u8, Span, Span)>,
    /// One map's items, in the order they are written.
    order: Vec<usize>,
}

/// `raw[at..at + len]`.
type Span = (usize, usize);

/// Where `b`, read from `raw` (or empty), is in it.
fn span(raw: &[u8], b: &[u8]) -> Span {
    if b.is_empty() {
        return (0, 0);
    }
    (
        (b.as_ptr() as usize).wrapping_sub(raw.as_ptr() as usize),
        b.len(),
    )
}

fn at(raw: &[u8], (at, len): Span) -> &[u8] {
    raw.get(at..at.saturating_add(len)).unwrap_or_default()
}

const LABELS: u8 = 11;
const ANNOTATIONS: u8 = 12;
const OWNERS: u8 = 13;
const FINALIZERS: u8 = 14;
const MANAGED: u8 = 17;

/// An `ObjectMeta` message as JSON, a value in state `st` of `pass`'s one
/// pass (`proto_json`): its redactions made, its strings noted, and
/// `managedFields`, when they go, passed over unread.
pub(crate) fn object_meta_in(
    out: &mut Vec<u8>,
    raw: &[u8],
    pass: &mut Pass,
    st: State,
) -> Result<(), PbError> {
    // Taken for the object (an object inside this one would take its own).
    let mut lists = pass.take_lists();
    let written = write_object_meta(out, raw, pass, st, &mut lists);
    pass.give_lists(lists);
    written
}

fn write_object_meta(
    out: &mut Vec<u8>,
    raw: &[u8],
    pass: &mut Pass,
    st: State,
    lists: &mut Lists,
) -> Result<(), PbError> {
    let start = out.len();
    let managed_go = pass.member(st, b"managedFields") == State::Managed;
    let mut m = Meta::default();
    let items = &mut lists.items;
    items.clear();
    let mut f = Fields::new(raw);
    while let Some((n, v)) = f.next_field()? {
        match n {
            1 => m.name = v.bytes("name")?,
            2 => m.generate_name = v.bytes("generateName")?,
            3 => m.namespace = v.bytes("namespace")?,
            4 => m.self_link = v.bytes("selfLink")?,
            5 => m.uid = v.bytes("uid")?,
            6 => m.resource_version = v.bytes("resourceVersion")?,
            7 => m.generation = v.varint("generation")? as i64,
            8 => m.creation = Some(v.bytes("creationTimestamp")?),
            9 => m.deletion = Some(v.bytes("deletionTimestamp")?),
            10 => m.grace = Some(v.varint("deletionGracePeriodSeconds")? as i64),
            11 => {
                let (k, v) = map_entry(v, "labels")?;
                items.push((LABELS, span(raw, k), span(raw, v)));
            }
            12 => {
                let (k, v) = map_entry(v, "annotations")?;
                items.push((ANNOTATIONS, span(raw, k), span(raw, v)));
            }
            13 => items.push((OWNERS, (0, 0), span(raw, v.bytes("ownerReferences")?))),
            14 => items.push((FINALIZERS, (0, 0), span(raw, v.bytes("finalizers")?))),
            // Skipped as bytes when they go: not read, not checked.
            17 if managed_go => {}
            17 => items.push((MANAGED, (0, 0), span(raw, v.bytes("managedFields")?))),
            _ => {}
        }
    }
    let mut o = Obj::new(out);
    for (key, v) in [
        ("name", m.name),
        ("generateName", m.generate_name),
        ("namespace", m.namespace),
        ("selfLink", m.self_link),
        ("uid", m.uid),
        ("resourceVersion", m.resource_version),
    ] {
        str_omitempty(&mut o, pass, st, key, v);
    }
    if m.generation != 0 {
        o.key("generation");
        let at = o.out.len();
        int(o.out, m.generation);
        pass.end_value(o.out, at, pass.member(st, b"generation"));
    }
    if let Some(t) = m.creation.map(seconds).transpose()?.flatten() {
        // omitzero: a zero time is left out.
        o.key("creationTimestamp");
        let at = o.out.len();
        time(o.out, Some(t))?;
        pass.end_value(o.out, at, pass.member(st, b"creationTimestamp"));
    }
    if let Some(t) = m.deletion {
        o.key("deletionTimestamp");
        let at = o.out.len();
        time(o.out, seconds(t)?)?;
        pass.end_value(o.out, at, pass.member(st, b"deletionTimestamp"));
    }
    if let Some(g) = m.grace {
        o.key("deletionGracePeriodSeconds");
        let at = o.out.len();
        int(o.out, g);
        pass.end_value(o.out, at, pass.member(st, b"deletionGracePeriodSeconds"));
    }
    for (key, field) in [("labels", LABELS), ("annotations", ANNOTATIONS)] {
        // Keys sorted bytewise, a later duplicate winning, as Go's map.
        let order = &mut lists.order;
        order.clear();
        order.extend((0..lists.items.len()).filter(|&i| lists.items[i].0 == field));
        if order.is_empty() {
            continue;
        }
        let items = &lists.items;
        let key_of = |i: usize| at(raw, items[i].1);
        order.sort_unstable_by(|&a, &b| key_of(a).cmp(key_of(b)).then(a.cmp(&b)));
        o.key(key);
        let mst = pass.member(st, key.as_bytes());
        let at_map = o.out.len();
        let mut inner = Obj::new(o.out);
        for (j, &i) in order.iter().enumerate() {
            if order
                .get(j + 1)
                .is_some_and(|&next| key_of(next) == key_of(i))
            {
                continue;
            }
            let k = key_of(i);
            inner.key_bytes(k);
            let vst = pass.member(mst, k);
            pass.string(inner.out, at(raw, items[i].2), vst);
        }
        inner.end();
        pass.end_value(o.out, at_map, mst);
    }
    let items = &lists.items;
    let list = |field: u8| {
        items
            .iter()
            .filter(move |i| i.0 == field)
            .map(|i| at(raw, i.2))
    };
    if list(OWNERS).next().is_some() {
        o.key("ownerReferences");
        let lst = pass.member(st, b"ownerReferences");
        let ist = pass.item(lst);
        let at = o.out.len();
        o.out.push(b'[');
        for (i, r) in list(OWNERS).enumerate() {
            if i > 0 {
                o.out.push(b',');
            }
            owner_reference(o.out, r, pass, ist)?;
        }
        o.out.push(b']');
        pass.end_value(o.out, at, lst);
    }
    if list(FINALIZERS).next().is_some() {
        o.key("finalizers");
        let lst = pass.member(st, b"finalizers");
        let ist = pass.item(lst);
        let at = o.out.len();
        o.out.push(b'[');
        for (i, s) in list(FINALIZERS).enumerate() {
            if i > 0 {
                o.out.push(b',');
            }
            pass.string(o.out, s, ist);
        }
        o.out.push(b']');
        pass.end_value(o.out, at, lst);
    }
    if list(MANAGED).next().is_some() {
        o.key("managedFields");
        let lst = pass.member(st, b"managedFields");
        let ist = pass.item(lst);
        let at = o.out.len();
        o.out.push(b'[');
        for (i, e) in list(MANAGED).enumerate() {
            if i > 0 {
                o.out.push(b',');
            }
            managed_fields_entry(o.out, e, pass, ist)?;
        }
        o.out.push(b']');
        pass.end_value(o.out, at, lst);
    }
    o.end();
    pass.end_value(out, start, st);
    Ok(())
}

/// A string member of an object in state `st`, left out when empty.
fn str_omitempty(o: &mut Obj<'_>, pass: &mut Pass, st: State, k: &str, v: &[u8]) {
    if !v.is_empty() {
        o.key(k);
        let kst = pass.member(st, k.as_bytes());
        pass.string(o.out, v, kst);
    }
}

/// One map entry (key 1, value 2).
fn map_entry<'a>(v: Value<'a>, what: &str) -> Result<(&'a [u8], &'a [u8]), PbError> {
    let (mut key, mut value): (&[u8], &[u8]) = (b"", b"");
    let mut f = Fields::new(v.bytes(what)?);
    while let Some((n, v)) = f.next_field()? {
        match n {
            1 => key = v.bytes(what)?,
            2 => value = v.bytes(what)?,
            _ => {}
        }
    }
    Ok((key, value))
}

fn owner_reference(
    out: &mut Vec<u8>,
    raw: &[u8],
    pass: &mut Pass,
    st: State,
) -> Result<(), PbError> {
    let (mut api_version, mut kind, mut name, mut uid): (&[u8], &[u8], &[u8], &[u8]) =
        (b"", b"", b"", b"");
    let (mut controller, mut block) = (None, None);
    let mut f = Fields::new(raw);
    while let Some((n, v)) = f.next_field()? {
        match n {
            1 => kind = v.bytes("ownerReferences.kind")?,
            3 => name = v.bytes("ownerReferences.name")?,
            4 => uid = v.bytes("ownerReferences.uid")?,
            5 => api_version = v.bytes("ownerReferences.apiVersion")?,
            6 => controller = Some(v.varint("ownerReferences.controller")? != 0),
            7 => block = Some(v.varint("ownerReferences.blockOwnerDeletion")? != 0),
            _ => {}
        }
    }
    let start = out.len();
    let mut o = Obj::new(out);
    for (k, v) in [
        ("apiVersion", api_version),
        ("kind", kind),
        ("name", name),
        ("uid", uid),
    ] {
        o.key(k);
        let kst = pass.member(st, k.as_bytes());
        pass.string(o.out, v, kst);
    }
    for (k, v) in [("controller", controller), ("blockOwnerDeletion", block)] {
        if let Some(b) = v {
            o.key(k);
            let at = o.out.len();
            o.out
                .extend_from_slice(if b { "true" } else { "false" }.as_bytes());
            pass.end_value(o.out, at, pass.member(st, k.as_bytes()));
        }
    }
    o.end();
    pass.end_value(out, start, st);
    Ok(())
}

fn managed_fields_entry(
    out: &mut Vec<u8>,
    raw: &[u8],
    pass: &mut Pass,
    st: State,
) -> Result<(), PbError> {
    let empty: &[u8] = b"";
    let (mut manager, mut operation, mut api_version) = (empty, empty, empty);
    let (mut fields_type, mut subresource) = (empty, empty);
    let (mut time_raw, mut fields_v1) = (None, None);
    let mut f = Fields::new(raw);
    while let Some((n, v)) = f.next_field()? {
        match n {
            1 => manager = v.bytes("managedFields.manager")?,
            2 => operation = v.bytes("managedFields.operation")?,
            3 => api_version = v.bytes("managedFields.apiVersion")?,
            4 => time_raw = Some(v.bytes("managedFields.time")?),
            6 => fields_type = v.bytes("managedFields.fieldsType")?,
            7 => {
                let mut raw: &[u8] = b"";
                let mut g = Fields::new(v.bytes("managedFields.fieldsV1")?);
                while let Some((n, v)) = g.next_field()? {
                    if n == 1 {
                        raw = v.bytes("managedFields.fieldsV1.raw")?;
                    }
                }
                fields_v1 = Some(raw);
            }
            8 => subresource = v.bytes("managedFields.subresource")?,
            _ => {}
        }
    }
    let start = out.len();
    let mut o = Obj::new(out);
    str_omitempty(&mut o, pass, st, "manager", manager);
    str_omitempty(&mut o, pass, st, "operation", operation);
    str_omitempty(&mut o, pass, st, "apiVersion", api_version);
    if let Some(t) = time_raw {
        o.key("time");
        let at = o.out.len();
        time(o.out, seconds(t)?)?;
        pass.end_value(o.out, at, pass.member(st, b"time"));
    }
    str_omitempty(&mut o, pass, st, "fieldsType", fields_type);
    if let Some(raw) = fields_v1 {
        o.key("fieldsV1");
        let at = o.out.len();
        let fst = pass.member(st, b"fieldsV1");
        pass.raw_json(o.out, raw, fst)?;
        pass.end_value(o.out, at, fst);
    }
    str_omitempty(&mut o, pass, st, "subresource", subresource);
    o.end();
    pass.end_value(out, start, st);
    Ok(())
}

/// A `metav1.Status` message as JSON (`metadata` is always there, as Go
/// writes a struct).
pub(crate) fn status(
    out: &mut Vec<u8>,
    kind: &[u8],
    api_version: &[u8],
    raw: &[u8],
) -> Result<(), PbError> {
    let (mut meta, mut status, mut message, mut reason): (&[u8], &[u8], &[u8], &[u8]) =
        (b"", b"", b"", b"");
    let (mut details, mut code) = (None, 0i32);
    let mut f = Fields::new(raw);
    while let Some((n, v)) = f.next_field()? {
        match n {
            1 => meta = v.bytes("Status.metadata")?,
            2 => status = v.bytes("Status.status")?,
            3 => message = v.bytes("Status.message")?,
            4 => reason = v.bytes("Status.reason")?,
            5 => details = Some(v.bytes("Status.details")?),
            6 => code = v.varint("Status.code")? as i32,
            _ => {}
        }
    }
    let mut o = Obj::new(out);
    o.str_omitempty("kind", kind);
    o.str_omitempty("apiVersion", api_version);
    o.key("metadata");
    list_meta_json(o.out, meta)?;
    o.str_omitempty("status", status);
    o.str_omitempty("message", message);
    o.str_omitempty("reason", reason);
    if let Some(d) = details {
        o.key("details");
        status_details(o.out, d)?;
    }
    if code != 0 {
        o.key("code");
        int(o.out, i64::from(code));
    }
    o.end();
    Ok(())
}

fn list_meta_json(out: &mut Vec<u8>, raw: &[u8]) -> Result<(), PbError> {
    let (mut self_link, mut rv, mut cont): (&[u8], &[u8], &[u8]) = (b"", b"", b"");
    let mut remaining = None;
    let mut f = Fields::new(raw);
    while let Some((n, v)) = f.next_field()? {
        match n {
            1 => self_link = v.bytes("ListMeta.selfLink")?,
            2 => rv = v.bytes("ListMeta.resourceVersion")?,
            3 => cont = v.bytes("ListMeta.continue")?,
            4 => remaining = Some(v.varint("ListMeta.remainingItemCount")? as i64),
            _ => {}
        }
    }
    let mut o = Obj::new(out);
    o.str_omitempty("selfLink", self_link);
    o.str_omitempty("resourceVersion", rv);
    o.str_omitempty("continue", cont);
    if let Some(r) = remaining {
        o.key("remainingItemCount");
        int(o.out, r);
    }
    o.end();
    Ok(())
}

fn status_details(out: &mut Vec<u8>, raw: &[u8]) -> Result<(), PbError> {
    let (mut name, mut group, mut kind, mut uid): (&[u8], &[u8], &[u8], &[u8]) =
        (b"", b"", b"", b"");
    let (mut causes, mut retry) = (Vec::new(), 0i32);
    let mut f = Fields::new(raw);
    while let Some((n, v)) = f.next_field()? {
        match n {
            1 => name = v.bytes("details.name")?,
            2 => group = v.bytes("details.group")?,
            3 => kind = v.bytes("details.kind")?,
            4 => causes.push(v.bytes("details.causes")?),
            5 => retry = v.varint("details.retryAfterSeconds")? as i32,
            6 => uid = v.bytes("details.uid")?,
            _ => {}
        }
    }
    let mut o = Obj::new(out);
    o.str_omitempty("name", name);
    o.str_omitempty("group", group);
    o.str_omitempty("kind", kind);
    o.str_omitempty("uid", uid);
    if !causes.is_empty() {
        o.key("causes");
        o.out.push(b'[');
        for (i, c) in causes.iter().enumerate() {
            if i > 0 {
                o.out.push(b',');
            }
            let (mut reason, mut message, mut field): (&[u8], &[u8], &[u8]) = (b"", b"", b"");
            let mut g = Fields::new(c);
            while let Some((n, v)) = g.next_field()? {
                match n {
                    1 => reason = v.bytes("cause.reason")?,
                    2 => message = v.bytes("cause.message")?,
                    3 => field = v.bytes("cause.field")?,
                    _ => {}
                }
            }
            let mut c = Obj::new(o.out);
            c.str_omitempty("reason", reason);
            c.str_omitempty("message", message);
            c.str_omitempty("field", field);
            c.end();
        }
        o.out.push(b']');
    }
    if retry != 0 {
        o.key("retryAfterSeconds");
        int(o.out, i64::from(retry));
    }
    o.end();
    Ok(())
}

/// A `metav1.Time` message's seconds; `None` for Go's zero time (no bytes,
/// or the zero instant).
pub(crate) fn seconds(raw: &[u8]) -> Result<Option<i64>, PbError> {
    let mut secs = 0i64;
    let mut f = Fields::new(raw);
    while let Some((n, v)) = f.next_field()? {
        if n == 1 {
            secs = v.varint("Time.seconds")? as i64;
        }
    }
    Ok((!raw.is_empty() && secs != ZERO_TIME).then_some(secs))
}

/// A time as `metav1.Time` writes it: `null` when zero, else
/// `"2006-01-02T15:04:05Z"`.
pub(crate) fn time(out: &mut Vec<u8>, secs: Option<i64>) -> Result<(), PbError> {
    let Some(secs) = secs else {
        out.extend_from_slice(b"null");
        return Ok(());
    };
    // Go writes any year; tattler only the ones a cluster has.
    let days = secs.div_euclid(86_400);
    let tod = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    if !(0..=9999).contains(&y) {
        return Err(PbError::new(format!("a time in the year {y}")));
    }
    let two = |out: &mut Vec<u8>, v: i64| {
        out.push(b'0' + (v / 10 % 10) as u8);
        out.push(b'0' + (v % 10) as u8);
    };
    out.push(b'"');
    two(out, y / 100);
    two(out, y % 100);
    out.push(b'-');
    two(out, i64::from(m));
    out.push(b'-');
    two(out, i64::from(d));
    out.push(b'T');
    two(out, tod / 3600);
    out.push(b':');
    two(out, tod / 60 % 60);
    out.push(b':');
    two(out, tod % 60);
    out.extend_from_slice(b"Z\"");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A length-delimited protobuf field (numbers and lengths under 128).
    fn field(number: u8, bytes: &[u8]) -> Vec<u8> {
        let mut out = vec![number << 3 | 2, bytes.len() as u8];
        out.extend_from_slice(bytes);
        out
    }

    #[test]
    fn a_list_meta_says_which_shard_the_server_sent() {
        let selector =
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')";
        let mut raw = field(2, b"204");
        raw.extend(field(3, b"c1"));
        raw.extend(field(5, &field(1, selector.as_bytes())));
        let meta = list_meta(&raw).unwrap();
        assert_eq!(meta.resource_version, Rv::new("204"));
        assert_eq!(meta.continue_token.as_deref(), Some("c1"));
        assert_eq!(meta.shard_selector.as_deref(), Some(selector));
        // Without field 5: no shard said; an empty ShardInfo: present, empty.
        assert_eq!(list_meta(&field(2, b"204")).unwrap().shard_selector, None);
        let mut raw = field(2, b"204");
        raw.extend(field(5, b""));
        assert_eq!(list_meta(&raw).unwrap().shard_selector.as_deref(), Some(""));
        // A selector that is not UTF-8 is an error, not a guess.
        let mut raw = field(2, b"204");
        raw.extend(field(5, &field(1, b"\xff")));
        assert!(list_meta(&raw).is_err());
    }

    #[test]
    fn times() {
        let cases: &[(Option<i64>, &str)] = &[
            (None, "null"),
            (Some(0), r#""1970-01-01T00:00:00Z""#),
            (Some(1_796_168_679), r#""2026-12-01T23:44:39Z""#),
            (Some(-1), r#""1969-12-31T23:59:59Z""#),
            (Some(951_782_400), r#""2000-02-29T00:00:00Z""#),
        ];
        for (secs, want) in cases {
            let mut out = Vec::new();
            time(&mut out, *secs).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), *want, "{secs:?}");
        }
        assert!(time(&mut Vec::new(), Some(i64::MAX / 2)).is_err());
        assert_eq!(seconds(b"").unwrap(), None);
        // seconds = Go's zero instant
        let mut zero = vec![0x08];
        let mut v = ZERO_TIME as u64;
        while v >= 0x80 {
            zero.push((v as u8) | 0x80);
            v >>= 7;
        }
        zero.push(v as u8);
        assert_eq!(seconds(&zero).unwrap(), None);
        assert_eq!(seconds(&[0x08, 0x01, 0x10, 0x05]).unwrap(), Some(1));
    }
}
