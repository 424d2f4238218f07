//! kubeconfig files, merged the way kubectl merges them, and in-cluster
//! service-account access.
//!
//! The YAML is read by `yaml`: nesting capped, aliases within a budget,
//! errors that name a line and a column, never a value.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::access::auth::{decode_data, Auth, ExecConfig};
use crate::access::cluster::{Access, INSECURE_WITH_CA};
use crate::access::files::read_bounded;
use crate::access::proxy::ProxyConfig;
use crate::access::secret::ClientIdentity;
use crate::access::yaml::{parse_yaml, Fields, Node};
use crate::{Error, Token};

/// Where the service-account credentials of a pod live.
pub(crate) const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// A kubeconfig larger than this is refused (real ones, certificates
/// embedded, are a few KiB per cluster).
pub(crate) const MAX_FILE_BYTES: u64 = 16 << 20;
/// The cluster extension `provideClusterInfo` hands to the plugin as `config`.
const EXEC_EXTENSION: &str = "client.authentication.k8s.io/exec";

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
                auth_provider: u.raw("auth-provider").is_some_and(|n| !n.is_null()),
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
) -> Result<Access, Error> {
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
    let mut config = Access::new(&server);
    config.ca_pem = file_or_data(
        "certificate-authority",
        c.certificate_authority.as_deref(),
        c.certificate_authority_data.as_deref(),
        &cluster.dir,
    )
    .map_err(bad)?;
    if let Some(pem) = &config.ca_pem {
        crate::access::pem::roots(pem).map_err(|e| bad(format!("certificate-authority: {e}")))?;
    }
    if c.insecure_skip_tls_verify && config.ca_pem.is_some() {
        return Err(bad(format!(
            "cluster {cluster_name:?}: {}",
            INSECURE_WITH_CA
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
                crate::access::pem::check_identity(&id, &what).map_err(bad)?;
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
pub(crate) fn in_cluster(dir: &Path) -> Result<Access, Error> {
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
    let mut config = Access::new(&format!("https://{host}:{port}"));
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
        Some(root) if root.is_null() => Ok(File::default()),
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

/// Cluster access as kubectl finds it; [`Access`]'s constructors for it
/// live here, so that `cluster` knows nothing of kubeconfig files.
impl Access {
    /// Reads kubeconfig the way kubectl does: `path`, else `$KUBECONFIG`
    /// (several files merged, the first file winning for each name), else
    /// `~/.kube/config`; then `context`, else the current context.
    pub fn from_kubeconfig(path: Option<&str>, context: Option<&str>) -> Result<Access, Error> {
        let config = match path {
            Some(p) => load(&[p.into()], context, false)?,
            None => load(&default_paths(), context, true)?,
        };
        log::info!("cluster access from {}", config.source);
        Ok(config)
    }

    /// The configuration of a pod's service account: `KUBERNETES_SERVICE_HOST`
    /// and `_PORT`, and the token (re-read as it rotates), CA and namespace
    /// under `/var/run/secrets/kubernetes.io/serviceaccount/`.
    pub fn in_cluster() -> Result<Access, Error> {
        Self::in_cluster_at(SERVICE_ACCOUNT_DIR)
    }

    /// [`in_cluster`](Self::in_cluster) with the service-account files in `dir`.
    pub fn in_cluster_at(dir: &str) -> Result<Access, Error> {
        let config = in_cluster(std::path::Path::new(dir))?;
        log::info!("cluster access from {}", config.source);
        Ok(config)
    }

    /// What kubectl and client-go would use: kubeconfig (`$KUBECONFIG` or
    /// `~/.kube/config`) when there is one, else the in-cluster service account.
    pub fn infer() -> Result<Access, Error> {
        let paths = default_paths();
        if paths.iter().any(|p| p.exists()) {
            return Self::from_kubeconfig(None, None);
        }
        Self::in_cluster().map_err(|e| {
            let looked: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
            let why = match e {
                Error::Config(m) => m,
                other => other.to_string(),
            };
            Error::Config(format!("no kubeconfig ({}) and {why}", looked.join(", ")))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_of_the_wrong_type_is_named_with_its_place() {
        let root = parse_yaml("users:\n- name: u\n  user:\n    token: 20240917\n")
            .unwrap()
            .unwrap();
        let e = read_model(&root).err().unwrap();
        assert_eq!(
            e,
            "line 4 column 12: `users[].user.token` must be a string, not a number (quote it)"
        );
    }
}
