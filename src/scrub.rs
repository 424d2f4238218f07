//! Byte-level shaping on the hot path: env values replaced and
//! managedFields removed by copying spans of the object as received, with no
//! intermediate `serde_json::Value`. The input is an object the decoder has
//! already parsed (valid JSON, nesting under serde_json's limit of 128).

/// Where a string is an env value: the key path (array levels skipped).
const ENV_PATHS: &[&[&[u8]]] = &[
    &[b"spec", b"*", b"env", b"value"],
    &[b"spec", b"template", b"spec", b"*", b"env", b"value"],
    &[
        b"spec",
        b"jobTemplate",
        b"spec",
        b"template",
        b"spec",
        b"*",
        b"env",
        b"value",
    ],
];
const CONTAINER_LISTS: &[&[u8]] = &[b"containers", b"initContainers", b"ephemeralContainers"];
const LAST_APPLIED: &[&[u8]] = &[
    b"metadata",
    b"annotations",
    b"kubectl.kubernetes.io/last-applied-configuration",
];
const MANAGED_FIELDS: &[&[u8]] = &[b"metadata", b"managedFields"];

/// What to change.
#[derive(Clone, Copy)]
pub(crate) struct Edits {
    pub scrub: bool,
    pub drop_managed_fields: bool,
}

/// The input was not the JSON it should be.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct NotJson;

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
pub(crate) fn edit(obj: &[u8], edits: Edits) -> Result<Option<Vec<u8>>, NotJson> {
    walk(obj, edits).map(|(edited, _)| edited)
}

/// One pass over an object: its structure checked, the edits made, and the
/// metadata strings located.
pub(crate) fn walk(obj: &[u8], edits: Edits) -> Result<(Option<Vec<u8>>, Found), NotJson> {
    let mut w = Walker {
        src: obj,
        pos: 0,
        out: Vec::new(),
        copied: 0,
        changed: false,
        edits,
        path: Vec::with_capacity(16),
        found: Found::default(),
    };
    w.ws();
    if !matches!(w.peek(), Ok(b'{')) {
        return Err(NotJson);
    }
    w.value().map_err(|Bad| NotJson)?;
    w.ws();
    if w.pos != obj.len() {
        return Err(NotJson);
    }
    if !w.changed {
        return Ok((None, w.found));
    }
    w.out.extend_from_slice(&obj[w.copied..]);
    Ok((Some(w.out), w.found))
}

struct Walker<'a> {
    src: &'a [u8],
    pos: usize,
    out: Vec<u8>,
    /// `src[..copied]` is already in `out` (edited).
    copied: usize,
    changed: bool,
    edits: Edits,
    /// Object keys from the root; arrays add nothing.
    path: Vec<&'a [u8]>,
    found: Found,
}

struct Bad;

impl<'a> Walker<'a> {
    /// Replaces `src[from..to]` with `with`.
    fn replace(&mut self, from: usize, to: usize, with: &[u8]) {
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
        self.src.get(self.pos).copied().ok_or(Bad)
    }

    fn value(&mut self) -> Result<(), Bad> {
        match self.peek()? {
            b'{' => self.object(),
            b'[' => self.array(),
            b'"' => {
                let start = self.pos;
                self.string()?;
                self.on_string(start, self.pos);
                Ok(())
            }
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            _ => self.number(),
        }
    }

    /// Skips a string, quotes included, checking its escapes and that it
    /// holds no raw control character (UTF-8 is checked by the caller).
    fn string(&mut self) -> Result<(), Bad> {
        self.pos += 1;
        loop {
            let rest = self.src.get(self.pos..).ok_or(Bad)?;
            self.pos += crate::util::find_string_special(rest).ok_or(Bad)?;
            match self.src[self.pos] {
                b'"' => {
                    self.pos += 1;
                    return Ok(());
                }
                b'\\' => match self.src.get(self.pos + 1) {
                    Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => self.pos += 2,
                    Some(b'u') => {
                        let hex = self.src.get(self.pos + 2..self.pos + 6).ok_or(Bad)?;
                        if !hex.iter().all(u8::is_ascii_hexdigit) {
                            return Err(Bad);
                        }
                        self.pos += 6;
                    }
                    _ => return Err(Bad),
                },
                _ => return Err(Bad), // a raw control character
            }
        }
    }

    fn literal(&mut self, word: &[u8]) -> Result<(), Bad> {
        if !self.src[self.pos..].starts_with(word) {
            return Err(Bad);
        }
        self.pos += word.len();
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
            _ => return Err(Bad),
        }
        if self.src.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            if digits(self) == 0 {
                return Err(Bad);
            }
        }
        if let Some(b'e' | b'E') = self.src.get(self.pos) {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.src.get(self.pos) {
                self.pos += 1;
            }
            if digits(self) == 0 {
                return Err(Bad);
            }
        }
        Ok(())
    }

    fn object(&mut self) -> Result<(), Bad> {
        self.pos += 1;
        self.ws();
        if self.peek()? == b'}' {
            self.pos += 1;
            return Ok(());
        }
        // Where a removed first member's cut starts, until the next comma.
        let mut cut_first: Option<usize> = None;
        let mut prev_end: Option<usize> = None;
        loop {
            self.ws();
            let key_start = self.pos;
            if self.peek()? != b'"' {
                return Err(Bad);
            }
            self.string()?;
            let key = &self.src[key_start + 1..self.pos - 1];
            self.ws();
            if self.peek()? != b':' {
                return Err(Bad);
            }
            self.pos += 1;
            self.ws();
            self.path.push(key);
            let remove = self.edits.drop_managed_fields && self.path_is(MANAGED_FIELDS);
            self.value()?;
            self.path.pop();
            let value_end = self.pos;
            if remove {
                match prev_end {
                    // `,"managedFields":[…]` goes, from the comma before it.
                    Some(p) => self.replace(p, value_end, b""),
                    None => cut_first = Some(key_start),
                }
            }
            self.ws();
            match self.peek()? {
                b',' => {
                    self.pos += 1;
                    if let Some(from) = cut_first.take() {
                        self.replace(from, self.pos, b"");
                    }
                    prev_end = Some(value_end);
                }
                b'}' => {
                    if let Some(from) = cut_first.take() {
                        self.replace(from, value_end, b"");
                    }
                    self.pos += 1;
                    return Ok(());
                }
                _ => return Err(Bad),
            }
        }
    }

    fn array(&mut self) -> Result<(), Bad> {
        self.pos += 1;
        self.ws();
        if self.peek()? == b']' {
            self.pos += 1;
            return Ok(());
        }
        loop {
            self.ws();
            self.value()?;
            self.ws();
            match self.peek()? {
                b',' => self.pos += 1,
                b']' => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return Err(Bad),
            }
        }
    }

    fn path_is(&self, want: &[&[u8]]) -> bool {
        self.path.len() == want.len()
            && self.path.iter().zip(want).all(|(have, w)| {
                if *w == b"*" {
                    CONTAINER_LISTS.contains(have)
                } else {
                    have == w
                }
            })
    }

    fn on_string(&mut self, start: usize, end: usize) {
        match self.path.as_slice() {
            [b"kind"] => self.found.kind = Some((start, end)),
            [b"metadata", field] => match *field {
                b"name" => self.found.name = Some((start, end)),
                b"namespace" => self.found.namespace = Some((start, end)),
                b"uid" => self.found.uid = Some((start, end)),
                b"resourceVersion" => self.found.resource_version = Some((start, end)),
                _ => {}
            },
            _ => {}
        }
        // Every path below ends in `value` or in the annotation's key: a cheap
        // test before comparing whole paths, which most strings fail.
        let last = self.path.last().copied().unwrap_or_default();
        if !self.edits.scrub || self.path.len() < 3 || (last != b"value" && last != LAST_APPLIED[2])
        {
            return;
        }
        if ENV_PATHS.iter().any(|p| self.path_is(p)) {
            if &self.src[start..end] != b"\"REDACTED\"" {
                self.replace(start, end, b"\"REDACTED\"");
            }
        } else if self.path_is(LAST_APPLIED) {
            // Without `\u` escapes, an "env" key inside shows as \"env\":
            // nothing to scrub without one (most applied objects hold no env).
            let raw = &self.src[start..end];
            if memchr::memmem::find(raw, br#"\"env\""#).is_none()
                && memchr::memmem::find(raw, br"\u").is_none()
            {
                return;
            }
            let Ok(text) = serde_json::from_slice::<String>(raw) else {
                return;
            };
            let inner = Edits {
                scrub: true,
                drop_managed_fields: false,
            };
            if let Ok(Some(scrubbed)) = edit(text.as_bytes(), inner) {
                let Ok(scrubbed) = String::from_utf8(scrubbed) else {
                    return;
                };
                let quoted = serde_json::to_vec(&scrubbed).expect("a string serialises");
                self.replace(start, end, &quoted);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    const SCRUB: Edits = Edits {
        scrub: true,
        drop_managed_fields: false,
    };

    fn edited(v: &Value, e: Edits) -> Option<Value> {
        edit(&serde_json::to_vec(v).unwrap(), e)
            .unwrap()
            .map(|b| serde_json::from_slice(&b).expect("valid JSON out"))
    }

    #[test]
    fn env_values_are_replaced_in_pods_templates_and_last_applied() {
        let env = serde_json::json!([{"name":"A","value":"s3cret \"quoted\" \\ \u{e9}"},{"name":"B","valueFrom":{"x":1}},{"value":"REDACTED","name":"C"}]);
        let spec = serde_json::json!({"containers":[{"env":env}],"initContainers":[{"env":env}],"ephemeralContainers":[{"env":env}],"volumes":[{"env":[{"value":"keep"}]}]});
        let applied = serde_json::json!({"spec":spec}).to_string();
        let pod = serde_json::json!({"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":applied}},"spec":spec});
        let out = edited(&pod, SCRUB).unwrap();
        let text = out.to_string();
        assert!(!text.contains("s3cret"));
        assert!(text.contains("keep"), "only container env is scrubbed");
        assert_eq!(
            out["spec"]["initContainers"][0]["env"][0]["value"],
            "REDACTED"
        );
        assert_eq!(out["spec"]["containers"][0]["env"][1]["valueFrom"]["x"], 1);
        let inner: Value = serde_json::from_str(
            out["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
                .as_str()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(
            inner["spec"]["ephemeralContainers"][0]["env"][0]["value"],
            "REDACTED"
        );
        for tpl in [
            serde_json::json!({"spec":{"template":{"spec":spec}}}),
            serde_json::json!({"spec":{"jobTemplate":{"spec":{"template":{"spec":spec}}}}}),
        ] {
            assert!(!edited(&tpl, SCRUB).unwrap().to_string().contains("s3cret"));
        }
    }

    #[test]
    fn last_applied_is_scrubbed_however_its_quotes_are_escaped() {
        let inner = r#"{"spec":{"containers":[{"env":[{"name":"A","value":"s3cret"}]}]}}"#;
        let pod = |annotation: &str| {
            format!(
                r#"{{"metadata":{{"annotations":{{"kubectl.kubernetes.io/last-applied-configuration":"{annotation}"}}}}}}"#
            )
        };
        for escaped in [inner.replace('"', r#"\""#), inner.replace('"', r"\u0022")] {
            let out = edit(pod(&escaped).as_bytes(), SCRUB).unwrap().unwrap();
            let out = String::from_utf8(out).unwrap();
            assert!(!out.contains("s3cret"), "{escaped}");
            assert!(out.contains("REDACTED"), "{escaped}");
        }
        let no_env = r#"{\"spec\":{\"containers\":[{\"name\":\"x\"}]}}"#;
        assert_eq!(edit(pod(no_env).as_bytes(), SCRUB), Ok(None));
    }

    #[test]
    fn nothing_to_do_is_none() {
        let v = serde_json::json!({"spec":{"containers":[{"env":[{"name":"A","value":"REDACTED"}]}]},"data":{"value":"x"}});
        assert_eq!(edited(&v, SCRUB), None);
        assert_eq!(edit(b"not json", SCRUB), Err(NotJson));
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
        ] {
            assert_eq!(
                edit(bad, SCRUB),
                Err(NotJson),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        for good in [
            &br#"{"a":[true,false,null,-0.5e+3,10,"\u00e9\n\"\\"],"b":{}}"#[..],
            br#"{ "a" : [ ] }"#,
        ] {
            assert_eq!(
                edit(good, SCRUB),
                Ok(None),
                "{}",
                String::from_utf8_lossy(good)
            );
        }
        assert_eq!(edit(b"{\"a\":1} trailing", SCRUB), Err(NotJson));
        assert_eq!(edit(b"{\"a\":\"unterminated", SCRUB), Err(NotJson));
    }

    #[test]
    fn managed_fields_are_cut_wherever_they_stand() {
        let e = Edits {
            scrub: false,
            drop_managed_fields: true,
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
        ] {
            let out = edit(input.as_bytes(), e).unwrap().unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), want);
        }
        assert_eq!(edit(br#"{"spec":{"managedFields":[]}}"#, e), Ok(None));
    }

    #[test]
    fn real_pods_match_the_value_based_scrubber() {
        let body = include_str!("../tests/wire/a-watchlist-pods.body.jsonl");
        for line in body.lines() {
            let ev: Value = serde_json::from_str(line).unwrap();
            let obj = serde_json::to_vec(&ev["object"]).unwrap();
            let both = Edits {
                scrub: true,
                drop_managed_fields: true,
            };
            let fast: Value = edit(&obj, both)
                .unwrap()
                .map(|b| serde_json::from_slice(&b).unwrap())
                .unwrap_or(ev["object"].clone());
            assert!(fast["metadata"].get("managedFields").is_none());
            assert!(
                !fast.to_string().contains("\"value\":\"")
                    || !fast["spec"]["containers"][0]["env"].is_array()
            );
        }
    }
}
