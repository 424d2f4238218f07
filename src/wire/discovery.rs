//! Discovery documents: what the server serves (aggregated discovery, or the
//! legacy per-group lists), checked, and the resource a kubectl name stands
//! for, resolved as kubectl resolves it.

use serde::Deserialize;

use crate::wire::decode::json_error;
use crate::wire::names::dns_name;

/// Aggregated discovery (one document for every group), with plain JSON
/// accepted from servers without it.
pub(crate) const AGGREGATED: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";

/// A resource the server serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Served {
    pub group: String,
    pub version: String,
    pub resource: String,
    pub kind: String,
    pub namespaced: bool,
    pub singular: String,
    pub short_names: Vec<String>,
    pub verbs: Vec<String>,
}

impl Served {
    /// Can be listed and watched (what tattler needs).
    pub(crate) fn watchable(&self) -> bool {
        ["list", "watch"]
            .iter()
            .all(|v| self.verbs.iter().any(|x| x == v))
    }

    fn answers_to(&self, name: &str) -> bool {
        self.resource == name
            || self.singular == name
            || self.short_names.iter().any(|s| s == name)
            || self.kind.eq_ignore_ascii_case(name)
    }
}

/// The resource `name` stands for, as kubectl resolves it: a plural,
/// singular, short name or kind (any case), or `resource.group`; the core
/// group first, then the groups in the server's order, each group's
/// preferred version first.
pub(crate) fn resolve<'a>(name: &str, served: &'a [Served]) -> Option<&'a Served> {
    let name = name.to_ascii_lowercase();
    if let Some((res, group)) = name.split_once('.') {
        if let Some(s) = served
            .iter()
            .find(|s| s.group == group && s.answers_to(res))
        {
            return Some(s);
        }
    }
    served.iter().find(|s| s.answers_to(&name))
}

#[derive(Deserialize)]
struct GroupDiscoveryList {
    kind: String,
    #[serde(default)]
    items: Vec<GroupDiscovery>,
}

#[derive(Deserialize)]
struct GroupDiscovery {
    metadata: NameOnly,
    #[serde(default)]
    versions: Vec<VersionDiscovery>,
}

#[derive(Deserialize, Default)]
struct NameOnly {
    #[serde(default)]
    name: String,
}

#[derive(Deserialize)]
struct VersionDiscovery {
    version: String,
    #[serde(default)]
    resources: Vec<ResourceDiscovery>,
}

#[derive(Deserialize)]
struct ResourceDiscovery {
    resource: String,
    #[serde(rename = "responseKind", default)]
    response_kind: Option<KindOnly>,
    #[serde(default)]
    scope: String,
    #[serde(rename = "singularResource", default)]
    singular: String,
    #[serde(default)]
    verbs: Vec<String>,
    #[serde(rename = "shortNames", default)]
    short_names: Vec<String>,
}

#[derive(Deserialize, Default)]
struct KindOnly {
    #[serde(default)]
    kind: String,
}

/// Reads an aggregated discovery document; `None` when the server answered
/// with a legacy one instead.
pub(crate) fn parse_aggregated(body: &[u8]) -> Result<Option<Vec<Served>>, String> {
    let list: GroupDiscoveryList = serde_json::from_slice(body)
        .map_err(|e| format!("discovery: the document {}", json_error(&e)))?;
    if list.kind != "APIGroupDiscoveryList" {
        return Ok(None);
    }
    let mut out = Vec::new();
    for g in list.items {
        for v in g.versions {
            for r in v.resources {
                out.push(Served {
                    group: g.metadata.name.clone(),
                    version: v.version.clone(),
                    kind: r.response_kind.unwrap_or_default().kind,
                    namespaced: r.scope == "Namespaced",
                    singular: r.singular,
                    short_names: r.short_names,
                    verbs: r.verbs,
                    resource: r.resource,
                });
            }
        }
    }
    Ok(Some(out))
}

#[derive(Deserialize)]
struct ResourceList {
    #[serde(default)]
    resources: Vec<LegacyResource>,
}

#[derive(Deserialize)]
struct LegacyResource {
    name: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    namespaced: bool,
    #[serde(rename = "singularName", default)]
    singular: String,
    #[serde(default)]
    verbs: Vec<String>,
    #[serde(rename = "shortNames", default)]
    short_names: Vec<String>,
}

/// A legacy `APIResourceList` (`/api/v1`, `/apis/GROUP/VERSION`), subresources left out.
pub(crate) fn parse_resource_list(
    group: &str,
    version: &str,
    body: &[u8],
) -> Result<Vec<Served>, String> {
    let list: ResourceList = serde_json::from_slice(body)
        .map_err(|e| format!("discovery: the document {}", json_error(&e)))?;
    Ok(list
        .resources
        .into_iter()
        .filter(|r| !r.name.contains('/'))
        .map(|r| Served {
            group: group.into(),
            version: version.into(),
            singular: if r.singular.is_empty() {
                r.kind.to_ascii_lowercase()
            } else {
                r.singular
            },
            resource: r.name,
            kind: r.kind,
            namespaced: r.namespaced,
            short_names: r.short_names,
            verbs: r.verbs,
        })
        .collect())
}

#[derive(Deserialize)]
pub(crate) struct GroupList {
    #[serde(default)]
    pub groups: Vec<LegacyGroup>,
}

#[derive(Deserialize)]
pub(crate) struct LegacyGroup {
    pub name: String,
    #[serde(rename = "preferredVersion")]
    pub preferred: GroupVersion,
}

#[derive(Deserialize)]
pub(crate) struct GroupVersion {
    pub version: String,
}

/// The served resources whose names may go into a request path and decide
/// what is redacted, and how many were left out. A group is empty (the core
/// group) or a DNS subdomain, a version a DNS label, a resource a DNS
/// subdomain (lowercase letters, digits, `-` and `.`: never `/`, `%`, `?`
/// or `..`), a kind letters and digits: what the apiserver allows a CRD.
pub(crate) fn checked(served: Vec<Served>) -> (Vec<Served>, usize) {
    let before = served.len();
    let kept: Vec<Served> = served
        .into_iter()
        .filter(|s| {
            (s.group.is_empty() || dns_name(&s.group, 253, true))
                && dns_name(&s.version, 63, false)
                && dns_name(&s.resource, 253, true)
                && s.kind.len() <= 253
                && s.kind.bytes().all(|b| b.is_ascii_alphanumeric())
        })
        .collect();
    let dropped = before - kept.len();
    (kept, dropped)
}

/// Whether a legacy group's name and preferred version may go into the
/// path of its resource list (as [`checked`] judges them).
pub(crate) fn group_path_ok(group: &str, version: &str) -> bool {
    dns_name(group, 253, true) && dns_name(version, 63, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    const AGG: &[u8] = include_bytes!("../../tests/wire/g-apis-aggregated.json");
    const CORE: &[u8] = include_bytes!("../../tests/wire/g-api-v1.json");

    fn served() -> Vec<Served> {
        let mut all = parse_resource_list("", "v1", CORE).unwrap();
        all.extend(parse_aggregated(AGG).unwrap().unwrap());
        all
    }

    /// A discovery document that cannot be read is said by where, never by
    /// serde_json's words, which quote values (issue 38 item 4).
    #[test]
    fn an_unreadable_document_is_said_without_its_values() {
        assert_eq!(
            parse_aggregated(br#"{"kind":"APIGroupDiscoveryList","items":"s3cr3t"}"#),
            Err(
                "discovery: the document has a value of the wrong type or shape (line 1, column 48)"
                    .into()
            )
        );
        assert_eq!(
            parse_resource_list("", "v1", br#"{"resources":[{"name":"s3cr3t"#),
            Err("discovery: the document ends early (line 1, column 29)".into())
        );
    }

    #[test]
    fn names_resolve_as_kubectl_resolves_them() {
        let s = served();
        let gvr = |name: &str| {
            resolve(name, &s).map(|x| {
                format!(
                    "{}/{}/{} {} {}",
                    x.group, x.version, x.resource, x.kind, x.namespaced
                )
            })
        };
        for (name, want) in [
            ("cm", "/v1/configmaps ConfigMap true"),
            ("podtemplates", "/v1/podtemplates PodTemplate true"),
            ("PodTemplate", "/v1/podtemplates PodTemplate true"),
            ("deploy", "apps/v1/deployments Deployment true"),
            ("deployment.apps", "apps/v1/deployments Deployment true"),
            (
                "controllerrevisions",
                "apps/v1/controllerrevisions ControllerRevision true",
            ),
            // The core group first: events, not events.k8s.io's.
            ("events", "/v1/events Event true"),
            ("events.events.k8s.io", "events.k8s.io/v1/events Event true"),
            (
                "crd",
                "apiextensions.k8s.io/v1/customresourcedefinitions CustomResourceDefinition false",
            ),
            ("no", "/v1/nodes Node false"),
        ] {
            assert_eq!(gvr(name).as_deref(), Some(want), "{name}");
        }
        assert_eq!(gvr("podz"), None);
        assert_eq!(gvr("pods/log"), None, "subresources are not resources");
        assert!(resolve("bindings", &s).is_some_and(|b| !b.watchable()));
        assert!(
            parse_aggregated(CORE).unwrap().is_none(),
            "a legacy document"
        );
        assert!(parse_aggregated(b"[1]").is_err());
    }

    #[test]
    fn names_that_could_bend_a_path_are_left_out() {
        let one = |group: &str, version: &str, resource: &str, kind: &str| Served {
            group: group.into(),
            version: version.into(),
            resource: resource.into(),
            kind: kind.into(),
            namespaced: true,
            singular: String::new(),
            short_names: Vec::new(),
            verbs: Vec::new(),
        };
        let good = [
            one("", "v1", "pods", "Pod"),
            one("apps", "v1", "deployments", "Deployment"),
            one("stable.example.com", "v1beta1", "crontabs", "CronTab"),
            one("metrics.k8s.io", "v1beta1", "pods", ""),
        ];
        let bad = [
            one("", "v1", "../secrets", "Secret"),
            one("", "v1", "pods?watch=false", "Pod"),
            one("", "v1", "pods%2f..", "Pod"),
            one("a/b", "v1", "things", "Thing"),
            one("Apps", "v1", "things", "Thing"),
            one("x", "v1/..", "things", "Thing"),
            one("x", "", "things", "Thing"),
            one("x", "v1", "", "Thing"),
            one("x", "v1", "things", "Th\u{0}ing"),
            one("x..y", "v1", "things", "Thing"),
            one("-x", "v1", "things", "Thing"),
        ];
        let all: Vec<Served> = good.iter().chain(bad.iter()).cloned().collect();
        let (kept, dropped) = checked(all);
        assert_eq!(kept, good);
        assert_eq!(dropped, bad.len());
        assert!(checked(served()).1 == 0, "every real name passes");
        assert!(group_path_ok("apps", "v1"));
        assert!(!group_path_ok("../api", "v1") && !group_path_ok("apps", "v1/../x"));
    }
}
