//! Annotations that hold a copy of the object (`kubectl`'s last-applied
//! configuration, kapp's original): the policy says which, and that a copy
//! is scrubbed by the same rules as the object, or withheld whole when it
//! cannot be read. A copy is a JSON string; what its walk redacts is
//! redacted in place, spelled as the string spells its text, so the rest of
//! it is neither re-escaped nor copied twice. A copy inside a copy is read
//! the same way, to the policy's depth.

use std::borrow::Cow;

use super::edits::Edits;
use super::lexer::{escape_into, unescape};
use super::policy::{State, MAX_COPY_DEPTH};
use super::reuse::Reuse;
use super::walk::{Edit, Walker, ESCAPED_REDACTED, REDACTED_JSON};

/// The edits that scrub the copy held by the JSON string `src[start..end]`
/// (quotes included), `depth` copies deep; `None` when it is to be withheld
/// whole: not one JSON object, nested too deep, holding a lone surrogate
/// escape, or a copy deeper than [`MAX_COPY_DEPTH`]. A readable copy with
/// nothing to redact has no edits; an unreadable one is never let through.
pub(super) fn edits(
    src: &[u8],
    start: usize,
    end: usize,
    edits: Edits,
    depth: usize,
    reuse: &mut Reuse,
) -> Option<Vec<Edit>> {
    if depth > MAX_COPY_DEPTH {
        return None;
    }
    let edits = Edits {
        drop_managed_fields: false,
        ..edits
    };
    as_is(src, start, end, edits, depth, reuse)
        .or_else(|| unescaped(src, start, end, edits, depth, reuse))
}

/// What becomes of a copy whose text is known unescaped (the one pass over
/// a protobuf object, `wire::proto_json`, has the annotation's value before
/// writing it as a JSON string).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum CopyText {
    /// Nothing in it to redact: written as it is.
    Unchanged,
    /// The text with its values redacted, to be written as a string.
    Redacted(Vec<u8>),
    /// Not one JSON object, or nested too deep: withheld whole.
    Withheld,
    /// A copy inside it has edits that only the escaped text spells (see
    /// [`unescaped`]): the caller takes the general way.
    Nested,
}

/// The copy held by an annotation of the object itself (one copy deep),
/// `text` its unescaped, valid UTF-8 value: the same edits [`edits`] makes
/// in the escaped string, made in the text. Escaping the result as Go does
/// gives what [`edits`] gives, since escaping is byte by byte and every
/// edit here replaces a whole token by `"REDACTED"`; the edits of a copy
/// inside this one are not such, and are left to the general way.
/// A `Redacted` text's buffer comes from `reuse`: give it back once written.
pub(crate) fn copy_text(text: &[u8], edits: Edits, reuse: &mut Reuse) -> CopyText {
    let edits = Edits {
        drop_managed_fields: false,
        ..edits
    };
    let mut w = Walker::<false>::new(text, 0, edits, State::Root, 1, reuse);
    if w.run().is_err() {
        return CopyText::Withheld;
    }
    if w.redacted.is_empty() {
        return CopyText::Unchanged;
    }
    if w.redacted
        .iter()
        .any(|(_, _, with)| **with != *REDACTED_JSON)
    {
        return CopyText::Nested;
    }
    let mut out = w.reuse.bytes();
    out.reserve(text.len() + 16);
    let mut copied = 0;
    for (from, to, with) in &w.redacted {
        out.extend_from_slice(&text[copied..*from]);
        out.extend_from_slice(with);
        copied = *to;
    }
    out.extend_from_slice(&text[copied..]);
    CopyText::Redacted(out)
}

/// The edits, found by walking the text as it stands (no unescaping); `None`
/// when that walk cannot tell (see the lexer's `ESC`), a copy inside this
/// one among what it cannot.
pub(super) fn as_is(
    src: &[u8],
    start: usize,
    end: usize,
    edits: Edits,
    depth: usize,
    reuse: &mut Reuse,
) -> Option<Vec<Edit>> {
    let mut w = Walker::<true>::new(&src[..end - 1], start + 1, edits, State::Root, depth, reuse);
    w.run().ok()?;
    Some(w.take_redacted())
}

/// The same, found by unescaping the text, walking it, and finding the
/// edits it makes again in the escaped text (their bytes escaped); `None`
/// when the text is not one JSON object (or is nested too deep, or holds a
/// lone surrogate).
pub(super) fn unescaped(
    src: &[u8],
    start: usize,
    end: usize,
    edits: Edits,
    depth: usize,
    reuse: &mut Reuse,
) -> Option<Vec<Edit>> {
    let content = &src[start + 1..end - 1];
    let mut text = Vec::with_capacity(content.len() + 8);
    // (where in `text`, where in `content`) after each escape.
    let mut map = Vec::with_capacity(content.len() / 4);
    unescape(content, &mut text, Some(&mut map)).ok()?;
    let mut w = Walker::<false>::new(&text, 0, edits, State::Root, depth, reuse);
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
        w.take_redacted()
            .into_iter()
            .map(|(from, to, with)| {
                let with = if *with == *REDACTED_JSON {
                    Cow::Borrowed(ESCAPED_REDACTED)
                } else {
                    let mut escaped = Vec::with_capacity(with.len() + with.len() / 2);
                    escape_into(&with, &mut escaped);
                    Cow::Owned(escaped)
                };
                (at(from), at(to), with)
            })
            .collect(),
    )
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::objects::edits::Span;
    use crate::objects::lexer::Lexer;
    use crate::objects::policy::{KAPP_ORIGINAL, LAST_APPLIED};
    use crate::objects::scrub::edit;
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

    fn la() -> &'static str {
        std::str::from_utf8(LAST_APPLIED).unwrap()
    }

    fn kapp() -> &'static str {
        std::str::from_utf8(KAPP_ORIGINAL).unwrap()
    }

    fn last_applied(v: &Value) -> Value {
        held(&v["metadata"]["annotations"][la()])
    }

    /// An annotation's value, read as the JSON it holds when it does.
    fn held(v: &Value) -> Value {
        let text = v.as_str().unwrap();
        serde_json::from_str(text).unwrap_or(Value::String(text.into()))
    }

    fn edited(v: &Value, e: Edits) -> Value {
        let out = edit(&serde_json::to_vec(v).unwrap(), e).unwrap().unwrap();
        serde_json::from_slice(&out).expect("valid JSON out")
    }

    fn pod(n: usize) -> Value {
        json!({"kind":"Pod","metadata":{"name":"p"},
            "spec":{"containers":[{"name":"c","env":[{"name":"A","value":format!("s3cret-{n}")}]}]}})
    }

    #[test]
    fn kapp_originals_are_copies_like_last_applied() {
        let mut p = pod(0);
        p["metadata"]["annotations"] =
            json!({ kapp(): pod(1).to_string(), "other": pod(2).to_string() });
        let out = edited(&p, SCRUB);
        let original = held(&out["metadata"]["annotations"][kapp()]);
        assert_eq!(
            original["spec"]["containers"][0]["env"][0]["value"],
            "REDACTED"
        );
        assert_eq!(original["spec"]["containers"][0]["env"][0]["name"], "A");
        assert_eq!(
            out["metadata"]["annotations"]["other"],
            pod(2).to_string(),
            "other annotations stay"
        );
        let secret = json!({"kind":"Secret","data":{"pw":"czNjcmV0"},"stringData":{"t":"s3cret"}});
        let mut s = secret.clone();
        s["metadata"] =
            json!({"annotations":{ kapp(): secret.to_string(), la(): secret.to_string() }});
        let out = edited(&s, SECRET);
        assert!(
            !out.to_string().contains("czNjcmV0") && !out.to_string().contains("s3cret"),
            "{out}"
        );
        for copy in [kapp(), la()] {
            let held = held(&out["metadata"]["annotations"][copy]);
            assert_eq!(held["data"], json!({"pw":"REDACTED"}), "{copy}");
            assert_eq!(held["stringData"], json!({"t":"REDACTED"}), "{copy}");
        }
    }

    #[test]
    fn copies_in_template_annotations_are_read() {
        let mut template = pod(1);
        template["metadata"]["annotations"] = json!({ la(): pod(2).to_string() });
        let mut deployment = json!({"kind":"Deployment","spec":{"template":template}});
        deployment["metadata"] = json!({"annotations":{ la(): deployment.to_string() }});
        let out = edited(&deployment, SCRUB);
        assert!(!out.to_string().contains("s3cret"), "{out}");
        let inner = held(&out["spec"]["template"]["metadata"]["annotations"][la()]);
        assert_eq!(
            inner["spec"]["containers"][0]["env"][0]["value"],
            "REDACTED"
        );
        let copy = last_applied(&out);
        let in_copy = held(&copy["spec"]["template"]["metadata"]["annotations"][la()]);
        assert_eq!(
            in_copy["spec"]["containers"][0]["env"][0]["value"],
            "REDACTED"
        );
    }

    #[test]
    fn copies_in_copies_are_read_to_a_depth_then_withheld() {
        for (levels, escaped) in [
            (2, false),
            (MAX_COPY_DEPTH, false),
            (MAX_COPY_DEPTH, true),
            (MAX_COPY_DEPTH + 1, false),
            (MAX_COPY_DEPTH + 3, true),
        ] {
            // Level i holds level i + 1 in its last-applied annotation.
            let mut obj = pod(levels);
            for n in (0..levels).rev() {
                let mut outer = pod(n);
                outer["metadata"]["annotations"] = json!({ la(): obj.to_string() });
                obj = outer;
            }
            let mut bytes = serde_json::to_vec(&obj).unwrap();
            if escaped {
                // Every level's quotes spelled as JSON allows and serde_json does not write.
                bytes = String::from_utf8(bytes)
                    .unwrap()
                    .replace(r#"\""#, r"\u0022")
                    .into_bytes();
                assert_eq!(serde_json::from_slice::<Value>(&bytes).unwrap(), obj);
            }
            let out = edit(&bytes, SCRUB).unwrap().unwrap();
            let text = String::from_utf8_lossy(&out);
            assert!(!text.contains("s3cret"), "{levels} levels: {text}");
            let mut v: Value = serde_json::from_slice(&out).unwrap();
            for depth in 0..=levels.min(MAX_COPY_DEPTH) {
                assert_eq!(
                    v["spec"]["containers"][0]["env"][0]["value"], "REDACTED",
                    "{levels} levels, at {depth}"
                );
                if depth == levels {
                    break;
                }
                v = last_applied(&v);
            }
            if levels > MAX_COPY_DEPTH {
                assert_eq!(
                    v, "REDACTED",
                    "{levels} levels: the deepest read withholds its copy"
                );
            }
        }
    }

    /// The last-applied annotation of `obj` (its bytes) walked as it stands
    /// and unescaped: when the first can tell, it redacts what the second
    /// does (and perhaps a `"REDACTED"` spelled with escapes). True when it
    /// could tell.
    pub(in crate::objects) fn both_ways_agree(obj: &[u8], edits: Edits) -> bool {
        let key = format!("\"{}\":", std::str::from_utf8(LAST_APPLIED).unwrap());
        let start = memchr::memmem::find(obj, key.as_bytes()).unwrap() + key.len();
        let mut lx = Lexer::<false> {
            src: obj,
            pos: start,
        };
        lx.string().unwrap();
        let end = lx.pos;
        let edits = Edits {
            drop_managed_fields: false,
            ..edits
        };
        let spans = |e: Vec<Edit>| -> Vec<Span> {
            e.into_iter()
                .map(|(a, b, with)| {
                    assert_eq!(*with, *ESCAPED_REDACTED);
                    (a, b)
                })
                .collect()
        };
        let Some(fast) = as_is(obj, start, end, edits, 1, &mut Reuse::default()).map(spans) else {
            return false;
        };
        let general = unescaped(obj, start, end, edits, 1, &mut Reuse::default()).map(spans);
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
}
