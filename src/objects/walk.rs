//! The one pass over an object, with its edits: each value's state from the
//! policy (`super::policy`), redacted values replaced, managedFields cut,
//! the metadata strings located, and each annotation holding a copy of the
//! object handed to `super::annotation_copies`, whose edits land in the same pass.
//! Iterative: nesting costs heap, bounded by [`MAX_DEPTH`], never stack.

use std::borrow::Cow;

use super::annotation_copies;
use super::edits::{Bad, Edits, Found, Span, MAX_DEPTH};
use super::lexer::{unescape, Escapes, Lexer};
use super::policy::{item, member, plain_key_matters, State};
use super::reuse::Reuse;

/// What replaces a redacted value, as JSON.
pub(crate) const REDACTED_JSON: &[u8] = b"\"REDACTED\"";

/// `"REDACTED"` inside a JSON string.
pub(super) const ESCAPED_REDACTED: &[u8] = br#"\"REDACTED\""#;

/// One edit of a copy: `src[from..to]` becomes the bytes, spelled as `src`
/// spells its text.
pub(super) type Edit = (usize, usize, Cow<'static, [u8]>);

/// An open object or array.
#[derive(Clone, Copy, Debug)]
pub(super) struct Frame {
    /// Where it starts (its bracket).
    start: usize,
    state: State,
    object: bool,
}

const NONE: usize = usize::MAX;

/// Walks a JSON object in `src` (read as [`Lexer`]'s `ESC` says).
pub(super) struct Walker<'a, 'r, const ESC: bool> {
    lx: Lexer<'a, ESC>,
    /// Where its buffers come from and go back to (and its copies' walks').
    pub(super) reuse: &'r mut Reuse,
    out: Vec<u8>,
    /// `src[..copied]` is already in `out` (edited).
    copied: usize,
    changed: bool,
    edits: Edits,
    /// How many copies deep this walk is: 0 for the object itself, whose
    /// edits go to `out`; 1 for a copy held by one of its annotations, and
    /// so on. A copy's edits are kept in `redacted` for its holder to make.
    copies: usize,
    pub(super) redacted: Vec<Edit>,
    root: State,
    /// The open containers around the one being read (which `run` keeps in
    /// locals).
    stack: Vec<Frame>,
    pub(super) found: Found,
    pub(super) envelope_type: Option<Span>,
    pub(super) envelope_object: Option<Span>,
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

impl<'a, 'r, const ESC: bool> Walker<'a, 'r, ESC> {
    /// A walk of `src` from `pos`, `copies` copies deep.
    pub(super) fn new(
        src: &'a [u8],
        pos: usize,
        edits: Edits,
        root: State,
        copies: usize,
        reuse: &'r mut Reuse,
    ) -> Walker<'a, 'r, ESC> {
        let mut stack = reuse.stack();
        if stack.capacity() == 0 {
            stack.reserve(32);
        }
        let redacted = if copies > 0 {
            reuse.edits()
        } else {
            Vec::new()
        };
        Walker {
            lx: Lexer { src, pos },
            reuse,
            out: Vec::new(),
            copied: 0,
            changed: false,
            edits,
            copies,
            redacted,
            root,
            stack,
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

    /// `"REDACTED"` as this walk's text spells it.
    const REDACTED: &'static [u8] = if ESC { ESCAPED_REDACTED } else { REDACTED_JSON };

    pub(super) fn finish(mut self) -> Option<Vec<u8>> {
        if !self.changed {
            return None;
        }
        let mut out = std::mem::take(&mut self.out);
        out.extend_from_slice(&self.lx.src[self.copied..]);
        Some(out)
    }

    /// The edits of a copy, taken out of the walk.
    pub(super) fn take_redacted(&mut self) -> Vec<Edit> {
        std::mem::take(&mut self.redacted)
    }

    /// Replaces `src[from..to]` with `with`. Edits come in source order.
    fn replace(&mut self, from: usize, to: usize, with: Cow<'static, [u8]>) {
        debug_assert!(from >= self.copied && to >= from);
        self.changed = true;
        if self.copies > 0 {
            if self.redacted.capacity() == 0 {
                self.redacted.reserve(16);
            }
            self.redacted.push((from, to, with));
            return;
        }
        let from = from.max(self.copied);
        let to = to.max(from);
        if self.out.capacity() == 0 {
            // The entry's buffer: room for the edits to grow it (a redacted
            // value is longer than most), so that it is allocated once.
            let n = self.lx.src.len();
            self.out.reserve(n + n / 16 + with.len() + 64);
        }
        self.out.extend_from_slice(&self.lx.src[self.copied..from]);
        self.out.extend_from_slice(&with);
        self.copied = to;
    }

    pub(super) fn run(&mut self) -> Result<(), Bad> {
        if self.lx.token()? != b'{' {
            return Err(Bad::NotJson);
        }
        self.run_value()
    }

    /// As [`Walker::run`], over one JSON value of any type (the raw JSON a
    /// protobuf object holds: a `RawExtension`, a `FieldsV1`).
    pub(super) fn run_value(&mut self) -> Result<(), Bad> {
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
            let b = self.lx.token()?;
            let start = self.lx.pos;
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
                    self.lx.pos += 1;
                    let next = self.lx.token()?;
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
                    self.lx.pos += 1;
                    self.close(cur);
                    depth -= 1;
                    if let Some(f) = self.stack.pop() {
                        cur = f;
                    }
                }
                b'"' => {
                    self.lx.string()?;
                    if state != State::Plain {
                        self.on_string(state, start);
                    }
                }
                b't' => self.scalar(b"true", state, start)?,
                b'f' => self.scalar(b"false", state, start)?,
                b'n' => self.lx.literal(b"null")?,
                _ => {
                    self.lx.number()?;
                    self.on_scalar(state, start);
                }
            }
            // A value ended: close what it ends, up to the next value.
            loop {
                if depth == 0 {
                    self.lx.ws();
                    return if self.lx.pos == self.lx.src.len() {
                        Ok(())
                    } else {
                        Err(Bad::NotJson)
                    };
                }
                let value_end = self.lx.pos;
                if cur.object {
                    let metadata = cur.state == State::Metadata;
                    if metadata {
                        self.member_end(value_end);
                    }
                    match self.lx.token()? {
                        b',' => {
                            self.lx.pos += 1;
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
                                    self.replace(cut, value_end, Cow::Borrowed(b""));
                                }
                            }
                        }
                        _ => return Err(Bad::NotJson),
                    }
                } else {
                    match self.lx.token()? {
                        b',' => {
                            self.lx.pos += 1;
                            state = item(cur.state);
                            continue 'value;
                        }
                        b']' => {}
                        _ => return Err(Bad::NotJson),
                    }
                }
                self.lx.pos += 1;
                self.close(cur);
                depth -= 1;
                if let Some(f) = self.stack.pop() {
                    cur = f;
                }
            }
        }
    }

    /// The container `f` ended at `self.lx.pos`.
    fn close(&mut self, f: Frame) {
        match f.state {
            State::Redact => self.replace(f.start, self.lx.pos, Cow::Borrowed(Self::REDACTED)),
            State::EventObject => self.envelope_object = Some((f.start, self.lx.pos)),
            _ => {}
        }
    }

    /// Reads a member's key and colon; returns the member's state.
    #[inline(always)]
    fn key(&mut self, parent: State) -> Result<State, Bad> {
        if self.lx.token()? != b'"' {
            return Err(Bad::NotJson);
        }
        let key_start = self.lx.pos;
        let escapes = self.lx.string()?;
        let src = self.lx.src;
        let quote = if ESC { 2 } else { 1 };
        let raw = &src[key_start + quote..self.lx.pos - quote];
        if ESC && escapes != Escapes::None {
            return Err(Bad::NotJson);
        }
        if self.lx.token()? != b':' {
            return Err(Bad::NotJson);
        }
        self.lx.pos += 1;
        let e = self.edits;
        // A `\u` escape may spell anything, or be a lone surrogate (which
        // makes the key no string): such a key is always read. Other escapes
        // spell no letter, and below `Plain` only letters matter.
        let state = match (parent, escapes) {
            (State::Plain, Escapes::None) if !plain_key_matters(raw, e) => State::Plain,
            (State::Plain, Escapes::Simple) => State::Plain,
            (
                State::Skip | State::Redact | State::Managed | State::EventObject,
                Escapes::None | Escapes::Simple,
            ) => State::Skip,
            (_, Escapes::None) => member(parent, raw, e),
            _ => {
                self.key_text.clear();
                unescape(raw, &mut self.key_text, None)?;
                member(parent, &self.key_text, e)
            }
        };
        // The as-is walk cannot spell a copy's edits (escaped twice): the
        // general way does.
        if ESC && state == State::Copy {
            return Err(Bad::NotJson);
        }
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
            p => self.replace(p, value_end, Cow::Borrowed(b"")),
        }
    }

    /// After the comma that follows a member of the metadata object ending
    /// at `value_end`.
    fn after_comma(&mut self, value_end: usize) {
        let cut = std::mem::replace(&mut self.mf_cut_first, NONE);
        if cut != NONE {
            // A removed first member goes with its comma; the next member is first now.
            self.mf_prev_end = NONE;
            self.replace(cut, self.lx.pos, Cow::Borrowed(b""));
        } else {
            self.mf_prev_end = value_end;
        }
    }

    fn scalar(&mut self, word: &[u8], state: State, start: usize) -> Result<(), Bad> {
        self.lx.literal(word)?;
        self.on_scalar(state, start);
        Ok(())
    }

    /// A number, `true` or `false` ended at `self.lx.pos`.
    #[inline]
    fn on_scalar(&mut self, state: State, start: usize) {
        if state == State::Redact {
            self.replace(start, self.lx.pos, Cow::Borrowed(Self::REDACTED));
        }
    }

    fn on_string(&mut self, state: State, start: usize) {
        let span = Some((start, self.lx.pos));
        match state {
            State::Kind => self.found.kind = span,
            State::Name => self.found.name = span,
            State::Namespace => self.found.namespace = span,
            State::Uid => self.found.uid = span,
            State::ResourceVersion => self.found.resource_version = span,
            State::EventType => self.envelope_type = span,
            State::Redact if &self.lx.src[start..self.lx.pos] != Self::REDACTED => {
                self.replace(start, self.lx.pos, Cow::Borrowed(Self::REDACTED));
            }
            State::Copy => self.copy(start),
            _ => {}
        }
    }

    /// An annotation holding a copy of the object (the string at
    /// `start..pos`): scrubbed by the same rules, in place, or withheld
    /// whole when it cannot be read (or is nested too deep in copies).
    fn copy(&mut self, start: usize) {
        let end = self.lx.pos;
        let copy = annotation_copies::edits(
            self.lx.src,
            start,
            end,
            self.edits,
            self.copies + 1,
            self.reuse,
        );
        match copy {
            Some(mut edits) => {
                for (from, to, with) in edits.drain(..) {
                    self.replace(from, to, with);
                }
                self.reuse.give_edits(edits);
            }
            None => self.replace(start, end, Cow::Borrowed(Self::REDACTED)),
        }
    }
}

impl<const ESC: bool> Drop for Walker<'_, '_, ESC> {
    fn drop(&mut self) {
        self.reuse.give_stack(std::mem::take(&mut self.stack));
        self.reuse.give_edits(std::mem::take(&mut self.redacted));
    }
}
