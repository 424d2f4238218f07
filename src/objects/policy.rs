//! What is redacted, and where: the redaction policy, as the states of the
//! one walk over an object (`scrub`). A value's state comes from its parent's
//! and its key; change what tattler redacts here, and only here.
//!
//! Today: container env values (`value` of the items of an `env` list of a
//! `containers`, `initContainers` or `ephemeralContainers` list, anywhere);
//! a Secret's `data` and `stringData` values; the same inside the
//! last-applied annotation; `metadata.managedFields` removed when asked.
//! (The walker's fast path for plain keys asks [`is_container_list`] too.)

use super::scrub::{Edits, LAST_APPLIED};

/// Where a value sits, which decides what is done with it. Computed for a
/// member from its object's state and key ([`member`]), for an array item
/// from the array's ([`item`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    /// Nothing to do here or below, except find container lists.
    Plain,
    /// Inside a value being redacted or removed: nothing at all to do.
    Skip,
    /// The object itself.
    Root,
    Metadata,
    Annotations,
    /// A `containers`-like list, and each container in it.
    Containers,
    /// A container's `env` list, and each variable in it.
    Env,
    /// A Secret's `data` or `stringData`.
    SecretData,
    Kind,
    Name,
    Namespace,
    Uid,
    ResourceVersion,
    LastApplied,
    /// Replaced by `"REDACTED"` (unless null).
    Redact,
    /// `metadata.managedFields`: the member is removed.
    Managed,
    /// A watch event; its `type` and `object`.
    Envelope,
    EventType,
    EventObject,
}

#[inline(always)]
pub(crate) fn is_container_list(key: &[u8]) -> bool {
    matches!(
        key,
        b"containers" | b"initContainers" | b"ephemeralContainers"
    )
}

/// The state of the member `key` of an object in state `parent`.
pub(crate) fn member(parent: State, key: &[u8], e: Edits, inner: bool) -> State {
    use State::*;
    match parent {
        Skip | Redact | Managed | EventObject => return Skip,
        Envelope => {
            return match key {
                b"type" => EventType,
                b"object" => EventObject,
                _ => Skip,
            }
        }
        _ => {}
    }
    match (parent, key) {
        (Env, b"value") | (SecretData, _) => return Redact,
        _ if e.scrub && is_container_list(key) => return Containers,
        _ => {}
    }
    match (parent, key) {
        (Root, b"metadata") => Metadata,
        (Root, b"kind") => Kind,
        (Root, b"data" | b"stringData") if e.secret_data => SecretData,
        (Metadata, b"name") => Name,
        (Metadata, b"namespace") => Namespace,
        (Metadata, b"uid") => Uid,
        (Metadata, b"resourceVersion") => ResourceVersion,
        (Metadata, b"managedFields") if e.drop_managed_fields => Managed,
        (Metadata, b"annotations") => Annotations,
        (Annotations, LAST_APPLIED) if !inner && e.any_redaction() => LastApplied,
        (Containers, b"env") => Env,
        _ => Plain,
    }
}

/// The state of an array's items.
pub(crate) fn item(array: State) -> State {
    match array {
        State::Containers | State::Env => array,
        State::Skip | State::Redact | State::Managed | State::EventObject => State::Skip,
        _ => State::Plain,
    }
}
