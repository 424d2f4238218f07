//! The JSON a C caller passes: the reader's configuration, and resource lists.

use kube_tattler::{Config, Error, ResourceSpec};

use crate::error::Failure;
use crate::status::tattler_status::TATTLER_ERR_INVALID_RESOURCE;

/// The configuration `tattler_open` was given; errors name the key.
pub(crate) fn parse_config(json: &str) -> Result<Config, Failure> {
    Ok(Config::from_json(json)?)
}

/// The top-level `namespace`, `label_selector`, `field_selector` and
/// `metadata_only` of an open configuration: what the names of a later
/// resource list take, as the names of the configuration's own `resources`
/// did.
#[derive(Default, Debug, PartialEq, Eq)]
pub(crate) struct Scope {
    namespace: Option<String>,
    label_selector: Option<String>,
    field_selector: Option<String>,
    metadata_only: bool,
}

impl Scope {
    /// Reads those keys from a configuration `Config::from_json` accepted.
    pub(crate) fn from_json(json: &str) -> Scope {
        let doc: serde_json::Value = serde_json::from_str(json).unwrap_or_default();
        let key = |k: &str| doc.get(k).and_then(|v| v.as_str()).map(String::from);
        Scope {
            namespace: key("namespace"),
            label_selector: key("label_selector"),
            field_selector: key("field_selector"),
            metadata_only: doc
                .get("metadata_only")
                .and_then(|v| v.as_bool())
                .unwrap_or(false),
        }
    }
}

/// A JSON array as the configuration's `resources`: names
/// (`"pods"`, `"apps/v1/deployments"`, taking `scope`) and objects
/// (`{"resource":"pods","field_selector":"spec.nodeName=n1"}`, taking only
/// their own keys), read by `kube_tattler::ResourceSpec::list_from_json`. Every
/// failure is the list's, so it is `TATTLER_ERR_INVALID_RESOURCE`, the text
/// naming the item and key.
pub(crate) fn parse_resources(json: &str, scope: &Scope) -> Result<Vec<ResourceSpec>, Failure> {
    ResourceSpec::list_from_json(
        json,
        scope.namespace.as_deref(),
        scope.label_selector.as_deref(),
        scope.field_selector.as_deref(),
        scope.metadata_only,
    )
    .map_err(|e| match e {
        Error::Config(_) | Error::Resource(_) => {
            Failure::new(TATTLER_ERR_INVALID_RESOURCE, format!("resources_json: {e}"))
        }
        other => other.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::tattler_status::*;

    fn describe(specs: &[ResourceSpec]) -> Vec<String> {
        specs
            .iter()
            .map(|s| {
                format!(
                    "{} ns={:?} ls={:?} fs={:?} meta={}",
                    s.gvr(),
                    s.namespace,
                    s.label_selector,
                    s.field_selector,
                    s.metadata_only
                )
            })
            .collect()
    }

    #[test]
    fn resource_lists_of_names() {
        let gvrs: Vec<String> = parse_resources(
            r#"["pods", "apps/v1/deployments", "rbac"]"#,
            &Scope::default(),
        )
        .unwrap()
        .iter()
        .map(|s| s.gvr())
        .collect();
        assert_eq!(gvrs.len(), 6);
        assert_eq!(gvrs[..2], ["v1/pods", "apps/v1/deployments"]);
        for (json, needle) in [
            (r#"{"pods":1}"#, "`resources` must be an array"),
            (r#"["pods!"]"#, "\"pods!\""),
            ("[1]", "`resources` must be an array"),
            ("[\"pods\"", "not JSON (line 1, column 7)"),
        ] {
            let e = parse_resources(json, &Scope::default()).unwrap_err();
            assert_eq!(e.status, TATTLER_ERR_INVALID_RESOURCE, "{json}");
            assert!(
                e.message.starts_with("resources_json: ") && e.message.contains(needle),
                "{json}: {}",
                e.message
            );
        }
    }

    #[test]
    fn names_take_the_scope_and_objects_their_own() {
        let scope = Scope::from_json(
            r#"{"namespace":"prod","label_selector":"app=web","server":"x","resources":["pods"]}"#,
        );
        let specs = parse_resources(
            r#"["pods", "nodes",
                {"resource":"pods","field_selector":"spec.nodeName=n1","metadata_only":true},
                {"resource":"configmaps","namespaces":["a","b"]}]"#,
            &scope,
        )
        .unwrap();
        assert_eq!(
            describe(&specs),
            [
                "v1/pods ns=Some(\"prod\") ls=Some(\"app=web\") fs=None meta=false",
                "v1/nodes ns=None ls=Some(\"app=web\") fs=None meta=false",
                "v1/pods ns=None ls=None fs=Some(\"spec.nodeName=n1\") meta=true",
                "v1/configmaps ns=Some(\"a\") ls=None fs=None meta=false",
                "v1/configmaps ns=Some(\"b\") ls=None fs=None meta=false",
            ]
        );
        for (json, needle) in [
            (
                r#"[{"resource":"pods","nmespace":"x"}]"#,
                "`resources[0].nmespace`",
            ),
            (r#"["pods",{"namespace":"x"}]"#, "`resources[1].resource`"),
            (
                r#"[{"resource":"pods","metadata_only":"yes"}]"#,
                "`resources[0].metadata_only`",
            ),
        ] {
            let e = parse_resources(json, &scope).unwrap_err();
            assert_eq!(e.status, TATTLER_ERR_INVALID_RESOURCE, "{json}");
            assert!(e.message.contains(needle), "{json}: {}", e.message);
        }
    }

    #[test]
    fn config_errors_keep_their_kind() {
        let e = parse_config(r#"{"server":"http://127.0.0.1:1","resources":["pods"],"tokn":"x"}"#)
            .unwrap_err();
        assert_eq!(e.status, TATTLER_ERR_INVALID_CONFIG);
        assert!(e.message.contains("`tokn`"), "{}", e.message);
        let e = parse_config(
            r#"{"server":"http://127.0.0.1:1","resources":["pods"],"token_file":"/no/such"}"#,
        )
        .unwrap_err();
        assert_eq!(e.status, TATTLER_ERR_IO);
    }
}
