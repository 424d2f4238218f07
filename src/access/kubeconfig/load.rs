//! Several kubeconfig files merged, a context selected and resolved into an
//! [`Access`], as kubectl does: the first file wins for each name, relative
//! paths resolve against the folder of the file that named them, `*-data`
//! wins over the file, and client-go's checks of a user and a cluster.

use std::path::{Path, PathBuf};

use super::model::{self, Cluster, Context, Exec, File, User};
use crate::access::auth::{decode_data, Auth, ExecConfig};
use crate::access::cluster::{Access, INSECURE_WITH_CA};
use crate::access::files::read_bounded;
use crate::access::proxy::ProxyConfig;
use crate::access::secret::ClientIdentity;
use crate::access::secret::Token;
use crate::error::Error;

/// A kubeconfig larger than this is refused (real ones, certificates
/// embedded, are a few KiB per cluster).
pub(crate) const MAX_FILE_BYTES: u64 = 16 << 20;

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
        crate::access::pem::ca_bundle(pem)
            .map_err(|e| bad(format!("certificate-authority: {e}")))?;
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
            info["certificate-authority-data"] = crate::access::go_base64::base64_encode(ca).into();
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

/// One file, read bounded, as the model; errors name the file.
fn parse_file(path: &Path) -> Result<File, Error> {
    let shown = path.display();
    let data = read_bounded(path, MAX_FILE_BYTES).map_err(|source| Error::ReadFile {
        path: path.to_path_buf(),
        source,
    })?;
    let text = String::from_utf8(data).map_err(|e| {
        Error::Config(format!(
            "kubeconfig {shown}: not UTF-8 (at byte {})",
            e.utf8_error().valid_up_to()
        ))
    })?;
    model::parse(&text).map_err(|m| Error::Config(format!("kubeconfig {shown}: {m}")))
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
