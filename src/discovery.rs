//! Discovery: the resource name and scope of a kind named without them
//! (`apps/v1 Deployment`, a custom resource's kind), asked afresh on every
//! attempt so that a CRD established later is found.

use std::io::Read;
use std::sync::Arc;

use crate::machine::End;
use crate::stream::{Asking, Stream};

/// The largest discovery document read.
const MAX_DISCOVERY: u64 = 16 << 20;

impl Stream {
    pub(crate) fn discover(&mut self) -> End {
        let path = if self.spec.group.is_empty() {
            format!("/api/{}", self.spec.version)
        } else {
            format!("/apis/{}/{}", self.spec.group, self.spec.version)
        };
        let resp = match self.get(&path, Asking::Document, None) {
            Ok(r) => r,
            Err(end) => return end,
        };
        let mut body = Vec::new();
        let read = match self.body(resp) {
            Ok(mut b) => b.by_ref().take(MAX_DISCOVERY).read_to_end(&mut body),
            Err(end) => return end,
        };
        if let Err(e) = read {
            return End::Broke(format!("discovery: {e}"));
        }
        #[derive(serde::Deserialize)]
        struct List {
            resources: Vec<Res>,
        }
        #[derive(serde::Deserialize)]
        struct Res {
            name: String,
            kind: String,
            namespaced: bool,
        }
        let list: List = match serde_json::from_slice(&body) {
            Ok(l) => l,
            Err(e) => return End::Retry(format!("discovery {path}: {e}"), None),
        };
        let found = list
            .resources
            .into_iter()
            .find(|r| r.kind == self.spec.kind && !r.name.contains('/'));
        let Some(r) = found else {
            return End::Retry(
                format!("{path} does not serve kind {} (yet)", self.spec.kind),
                None,
            );
        };
        log::info!(
            "{}: served as {} ({})",
            self.spec.gvr(),
            r.name,
            if r.namespaced {
                "namespaced"
            } else {
                "cluster-scoped"
            }
        );
        self.spec.resource = r.name;
        self.spec.namespaced = r.namespaced;
        if !r.namespaced {
            self.spec.namespace = None;
        }
        let mut res = (*self.resource).clone();
        res.resource = self.spec.resource.clone();
        self.resource = Arc::new(res);
        self.edits = self.settings.shaping.edits(&self.resource);
        self.needs_value = self.settings.shaping.needs_value(&self.resource);
        End::Discovered
    }
}
