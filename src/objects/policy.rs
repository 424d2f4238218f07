//! What is redacted, and where: the redaction policy, as the states of the
//! one walk over an object (`walk`). A value's state comes from its parent's
//! and its key; change what tattler redacts here, and only here.
//!
//! Secrets are found by their shape, wherever they sit:
//!
//! - **EnvVar**, with `scrub`: the `value` of every object item of an array
//!   under a key `env`, at any depth — pod specs and their templates, and
//!   custom resources that embed containers rather than pod specs (Argo's
//!   `templates[].container`/`script`, Tekton's `steps[]`, `stepTemplate`
//!   and `sidecars[]`, Spark's `driver`/`executor`, `containers` written as
//!   a map). Keys come in any order, so the walk cannot know an item is an
//!   EnvVar before its `value`: every object item's `value` is redacted.
//!   `name` and `valueFrom` (a reference, not a secret) stay. An `env`
//!   written as a map (`env: {DB_PASSWORD: …}`, Helm values) has every value
//!   redacted.
//! - **A Secret's values**, with `secret_data` (set for Secrets only): every
//!   value of the object's top-level `data` and `stringData`.
//! - **Copies of the object** ([`COPIES`]: `kubectl`'s last-applied
//!   configuration, kapp's original), in any `annotations` map at any depth
//!   (`spec.template.metadata.annotations` too): the same rules inside, a
//!   copy inside a copy too, to [`MAX_COPY_DEPTH`]; a copy deeper than that,
//!   or one that cannot be read as one JSON object, is withheld whole.
//!
//! A redacted value becomes `"REDACTED"` whatever its JSON type; `null`
//! stays. `metadata.managedFields` is removed when asked.

use super::edits::Edits;

pub(crate) const LAST_APPLIED: &[u8] = b"kubectl.kubernetes.io/last-applied-configuration";
pub(crate) const KAPP_ORIGINAL: &[u8] = b"kapp.k14s.io/original";

/// The annotations that hold a copy of the object, as JSON.
pub(crate) const COPIES: [&[u8]; 2] = [LAST_APPLIED, KAPP_ORIGINAL];

/// How deep copies are read: the object's own annotation is 1, a copy in
/// its annotations 2, and so on. Deeper, a copy is withheld.
pub(crate) const MAX_COPY_DEPTH: usize = 4;

/// Where a value sits, which decides what is done with it. Computed for a
/// member from its object's state and key ([`member`]), for an array item
/// from the array's ([`item`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    /// Nothing to do here, except find the keys of [`plain_key_matters`].
    Plain,
    /// Inside a value being redacted or removed: nothing at all to do.
    Skip,
    /// The object itself (or a copy of it).
    Root,
    Metadata,
    /// An `annotations` map, anywhere.
    Annotations,
    /// The value of a key `env`: an array of EnvVars, or a map of values.
    EnvList,
    /// An item of an `env` array.
    EnvVar,
    /// A Secret's `data` or `stringData`.
    SecretData,
    Kind,
    Name,
    Namespace,
    Uid,
    ResourceVersion,
    /// An annotation holding a copy of the object, read and scrubbed.
    Copy,
    /// Replaced by `"REDACTED"` (unless null).
    Redact,
    /// `metadata.managedFields`: the member is removed.
    Managed,
    /// A watch event; its `type` and `object`.
    Envelope,
    EventType,
    EventObject,
}

/// Whether the key `key` (as spelled, with no escape) of an object in state
/// [`State::Plain`] leads anywhere but `Plain`: the walker's fast path.
#[inline(always)]
pub(crate) fn plain_key_matters(key: &[u8], e: Edits) -> bool {
    match key.len() {
        3 => e.scrub && key == b"env",
        11 => e.any_redaction() && key == b"annotations",
        _ => false,
    }
}

/// The state of the member `key` of an object in state `parent`.
pub(crate) fn member(parent: State, key: &[u8], e: Edits) -> State {
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
        EnvVar if key == b"value" => return Redact,
        // `env` written as a map (Helm values, some operators): every value.
        EnvList | SecretData => return Redact,
        _ => {}
    }
    match (parent, key) {
        (_, b"env") if e.scrub => EnvList,
        (_, b"annotations") if e.any_redaction() => Annotations,
        (Annotations, k) if e.any_redaction() && COPIES.contains(&k) => Copy,
        (Root, b"metadata") => Metadata,
        (Root, b"kind") => Kind,
        (Root, b"data" | b"stringData") if e.secret_data => SecretData,
        (Metadata, b"name") => Name,
        (Metadata, b"namespace") => Namespace,
        (Metadata, b"uid") => Uid,
        (Metadata, b"resourceVersion") => ResourceVersion,
        (Metadata, b"managedFields") if e.drop_managed_fields => Managed,
        _ => Plain,
    }
}

/// The state of an array's items.
pub(crate) fn item(array: State) -> State {
    match array {
        State::EnvList => State::EnvVar,
        State::Skip | State::Redact | State::Managed | State::EventObject => State::Skip,
        _ => State::Plain,
    }
}

#[cfg(test)]
mod tests {
    use super::State::*;
    use super::*;

    const SCRUB: Edits = Edits {
        scrub: true,
        secret_data: false,
        drop_managed_fields: false,
    };
    const SECRET: Edits = Edits {
        scrub: true,
        secret_data: true,
        drop_managed_fields: true,
    };

    /// The state at `path` from the object's root: keys, and `[]` for an
    /// array's item.
    fn at(path: &str, e: Edits) -> State {
        path.split('.').fold(Root, |s, step| match step {
            "[]" => item(s),
            "LA" => member(s, LAST_APPLIED, e),
            "KAPP" => member(s, KAPP_ORIGINAL, e),
            k => member(s, k.as_bytes(), e),
        })
    }

    #[test]
    fn each_shape_has_its_state() {
        for (path, e, want) in [
            // EnvVar, wherever it sits.
            ("spec.containers.[].env.[].value", SCRUB, Redact),
            (
                "spec.template.spec.initContainers.[].env.[].value",
                SCRUB,
                Redact,
            ),
            ("spec.templates.[].container.env.[].value", SCRUB, Redact),
            ("spec.templates.[].script.env.[].value", SCRUB, Redact),
            ("spec.steps.[].env.[].value", SCRUB, Redact),
            ("spec.stepTemplate.env.[].value", SCRUB, Redact),
            ("spec.driver.env.[].value", SCRUB, Redact),
            ("spec.containers.main.env.[].value", SCRUB, Redact),
            ("env.[].value", SCRUB, Redact),
            ("spec.values.a.b.c.env.[].value", SCRUB, Redact),
            ("spec.env.[].name", SCRUB, Plain),
            ("spec.env.[].valueFrom", SCRUB, Plain),
            ("spec.env.[].valueFrom.secretKeyRef.name", SCRUB, Plain),
            ("spec.env.[].value.x", SCRUB, Skip),
            ("spec.env.[].value.env.[].value", SCRUB, Skip),
            ("spec.env.[].[].value", SCRUB, Plain),
            ("spec.env.value", SCRUB, Redact),
            ("spec.values.env.DB_PASSWORD", SCRUB, Redact),
            ("spec.values.env.DB_PASSWORD", Edits::NONE, Plain),
            ("spec.env.[].values", SCRUB, Plain),
            ("spec.envs.[].value", SCRUB, Plain),
            ("spec.containers.[].env.[].value", Edits::NONE, Plain),
            ("spec.env.[].vars.env.[].value", SCRUB, Redact),
            // A Secret's values: only its top-level maps, only for Secrets.
            ("data.password", SECRET, Redact),
            ("stringData.token", SECRET, Redact),
            ("data.password", SCRUB, Plain),
            ("spec.data.password", SECRET, Plain),
            ("type", SECRET, Plain),
            // Copies of the object, in any annotations map.
            ("metadata.annotations.LA", SCRUB, Copy),
            ("metadata.annotations.KAPP", SCRUB, Copy),
            ("metadata.annotations.KAPP", SECRET, Copy),
            ("spec.template.metadata.annotations.LA", SCRUB, Copy),
            (
                "spec.jobTemplate.spec.template.metadata.annotations.KAPP",
                SCRUB,
                Copy,
            ),
            ("metadata.annotations.other", SCRUB, Plain),
            ("metadata.labels.LA", SCRUB, Plain),
            ("metadata.annotations.LA", Edits::NONE, Plain),
            ("metadata.annotations.LA.x", SCRUB, Plain),
            // What the stream needs, and managedFields.
            ("kind", SCRUB, Kind),
            ("metadata.name", SCRUB, Name),
            ("metadata.namespace", SCRUB, Namespace),
            ("metadata.uid", SCRUB, Uid),
            ("metadata.resourceVersion", SCRUB, ResourceVersion),
            ("spec.metadata.name", SCRUB, Plain),
            ("metadata.managedFields", SECRET, Managed),
            ("metadata.managedFields.[].env.[].value", SECRET, Skip),
            ("metadata.managedFields", SCRUB, Plain),
        ] {
            assert_eq!(at(path, e), want, "{path} with {e:?}");
        }
    }

    #[test]
    fn the_fast_path_knows_every_key_that_leaves_plain() {
        let keys = [
            "env",
            "annotations",
            "containers",
            "value",
            "data",
            "metadata",
            "envs",
            "x",
        ];
        for e in [SCRUB, SECRET, Edits::NONE] {
            for k in keys {
                let leaves = member(Plain, k.as_bytes(), e) != Plain;
                assert_eq!(plain_key_matters(k.as_bytes(), e), leaves, "{k} with {e:?}");
            }
        }
    }

    #[test]
    fn envelopes_have_their_type_and_object() {
        let e = Edits::NONE;
        assert_eq!(member(Envelope, b"type", e), EventType);
        assert_eq!(member(Envelope, b"object", e), EventObject);
        assert_eq!(member(Envelope, b"other", e), Skip);
        assert_eq!(member(EventObject, b"env", SCRUB), Skip);
        assert_eq!(item(EventObject), Skip);
    }
}
