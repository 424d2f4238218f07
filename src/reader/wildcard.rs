//! `"*"` and `"*.group"`: the discovery thread finds the resources the
//! wildcards stand for and makes them the found streams, as CRDs come and go.

use crossbeam_channel::{select, Receiver};

use super::registry::{Registry, Scope};
use super::watchset::reconcile;
use crate::api::client::Client;
use crate::resource::ResourceSpec;
use crate::stream::pacing::Pacing;

/// The discovery thread: every `discovery_interval` (and when the wildcards
/// change), finds the resources the wildcards stand for and makes them the
/// found streams: a CRD established later gets a stream, one deleted loses
/// it. A failing discovery is retried with backoff.
pub(super) fn explore(
    registry: &Registry,
    closing: &Receiver<()>,
    look_now: &Receiver<()>,
    mut client: Client,
) {
    let mut failures = 0u32;
    let mut pacing = Pacing::new("discovery", client.settings().backoff.clone());
    loop {
        let wildcards = registry.roster.lock().wildcards.clone();
        let wait = if wildcards.is_empty() {
            let _ = reconcile(registry, &[], Scope::Found, false);
            registry.discovery_interval
        } else {
            match client.served() {
                Ok(served) => {
                    failures = 0;
                    let found = expand(&wildcards, &served);
                    log::debug!(
                        "discovery: {} resources for {} wildcards",
                        found.len(),
                        wildcards.len()
                    );
                    if let Err(e) = reconcile(registry, &found, Scope::Found, false) {
                        log::warn!("discovery: cannot change the watch set: {e}");
                    }
                    registry.discovery_interval
                }
                Err(crate::api::end::End::Stopped) => return,
                Err(end) => {
                    failures = failures.saturating_add(1);
                    let wait = pacing.backoff(failures);
                    log::warn!("discovery failed ({end:?}); looking again in {wait:?}");
                    wait
                }
            }
        };
        select! {
            recv(closing) -> _ => return,
            recv(look_now) -> _ => {}
            default(wait) => {}
        }
    }
}

/// The specs the wildcards stand for: every served resource that can be
/// listed and watched, in each group's preferred version, with the
/// wildcard's scope (namespace, selectors, metadata-only, shard).
fn expand(
    wildcards: &[ResourceSpec],
    served: &[crate::wire::discovery::Served],
) -> Vec<ResourceSpec> {
    let mut out: Vec<ResourceSpec> = Vec::new();
    let mut seen: Vec<(String, String)> = Vec::new();
    for s in served {
        if !s.watchable() || seen.iter().any(|(g, r)| *g == s.group && *r == s.resource) {
            continue;
        }
        seen.push((s.group.clone(), s.resource.clone()));
        for w in wildcards.iter().filter(|w| w.wildcard_takes(&s.group)) {
            let mut spec =
                ResourceSpec::new(&s.group, &s.version, &s.resource, &s.kind, s.namespaced);
            if let Some(ns) = &w.namespace {
                spec = spec.in_namespace(ns);
            }
            spec.label_selector.clone_from(&w.label_selector);
            spec.field_selector.clone_from(&w.field_selector);
            spec.metadata_only = w.metadata_only;
            spec.shard = w.shard;
            if !out.contains(&spec) {
                out.push(spec);
            }
        }
    }
    out
}
