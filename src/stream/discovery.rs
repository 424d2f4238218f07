//! Discovery: the resource a name stands for, as kubectl resolves it, or
//! the resource name and scope of a kind. Asked afresh on every attempt, so
//! that a CRD established later is found. What it finds is handed back to
//! the stream, which asks for it from then on; the user's spec stays as
//! given.

use crate::api::end::End;
use crate::entry::{ErrorInfo, Reason};
use crate::stream::Parts;
use crate::wire::decode::DecodeError;
use crate::wire::discovery::{parse_resource_list, resolve};
use crate::wire::request::Asking;

/// What discovery found: the resource to ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    pub group: String,
    pub version: String,
    pub resource: String,
    pub kind: String,
    pub namespaced: bool,
}

/// Finds what the target names: a kubectl name, or a kind whose group and
/// version are given.
pub(crate) fn discover(p: &mut Parts) -> Result<Found, End> {
    match p.target.lookup.clone() {
        Some(name) => discover_name(p, &name),
        None => discover_kind(p),
    }
}

/// A kubectl name, resolved as kubectl resolves it.
fn discover_name(p: &mut Parts, name: &str) -> Result<Found, End> {
    let served = p.client.served()?;
    let Some(found) = resolve(name, &served).cloned() else {
        // Reported once; looked for again (a CRD may be on its way).
        let e = DecodeError {
            reason: Reason::NotFound,
            message: format!("the server has no resource named {name:?} (yet); looking again"),
            namespace: None,
            name: None,
            meta: None,
        };
        p.skip(e, &[])?;
        return Err(End::Retry(
            format!("the server has no resource named {name:?}"),
            None,
        ));
    };
    if !found.watchable() {
        return Err(End::Fatal(ErrorInfo::ours(
            Reason::MethodNotAllowed,
            405,
            format!(
                "{name:?} is {}/{}/{}, which cannot be listed and watched (verbs {:?})",
                found.group, found.version, found.resource, found.verbs
            ),
            true,
        )));
    }
    Ok(Found {
        group: found.group,
        version: found.version,
        resource: found.resource,
        kind: found.kind,
        namespaced: found.namespaced,
    })
}

/// The resource name and scope of a kind whose group and version are given.
fn discover_kind(p: &mut Parts) -> Result<Found, End> {
    let (group, version, kind) = (&p.target.group, &p.target.version, &p.target.kind);
    let path = if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    };
    let body = p.client.document(&path, Asking::Document)?;
    let list = parse_resource_list(group, version, &body)
        .map_err(|e| End::Retry(format!("discovery {path}: {e}"), None))?;
    let Some(r) = list.into_iter().find(|r| &r.kind == kind) else {
        return Err(End::Retry(
            format!("{path} does not serve kind {kind} (yet)"),
            None,
        ));
    };
    Ok(Found {
        group: group.clone(),
        version: version.clone(),
        resource: r.resource,
        kind: kind.clone(),
        namespaced: r.namespaced,
    })
}
