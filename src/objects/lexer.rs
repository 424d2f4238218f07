//! JSON's tokens, read where they stand: white space, strings (their escapes
//! checked, not decoded), numbers and literals; the unescaping of a string's
//! text when it matters (a key that may spell a name the policy knows, the
//! text of an annotation holding a copy of the object) and the escaping of a
//! replacement written back into such a text.

use super::edits::Bad;

/// What a string holds besides plain text (keys are unescaped only when
/// their text can matter).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Escapes {
    None,
    /// Only two-character escapes (`\"`, `\n`, …): none of them spells a
    /// letter.
    Simple,
    /// A `\u` escape.
    Unicode,
}

/// A position in `src`, and the reading of the token there. `ESC`: `src` is
/// the text of a JSON string as it stands between its quotes (an annotation
/// holding a copy of the object), read without unescaping it: `\"` is a
/// quote, `\n`, `\r` and `\t` between tokens are white space, `\\` starts
/// an escape of the text's own. Anything else escaped where it could matter
/// (a key, a token, a control character or quote spelled `\u…`) is an
/// error, and the caller reads the text the general way.
pub(super) struct Lexer<'a, const ESC: bool> {
    pub(super) src: &'a [u8],
    pub(super) pos: usize,
}

impl<const ESC: bool> Lexer<'_, ESC> {
    /// Skips white space; the byte after it.
    #[inline(always)]
    pub(super) fn token(&mut self) -> Result<u8, Bad> {
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

    pub(super) fn ws(&mut self) {
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

    /// Skips a string, quotes included, checking its escapes and that it holds
    /// no raw control character.
    #[inline(always)]
    pub(super) fn string(&mut self) -> Result<Escapes, Bad> {
        if ESC {
            return self.escaped_string();
        }
        let src = self.src;
        let mut escapes = Escapes::None;
        let mut i = self.pos + 1;
        // Eight bytes at a time, going from one special byte of a word to
        // the next without reading the word again.
        while let Some(word) = src.get(i..i + 8) {
            let mut m = super::string_specials::string_specials(u64::from_le_bytes(
                word.try_into().expect("8 bytes"),
            ));
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
    pub(super) fn escaped_string(&mut self) -> Result<Escapes, Bad> {
        let src = self.src;
        let mut escapes = Escapes::None;
        let mut i = self.pos + 2;
        // As `string`, a word at a time; the text holds no raw `"` or
        // control character (it is a string's), so every special byte is a
        // backslash.
        loop {
            let (mut m, width) = match src.get(i..i + 8) {
                Some(word) => (
                    super::string_specials::string_specials(u64::from_le_bytes(
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

    pub(super) fn literal(&mut self, word: &[u8]) -> Result<(), Bad> {
        if !self.src[self.pos..].starts_with(word) {
            return Err(Bad::NotJson);
        }
        self.pos += word.len();
        Ok(())
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
    pub(super) fn number(&mut self) -> Result<(), Bad> {
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
}

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
pub(super) fn escape(src: &[u8], at: usize, escapes: &mut Escapes) -> Result<usize, Bad> {
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

/// In the escaped text of [`Lexer`]'s `ESC`, the length of what starts
/// with the backslash at `src[at]`: 0 for `\"`, the end of the string; an
/// escape of the text's own, escaped (`\\\"`, `\\n`, `\\u0041`); `\/`,
/// or `\u…` of a printable character other than `"` and `\\`. Anything
/// else is an error: the general way decides.
#[inline(always)]
pub(super) fn escaped_escape(src: &[u8], at: usize) -> Result<usize, Bad> {
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
pub(super) fn unescape(
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

/// Appends `text` escaped as the text of a JSON string (quotes excluded):
/// `"`, `\\` and control characters escaped, everything else as it is.
pub(super) fn escape_into(text: &[u8], out: &mut Vec<u8>) {
    for &b in text {
        match b {
            b'"' => out.extend_from_slice(br#"\""#),
            b'\\' => out.extend_from_slice(br"\\"),
            b'\n' => out.extend_from_slice(br"\n"),
            b'\r' => out.extend_from_slice(br"\r"),
            b'\t' => out.extend_from_slice(br"\t"),
            c if c < 0x20 => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(br"\u00");
                out.push(HEX[usize::from(c >> 4)]);
                out.push(HEX[usize::from(c & 15)]);
            }
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn next(rng: &mut u64) -> u64 {
        *rng ^= *rng << 13;
        *rng ^= *rng >> 7;
        *rng ^= *rng << 17;
        *rng
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
    fn escaping_is_undone_by_unescaping() {
        let text: Vec<u8> = (0u8..=127).chain(*b"\"REDACTED\" \\\" \xc3\xa9").collect();
        let mut escaped = Vec::new();
        escape_into(&text, &mut escaped);
        let mut back = Vec::new();
        unescape(&escaped, &mut back, None).unwrap();
        assert_eq!(back, text);
        let spelled = format!("\"{}\"", std::str::from_utf8(&escaped).unwrap());
        assert_eq!(
            serde_json::from_str::<String>(&spelled).unwrap().as_bytes(),
            &text[..]
        );
    }
}
