//! What to watch: a group/version/resource, its scope and selectors.

use std::fmt;
use std::str::FromStr;

use crate::error::Error;
use crate::wire::request::Collection;
use crate::wire::shard::Shard;

/// One kind of object to stream: the API group, version and plural resource
/// name, optionally narrowed to a namespace and by selectors.
///
/// Build one with [`ResourceSpec::parse`] (`"pods"`, `"apps/v1/deployments"`),
/// [`str::parse`] for a name that stands for one resource, or
/// [`ResourceSpec::new`] for any resource, custom ones included.
///
/// ```
/// use kube_tattler::ResourceSpec;
/// let web: ResourceSpec = "deployments.apps".parse()?;
/// let web = web.in_namespace("shop").with_label_selector("app=web");
/// assert_eq!((web.group.as_str(), web.kind.as_str()), ("apps", "Deployment"));
/// let nodes = ResourceSpec::parse("nodes")?.remove(0).metadata_only();
/// assert!(!nodes.namespaced);
/// # Ok::<(), kube_tattler::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct ResourceSpec {
    /// API group; empty for the core group (`pods`, `nodes`, …).
    pub group: String,
    /// API version, e.g. `v1`.
    pub version: String,
    /// Plural resource name as in the URL, e.g. `deployments`.
    pub resource: String,
    /// Kind of the objects, e.g. `Deployment`. Empty when unknown: it is then
    /// learned from the first object the server sends.
    pub kind: String,
    /// Whether objects live in namespaces. Cluster-scoped resources ignore
    /// [`namespace`](Self::namespace).
    pub namespaced: bool,
    /// Watch only this namespace; `None` watches all of them.
    pub namespace: Option<String>,
    /// A label selector as kubectl takes it (`app=web,tier!=db`).
    pub label_selector: Option<String>,
    /// A field selector (`metadata.name=x`, `spec.nodeName=n1`).
    pub field_selector: Option<String>,
    /// Stream only each object's metadata, as `PartialObjectMetadata` (name,
    /// namespace, labels, annotations, owners, versions; no spec or status):
    /// far less for the apiserver to send and for tattler to read.
    pub metadata_only: bool,
    /// How the objects travel on the wire; the consumer gets JSON either way.
    pub encoding: Encoding,
    /// Stream only this shard's objects (see [`Shard`]); `None` takes
    /// [`Config::shard`](crate::Config::shard), and without that every object.
    pub shard: Option<Shard>,
    /// A name the stream resolves through discovery, as kubectl would (a
    /// short name, a singular, a kind, `resource.group`), when group,
    /// version and resource are not known yet. Set by
    /// [`parse`](Self::parse); an internal encoding, not an API.
    pub(crate) lookup: Option<String>,
}

/// How a resource's objects travel from the apiserver. What the consumer
/// gets is the same JSON either way: tattler turns protobuf into the bytes
/// the server would have sent as JSON.
///
/// ```
/// use kube_tattler::{Encoding, ResourceSpec};
/// let widgets: ResourceSpec = "example.com/v1/widgets".parse()?;
/// let widgets = widgets.with_encoding(Encoding::Json);
/// # Ok::<(), kube_tattler::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Encoding {
    /// Protobuf where tattler can decode it, JSON elsewhere:
    /// [`metadata_only`](ResourceSpec::metadata_only) specs of any resource
    /// (about a quarter of the apiserver's CPU of JSON), and the built-in
    /// kinds of Kubernetes 1.36 (pods, deployments, secrets, …: about a third
    /// to a half). Custom resources, and a server that answers JSON, are read
    /// as JSON.
    #[default]
    Auto,
    /// JSON always.
    Json,
}

/// kubectl's short names and singulars of the built-in resources (the fast
/// path; anything else is resolved through discovery).
const ALIASES: &[(&str, &str)] = &[
    ("po", "pods"),
    ("pod", "pods"),
    ("no", "nodes"),
    ("node", "nodes"),
    ("ns", "namespaces"),
    ("namespace", "namespaces"),
    ("svc", "services"),
    ("service", "services"),
    ("ep", "endpoints"),
    ("cm", "configmaps"),
    ("configmap", "configmaps"),
    ("secret", "secrets"),
    ("sa", "serviceaccounts"),
    ("serviceaccount", "serviceaccounts"),
    ("ev", "events"),
    ("event", "events"),
    ("pv", "persistentvolumes"),
    ("persistentvolume", "persistentvolumes"),
    ("pvc", "persistentvolumeclaims"),
    ("persistentvolumeclaim", "persistentvolumeclaims"),
    ("deploy", "deployments"),
    ("deployment", "deployments"),
    ("rs", "replicasets"),
    ("replicaset", "replicasets"),
    ("sts", "statefulsets"),
    ("statefulset", "statefulsets"),
    ("ds", "daemonsets"),
    ("daemonset", "daemonsets"),
    ("job", "jobs"),
    ("cj", "cronjobs"),
    ("cronjob", "cronjobs"),
    ("ing", "ingresses"),
    ("ingress", "ingresses"),
    ("netpol", "networkpolicies"),
    ("networkpolicy", "networkpolicies"),
    ("endpointslice", "endpointslices"),
    ("role", "roles"),
    ("rolebinding", "rolebindings"),
    ("clusterrole", "clusterroles"),
    ("clusterrolebinding", "clusterrolebindings"),
    ("crd", "customresourcedefinitions"),
    ("crds", "customresourcedefinitions"),
    ("customresourcedefinition", "customresourcedefinitions"),
];

/// Resources tattler knows by name: (short name, group, version, resource, kind, namespaced).
const KNOWN: &[(&str, &str, &str, &str, &str, bool)] = &[
    ("pods", "", "v1", "pods", "Pod", true),
    ("nodes", "", "v1", "nodes", "Node", false),
    ("namespaces", "", "v1", "namespaces", "Namespace", false),
    ("services", "", "v1", "services", "Service", true),
    ("endpoints", "", "v1", "endpoints", "Endpoints", true),
    ("configmaps", "", "v1", "configmaps", "ConfigMap", true),
    ("secrets", "", "v1", "secrets", "Secret", true),
    (
        "serviceaccounts",
        "",
        "v1",
        "serviceaccounts",
        "ServiceAccount",
        true,
    ),
    ("events", "", "v1", "events", "Event", true),
    (
        "persistentvolumes",
        "",
        "v1",
        "persistentvolumes",
        "PersistentVolume",
        false,
    ),
    (
        "persistentvolumeclaims",
        "",
        "v1",
        "persistentvolumeclaims",
        "PersistentVolumeClaim",
        true,
    ),
    (
        "deployments",
        "apps",
        "v1",
        "deployments",
        "Deployment",
        true,
    ),
    (
        "replicasets",
        "apps",
        "v1",
        "replicasets",
        "ReplicaSet",
        true,
    ),
    (
        "statefulsets",
        "apps",
        "v1",
        "statefulsets",
        "StatefulSet",
        true,
    ),
    ("daemonsets", "apps", "v1", "daemonsets", "DaemonSet", true),
    ("jobs", "batch", "v1", "jobs", "Job", true),
    ("cronjobs", "batch", "v1", "cronjobs", "CronJob", true),
    (
        "ingresses",
        "networking.k8s.io",
        "v1",
        "ingresses",
        "Ingress",
        true,
    ),
    (
        "networkpolicies",
        "networking.k8s.io",
        "v1",
        "networkpolicies",
        "NetworkPolicy",
        true,
    ),
    (
        "endpointslices",
        "discovery.k8s.io",
        "v1",
        "endpointslices",
        "EndpointSlice",
        true,
    ),
    (
        "roles",
        "rbac.authorization.k8s.io",
        "v1",
        "roles",
        "Role",
        true,
    ),
    (
        "rolebindings",
        "rbac.authorization.k8s.io",
        "v1",
        "rolebindings",
        "RoleBinding",
        true,
    ),
    (
        "clusterroles",
        "rbac.authorization.k8s.io",
        "v1",
        "clusterroles",
        "ClusterRole",
        false,
    ),
    (
        "clusterrolebindings",
        "rbac.authorization.k8s.io",
        "v1",
        "clusterrolebindings",
        "ClusterRoleBinding",
        false,
    ),
    (
        "customresourcedefinitions",
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        false,
    ),
];

/// Names that stand for several resources.
const SETS: &[(&str, &[&str])] = &[(
    "rbac",
    &[
        "roles",
        "rolebindings",
        "clusterroles",
        "clusterrolebindings",
    ],
)];

impl ResourceSpec {
    /// A spec for any resource. `kind` may be empty (learned from the objects).
    ///
    /// ```
    /// use kube_tattler::ResourceSpec;
    /// let widgets = ResourceSpec::new("example.com", "v1", "widgets", "Widget", true);
    /// assert_eq!(widgets.to_string(), "example.com/v1/widgets");
    /// ```
    #[must_use]
    pub fn new(
        group: impl Into<String>,
        version: impl Into<String>,
        resource: impl Into<String>,
        kind: impl Into<String>,
        namespaced: bool,
    ) -> Self {
        ResourceSpec {
            group: group.into(),
            version: version.into(),
            resource: resource.into(),
            kind: kind.into(),
            namespaced,
            namespace: None,
            label_selector: None,
            field_selector: None,
            metadata_only: false,
            encoding: Encoding::Auto,
            shard: None,
            lookup: None,
        }
    }

    /// Parses one name into the resources it stands for.
    ///
    /// Accepted: any name kubectl resolves — a plural (`pods`), a singular
    /// (`deployment`), a kind (`ConfigMap`), a short name (`cm`, `po`,
    /// `deploy`), `resource.group` (`deployments.apps`,
    /// `widgets.example.com`); a set (`rbac`); `version/resource` for the core
    /// group (`v1/pods`) or `group/version/resource` (`apps/v1/deployments`);
    /// `group/version Kind` (`apps/v1 Deployment`). Names of built-in
    /// resources are known; any other is resolved by the stream through the
    /// server's discovery, as kubectl does (a name the server does not serve
    /// is reported by an Error entry, reason `NotFound`, and looked for again
    /// with backoff: a CRD may come later). A `group/version/resource`
    /// tattler does not know is taken as namespaced with its kind learned
    /// from the objects; to watch a cluster-scoped one, name it otherwise or
    /// use [`ResourceSpec::new`].
    ///
    /// For a name that stands for one resource, `name.parse::<ResourceSpec>()`
    /// ([`FromStr`]) gives it without the `Vec`.
    ///
    /// ```
    /// use kube_tattler::ResourceSpec;
    /// let rbac = ResourceSpec::parse("rbac")?;
    /// assert_eq!(rbac.len(), 4);
    /// let deployments = ResourceSpec::parse("deploy")?.remove(0);
    /// assert_eq!(deployments.gvr(), "apps/v1/deployments");
    /// # Ok::<(), kube_tattler::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Resource`], quoting `name`, when it is none of the forms
    /// above (`"a/b/c/d"`, `"pods!"`, an upper-case group). A well-formed
    /// name the server turns out not to serve is no error here: it is
    /// reported later by an Error entry.
    pub fn parse(name: &str) -> Result<Vec<ResourceSpec>, Error> {
        let name = name.trim();
        if let Some((_, members)) = SETS.iter().find(|(n, _)| *n == name) {
            // Every member is in KNOWN (the test `known_names_and_sets`).
            return Ok(members.iter().filter_map(|m| known(m)).collect());
        }
        if let Some(spec) = known(name) {
            return Ok(vec![spec]);
        }
        if name == "*" || name.starts_with("*.") {
            let group = &name[1..].trim_start_matches('.');
            if !group.is_empty() && !crate::wire::names::dns_name(group, 253, true) {
                return Err(Error::Resource(format!(
                    "{name:?}: a group is a lower-case DNS name"
                )));
            }
            let mut spec = ResourceSpec::new("", "", "", "", true);
            spec.lookup = Some(name.to_string());
            return Ok(vec![spec]);
        }
        if let Some((gv, kind)) = name.split_once(' ') {
            return Self::parse_kind(name, gv, kind.trim()).map(|s| vec![s]);
        }
        let parts: Vec<&str> = name.split('/').collect();
        let (group, version, resource) = match parts.as_slice() {
            [one] => return Self::parse_lookup(name, one).map(|s| vec![s]),
            [v, r] => ("", *v, *r),
            [g, v, r] => (*g, *v, *r),
            _ => {
                return Err(Error::Resource(format!(
                    "{name:?} is neither a resource name (pods, cm, deployment.apps, rbac, …) nor group/version/resource"
                )))
            }
        };
        // The rules discovery holds the server's names to (wire::discovery).
        let valid = |s: &str, max: usize, dots: bool| crate::wire::names::dns_name(s, max, dots);
        if !(group.is_empty() || valid(group, 253, true))
            || !valid(version, 63, false)
            || !valid(resource, 253, true)
        {
            return Err(Error::Resource(format!(
                "{name:?}: group, version and resource must be lower-case DNS names"
            )));
        }
        if let Some(mut spec) = known(resource).filter(|k| k.group == group && k.version == version)
        {
            spec.resource = resource.to_string();
            return Ok(vec![spec]);
        }
        Ok(vec![ResourceSpec::new(group, version, resource, "", true)])
    }

    /// A kubectl name: the built-in table when it has it (`deployments.apps`),
    /// else a spec for the stream to resolve through discovery.
    fn parse_lookup(name: &str, word: &str) -> Result<ResourceSpec, Error> {
        let valid = !word.is_empty()
            && word.len() <= 253
            && word
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
            && word
                .bytes()
                .next()
                .is_some_and(|b| b.is_ascii_alphanumeric());
        if !valid {
            return Err(Error::Resource(format!(
                "{name:?} is neither a resource name (pods, cm, deployment.apps, rbac, …) nor group/version/resource"
            )));
        }
        if let Some((res, group)) = word.split_once('.') {
            if let Some(spec) = known(res).filter(|k| k.group == group) {
                return Ok(spec);
            }
        }
        let mut spec = ResourceSpec::new("", "", "", "", true);
        spec.lookup = Some(word.to_ascii_lowercase());
        Ok(spec)
    }

    /// `apps/v1 Deployment`, `v1 Pod`, `example.com/v1 Widget`: a kind, whose
    /// resource name and scope tattler knows or finds by discovery.
    fn parse_kind(name: &str, gv: &str, kind: &str) -> Result<ResourceSpec, Error> {
        let (group, version) = gv.rsplit_once('/').unwrap_or(("", gv));
        let valid_kind = kind.starts_with(|c: char| c.is_ascii_uppercase())
            && kind.bytes().all(|b| b.is_ascii_alphanumeric());
        if version.is_empty() || !valid_kind {
            return Err(Error::Resource(format!(
                "{name:?}: a kind is named as group/version Kind (apps/v1 Deployment, v1 Pod)"
            )));
        }
        if let Some(&(_, g, v, r, k, ns)) = KNOWN
            .iter()
            .find(|k| k.1 == group && k.2 == version && k.4 == kind)
        {
            return Ok(ResourceSpec::new(g, v, r, k, ns));
        }
        Ok(ResourceSpec::new(group, version, "", kind, true))
    }

    /// Whether this stands for every resource the server serves (`"*"`) or
    /// every one of a group (`"*.apps"`), each streamed as discovery finds it.
    pub fn is_wildcard(&self) -> bool {
        self.resource.is_empty() && self.lookup.as_deref().is_some_and(|l| l.starts_with('*'))
    }

    /// For a wildcard, whether it takes `group`.
    pub(crate) fn wildcard_takes(&self, group: &str) -> bool {
        match self.lookup.as_deref() {
            Some("*") => true,
            Some(l) => l.strip_prefix("*.") == Some(group),
            None => false,
        }
    }

    /// Whether the resource name is still to be found by discovery (the spec
    /// names only a kind).
    pub fn needs_discovery(&self) -> bool {
        self.resource.is_empty()
    }

    /// `group/version/resource`, or `version/resource` for the core group.
    pub fn gvr(&self) -> String {
        if let (true, Some(name)) = (self.resource.is_empty(), &self.lookup) {
            return name.clone();
        }
        if self.resource.is_empty() {
            return format!("{} {}", self.api_version(), self.kind);
        }
        if self.group.is_empty() {
            format!("{}/{}", self.version, self.resource)
        } else {
            format!("{}/{}/{}", self.group, self.version, self.resource)
        }
    }

    /// `apiVersion` as objects of this resource carry it (`v1`, `apps/v1`).
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// This spec narrowed to one namespace (ignored when cluster-scoped).
    ///
    /// ```
    /// let pods: kube_tattler::ResourceSpec = "pods".parse()?;
    /// let shop = pods.in_namespace("shop").with_label_selector("app=web");
    /// assert_eq!(shop.to_string(), "v1/pods (namespace shop, labels app=web)");
    /// # Ok::<(), kube_tattler::Error>(())
    /// ```
    #[must_use]
    pub fn in_namespace(mut self, namespace: impl Into<String>) -> Self {
        if self.namespaced {
            self.namespace = Some(namespace.into());
        }
        self
    }

    /// This spec with a label selector, as kubectl's `-l` takes it.
    #[must_use]
    pub fn with_label_selector(mut self, selector: impl Into<String>) -> Self {
        self.label_selector = Some(selector.into());
        self
    }

    /// This spec streaming only metadata (see [`metadata_only`](Self::metadata_only)).
    #[must_use]
    pub fn metadata_only(mut self) -> Self {
        self.metadata_only = true;
        self
    }

    /// This spec streaming only the objects of `shard`: asked of the server
    /// (`shardSelector`, where it has `ShardedListAndWatch`) and filtered
    /// here either way.
    ///
    /// ```
    /// use kube_tattler::{ResourceSpec, Shard};
    /// let pods = "pods".parse::<ResourceSpec>()?.in_shard(Shard::new(2, 0)?);
    /// assert_eq!(pods.to_string(), "v1/pods (shard 0/2)");
    /// # Ok::<(), kube_tattler::Error>(())
    /// ```
    #[must_use]
    pub fn in_shard(mut self, shard: Shard) -> Self {
        self.shard = Some(shard);
        self
    }

    /// This spec with its wire encoding (see [`Encoding`]).
    #[must_use]
    pub fn with_encoding(mut self, encoding: Encoding) -> Self {
        self.encoding = encoding;
        self
    }

    /// Whether its watches and LISTs ask for protobuf: metadata of any
    /// resource, and the built-in kinds whose JSON tattler writes from
    /// protobuf as the server would (`wire::schema`).
    pub(crate) fn protobuf(&self) -> bool {
        self.encoding == Encoding::Auto
            && (self.metadata_only
                || crate::wire::schema::knows(&self.group, &self.version, &self.kind))
    }

    /// The collection as the server is asked for it: a cluster-scoped
    /// resource has no namespace in its path, whatever the spec says.
    pub(crate) fn collection(&self) -> Collection<'_> {
        Collection {
            group: &self.group,
            version: &self.version,
            resource: &self.resource,
            namespace: self.namespace.as_deref().filter(|_| self.namespaced),
            label_selector: self.label_selector.as_deref(),
            field_selector: self.field_selector.as_deref(),
            shard: self.shard,
        }
    }

    /// The resource's name until discovery resolves it: the plural when
    /// known, else the name as given, else the kind (for entries, thread
    /// names and logs).
    pub(crate) fn shown_name(&self) -> String {
        match (&self.lookup, self.resource.is_empty()) {
            (_, false) => self.resource.clone(),
            (Some(name), true) => name.clone(),
            (None, true) => self.kind.to_lowercase(),
        }
    }

    /// This spec with a field selector, as kubectl's `--field-selector`
    /// takes it.
    #[must_use]
    pub fn with_field_selector(mut self, selector: impl Into<String>) -> Self {
        self.field_selector = Some(selector.into());
        self
    }
}

/// One resource by name, as [`ResourceSpec::parse`] reads it: `"pods"`,
/// `"deploy"`, `"apps/v1/deployments"`, `"widgets.example.com"`, `"*"`.
///
/// ```
/// use kube_tattler::ResourceSpec;
/// let pods: ResourceSpec = "pods".parse()?;
/// assert_eq!(pods, ResourceSpec::new("", "v1", "pods", "Pod", true));
/// assert!("rbac".parse::<ResourceSpec>().is_err()); // four resources
/// # Ok::<(), kube_tattler::Error>(())
/// ```
///
/// # Errors
///
/// As [`ResourceSpec::parse`]; and [`Error::Resource`] for a name that
/// stands for several resources (`rbac`): take those from `parse`.
impl FromStr for ResourceSpec {
    type Err = Error;

    fn from_str(name: &str) -> Result<ResourceSpec, Error> {
        let mut specs = ResourceSpec::parse(name)?;
        match specs.len() {
            1 => Ok(specs.remove(0)),
            n => Err(Error::Resource(format!(
                "{:?} stands for {n} resources: use ResourceSpec::parse for it",
                name.trim()
            ))),
        }
    }
}

/// What the spec streams, for people: [`gvr`](ResourceSpec::gvr), then
/// its namespace, selectors, metadata-only and shard in parentheses when set
/// (`v1/pods (namespace shop, labels app=web)`). Without those, it parses
/// back into the same spec.
impl fmt::Display for ResourceSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.gvr())?;
        let scope = [
            self.namespace.as_deref().map(|n| format!("namespace {n}")),
            self.label_selector
                .as_deref()
                .map(|l| format!("labels {l}")),
            self.field_selector
                .as_deref()
                .map(|s| format!("fields {s}")),
            self.metadata_only.then(|| "metadata only".to_string()),
            self.shard.map(|s| format!("shard {s}")),
        ];
        let mut first = true;
        for part in scope.iter().flatten() {
            f.write_str(if first { " (" } else { ", " })?;
            f.write_str(part)?;
            first = false;
        }
        if !first {
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// A built-in resource by plural, singular, short name or kind (any case).
fn known(name: &str) -> Option<ResourceSpec> {
    let lower = name.to_ascii_lowercase();
    let plural = ALIASES
        .iter()
        .find(|(a, _)| *a == lower)
        .map_or(lower.as_str(), |(_, p)| p);
    KNOWN
        .iter()
        .find(|k| k.0 == plural || k.4.eq_ignore_ascii_case(&lower))
        .map(|&(_, g, v, r, k, ns)| ResourceSpec::new(g, v, r, k, ns))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_collection_has_a_namespace_only_when_namespaced() {
        let nodes = ResourceSpec::parse("nodes")
            .unwrap()
            .remove(0)
            .in_namespace("x");
        assert_eq!(nodes.collection().namespace, None);
        let pods = ResourceSpec::parse("pods")
            .unwrap()
            .remove(0)
            .in_namespace("shop")
            .with_label_selector("app=web");
        let c = pods.collection();
        assert_eq!(
            (
                c.group,
                c.version,
                c.resource,
                c.namespace,
                c.label_selector
            ),
            ("", "v1", "pods", Some("shop"), Some("app=web"))
        );
    }

    #[test]
    fn known_names_and_sets() {
        let pods = ResourceSpec::parse("pods").unwrap();
        assert_eq!(pods, vec![ResourceSpec::new("", "v1", "pods", "Pod", true)]);
        let rbac: Vec<String> = ResourceSpec::parse("rbac")
            .unwrap()
            .iter()
            .map(|s| s.gvr())
            .collect();
        assert_eq!(
            rbac,
            [
                "rbac.authorization.k8s.io/v1/roles",
                "rbac.authorization.k8s.io/v1/rolebindings",
                "rbac.authorization.k8s.io/v1/clusterroles",
                "rbac.authorization.k8s.io/v1/clusterrolebindings"
            ]
        );
        let nodes = &ResourceSpec::parse("nodes").unwrap()[0];
        assert!(!nodes.namespaced);
        assert_eq!(nodes.clone().in_namespace("x").namespace, None);
    }

    #[test]
    fn group_version_resource() {
        let d = &ResourceSpec::parse("apps/v1/deployments").unwrap()[0];
        assert_eq!(
            (d.kind.as_str(), d.api_version().as_str()),
            ("Deployment", "apps/v1")
        );
        let w = &ResourceSpec::parse("example.com/v1alpha1/widgets").unwrap()[0];
        assert_eq!(
            w,
            &ResourceSpec::new("example.com", "v1alpha1", "widgets", "", true)
        );
        let p = &ResourceSpec::parse("v1/pods").unwrap()[0];
        assert_eq!(p.kind, "Pod");
    }

    #[test]
    fn kinds() {
        let d = &ResourceSpec::parse("apps/v1 Deployment").unwrap()[0];
        assert_eq!((d.resource.as_str(), d.namespaced), ("deployments", true));
        let n = &ResourceSpec::parse("v1 Node").unwrap()[0];
        assert_eq!((n.resource.as_str(), n.namespaced), ("nodes", false));
        let w = &ResourceSpec::parse("example.com/v1 Widget").unwrap()[0];
        assert!(w.needs_discovery());
        assert_eq!(w.gvr(), "example.com/v1 Widget");
    }

    #[test]
    fn kubectl_names_are_known_or_left_to_discovery() {
        for (name, want) in [
            ("cm", "v1/configmaps"),
            ("po", "v1/pods"),
            ("deploy", "apps/v1/deployments"),
            ("Deployment", "apps/v1/deployments"),
            ("deployment", "apps/v1/deployments"),
            ("deployments.apps", "apps/v1/deployments"),
            ("CONFIGMAPS", "v1/configmaps"),
            ("crd", "apiextensions.k8s.io/v1/customresourcedefinitions"),
        ] {
            let s = ResourceSpec::parse(name).unwrap();
            assert_eq!(
                (s.len(), s[0].gvr(), s[0].lookup.clone()),
                (1, want.to_string(), None),
                "{name}"
            );
        }
        for name in ["podtemplates", "widgets.example.com", "Widget", "podz"] {
            let s = &ResourceSpec::parse(name).unwrap()[0];
            assert!(s.needs_discovery(), "{name}");
            assert_eq!(
                s.lookup.as_deref(),
                Some(name.to_ascii_lowercase().as_str())
            );
            assert_eq!(s.gvr(), name.to_ascii_lowercase());
        }
    }

    #[test]
    fn from_str_takes_one_resource_and_display_reads_back() {
        let pods: ResourceSpec = " pods ".parse().unwrap();
        assert_eq!(pods, ResourceSpec::parse("pods").unwrap().remove(0));
        let e = "rbac".parse::<ResourceSpec>().unwrap_err().to_string();
        assert_eq!(
            e,
            "invalid resource: \"rbac\" stands for 4 resources: use ResourceSpec::parse for it"
        );
        assert!("a/b/c/d".parse::<ResourceSpec>().is_err());
        for name in [
            "pods",
            "deploy",
            "v1/pods",
            "example.com/v1alpha1/widgets",
            "widgets.example.com",
            "example.com/v1 Widget",
            "*",
            "*.apps",
        ] {
            let spec: ResourceSpec = name.parse().unwrap();
            let back: ResourceSpec = spec.to_string().parse().unwrap();
            assert_eq!(back, spec, "{name} shown as {spec}");
        }
        let scoped = ResourceSpec::parse("nodes")
            .unwrap()
            .remove(0)
            .metadata_only();
        assert_eq!(scoped.to_string(), "v1/nodes (metadata only)");
        let scoped = pods
            .in_namespace(String::from("a"))
            .with_label_selector("app=web")
            .with_field_selector("spec.nodeName=n1");
        assert_eq!(
            scoped.to_string(),
            "v1/pods (namespace a, labels app=web, fields spec.nodeName=n1)"
        );
    }

    #[test]
    fn bad_names_are_errors_naming_the_input() {
        for bad in [
            "",
            "-pods",
            "a_b",
            "pods!",
            "a/b/c/d",
            "Apps/v1/deployments",
            "apps//x",
            "apps/v1 deployment",
            "apps/v1 De-ploy",
        ] {
            let e = ResourceSpec::parse(bad).unwrap_err().to_string();
            assert!(e.contains(&format!("{bad:?}")), "{e}");
        }
    }
}
