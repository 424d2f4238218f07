//! The JSON a C caller passes: the reader's configuration, and resource lists.

use tattler_core::{Config, ResourceSpec};

use crate::error::Failure;
use crate::status::tattler_status::TATTLER_ERR_INVALID_RESOURCE;

/// The configuration `tattler_open` was given; errors name the key.
pub(crate) fn parse_config(json: &str) -> Result<Config, Failure> {
    Ok(Config::from_json(json)?)
}

/// A JSON array of resource names (`["pods", "apps/v1/deployments"]`), each
/// read as `tattler::ResourceSpec::parse` reads it.
pub(crate) fn parse_resources(json: &str) -> Result<Vec<ResourceSpec>, Failure> {
    let names: Vec<String> = serde_json::from_str(json).map_err(|e| {
        Failure::new(
            TATTLER_ERR_INVALID_RESOURCE,
            format!("resources_json must be a JSON array of strings: {e}"),
        )
    })?;
    let mut specs = Vec::new();
    for name in &names {
        specs.extend(ResourceSpec::parse(name)?);
    }
    Ok(specs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::tattler_status::*;

    #[test]
    fn resource_lists() {
        let gvrs: Vec<String> = parse_resources(r#"["pods", "apps/v1/deployments", "rbac"]"#)
            .unwrap()
            .iter()
            .map(|s| s.gvr())
            .collect();
        assert_eq!(gvrs.len(), 6);
        assert_eq!(gvrs[..2], ["v1/pods", "apps/v1/deployments"]);
        let e = parse_resources(r#"{"pods":1}"#).unwrap_err();
        assert_eq!(e.status, TATTLER_ERR_INVALID_RESOURCE);
        assert!(e.message.contains("JSON array of strings"), "{}", e.message);
        let e = parse_resources(r#"["podz"]"#).unwrap_err();
        assert_eq!(e.status, TATTLER_ERR_INVALID_RESOURCE);
        assert!(e.message.contains("\"podz\""), "{}", e.message);
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
