//! The one pass over an object: its JSON checked, the metadata tattler needs
//! located, and the edits made — secrets redacted, managedFields removed — by
//! copying spans of the object as received, with no `serde_json::Value`.
//!
//! This is tattler's only scrubber: every path (watch, LIST, relist, re-sync,
//! a transform, metadata-only objects) goes through it. It is iterative:
//! nesting costs a little heap, bounded by [`MAX_DEPTH`], never stack, so no
//! object can overflow a thread's stack however deep it is.
//!
//! What is redacted is the policy's (`super::policy`): each such value,
//! whatever its JSON type, becomes `"REDACTED"` (`null` stays), inside the
//! last-applied annotation too (which, when it cannot be read as JSON or is
//! too deep, is redacted whole).
//!
//! Keys are compared after unescaping (`"\u0065nv"` is `env`). Where a value
//! sits, and so what is done with it, is the policy's (`super::policy`).

use super::policy::{is_container_list, item, member, State};

/// The deepest nesting accepted, objects and arrays counted alike. The
/// apiserver stores objects up to 10,000 levels deep; an object nested deeper
/// is not JSON tattler hands out.
pub(crate) const MAX_DEPTH: usize = 10_000;

/// What replaces a redacted value, as JSON.
const REDACTED_JSON: &[u8] = b"\"REDACTED\"";

pub(crate) const LAST_APPLIED: &[u8] = b"kubectl.kubernetes.io/last-applied-configuration";

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

    pub(crate) fn any_redaction(self) -> bool {
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
    let mut w = Walker::<false>::new(obj, edits, State::Root);
    let result = w.run();
    let found = w.found;
    (result.map(|()| w.finish()), found)
}

/// A byte range, `start..end`.
pub(crate) type Span = (usize, usize);

/// The spans of `type` (a string, quotes included) and `object` (an object)
/// of a watch event in any member order and spacing, its structure checked.
pub(crate) fn envelope(frame: &[u8]) -> Result<(Option<Span>, Option<Span>), Bad> {
    let mut w = Walker::<false>::new(frame, Edits::NONE, State::Envelope);
    w.run()?;
    Ok((w.envelope_type, w.envelope_object))
}

/// An open object or array.
#[derive(Clone, Copy)]
struct Frame {
    /// Where it starts (its bracket).
    start: usize,
    state: State,
    object: bool,
}

const NONE: usize = usize::MAX;

/// What a string holds besides plain text (keys are unescaped only when
/// their text can matter).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Escapes {
    None,
    /// Only two-character escapes (`\"`, `\n`, …): none of them spells a
    /// letter.
    Simple,
    /// A `\u` escape.
    Unicode,
}

/// Walks a JSON object in `src`. `ESC`: the object is the text of a JSON
/// string as it stands between its quotes (the last-applied annotation),
/// walked without unescaping it: `\"` is a quote, `\n`, `\r` and `\t`
/// between tokens are white space, `\\` starts an escape of the text's own.
/// Anything else escaped where it could matter (a key, a token, a control
/// character or quote spelled `\u…`) fails the walk, and the caller reads the
/// text the general way.
struct Walker<'a, const ESC: bool> {
    src: &'a [u8],
    pos: usize,
    out: Vec<u8>,
    /// `src[..copied]` is already in `out` (edited).
    copied: usize,
    changed: bool,
    edits: Edits,
    /// Walking the inside of a last-applied annotation: the spans to redact
    /// are kept in `redacted` rather than copied into `out`.
    inner: bool,
    redacted: Vec<Span>,
    root: State,
    /// The open containers around the one being read (which `run` keeps in
    /// locals).
    stack: Vec<Frame>,
    found: Found,
    envelope_type: Option<(usize, usize)>,
    envelope_object: Option<(usize, usize)>,
    /// managedFields removal, in the metadata object (at most one is open):
    /// where the current member's key starts, whether that member goes,
    /// where the member before it ended (`NONE`), and where a removed first
    /// member's cut starts, until the comma after it (`NONE`).
    mf_key: usize,
    mf_removing: bool,
    mf_prev_end: usize,
    mf_cut_first: usize,
    /// An escaped key, unescaped.
    key_text: Vec<u8>,
}

impl<'a, const ESC: bool> Walker<'a, ESC> {
    fn new(src: &'a [u8], edits: Edits, root: State) -> Walker<'a, ESC> {
        Walker {
            src,
            pos: 0,
            out: Vec::new(),
            copied: 0,
            changed: false,
            edits,
            inner: false,
            redacted: Vec::new(),
            root,
            stack: Vec::with_capacity(32),
            found: Found::default(),
            envelope_type: None,
            envelope_object: None,
            mf_key: NONE,
            mf_removing: false,
            mf_prev_end: NONE,
            mf_cut_first: NONE,
            key_text: Vec::new(),
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
        self.changed = true;
        if self.inner {
            debug_assert_eq!(with, REDACTED_JSON);
            if self.redacted.capacity() == 0 {
                self.redacted.reserve(16);
            }
            self.redacted.push((from, to));
            return;
        }
        let from = from.max(self.copied);
        let to = to.max(from);
        if self.out.capacity() == 0 {
            self.out.reserve(self.src.len() + with.len());
        }
        self.out.extend_from_slice(&self.src[self.copied..from]);
        self.out.extend_from_slice(with);
        self.copied = to;
    }

    /// Skips white space; the byte after it.
    #[inline(always)]
    fn token(&mut self) -> Result<u8, Bad> {
        let b = *self.src.get(self.pos).ok_or(Bad::NotJson)?;
        if b > b' ' && !(ESC && b == b'\\') {
            return Ok(b);
        }
        self.ws();
        match self.src.get(self.pos) {
            // An escaped quote starts a string (which `string` reads from its backslash).
            Some(b'\\') if ESC => match self.src.get(self.pos + 1) {
                Some(b'"') => Ok(b'"'),
                _ => Err(Bad::NotJson),
            },
            Some(&b) => Ok(b),
            None => Err(Bad::NotJson),
        }
    }

    fn ws(&mut self) {
        loop {
            match self.src.get(self.pos) {
                Some(b' ' | b'\n' | b'\r' | b'\t') => self.pos += 1,
                Some(b'\\')
                    if ESC && matches!(self.src.get(self.pos + 1), Some(b'n' | b'r' | b't')) =>
                {
                    self.pos += 2
                }
                _ => return,
            }
        }
    }

    fn run(&mut self) -> Result<(), Bad> {
        if self.token()? != b'{' {
            return Err(Bad::NotJson);
        }
        let mut state = self.root;
        // The innermost open container, while `depth > 0`; those around it
        // are on the stack.
        let mut cur = Frame {
            start: 0,
            state: State::Plain,
            object: false,
        };
        let mut depth = 0usize;
        'value: loop {
            // A value in `state` starts here.
            let b = self.token()?;
            let start = self.pos;
            match b {
                b'{' | b'[' => {
                    if depth >= MAX_DEPTH {
                        return Err(Bad::TooDeep);
                    }
                    if depth > 0 {
                        self.stack.push(cur);
                    }
                    depth += 1;
                    let object = b == b'{';
                    cur = Frame {
                        start,
                        state,
                        object,
                    };
                    self.pos += 1;
                    let next = self.token()?;
                    if object {
                        if state == State::Metadata {
                            self.mf_removing = false;
                            self.mf_prev_end = NONE;
                            self.mf_cut_first = NONE;
                        }
                        if next != b'}' {
                            state = self.key(state)?;
                            continue 'value;
                        }
                    } else if next != b']' {
                        state = item(state);
                        continue 'value;
                    }
                    // Empty.
                    self.pos += 1;
                    self.close(cur);
                    depth -= 1;
                    if let Some(f) = self.stack.pop() {
                        cur = f;
                    }
                }
                b'"' => {
                    self.string()?;
                    if state != State::Plain {
                        self.on_string(state, start);
                    }
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
                if depth == 0 {
                    self.ws();
                    return if self.pos == self.src.len() {
                        Ok(())
                    } else {
                        Err(Bad::NotJson)
                    };
                }
                let value_end = self.pos;
                if cur.object {
                    let metadata = cur.state == State::Metadata;
                    if metadata {
                        self.member_end(value_end);
                    }
                    match self.token()? {
                        b',' => {
                            self.pos += 1;
                            if metadata {
                                self.after_comma(value_end);
                            }
                            state = self.key(cur.state)?;
                            continue 'value;
                        }
                        b'}' => {
                            if metadata {
                                let cut = std::mem::replace(&mut self.mf_cut_first, NONE);
                                if cut != NONE {
                                    self.replace(cut, value_end, b"");
                                }
                            }
                        }
                        _ => return Err(Bad::NotJson),
                    }
                } else {
                    match self.token()? {
                        b',' => {
                            self.pos += 1;
                            state = item(cur.state);
                            continue 'value;
                        }
                        b']' => {}
                        _ => return Err(Bad::NotJson),
                    }
                }
                self.pos += 1;
                self.close(cur);
                depth -= 1;
                if let Some(f) = self.stack.pop() {
                    cur = f;
                }
            }
        }
    }

    /// The container `f` ended at `self.pos`.
    fn close(&mut self, f: Frame) {
        match f.state {
            State::Redact => self.replace(f.start, self.pos, REDACTED_JSON),
            State::EventObject => self.envelope_object = Some((f.start, self.pos)),
            _ => {}
        }
    }

    /// Reads a member's key and colon; returns the member's state.
    #[inline(always)]
    fn key(&mut self, parent: State) -> Result<State, Bad> {
        if self.token()? != b'"' {
            return Err(Bad::NotJson);
        }
        let key_start = self.pos;
        let escapes = self.string()?;
        let src = self.src;
        let quote = if ESC { 2 } else { 1 };
        let raw = &src[key_start + quote..self.pos - quote];
        if ESC && escapes != Escapes::None {
            return Err(Bad::NotJson);
        }
        if self.token()? != b':' {
            return Err(Bad::NotJson);
        }
        self.pos += 1;
        let e = self.edits;
        // A `\u` escape may spell anything, or be a lone surrogate (which
        // makes the key no string): such a key is always read. Other escapes
        // spell no letter, and below `Plain` only letters matter.
        let state = match (parent, escapes) {
            (State::Plain, Escapes::None) if e.scrub && is_container_list(raw) => State::Containers,
            (State::Plain, Escapes::None | Escapes::Simple) => State::Plain,
            (
                State::Skip | State::Redact | State::Managed | State::EventObject,
                Escapes::None | Escapes::Simple,
            ) => State::Skip,
            (_, Escapes::None) => member(parent, raw, e, self.inner),
            _ => {
                self.key_text.clear();
                unescape(raw, &mut self.key_text, None)?;
                member(parent, &self.key_text, e, self.inner)
            }
        };
        if parent == State::Metadata {
            self.mf_key = key_start;
            self.mf_removing = state == State::Managed;
        }
        Ok(state)
    }

    /// A member of the metadata object ended at `value_end`: a removed
    /// member goes.
    fn member_end(&mut self, value_end: usize) {
        if !std::mem::replace(&mut self.mf_removing, false) {
            return;
        }
        match self.mf_prev_end {
            // `,"managedFields":[…]` goes, from the comma before it.
            NONE => self.mf_cut_first = self.mf_key,
            p => self.replace(p, value_end, b""),
        }
    }

    /// After the comma that follows a member of the metadata object ending
    /// at `value_end`.
    fn after_comma(&mut self, value_end: usize) {
        let cut = std::mem::replace(&mut self.mf_cut_first, NONE);
        if cut != NONE {
            // A removed first member goes with its comma; the next member is first now.
            self.mf_prev_end = NONE;
            self.replace(cut, self.pos, b"");
        } else {
            self.mf_prev_end = value_end;
        }
    }

    /// Skips a string, quotes included, checking its escapes and that it holds
    /// no raw control character.
    #[inline(always)]
    fn string(&mut self) -> Result<Escapes, Bad> {
        if ESC {
            return self.escaped_string();
        }
        let src = self.src;
        let mut escapes = Escapes::None;
        let mut i = self.pos + 1;
        // Eight bytes at a time, going from one special byte of a word to
        // the next without reading the word again.
        while let Some(word) = src.get(i..i + 8) {
            let mut m =
                crate::util::string_specials(u64::from_le_bytes(word.try_into().expect("8 bytes")));
            let mut next = i + 8;
            while m != 0 {
                let p = i + (m.trailing_zeros() / 8) as usize;
                match src[p] {
                    b'"' => {
                        self.pos = p + 1;
                        return Ok(escapes);
                    }
                    b'\\' => {
                        let end = p + escape(src, p, &mut escapes)?;
                        if end >= i + 8 {
                            next = end;
                            break;
                        }
                        m &= !0 << ((end - i) * 8);
                    }
                    _ => return Err(Bad::NotJson), // a raw control character
                }
            }
            i = next;
        }
        // The last few bytes of the input.
        loop {
            match *src.get(i).ok_or(Bad::NotJson)? {
                b'"' => {
                    self.pos = i + 1;
                    return Ok(escapes);
                }
                b'\\' => i += escape(src, i, &mut escapes)?,
                c if c < 0x20 => return Err(Bad::NotJson),
                _ => i += 1,
            }
        }
    }

    /// [`string`](Self::string) in the escaped text: from its `\"` to the
    /// next unescaped `\"`. Escapes of the text's own (`\\\"`, `\\n`,
    /// `\\u…`) are checked as the text would be; of the escapes that stand
    /// for a character of the text, only those of printable characters other
    /// than `"` and `\\` are taken (`\u003c`, `\/`).
    fn escaped_string(&mut self) -> Result<Escapes, Bad> {
        let src = self.src;
        let mut escapes = Escapes::None;
        let mut i = self.pos + 2;
        // As `string`, a word at a time; the text holds no raw `"` or
        // control character (it is a string's), so every special byte is a
        // backslash.
        loop {
            let (mut m, width) = match src.get(i..i + 8) {
                Some(word) => (
                    crate::util::string_specials(u64::from_le_bytes(
                        word.try_into().expect("8 bytes"),
                    )),
                    8,
                ),
                None => (u64::from(src.get(i) == Some(&b'\\')) << 7, 1),
            };
            if i >= src.len() {
                return Err(Bad::NotJson);
            }
            let mut next = i + width;
            while m != 0 {
                let p = i + (m.trailing_zeros() / 8) as usize;
                if src[p] != b'\\' {
                    return Err(Bad::NotJson);
                }
                let end = match escaped_escape(src, p)? {
                    0 => {
                        self.pos = p + 2;
                        return Ok(escapes);
                    }
                    n => p + n,
                };
                escapes = Escapes::Simple;
                if end >= i + width {
                    next = end;
                    break;
                }
                m &= !0 << ((end - i) * 8);
            }
            i = next;
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
    #[inline]
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
            State::Redact
                if &self.src[start..self.pos]
                    != (if ESC { ESCAPED_REDACTED } else { REDACTED_JSON }) =>
            {
                self.replace(start, self.pos, REDACTED_JSON);
            }
            State::LastApplied => self.last_applied(start),
            _ => {}
        }
    }

    /// The last-applied annotation (the string at `start..pos`) holds the
    /// object as applied: it is scrubbed by the same rules, or withheld whole
    /// when it cannot be read. Its text is unescaped and walked; what that
    /// walk redacts is redacted in place, in the escaped form, so the rest
    /// of the annotation is neither re-escaped nor copied twice.
    fn last_applied(&mut self, start: usize) {
        let src = self.src;
        let raw = &src[start..self.pos];
        // Nothing to redact without an `env` or a Secret's `data` (as plain
        // text: an escape can spell anything, so it always takes a look).
        // The searchers are built once: building one costs about what
        // searching a few kilobytes does.
        static NEEDLES: std::sync::LazyLock<[memchr::memmem::Finder<'static>; 3]> =
            std::sync::LazyLock::new(|| {
                [&br"\u"[..], b"env", b"ata"].map(memchr::memmem::Finder::new)
            });
        let [unicode, env, data] = &*NEEDLES;
        let find = |f: &memchr::memmem::Finder| f.find(raw).is_some();
        let look = find(unicode)
            || (self.edits.scrub && find(env))
            || (self.edits.secret_data && find(data));
        if !look {
            return;
        }
        let edits = Edits {
            drop_managed_fields: false,
            ..self.edits
        };
        let (end, src) = (self.pos, self.src);
        match inner_as_is(src, start, end, edits)
            .or_else(|| inner_unescaped(src, start, end, edits))
        {
            Some(spans) => {
                for (from, to) in spans {
                    self.replace(from, to, ESCAPED_REDACTED);
                }
            }
            // Not JSON, too deep, or a lone surrogate escape.
            None => self.replace(start, end, REDACTED_JSON),
        }
    }
}

/// What to redact (spans of `src`) in the object held by the JSON string at
/// `src[start..end]`, found by walking it as it stands; `None` when that walk
/// cannot tell (see [`Walker`]'s `ESC`).
fn inner_as_is(src: &[u8], start: usize, end: usize, edits: Edits) -> Option<Vec<Span>> {
    let mut w = Walker::<true>::new(&src[..end - 1], edits, State::Root);
    w.pos = start + 1;
    w.inner = true;
    w.run().ok()?;
    Some(w.redacted)
}

/// The same, found by unescaping the text, walking it, and finding the
/// spans it redacts again in the escaped text; `None` when the text is not
/// one JSON object (or is nested too deep, or holds a lone surrogate).
fn inner_unescaped(src: &[u8], start: usize, end: usize, edits: Edits) -> Option<Vec<Span>> {
    let content = &src[start + 1..end - 1];
    let mut text = Vec::with_capacity(content.len() + 8);
    // (where in `text`, where in `content`) after each escape.
    let mut map = Vec::with_capacity(content.len() / 4);
    unescape(content, &mut text, Some(&mut map)).ok()?;
    let mut w = Walker::<false>::new(&text, edits, State::Root);
    w.inner = true;
    w.run().ok()?;
    // A position in `text` as one in `src`: the bytes after the last
    // escape before it stand for themselves.
    let at = |p: usize| {
        let i = map.partition_point(|&(t, _)| t <= p);
        let raw = if i == 0 {
            p
        } else {
            map[i - 1].1 + (p - map[i - 1].0)
        };
        start + 1 + raw
    };
    Some(
        w.redacted
            .into_iter()
            .map(|(from, to)| (at(from), at(to)))
            .collect(),
    )
}

/// `"REDACTED"` inside a JSON string.
const ESCAPED_REDACTED: &[u8] = br#"\"REDACTED\""#;

/// What each byte after a backslash stands for: the byte it unescapes to for
/// the two-character escapes, `u` for `\u`, 0 for none (not an escape). A
/// table, not a `match`: a jump table on the escape's letter mispredicts.
const ESCAPES: [u8; 256] = {
    let mut t = [0u8; 256];
    t[b'"' as usize] = b'"';
    t[b'\\' as usize] = b'\\';
    t[b'/' as usize] = b'/';
    t[b'b' as usize] = 0x08;
    t[b'f' as usize] = 0x0c;
    t[b'n' as usize] = b'\n';
    t[b'r' as usize] = b'\r';
    t[b't' as usize] = b'\t';
    t[b'u' as usize] = b'u';
    t
};

/// The length of the escape at `src[at]` (a backslash), checked; notes
/// what kind it is.
#[inline(always)]
fn escape(src: &[u8], at: usize, escapes: &mut Escapes) -> Result<usize, Bad> {
    let letter = *src.get(at + 1).ok_or(Bad::NotJson)?;
    match ESCAPES[usize::from(letter)] {
        0 => Err(Bad::NotJson),
        b'u' if letter == b'u' => {
            let hex = src.get(at + 2..at + 6).ok_or(Bad::NotJson)?;
            if !hex.iter().all(u8::is_ascii_hexdigit) {
                return Err(Bad::NotJson);
            }
            *escapes = Escapes::Unicode;
            Ok(6)
        }
        _ => {
            if *escapes == Escapes::None {
                *escapes = Escapes::Simple;
            }
            Ok(2)
        }
    }
}

/// In the escaped text of [`Walker`]'s `ESC`, the length of what starts
/// with the backslash at `src[at]`: 0 for `\"`, the end of the string; an
/// escape of the text's own, escaped (`\\\"`, `\\n`, `\\u0041`); `\/`,
/// or `\u…` of a printable character other than `"` and `\\`. Anything
/// else is an error: the general way decides.
#[inline(always)]
fn escaped_escape(src: &[u8], at: usize) -> Result<usize, Bad> {
    let hex = |from: usize| -> Result<u32, Bad> {
        let digits = src.get(from..from + 4).ok_or(Bad::NotJson)?;
        digits.iter().try_fold(0, |n, &d| {
            let v = char::from(d).to_digit(16).ok_or(Bad::NotJson)?;
            Ok(n << 4 | v)
        })
    };
    match src.get(at + 1) {
        Some(b'"') => Ok(0),
        Some(b'\\') => match src.get(at + 2) {
            Some(b'\\') => match src.get(at + 3) {
                Some(b'"' | b'\\') => Ok(4),
                _ => Err(Bad::NotJson),
            },
            Some(b'/' | b'b' | b'f' | b'n' | b'r' | b't') => Ok(3),
            Some(b'u') => hex(at + 3).map(|_| 7),
            _ => Err(Bad::NotJson),
        },
        Some(b'/') => Ok(2),
        Some(b'u') => match hex(at + 2)? {
            code if code < 0x20
                || code == 0x22
                || code == 0x5c
                || (0xD800..=0xDFFF).contains(&code) =>
            {
                Err(Bad::NotJson)
            }
            _ => Ok(6),
        },
        _ => Err(Bad::NotJson),
    }
}

/// Unescapes the text of a JSON string (quotes excluded) whose escapes are
/// known to be well formed, appending it to `out`; fails, as serde_json does
/// when reading a `String`, on a surrogate escape that is not half of a pair.
/// With `map`, records (the length of the text, the position in `raw`) after
/// each escape.
fn unescape(
    raw: &[u8],
    out: &mut Vec<u8>,
    map: Option<&mut Vec<(usize, usize)>>,
) -> Result<(), Bad> {
    match map {
        Some(map) => unescape_as::<true>(raw, out, map),
        None => unescape_as::<false>(raw, out, &mut Vec::new()),
    }
}

/// [`unescape`], recording the map or not.
fn unescape_as<const MAP: bool>(
    raw: &[u8],
    out: &mut Vec<u8>,
    map: &mut Vec<(usize, usize)>,
) -> Result<(), Bad> {
    let hex = |at: usize| -> Result<u32, Bad> {
        let digits = raw.get(at..at + 4).ok_or(Bad::NotJson)?;
        digits.iter().try_fold(0, |n, &d| {
            let v = char::from(d).to_digit(16).ok_or(Bad::NotJson)?;
            Ok(n << 4 | v)
        })
    };
    let base = out.len();
    // Unescaping never lengthens; the 8 more let a whole word be copied.
    out.resize(base + raw.len() + 8, 0);
    let buf = &mut out[base..];
    let (mut i, mut j) = (0, 0);
    loop {
        // Plain text up to the next backslash, a word at a time.
        let mut escape = false;
        while let Some(word) = raw.get(i..i + 8) {
            buf[j..j + 8].copy_from_slice(word);
            let m = backslashes(u64::from_le_bytes(word.try_into().expect("8 bytes")));
            if m != 0 {
                let k = (m.trailing_zeros() / 8) as usize;
                i += k;
                j += k;
                escape = true;
                break;
            }
            i += 8;
            j += 8;
        }
        if !escape {
            while let Some(&b) = raw.get(i).filter(|&&b| b != b'\\') {
                buf[j] = b;
                i += 1;
                j += 1;
            }
            if i == raw.len() {
                break;
            }
        }
        let letter = *raw.get(i + 1).ok_or(Bad::NotJson)?;
        let simple = match ESCAPES[usize::from(letter)] {
            0 => return Err(Bad::NotJson),
            b'u' if letter == b'u' => None,
            c => Some(c),
        };
        if let Some(c) = simple {
            buf[j] = c;
            i += 2;
            j += 1;
        } else {
            let mut code = hex(i + 2)?;
            i += 6;
            if (0xDC00..=0xDFFF).contains(&code) {
                return Err(Bad::NotJson);
            }
            if (0xD800..=0xDBFF).contains(&code) {
                if raw.get(i..i + 2) != Some(&br"\u"[..]) {
                    return Err(Bad::NotJson);
                }
                let low = hex(i + 2)?;
                if !(0xDC00..=0xDFFF).contains(&low) {
                    return Err(Bad::NotJson);
                }
                i += 6;
                code = 0x1_0000 + ((code - 0xD800) << 10) + (low - 0xDC00);
            }
            let ch = char::from_u32(code).ok_or(Bad::NotJson)?;
            j += ch.encode_utf8(&mut buf[j..]).len();
        }
        if MAP {
            map.push((j, i));
        }
    }
    out.truncate(base + j);
    Ok(())
}

/// The backslashes of a word: the lowest set bit marks the first exactly.
fn backslashes(w: u64) -> u64 {
    const LO: u64 = 0x0101_0101_0101_0101;
    let x = w ^ (LO * u64::from(b'\\'));
    x.wrapping_sub(LO) & !x & (LO << 7)
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
    /// what the walker must do. `escaped`: the last-applied annotation as
    /// the object's bytes spell it (serde_json's escaping when `None`).
    fn reference(v: &mut Value, secret: bool) {
        reference_escaped(v, secret, None);
    }

    fn reference_escaped(v: &mut Value, secret: bool, escaped: Option<&str>) {
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
            let escaped =
                escaped.map_or_else(|| serde_json::to_string(text).unwrap(), String::from);
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

    fn next(rng: &mut u64) -> u64 {
        *rng ^= *rng << 13;
        *rng ^= *rng >> 7;
        *rng ^= *rng << 17;
        *rng
    }

    /// `text` as a JSON string, each character spelled one of the ways JSON
    /// allows, at random (`\u` escapes in either case, surrogate pairs, `\/`).
    fn escape_randomly(text: &str, rng: &mut u64) -> String {
        let mut out = String::from("\"");
        for c in text.chars() {
            let n = next(rng) % 10;
            match c {
                '"' if n < 7 => out.push_str("\\\""),
                '\\' if n < 7 => out.push_str("\\\\"),
                '\n' if n < 7 => out.push_str("\\n"),
                '/' if n < 2 => out.push_str("\\/"),
                c if n < 2 || c < ' ' || c == '"' || c == '\\' => {
                    for unit in c.encode_utf16(&mut [0; 2]) {
                        if n % 2 == 0 {
                            out.push_str(&format!("\\u{unit:04x}"));
                        } else {
                            out.push_str(&format!("\\u{unit:04X}"));
                        }
                    }
                }
                c => out.push(c),
            }
        }
        out.push('"');
        out
    }

    /// Values of annotations compared as the JSON they hold, when they hold
    /// JSON: the walker keeps the annotation's own spelling.
    fn annotations_read(v: &mut Value) {
        if let Some(Value::Object(a)) = v.pointer_mut("/metadata/annotations") {
            for x in a.values_mut() {
                if let Some(inner) = x
                    .as_str()
                    .and_then(|t| serde_json::from_str::<Value>(t).ok())
                {
                    *x = json!({ "held": inner });
                }
            }
        }
    }

    /// Random pod-shaped objects: containers lists at random depths, env
    /// lists with values of every JSON type, keys that almost match.
    fn random_object(rng: &mut u64, depth: u32) -> Value {
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
        let scalar = |n: u64| match n % 6 {
            0 => json!(format!("s3cret-{n}")),
            5 => json!(format!("s3\"c\\r\u{1}\u{e9}\u{1f600}\n/{n}")),
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
        let la = std::str::from_utf8(LAST_APPLIED).unwrap();
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        let (mut redacted, mut withheld, mut as_is) = (0, 0, 0);
        for i in 0..3000 {
            let mut obj = random_object(&mut rng, 7);
            if !obj.is_object() {
                obj = json!({"spec": obj});
            }
            // The object's bytes, and how its annotation is spelled in them.
            let mut bytes = serde_json::to_vec(&obj).unwrap();
            let mut escaped = None;
            let mut lone_surrogate = false;
            if i % 3 == 0 {
                let inner = random_object(&mut rng, 6);
                let text = match i % 4 {
                    0 | 3 => json!({"spec": inner}).to_string(),
                    1 => format!("{{\"env\":{inner}"),
                    // Too deep to read.
                    _ => format!(
                        "{{\"env\":{}{inner}{}}}",
                        "[".repeat(MAX_DEPTH),
                        "]".repeat(MAX_DEPTH)
                    ),
                };
                obj["metadata"] = json!({"annotations": {la: text.clone()}});
                if i % 2 == 0 {
                    bytes = serde_json::to_vec(&obj).unwrap();
                } else {
                    // Spelled with escapes serde_json does not write (as Go's
                    // encoder does `<`, `>` and `&`), half the time with a
                    // lone surrogate, which makes it no string at all.
                    let mut spelled = escape_randomly(&text, &mut rng);
                    if i % 9 == 3 {
                        let at = spelled.len() - 1;
                        spelled.insert_str(at, ["\\udc00", "\\ud800", "\\ud800\\u0041"][i % 3]);
                        lone_surrogate = true;
                    }
                    obj["metadata"]["annotations"][la] = json!("@placeholder@");
                    let placed = serde_json::to_string(&obj).unwrap();
                    bytes = placed.replace("\"@placeholder@\"", &spelled).into_bytes();
                    obj["metadata"]["annotations"][la] = json!(text);
                    escaped = Some(spelled);
                }
            }
            let secret = i % 5 == 0;
            let edits = if secret { SECRET } else { SCRUB };
            let mut want = obj.clone();
            if lone_surrogate {
                reference(&mut want, secret);
                want["metadata"]["annotations"][la] = json!("REDACTED");
            } else {
                reference_escaped(&mut want, secret, escaped.as_deref());
            }
            let out = edit(&bytes, edits).unwrap();
            let mut got: Value = match &out {
                Some(b) => serde_json::from_slice(b).expect("valid JSON out"),
                None => serde_json::from_slice(&bytes).unwrap(),
            };
            let text = String::from_utf8_lossy(&bytes);
            if want.pointer(&format!("/metadata/annotations/{}", la.replace('/', "~1")))
                == Some(&json!("REDACTED"))
                && i % 3 == 0
            {
                withheld += 1;
            }
            if i % 3 == 0 {
                as_is += usize::from(both_ways_agree(&bytes, edits));
            }
            annotations_read(&mut got);
            annotations_read(&mut want);
            assert_eq!(got, want, "object {i}: {text}");
            redacted += usize::from(out.is_some());
        }
        assert!(
            redacted > 500 && withheld > 100 && as_is > 200,
            "the generator exercises redaction ({redacted}), withheld annotations ({withheld}) \
             and the walk of the escaped text ({as_is})"
        );
    }

    /// The last-applied annotation of `obj` (its bytes) walked as it stands
    /// and unescaped: when the first can tell, it redacts what the second
    /// does (and perhaps a `"REDACTED"` spelled with escapes). True when it
    /// could tell.
    fn both_ways_agree(obj: &[u8], edits: Edits) -> bool {
        let key = format!("\"{}\":", std::str::from_utf8(LAST_APPLIED).unwrap());
        let start = memchr::memmem::find(obj, key.as_bytes()).unwrap() + key.len();
        let mut w = Walker::<false>::new(obj, Edits::NONE, State::Plain);
        w.pos = start;
        w.string().unwrap();
        let end = w.pos;
        let edits = Edits {
            drop_managed_fields: false,
            ..edits
        };
        let general = inner_unescaped(obj, start, end, edits);
        let Some(fast) = inner_as_is(obj, start, end, edits) else {
            return false;
        };
        let general = general.expect("the walk as it stands accepts only what unescaping does");
        let spelled_redacted = |&(a, b): &Span| {
            let mut t = Vec::new();
            unescape(&obj[a..b], &mut t, None).unwrap();
            t == REDACTED_JSON
        };
        let fast: Vec<Span> = fast
            .into_iter()
            .filter(|s| general.contains(s) || !spelled_redacted(s))
            .collect();
        assert_eq!(
            fast,
            general,
            "{}",
            String::from_utf8_lossy(&obj[start..end])
        );
        true
    }

    #[test]
    fn last_applied_as_go_spells_it_is_walked_as_it_stands() {
        let go = br#"{\"apiVersion\":\"v1\",\"metadata\":{\"annotations\":{\"a\":\"x \u003c\u0026\u003e y\\\"q\\\\ \\u00e9\\n\",\"u\":\"http:\/\/h\"}},\"spec\":{\"containers\":[{\"env\":[{\"name\":\"A\",\"value\":\"s3cret \u003c\\\"\"},{\"name\":\"B\",\"value\":12},{\"name\":\"C\",\"value\":{\"k\":[1,true,null]}}]}]}}\n"#;
        let pod = |annotation: &[u8]| {
            let mut v = br#"{"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":""#.to_vec();
            v.extend_from_slice(annotation);
            v.extend_from_slice(br#""}}}"#);
            v
        };
        let obj = pod(go);
        assert!(both_ways_agree(&obj, SCRUB));
        let out: Value = serde_json::from_slice(&edit(&obj, SCRUB).unwrap().unwrap()).unwrap();
        let env = &last_applied(&out)["spec"]["containers"][0]["env"];
        assert_eq!(
            env,
            &json!([{"name":"A","value":"REDACTED"},{"name":"B","value":"REDACTED"},{"name":"C","value":"REDACTED"}])
        );
        assert_eq!(
            last_applied(&out)["metadata"]["annotations"]["a"],
            "x <&> y\"q\\ \u{e9}\n"
        );
        // Quotes, structure or white space spelled with \u, and text the walk
        // as it stands cannot read: the general way decides.
        for (annotation, readable) in [
            (&br#"{\u0022env\":[]}"#[..], true),
            (br#"\u007b\"env\":[]}"#, true),
            (br#"{\"env\":[\"a\u0022b\"]}"#, false),
            (br#"{\"env\":\"a\nb\"}"#, false),
            (br#"{\"env\":[]}\u0020"#, true),
            (br#"{\"env\":[]} x"#, false),
            (br#"{\"e\\u006ev\":[]}"#, true),
        ] {
            let obj = pod(annotation);
            assert!(
                !both_ways_agree(&obj, SCRUB),
                "{}",
                String::from_utf8_lossy(annotation)
            );
            let out = edit(&obj, SCRUB).unwrap();
            let withheld = out.as_deref().is_some_and(|o| {
                last_applied(&serde_json::from_slice(o).unwrap()) == json!("REDACTED")
            });
            assert_eq!(
                withheld,
                !readable,
                "{}",
                String::from_utf8_lossy(annotation)
            );
        }
    }

    #[test]
    fn unescaping_agrees_with_serde_json() {
        let pieces = [
            "a",
            "plain text",
            "\u{e9}",
            "\u{1f600}",
            r#"\""#,
            r"\\",
            r"\/",
            r"\b",
            r"\f",
            r"\n",
            r"\r",
            r"\t",
            r"\u0041",
            r"\u00e9",
            r"\u00E9",
            r"\u2028",
            r"\ud83d\ude00",
            r"\uD83D\uDE00",
            r"\ud800",
            r"\udc00",
            r"\ud800\u0041",
            r"\ud800x",
            r"\ud800\n",
            r"\ud800\ud800\udc00",
        ];
        let mut rng = 0x2545_F491_4F6C_DD1Du64;
        for i in 0..5000 {
            let raw: String = (0..i % 23)
                .map(|_| pieces[(next(&mut rng) % pieces.len() as u64) as usize])
                .collect();
            let want = serde_json::from_str::<String>(&format!("\"{raw}\"")).ok();
            let (mut text, mut map) = (b"kept".to_vec(), Vec::new());
            let got = unescape(raw.as_bytes(), &mut text, Some(&mut map)).ok();
            assert_eq!(
                got.map(|()| text[4..].to_vec()),
                want.map(String::into_bytes),
                "{raw}"
            );
            if got.is_some() {
                // Each recorded point: the text so far is the raw text so far, unescaped.
                for &(t, r) in &map {
                    let mut head = Vec::new();
                    unescape(&raw.as_bytes()[..r], &mut head, None).unwrap();
                    assert_eq!(head, text[4..4 + t], "{raw} at {r}");
                }
            }
        }
    }

    #[test]
    fn real_pods_lose_their_env_values_and_managed_fields() {
        let body = include_str!("../../tests/wire/a-watchlist-pods.body.jsonl");
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
