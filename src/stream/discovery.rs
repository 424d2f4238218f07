//! Discovery: what the server serves, and the resource a name stands for,
//! as kubectl resolves it. Asked afresh on every attempt, so that a CRD
//! established later is found.

use std::io::Read;
use std::sync::Arc;

use crate::stream::machine::End;
use crate::stream::{Asking, Stream};
use crate::wire::decode::DecodeError;
use crate::wire::discovery::{
    checked, group_path_ok, parse_aggregated, parse_resource_list, resolve, GroupList, Served,
    AGGREGATED,
};
use crate::ErrorInfo;

/// The largest discovery document read.
const MAX_DISCOVERY: u64 = 16 << 20;

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
                    if !group_path_ok(&g.name, &g.preferred.version) {
                        log::warn!("discovery: a group left out: its name or version is not as Kubernetes allows");
                        continue;
                    }
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
        let (out, dropped) = checked(out);
        if dropped > 0 {
            log::warn!(
                "discovery: {dropped} resources left out: a group, version, resource or kind name not as Kubernetes allows"
            );
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
