//! The one pass over an object: its JSON checked, the metadata tattler needs
//! located, and the edits made — secrets redacted, managedFields removed — by
//! copying spans of the object as received, with no `serde_json::Value`.
//!
//! This is tattler's only scrubber: every path (watch, LIST, relist, re-sync,
//! a transform, metadata-only objects) goes through it. It is iterative:
//! nesting costs a little heap, bounded by [`MAX_DEPTH`], never stack, so no
//! object can overflow a thread's stack however deep it is.
//!
//! What is redacted (each value, whatever its JSON type, becomes `"REDACTED"`;
//! `null` stays):
//! - `value` of every item of an `env` list of every item of a `containers`,
//!   `initContainers` or `ephemeralContainers` list, at any depth: pods, pod
//!   templates of workloads, PodTemplates, ControllerRevisions, custom
//!   resources embedding pod specs;
//! - for Secrets, every value of top-level `data` and `stringData` (keys stay);
//! - the same inside the `kubectl.kubernetes.io/last-applied-configuration`
//!   annotation, which holds the object as last applied; an annotation that
//!   cannot be read as JSON (or is too deep) is redacted whole.
//!
//! Keys are compared after unescaping (`"\u0065nv"` is `env`).

use std::borrow::Cow;

/// The deepest nesting accepted, objects and arrays counted alike. The
/// apiserver stores objects up to 10,000 levels deep; an object nested deeper
/// is not JSON tattler hands out.
pub(crate) const MAX_DEPTH: usize = 10_000;

/// What replaces a redacted value, as JSON.
const REDACTED_JSON: &[u8] = b"\"REDACTED\"";

const LAST_APPLIED: &[u8] = b"kubectl.kubernetes.io/last-applied-configuration";

/// What to change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Edits {
    /// Redact container env values.
    pub scrub: bool,
    /// Redact a Secret's `data` and `stringData` values.
    pub secret_data: bool,
    pub drop_managed_fields: bool,
}

impl Edits {
    pub(crate) const NONE: Edits = Edits {
        scrub: false,
        secret_data: false,
        drop_managed_fields: false,
    };

    fn any_redaction(self) -> bool {
        self.scrub || self.secret_data
    }
}

/// Why a walk failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Bad {
    /// Not one JSON object (or not valid JSON).
    NotJson,
    /// Nested deeper than [`MAX_DEPTH`].
    TooDeep,
}

/// Where the strings tattler needs are in the object (quotes included).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Found {
    pub kind: Option<(usize, usize)>,
    pub name: Option<(usize, usize)>,
    pub namespace: Option<(usize, usize)>,
    pub uid: Option<(usize, usize)>,
    pub resource_version: Option<(usize, usize)>,
}

/// The edited object, or `None` when nothing changed.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn edit(obj: &[u8], edits: Edits) -> Result<Option<Vec<u8>>, Bad> {
    walk(obj, edits).0
}

/// One pass over an object: its structure checked, the edits made, and the
/// metadata strings located (those before a failure too, to name the object
/// in an error). UTF-8 is the caller's check.
pub(crate) fn walk(obj: &[u8], edits: Edits) -> (Result<Option<Vec<u8>>, Bad>, Found) {
    let mut w = Walker::new(obj, edits, State::Root);
    let result = w.run();
    let found = w.found;
    (result.map(|()| w.finish()), found)
}

/// A byte range, `start..end`.
pub(crate) type Span = (usize, usize);

/// The spans of `type` (a string, quotes included) and `object` (an object)
/// of a watch event in any member order and spacing, its structure checked.
pub(crate) fn envelope(frame: &[u8]) -> Result<(Option<Span>, Option<Span>), Bad> {
    let mut w = Walker::new(frame, Edits::NONE, State::Envelope);
    w.run()?;
    Ok((w.envelope_type, w.envelope_object))
}

/// Where a value sits, which decides what is done with it. Computed for a
/// member from its object's state and key ([`member`]), for an array item
/// from the array's ([`item`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Nothing to do here or below, except find container lists.
    Plain,
    /// Inside a value being redacted or removed: nothing at all to do.
    Skip,
    /// The object itself.
    Root,
    Metadata,
    Annotations,
    /// A `containers`-like list, and each container in it.
    Containers,
    /// A container's `env` list, and each variable in it.
    Env,
    /// A Secret's `data` or `stringData`.
    SecretData,
    Kind,
    Name,
    Namespace,
    Uid,
    ResourceVersion,
    LastApplied,
    /// Replaced by `"REDACTED"` (unless null).
    Redact,
    /// `metadata.managedFields`: the member is removed.
    Managed,
    /// A watch event; its `type` and `object`.
    Envelope,
    EventType,
    EventObject,
}

fn is_container_list(key: &[u8]) -> bool {
    matches!(
        key,
        b"containers" | b"initContainers" | b"ephemeralContainers"
    )
}

/// The state of the member `key` of an object in state `parent`.
fn member(parent: State, key: &[u8], e: Edits, inner: bool) -> State {
    use State::*;
    match parent {
        Skip | Redact | Managed | EventObject => return Skip,
        Envelope => {
            return match key {
                b"type" => EventType,
                b"object" => EventObject,
                _ => Skip,
            }
        }
        _ => {}
    }
    match (parent, key) {
        (Env, b"value") | (SecretData, _) => return Redact,
        _ if e.scrub && is_container_list(key) => return Containers,
        _ => {}
    }
    match (parent, key) {
        (Root, b"metadata") => Metadata,
        (Root, b"kind") => Kind,
        (Root, b"data" | b"stringData") if e.secret_data => SecretData,
        (Metadata, b"name") => Name,
        (Metadata, b"namespace") => Namespace,
        (Metadata, b"uid") => Uid,
        (Metadata, b"resourceVersion") => ResourceVersion,
        (Metadata, b"managedFields") if e.drop_managed_fields => Managed,
        (Metadata, b"annotations") => Annotations,
        (Annotations, LAST_APPLIED) if !inner && e.any_redaction() => LastApplied,
        (Containers, b"env") => Env,
        _ => Plain,
    }
}

/// The state of an array's items.
fn item(array: State) -> State {
    match array {
        State::Containers | State::Env => array,
        State::Skip | State::Redact | State::Managed | State::EventObject => State::Skip,
        _ => State::Plain,
    }
}

/// An open object or array.
struct Frame {
    object: bool,
    state: State,
    /// Where the container starts (its bracket).
    start: usize,
    /// Objects: the current member's state and where its key starts; where
    /// the member before it ended (`NONE`); where a removed first member's cut
    /// starts, until the comma after it (`NONE`).
    member: State,
    key_start: usize,
    prev_end: usize,
    cut_first: usize,
}

const NONE: usize = usize::MAX;

struct Walker<'a> {
    src: &'a [u8],
    pos: usize,
    out: Vec<u8>,
    /// `src[..copied]` is already in `out` (edited).
    copied: usize,
    changed: bool,
    edits: Edits,
    /// Walking the inside of a last-applied annotation.
    inner: bool,
    root: State,
    stack: Vec<Frame>,
    found: Found,
    envelope_type: Option<(usize, usize)>,
    envelope_object: Option<(usize, usize)>,
}

impl<'a> Walker<'a> {
    fn new(src: &'a [u8], edits: Edits, root: State) -> Walker<'a> {
        Walker {
            src,
            pos: 0,
            out: Vec::new(),
            copied: 0,
            changed: false,
            edits,
            inner: false,
            root,
            stack: Vec::with_capacity(16),
            found: Found::default(),
            envelope_type: None,
            envelope_object: None,
        }
    }

    fn finish(mut self) -> Option<Vec<u8>> {
        if !self.changed {
            return None;
        }
        self.out.extend_from_slice(&self.src[self.copied..]);
        Some(self.out)
    }

    /// Replaces `src[from..to]` with `with`. Edits come in source order.
    fn replace(&mut self, from: usize, to: usize, with: &[u8]) {
        debug_assert!(from >= self.copied && to >= from);
        let from = from.max(self.copied);
        let to = to.max(from);
        if self.out.capacity() == 0 {
            self.out.reserve(self.src.len());
        }
        self.out.extend_from_slice(&self.src[self.copied..from]);
        self.out.extend_from_slice(with);
        self.copied = to;
        self.changed = true;
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.src.get(self.pos) {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Result<u8, Bad> {
        self.src.get(self.pos).copied().ok_or(Bad::NotJson)
    }

    fn run(&mut self) -> Result<(), Bad> {
        self.ws();
        if self.peek()? != b'{' {
            return Err(Bad::NotJson);
        }
        let mut state = self.root;
        'value: loop {
            // A value in `state` starts here.
            self.ws();
            let start = self.pos;
            match self.peek()? {
                b'{' => {
                    self.open(true, state, start)?;
                    self.ws();
                    if self.peek()? == b'}' {
                        self.pos += 1;
                        self.close();
                    } else {
                        state = self.key()?;
                        continue 'value;
                    }
                }
                b'[' => {
                    self.open(false, state, start)?;
                    self.ws();
                    if self.peek()? == b']' {
                        self.pos += 1;
                        self.close();
                    } else {
                        state = item(state);
                        continue 'value;
                    }
                }
                b'"' => {
                    self.string()?;
                    self.on_string(state, start);
                }
                b't' => self.scalar(b"true", state, start)?,
                b'f' => self.scalar(b"false", state, start)?,
                b'n' => self.literal(b"null")?,
                _ => {
                    self.number()?;
                    self.on_scalar(state, start);
                }
            }
            // A value ended: close what it ends, up to the next value.
            loop {
                let Some(top) = self.stack.last() else {
                    self.ws();
                    return if self.pos == self.src.len() {
                        Ok(())
                    } else {
                        Err(Bad::NotJson)
                    };
                };
                let object = top.object;
                let value_end = self.pos;
                if object {
                    self.member_end(value_end);
                }
                self.ws();
                match (self.peek()?, object) {
                    (b',', true) => {
                        self.pos += 1;
                        self.after_comma(value_end);
                        state = self.key()?;
                        continue 'value;
                    }
                    (b',', false) => {
                        self.pos += 1;
                        state = item(self.stack.last().map_or(State::Plain, |f| f.state));
                        continue 'value;
                    }
                    (b'}', true) => {
                        let top = self.stack.last_mut().expect("an open object");
                        let cut = std::mem::replace(&mut top.cut_first, NONE);
                        if cut != NONE {
                            self.replace(cut, value_end, b"");
                        }
                        self.pos += 1;
                        self.close();
                    }
                    (b']', false) => {
                        self.pos += 1;
                        self.close();
                    }
                    _ => return Err(Bad::NotJson),
                }
            }
        }
    }

    fn open(&mut self, object: bool, state: State, start: usize) -> Result<(), Bad> {
        if self.stack.len() >= MAX_DEPTH {
            return Err(Bad::TooDeep);
        }
        self.stack.push(Frame {
            object,
            state,
            start,
            member: State::Plain,
            key_start: NONE,
            prev_end: NONE,
            cut_first: NONE,
        });
        self.pos += 1;
        Ok(())
    }

    /// The container on top of the stack ended at `self.pos`.
    fn close(&mut self) {
        let f = self.stack.pop().expect("an open container");
        match f.state {
            State::Redact => self.replace(f.start, self.pos, REDACTED_JSON),
            State::EventObject => self.envelope_object = Some((f.start, self.pos)),
            _ => {}
        }
    }

    /// Reads a member's key and colon; returns the member's state.
    fn key(&mut self) -> Result<State, Bad> {
        self.ws();
        let key_start = self.pos;
        if self.peek()? != b'"' {
            return Err(Bad::NotJson);
        }
        let escaped = self.string()?;
        let src = self.src;
        let raw = &src[key_start + 1..self.pos - 1];
        let key: Cow<[u8]> = if escaped {
            match serde_json::from_slice::<String>(&self.src[key_start..self.pos]) {
                Ok(k) => Cow::Owned(k.into_bytes()),
                Err(_) => return Err(Bad::NotJson),
            }
        } else {
            Cow::Borrowed(raw)
        };
        self.ws();
        if self.peek()? != b':' {
            return Err(Bad::NotJson);
        }
        self.pos += 1;
        let top = self.stack.last_mut().expect("an open object");
        let state = member(top.state, &key, self.edits, self.inner);
        top.member = state;
        top.key_start = key_start;
        Ok(state)
    }

    /// A member's value ended at `value_end`: a removed member goes.
    fn member_end(&mut self, value_end: usize) {
        let top = self.stack.last_mut().expect("an open object");
        if top.member != State::Managed {
            return;
        }
        top.member = State::Plain;
        match top.prev_end {
            // `,"managedFields":[…]` goes, from the comma before it.
            NONE => top.cut_first = top.key_start,
            p => self.replace(p, value_end, b""),
        }
    }

    /// After the comma that follows a member ending at `value_end`.
    fn after_comma(&mut self, value_end: usize) {
        let top = self.stack.last_mut().expect("an open object");
        let cut = std::mem::replace(&mut top.cut_first, NONE);
        if cut != NONE {
            // A removed first member goes with its comma; the next member is first now.
            top.prev_end = NONE;
            self.replace(cut, self.pos, b"");
        } else {
            top.prev_end = value_end;
        }
    }

    /// Skips a string, quotes included, checking its escapes and that it holds
    /// no raw control character. True when it holds an escape.
    fn string(&mut self) -> Result<bool, Bad> {
        self.pos += 1;
        let mut escaped = false;
        loop {
            let rest = self.src.get(self.pos..).ok_or(Bad::NotJson)?;
            self.pos += crate::util::find_string_special(rest).ok_or(Bad::NotJson)?;
            match self.src[self.pos] {
                b'"' => {
                    self.pos += 1;
                    return Ok(escaped);
                }
                b'\\' => {
                    escaped = true;
                    match self.src.get(self.pos + 1) {
                        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => {
                            self.pos += 2
                        }
                        Some(b'u') => {
                            let hex = self
                                .src
                                .get(self.pos + 2..self.pos + 6)
                                .ok_or(Bad::NotJson)?;
                            if !hex.iter().all(u8::is_ascii_hexdigit) {
                                return Err(Bad::NotJson);
                            }
                            self.pos += 6;
                        }
                        _ => return Err(Bad::NotJson),
                    }
                }
                _ => return Err(Bad::NotJson), // a raw control character
            }
        }
    }

    fn literal(&mut self, word: &[u8]) -> Result<(), Bad> {
        if !self.src[self.pos..].starts_with(word) {
            return Err(Bad::NotJson);
        }
        self.pos += word.len();
        Ok(())
    }

    fn scalar(&mut self, word: &[u8], state: State, start: usize) -> Result<(), Bad> {
        self.literal(word)?;
        self.on_scalar(state, start);
        Ok(())
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
    fn number(&mut self) -> Result<(), Bad> {
        let digits = |w: &mut Self| {
            let n = w.src[w.pos..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count();
            w.pos += n;
            n
        };
        if self.src.get(self.pos) == Some(&b'-') {
            self.pos += 1;
        }
        match self.src.get(self.pos) {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                digits(self);
            }
            _ => return Err(Bad::NotJson),
        }
        if self.src.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            if digits(self) == 0 {
                return Err(Bad::NotJson);
            }
        }
        if let Some(b'e' | b'E') = self.src.get(self.pos) {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.src.get(self.pos) {
                self.pos += 1;
            }
            if digits(self) == 0 {
                return Err(Bad::NotJson);
            }
        }
        Ok(())
    }

    /// A number, `true` or `false` ended at `self.pos`.
    fn on_scalar(&mut self, state: State, start: usize) {
        if state == State::Redact {
            self.replace(start, self.pos, REDACTED_JSON);
        }
    }

    fn on_string(&mut self, state: State, start: usize) {
        let span = Some((start, self.pos));
        match state {
            State::Kind => self.found.kind = span,
            State::Name => self.found.name = span,
            State::Namespace => self.found.namespace = span,
            State::Uid => self.found.uid = span,
            State::ResourceVersion => self.found.resource_version = span,
            State::EventType => self.envelope_type = span,
            State::Redact if &self.src[start..self.pos] != REDACTED_JSON => {
                self.replace(start, self.pos, REDACTED_JSON);
            }
            State::LastApplied => self.last_applied(start),
            _ => {}
        }
    }

    /// The last-applied annotation (the string at `start..pos`) holds the
    /// object as applied: it is scrubbed by the same rules, or withheld whole
    /// when it cannot be read.
    fn last_applied(&mut self, start: usize) {
        let raw = &self.src[start..self.pos];
        // Nothing to redact without an `env` or a Secret's `data` (as plain
        // text: an escape can spell anything, so it always takes a look).
        let find = |needle: &[u8]| memchr::memmem::find(raw, needle).is_some();
        let look = find(br"\u")
            || (self.edits.scrub && find(b"env"))
            || (self.edits.secret_data && find(b"ata"));
        if !look {
            return;
        }
        let scrubbed = serde_json::from_slice::<String>(raw).ok().and_then(|text| {
            let edits = Edits {
                drop_managed_fields: false,
                ..self.edits
            };
            let mut w = Walker::new(text.as_bytes(), edits, State::Root);
            w.inner = true;
            w.run().ok()?;
            Some(w.finish().map(|v| String::from_utf8(v).ok()))
        });
        match scrubbed {
            Some(None) => {}
            Some(Some(Some(text))) => {
                let quoted = serde_json::to_vec(&text).unwrap_or_else(|_| REDACTED_JSON.to_vec());
                self.replace(start, self.pos, &quoted);
            }
            // Not JSON, too deep, or (impossible) not UTF-8 after editing.
            _ => self.replace(start, self.pos, REDACTED_JSON),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    const SCRUB: Edits = Edits {
        scrub: true,
        secret_data: false,
        drop_managed_fields: false,
    };
    const SECRET: Edits = Edits {
        scrub: true,
        secret_data: true,
        drop_managed_fields: false,
    };

    fn edited(v: &Value, e: Edits) -> Option<Value> {
        edit(&serde_json::to_vec(v).unwrap(), e)
            .unwrap()
            .map(|b| serde_json::from_slice(&b).expect("valid JSON out"))
    }

    fn last_applied(v: &Value) -> Value {
        let text = v["metadata"]["annotations"][std::str::from_utf8(LAST_APPLIED).unwrap()]
            .as_str()
            .unwrap();
        serde_json::from_str(text).unwrap_or(Value::String(text.into()))
    }

    #[test]
    fn env_values_are_redacted_wherever_a_container_list_is() {
        let env = json!([{"name":"A","value":"s3cret \"quoted\" \\ \u{e9}"},{"name":"B","valueFrom":{"x":1}},
            {"value":"REDACTED","name":"C"},{"name":"N","value":42},{"name":"O","value":{"k":["s3cret"]}},{"name":"Z","value":null}]);
        let spec = json!({"containers":[{"env":env}],"initContainers":[{"env":env}],"ephemeralContainers":[{"env":env}],
            "volumes":[{"env":[{"value":"keep"}]}]});
        let applied = json!({"spec":spec}).to_string();
        let pod = json!({"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":applied}},"spec":spec});
        let out = edited(&pod, SCRUB).unwrap();
        let text = out.to_string();
        assert!(!text.contains("s3cret"), "{text}");
        assert!(text.contains("keep"), "only container env is scrubbed");
        let c = &out["spec"]["initContainers"][0]["env"];
        assert_eq!(c[0]["value"], "REDACTED");
        assert_eq!(c[3]["value"], "REDACTED", "a number is redacted too");
        assert_eq!(c[4]["value"], "REDACTED", "an object is redacted whole");
        assert_eq!(c[5]["value"], Value::Null, "null stays");
        assert_eq!(c[1]["valueFrom"]["x"], 1, "references stay");
        assert_eq!(
            last_applied(&out)["spec"]["ephemeralContainers"][0]["env"][0]["value"],
            "REDACTED"
        );
        // Pod templates wherever they are embedded.
        for (what, obj) in [
            ("workload", json!({"spec":{"template":{"spec":spec}}})),
            (
                "cronjob",
                json!({"spec":{"jobTemplate":{"spec":{"template":{"spec":spec}}}}}),
            ),
            (
                "PodTemplate",
                json!({"kind":"PodTemplate","template":{"spec":spec}}),
            ),
            (
                "ControllerRevision",
                json!({"kind":"ControllerRevision","data":{"spec":{"template":{"spec":spec}}}}),
            ),
            (
                "custom resource",
                json!({"spec":{"workers":[{"podSpec":spec}]}}),
            ),
        ] {
            let out = edited(&obj, SCRUB).unwrap().to_string();
            assert!(!out.contains("s3cret"), "{what}: {out}");
        }
        let off = Edits {
            scrub: false,
            ..SCRUB
        };
        assert_eq!(edited(&pod, off), None);
    }

    #[test]
    fn escaped_keys_are_read_as_their_text() {
        let obj =
            br#"{"spec":{"cont\u0061iners":[{"\u0065nv":[{"name":"A","v\u0061lue":"s3cret"}]}]}}"#;
        let out = String::from_utf8(edit(obj, SCRUB).unwrap().unwrap()).unwrap();
        assert!(!out.contains("s3cret") && out.contains("REDACTED"), "{out}");
        let meta = br#"{"metadata":{"n\u0061me":"a\"b","uid":"u","resourceVersion":"1"}}"#;
        let (edited, found) = walk(meta, Edits::NONE);
        assert_eq!(edited, Ok(None));
        let (s, e) = found.name.unwrap();
        assert_eq!(&meta[s..e], br#""a\"b""#);
    }

    #[test]
    fn last_applied_is_scrubbed_however_escaped_and_withheld_when_unreadable() {
        let inner = r#"{"spec":{"containers":[{"env":[{"name":"A","value":"s3cret"}]}]}}"#;
        let pod = |annotation: &str| {
            format!(
                r#"{{"metadata":{{"annotations":{{"kubectl.kubernetes.io/last-applied-configuration":"{annotation}"}}}}}}"#
            )
        };
        for escaped in [inner.replace('"', r#"\""#), inner.replace('"', r"\u0022")] {
            let out = edit(pod(&escaped).as_bytes(), SCRUB).unwrap().unwrap();
            let out = String::from_utf8(out).unwrap();
            assert!(
                !out.contains("s3cret") && out.contains("REDACTED"),
                "{escaped}"
            );
        }
        let no_env = r#"{\"spec\":{\"containers\":[{\"name\":\"x\"}]}}"#;
        assert_eq!(edit(pod(no_env).as_bytes(), SCRUB), Ok(None));
        // What cannot be read cannot be scrubbed: it is withheld whole.
        let deep = format!(r#"{{\"env\":{}"#, "[".repeat(20_000));
        let cut = r#"{\"spec\":{\"containers\":[{\"env\":[{\"value\":\"s3cret\""#.to_string();
        let too_deep = format!(
            r#"{{\"spec\":{{\"containers\":[{{\"env\":[{{\"value\":{}1{}}}]}}]}}}}"#,
            "[".repeat(MAX_DEPTH),
            "]".repeat(MAX_DEPTH)
        );
        for bad in [deep, cut, too_deep] {
            let out = edit(pod(&bad).as_bytes(), SCRUB).unwrap().unwrap();
            let v: Value = serde_json::from_slice(&out).unwrap();
            assert_eq!(last_applied(&v), "REDACTED");
        }
    }

    #[test]
    fn secret_data_is_redacted_and_its_keys_stay() {
        let secret = json!({"kind":"Secret","apiVersion":"v1","metadata":{"name":"s","annotations":{
            "kubectl.kubernetes.io/last-applied-configuration":
                json!({"kind":"Secret","data":{"pw":"czNjcmV0"},"stringData":{"token":"s3cret"}}).to_string()}},
            "data":{"pw":"czNjcmV0","tls.crt":"czNjcmV0"},"stringData":{"token":"s3cret"},"type":"Opaque"});
        let out = edited(&secret, SECRET).unwrap();
        let text = out.to_string();
        assert!(
            !text.contains("czNjcmV0") && !text.contains("s3cret"),
            "{text}"
        );
        assert_eq!(out["data"], json!({"pw":"REDACTED","tls.crt":"REDACTED"}));
        assert_eq!(out["stringData"], json!({"token":"REDACTED"}));
        assert_eq!(out["type"], "Opaque");
        assert_eq!(last_applied(&out)["data"], json!({"pw":"REDACTED"}));
        // Only for Secrets, and only their top-level maps.
        assert_eq!(edited(&secret, SCRUB), None);
        let cm = json!({"kind":"ConfigMap","spec":{"data":{"x":"y"}}});
        assert_eq!(edited(&cm, SECRET), None);
    }

    #[test]
    fn invalid_json_is_refused() {
        assert_eq!(edit(b"not json", SCRUB), Err(Bad::NotJson));
        for bad in [
            &br#"{"a":tru}"#[..],
            br#"{"a":}"#,
            br#"{"a":[1,]}"#,
            br#"{"a":1,}"#,
            br#"{"a":1 "b":2}"#,
            br#"{"a":01}"#,
            br#"{"a":1.}"#,
            br#"{"a":-}"#,
            br#"{"a":1e}"#,
            b"{\"a\":\"x\x01y\"}",
            br#"{"a":"\q"}"#,
            br#"{"a":"\u12g4"}"#,
            br#"{"a":bare}"#,
            br#"{"a":[}"#,
            br#"{"a":{]}"#,
            br#"[1]"#,
            br#"{"a":1} trailing"#,
            br#"{"a":"unterminated"#,
            br#"{"a":{"b":1}"#,
            br#"{1:2}"#,
        ] {
            assert_eq!(
                edit(bad, SCRUB),
                Err(Bad::NotJson),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        for good in [
            &br#"{"a":[true,false,null,-0.5e+3,10,"\u00e9\n\"\\"],"b":{}}"#[..],
            br#" { "a" : [ ] , "b" : [ [ ] , { } ] } "#,
        ] {
            assert_eq!(
                edit(good, SCRUB),
                Ok(None),
                "{}",
                String::from_utf8_lossy(good)
            );
        }
    }

    #[test]
    fn nesting_is_bounded_and_costs_no_stack() {
        let nest = |depth: usize| {
            let mut v = b"{\"a\":".to_vec();
            v.extend(std::iter::repeat_n(b'[', depth - 1));
            v.push(b'1');
            v.extend(std::iter::repeat_n(b']', depth - 1));
            v.push(b'}');
            v
        };
        let (ok, over) = (nest(MAX_DEPTH), nest(MAX_DEPTH + 1));
        // A thread with a small stack: the walk must not recurse.
        let t = std::thread::Builder::new()
            .stack_size(64 << 10)
            .spawn(move || (edit(&ok, SCRUB), edit(&over, SCRUB), envelope(&over)))
            .unwrap();
        let (ok, over, env) = t.join().unwrap();
        assert_eq!(ok, Ok(None));
        assert_eq!(over, Err(Bad::TooDeep));
        assert_eq!(env, Err(Bad::TooDeep));
    }

    #[test]
    fn managed_fields_are_cut_wherever_they_stand() {
        let e = Edits {
            drop_managed_fields: true,
            ..Edits::NONE
        };
        for (input, want) in [
            (
                r#"{"metadata":{"name":"a","managedFields":[{"m":1}],"uid":"u"}}"#,
                r#"{"metadata":{"name":"a","uid":"u"}}"#,
            ),
            (
                r#"{"metadata":{"managedFields":[{"m":1}],"name":"a"}}"#,
                r#"{"metadata":{"name":"a"}}"#,
            ),
            (
                r#"{"metadata":{"name":"a","managedFields":[]}}"#,
                r#"{"metadata":{"name":"a"}}"#,
            ),
            (r#"{"metadata":{"managedFields":[]}}"#, r#"{"metadata":{}}"#),
            (
                r#"{ "metadata" : { "name" : "a" , "managedFields" : [ ] } }"#,
                r#"{ "metadata" : { "name" : "a" } }"#,
            ),
            // Twice (no server does it; it must still be JSON).
            (
                r#"{"metadata":{"managedFields":[1],"managedFields":[2],"name":"a"}}"#,
                r#"{"metadata":{"name":"a"}}"#,
            ),
            (
                r#"{"metadata":{"name":"a","managedFields":[1],"managedFields":{"x":[2]}}}"#,
                r#"{"metadata":{"name":"a"}}"#,
            ),
        ] {
            let out = edit(input.as_bytes(), e).unwrap().unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), want);
        }
        assert_eq!(edit(br#"{"spec":{"managedFields":[]}}"#, e), Ok(None));
    }

    #[test]
    fn metadata_and_envelopes_are_found() {
        let obj = br#"{"kind":"Pod","metadata":{"name":"p","namespace":"ns","uid":"u","resourceVersion":"7","labels":{"name":"x"}},"spec":{"name":"y"}}"#;
        let (_, f) = walk(obj, SCRUB);
        let text = |s: Option<(usize, usize)>| {
            let (a, b) = s.unwrap();
            std::str::from_utf8(&obj[a..b]).unwrap()
        };
        assert_eq!(
            [f.kind, f.name, f.namespace, f.uid, f.resource_version].map(text),
            ["\"Pod\"", "\"p\"", "\"ns\"", "\"u\"", "\"7\""]
        );
        let frame =
            br#" { "object" : {"a":[1,{"type":"no"}]}, "x":{"type":1}, "type" : "ADDED" } "#;
        let (t, o) = envelope(frame).unwrap();
        let (t, o) = (t.unwrap(), o.unwrap());
        assert_eq!(&frame[t.0..t.1], br#""ADDED""#);
        assert_eq!(&frame[o.0..o.1], br#"{"a":[1,{"type":"no"}]}"#);
        assert_eq!(
            envelope(br#"{"type":"ADDED","object":"x"}"#),
            Ok((Some((8, 15)), None))
        );
    }

    /// A reference for the redaction rules, on `Value`s: for each object key,
    /// what the walker must do.
    fn reference(v: &mut Value, secret: bool) {
        fn walk(v: &mut Value, in_list: bool, in_env: bool) {
            match v {
                Value::Array(items) => {
                    for i in items {
                        walk(i, in_list, in_env);
                    }
                }
                Value::Object(m) => {
                    for (k, x) in m.iter_mut() {
                        if in_env && k == "value" && !x.is_null() {
                            *x = Value::String("REDACTED".into());
                        } else if matches!(
                            k.as_str(),
                            "containers" | "initContainers" | "ephemeralContainers"
                        ) {
                            walk(x, true, false);
                        } else if in_list && k == "env" {
                            walk(x, false, true);
                        } else {
                            walk(x, false, false);
                        }
                    }
                }
                _ => {}
            }
        }
        walk(v, false, false);
        if secret {
            for map in ["data", "stringData"] {
                if let Some(Value::Object(m)) = v.get_mut(map) {
                    for x in m.values_mut().filter(|x| !x.is_null()) {
                        *x = Value::String("REDACTED".into());
                    }
                }
            }
        }
        let la = std::str::from_utf8(LAST_APPLIED).unwrap();
        if let Some(Value::String(text)) =
            v.pointer_mut(&format!("/metadata/annotations/{}", la.replace('/', "~1")))
        {
            // As the walker's quick look: without these it is left as it is.
            let escaped = serde_json::to_string(text).unwrap();
            if !(escaped.contains("env")
                || escaped.contains("\\u")
                || (secret && escaped.contains("ata")))
            {
                return;
            }
            *text = match serde_json::from_str::<Value>(text) {
                Ok(mut inner) if inner.is_object() => {
                    reference(&mut inner, secret);
                    inner.to_string()
                }
                _ => "REDACTED".into(),
            };
        }
    }

    /// Random pod-shaped objects: containers lists at random depths, env
    /// lists with values of every JSON type, keys that almost match.
    fn random_object(rng: &mut u64, depth: u32) -> Value {
        fn next(rng: &mut u64) -> u64 {
            *rng ^= *rng << 13;
            *rng ^= *rng >> 7;
            *rng ^= *rng << 17;
            *rng
        }
        let keys = [
            "containers",
            "initContainers",
            "ephemeralContainers",
            "env",
            "value",
            "valueFrom",
            "spec",
            "template",
            "name",
            "data",
            "stringData",
            "Containers",
            "envs",
            "values",
        ];
        let scalar = |n: u64| match n % 5 {
            0 => json!(format!("s3cret-{n}")),
            1 => json!(n % 1000),
            2 => Value::Null,
            3 => json!(n % 2 == 0),
            _ => json!("REDACTED"),
        };
        let n = next(rng);
        if depth == 0 || n % 4 == 0 {
            return scalar(next(rng));
        }
        if n % 4 == 1 {
            let len = next(rng) % 4;
            return Value::Array((0..len).map(|_| random_object(rng, depth - 1)).collect());
        }
        let len = 1 + next(rng) % 4;
        let mut m = serde_json::Map::new();
        for _ in 0..len {
            let k = keys[(next(rng) % keys.len() as u64) as usize];
            let v = random_object(rng, depth - 1);
            m.insert(k.to_string(), v);
        }
        Value::Object(m)
    }

    #[test]
    fn the_byte_scrubber_agrees_with_the_reference_on_random_objects() {
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        let mut redacted = 0;
        for i in 0..3000 {
            let mut obj = random_object(&mut rng, 7);
            if !obj.is_object() {
                obj = json!({"spec": obj});
            }
            if i % 3 == 0 {
                let inner = random_object(&mut rng, 6);
                let text = if i % 2 == 0 {
                    json!({"spec": inner}).to_string()
                } else {
                    format!("{{\"env\":{inner}")
                };
                obj["metadata"] =
                    json!({"annotations": {std::str::from_utf8(LAST_APPLIED).unwrap(): text}});
            }
            let secret = i % 5 == 0;
            let edits = if secret { SECRET } else { SCRUB };
            let mut want = obj.clone();
            reference(&mut want, secret);
            let got = edited(&obj, edits).unwrap_or_else(|| obj.clone());
            assert_eq!(got, want, "object {i}: {obj}");
            redacted += usize::from(got != obj);
        }
        assert!(
            redacted > 500,
            "the generator exercises redaction ({redacted})"
        );
    }

    #[test]
    fn real_pods_lose_their_env_values_and_managed_fields() {
        let body = include_str!("../tests/wire/a-watchlist-pods.body.jsonl");
        let both = Edits {
            drop_managed_fields: true,
            ..SCRUB
        };
        for line in body.lines() {
            let ev: Value = serde_json::from_str(line).unwrap();
            let mut want = ev["object"].clone();
            reference(&mut want, false);
            if let Some(m) = want.get_mut("metadata").and_then(Value::as_object_mut) {
                m.shift_remove("managedFields");
            }
            let got = edited(&ev["object"], both).unwrap_or(ev["object"].clone());
            assert_eq!(got, want);
        }
    }
}
