//! What the reader hands out: one [`Entry`] per change.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use crate::resource_version::Rv;

/// The kind of change an [`Entry`] reports.
///
/// The numbers are part of the C ABI and never change. New kinds may come
/// (a match needs a `_` arm).
///
/// ```
/// use kube_tattler::Change;
/// let c = Change::Update;
/// assert!(matches!(c, Change::Add | Change::Update));
/// assert_eq!(c.to_string(), "Update");
/// assert_eq!(c as u8, 2);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
#[non_exhaustive]
pub enum Change {
    /// An object the consumer has not seen before.
    Add = 1,
    /// A newer version of an object the consumer has seen.
    Update = 2,
    /// An object is gone. [`Entry::inferred`] tells a delete the server
    /// reported from one found by comparing a re-sync with what was delivered.
    Delete = 3,
    /// During a re-sync: an object the consumer already has, unchanged.
    Snapshot = 4,
    /// This resource's full state has been delivered (after the first sync and
    /// after every re-sync), or it is current again after a [`Change::Stale`]:
    /// the consumer's view equals the server's as of
    /// [`Entry::resource_version_str`]; every later entry is a live change.
    Synced = 5,
    /// Something failed (see [`Entry::error`]): with [`ErrorInfo::ended`],
    /// this resource failed for good and stops streaming (the others go on);
    /// without it, one object or frame was skipped and the stream reads on.
    Error = 6,
    /// This resource's view is not current: the server is unreachable or
    /// refusing, the stream has been silent past the idle timeout, or a new
    /// full state is under way. [`Entry::error`] says why
    /// ([`ErrorInfo::kind`]: [`Reason::Unreachable`], [`Reason::Refused`],
    /// [`Reason::Throttled`], [`Reason::Silent`], [`Reason::Resyncing`],
    /// [`Reason::Credentials`];
    /// `ended` is false), [`Entry::namespace`] which namespace's stream
    /// when the resource is watched in several, and
    /// [`Entry::resource_version_str`] what the view is current as of. The
    /// stream goes on; [`Change::Synced`] says when the view is current
    /// again. Sent once per spell, never for a healthy server that is merely
    /// quiet.
    Stale = 7,
    /// This reader now holds its leader-election Lease
    /// ([`Config::leader_election`](crate::Config::leader_election)) and
    /// starts its streams. [`Entry::namespace`] and [`Entry::name`] are the
    /// Lease's, [`Entry::identity`] and [`Entry::holder`] this reader's,
    /// [`Entry::term`] the term its entries carry until the next
    /// `Following`; the resource is `coordination.k8s.io/v1/leases`.
    Leading = 8,
    /// This reader does not stream: it waits for its leader-election Lease
    /// (once at the start, [`Reason::Standby`]), or it held the Lease and
    /// has stopped its streams ([`Reason::LeaseLost`]: another holder took
    /// it; [`Reason::RenewFailed`]: it could not renew within the renew
    /// deadline). Nothing of the term that ended comes after it: entries
    /// still queued when it stepped down are dropped (the next leader
    /// delivers them). The consumer's view stays as it was, and a later
    /// [`Change::Leading`] resumes from the checkpoint in the cluster.
    /// [`Entry::error`] says why (`ended` is false); namespace, name and
    /// identity as on `Leading`; [`Entry::holder`] who holds the Lease
    /// (a new `Following` when that changes while it waits).
    Following = 9,
}

impl Change {
    /// The name used in logs and in the example's output (`"Add"`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Add => "Add",
            Change::Update => "Update",
            Change::Delete => "Delete",
            Change::Snapshot => "Snapshot",
            Change::Synced => "Synced",
            Change::Error => "Error",
            Change::Stale => "Stale",
            Change::Leading => "Leading",
            Change::Following => "Following",
        }
    }
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The resource an entry came from. Its `Display` is
/// `group/version/resource` (`apps/v1/deployments`, `v1/pods` for the core
/// group), as [`ResourceSpec::gvr`](crate::ResourceSpec::gvr) shows it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Resource {
    /// API group; empty for the core group.
    pub group: String,
    /// API version.
    pub version: String,
    /// Plural resource name, e.g. `pods` (for a name still to be resolved
    /// through discovery, the name as given).
    pub resource: String,
    /// Kind, e.g. `Pod`; empty only if the server has not yet sent an object
    /// from which to learn it.
    pub kind: String,
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.group.as_str(), self.version.as_str()) {
            // A name still to be resolved through discovery.
            (_, "") => f.write_str(&self.resource),
            ("", v) => write!(f, "{v}/{}", self.resource),
            (g, v) => write!(f, "{g}/{v}/{}", self.resource),
        }
    }
}

/// Why an Error entry came, as a value to match on. [`ErrorInfo::reason`]
/// is its stable text (what C and Go see), or the server's own reason when
/// the server said why ([`Reason::Server`]).
///
/// ```no_run
/// # let reader: kube_tattler::Reader = unimplemented!();
/// use kube_tattler::Reason;
/// for entry in &reader {
///     match entry.error().map(|e| (e.kind, e.code)) {
///         Some((Reason::Server, 403)) => eprintln!("no RBAC for {}", entry.resource()),
///         Some((Reason::Unreachable | Reason::Silent, _)) => eprintln!("{entry}"),
///         _ => {}
///     }
/// }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Reason {
    /// The server answered with a failure; its `Status.reason` (`Forbidden`,
    /// `Unauthorized`, `BadRequest`…, or `HTTP <code>` when it gave none) is
    /// in [`ErrorInfo::reason`], its status in [`ErrorInfo::code`].
    Server,
    /// A frame or LIST item over `max_frame_bytes`: skipped.
    FrameTooLarge,
    /// An object nested deeper than the apiserver's own limit: skipped.
    ObjectTooDeep,
    /// An object that is not JSON, or has no name or uid: skipped.
    InvalidObject,
    /// A frame that is not a watch event: skipped.
    InvalidFrame,
    /// A protobuf frame or LIST item (metadata-only streams) that cannot be
    /// decoded: skipped.
    InvalidProtobuf,
    /// The caller's transform failed on an object: skipped.
    TransformFailed,
    /// Discovery knows no resource of that name (yet): looked for again.
    NotFound,
    /// The resource cannot be listed and watched (its verbs): ended.
    MethodNotAllowed,
    /// The credentials could not be had (an exec plugin, a token file): on
    /// an Error entry, ended; on a Stale entry, retried.
    Credentials,
    /// The client certificate an exec plugin gave cannot be used: ended.
    TlsIdentity,
    /// A thread of tattler's panicked; the text says which.
    InternalError,
    /// Stale: no answer from the server (a refused or failed connection, a
    /// connection that broke again and again).
    Unreachable,
    /// Stale: the server answers with a failure it may recover from (5xx,
    /// 404 while a resource is being added); its status is the code.
    Refused,
    /// Stale: the server asks to come back later (429, API Priority and
    /// Fairness or a lagging watch cache).
    Throttled,
    /// Stale: nothing came from the server for the idle timeout (a server
    /// bookmarks about once a minute): the connection is taken as dead.
    Silent,
    /// Stale: a new full state is under way (the history expired, the
    /// resourceVersion is ahead of the server, a relist by re-sync).
    Resyncing,
    /// Following: this reader waits for the Lease another replica holds.
    Standby,
    /// Following: another replica took the Lease.
    LeaseLost,
    /// Following: the Lease could not be renewed within the renew deadline.
    RenewFailed,
    /// The checkpoint kept in the cluster could not be read (damaged,
    /// unreadable: the streams start from nothing) or written (larger than
    /// a ConfigMap holds); the streams go on.
    Checkpoint,
}

impl Reason {
    /// The stable text: the variant's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Server => "Server",
            Reason::FrameTooLarge => "FrameTooLarge",
            Reason::ObjectTooDeep => "ObjectTooDeep",
            Reason::InvalidObject => "InvalidObject",
            Reason::InvalidFrame => "InvalidFrame",
            Reason::InvalidProtobuf => "InvalidProtobuf",
            Reason::TransformFailed => "TransformFailed",
            Reason::NotFound => "NotFound",
            Reason::MethodNotAllowed => "MethodNotAllowed",
            Reason::Credentials => "Credentials",
            Reason::TlsIdentity => "TlsIdentity",
            Reason::InternalError => "InternalError",
            Reason::Unreachable => "Unreachable",
            Reason::Refused => "Refused",
            Reason::Throttled => "Throttled",
            Reason::Silent => "Silent",
            Reason::Resyncing => "Resyncing",
            Reason::Standby => "Standby",
            Reason::LeaseLost => "LeaseLost",
            Reason::RenewFailed => "RenewFailed",
            Reason::Checkpoint => "Checkpoint",
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What an Error entry reports: a resource that failed for good, or one
/// object (or frame) that could not be delivered and was skipped; on a
/// Stale entry, why the view is not current.
///
/// It is a [`std::error::Error`], so that a consumer may stop on it with
/// `?`; its `Display` is `reason (code): message` (`Forbidden (403): pods is
/// forbidden: …`, the code left out when 0).
///
/// ```no_run
/// # fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
/// # let reader: kube_tattler::Reader = unimplemented!();
/// use kube_tattler::Change;
/// for entry in &reader {
///     match (entry.change(), entry.error()) {
///         (Change::Error, Some(e)) if e.ended => return Err(e.clone().into()),
///         (Change::Error | Change::Stale, Some(e)) => eprintln!("{}: {e}", entry.resource()),
///         _ => {}
///     }
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ErrorInfo {
    /// The HTTP status (401, 403, 404, …), or 0 when the failure was not an
    /// HTTP answer (an object over a limit, a panic caught in the stream).
    pub code: u16,
    /// Why, as a value.
    pub kind: Reason,
    /// Why, as text: the server's `reason` (`Forbidden`) when
    /// [`kind`](Self::kind) is [`Reason::Server`], else the kind's own
    /// ([`Reason::as_str`]).
    pub reason: String,
    /// The server's message, or tattler's description of the failure. It
    /// never quotes an object's values.
    pub message: String,
    /// The resource's stream ended with this error (it failed for good); when
    /// false, one piece was skipped and the stream goes on. A skipped object's
    /// namespace and name, when they could be read, are the entry's.
    pub ended: bool,
}

impl fmt::Display for ErrorInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)?;
        if self.code != 0 {
            write!(f, " ({})", self.code)?;
        }
        if !self.message.is_empty() {
            write!(f, ": {}", self.message)?;
        }
        Ok(())
    }
}

impl std::error::Error for ErrorInfo {}

/// One change to one object, or a resource's Synced or Error marker.
///
/// Entries own their data and outlive the reader that made them. Its
/// `Display` is a line for people (`Add v1/pods shop/web-1 at 4711`,
/// `Synced v1/pods at 4720`, `Error v1/pods: Forbidden (403): …`); its
/// `Debug` leaves the object out.
///
/// ```no_run
/// # let reader: kube_tattler::Reader = unimplemented!();
/// use kube_tattler::Change;
/// for entry in &reader {
///     if matches!(entry.change(), Change::Add | Change::Update) {
///         let name = (entry.namespace(), entry.name());
///         let bytes = entry.object().map_or(0, <[u8]>::len);
///         println!("{entry}: {bytes} bytes");
///     }
/// }
/// ```
#[derive(Clone)]
pub struct Entry {
    pub(crate) change: Change,
    pub(crate) resource: Arc<Resource>,
    pub(crate) namespace: Option<Arc<str>>,
    pub(crate) name: Text,
    pub(crate) uid: Text,
    pub(crate) resource_version: Rv,
    /// The object's JSON as the server sent it (or as shaping left it).
    /// `name` and `uid` may be kept in it ([`Text::InObject`]): it is not
    /// replaced once the entry is made.
    pub(crate) object: Option<Vec<u8>>,
    pub(crate) inferred: bool,
    pub(crate) error: Option<Box<ErrorInfo>>,
    /// Under leader election: the term of the Lease it was delivered in.
    pub(crate) term: Option<Term>,
    /// On Leading and Following: who holds the Lease now.
    pub(crate) holder: Option<Box<str>>,
}

impl ErrorInfo {
    /// tattler's own judgement.
    pub(crate) fn ours(kind: Reason, code: u16, message: String, ended: bool) -> ErrorInfo {
        ErrorInfo {
            code,
            kind,
            reason: kind.as_str().to_string(),
            message,
            ended,
        }
    }

    /// The server's answer: its status, reason and message; the resource ends.
    pub(crate) fn server(code: u16, reason: String, message: String) -> ErrorInfo {
        ErrorInfo {
            code,
            kind: Reason::Server,
            reason,
            message,
            ended: true,
        }
    }
}

/// A string of an entry (its name, its uid): kept where it stands in the
/// entry's object when it is there as it reads, so that an object's entry
/// is one allocation, its object's buffer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum Text {
    #[default]
    Empty,
    Own(Box<str>),
    /// `object[at..at + len]`, as UTF-8 and unescaped as the text.
    InObject(u32, u32),
}

impl Text {
    /// `text`, kept in `object` where it stands there at the offset it had
    /// in `source` (`object` was made from `source`, edited or not); its own
    /// copy when it is not there, or not borrowed from `source`.
    pub(crate) fn held(text: &str, source: &[u8], object: Option<&[u8]>) -> Text {
        if text.is_empty() {
            return Text::Empty;
        }
        let at = (text.as_ptr() as usize).wrapping_sub(source.as_ptr() as usize);
        let len = text.len();
        let stands = at <= source.len()
            && len <= source.len() - at
            && object.is_some_and(|o| o.get(at..at + len) == Some(text.as_bytes()));
        match (u32::try_from(at), u32::try_from(len)) {
            (Ok(at), Ok(len)) if stands => Text::InObject(at, len),
            _ => Text::Own(text.into()),
        }
    }

    /// The text, `object` the object it was [`held`](Text::held) in.
    pub(crate) fn get<'a>(&'a self, object: Option<&'a [u8]>) -> &'a str {
        match self {
            Text::Empty => "",
            Text::Own(s) => s,
            // Made only where these bytes are the text (`Text::held`).
            Text::InObject(at, len) => object
                .and_then(|o| o.get(*at as usize..(*at + *len) as usize))
                .and_then(|b| std::str::from_utf8(b).ok())
                .unwrap_or(""),
        }
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Text {
        if s.is_empty() {
            Text::Empty
        } else {
            Text::Own(s.into())
        }
    }
}

impl From<String> for Text {
    fn from(s: String) -> Text {
        if s.is_empty() {
            Text::Empty
        } else {
            Text::Own(s.into_boxed_str())
        }
    }
}

impl Entry {
    pub(crate) fn marker(change: Change, resource: Arc<Resource>, resource_version: Rv) -> Entry {
        Entry {
            change,
            resource,
            namespace: None,
            name: Text::Empty,
            uid: Text::Empty,
            resource_version,
            object: None,
            inferred: false,
            error: None,
            term: None,
            holder: None,
        }
    }

    pub(crate) fn failure(resource: Arc<Resource>, info: ErrorInfo) -> Entry {
        let mut e = Entry::marker(Change::Error, resource, Rv::empty());
        e.error = Some(Box::new(info));
        e
    }

    /// `t`, one of this entry's strings.
    fn text<'a>(&'a self, t: &'a Text) -> &'a str {
        t.get(self.object.as_deref())
    }

    /// What happened.
    pub fn change(&self) -> Change {
        self.change
    }

    /// The resource this entry belongs to.
    pub fn resource(&self) -> &Resource {
        &self.resource
    }

    /// The object's namespace; `None` for cluster-scoped objects and for
    /// Synced and Error entries; on Stale, the namespace of the stream that
    /// is not current, when the resource is watched in one or several.
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// The object's name; empty for Synced and Error entries.
    pub fn name(&self) -> &str {
        self.text(&self.name)
    }

    /// The object's uid; empty for Synced and Error entries; on Leading
    /// and Following, this reader's identity (as [`identity`](Self::identity)).
    pub fn uid(&self) -> &str {
        self.text(&self.uid)
    }

    /// The object's resourceVersion as the server sent it. On a Delete it is
    /// the version of the deletion when the server reported it, and the last
    /// version delivered when the delete was inferred. On Synced, the
    /// resourceVersion the state is complete at. Empty on Error.
    ///
    /// The API calls resourceVersions opaque: compare them only for equality,
    /// unless both are integers from the same etcd-backed resource.
    pub fn resource_version_str(&self) -> &str {
        self.resource_version.as_str()
    }

    /// [`resource_version_str`](Self::resource_version_str) as an integer;
    /// `None` when it is not one (aggregated and non-etcd servers may send
    /// any string) or there is none (an `Error` entry).
    pub fn resource_version(&self) -> Option<u64> {
        self.resource_version.number()
    }

    /// The object's JSON exactly as the server sent it (re-serialised only
    /// when scrubbing changed it). `None` for inferred deletes, Synced and
    /// Error entries.
    ///
    /// The object is the shaped one ([`Shaping`](crate::Shaping)): with the
    /// defaults, container env values and a Secret's data are
    /// [`REDACTED`](crate::REDACTED).
    pub fn object(&self) -> Option<&[u8]> {
        self.object.as_deref()
    }

    /// The object as a `T`: a `k8s_openapi::api::core::v1::Pod`, your own
    /// struct with the fields you need, or a `serde_json::Value`. `Ok(None)`
    /// where [`object`](Self::object) is `None` (inferred deletes, Synced,
    /// Error, Stale).
    ///
    /// `Result<Option<T>, _>`, not `Option<Result<T, _>>`, so that `?` takes
    /// the failure and leaves what is there to match on:
    /// `if let Some(pod) = entry.object_as::<Pod>()? { … }`.
    ///
    /// The object is the shaped one, as [`object`](Self::object) gives it:
    /// with the default [`Shaping`](crate::Shaping), every container env
    /// value is the string [`REDACTED`](crate::REDACTED) (a `valueFrom`
    /// stays), and so is each value of a Secret's `data` and `stringData`
    /// (`REDACTED` is valid base64: a `ByteString` reads it as 6 bytes);
    /// `managedFields` is missing when
    /// [`drop_managed_fields`](crate::Shaping::drop_managed_fields) is set.
    /// A metadata-only resource's objects are `PartialObjectMetadata`.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let reader: kube_tattler::Reader = unimplemented!();
    /// #[derive(serde::Deserialize)]
    /// struct Pod {
    ///     metadata: serde_json::Value,
    ///     status: Option<serde_json::Value>,
    /// }
    /// for entry in &reader {
    ///     if let Some(pod) = entry.object_as::<Pod>()? {
    ///         println!("{}: {:?}", entry.name(), pod.status.and_then(|s| s.get("phase").cloned()));
    ///     }
    /// }
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// The `serde_json::Error` of reading the object as a `T`: a field of
    /// the wrong type, a missing field `T` requires, an object nested deeper
    /// than serde_json's limit of 128.
    pub fn object_as<T: serde::de::DeserializeOwned>(
        &self,
    ) -> Result<Option<T>, serde_json::Error> {
        self.object
            .as_deref()
            .map(serde_json::from_slice)
            .transpose()
    }

    /// True on a Delete that tattler inferred rather than one the server
    /// reported: the object was missing from a re-sync, its name was taken
    /// by a newer object, or shaping (the transform, the event filter) stopped
    /// delivering it.
    pub fn inferred(&self) -> bool {
        self.inferred
    }

    /// On [`Change::Leading`] and [`Change::Following`], this reader's
    /// identity in the Lease; `None` on every other entry.
    pub fn identity(&self) -> Option<&str> {
        matches!(self.change, Change::Leading | Change::Following).then_some(self.uid())
    }

    /// Under leader election, the term this entry was delivered in: the
    /// Lease's `leaseTransitions` when this replica took it. Every entry a
    /// leading replica delivers carries it, `Leading` too; `None` without
    /// leader election and on `Following`. A consumer writing to a store
    /// shared by replicas keeps the highest term it has written and refuses
    /// a lower one: a late writer whose term ended is fenced off. With
    /// shards, each shard's Lease has its own terms.
    pub fn term(&self) -> Option<u64> {
        self.term.as_ref().map(|t| t.number())
    }

    /// On [`Change::Leading`] and [`Change::Following`], the replica that
    /// holds the Lease now, as client-go's `OnNewLeader` names it: this
    /// reader's identity on `Leading`; on `Following`, the other holder,
    /// or `None` when nobody holds it. A new `Following` is sent when the
    /// holder seen changes.
    pub fn holder(&self) -> Option<&str> {
        self.holder.as_deref()
    }

    /// The failure, on an Error entry; why, on Stale and Following.
    pub fn error(&self) -> Option<&ErrorInfo> {
        self.error.as_deref()
    }
}

impl fmt::Display for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.change, self.resource)?;
        match (&self.namespace, self.name().is_empty()) {
            (Some(ns), false) => write!(f, " {ns}/{}", self.name())?,
            (None, false) => write!(f, " {}", self.name())?,
            (Some(ns), true) => write!(f, " in {ns}")?,
            (None, true) => {}
        }
        if !self.resource_version.as_str().is_empty() {
            write!(f, " at {}", self.resource_version.as_str())?;
        }
        if self.inferred {
            f.write_str(" (inferred)")?;
        }
        if let Some(e) = &self.error {
            write!(f, ": {e}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The object is left out: it may be large, and logs must not carry it.
        f.debug_struct("Entry")
            .field("change", &self.change)
            .field("resource", &self.resource.resource)
            .field("namespace", &self.namespace)
            .field("name", &self.name())
            .field("uid", &self.uid())
            .field("resource_version", &self.resource_version.as_str())
            .field(
                "object_len",
                &self.object.as_ref().map(|o| o.as_slice().len()),
            )
            .field("inferred", &self.inferred)
            .field("error", &self.error)
            .field("term", &self.term())
            .field("holder", &self.holder)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pods() -> Arc<Resource> {
        Arc::new(Resource {
            group: String::new(),
            version: "v1".into(),
            resource: "pods".into(),
            kind: "Pod".into(),
        })
    }

    fn add(object: &[u8]) -> Entry {
        let mut e = Entry::marker(Change::Add, pods(), Rv::new("4711"));
        e.namespace = Some(Arc::from("shop"));
        e.name = Text::from("web-1");
        e.uid = Text::from("u1");
        e.object = Some(object.to_vec());
        e
    }

    #[test]
    fn object_as_reads_the_object_into_a_type() {
        #[derive(serde::Deserialize, Debug, PartialEq)]
        struct Meta {
            name: String,
        }
        #[derive(serde::Deserialize, Debug, PartialEq)]
        struct Pod {
            metadata: Meta,
        }
        let e = add(br#"{"kind":"Pod","metadata":{"name":"web-1","uid":"u1"}}"#);
        assert_eq!(
            e.object_as::<Pod>().unwrap(),
            Some(Pod {
                metadata: Meta {
                    name: "web-1".into()
                }
            })
        );
        let v: serde_json::Value = e.object_as().unwrap().unwrap();
        assert_eq!(v["metadata"]["uid"], "u1");
        // A field of the wrong type: serde's error, with where.
        let bad = add(br#"{"metadata":{"name":7}}"#);
        let err = bad.object_as::<Pod>().unwrap_err().to_string();
        assert!(err.contains("invalid type: integer `7`"), "{err}");
        // No object: nothing to read, no error.
        let synced = Entry::marker(Change::Synced, pods(), Rv::new("4720"));
        assert_eq!(synced.object_as::<Pod>().unwrap(), None);
    }

    #[test]
    fn entries_resources_and_errors_print_for_people() {
        assert_eq!(add(b"{}").to_string(), "Add v1/pods shop/web-1 at 4711");
        let synced = Entry::marker(Change::Synced, pods(), Rv::new("4720"));
        assert_eq!(synced.to_string(), "Synced v1/pods at 4720");
        let mut gone = add(b"{}");
        gone.change = Change::Delete;
        gone.inferred = true;
        gone.object = None;
        assert_eq!(
            gone.to_string(),
            "Delete v1/pods shop/web-1 at 4711 (inferred)"
        );
        let forbidden = ErrorInfo::server(403, "Forbidden".into(), "pods is forbidden".into());
        assert_eq!(forbidden.to_string(), "Forbidden (403): pods is forbidden");
        let e = Entry::failure(pods(), forbidden);
        assert_eq!(
            e.to_string(),
            "Error v1/pods: Forbidden (403): pods is forbidden"
        );
        let mut stale = Entry::marker(Change::Stale, pods(), Rv::new("4720"));
        stale.namespace = Some(Arc::from("shop"));
        stale.error = Some(Box::new(ErrorInfo::ours(
            Reason::Unreachable,
            0,
            "connection refused".into(),
            false,
        )));
        assert_eq!(
            stale.to_string(),
            "Stale v1/pods in shop at 4720: Unreachable: connection refused"
        );
        let deploy = Resource {
            group: "apps".into(),
            version: "v1".into(),
            resource: "deployments".into(),
            kind: String::new(),
        };
        assert_eq!(deploy.to_string(), "apps/v1/deployments");
        let unresolved = Resource {
            group: String::new(),
            version: String::new(),
            resource: "widgets.example.com".into(),
            kind: String::new(),
        };
        assert_eq!(unresolved.to_string(), "widgets.example.com");
        // `?` into the boxed errors hosts use.
        let boxed: Box<dyn std::error::Error + Send + Sync> =
            e.error().cloned().map(Into::into).unwrap();
        assert_eq!(boxed.to_string(), "Forbidden (403): pods is forbidden");
    }
}

/// A leader's term as its entries carry it (issue 37, fencing): the
/// number, the Lease's `leaseTransitions` when this replica took it,
/// whether the term has ended, and until when it may deliver: its last
/// renewal's start plus the renew deadline. The elector makes one per
/// acquisition, moves its end on at each renewal, and ends it before it
/// says `Following`. The reader drops an entry of a term that ended, or
/// whose time ran out while the elector could not run (a starved thread):
/// no checkpoint covers it, and the next leader delivers it again.
/// Clones share the end and the time.
#[derive(Clone, Debug)]
pub(crate) struct Term {
    number: u64,
    ended: Arc<AtomicBool>,
    /// Nanoseconds after [`base`] until which the term may deliver.
    until: Arc<AtomicU64>,
}

/// The instant terms count their time from.
fn base() -> Instant {
    static BASE: OnceLock<Instant> = OnceLock::new();
    *BASE.get_or_init(Instant::now)
}

fn nanos(at: Instant) -> u64 {
    u64::try_from(at.saturating_duration_since(base()).as_nanos()).unwrap_or(u64::MAX)
}

impl Term {
    /// A term that may deliver until `until`.
    pub(crate) fn new(number: u64, until: Instant) -> Term {
        Term {
            number,
            ended: Arc::new(AtomicBool::new(false)),
            until: Arc::new(AtomicU64::new(nanos(until))),
        }
    }

    /// A term's number alone, for an entry handed out whatever becomes of
    /// the term (its `Leading`).
    pub(crate) fn marker(number: u64) -> Term {
        Term {
            number,
            ended: Arc::new(AtomicBool::new(false)),
            until: Arc::new(AtomicU64::new(u64::MAX)),
        }
    }

    /// The Lease's `leaseTransitions` at acquisition.
    pub(crate) fn number(&self) -> u64 {
        self.number
    }

    /// Renewed: the term may deliver until `until`.
    pub(crate) fn extend(&self, until: Instant) {
        self.until.store(nanos(until), Ordering::SeqCst);
    }

    /// From now on, entries of this term still queued are dropped.
    pub(crate) fn end(&self) {
        self.ended.store(true, Ordering::SeqCst);
    }

    pub(crate) fn is_ended(&self) -> bool {
        self.ended.load(Ordering::SeqCst)
    }

    /// Whether an entry of this term may still be handed out at `now`; a
    /// term whose time ran out is ended here, so that its elector steps
    /// down at its next look even if a late renewal succeeds.
    pub(crate) fn delivers(&self, now: Instant) -> bool {
        if self.is_ended() {
            return false;
        }
        if nanos(now) > self.until.load(Ordering::SeqCst) {
            self.end();
            return false;
        }
        true
    }
}

#[cfg(test)]
mod term_tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_term_delivers_until_its_time_runs_out_then_ends() {
        let now = Instant::now();
        let t = Term::new(1, now + Duration::from_secs(2));
        assert!(t.delivers(now));
        assert!(t.delivers(now + Duration::from_secs(2)));
        // Renewed: on until the new time.
        t.extend(now + Duration::from_secs(4));
        assert!(t.delivers(now + Duration::from_secs(3)));
        // Past it: not handed out, and ended for good (a late renewal
        // does not bring it back).
        let stamped = t.clone();
        assert!(!stamped.delivers(now + Duration::from_secs(5)));
        t.extend(now + Duration::from_secs(10));
        assert!(t.is_ended());
        assert!(!t.delivers(now + Duration::from_secs(6)));
        // A Leading's term never runs out.
        assert!(Term::marker(1).delivers(now + Duration::from_secs(86_400 * 365)));
    }

    #[test]
    fn clones_share_the_end() {
        let t = Term::new(4, Instant::now() + Duration::from_secs(60));
        let stamped = t.clone();
        assert!(!stamped.is_ended());
        t.end();
        assert!(stamped.is_ended());
        assert_eq!(stamped.number(), 4);
    }
}
