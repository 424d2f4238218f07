//! What the one pass over an object takes and gives: the edits asked for,
//! the nesting limit, why a walk fails, and where it found the metadata.
//! The leaf the pass's files (`lexer`, `walk`, `annotation_copies`, `policy`) and its
//! entry points (`scrub`) share.

/// The deepest nesting accepted, objects and arrays counted alike. The
/// apiserver stores objects up to 10,000 levels deep; an object nested deeper
/// is not JSON tattler hands out.
pub(crate) const MAX_DEPTH: usize = 10_000;

/// What to change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Edits {
    /// Redact env values (the policy's EnvVar shape).
    pub scrub: bool,
    /// Redact a Secret's `data` and `stringData` values.
    pub secret_data: bool,
    pub drop_managed_fields: bool,
}

impl Edits {
    pub(crate) const NONE: Edits = Edits {
        scrub: false,
        secret_data: false,
        drop_managed_fields: false,
    };

    pub(crate) fn any_redaction(self) -> bool {
        self.scrub || self.secret_data
    }
}

/// Why a walk failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Bad {
    /// Not one JSON object (or not valid JSON).
    NotJson,
    /// Nested deeper than [`MAX_DEPTH`].
    TooDeep,
}

/// Where the strings tattler needs are in the object (quotes included).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Found {
    pub kind: Option<(usize, usize)>,
    pub name: Option<(usize, usize)>,
    pub namespace: Option<(usize, usize)>,
    pub uid: Option<(usize, usize)>,
    pub resource_version: Option<(usize, usize)>,
}

/// A byte range, `start..end`.
pub(crate) type Span = (usize, usize);
