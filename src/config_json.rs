//! The configuration as one JSON document: the form C and Go callers pass.

use std::time::Duration;

use serde_json::Value;

use crate::access::cluster::Access;
use crate::access::secret::Token;
use crate::config::Config;
use crate::error::Error;
use crate::resource::ResourceSpec;

/// The keys and the JSON type each takes. Checked one by one so that an
/// error names the key.
#[derive(Default)]
struct JsonConfig {
    server: Option<String>,
    ca_file: Option<String>,
    ca_data: Option<String>,
    token: Option<String>,
    token_file: Option<String>,
    insecure: Option<bool>,
    namespace: Option<String>,
    label_selector: Option<String>,
    field_selector: Option<String>,
    resources: Option<Value>,
    channel_capacity: Option<u64>,
    idle_timeout_secs: Option<u64>,
    connect_timeout_secs: Option<u64>,
    gzip: Option<bool>,
    page_size: Option<u64>,
    max_frame_bytes: Option<u64>,
    kubeconfig: Option<String>,
    context: Option<String>,
    in_cluster: Option<bool>,
    tls_server_name: Option<String>,
    proxy: Option<String>,
    client_cert_file: Option<String>,
    client_key_file: Option<String>,
    username: Option<String>,
    password: Option<String>,
    exec: Option<Value>,
    scrub: Option<bool>,
    scrub_secret_data: Option<bool>,
    metadata_only: Option<bool>,
    initial_events_timeout_secs: Option<u64>,
    discovery_interval_secs: Option<u64>,
    max_buffered_bytes: Option<u64>,
    relist_interval_secs: Option<u64>,
    drop_managed_fields: Option<bool>,
    event_kinds: Option<Vec<String>>,
    shard: Option<crate::wire::shard::Shard>,
    leader_election: Option<crate::config::LeaderElection>,
    checkpoint_in_cluster: Option<crate::config::InClusterCheckpoint>,
}

const KEYS: &str = "server, ca_file, ca_data, token, token_file, insecure, namespace, label_selector, \
field_selector, resources, channel_capacity, idle_timeout_secs, connect_timeout_secs, gzip, page_size, max_frame_bytes, \
kubeconfig, context, in_cluster, tls_server_name, proxy, client_cert_file, client_key_file, username, password, exec, \
scrub, scrub_secret_data, metadata_only, drop_managed_fields, event_kinds, shard, relist_interval_secs, \
initial_events_timeout_secs, leader_election, checkpoint_in_cluster, max_buffered_bytes, discovery_interval_secs";

impl JsonConfig {
    fn parse(json: &str) -> Result<JsonConfig, Error> {
        // serde's messages quote the offending value (a password, say): only
        // the position is told.
        let value: Value = serde_json::from_str(json).map_err(|e| {
            Error::Config(format!(
                "JSON: not valid JSON (line {}, column {})",
                e.line(),
                e.column()
            ))
        })?;
        let Value::Object(doc) = value else {
            return Err(Error::Config(
                "JSON: the configuration must be an object".into(),
            ));
        };
        let mut j = JsonConfig::default();
        for (key, v) in &doc {
            let k = key.as_str();
            match k {
                "server" => j.server = Some(string(k, v)?),
                "ca_file" => j.ca_file = Some(string(k, v)?),
                "ca_data" => j.ca_data = Some(string(k, v)?),
                "token" => j.token = Some(string(k, v)?),
                "token_file" => j.token_file = Some(string(k, v)?),
                "insecure" | "insecure_skip_tls_verify" => j.insecure = Some(boolean(k, v)?),
                "namespace" => j.namespace = Some(string(k, v)?),
                "label_selector" => j.label_selector = Some(string(k, v)?),
                "field_selector" => j.field_selector = Some(string(k, v)?),
                "resources" => j.resources = Some(v.clone()),
                "channel_capacity" => j.channel_capacity = Some(number(k, v)?),
                "idle_timeout_secs" => j.idle_timeout_secs = Some(number(k, v)?),
                "connect_timeout_secs" => j.connect_timeout_secs = Some(number(k, v)?),
                "gzip" => j.gzip = Some(boolean(k, v)?),
                "page_size" => j.page_size = Some(number(k, v)?),
                "max_frame_bytes" => j.max_frame_bytes = Some(number(k, v)?),
                "kubeconfig" => j.kubeconfig = Some(string(k, v)?),
                "context" => j.context = Some(string(k, v)?),
                "in_cluster" => j.in_cluster = Some(boolean(k, v)?),
                "tls_server_name" => j.tls_server_name = Some(string(k, v)?),
                "proxy" => j.proxy = Some(string(k, v)?),
                "client_cert_file" => j.client_cert_file = Some(string(k, v)?),
                "client_key_file" => j.client_key_file = Some(string(k, v)?),
                "username" => j.username = Some(string(k, v)?),
                "password" => j.password = Some(string(k, v)?),
                "exec" => j.exec = Some(v.clone()),
                "scrub" => j.scrub = Some(boolean(k, v)?),
                "scrub_secret_data" => j.scrub_secret_data = Some(boolean(k, v)?),
                "metadata_only" => j.metadata_only = Some(boolean(k, v)?),
                "initial_events_timeout_secs" => {
                    j.initial_events_timeout_secs = Some(number(k, v)?)
                }
                "max_buffered_bytes" => j.max_buffered_bytes = Some(number(k, v)?),
                "discovery_interval_secs" => j.discovery_interval_secs = Some(number(k, v)?),
                "relist_interval_secs" => j.relist_interval_secs = Some(number(k, v)?),
                "drop_managed_fields" => j.drop_managed_fields = Some(boolean(k, v)?),
                "event_kinds" => j.event_kinds = Some(strings(k, v)?),
                "shard" => j.shard = Some(shard(k, v)?),
                "leader_election" => j.leader_election = Some(leader_election(v)?),
                "checkpoint_in_cluster" => {
                    j.checkpoint_in_cluster = Some(in_cluster_checkpoint(v)?)
                }
                _ => {
                    return Err(Error::Config(format!(
                        "JSON: unknown key `{k}` (known: {KEYS})"
                    )))
                }
            }
        }
        Ok(j)
    }
}

/// `{"command":"…","args":[…],"env":{"K":"V"},"api_version":"client.authentication.k8s.io/v1",
/// "install_hint":"…","timeout_secs":60}`
fn exec(v: &Value) -> Result<crate::access::auth::ExecConfig, Error> {
    let o = v.as_object().ok_or_else(|| wrong("exec", "an object"))?;
    let mut e = crate::access::auth::ExecConfig::new("", &[]);
    for (k, v) in o {
        match k.as_str() {
            "command" => e.command = string("exec.command", v)?,
            "api_version" => e.api_version = string("exec.api_version", v)?,
            "args" => e.args = strings("exec.args", v)?,
            "env" => {
                let map = v
                    .as_object()
                    .ok_or_else(|| wrong("exec.env", "an object of strings"))?;
                for (name, val) in map {
                    e.env
                        .push((name.clone(), string(&format!("exec.env.{name}"), val)?));
                }
            }
            "install_hint" => e.install_hint = Some(string("exec.install_hint", v)?),
            "timeout_secs" => {
                e.timeout = Duration::from_secs(number("exec.timeout_secs", v)?.max(1))
            }
            other => {
                return Err(Error::Config(format!(
                    "JSON: unknown key `exec.{other}` (known: command, args, env, api_version, install_hint, timeout_secs)"
                )))
            }
        }
    }
    if e.command.is_empty() {
        return Err(Error::Config("JSON: missing key `exec.command`".into()));
    }
    Ok(e)
}

/// `{"count": N, "index": i}`: shard `i` (from 0) of `N`.
fn shard(key: &str, v: &Value) -> Result<crate::wire::shard::Shard, Error> {
    const WHAT: &str = r#"{"count": N, "index": i}, shard i (from 0) of N"#;
    let o = v.as_object().ok_or_else(|| wrong(key, WHAT))?;
    let (mut count, mut index) = (None, None);
    for (k, v) in o {
        match k.as_str() {
            "count" => count = Some(number(&format!("{key}.count"), v)?),
            "index" => index = Some(number(&format!("{key}.index"), v)?),
            other => {
                return Err(Error::Config(format!(
                    "JSON: unknown key `{key}.{other}` (known: count, index)"
                )))
            }
        }
    }
    let (Some(count), Some(index)) = (count, index) else {
        return Err(wrong(key, WHAT));
    };
    let small = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
    crate::wire::shard::Shard::new(small(count), small(index)).map_err(|e| match e {
        Error::Config(m) => Error::Config(format!(
            "JSON: `{key}`{}",
            m.strip_prefix("shard").unwrap_or(&m)
        )),
        e => e,
    })
}

/// `{"namespace","lease","identity"?,"lease_duration_secs"?,"renew_deadline_secs"?,"retry_period_secs"?,"shards"?}`
fn leader_election(v: &Value) -> Result<crate::config::LeaderElection, Error> {
    const KEY: &str = "leader_election";
    let o = v.as_object().ok_or_else(|| wrong(KEY, "an object"))?;
    let (mut namespace, mut lease) = (None, None);
    let mut e = crate::config::LeaderElection::new("", "");
    let secs = |k: &str, v: &Value| {
        let n = number(&format!("{KEY}.{k}"), v)?;
        Ok::<_, Error>(Duration::from_secs(n.min(86_400)))
    };
    for (k, v) in o {
        let key = format!("{KEY}.{k}");
        match k.as_str() {
            "namespace" => namespace = Some(string(&key, v)?),
            "lease" => lease = Some(string(&key, v)?),
            "identity" => e.identity = string(&key, v)?,
            "lease_duration_secs" => e.lease_duration = secs(k, v)?,
            "renew_deadline_secs" => e.renew_deadline = secs(k, v)?,
            "retry_period_secs" => e.retry_period = secs(k, v)?,
            "shards" => e.shards = u32::try_from(number(&key, v)?).unwrap_or(u32::MAX),
            other => {
                return Err(Error::Config(format!(
                    "JSON: unknown key `{KEY}.{other}` (known: namespace, lease, identity, lease_duration_secs, renew_deadline_secs, retry_period_secs, shards)"
                )))
            }
        }
    }
    let missing = |k: &str| Error::Config(format!("JSON: missing key `{KEY}.{k}`"));
    e.namespace = namespace.ok_or_else(|| missing("namespace"))?;
    e.lease = lease.ok_or_else(|| missing("lease"))?;
    Ok(e)
}

/// `{"namespace","name","interval_secs"?}`
fn in_cluster_checkpoint(v: &Value) -> Result<crate::config::InClusterCheckpoint, Error> {
    const KEY: &str = "checkpoint_in_cluster";
    let o = v.as_object().ok_or_else(|| wrong(KEY, "an object"))?;
    let (mut namespace, mut name) = (None, None);
    let mut c = crate::config::InClusterCheckpoint::new("", "");
    for (k, v) in o {
        let key = format!("{KEY}.{k}");
        match k.as_str() {
            "namespace" => namespace = Some(string(&key, v)?),
            "name" => name = Some(string(&key, v)?),
            "interval_secs" => c.interval = Duration::from_secs(number(&key, v)?.min(86_400)),
            other => {
                return Err(Error::Config(format!(
                    "JSON: unknown key `{KEY}.{other}` (known: namespace, name, interval_secs)"
                )))
            }
        }
    }
    let missing = |k: &str| Error::Config(format!("JSON: missing key `{KEY}.{k}`"));
    c.namespace = namespace.ok_or_else(|| missing("namespace"))?;
    c.name = name.ok_or_else(|| missing("name"))?;
    Ok(c)
}

/// What names in a resource list take: the document's top-level scope.
pub(crate) struct Defaults<'a> {
    pub namespace: Option<&'a str>,
    pub label_selector: Option<&'a str>,
    pub field_selector: Option<&'a str>,
    pub metadata_only: bool,
}

/// A `resources` array: names (taking `defaults`) and objects
/// `{"resource","namespace","namespaces","label_selector","field_selector","metadata_only","encoding","shard"}`
/// (taking only their own fields; several namespaces, one spec each).
pub(crate) fn resource_list(v: &Value, defaults: &Defaults) -> Result<Vec<ResourceSpec>, Error> {
    const KIND: &str = "an array of resource names and objects";
    let items = v.as_array().ok_or_else(|| wrong("resources", KIND))?;
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        if let Some(name) = item.as_str() {
            for mut spec in ResourceSpec::parse(name)? {
                if let Some(ns) = defaults.namespace {
                    spec = spec.in_namespace(ns);
                }
                spec.label_selector = defaults.label_selector.map(String::from);
                spec.field_selector = defaults.field_selector.map(String::from);
                spec.metadata_only = defaults.metadata_only;
                out.push(spec);
            }
            continue;
        }
        let obj = item.as_object().ok_or_else(|| wrong("resources", KIND))?;
        let key = |k: &str| format!("resources[{i}].{k}");
        let (mut name, mut namespaces, mut label, mut field, mut meta) =
            (None, None, None, None, false);
        let mut encoding = crate::resource::Encoding::Auto;
        let mut in_shard = None;
        for (k, v) in obj {
            match k.as_str() {
                "resource" => name = Some(string(&key(k), v)?),
                "namespace" => namespaces = Some(vec![string(&key(k), v)?]),
                "namespaces" => namespaces = Some(strings(&key(k), v)?),
                "label_selector" => label = Some(string(&key(k), v)?),
                "field_selector" => field = Some(string(&key(k), v)?),
                "metadata_only" => meta = boolean(&key(k), v)?,
                "shard" => in_shard = Some(shard(&key(k), v)?),
                "encoding" => {
                    encoding = match string(&key(k), v)?.as_str() {
                        "auto" => crate::resource::Encoding::Auto,
                        "json" => crate::resource::Encoding::Json,
                        _ => {
                            return Err(Error::Config(format!(
                                "JSON: `{}` is \"auto\" or \"json\"",
                                key(k)
                            )))
                        }
                    }
                }
                other => {
                    return Err(Error::Config(format!(
                        "JSON: unknown key `{}` (known: resource, namespace, namespaces, label_selector, field_selector, metadata_only, encoding, shard)",
                        key(other)
                    )))
                }
            }
        }
        if obj.contains_key("namespace") && obj.contains_key("namespaces") {
            return Err(Error::Config(format!(
                "JSON: give `{}` or `{}`, not both",
                key("namespace"),
                key("namespaces")
            )));
        }
        let name =
            name.ok_or_else(|| Error::Config(format!("JSON: missing key `{}`", key("resource"))))?;
        for mut spec in ResourceSpec::parse(&name)? {
            spec.label_selector.clone_from(&label);
            spec.field_selector.clone_from(&field);
            spec.metadata_only = meta;
            spec.encoding = encoding;
            spec.shard = in_shard;
            match &namespaces {
                Some(list) if spec.namespaced => {
                    if list.is_empty() {
                        return Err(Error::Config(format!(
                            "JSON: `{}` is empty",
                            key("namespaces")
                        )));
                    }
                    for ns in list {
                        out.push(spec.clone().in_namespace(ns));
                    }
                }
                _ => out.push(spec),
            }
        }
    }
    Ok(out)
}

fn wrong(key: &str, what: &str) -> Error {
    Error::Config(format!("JSON: `{key}` must be {what}"))
}

fn string(key: &str, v: &Value) -> Result<String, Error> {
    v.as_str()
        .map(String::from)
        .ok_or_else(|| wrong(key, "a string"))
}

fn strings(key: &str, v: &Value) -> Result<Vec<String>, Error> {
    let list = v
        .as_array()
        .ok_or_else(|| wrong(key, "an array of strings"))?;
    let names = list.iter().map(|n| n.as_str().map(String::from));
    names
        .collect::<Option<_>>()
        .ok_or_else(|| wrong(key, "an array of strings"))
}

fn boolean(key: &str, v: &Value) -> Result<bool, Error> {
    v.as_bool().ok_or_else(|| wrong(key, "true or false"))
}

fn number(key: &str, v: &Value) -> Result<u64, Error> {
    v.as_u64()
        .ok_or_else(|| wrong(key, "a non-negative integer"))
}

fn narrow<T: TryFrom<u64>>(key: &str, v: u64) -> Result<T, Error> {
    T::try_from(v).map_err(|_| wrong(key, "a smaller number"))
}

impl Config {
    /// Checks the keys of a configuration document and the JSON type of
    /// each, as [`Config::from_json`] does first, without building anything
    /// (no required key, no file read): the same errors for the same
    /// mistakes. For the C configuration builder, which refuses an unknown
    /// key when it is set.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] naming the key, as [`Config::from_json`].
    #[doc(hidden)]
    pub fn check_json_keys(json: &str) -> Result<(), Error> {
        JsonConfig::parse(json).map(|_| ())
    }

    /// Reads a configuration from JSON, for example
    /// `{"server":"https://127.0.0.1:6443","ca_file":"ca.crt","token_file":"token","resources":["pods","apps/v1/deployments"]}`.
    ///
    /// Keys: `server`, `ca_file`, `ca_data` (PEM text), `token`, `token_file`,
    /// `insecure`, `namespace`, `label_selector`, `field_selector`,
    /// `resources` (names as [`ResourceSpec::parse`] reads them),
    /// `channel_capacity`, `idle_timeout_secs`, `connect_timeout_secs`, `gzip`,
    /// `page_size`, `max_frame_bytes`, `shard` (`{"count": N, "index": i}`,
    /// also on a resource object); `leader_election` and
    /// `checkpoint_in_cluster` (objects: see [`LeaderElection`](crate::LeaderElection)
    /// and [`InClusterCheckpoint`](crate::InClusterCheckpoint)). Files named
    /// are read now.
    ///
    /// ```no_run
    /// let config = kube_tattler::Config::from_json(&std::fs::read_to_string("tattler.json")?)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when the text is not JSON (line and column), a key
    /// is unknown or of the wrong type (named), or the keys contradict one
    /// another; [`Error::Resource`] for a resource name
    /// [`ResourceSpec::parse`] refuses; [`Error::ReadFile`] for a file that
    /// cannot be read; and the errors of [`Access::from_kubeconfig`],
    /// [`Access::in_cluster`] or [`Access::infer`] when no `server` is given.
    pub fn from_json(json: &str) -> Result<Config, Error> {
        let j = JsonConfig::parse(json)?;
        // Where the cluster is: explicit, a kubeconfig, in-cluster, or inferred as kubectl would.
        let mut c = match (&j.server, &j.kubeconfig, &j.context, j.in_cluster) {
            (Some(server), None, None, None | Some(false)) => Config::new(Access::new(server)),
            (Some(_), _, _, _) => {
                return Err(Error::Config(
                    "JSON: `server` excludes `kubeconfig`, `context` and `in_cluster`".into(),
                ))
            }
            (None, None, None, Some(true)) => Config::new(Access::in_cluster()?),
            (None, k, ctx, None | Some(false)) if k.is_some() || ctx.is_some() => Config::new(
                Access::from_kubeconfig(k.as_deref().map(std::path::Path::new), ctx.as_deref())?,
            ),
            (None, _, _, Some(true)) => {
                return Err(Error::Config(
                    "JSON: `in_cluster` excludes `kubeconfig` and `context`".into(),
                ))
            }
            (None, _, _, _) => Config::new(Access::infer()?),
        };
        let list = j
            .resources
            .ok_or_else(|| Error::Config("JSON: missing key `resources`".into()))?;
        let defaults = Defaults {
            namespace: j.namespace.as_deref(),
            label_selector: j.label_selector.as_deref(),
            field_selector: j.field_selector.as_deref(),
            metadata_only: j.metadata_only.unwrap_or(false),
        };
        c.resources.extend(resource_list(&list, &defaults)?);
        match (j.ca_file, j.ca_data) {
            (Some(_), Some(_)) => {
                return Err(Error::Config(
                    "JSON: give ca_file or ca_data, not both".into(),
                ))
            }
            (Some(f), None) => c.access = c.access.ca_file(&f)?,
            (None, Some(pem)) => c.access.ca_pem = Some(pem.into_bytes()),
            (None, None) => {}
        }
        // One way to authenticate, as client-go's "more than one authentication
        // method found" refuses a kubeconfig user with several; tattler also
        // refuses exec beside a client certificate (client-go would silently
        // skip the plugin).
        let methods = [
            (
                j.token.is_some() || j.token_file.is_some(),
                "token/token_file",
            ),
            (
                j.username.is_some() || j.password.is_some(),
                "username/password",
            ),
            (j.exec.is_some(), "exec"),
        ];
        let set: Vec<&str> = methods.iter().filter(|m| m.0).map(|m| m.1).collect();
        if set.len() > 1 {
            return Err(Error::Config(format!(
                "JSON: {} are set together; give one way to authenticate",
                set.join(" and ")
            )));
        }
        if j.exec.is_some() && j.client_cert_file.is_some() {
            return Err(Error::Config(
                "JSON: exec and client_cert_file are both set; give one way to authenticate".into(),
            ));
        }
        match (j.token, j.token_file) {
            (Some(_), Some(_)) => {
                return Err(Error::Config(
                    "JSON: give token or token_file, not both".into(),
                ))
            }
            (Some(t), None) => c.access.auth = crate::access::auth::Auth::Token(Token::new(&t)),
            (None, Some(f)) => c.access = c.access.token_file(&f)?,
            (None, None) => {}
        }
        match (j.client_cert_file, j.client_key_file) {
            (Some(cert), Some(key)) => {
                let read = |f: &str| {
                    std::fs::read(f).map_err(|source| Error::ReadFile {
                        path: f.into(),
                        source,
                    })
                };
                let id = crate::access::secret::ClientIdentity {
                    cert_pem: read(&cert)?,
                    key_pem: read(&key)?,
                };
                crate::access::pem::check_identity(&id, "JSON: client_cert_file")
                    .map_err(Error::Config)?;
                c.access.client_identity = Some(id);
            }
            (None, None) => {}
            _ => {
                return Err(Error::Config(
                    "JSON: client_cert_file and client_key_file come together".into(),
                ))
            }
        }
        match (j.username, j.password) {
            (Some(username), Some(pw)) => {
                c.access.auth = crate::access::auth::Auth::Basic {
                    username,
                    password: Token::new(&pw),
                }
            }
            (None, None) => {}
            _ => {
                return Err(Error::Config(
                    "JSON: username and password come together".into(),
                ))
            }
        }
        if let Some(e) = j.exec {
            let e = exec(&e)?;
            e.check().map_err(|m| Error::Config(format!("JSON: {m}")))?;
            c.access.auth = crate::access::auth::Auth::Exec(e);
        }
        c.leader_election = j.leader_election;
        c.checkpoint_in_cluster = j.checkpoint_in_cluster;
        if let Some(v) = j.relist_interval_secs {
            c.relist_interval = (v > 0).then(|| Duration::from_secs(v));
        }
        if let Some(v) = j.scrub {
            c.shaping.scrub = v;
        }
        if let Some(v) = j.scrub_secret_data {
            c.shaping.scrub_secret_data = v;
        }
        if let Some(v) = j.initial_events_timeout_secs {
            c.tuning.initial_events_timeout = Duration::from_secs(v);
        }
        if let Some(v) = j.discovery_interval_secs {
            c.tuning.discovery_interval = Duration::from_secs(v);
        }
        if let Some(v) = j.max_buffered_bytes {
            c.tuning.max_buffered_bytes = narrow("max_buffered_bytes", v)?;
        }
        if let Some(v) = j.drop_managed_fields {
            c.shaping.drop_managed_fields = v;
        }
        if j.event_kinds.is_some() {
            c.shaping.event_kinds = j.event_kinds;
        }
        c.shard = j.shard;
        if let Some(v) = j.insecure {
            c.access.insecure_skip_tls_verify = v;
        }
        if c.access.insecure_skip_tls_verify && c.access.ca_pem.is_some() {
            return Err(Error::Config(format!(
                "JSON: {}",
                crate::access::cluster::INSECURE_WITH_CA
            )));
        }
        // Checked now, as a kubeconfig's are: a bad bundle is the document's fault.
        if let Some(pem) = &c.access.ca_pem {
            crate::access::pem::ca_bundle(pem)
                .map_err(|e| Error::Config(format!("JSON: ca_file/ca_data: {e}")))?;
        }
        if let Some(v) = j.tls_server_name {
            c.access.tls_server_name = Some(v);
        }
        match j.proxy.as_deref() {
            None => {}
            Some("env") => c.access.proxy = crate::access::proxy::ProxyConfig::FromEnv,
            Some("none") => c.access.proxy = crate::access::proxy::ProxyConfig::None,
            Some(url) => c.access.proxy = crate::access::proxy::ProxyConfig::Url(url.to_string()),
        }
        if let Some(v) = j.channel_capacity {
            c.tuning.channel_capacity = narrow("channel_capacity", v)?;
        }
        if let Some(v) = j.idle_timeout_secs {
            c.tuning.idle_timeout = Duration::from_secs(v);
        }
        if let Some(v) = j.connect_timeout_secs {
            c.tuning.connect_timeout = Duration::from_secs(v);
        }
        if let Some(v) = j.gzip {
            c.tuning.gzip = v;
        }
        if let Some(v) = j.page_size {
            c.tuning.page_size = narrow("page_size", v)?;
        }
        if let Some(v) = j.max_frame_bytes {
            c.tuning.max_frame_bytes = narrow("max_frame_bytes", v)?;
        }
        Ok(c)
    }
}

/// The JSON encoding of resource lists lives with the rest of the JSON
/// configuration: `resource.rs` knows no JSON.
impl ResourceSpec {
    /// The C ABI's and Go's encoding of a resource list, not an API for Rust
    /// callers (who build specs with [`parse`](Self::parse) and the
    /// builders). Reads a JSON array of resources, as the configuration's `resources`:
    /// each item a name (as [`parse`](Self::parse) reads it; names take the
    /// given namespace and selectors) or an object
    /// `{"resource": NAME, "namespace": NS, "namespaces": [NS, …],
    /// "label_selector": S, "field_selector": S, "metadata_only": BOOL,
    /// "encoding": "auto" | "json", "shard": {"count": N, "index": I}}`
    /// (an object takes only its own fields; several namespaces give one
    /// spec, and one stream, each). Names take `metadata_only` too.
    ///
    /// # Errors
    ///
    /// [`Error::Resource`] when `json` is not JSON, and an error naming the
    /// item and key when an item is not a resource.
    #[doc(hidden)]
    pub fn list_from_json(
        json: &str,
        namespace: Option<&str>,
        label_selector: Option<&str>,
        field_selector: Option<&str>,
        metadata_only: bool,
    ) -> Result<Vec<ResourceSpec>, Error> {
        let v: serde_json::Value = serde_json::from_str(json).map_err(|e| {
            Error::Resource(format!(
                "not JSON (line {}, column {})",
                e.line(),
                e.column()
            ))
        })?;
        let defaults = Defaults {
            namespace,
            label_selector,
            field_selector,
            metadata_only,
        };
        resource_list(&v, &defaults)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_document() {
        let ca = include_str!("../tests/fixtures/ca.crt").replace('\n', "\\n");
        let c = Config::from_json(&format!(
            r#"{{"server":"https://10.0.0.1:6443","token":"t0k","insecure":false,"gzip":true,"namespace":"ns",
                "resources":["pods","nodes","apps/v1/deployments"],"label_selector":"app=x",
                "channel_capacity":8,"idle_timeout_secs":60,"page_size":100,
                "ca_data":"{ca}"}}"#
        ))
        .unwrap();
        assert_eq!(c.access.server, "https://10.0.0.1:6443");
        assert_eq!(
            c.access.auth,
            crate::access::auth::Auth::Token(Token::new("t0k"))
        );
        assert!(!c.access.insecure_skip_tls_verify && c.tuning.gzip);
        assert_eq!(
            (
                c.tuning.channel_capacity,
                c.tuning.idle_timeout,
                c.tuning.page_size
            ),
            (8, Duration::from_secs(60), 100)
        );
        let ns: Vec<Option<&str>> = c.resources.iter().map(|r| r.namespace.as_deref()).collect();
        assert_eq!(ns, [Some("ns"), None, Some("ns")]);
        assert!(c
            .resources
            .iter()
            .all(|r| r.label_selector.as_deref() == Some("app=x")));
    }

    #[test]
    fn encoding_is_per_resource_object() {
        let c = Config::from_json(
            r#"{"server":"https://h","resources":["pods",
                {"resource":"pods","metadata_only":true},
                {"resource":"nodes","metadata_only":true,"encoding":"json"},
                {"resource":"secrets","encoding":"auto"}]}"#,
        )
        .unwrap();
        let got: Vec<(crate::resource::Encoding, bool)> = c
            .resources
            .iter()
            .map(|r| (r.encoding, r.protobuf()))
            .collect();
        use crate::resource::Encoding::{Auto, Json};
        assert_eq!(
            got,
            [(Auto, true), (Auto, true), (Json, false), (Auto, true)]
        );
        let e = Config::from_json(
            r#"{"server":"https://h","resources":[{"resource":"pods","encoding":"protobuf"}]}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("`resources[0].encoding` is \"auto\" or \"json\""),
            "{e}"
        );
    }

    #[test]
    fn resources_may_be_objects_with_their_own_scope() {
        let c = Config::from_json(
            r#"{"server":"https://h","namespace":"default","resources":[
                "configmaps",
                {"resource":"pods","field_selector":"spec.nodeName=n1","metadata_only":true},
                {"resource":"nodes","field_selector":"metadata.name=n1"},
                {"resource":"secrets","namespaces":["a","b"],"label_selector":"team=x"}]}"#,
        )
        .unwrap();
        let got: Vec<String> = c
            .resources
            .iter()
            .map(|r| {
                format!(
                    "{} ns={:?} ls={:?} fs={:?} meta={}",
                    r.gvr(),
                    r.namespace,
                    r.label_selector,
                    r.field_selector,
                    r.metadata_only
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                "v1/configmaps ns=Some(\"default\") ls=None fs=None meta=false",
                "v1/pods ns=None ls=None fs=Some(\"spec.nodeName=n1\") meta=true",
                "v1/nodes ns=None ls=None fs=Some(\"metadata.name=n1\") meta=false",
                "v1/secrets ns=Some(\"a\") ls=Some(\"team=x\") fs=None meta=false",
                "v1/secrets ns=Some(\"b\") ls=Some(\"team=x\") fs=None meta=false",
            ]
        );
        let e = |j: &str| Config::from_json(j).unwrap_err().to_string();
        assert!(
            e(r#"{"server":"https://h","resources":[{"resource":"pods","nmespace":"x"}]}"#)
                .contains("`resources[0].nmespace`")
        );
        assert!(
            e(r#"{"server":"https://h","resources":[{"namespace":"x"}]}"#)
                .contains("`resources[0].resource`")
        );
        assert!(e(
            r#"{"server":"https://h","resources":[{"resource":"pods","metadata_only":"yes"}]}"#
        )
        .contains("`resources[0].metadata_only`"));
        assert!(e(r#"{"server":"https://h","resources":[1]}"#).contains("`resources`"));
        assert!(e(r#"{"server":"https://h","resources":[{"resource":"pods","namespace":"a","namespaces":["b"]}]}"#).contains("not both"));
    }

    #[test]
    fn leader_election_and_the_kept_checkpoint() {
        let c = Config::from_json(
            r#"{"server":"https://h","resources":["pods"],
                "leader_election":{"namespace":"ns","lease":"l","identity":"me","lease_duration_secs":30,"renew_deadline_secs":20,"retry_period_secs":4},
                "checkpoint_in_cluster":{"namespace":"ns","name":"cp","interval_secs":60}}"#,
        )
        .unwrap();
        let e = c.leader_election.unwrap();
        assert_eq!(
            (e.namespace.as_str(), e.lease.as_str(), e.identity.as_str()),
            ("ns", "l", "me")
        );
        assert_eq!(
            (e.lease_duration, e.renew_deadline, e.retry_period),
            (
                Duration::from_secs(30),
                Duration::from_secs(20),
                Duration::from_secs(4)
            )
        );
        let k = c.checkpoint_in_cluster.unwrap();
        assert_eq!(
            (k.namespace.as_str(), k.name.as_str(), k.interval),
            ("ns", "cp", Duration::from_secs(60))
        );
        // Defaults: client-go's timings, 30 s between checkpoints.
        let c = Config::from_json(
            r#"{"server":"https://h","resources":["pods"],"leader_election":{"namespace":"ns","lease":"l"}}"#,
        )
        .unwrap();
        let e = c.leader_election.unwrap();
        assert_eq!(e.lease_duration, Duration::from_secs(15));
        assert_eq!(e.renew_deadline, Duration::from_secs(10));
        assert_eq!(e.retry_period, Duration::from_secs(2));
        let e = |j: &str| Config::check_json_keys(j).unwrap_err().to_string();
        assert!(e(r#"{"leader_election":{"lease":"l"}}"#).contains("`leader_election.namespace`"));
        assert!(
            e(r#"{"leader_election":{"namespace":"n","lease":"l","ttl":1}}"#)
                .contains("`leader_election.ttl`")
        );
        assert!(e(r#"{"leader_election":{"namespace":"n","lease":1}}"#)
            .contains("`leader_election.lease`"));
        assert!(e(r#"{"leader_election":"l"}"#).contains("`leader_election`"));
        assert!(e(r#"{"checkpoint_in_cluster":{"namespace":"n"}}"#)
            .contains("`checkpoint_in_cluster.name`"));
        assert!(
            e(r#"{"checkpoint_in_cluster":{"namespace":"n","name":"c","interval_secs":"1"}}"#)
                .contains("`checkpoint_in_cluster.interval_secs`")
        );
    }

    #[test]
    fn errors_name_the_key() {
        let e = |j: &str| Config::from_json(j).unwrap_err().to_string();
        assert!(e(r#"{"server":"https://h","resources":["pods"],"tokn":"x"}"#).contains("`tokn`"));
        assert!(
            e(r#"{"resources":["pods"],"kubeconfig":"/no/such/kubeconfig"}"#)
                .contains("/no/such/kubeconfig")
        );
        assert!(
            e(r#"{"server":"https://h","resources":["pods"],"exec":{"cmd":"x"}}"#)
                .contains("`exec.cmd`")
        );
        assert!(
            e(r#"{"server":"https://h","resources":["pods"],"username":"u"}"#).contains("password")
        );
        assert!(e(r#"{"server":"https://h"}"#).contains("`resources`"));
        assert!(e(r#"{"server":"https://h","resources":["pods!"]}"#).contains("\"pods!\""));
        assert!(
            e(r#"{"server":"https://h","resources":["pods"],"token_file":"/no/such"}"#)
                .contains("/no/such")
        );
        assert!(
            e(r#"{"server":"https://h","resources":["pods"],"channel_capacity":"x"}"#)
                .contains("channel_capacity")
        );
        assert!(e("not json").contains("JSON"));
    }

    #[test]
    fn shards_at_the_top_and_on_resources() {
        let c = Config::from_json(
            r#"{"server":"https://h","shard":{"count":3,"index":2},"resources":["pods",
                {"resource":"nodes","shard":{"index":0,"count":2}}]}"#,
        )
        .unwrap();
        let shard = |n, i| Some(crate::wire::shard::Shard::new(n, i).unwrap());
        assert_eq!(c.shard, shard(3, 2));
        // The top-level one reaches `pods` when the reader opens.
        let got: Vec<_> = c.resources.iter().map(|r| r.shard).collect();
        assert_eq!(got, [None, shard(2, 0)]);
        let e = |extra: &str| {
            Config::from_json(&format!(
                r#"{{"server":"https://h","resources":["pods"],{extra}}}"#
            ))
            .unwrap_err()
            .to_string()
        };
        for (bad, want) in [
            (
                r#""shard":2"#,
                "JSON: `shard` must be {\"count\": N, \"index\": i}",
            ),
            (r#""shard":{"count":2}"#, "JSON: `shard` must be"),
            (
                r#""shard":{"count":2,"index":2}"#,
                "JSON: `shard`: index 2 is not below count 2",
            ),
            (
                r#""shard":{"count":0,"index":0}"#,
                "JSON: `shard`: count 0 is not between 1 and 1024",
            ),
            (
                r#""shard":{"count":5000000000,"index":0}"#,
                "JSON: `shard`: count 4294967295 is not between",
            ),
            (
                r#""shard":{"count":2,"index":-1}"#,
                "JSON: `shard.index` must be a non-negative integer",
            ),
            (
                r#""shard":{"count":2,"index":0,"of":1}"#,
                "JSON: unknown key `shard.of`",
            ),
        ] {
            assert!(e(bad).contains(want), "{bad}: {}", e(bad));
        }
        let e = Config::from_json(
            r#"{"server":"https://h","resources":[{"resource":"pods","shard":{"count":2,"index":7}}]}"#,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("JSON: `resources[0].shard`: index 7"), "{e}");
        Config::check_json_keys(r#"{"shard":{"count":1,"index":0}}"#).unwrap();
        assert!(Config::check_json_keys(r#"{"shard":{"count":1,"index":1}}"#).is_err());
    }

    #[test]
    fn exec_timeout_and_install_hint() {
        let c = Config::from_json(
            r#"{"server":"https://h","resources":["pods"],"exec":{"command":"p","timeout_secs":7,"install_hint":"brew install p"}}"#,
        )
        .unwrap();
        match c.access.auth {
            crate::access::auth::Auth::Exec(e) => {
                assert_eq!(e.timeout, Duration::from_secs(7));
                assert_eq!(e.install_hint.as_deref(), Some("brew install p"));
                assert_eq!(e.interactive_mode, "Never");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn errors_never_quote_a_value() {
        let e = |j: &str| Config::from_json(j).unwrap_err().to_string();
        let m = e(r#"{"server":"https://h","resources":["pods"],"token":"s3cr3t\"x"#);
        assert!(m.contains("line 1, column") && !m.contains("s3cr3t"), "{m}");
        let m = e(r#""s3cr3t-top""#);
        assert!(
            m.contains("must be an object") && !m.contains("s3cr3t"),
            "{m}"
        );
        let m = e(r#"{"server":"https://h","resources":["pods"],"password":12345678}"#);
        assert!(m.contains("`password`") && !m.contains("12345678"), "{m}");
        let m = e(
            r#"{"server":"https://h","resources":["pods"],"insecure":true,"ca_data":"-----BEGIN CERTIFICATE-----\n"}"#,
        );
        assert!(m.contains("not allowed"), "{m}");
        let m = e(
            r#"{"server":"https://h","resources":["pods"],"exec":{"command":"p","api_version":"v9"}}"#,
        );
        assert!(m.contains("invalid apiVersion"), "{m}");
        let m = e(r#"{"server":"https://h","resources":["pods"],"ca_data":"s3cr3t-not-pem"}"#);
        assert!(m.contains("ca_data") && !m.contains("s3cr3t"), "{m}");
    }

    #[test]
    fn one_way_to_authenticate() {
        let e = |extra: &str| {
            Config::from_json(&format!(
                r#"{{"server":"https://h","resources":["pods"],{extra}}}"#
            ))
            .unwrap_err()
            .to_string()
        };
        assert_eq!(
            e(r#""token":"t","username":"u","password":"p""#),
            "invalid configuration: JSON: token/token_file and username/password are set together; give one way to authenticate"
        );
        assert!(e(r#""token_file":"/f","exec":{"command":"p","api_version":"client.authentication.k8s.io/v1"}"#)
            .contains("token/token_file and exec"));
        assert!(e(r#""client_cert_file":"/c","client_key_file":"/k","exec":{"command":"p","api_version":"client.authentication.k8s.io/v1"}"#)
            .contains("exec and client_cert_file"));
    }
}
