//! Pure URL building for the requests tattler makes; no I/O here. A
//! request is built from a [`Collection`], the wire's own view of what is
//! asked for: this layer knows no configuration type.

use crate::wire::shard::Shard;

/// A collection as the server is asked for it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Collection<'a> {
    /// The API group (empty: the core group, under `/api`).
    pub group: &'a str,
    pub version: &'a str,
    /// The resource's plural name.
    pub resource: &'a str,
    /// The namespace, for a namespaced resource watched in one.
    pub namespace: Option<&'a str>,
    pub label_selector: Option<&'a str>,
    pub field_selector: Option<&'a str>,
    /// A shard of the collection (none, or the whole: everything).
    pub shard: Option<Shard>,
}

/// The collection path of a resource: `/api/v1/namespaces/ns/pods`,
/// `/apis/apps/v1/deployments`.
pub(crate) fn collection_path(spec: &Collection) -> String {
    let mut p = if spec.group.is_empty() {
        format!("/api/{}", spec.version)
    } else {
        format!("/apis/{}/{}", spec.group, spec.version)
    };
    if let Some(ns) = spec.namespace {
        p.push_str("/namespaces/");
        p.push_str(&encode(ns));
    }
    p.push('/');
    p.push_str(spec.resource);
    p
}

/// A watch-list: the full state as ADDED events, the initial-events-end
/// bookmark, then live changes. With `rv`, state not older than it.
pub(crate) fn watch_list(spec: &Collection, rv: Option<&str>, timeout_secs: u32) -> String {
    let mut q = format!(
        "{}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
        collection_path(spec)
    );
    if let Some(rv) = rv {
        q.push_str("&resourceVersion=");
        q.push_str(&encode(rv));
    }
    finish(q, spec, timeout_secs)
}

/// A plain watch of the changes after `rv`.
pub(crate) fn watch_from(spec: &Collection, rv: &str, timeout_secs: u32) -> String {
    let q = format!(
        "{}?watch=true&allowWatchBookmarks=true&resourceVersion={}",
        collection_path(spec),
        encode(rv)
    );
    finish(q, spec, timeout_secs)
}

/// One page of a LIST (`limit` 0: the whole list in one answer): a
/// consistent read (no resourceVersion), or with `rv`, what the watch cache
/// holds not older than it (`0`: anything).
pub(crate) fn list_page(
    spec: &Collection,
    limit: u32,
    continue_token: Option<&str>,
    rv: Option<&str>,
) -> String {
    let mut q = collection_path(spec);
    let mut sep = '?';
    let mut param = |q: &mut String, k: &str, v: &str| {
        q.push(sep);
        sep = '&';
        q.push_str(k);
        q.push('=');
        q.push_str(v);
    };
    if limit > 0 {
        param(&mut q, "limit", &limit.to_string());
    }
    if let Some(c) = continue_token {
        param(&mut q, "continue", &encode(c));
    }
    if let Some(rv) = rv {
        param(&mut q, "resourceVersion", &encode(rv));
        param(&mut q, "resourceVersionMatch", "NotOlderThan");
    }
    selectors_after(&mut q, sep, spec);
    q
}

/// The selectors of `spec` after a query that so far ends with `sep`
/// pending (`?` when it has no parameter yet).
fn selectors_after(q: &mut String, sep: char, spec: &Collection) {
    let mut s = String::new();
    selectors(&mut s, spec);
    if let Some(rest) = s.strip_prefix('&') {
        q.push(sep);
        q.push_str(rest);
    }
}

fn finish(mut q: String, spec: &Collection, timeout_secs: u32) -> String {
    selectors(&mut q, spec);
    q.push_str(&format!("&timeoutSeconds={timeout_secs}"));
    q
}

fn selectors(q: &mut String, spec: &Collection) {
    if let Some(s) = spec.label_selector {
        q.push_str("&labelSelector=");
        q.push_str(&encode(s));
    }
    if let Some(s) = spec.field_selector {
        q.push_str("&fieldSelector=");
        q.push_str(&encode(s));
    }
    // A server without ShardedListAndWatch ignores it (the sink filters).
    if let Some(s) = spec.shard.filter(|s| !s.is_whole()) {
        q.push_str("&shardSelector=");
        q.push_str(&encode(&s.selector()));
    }
}

/// Everything but RFC 3986 unreserved characters (`A-Z a-z 0-9 - . _ ~`).
const QUERY: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Percent-encodes everything but RFC 3986 unreserved characters.
pub(crate) fn encode(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, QUERY).to_string()
}

/// What a request asks for, which decides its `Accept` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Asking {
    /// A watch: its events' objects.
    Objects,
    /// A LIST page.
    List,
    /// A plain JSON document.
    Document,
    /// A discovery document, with its own `Accept`.
    Discovery(&'static str),
}

/// Only metadata, as `PartialObjectMetadata` (client-go's metadata client asks
/// the same); plain JSON from a server that cannot (full objects, then).
const METADATA: &str =
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";
const METADATA_LIST: &str =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
/// The same, protobuf first: it costs the apiserver about a quarter of the
/// CPU (see bench/README.md); tattler turns it into the same JSON. The
/// Content-Type says which one came.
const METADATA_PROTOBUF: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";
const METADATA_LIST_PROTOBUF: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
/// Built-in objects, protobuf first (a third to a half of the apiserver's
/// CPU of JSON); a server without it for the kind answers JSON.
const OBJECTS_PROTOBUF: &str = "application/vnd.kubernetes.protobuf,application/json";

/// The `Accept` header of a request for `what`: protobuf first when the
/// stream asks for it (`protobuf`), `PartialObjectMetadata` when
/// `metadata_only`, and the server asked to drop managed fields when
/// `drop_managed_fields` (objects and pages only).
pub(crate) fn accept(
    what: Asking,
    protobuf: bool,
    metadata_only: bool,
    drop_managed_fields: bool,
) -> String {
    let base = match (what, protobuf, metadata_only) {
        (Asking::Discovery(accept), ..) => return accept.to_string(),
        (Asking::Document, ..) => return "application/json".to_string(),
        (Asking::Objects, true, true) => METADATA_PROTOBUF,
        (Asking::List, true, true) => METADATA_LIST_PROTOBUF,
        (Asking::Objects | Asking::List, true, false) => OBJECTS_PROTOBUF,
        (Asking::Objects, false, true) => METADATA,
        (Asking::List, false, true) => METADATA_LIST,
        (Asking::Objects | Asking::List, false, false) => "application/json",
    };
    with_drop(base, drop_managed_fields)
}

/// Each of `base`'s media types, with `;drop=metadata.managedFields` when
/// `drop_managed_fields` (KEP-5958: the server leaves them out, alpha in
/// 1.37; a server that does not know the parameter ignores it, as a 1.36
/// apiserver does, and the client-side cut stays).
fn with_drop(base: &str, drop_managed_fields: bool) -> String {
    if !drop_managed_fields {
        return base.to_string();
    }
    base.split(',')
        .map(|t| format!("{};drop=metadata.managedFields", t.trim()))
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `group/version/resource` (or `resource` of the core group, v1).
    fn spec(name: &str) -> Collection<'_> {
        let parts: Vec<&str> = name.split('/').collect();
        let (group, version, resource) = match parts[..] {
            [r] => ("", "v1", r),
            [g, v, r] => (g, v, r),
            _ => panic!("{name}"),
        };
        Collection {
            group,
            version,
            resource,
            ..Collection::default()
        }
    }

    trait With<'a> {
        fn in_namespace(self, ns: &'a str) -> Self;
        fn with_label_selector(self, s: &'a str) -> Self;
        fn with_field_selector(self, s: &'a str) -> Self;
        fn in_shard(self, s: Shard) -> Self;
    }

    impl<'a> With<'a> for Collection<'a> {
        fn in_namespace(self, ns: &'a str) -> Self {
            Collection {
                namespace: Some(ns),
                ..self
            }
        }
        fn with_label_selector(self, s: &'a str) -> Self {
            Collection {
                label_selector: Some(s),
                ..self
            }
        }
        fn with_field_selector(self, s: &'a str) -> Self {
            Collection {
                field_selector: Some(s),
                ..self
            }
        }
        fn in_shard(self, s: Shard) -> Self {
            Collection {
                shard: Some(s),
                ..self
            }
        }
    }

    #[test]
    fn watch_list_urls() {
        assert_eq!(
            watch_list(&spec("pods"), None, 300),
            "/api/v1/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=300"
        );
        let s = spec("apps/v1/deployments")
            .in_namespace("team a")
            .with_label_selector("app=web,tier!=db")
            .with_field_selector("metadata.name=x");
        assert_eq!(
            watch_list(&s, Some("42"), 600),
            "/apis/apps/v1/namespaces/team%20a/deployments?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion=42&labelSelector=app%3Dweb%2Ctier%21%3Ddb&fieldSelector=metadata.name%3Dx&timeoutSeconds=600"
        );
    }

    #[test]
    fn watch_and_list_urls() {
        // A cluster-scoped resource has no namespace in its collection.
        let nodes = spec("nodes");
        assert_eq!(
            watch_from(&nodes, "1234", 290),
            "/api/v1/nodes?watch=true&allowWatchBookmarks=true&resourceVersion=1234&timeoutSeconds=290"
        );
        assert_eq!(
            list_page(&nodes, 500, None, None),
            "/api/v1/nodes?limit=500"
        );
        // What the watch cache holds, when its consistent reads lag.
        assert_eq!(
            list_page(&nodes, 500, None, Some("0")),
            "/api/v1/nodes?limit=500&resourceVersion=0&resourceVersionMatch=NotOlderThan"
        );
        assert_eq!(
            list_page(&spec("pods").in_namespace("a"), 2, Some("eyJ2Ijo+/="), None),
            "/api/v1/namespaces/a/pods?limit=2&continue=eyJ2Ijo%2B%2F%3D"
        );
        // Unpaged (a continue token expired): no limit, selectors still on.
        let labelled = spec("pods").with_label_selector("app=web");
        assert_eq!(
            list_page(&labelled, 0, None, None),
            "/api/v1/pods?labelSelector=app%3Dweb"
        );
        assert_eq!(list_page(&nodes, 0, None, None), "/api/v1/nodes");
    }

    #[test]
    fn a_shard_asks_for_its_range_on_watches_and_lists() {
        let shard = |count, index| Shard::new(count, index).unwrap();
        let half = "shardSelector=shardRange%28object.metadata.uid%2C%20%270x8000000000000000%27%2C%20%270x10000000000000000%27%29";
        let pods = spec("pods").in_shard(shard(2, 1));
        assert_eq!(
            watch_list(&pods, None, 300),
            format!("/api/v1/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&{half}&timeoutSeconds=300")
        );
        assert_eq!(
            watch_from(&pods, "7", 290),
            format!("/api/v1/pods?watch=true&allowWatchBookmarks=true&resourceVersion=7&{half}&timeoutSeconds=290")
        );
        assert_eq!(
            list_page(&pods, 500, Some("c"), None),
            format!("/api/v1/pods?limit=500&continue=c&{half}")
        );
        assert_eq!(
            list_page(&pods, 0, None, None),
            format!("/api/v1/pods?{half}")
        );
        let labelled = spec("pods")
            .with_label_selector("app=web")
            .in_shard(shard(4, 0));
        assert_eq!(
            list_page(&labelled, 0, None, None),
            "/api/v1/pods?labelSelector=app%3Dweb&shardSelector=shardRange%28object.metadata.uid%2C%20%270x0000000000000000%27%2C%20%270x4000000000000000%27%29"
        );
        // One shard of one is everything: nothing to ask.
        let whole = spec("pods").in_shard(shard(1, 0));
        assert_eq!(list_page(&whole, 0, None, None), "/api/v1/pods");
    }

    #[test]
    fn encoding_keeps_only_unreserved_characters() {
        assert_eq!(encode("aZ09-._~"), "aZ09-._~");
        assert_eq!(
            encode("a b/c?d#e&f=g%h+i"),
            "a%20b%2Fc%3Fd%23e%26f%3Dg%25h%2Bi"
        );
        assert_eq!(encode("\u{e9}"), "%C3%A9");
    }

    #[test]
    fn accept_asks_the_server_to_drop_managed_fields() {
        assert_eq!(
            super::with_drop("application/json", false),
            "application/json"
        );
        assert_eq!(
            super::with_drop("application/json", true),
            "application/json;drop=metadata.managedFields"
        );
        assert_eq!(
            super::with_drop(
                "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json",
                true
            ),
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1;drop=metadata.managedFields,application/json;drop=metadata.managedFields"
        );
    }

    #[test]
    fn accept_follows_what_is_asked_the_encoding_and_the_scope() {
        use super::{accept, Asking::*};
        let pb = "application/vnd.kubernetes.protobuf";
        let meta = "as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
        let meta_list = "as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
        // (what, protobuf, metadata-only, drop) -> Accept
        let rows = [
            (Objects, false, false, false, "application/json".to_string()),
            (List, false, false, false, "application/json".to_string()),
            (
                Objects,
                true,
                false,
                false,
                format!("{pb},application/json"),
            ),
            (List, true, false, false, format!("{pb},application/json")),
            (
                Objects,
                false,
                true,
                false,
                format!("application/json;{meta},application/json"),
            ),
            (
                List,
                false,
                true,
                false,
                format!("application/json;{meta_list},application/json"),
            ),
            (
                Objects,
                true,
                true,
                false,
                format!("{pb};{meta},application/json;{meta},application/json"),
            ),
            (
                List,
                true,
                true,
                false,
                format!("{pb};{meta_list},application/json;{meta_list},application/json"),
            ),
            (
                Objects,
                true,
                false,
                true,
                format!(
                    "{pb};drop=metadata.managedFields,application/json;drop=metadata.managedFields"
                ),
            ),
            (Document, true, true, true, "application/json".to_string()),
            (Discovery("a/b"), true, true, true, "a/b".to_string()),
        ];
        for (what, protobuf, metadata, drop, want) in rows {
            assert_eq!(
                accept(what, protobuf, metadata, drop),
                want,
                "{what:?} {protobuf} {metadata} {drop}"
            );
        }
    }
}
