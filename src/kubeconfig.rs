//! kubeconfig files, merged the way kubectl merges them, and in-cluster
//! service-account access.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;
use yaml_rust2::{Yaml, YamlLoader};

use crate::auth::{decode_data, Auth, ClientIdentity, ExecConfig};
use crate::config::ProxyConfig;
use crate::{Config, Error, Token};

/// Where the service-account credentials of a pod live.
pub(crate) const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

#[derive(Deserialize, Default)]
#[serde(default)]
struct File {
    #[serde(rename = "current-context")]
    current_context: Option<String>,
    clusters: Vec<Named<Cluster>>,
    users: Vec<Named<User>>,
    contexts: Vec<Named<Context>>,
}

#[derive(Deserialize)]
struct Named<T> {
    name: String,
    #[serde(alias = "cluster", alias = "user", alias = "context")]
    value: Option<T>,
}

#[derive(Deserialize, Default, Clone)]
#[serde(default, rename_all = "kebab-case")]
struct Cluster {
    server: Option<String>,
    certificate_authority: Option<String>,
    certificate_authority_data: Option<String>,
    insecure_skip_tls_verify: bool,
    tls_server_name: Option<String>,
    proxy_url: Option<String>,
}

#[derive(Deserialize, Default, Clone)]
#[serde(default, rename_all = "kebab-case")]
struct User {
    token: Option<String>,
    #[serde(rename = "tokenFile")]
    token_file: Option<String>,
    client_certificate: Option<String>,
    client_certificate_data: Option<String>,
    client_key: Option<String>,
    client_key_data: Option<String>,
    username: Option<String>,
    password: Option<String>,
    exec: Option<Exec>,
    #[serde(rename = "auth-provider")]
    auth_provider: Option<Value>,
}

#[derive(Deserialize, Default, Clone)]
#[serde(default)]
struct Exec {
    #[serde(rename = "apiVersion")]
    api_version: String,
    command: String,
    args: Vec<String>,
    env: Option<Vec<EnvVar>>,
    #[serde(rename = "interactiveMode")]
    interactive_mode: Option<String>,
    #[serde(rename = "provideClusterInfo")]
    provide_cluster_info: bool,
}

#[derive(Deserialize, Default, Clone)]
struct EnvVar {
    name: String,
    #[serde(default)]
    value: String,
}

#[derive(Deserialize, Default, Clone)]
#[serde(default)]
struct Context {
    cluster: String,
    user: String,
    namespace: Option<String>,
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
            current = file.current_context.filter(|c| !c.is_empty());
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
    let server = c
        .server
        .clone()
        .ok_or_else(|| bad(format!("cluster {:?} has no server", ctx.value.cluster)))?;
    let mut config = Config::new(&server);
    config.ca_pem = file_or_data(
        "certificate-authority",
        c.certificate_authority.as_deref(),
        c.certificate_authority_data.as_deref(),
        &cluster.dir,
    )
    .map_err(bad)?;
    if let Some(pem) = &config.ca_pem {
        crate::transport::certificates(pem)
            .map_err(|e| bad(format!("certificate-authority: {e}")))?;
    }
    config.insecure_skip_tls_verify = c.insecure_skip_tls_verify;
    config.tls_server_name = c.tls_server_name.clone().filter(|s| !s.is_empty());
    if let Some(p) = c.proxy_url.as_ref().filter(|p| !p.is_empty()) {
        config.proxy = ProxyConfig::Url(p.clone());
    }
    config.namespace = ctx.value.namespace.clone().filter(|n| !n.is_empty());
    config.source = where_.clone();

    if let Some(user) = user {
        let u = &user.value;
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
            (Some(cert_pem), Some(key_pem)) => Some(ClientIdentity { cert_pem, key_pem }),
            (None, None) => None,
            _ => {
                return Err(bad(
                    "a client certificate needs a client key, and the other way round".into(),
                ))
            }
        };
        config.auth = if let Some(e) = &u.exec {
            let cluster_info = e.provide_cluster_info.then(|| {
                serde_json::json!({
                    "server": server,
                    "tls-server-name": c.tls_server_name,
                    "insecure-skip-tls-verify": c.insecure_skip_tls_verify,
                    "certificate-authority-data": config.ca_pem.as_ref().map(|p| String::from_utf8_lossy(p).into_owned()),
                    "proxy-url": c.proxy_url,
                })
            });
            Auth::Exec(ExecConfig {
                api_version: e.api_version.clone(),
                command: e.command.clone(),
                args: e.args.clone(),
                env: e
                    .env
                    .iter()
                    .flatten()
                    .map(|v| (v.name.clone(), v.value.clone()))
                    .collect(),
                interactive_mode: e
                    .interactive_mode
                    .clone()
                    .unwrap_or_else(|| "IfAvailable".into()),
                base_dir: Some(user.dir.clone()),
                cluster_info,
            })
        } else if let Some(f) = u.token_file.as_ref().filter(|f| !f.is_empty()) {
            // As client-go: the file wins over a fixed token, and is re-read.
            Auth::TokenFile(resolve(&user.dir, f))
        } else if let Some(t) = u.token.as_ref().filter(|t| !t.is_empty()) {
            Auth::Token(Token::new(t))
        } else if let (Some(name), Some(pw)) = (&u.username, &u.password) {
            Auth::Basic {
                username: name.clone(),
                password: Token::new(pw),
            }
        } else if u.auth_provider.is_some() {
            return Err(bad(
                "auth-provider plugins were removed from Kubernetes; use an exec plugin".into(),
            ));
        } else {
            Auth::None
        };
    }
    Ok(config)
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

fn parse_file(path: &Path) -> Result<File, Error> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::ReadFile {
        path: path.display().to_string(),
        source,
    })?;
    let docs = YamlLoader::load_from_str(&text)
        .map_err(|e| Error::Config(format!("kubeconfig {}: not YAML: {e}", path.display())))?;
    let value = docs.into_iter().next().map(to_json).unwrap_or(Value::Null);
    if value.is_null() {
        return Ok(File::default());
    }
    serde_json::from_value(value).map_err(|e| {
        // serde quotes the offending value, which may be a password: drop it.
        let msg = crate::util::without_quoted(&e.to_string());
        Error::Config(format!("kubeconfig {}: {msg}", path.display()))
    })
}

fn to_json(y: Yaml) -> Value {
    match y {
        Yaml::Real(s) => s
            .parse::<f64>()
            .map(Value::from)
            .unwrap_or(Value::String(s)),
        Yaml::Integer(i) => Value::from(i),
        Yaml::String(s) => Value::String(s),
        Yaml::Boolean(b) => Value::Bool(b),
        Yaml::Array(a) => Value::Array(a.into_iter().map(to_json).collect()),
        Yaml::Hash(h) => Value::Object(
            h.into_iter()
                .map(|(k, v)| {
                    let key = match k {
                        Yaml::String(s) | Yaml::Real(s) => s,
                        Yaml::Integer(i) => i.to_string(),
                        Yaml::Boolean(b) => b.to_string(),
                        _ => String::new(),
                    };
                    (key, to_json(v))
                })
                .collect(),
        ),
        Yaml::Alias(_) | Yaml::Null | Yaml::BadValue => Value::Null,
    }
}

fn merge<T>(into: &mut Vec<(String, Found<T>)>, from: Vec<Named<T>>, dir: &Path) {
    for n in from {
        if let Some(value) = n.value {
            if !into.iter().any(|(name, _)| *name == n.name) {
                into.push((
                    n.name,
                    Found {
                        value,
                        dir: dir.to_path_buf(),
                    },
                ));
            }
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
    if let Some(d) = data.filter(|d| !d.is_empty()) {
        return decode_data(&format!("{field}-data"), d).map(Some);
    }
    match file.filter(|f| !f.is_empty()) {
        Some(f) => {
            let p = resolve(dir, f);
            std::fs::read(&p)
                .map(Some)
                .map_err(|e| format!("{field} {}: {e}", p.display()))
        }
        None => Ok(None),
    }
}
