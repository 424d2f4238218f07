//! Discovery: what the server serves, and the resource a name stands for,
//! as kubectl resolves it. Asked afresh on every attempt, so that a CRD
//! established later is found.

use std::io::Read;
use std::sync::Arc;

use serde::Deserialize;

use crate::stream::machine::End;
use crate::stream::{Asking, Stream};
use crate::wire::decode::DecodeError;
use crate::ErrorInfo;

/// The largest discovery document read.
const MAX_DISCOVERY: u64 = 16 << 20;

/// Aggregated discovery (one document for every group), with plain JSON
/// accepted from servers without it.
const AGGREGATED: &str =
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
fn parse_aggregated(body: &[u8]) -> Result<Option<Vec<Served>>, String> {
    let list: GroupDiscoveryList =
        serde_json::from_slice(body).map_err(|e| format!("discovery: {e}"))?;
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
fn parse_resource_list(group: &str, version: &str, body: &[u8]) -> Result<Vec<Served>, String> {
    let list: ResourceList = serde_json::from_slice(body).map_err(|e| format!("discovery: {e}"))?;
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
struct GroupList {
    #[serde(default)]
    groups: Vec<LegacyGroup>,
}

#[derive(Deserialize)]
struct LegacyGroup {
    name: String,
    #[serde(rename = "preferredVersion")]
    preferred: GroupVersion,
}

#[derive(Deserialize)]
struct GroupVersion {
    version: String,
}

impl Stream {
    pub(crate) fn discover(&mut self) -> End {
        if let Some(name) = self.spec.lookup.clone() {
            return self.discover_name(&name);
        }
        self.discover_kind()
    }

    /// A GET of a discovery document, its body read (bounded).
    fn document(&mut self, path: &str, accept: Asking) -> Result<Vec<u8>, End> {
        let resp = self.get(path, accept, None)?;
        let mut body = Vec::new();
        let mut reader = self.body(resp)?;
        reader
            .by_ref()
            .take(MAX_DISCOVERY)
            .read_to_end(&mut body)
            .map_err(|e| End::Broke(format!("discovery {path}: {e}")))?;
        Ok(body)
    }

    /// Everything the server serves: aggregated discovery (two requests),
    /// else the legacy documents (one per group).
    pub(crate) fn served(&mut self) -> Result<Vec<Served>, End> {
        let bad = |path: &str, e: String| End::Retry(format!("{path}: {e}"), None);
        let core = self.document("/api", Asking::Discovery(AGGREGATED))?;
        let mut out = match parse_aggregated(&core).map_err(|e| bad("/api", e))? {
            Some(v) => v,
            None => {
                let v1 = self.document("/api/v1", Asking::Document)?;
                parse_resource_list("", "v1", &v1).map_err(|e| bad("/api/v1", e))?
            }
        };
        let apis = self.document("/apis", Asking::Discovery(AGGREGATED))?;
        match parse_aggregated(&apis).map_err(|e| bad("/apis", e))? {
            Some(v) => out.extend(v),
            None => {
                let groups: GroupList =
                    serde_json::from_slice(&apis).map_err(|e| bad("/apis", e.to_string()))?;
                for g in groups.groups {
                    let path = format!("/apis/{}/{}", g.name, g.preferred.version);
                    match self.document(&path, Asking::Document) {
                        Ok(body) => out.extend(
                            parse_resource_list(&g.name, &g.preferred.version, &body)
                                .map_err(|e| bad(&path, e))?,
                        ),
                        // An aggregated API that is down leaves its group out.
                        Err(End::Retry(..)) => {}
                        Err(other) => return Err(other),
                    }
                }
            }
        }
        Ok(out)
    }

    /// A kubectl name, resolved as kubectl resolves it.
    fn discover_name(&mut self, name: &str) -> End {
        let served = match self.served() {
            Ok(s) => s,
            Err(end) => return end,
        };
        let Some(found) = resolve(name, &served).cloned() else {
            // Reported once; looked for again (a CRD may be on its way).
            self.skip(
                DecodeError {
                    reason: crate::Reason::NotFound,
                    message: format!(
                        "the server has no resource named {name:?} (yet); looking again"
                    ),
                    namespace: None,
                    name: None,
                    meta: None,
                },
                &[],
            );
            return End::Retry(format!("the server has no resource named {name:?}"), None);
        };
        if !found.watchable() {
            return End::Fatal(ErrorInfo::ours(
                crate::Reason::MethodNotAllowed,
                405,
                format!(
                    "{name:?} is {}/{}/{}, which cannot be listed and watched (verbs {:?})",
                    found.group, found.version, found.resource, found.verbs
                ),
                true,
            ));
        }
        self.spec.group = found.group;
        self.spec.version = found.version;
        self.spec.kind = found.kind;
        self.spec.lookup = None;
        self.apply_found(found.resource, found.namespaced);
        End::Discovered
    }

    /// The resource name and scope of a kind whose group and version are given.
    fn discover_kind(&mut self) -> End {
        let path = if self.spec.group.is_empty() {
            format!("/api/{}", self.spec.version)
        } else {
            format!("/apis/{}/{}", self.spec.group, self.spec.version)
        };
        let body = match self.document(&path, Asking::Document) {
            Ok(b) => b,
            Err(end) => return end,
        };
        let list = match parse_resource_list(&self.spec.group, &self.spec.version, &body) {
            Ok(l) => l,
            Err(e) => return End::Retry(format!("discovery {path}: {e}"), None),
        };
        let Some(r) = list.into_iter().find(|r| r.kind == self.spec.kind) else {
            return End::Retry(
                format!("{path} does not serve kind {} (yet)", self.spec.kind),
                None,
            );
        };
        self.apply_found(r.resource, r.namespaced);
        End::Discovered
    }

    fn apply_found(&mut self, resource: String, namespaced: bool) {
        log::info!(
            "{}: served as {resource} ({})",
            self.spec.gvr(),
            if namespaced {
                "namespaced"
            } else {
                "cluster-scoped"
            }
        );
        self.spec.resource = resource;
        self.spec.namespaced = namespaced;
        *self.counters.resolved.lock() = Some(self.spec.gvr());
        if !namespaced {
            self.spec.namespace = None;
        }
        let res = crate::Resource {
            group: self.spec.group.clone(),
            version: self.spec.version.clone(),
            resource: self.spec.resource.clone(),
            kind: self.spec.kind.clone(),
        };
        self.resource = Arc::new(res);
        self.edits = self.settings.shaping.edits(&self.resource);
        self.needs_value = self.settings.shaping.needs_value(&self.resource);
    }
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
}
