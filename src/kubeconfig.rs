//! kubeconfig files, merged the way kubectl merges them, and in-cluster
//! service-account access.
//!
//! The YAML is read event by event into a small tree of our own: nesting is
//! capped, aliases are expanded within a budget (a few hundred bytes of
//! anchors must not become gigabytes), and every error names a line and a
//! column, never a value (a value may be a password).

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value;
use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};
use yaml_rust2::Yaml;

use crate::auth::{decode_data, Auth, ClientIdentity, ExecConfig};
use crate::config::ProxyConfig;
use crate::{Config, Error, Token};

/// Where the service-account credentials of a pod live.
pub(crate) const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// A kubeconfig larger than this is refused (real ones, certificates
/// embedded, are a few KiB per cluster).
pub(crate) const MAX_FILE_BYTES: u64 = 16 << 20;
/// Nesting deeper than this is refused (a kubeconfig is about 6 deep).
const MAX_DEPTH: usize = 64;
/// Nodes, alias copies included, a file may expand to (a 1.8 MB kubeconfig
/// of 1,000 clusters, users and contexts is well within it).
const MAX_NODES: usize = 200_000;
/// Bytes of text, alias copies included, a file may expand to.
const MAX_TEXT_BYTES: usize = 64 << 20;
/// The cluster extension `provideClusterInfo` hands to the plugin as `config`.
const EXEC_EXTENSION: &str = "client.authentication.k8s.io/exec";

// ---------------------------------------------------------------------------
// YAML

/// A YAML node and where it starts (1-based line and column).
#[derive(Clone, Debug)]
pub(crate) struct Node {
    line: usize,
    col: usize,
    v: Val,
}

#[derive(Clone, Debug)]
enum Val {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<(String, Node)>),
}

/// A container being read, and what it has cost so far.
struct Frame {
    node: Node,
    anchor: usize,
    key: Option<String>,
    nodes: usize,
    bytes: usize,
}

/// What has been materialised so far, alias copies included.
struct Budget {
    nodes: usize,
    bytes: usize,
}

impl Budget {
    fn spend(&mut self, nodes: usize, bytes: usize, at: Marker) -> Result<(), String> {
        self.nodes += nodes;
        self.bytes += bytes;
        if self.nodes > MAX_NODES || self.bytes > MAX_TEXT_BYTES {
            return Err(format!(
                "line {} column {}: aliases expand to more than {MAX_NODES} nodes or {} MiB",
                at.line(),
                at.col() + 1,
                MAX_TEXT_BYTES >> 20
            ));
        }
        Ok(())
    }
}

/// Reads the first YAML document of `text`; `None` for an empty file.
pub(crate) fn parse_yaml(text: &str) -> Result<Option<Node>, String> {
    let mut parser = Parser::new_from_str(text);
    let mut stack: Vec<Frame> = Vec::new();
    // Anchor id -> the node and its cost (nodes, bytes).
    let mut anchors: HashMap<usize, (Node, usize, usize)> = HashMap::new();
    let mut budget = Budget { nodes: 0, bytes: 0 };
    let mut root = None;
    loop {
        let (ev, mark) = parser.next_token().map_err(|e| {
            let m = e.marker();
            format!(
                "not YAML: {} at line {} column {}",
                e.info(),
                m.line(),
                m.col() + 1
            )
        })?;
        let at = |m: Marker| (m.line(), m.col() + 1);
        let (node, anchor, nodes, bytes) = match ev {
            Event::StreamEnd | Event::DocumentEnd => break,
            Event::Nothing | Event::StreamStart | Event::DocumentStart => continue,
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                if stack.len() >= MAX_DEPTH {
                    return Err(format!(
                        "line {} column {}: nested more than {MAX_DEPTH} deep",
                        mark.line(),
                        mark.col() + 1
                    ));
                }
                budget.spend(1, 0, mark)?;
                let (line, col) = at(mark);
                let v = if matches!(ev, Event::SequenceStart(..)) {
                    Val::Seq(Vec::new())
                } else {
                    Val::Map(Vec::new())
                };
                stack.push(Frame {
                    node: Node { line, col, v },
                    anchor,
                    key: None,
                    nodes: 1,
                    bytes: 0,
                });
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let mut f = stack.pop().ok_or("unbalanced YAML")?;
                if let Val::Map(entries) = &mut f.node.v {
                    merge_keys(entries);
                }
                (f.node, f.anchor, f.nodes, f.bytes)
            }
            Event::Scalar(text, style, anchor, tag) => {
                budget.spend(1, text.len(), mark)?;
                let (line, col) = at(mark);
                let bytes = text.len();
                let is_str_tag = tag.as_ref().is_some_and(|t| t.suffix == "str");
                // A mapping key is its text (kubeconfig keys are names).
                let is_key = stack
                    .last()
                    .is_some_and(|f| matches!(f.node.v, Val::Map(_)) && f.key.is_none());
                let v = if style == TScalarStyle::Plain && !is_str_tag && !is_key {
                    resolve_plain(text)
                } else {
                    Val::Str(text)
                };
                (Node { line, col, v }, anchor, 1, bytes)
            }
            Event::Alias(id) => {
                let (n, nodes, bytes) = anchors.get(&id).cloned().ok_or_else(|| {
                    format!(
                        "line {} column {}: an alias to an unknown anchor",
                        mark.line(),
                        mark.col() + 1
                    )
                })?;
                budget.spend(nodes, bytes, mark)?;
                (n, 0, nodes, bytes)
            }
        };
        if anchor > 0 {
            // Keeping the anchored copy costs as much again.
            budget.spend(nodes, bytes, mark)?;
            anchors.insert(anchor, (node.clone(), nodes, bytes));
        }
        match stack.last_mut() {
            None => {
                root = Some(node);
            }
            Some(f) => {
                f.nodes += nodes;
                f.bytes += bytes;
                match (&mut f.node.v, f.key.take()) {
                    (Val::Seq(items), _) => items.push(node),
                    (Val::Map(entries), Some(key)) => entries.push((key, node)),
                    (Val::Map(_), None) => {
                        f.key = Some(match node.v {
                            Val::Str(s) => s,
                            Val::Int(i) => i.to_string(),
                            Val::Bool(b) => b.to_string(),
                            Val::Float(x) => x.to_string(),
                            Val::Null => String::new(),
                            Val::Seq(_) | Val::Map(_) => {
                                return Err(format!(
                                    "line {} column {}: a mapping key must be a plain value",
                                    node.line, node.col
                                ))
                            }
                        })
                    }
                    // Only sequences and mappings are ever pushed.
                    _ => {}
                }
            }
        }
    }
    Ok(root)
}

/// YAML merge keys (`<<: *defaults`), as go-yaml applies them: the merged
/// mapping's entries come in where the mapping has no entry of its own.
fn merge_keys(entries: &mut Vec<(String, Node)>) {
    if !entries.iter().any(|(k, _)| k == "<<") {
        return;
    }
    let (merges, mut own): (Vec<_>, Vec<_>) = std::mem::take(entries)
        .into_iter()
        .partition(|(k, _)| k == "<<");
    for (_, m) in merges {
        let sources = match m.v {
            Val::Map(e) => vec![e],
            Val::Seq(items) => items
                .into_iter()
                .filter_map(|n| match n.v {
                    Val::Map(e) => Some(e),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        for source in sources {
            for (k, v) in source {
                if !own.iter().any(|(o, _)| *o == k) {
                    own.push((k, v));
                }
            }
        }
    }
    *entries = own;
}

/// A plain scalar's type, as go-yaml v2 (which kubectl's YAML goes through)
/// resolves it: YAML 1.1 booleans (`yes`, `on`, …) included.
fn resolve_plain(text: String) -> Val {
    match text.as_str() {
        "y" | "Y" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" => return Val::Bool(true),
        "n" | "N" | "no" | "No" | "NO" | "off" | "Off" | "OFF" => return Val::Bool(false),
        _ => {}
    }
    match Yaml::from_str(&text) {
        Yaml::Null => Val::Null,
        Yaml::Boolean(b) => Val::Bool(b),
        Yaml::Integer(i) => Val::Int(i),
        Yaml::Real(r) => r.parse().map(Val::Float).unwrap_or(Val::Str(text)),
        _ => Val::Str(text),
    }
}

impl Node {
    fn kind(&self) -> &'static str {
        match self.v {
            Val::Null => "null",
            Val::Bool(_) => "a boolean",
            Val::Int(_) | Val::Float(_) => "a number",
            Val::Str(_) => "a string",
            Val::Seq(_) => "a list",
            Val::Map(_) => "a mapping",
        }
    }

    /// `what` must be `want`; the error names the place and the types, not the value.
    fn wrong(&self, what: &str, want: &str) -> String {
        let hint =
            if want == "a string" && matches!(self.v, Val::Bool(_) | Val::Int(_) | Val::Float(_)) {
                " (quote it)"
            } else {
                ""
            };
        format!(
            "line {} column {}: `{what}` must be {want}, not {}{hint}",
            self.line,
            self.col,
            self.kind()
        )
    }

    fn get(&self, key: &str) -> Option<&Node> {
        match &self.v {
            Val::Map(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    fn entries(&self, what: &str) -> Result<&[(String, Node)], String> {
        match &self.v {
            Val::Map(e) => Ok(e),
            Val::Null => Ok(&[]),
            _ => Err(self.wrong(what, "a mapping")),
        }
    }

    fn items(&self, what: &str) -> Result<&[Node], String> {
        match &self.v {
            Val::Seq(items) => Ok(items),
            Val::Null => Ok(&[]),
            _ => Err(self.wrong(what, "a list")),
        }
    }

    /// The JSON form (for the exec extension); depth is already bounded.
    fn to_json(&self) -> Value {
        match &self.v {
            Val::Null => Value::Null,
            Val::Bool(b) => Value::Bool(*b),
            Val::Int(i) => Value::from(*i),
            Val::Float(f) => serde_json::Number::from_f64(*f)
                .map(Value::Number)
                .unwrap_or(Value::Null),
            Val::Str(s) => Value::String(s.clone()),
            Val::Seq(items) => Value::Array(items.iter().map(Node::to_json).collect()),
            Val::Map(e) => Value::Object(e.iter().map(|(k, v)| (k.clone(), v.to_json())).collect()),
        }
    }
}

/// A mapping's typed fields; unknown ones are ignored, as kubectl does.
struct Fields<'a> {
    node: &'a Node,
    path: String,
}

impl<'a> Fields<'a> {
    fn new(node: &'a Node, path: &str) -> Result<Fields<'a>, String> {
        node.entries(path)?;
        Ok(Fields {
            node,
            path: path.to_string(),
        })
    }

    fn what(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    fn str(&self, key: &str) -> Result<Option<String>, String> {
        match self.node.get(key) {
            None => Ok(None),
            Some(n) => match &n.v {
                Val::Null => Ok(None),
                Val::Str(s) => Ok(Some(s.clone())),
                _ => Err(n.wrong(&self.what(key), "a string")),
            },
        }
    }

    /// A string field; empty counts as absent.
    fn text(&self, key: &str) -> Result<Option<String>, String> {
        Ok(self.str(key)?.filter(|s| !s.is_empty()))
    }

    fn bool(&self, key: &str) -> Result<bool, String> {
        match self.node.get(key) {
            None => Ok(false),
            Some(n) => match n.v {
                Val::Null => Ok(false),
                Val::Bool(b) => Ok(b),
                _ => Err(n.wrong(&self.what(key), "true or false")),
            },
        }
    }

    fn strings(&self, key: &str) -> Result<Vec<String>, String> {
        let Some(n) = self.node.get(key) else {
            return Ok(Vec::new());
        };
        let what = self.what(key);
        n.items(&what)?
            .iter()
            .map(|i| match &i.v {
                Val::Str(s) => Ok(s.clone()),
                _ => Err(i.wrong(&format!("{what}[]"), "a string")),
            })
            .collect()
    }

    fn map(&self, key: &str) -> Result<Option<Fields<'a>>, String> {
        match self.node.get(key) {
            None => Ok(None),
            Some(n) if matches!(n.v, Val::Null) => Ok(None),
            Some(n) => Fields::new(n, &self.what(key)).map(Some),
        }
    }

    /// A list of `{name: …, <body>: {…}}` entries, as `clusters`, `users`,
    /// `contexts` and `extensions` are.
    fn named(&self, key: &str, body: &str) -> Result<Vec<(String, Option<Fields<'a>>)>, String> {
        let Some(n) = self.node.get(key) else {
            return Ok(Vec::new());
        };
        let what = self.what(key);
        let mut out = Vec::new();
        for item in n.items(&what)? {
            let f = Fields::new(item, &format!("{what}[]"))?;
            let name = f.str("name")?.unwrap_or_default();
            out.push((name, f.map(body)?));
        }
        Ok(out)
    }

    fn raw(&self, key: &str) -> Option<&'a Node> {
        self.node.get(key)
    }
}

// ---------------------------------------------------------------------------
// The kubeconfig model

#[derive(Default, Clone)]
struct File {
    current_context: Option<String>,
    clusters: Vec<(String, Cluster)>,
    users: Vec<(String, User)>,
    contexts: Vec<(String, Context)>,
}

#[derive(Default, Clone)]
struct Cluster {
    server: Option<String>,
    certificate_authority: Option<String>,
    certificate_authority_data: Option<String>,
    insecure_skip_tls_verify: bool,
    tls_server_name: Option<String>,
    proxy_url: Option<String>,
    disable_compression: bool,
    /// The `client.authentication.k8s.io/exec` extension, as JSON.
    exec_extension: Option<Value>,
}

#[derive(Default, Clone)]
struct User {
    token: Option<String>,
    token_file: Option<String>,
    client_certificate: Option<String>,
    client_certificate_data: Option<String>,
    client_key: Option<String>,
    client_key_data: Option<String>,
    username: Option<String>,
    password: Option<String>,
    exec: Option<Exec>,
    auth_provider: bool,
}

#[derive(Default, Clone)]
struct Exec {
    api_version: String,
    command: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
    interactive_mode: Option<String>,
    provide_cluster_info: bool,
    install_hint: Option<String>,
}

#[derive(Default, Clone)]
struct Context {
    cluster: String,
    user: String,
    namespace: Option<String>,
}

fn read_model(root: &Node) -> Result<File, String> {
    let top = Fields::new(root, "")?;
    let mut file = File {
        current_context: top.text("current-context")?,
        ..File::default()
    };
    for (name, body) in top.named("clusters", "cluster")? {
        let Some(c) = body else { continue };
        let mut exec_extension = None;
        if let Some(list) = c.raw("extensions") {
            for item in list.items(&c.what("extensions"))? {
                let ext = Fields::new(item, &c.what("extensions[]"))?;
                if ext.str("name")?.as_deref() == Some(EXEC_EXTENSION) {
                    exec_extension = ext.raw("extension").map(Node::to_json);
                }
            }
        }
        file.clusters.push((
            name,
            Cluster {
                server: c.text("server")?,
                certificate_authority: c.text("certificate-authority")?,
                certificate_authority_data: c.text("certificate-authority-data")?,
                insecure_skip_tls_verify: c.bool("insecure-skip-tls-verify")?,
                tls_server_name: c.text("tls-server-name")?,
                proxy_url: c.text("proxy-url")?,
                disable_compression: c.bool("disable-compression")?,
                exec_extension,
            },
        ));
    }
    for (name, body) in top.named("users", "user")? {
        let Some(u) = body else { continue };
        let exec = match u.map("exec")? {
            None => None,
            Some(e) => {
                let mut env = Vec::new();
                if let Some(list) = e.raw("env") {
                    for item in list.items(&e.what("env"))? {
                        let v = Fields::new(item, &e.what("env[]"))?;
                        env.push((
                            v.str("name")?.unwrap_or_default(),
                            v.str("value")?.unwrap_or_default(),
                        ));
                    }
                }
                Some(Exec {
                    api_version: e.str("apiVersion")?.unwrap_or_default(),
                    command: e.str("command")?.unwrap_or_default(),
                    args: e.strings("args")?,
                    env,
                    interactive_mode: e.text("interactiveMode")?,
                    provide_cluster_info: e.bool("provideClusterInfo")?,
                    install_hint: e.text("installHint")?,
                })
            }
        };
        file.users.push((
            name,
            User {
                token: u.text("token")?,
                token_file: u.text("tokenFile")?,
                client_certificate: u.text("client-certificate")?,
                client_certificate_data: u.text("client-certificate-data")?,
                client_key: u.text("client-key")?,
                client_key_data: u.text("client-key-data")?,
                username: u.text("username")?,
                password: u.text("password")?,
                exec,
                auth_provider: u
                    .raw("auth-provider")
                    .is_some_and(|n| !matches!(n.v, Val::Null)),
            },
        ));
    }
    for (name, body) in top.named("contexts", "context")? {
        let Some(c) = body else { continue };
        file.contexts.push((
            name,
            Context {
                cluster: c.str("cluster")?.unwrap_or_default(),
                user: c.str("user")?.unwrap_or_default(),
                namespace: c.text("namespace")?,
            },
        ));
    }
    Ok(file)
}

/// An entry and the folder of the file it came from (relative paths resolve there).
struct Found<T> {
    value: T,
    dir: PathBuf,
}

/// The kubeconfig files kubectl would read: `$KUBECONFIG` (`:`-separated) or `~/.kube/config`.
pub(crate) fn default_paths() -> Vec<PathBuf> {
    match std::env::var_os("KUBECONFIG") {
        Some(v) if !v.is_empty() => std::env::split_paths(&v)
            .filter(|p| !p.as_os_str().is_empty())
            .collect(),
        _ => std::env::var_os("HOME")
            .map(|h| vec![PathBuf::from(h).join(".kube").join("config")])
            .unwrap_or_default(),
    }
}

/// Reads and merges `paths` (first file wins for each name, as kubectl does),
/// then builds a config for `context` (default: the current context).
/// `skip_missing`: files that do not exist are passed over (as kubectl does
/// for `$KUBECONFIG`); when none is left it is an error.
pub(crate) fn load(
    paths: &[PathBuf],
    context: Option<&str>,
    skip_missing: bool,
) -> Result<Config, Error> {
    let mut current: Option<String> = None;
    let mut clusters: Vec<(String, Found<Cluster>)> = Vec::new();
    let mut users: Vec<(String, Found<User>)> = Vec::new();
    let mut contexts: Vec<(String, Found<Context>)> = Vec::new();
    let mut read = Vec::new();
    for path in paths {
        if skip_missing && !path.exists() {
            continue;
        }
        let file = parse_file(path)?;
        read.push(path.display().to_string());
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        if current.is_none() {
            current = file.current_context;
        }
        merge(&mut clusters, file.clusters, &dir);
        merge(&mut users, file.users, &dir);
        merge(&mut contexts, file.contexts, &dir);
    }
    if read.is_empty() {
        let list: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        return Err(Error::Config(format!(
            "no kubeconfig file found (looked for {})",
            list.join(", ")
        )));
    }
    let files = read.join(", ");
    let name = match context.map(String::from).or(current) {
        Some(n) => n,
        None => {
            return Err(Error::Config(format!(
                "kubeconfig {files}: no current-context and no context named"
            )))
        }
    };
    let find_err = |what: &str, n: &str, list: Vec<&String>| {
        let names: Vec<&str> = list.iter().map(|s| s.as_str()).collect();
        Error::Config(format!(
            "kubeconfig {files}: no {what} named {n:?} (have: {})",
            names.join(", ")
        ))
    };
    let ctx = find(&contexts, &name)
        .ok_or_else(|| find_err("context", &name, contexts.iter().map(|c| &c.0).collect()))?;
    let cluster = find(&clusters, &ctx.value.cluster).ok_or_else(|| {
        find_err(
            "cluster",
            &ctx.value.cluster,
            clusters.iter().map(|c| &c.0).collect(),
        )
    })?;
    let user = if ctx.value.user.is_empty() {
        None
    } else {
        Some(find(&users, &ctx.value.user).ok_or_else(|| {
            find_err(
                "user",
                &ctx.value.user,
                users.iter().map(|c| &c.0).collect(),
            )
        })?)
    };
    let where_ = format!("kubeconfig {files}, context {name:?}");
    let bad = |m: String| Error::Config(format!("{where_}: {m}"));

    let c = &cluster.value;
    let cluster_name = &ctx.value.cluster;
    let server = c
        .server
        .clone()
        .ok_or_else(|| bad(format!("cluster {cluster_name:?} has no server")))?;
    let mut config = Config::new(&server);
    config.ca_pem = file_or_data(
        "certificate-authority",
        c.certificate_authority.as_deref(),
        c.certificate_authority_data.as_deref(),
        &cluster.dir,
    )
    .map_err(bad)?;
    if let Some(pem) = &config.ca_pem {
        crate::transport::roots(pem).map_err(|e| bad(format!("certificate-authority: {e}")))?;
    }
    if c.insecure_skip_tls_verify && config.ca_pem.is_some() {
        return Err(bad(format!(
            "cluster {cluster_name:?}: {}",
            crate::config::INSECURE_WITH_CA
        )));
    }
    config.insecure_skip_tls_verify = c.insecure_skip_tls_verify;
    config.tls_server_name = c.tls_server_name.clone();
    if let Some(p) = &c.proxy_url {
        config.proxy = ProxyConfig::Url(p.clone());
    }
    config.namespace = ctx.value.namespace.clone();
    config.source = where_.clone();

    if let Some(user) = user {
        let u = &user.value;
        let user_name = &ctx.value.user;
        let cert = file_or_data(
            "client-certificate",
            u.client_certificate.as_deref(),
            u.client_certificate_data.as_deref(),
            &user.dir,
        )
        .map_err(bad)?;
        let key = file_or_data(
            "client-key",
            u.client_key.as_deref(),
            u.client_key_data.as_deref(),
            &user.dir,
        )
        .map_err(bad)?;
        config.client_identity = match (cert, key) {
            (Some(cert_pem), Some(key_pem)) => {
                let id = ClientIdentity { cert_pem, key_pem };
                let what = match &u.client_certificate {
                    Some(f) if u.client_certificate_data.is_none() => format!(
                        "client certificate {} of user {user_name:?}",
                        resolve(&user.dir, f).display()
                    ),
                    _ => format!("client-certificate-data of user {user_name:?}"),
                };
                crate::transport::check_identity(&id, &what).map_err(bad)?;
                Some(id)
            }
            (None, None) => None,
            _ => {
                return Err(bad(format!(
                    "user {user_name:?}: a client certificate needs a client key, and the other way round"
                )))
            }
        };
        let token = u.token_file.is_some() || u.token.is_some();
        let basic = u.username.is_some() || u.password.is_some();
        if token && basic {
            // client-go: "more than one authentication method found".
            return Err(bad(format!(
                "user {user_name:?}: a token and a username/password are both set; only one is allowed"
            )));
        }
        if u.exec.is_some() && u.auth_provider {
            return Err(bad(format!(
                "user {user_name:?}: auth-provider cannot be combined with an exec plugin"
            )));
        }
        config.auth = if let Some(f) = &u.token_file {
            // As client-go: the file wins over a fixed token, and is re-read.
            Auth::TokenFile(resolve(&user.dir, f))
        } else if let Some(t) = &u.token {
            Auth::Token(Token::new(t))
        } else if basic {
            Auth::Basic {
                username: u.username.clone().unwrap_or_default(),
                password: Token::new(u.password.as_deref().unwrap_or_default()),
            }
        } else if let Some(e) = &u.exec {
            let exec = exec_config(e, c, &server, config.ca_pem.as_deref(), &user.dir);
            exec.check()
                .map_err(|m| bad(format!("user {user_name:?}: {m}")))?;
            if config.client_identity.is_some() {
                // client-go runs no plugin for a user that has a client certificate.
                log::info!("{where_}: user {user_name:?} has a client certificate; its exec plugin is not used");
                Auth::None
            } else {
                Auth::Exec(exec)
            }
        } else if u.auth_provider {
            return Err(bad(
                "auth-provider plugins were removed from Kubernetes; use an exec plugin".into(),
            ));
        } else {
            Auth::None
        };
        if u.exec.is_some() && !matches!(config.auth, Auth::Exec(_) | Auth::None) {
            // client-go: a token or basic auth makes the plugin unused.
            log::info!(
                "{where_}: user {user_name:?} has a token or password; its exec plugin is not used"
            );
        }
    }
    Ok(config)
}

fn exec_config(e: &Exec, c: &Cluster, server: &str, ca: Option<&[u8]>, dir: &Path) -> ExecConfig {
    // client-go's clientauthentication Cluster: `[]byte` CA data is base64 in JSON;
    // empty fields are left out; `config` is the cluster's exec extension.
    let cluster_info = e.provide_cluster_info.then(|| {
        let mut info = serde_json::json!({ "server": server });
        if let Some(n) = &c.tls_server_name {
            info["tls-server-name"] = n.clone().into();
        }
        if c.insecure_skip_tls_verify {
            info["insecure-skip-tls-verify"] = true.into();
        }
        if let Some(ca) = ca {
            info["certificate-authority-data"] = crate::util::base64_encode(ca).into();
        }
        if let Some(p) = &c.proxy_url {
            info["proxy-url"] = p.clone().into();
        }
        if c.disable_compression {
            info["disable-compression"] = true.into();
        }
        if let Some(x) = &c.exec_extension {
            info["config"] = x.clone();
        }
        info
    });
    let mut exec = ExecConfig::new(&e.command, &[]);
    exec.api_version.clone_from(&e.api_version);
    exec.args.clone_from(&e.args);
    exec.env.clone_from(&e.env);
    // client-go defaults an unset interactiveMode to IfAvailable for v1beta1
    // only; v1 must say (checked by ExecConfig::check).
    exec.interactive_mode = match (&e.interactive_mode, e.api_version.as_str()) {
        (Some(m), _) => m.clone(),
        (None, "client.authentication.k8s.io/v1beta1") => "IfAvailable".into(),
        (None, _) => String::new(),
    };
    exec.install_hint.clone_from(&e.install_hint);
    exec.base_dir = Some(dir.to_path_buf());
    exec.cluster_info = cluster_info;
    exec
}

/// The in-cluster configuration of a pod: the service's address from the
/// environment, the service-account token (re-read as it rotates) and CA.
pub(crate) fn in_cluster(dir: &Path) -> Result<Config, Error> {
    let host = std::env::var("KUBERNETES_SERVICE_HOST").unwrap_or_default();
    let port = std::env::var("KUBERNETES_SERVICE_PORT").unwrap_or_default();
    if host.is_empty() || port.is_empty() {
        return Err(Error::Config(
            "not in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set"
                .into(),
        ));
    }
    let host = if host.contains(':') {
        format!("[{host}]")
    } else {
        host
    };
    let mut config = Config::new(&format!("https://{host}:{port}"));
    let token = dir.join("token");
    if !token.is_file() {
        return Err(Error::Config(format!(
            "in-cluster: no service-account token at {}",
            token.display()
        )));
    }
    config.auth = Auth::TokenFile(token);
    let ca = dir.join("ca.crt");
    config.ca_pem = Some(std::fs::read(&ca).map_err(|source| Error::ReadFile {
        path: ca.display().to_string(),
        source,
    })?);
    config.namespace = std::fs::read_to_string(dir.join("namespace"))
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    config.source = format!("in-cluster service account ({})", dir.display());
    Ok(config)
}

/// Reads at most `limit` bytes of `path`; a larger file is an error.
pub(crate) fn read_bounded(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    let mut data = Vec::new();
    std::fs::File::open(path)?
        .take(limit + 1)
        .read_to_end(&mut data)?;
    if data.len() as u64 > limit {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than {limit} bytes"),
        ));
    }
    Ok(data)
}

fn parse_file(path: &Path) -> Result<File, Error> {
    let shown = path.display();
    let data = read_bounded(path, MAX_FILE_BYTES).map_err(|source| Error::ReadFile {
        path: shown.to_string(),
        source,
    })?;
    let text = String::from_utf8(data).map_err(|e| {
        Error::Config(format!(
            "kubeconfig {shown}: not UTF-8 (at byte {})",
            e.utf8_error().valid_up_to()
        ))
    })?;
    let fail = |m: String| Error::Config(format!("kubeconfig {shown}: {m}"));
    match parse_yaml(&text).map_err(fail)? {
        None => Ok(File::default()),
        Some(root) if matches!(root.v, Val::Null) => Ok(File::default()),
        Some(root) => read_model(&root).map_err(fail),
    }
}

fn merge<T>(into: &mut Vec<(String, Found<T>)>, from: Vec<(String, T)>, dir: &Path) {
    for (name, value) in from {
        if !into.iter().any(|(n, _)| *n == name) {
            into.push((
                name,
                Found {
                    value,
                    dir: dir.to_path_buf(),
                },
            ));
        }
    }
}

fn find<'a, T>(list: &'a [(String, Found<T>)], name: &str) -> Option<&'a Found<T>> {
    list.iter().find(|(n, _)| n == name).map(|(_, f)| f)
}

fn resolve(dir: &Path, file: &str) -> PathBuf {
    let p = PathBuf::from(file);
    if p.is_absolute() {
        p
    } else {
        dir.join(p)
    }
}

/// A `field` / `field-data` pair: the data wins, as in kubectl.
fn file_or_data(
    field: &str,
    file: Option<&str>,
    data: Option<&str>,
    dir: &Path,
) -> Result<Option<Vec<u8>>, String> {
    if let Some(d) = data {
        return decode_data(&format!("{field}-data"), d).map(Some);
    }
    match file {
        Some(f) => {
            let p = resolve(dir, f);
            read_bounded(&p, MAX_FILE_BYTES)
                .map(Some)
                .map_err(|e| format!("{field} {}: {e}", p.display()))
        }
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yaml(text: &str) -> Result<Value, String> {
        Ok(parse_yaml(text)?
            .map(|n| n.to_json())
            .unwrap_or(Value::Null))
    }

    #[test]
    fn yaml_values_and_positions() {
        let v =
            yaml("a: 1\nb: [x, 'y', \"z\"]\nc: {d: true, e: ~}\nf: yes\ng: '007'\nh: !!str 12\n")
                .unwrap();
        assert_eq!(
            v,
            serde_json::json!({"a":1,"b":["x","y","z"],"c":{"d":true,"e":null},"f":true,"g":"007","h":"12"})
        );
        let root = parse_yaml("users:\n- name: u\n  user:\n    token: 20240917\n")
            .unwrap()
            .unwrap();
        let e = read_model(&root).err().unwrap();
        assert_eq!(
            e,
            "line 4 column 12: `users[].user.token` must be a string, not a number (quote it)"
        );
        let e = parse_yaml("a: [1,\nb: \"unterminated\n").unwrap_err();
        assert!(e.starts_with("not YAML:") && e.contains("line"), "{e}");
        assert!(parse_yaml("").unwrap().is_none());
    }

    #[test]
    fn aliases_are_expanded_within_a_budget() {
        let v = yaml("base: &b {x: 1, y: [2]}\nuse: *b\nmerged:\n  <<: *b\n  x: 9\n").unwrap();
        assert_eq!(v["use"], serde_json::json!({"x":1,"y":[2]}));
        assert_eq!(v["merged"], serde_json::json!({"x":9,"y":[2]}));
        // Billion laughs in a few hundred bytes: refused quickly, without the memory.
        let mut bomb = String::from(
            "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
        );
        for (i, (name, prev)) in ["b", "c", "d", "e", "f", "g", "h", "i"]
            .iter()
            .zip(["a", "b", "c", "d", "e", "f", "g", "h"])
            .enumerate()
        {
            let refs = vec![format!("*{prev}"); 9].join(",");
            bomb.push_str(&format!("{name}: &{name} [{refs}]\n"));
            let _ = i;
        }
        assert!(bomb.len() < 600, "{}", bomb.len());
        let t = std::time::Instant::now();
        let e = yaml(&bomb).unwrap_err();
        assert!(e.contains("aliases expand to more than"), "{e}");
        assert!(
            t.elapsed() < std::time::Duration::from_secs(2),
            "{:?}",
            t.elapsed()
        );
        assert!(yaml("a: *nowhere\n")
            .unwrap_err()
            .contains("unknown anchor"));
    }

    #[test]
    fn nesting_is_capped_without_recursion() {
        let deep = format!("{}x{}", "[".repeat(100_000), "]".repeat(100_000));
        let e = yaml(&deep).unwrap_err();
        assert!(
            e.contains("nested more than 64") || e.contains("recursion"),
            "{e}"
        );
        let block = format!("{}x\n", "- ".repeat(100_000));
        let e = yaml(&block).unwrap_err();
        assert!(e.contains("nested more than 64"), "{e}");
        assert!(yaml(&format!("{}1{}", "[".repeat(60), "]".repeat(60))).is_ok());
    }
}
