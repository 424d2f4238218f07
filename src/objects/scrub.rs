//! The one pass over an object: its JSON checked, the metadata tattler needs
//! located, and the edits made — secrets redacted, managedFields removed — by
//! copying spans of the object as received, with no `serde_json::Value`.
//!
//! This is tattler's only scrubber: every path (watch, LIST, relist, re-sync,
//! a transform, metadata-only objects) goes through it. What is redacted is
//! the policy's (`super::policy`, one short file); the pass is `super::walk`,
//! its tokens `super::lexer`, the annotations holding a copy of the object
//! `super::annotation_copies`. It is iterative: nesting costs a little heap, bounded by
//! [`MAX_DEPTH`](super::edits::MAX_DEPTH), never stack, so no object can overflow a thread's stack
//! however deep it is.
//!
//! Keys are compared after unescaping (`"\u0065nv"` is `env`).

use super::edits::{Bad, Edits, Found, Span};
use super::policy::State;
use super::reuse::Reuse;
use super::walk::Walker;

/// The edited object, or `None` when nothing changed.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn edit(obj: &[u8], edits: Edits) -> Result<Option<Vec<u8>>, Bad> {
    walk(obj, edits, &mut Reuse::default()).0
}

/// One pass over an object: its structure checked, the edits made, and the
/// metadata strings located (those before a failure too, to name the object
/// in an error). UTF-8 is the caller's check. Its working memory comes
/// from `reuse`, and goes back there.
pub(crate) fn walk(
    obj: &[u8],
    edits: Edits,
    reuse: &mut Reuse,
) -> (Result<Option<Vec<u8>>, Bad>, Found) {
    let mut w = Walker::<false>::new(obj, 0, edits, State::Root, 0, reuse);
    let result = w.run();
    let found = w.found;
    (result.map(|()| w.finish()), found)
}

/// One JSON value of any type (`src`, all of it), its structure checked and
/// the edits made as for a value in `state`: the raw JSON a protobuf
/// object holds (`wire::proto_json`), walked where it stands in the object.
pub(crate) fn walk_value(
    src: &[u8],
    edits: Edits,
    state: State,
    reuse: &mut Reuse,
) -> Result<Option<Vec<u8>>, Bad> {
    let mut w = Walker::<false>::new(src, 0, edits, state, 0, reuse);
    w.run_value()?;
    Ok(w.finish())
}

pub(crate) use super::annotation_copies::{copy_text, CopyText};
pub(crate) use super::walk::REDACTED_JSON;

/// The spans of `type` (a string, quotes included) and `object` (an object)
/// of a watch event in any member order and spacing, its structure checked.
pub(crate) fn envelope(frame: &[u8]) -> Result<(Option<Span>, Option<Span>), Bad> {
    let mut reuse = Reuse::default();
    let mut w = Walker::<false>::new(frame, 0, Edits::NONE, State::Envelope, 0, &mut reuse);
    w.run()?;
    Ok((w.envelope_type, w.envelope_object))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::objects::edits::MAX_DEPTH;
    use crate::objects::policy::LAST_APPLIED;
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
    fn env_values_are_redacted_wherever_an_env_list_is() {
        let env = json!([{"name":"A","value":"s3cret \"quoted\" \\ \u{e9}"},{"name":"B","valueFrom":{"x":1}},
            {"value":"REDACTED","name":"C"},{"name":"N","value":42},{"name":"O","value":{"k":["s3cret"]}},{"name":"Z","value":null}]);
        let spec = json!({"containers":[{"env":env}],"initContainers":[{"env":env}],"ephemeralContainers":[{"env":env}],
            "volumes":[{"envs":[{"value":"keep"}],"env":{"DB_PASSWORD":"s3cret","N":{"x":1},"Z":null}}]});
        let applied = json!({"spec":spec}).to_string();
        let pod = json!({"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":applied}},"spec":spec});
        let out = edited(&pod, SCRUB).unwrap();
        let text = out.to_string();
        assert!(!text.contains("s3cret"), "{text}");
        assert_eq!(
            out["spec"]["volumes"],
            json!([{"envs":[{"value":"keep"}],"env":{"DB_PASSWORD":"REDACTED","N":"REDACTED","Z":null}}]),
            "an env map's values go; a key that is not env stays"
        );
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
        let (edited, found) = walk(meta, Edits::NONE, &mut Reuse::default());
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
        // Unreadable, with no `env`, no escape, no `data` to make it look: withheld all the same.
        let no_env_cut = r#"{\"spec\":{\"containers\":[{\"name\":\"x\""#;
        // What cannot be read cannot be scrubbed: it is withheld whole.
        let deep = format!(r#"{{\"env\":{}"#, "[".repeat(20_000));
        let cut = r#"{\"spec\":{\"containers\":[{\"env\":[{\"value\":\"s3cret\""#.to_string();
        let too_deep = format!(
            r#"{{\"spec\":{{\"containers\":[{{\"env\":[{{\"value\":{}1{}}}]}}]}}}}"#,
            "[".repeat(MAX_DEPTH),
            "]".repeat(MAX_DEPTH)
        );
        for bad in [
            deep,
            cut,
            too_deep,
            no_env_cut.into(),
            "not json".into(),
            "[1]".into(),
        ] {
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
        let (_, f) = walk(obj, SCRUB, &mut Reuse::default());
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

    /// Every object item's `value` of every `env` array redacted (on a
    /// `Value`: these objects have no duplicate keys and no copies).
    fn env_redacted(v: &mut Value) {
        match v {
            Value::Array(items) => items.iter_mut().for_each(env_redacted),
            Value::Object(m) => {
                for (k, x) in m.iter_mut() {
                    if let (true, Value::Array(items)) = (k == "env", &mut *x) {
                        for item in items.iter_mut() {
                            if let Some(v) = item.get_mut("value").filter(|v| !v.is_null()) {
                                *v = json!("REDACTED");
                            }
                        }
                    }
                    env_redacted(x);
                }
            }
            _ => {}
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
            env_redacted(&mut want);
            if let Some(m) = want.get_mut("metadata").and_then(Value::as_object_mut) {
                m.shift_remove("managedFields");
            }
            let got = edited(&ev["object"], both).unwrap_or(ev["object"].clone());
            assert_eq!(got, want);
        }
    }
}
