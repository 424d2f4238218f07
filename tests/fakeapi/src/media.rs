//! Content negotiation: what the `Accept` header asks for, as far as the fake serves it, and
//! the metadata-only (`PartialObjectMetadata`) form of objects.
//!
//! The real apiserver takes the first media range it can serve (`q` values aside, which no
//! Kubernetes client sends): `application/json` (also `*/*`, `application/*`), the
//! `as=PartialObjectMetadata[List];g=meta.k8s.io;v=v1` conversions, and, on `/api` and `/apis`,
//! `as=APIGroupDiscoveryList;g=apidiscovery.k8s.io;v=v2` (or `v2beta1`). The fake has no
//! protobuf, YAML or Table: those ranges are skipped, and a header with nothing servable gets
//! 406 NotAcceptable.

use crate::json::{self, Ctx};
use serde_json::Value;

/// One media range the fake can serve.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Want {
    /// The objects as they are.
    Full,
    /// `as=PartialObjectMetadata`: one object (get, watch events).
    Meta,
    /// `as=PartialObjectMetadataList`: a list.
    MetaList,
    /// `as=APIGroupDiscoveryList` in this version of `apidiscovery.k8s.io` (`v2`, `v2beta1`).
    Discovery(&'static str),
}

/// The ranges of an `Accept` header the fake can serve, in the client's order. An absent or
/// empty header is `[Full]`.
pub(crate) fn accepted(header: Option<&str>) -> Vec<Want> {
    let Some(h) = header.filter(|h| !h.trim().is_empty()) else {
        return vec![Want::Full];
    };
    h.split(',').filter_map(range).collect()
}

/// The first of `wants` in the header that the endpoint serves; `None`: 406.
pub(crate) fn choose(accepted: &[Want], serves: impl Fn(Want) -> bool) -> Option<Want> {
    accepted.iter().copied().find(|w| serves(*w))
}

fn range(r: &str) -> Option<Want> {
    let mut parts = r.split(';').map(str::trim);
    let media = parts.next()?.to_ascii_lowercase();
    if !matches!(media.as_str(), "application/json" | "application/*" | "*/*") {
        return None;
    }
    let (mut as_, mut g, mut v) = (None, None, None);
    for p in parts {
        let Some((k, val)) = p.split_once('=') else {
            continue;
        };
        let val = val.trim().trim_matches('"');
        match k.trim() {
            "as" => as_ = Some(val),
            "g" => g = Some(val),
            "v" => v = Some(val),
            _ => {}
        }
    }
    match (as_, g, v) {
        (None, _, _) => Some(Want::Full),
        (Some("PartialObjectMetadata"), Some("meta.k8s.io"), Some("v1")) => Some(Want::Meta),
        (Some("PartialObjectMetadataList"), Some("meta.k8s.io"), Some("v1")) => {
            Some(Want::MetaList)
        }
        (Some("APIGroupDiscoveryList"), Some("apidiscovery.k8s.io"), Some("v2")) => {
            Some(Want::Discovery("v2"))
        }
        (Some("APIGroupDiscoveryList"), Some("apidiscovery.k8s.io"), Some("v2beta1")) => {
            Some(Want::Discovery("v2beta1"))
        }
        _ => None,
    }
}

/// `meta.k8s.io/v1`, the group and version of `PartialObjectMetadata`.
pub(crate) const META_API_VERSION: &str = "meta.k8s.io/v1";

/// An object's JSON as a watch event or a get carries it: as stored (`serde_json`'s bytes), or
/// its `PartialObjectMetadata`: `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1",
/// "metadata":{…}}` with the metadata as stored, managedFields and annotations included.
pub(crate) fn render(obj: &Value, meta: bool) -> String {
    if !meta {
        return json::compact(obj, Ctx::Plain);
    }
    let metadata = obj
        .get("metadata")
        .map(|m| json::compact(m, Ctx::Plain))
        .unwrap_or_else(|| "{}".into());
    format!(
        "{{\"kind\":\"PartialObjectMetadata\",\"apiVersion\":\"{META_API_VERSION}\",\"metadata\":{metadata}}}"
    )
}

/// A list item in the `PartialObjectMetadataList` form (which keeps `kind` and `apiVersion`).
pub(crate) fn meta_item(obj: &Value) -> Value {
    serde_json::json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": META_API_VERSION,
        "metadata": obj.get("metadata").cloned().unwrap_or_else(|| serde_json::json!({})),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accept_headers() {
        assert_eq!(accepted(None), [Want::Full]);
        assert_eq!(accepted(Some(" ")), [Want::Full]);
        assert_eq!(
            accepted(Some(
                "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
            )),
            [Want::Meta]
        );
        // client-go's metadata client: protobuf first (skipped), then JSON, then plain JSON.
        assert_eq!(
            accepted(Some("application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json")),
            [Want::MetaList, Want::Full]
        );
        // kubectl's discovery.
        assert_eq!(
            accepted(Some("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json")),
            [Want::Discovery("v2"), Want::Discovery("v2beta1"), Want::Full]
        );
        assert_eq!(
            accepted(Some(
                "application/yaml, application/json;as=Table;g=meta.k8s.io;v=v1"
            )),
            []
        );
        assert_eq!(
            accepted(Some(
                "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v2"
            )),
            []
        );
        assert_eq!(accepted(Some("*/*")), [Want::Full]);
        let got = accepted(Some(
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
        ));
        assert_eq!(choose(&got, |w| w != Want::MetaList), Some(Want::Full));
        assert_eq!(choose(&got, |w| w == Want::Meta), None);
    }

    #[test]
    fn metadata_only_objects() {
        let pod = json!({"kind":"Pod","apiVersion":"v1","metadata":{"name":"a","uid":"u"},"spec":{"x":1}});
        assert_eq!(
            render(&pod, true),
            r#"{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a","uid":"u"}}"#
        );
        assert_eq!(render(&pod, false), serde_json::to_string(&pod).unwrap());
        assert_eq!(
            meta_item(&pod),
            json!({"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a","uid":"u"}})
        );
    }
}
