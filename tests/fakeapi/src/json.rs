//! A JSON writer that reproduces the kube-apiserver's output: Go struct field order for the
//! well-known parts of an object (`kind`, `apiVersion`, `metadata`, ..., `status`), Go's string
//! escaping (`<`, `>`, `&` as `\u003c`...), compact (watch frames, `{...}\n` bodies) or indented
//! with two spaces (what the server answers to curl).
//!
//! `serde_json::Value` keeps object keys sorted unless `preserve_order` is on, so the order is
//! chosen here from the position of the object in the document.

use serde_json::{Map, Value};
use std::fmt::Write as _;

/// Where an object sits, which decides the order of its keys.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Ctx {
    /// A whole object: a resource, a list, a Status, a discovery document.
    Top,
    /// ObjectMeta / ListMeta.
    Meta,
    /// One managedFields entry.
    Managed,
    /// StatusDetails.
    Details,
    /// StatusCause.
    Cause,
    /// APIGroup in an APIGroupList.
    Group,
    /// APIResource in an APIResourceList.
    ApiRes,
    /// Anything else: `name` first, then the rest sorted.
    Other,
    /// A stored object as the test gave it: serialized exactly as `serde_json` does (its map
    /// order, its escaping), so `serde_json::to_vec(&api.get(..))` equals the bytes on the wire.
    Plain,
}

const TOP_HEAD: &[&str] = &["kind", "apiVersion", "groupVersion", "metadata", "versions"];
const TOP_TAIL: &[&str] = &["status", "message", "reason", "details", "code"];
const META: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
    "continue",
    "remainingItemCount",
];
const MANAGED: &[&str] = &[
    "manager",
    "operation",
    "apiVersion",
    "time",
    "fieldsType",
    "fieldsV1",
    "subresource",
];
const DETAILS: &[&str] = &[
    "name",
    "group",
    "kind",
    "uid",
    "causes",
    "retryAfterSeconds",
];
const CAUSE: &[&str] = &["reason", "message", "field"];
const GROUP: &[&str] = &["name", "versions", "preferredVersion"];
const APIRES: &[&str] = &[
    "name",
    "singularName",
    "namespaced",
    "group",
    "version",
    "kind",
    "verbs",
    "shortNames",
    "categories",
    "storageVersionHash",
];
const OTHER: &[&str] = &["name"];

fn order(ctx: Ctx) -> (&'static [&'static str], &'static [&'static str]) {
    match ctx {
        Ctx::Top => (TOP_HEAD, TOP_TAIL),
        Ctx::Meta => (META, &[]),
        Ctx::Managed => (MANAGED, &[]),
        Ctx::Details => (DETAILS, &[]),
        Ctx::Cause => (CAUSE, &[]),
        Ctx::Group => (GROUP, &[]),
        Ctx::ApiRes => (APIRES, &[]),
        Ctx::Other => (OTHER, &[]),
        Ctx::Plain => (&[], &[]),
    }
}

fn child(ctx: Ctx, key: &str) -> Ctx {
    match (ctx, key) {
        (Ctx::Top, "metadata") => Ctx::Meta,
        (Ctx::Top, "details") => Ctx::Details,
        (Ctx::Plain, _) | (Ctx::Top, "items") => Ctx::Plain,
        (Ctx::Top, "groups") => Ctx::Group,
        (Ctx::Top, "resources") => Ctx::ApiRes,
        (Ctx::Meta, "managedFields") => Ctx::Managed,
        (Ctx::Details, "causes") => Ctx::Cause,
        _ => Ctx::Other,
    }
}

fn ordered(m: &Map<String, Value>, ctx: Ctx) -> Vec<(&String, &Value)> {
    let (head, tail) = order(ctx);
    let mut out = Vec::with_capacity(m.len());
    for k in head {
        if let Some(kv) = m.get_key_value(*k) {
            out.push(kv);
        }
    }
    for (k, v) in m {
        if !head.contains(&k.as_str()) && !tail.contains(&k.as_str()) {
            out.push((k, v));
        }
    }
    for k in tail {
        if let Some(kv) = m.get_key_value(*k) {
            out.push(kv);
        }
    }
    out
}

/// Compact JSON, no trailing newline.
pub(crate) fn compact(v: &Value, ctx: Ctx) -> String {
    let mut out = String::new();
    write_value(&mut out, v, ctx, None);
    out
}

/// Indented JSON (two spaces, `"key": value`), no trailing newline, like Go's MarshalIndent.
pub(crate) fn pretty(v: &Value, ctx: Ctx) -> String {
    let mut out = String::new();
    write_value(&mut out, v, ctx, Some(0));
    out
}

/// The body of a non-streamed response: indented without a final newline (curl), or compact
/// with one (Go's `json.Encoder`).
pub(crate) fn body(v: &Value, ctx: Ctx, indent: bool) -> Vec<u8> {
    if indent {
        pretty(v, ctx).into_bytes()
    } else {
        let mut s = compact(v, ctx);
        s.push('\n');
        s.into_bytes()
    }
}

fn newline(out: &mut String, depth: usize) {
    out.push('\n');
    for _ in 0..depth {
        out.push_str("  ");
    }
}

fn write_value(out: &mut String, v: &Value, ctx: Ctx, depth: Option<usize>) {
    if ctx == Ctx::Plain && depth.is_none() {
        // Serializing a Value into a String cannot fail.
        out.push_str(&serde_json::to_string(v).unwrap_or_default());
        return;
    }
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            let _ = write!(out, "{n}");
        }
        Value::String(s) => write_str(out, s),
        Value::Array(a) => {
            if a.is_empty() {
                out.push_str("[]");
                return;
            }
            out.push('[');
            for (i, item) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if let Some(d) = depth {
                    newline(out, d + 1);
                }
                write_value(out, item, ctx, depth.map(|d| d + 1));
            }
            if let Some(d) = depth {
                newline(out, d);
            }
            out.push(']');
        }
        Value::Object(m) => {
            if m.is_empty() {
                out.push_str("{}");
                return;
            }
            out.push('{');
            for (i, (k, item)) in ordered(m, ctx).into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if let Some(d) = depth {
                    newline(out, d + 1);
                }
                write_str(out, k);
                out.push(':');
                if depth.is_some() {
                    out.push(' ');
                }
                write_value(out, item, child(ctx, k), depth.map(|d| d + 1));
            }
            if let Some(d) = depth {
                newline(out, d);
            }
            out.push('}');
        }
    }
}

/// A JSON string escaped as Go's encoding/json does it (HTML-safe).
pub(crate) fn write_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A string as a JSON string literal.
pub(crate) fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    write_str(&mut out, s);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn status_key_order_matches_capture() {
        let v = json!({"code":401,"reason":"Unauthorized","message":"Unauthorized","status":"Failure","metadata":{},"apiVersion":"v1","kind":"Status"});
        // Byte for byte f-401-bad-token.json.
        let real = "{\n  \"kind\": \"Status\",\n  \"apiVersion\": \"v1\",\n  \"metadata\": {},\n  \"status\": \"Failure\",\n  \"message\": \"Unauthorized\",\n  \"reason\": \"Unauthorized\",\n  \"code\": 401\n}";
        assert_eq!(real.len(), 157);
        assert_eq!(pretty(&v, Ctx::Top), real);
        assert_eq!(
            compact(&v, Ctx::Top),
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}"#
        );
    }

    #[test]
    fn escapes_like_go() {
        assert_eq!(
            quote("a<b>&\"\\\n\u{0}"),
            r#""a\u003cb\u003e\u0026\"\\\n\u0000""#
        );
    }

    #[test]
    fn plain_objects_are_serde_json_bytes() {
        let v = json!({"kind":"Pod","metadata":{"name":"a<b","labels":{"z":"1","a":"2"}},"apiVersion":"v1"});
        assert_eq!(compact(&v, Ctx::Plain), serde_json::to_string(&v).unwrap());
        let list = json!({"kind":"PodList","items":[v.clone()]});
        assert!(compact(&list, Ctx::Top).contains(&serde_json::to_string(&v).unwrap()));
        assert!(pretty(&list, Ctx::Top).contains("\"name\": \"a\\u003cb\""));
    }

    #[test]
    fn pretty_of_nested_and_empty() {
        let v = json!({"kind":"X","items":[],"metadata":{"resourceVersion":"1"}});
        assert_eq!(
            pretty(&v, Ctx::Top),
            "{\n  \"kind\": \"X\",\n  \"metadata\": {\n    \"resourceVersion\": \"1\"\n  },\n  \"items\": []\n}"
        );
    }
}
