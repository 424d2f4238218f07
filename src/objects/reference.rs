//! The property test of the scrubber: random objects through the byte walk
//! (`scrub::edit`) and through a reference written apart from it — its own
//! parser into a tree that keeps duplicate keys and each string's spelling,
//! the policy applied to that tree — compared as trees.

use super::edits::{Edits, MAX_DEPTH};
use super::policy::{KAPP_ORIGINAL, LAST_APPLIED, MAX_COPY_DEPTH};

/// JSON as the reference reads it: members in order, duplicates kept;
/// strings and keys as spelled between their quotes; numbers and literals
/// as spelled. `Held` is only in what the reference expects: a string that
/// holds this tree as JSON.
#[derive(Debug, Clone)]
enum J {
    Obj(Vec<(String, J)>),
    Arr(Vec<J>),
    Str(String),
    Other(String),
    Held(Box<J>),
}

/// A string's text, unescaped; `None` when it is not a string (a lone
/// surrogate escape), as serde_json reads it.
fn text(raw: &str) -> Option<String> {
    serde_json::from_str::<String>(&format!("\"{raw}\"")).ok()
}

/// The reference's parser: one JSON object, nested at most `MAX_DEPTH`
/// deep (its recursion bounded so).
struct Parser<'a> {
    b: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn parse(b: &[u8]) -> Option<J> {
        let mut p = Parser { b, i: 0 };
        p.ws();
        if p.b.get(p.i) != Some(&b'{') {
            return None;
        }
        let v = p.value(1)?;
        p.ws();
        (p.i == b.len()).then_some(v)
    }

    fn ws(&mut self) {
        while matches!(self.b.get(self.i), Some(b' ' | b'\n' | b'\r' | b'\t')) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        self.ws();
        (self.b.get(self.i) == Some(&c)).then(|| self.i += 1)
    }

    fn value(&mut self, depth: usize) -> Option<J> {
        self.ws();
        match *self.b.get(self.i)? {
            b'{' | b'[' if depth > MAX_DEPTH => None,
            b'{' => {
                self.i += 1;
                let mut members = Vec::new();
                if self.eat(b'}').is_some() {
                    return Some(J::Obj(members));
                }
                loop {
                    self.ws();
                    let k = self.string()?;
                    text(&k)?; // a key that is no string is no JSON
                    self.eat(b':')?;
                    members.push((k, self.value(depth + 1)?));
                    if self.eat(b',').is_none() {
                        self.eat(b'}')?;
                        return Some(J::Obj(members));
                    }
                }
            }
            b'[' => {
                self.i += 1;
                let mut items = Vec::new();
                if self.eat(b']').is_some() {
                    return Some(J::Arr(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    if self.eat(b',').is_none() {
                        self.eat(b']')?;
                        return Some(J::Arr(items));
                    }
                }
            }
            b'"' => self.string().map(J::Str),
            _ => {
                let start = self.i;
                for word in ["true", "false", "null"] {
                    if self.b[self.i..].starts_with(word.as_bytes()) {
                        self.i += word.len();
                        return Some(J::Other(word.into()));
                    }
                }
                self.number()?;
                Some(J::Other(
                    String::from_utf8(self.b[start..self.i].to_vec()).ok()?,
                ))
            }
        }
    }

    /// A string's spelling; escapes checked for their form only.
    fn string(&mut self) -> Option<String> {
        if self.b.get(self.i) != Some(&b'"') {
            return None;
        }
        let start = self.i + 1;
        let mut i = start;
        loop {
            match *self.b.get(i)? {
                b'"' => break,
                b'\\' => match *self.b.get(i + 1)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                    b'u' if self.b.get(i + 2..i + 6)?.iter().all(u8::is_ascii_hexdigit) => i += 6,
                    _ => return None,
                },
                c if c < 0x20 => return None,
                _ => i += 1,
            }
        }
        self.i = i + 1;
        String::from_utf8(self.b[start..i].to_vec()).ok()
    }

    fn number(&mut self) -> Option<()> {
        let b = self.b;
        let digits = |i: &mut usize| {
            let from = *i;
            while b.get(*i).is_some_and(u8::is_ascii_digit) {
                *i += 1;
            }
            *i > from
        };
        let mut i = self.i;
        if b.get(i) == Some(&b'-') {
            i += 1;
        }
        match b.get(i)? {
            b'0' => i += 1,
            b'1'..=b'9' => {
                digits(&mut i);
            }
            _ => return None,
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i).then_some(())?;
        }
        if matches!(b.get(i), Some(b'e' | b'E')) {
            i += 1;
            if matches!(b.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            digits(&mut i).then_some(())?;
        }
        self.i = i;
        Some(())
    }
}

/// Where a value sits, for the reference's rules.
#[derive(Clone, Copy, PartialEq, Eq)]
enum At {
    Root,
    Metadata,
    Annotations,
    EnvArray,
    EnvItem,
    SecretMap,
    Elsewhere,
}

/// What the walker must make of `j`, at `at`, `copies` copies deep (the
/// rules of docs/security.md, stated over a tree).
fn expect(j: &J, at: At, e: Edits, copies: usize) -> J {
    let redacted = |v: &J| match v {
        J::Other(n) if n == "null" => v.clone(),
        _ => J::Str("REDACTED".into()),
    };
    let any = e.scrub || e.secret_data;
    match j {
        J::Obj(members) => J::Obj(
            members
                .iter()
                .filter(|(k, _)| {
                    !(at == At::Metadata
                        && e.drop_managed_fields
                        && copies == 0
                        && text(k).as_deref() == Some("managedFields"))
                })
                .map(|(k, v)| {
                    let key = text(k).unwrap_or_default();
                    let is = |name: &[u8]| key.as_bytes() == name;
                    let v = if (at == At::EnvItem && key == "value")
                        || at == At::SecretMap
                        || at == At::EnvArray
                    {
                        redacted(v)
                    } else if e.scrub && key == "env" {
                        expect(v, At::EnvArray, e, copies)
                    } else if any && key == "annotations" {
                        expect(v, At::Annotations, e, copies)
                    } else if any
                        && at == At::Annotations
                        && (is(LAST_APPLIED) || is(KAPP_ORIGINAL))
                    {
                        expect_copy(v, e, copies + 1)
                    } else if at == At::Root && key == "metadata" {
                        expect(v, At::Metadata, e, copies)
                    } else if e.secret_data
                        && at == At::Root
                        && (key == "data" || key == "stringData")
                    {
                        expect(v, At::SecretMap, e, copies)
                    } else {
                        expect(v, At::Elsewhere, e, copies)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        J::Arr(items) => {
            let at = if at == At::EnvArray {
                At::EnvItem
            } else {
                At::Elsewhere
            };
            J::Arr(items.iter().map(|x| expect(x, at, e, copies)).collect())
        }
        _ => j.clone(),
    }
}

thread_local! {
    /// Copies the reference withheld, for the generator's check.
    static WITHHELD: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// A copy of the object, `depth` copies deep: read and scrubbed, or
/// withheld.
fn expect_copy(v: &J, e: Edits, depth: usize) -> J {
    let J::Str(raw) = v else {
        return expect(v, At::Elsewhere, e, depth - 1);
    };
    let withheld = || {
        WITHHELD.with(|n| n.set(n.get() + 1));
        J::Str("REDACTED".into())
    };
    if depth > MAX_COPY_DEPTH {
        return withheld();
    }
    let Some(inner) = text(raw).and_then(|t| Parser::parse(t.as_bytes())) else {
        return withheld();
    };
    let e = Edits {
        drop_managed_fields: false,
        ..e
    };
    J::Held(Box::new(expect(&inner, At::Root, e, depth)))
}

/// `got` is what `want` says: strings compared by their text, a held tree
/// by the JSON its string holds.
fn same(want: &J, got: &J) -> bool {
    let t = |raw: &String| text(raw).unwrap_or_else(|| raw.clone());
    match (want, got) {
        (J::Obj(a), J::Obj(b)) => {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|((ka, va), (kb, vb))| t(ka) == t(kb) && same(va, vb))
        }
        (J::Arr(a), J::Arr(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y)),
        (J::Str(a), J::Str(b)) => t(a) == t(b),
        (J::Other(a), J::Other(b)) => a == b,
        (J::Held(inner), J::Str(b)) => text(b)
            .and_then(|t| Parser::parse(t.as_bytes()))
            .is_some_and(|got| same(inner, &got)),
        _ => false,
    }
}

// The generator and the test.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::annotation_copies::tests::both_ways_agree;
    use crate::objects::scrub::edit;

    /// What the cases exercised, counted in the expectation.
    #[derive(Default, Debug)]
    struct Seen {
        redacted: usize,
        held: usize,
        held_in_held: usize,
        withheld: usize,
    }

    fn count(j: &J, held: usize, seen: &mut Seen) {
        match j {
            J::Obj(m) => m.iter().for_each(|(_, v)| count(v, held, seen)),
            J::Arr(a) => a.iter().for_each(|v| count(v, held, seen)),
            J::Str(s) if s == "REDACTED" => seen.redacted += 1,
            J::Held(inner) => {
                seen.held += 1;
                seen.held_in_held += usize::from(held > 0);
                count(inner, held + 1, seen);
            }
            _ => {}
        }
    }

    fn next(rng: &mut u64) -> u64 {
        *rng ^= *rng << 13;
        *rng ^= *rng >> 7;
        *rng ^= *rng << 17;
        *rng
    }

    fn pick<'a>(rng: &mut u64, of: &[&'a str]) -> &'a str {
        of[(next(rng) % of.len() as u64) as usize]
    }

    /// `text` as a JSON string, each character spelled one of the ways JSON
    /// allows, at random (`\u` escapes in either case, surrogate pairs, `\/`).
    fn spell(text: &str, rng: &mut u64) -> String {
        let mut out = String::from("\"");
        for c in text.chars() {
            let n = next(rng) % 10;
            match c {
                '"' if n < 7 => out.push_str("\\\""),
                '\\' if n < 7 => out.push_str("\\\\"),
                '\n' if n < 7 => out.push_str("\\n"),
                '/' if n < 2 => out.push_str("\\/"),
                c if n < 1 || c < ' ' || c == '"' || c == '\\' => {
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

    /// Keys, some spelled with escapes, some almost the policy's.
    const KEYS: &[&str] = &[
        r#""env""#,
        r#""\u0065nv""#,
        r#""e\u006Ev""#,
        r#""value""#,
        r#""v\u0061lue""#,
        r#""valueFrom""#,
        r#""name""#,
        r#""containers""#,
        r#""spec""#,
        r#""template""#,
        r#""steps""#,
        r#""driver""#,
        r#""main""#,
        r#""metadata""#,
        r#""annotations""#,
        r#""\u0061nnotations""#,
        r#""data""#,
        r#""stringData""#,
        r#""kind""#,
        r#""labels""#,
        r#""envs""#,
        r#""Env""#,
        r#""values""#,
        r#""a\"b\\c""#,
    ];

    /// A random JSON value (its text), `copies` copies deep.
    fn value(rng: &mut u64, depth: u32, copies: usize) -> String {
        let n = next(rng) % 16;
        if depth == 0 || n < 4 {
            return scalar(rng);
        }
        match n {
            4..=6 => {
                let len = next(rng) % 4;
                let items: Vec<String> = (0..len).map(|_| value(rng, depth - 1, copies)).collect();
                format!("[{}]", items.join(","))
            }
            7 => env(rng, depth, copies),
            8 if copies < MAX_COPY_DEPTH + 2 => annotations(rng, depth, copies),
            _ => object(rng, depth, copies),
        }
    }

    fn scalar(rng: &mut u64) -> String {
        let n = next(rng);
        match n % 8 {
            0 => format!("\"s3cret-{}\"", n % 1000),
            1 => spell(&format!("s3\"c\\r\u{1}\u{e9}\u{1f600}\n/{}", n % 100), rng),
            2 => (n % 1000).to_string(),
            3 => "null".into(),
            4 => if n % 2 == 0 { "true" } else { "false" }.into(),
            5 => "\"REDACTED\"".into(),
            6 => "-1.5e3".into(),
            _ => "\"\\ud800 lone\"".into(),
        }
    }

    fn object(rng: &mut u64, depth: u32, copies: usize) -> String {
        let len = 1 + next(rng) % 4;
        let mut members = Vec::new();
        let mut last = pick(rng, KEYS);
        for _ in 0..len {
            // Now and then the same key twice.
            let k = if next(rng) % 5 == 0 {
                last
            } else {
                pick(rng, KEYS)
            };
            last = k;
            members.push(format!("{k}:{}", value(rng, depth - 1, copies)));
        }
        format!("{{{}}}", members.join(","))
    }

    /// An `env` array: EnvVar-like items in any key order, and other items.
    fn env(rng: &mut u64, depth: u32, copies: usize) -> String {
        let key = pick(rng, &[r#""env""#, r#""\u0065nv""#]);
        let len = next(rng) % 4;
        let items: Vec<String> = (0..len)
            .map(|_| match next(rng) % 5 {
                0 => value(rng, depth - 1, copies),
                1 => r#"{"valueFrom":{"secretKeyRef":{"name":"s","key":"k"}},"name":"N"}"#
                    .to_string(),
                2 => format!(
                    r#"{{"value":{},"name":"A","value":{}}}"#,
                    scalar(rng),
                    scalar(rng)
                ),
                _ => format!(
                    r#"{{"name":"A","v\u0061lue":{}}}"#,
                    value(rng, depth - 1, copies)
                ),
            })
            .collect();
        if next(rng) % 4 == 0 {
            // Written as a map (Helm values): every value goes.
            let members: Vec<String> = items
                .iter()
                .enumerate()
                .map(|(i, v)| format!("\"K{i}\":{v}"))
                .collect();
            return format!("{{{key}:{{{}}}}}", members.join(","));
        }
        format!("{{{key}:[{}]}}", items.join(","))
    }

    /// An `annotations` map with copies (readable, nested, or not) and others.
    fn annotations(rng: &mut u64, depth: u32, copies: usize) -> String {
        let len = 1 + next(rng) % 3;
        let members: Vec<String> = (0..len)
            .map(|_| {
                let key = pick(
                    rng,
                    &[
                        "\"kubectl.kubernetes.io/last-applied-configuration\"",
                        "\"kubectl.kubernetes.io\\/last-applied-configuration\"",
                        "\"kapp.k14s.io/original\"",
                        "\"kapp.k14s.io\\u002foriginal\"",
                        "\"other\"",
                    ],
                );
                format!("{key}:{}", copy(rng, depth, copies))
            })
            .collect();
        format!("{{\"annotations\":{{{}}}}}", members.join(","))
    }

    /// An annotation's value: most often a copy of an object (itself with
    /// copies now and then), else text that cannot be read as one.
    fn copy(rng: &mut u64, depth: u32, copies: usize) -> String {
        let text = match next(rng) % 100 {
            0..=2 => pick(rng, &["not json", "[1,2]", "\"a string\"", ""]).to_string(),
            3 => format!(
                "{{\"env\":{}1{}}}",
                "[".repeat(MAX_DEPTH),
                "]".repeat(MAX_DEPTH)
            ),
            4 => format!(
                "{{\"a\":{}1{}}}",
                "[".repeat(MAX_DEPTH - 2),
                "]".repeat(MAX_DEPTH - 2)
            ),
            5..=12 => {
                // Cut short.
                let whole = object(rng, depth.max(2), copies + 1);
                let mut cut = whole.len() / 2;
                while !whole.is_char_boundary(cut) {
                    cut -= 1;
                }
                whole[..cut].to_string()
            }
            13..=17 => return "{\"held\":1}".into(),
            _ => object(rng, depth.max(2), copies + 1),
        };
        let mut spelled = spell(&text, rng);
        if next(rng) % 15 == 0 {
            let at = spelled.len() - 1;
            spelled.insert_str(at, pick(rng, &["\\udc00", "\\ud800", "\\ud800\\u0041"]));
        }
        spelled
    }

    /// An object with none of what the walk as it stands leaves to the
    /// general way: no escaped key, no copy.
    fn plain(rng: &mut u64, depth: u32) -> String {
        let keys = [
            "\"env\"",
            "\"value\"",
            "\"name\"",
            "\"spec\"",
            "\"containers\"",
            "\"data\"",
            "\"x\"",
        ];
        let len = 1 + next(rng) % 4;
        let members: Vec<String> = (0..len)
            .map(|_| {
                let k = pick(rng, &keys);
                let v = match next(rng) % 4 {
                    _ if depth == 0 => scalar(rng),
                    0 => scalar(rng),
                    1 => format!("[{},{}]", plain(rng, depth - 1), scalar(rng)),
                    _ => plain(rng, depth - 1),
                };
                format!("{k}:{v}")
            })
            .collect();
        format!("{{{}}}", members.join(","))
    }

    /// A case: the object's bytes, and the edits. The root copy, when there
    /// is one, comes first (for `both_ways_agree`).
    fn case(rng: &mut u64, i: usize) -> (String, Edits, bool) {
        let body = object(rng, 6, 0);
        let root_copy = i % 3 == 0;
        let obj = if root_copy {
            // Half spelled as Go and serde_json spell it, which the walk as it
            // stands reads.
            let copy = if i % 2 == 0 {
                serde_json::to_string(&plain(rng, 5)).unwrap()
            } else {
                let text = object(rng, 5, 1);
                spell(&text, rng)
            };
            format!(
                "{{\"metadata\":{{\"annotations\":{{\"kubectl.kubernetes.io/last-applied-configuration\":{copy}}}}},\"spec\":{body}}}"
            )
        } else {
            body
        };
        let edits = Edits {
            scrub: i % 7 != 3,
            secret_data: i % 4 == 0,
            drop_managed_fields: i % 5 == 0,
        };
        (obj, edits, root_copy)
    }

    #[test]
    fn the_byte_scrubber_agrees_with_an_independent_reference_on_random_objects() {
        // The reference recurses as deep as a copy nests (10,000 at most).
        std::thread::Builder::new()
            .stack_size(256 << 20)
            .spawn(property)
            .unwrap()
            .join()
            .unwrap();
    }

    fn property() {
        const SEED: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut seen = Seen::default();
        let (mut as_is, mut changed) = (0, 0);
        for i in 0..4000 {
            let seed = SEED ^ (i as u64).wrapping_mul(0x2545_F491_4F6C_DD1D);
            let mut rng = seed | 1;
            let (obj, edits, root_copy) = case(&mut rng, i);
            let input = Parser::parse(obj.as_bytes()).unwrap_or_else(|| {
                panic!("case {i} (seed {seed:#x}): the generator wrote no JSON: {obj}")
            });
            let want = expect(&input, At::Root, edits, 0);
            let out = edit(obj.as_bytes(), edits)
                .unwrap_or_else(|e| panic!("case {i} (seed {seed:#x}): {e:?} for {obj}"));
            changed += usize::from(out.is_some());
            let out = out.map_or(obj.clone(), |o| String::from_utf8(o).expect("UTF-8 out"));
            let got = Parser::parse(out.as_bytes()).unwrap_or_else(|| {
                panic!("case {i} (seed {seed:#x}): not JSON out: {out}\nin: {obj}")
            });
            assert!(
                same(&want, &got),
                "case {i} (seed {seed:#x}), {edits:?}\nin:   {obj}\nout:  {out}\nwant: {want:?}"
            );
            if root_copy && edits.scrub {
                as_is += usize::from(both_ways_agree(obj.as_bytes(), edits));
            }
            count(&want, 0, &mut seen);
        }
        seen.withheld = WITHHELD.with(|n| n.get());
        assert!(
            changed > 2000
                && seen.redacted > 10_000
                && seen.held > 3000
                && seen.held_in_held > 1000
                && seen.withheld > 1000
                && as_is > 200,
            "the generator exercises redaction, copies read, nested and withheld, and the walk \
             of a copy as it stands: {seen:?}, {changed} changed, {as_is} walked as they stand"
        );
    }
}
