//! Credentials at run time: tokens that rotate, exec plugins whose output
//! expires, and the reload after a 401. Secrets never reach a log or an error.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use parking_lot::Mutex;
use serde::Deserialize;

use crate::util::{base64_decode, parse_rfc3339};
use crate::Token;

/// How requests authenticate.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Auth {
    /// No credentials (a client certificate may still be set).
    #[default]
    None,
    /// A fixed bearer token.
    Token(Token),
    /// A bearer token read from a file, re-read at least once a minute (projected
    /// service-account tokens rotate) and at once after a 401.
    TokenFile(PathBuf),
    /// HTTP basic authentication.
    Basic {
        /// The user name.
        username: String,
        /// The password (never logged).
        password: Token,
    },
    /// A kubeconfig exec credential plugin.
    Exec(ExecConfig),
}

/// An exec credential plugin, as kubeconfig's `users[].user.exec` describes it.
/// Its `Debug` output leaves out the values of `env` (they may be secrets).
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExecConfig {
    /// `client.authentication.k8s.io/v1` or `…/v1beta1`.
    pub api_version: String,
    /// The program to run.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
    /// kubeconfig's `interactiveMode`; `Always` cannot work in a library and is
    /// refused at run time with a clear error.
    pub interactive_mode: String,
    /// Where relative commands are looked up (the kubeconfig's folder).
    pub base_dir: Option<PathBuf>,
    /// The cluster's server and CA, passed to the plugin when it asks
    /// (`provideClusterInfo: true`).
    pub cluster_info: Option<serde_json::Value>,
}

impl std::fmt::Debug for ExecConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let env: Vec<&str> = self.env.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("ExecConfig")
            .field("api_version", &self.api_version)
            .field("command", &self.command)
            .field("args", &self.args)
            .field("env_names", &env)
            .field("interactive_mode", &self.interactive_mode)
            .finish()
    }
}

impl ExecConfig {
    /// A plugin run as `command args…` speaking `client.authentication.k8s.io/v1`.
    pub fn new(command: &str, args: &[&str]) -> Self {
        ExecConfig {
            api_version: "client.authentication.k8s.io/v1".into(),
            command: command.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: Vec::new(),
            interactive_mode: "Never".into(),
            base_dir: None,
            cluster_info: None,
        }
    }
}

/// A client certificate and key, PEM.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientIdentity {
    /// The certificate chain, PEM.
    pub cert_pem: Vec<u8>,
    /// The private key (RSA, EC or PKCS#8), PEM. Never logged.
    pub key_pem: Vec<u8>,
}

impl std::fmt::Debug for ClientIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClientIdentity { cert_pem: .., key_pem: [redacted] }")
    }
}

/// Token files are re-read at least this often, as client-go does.
const TOKEN_FILE_REFRESH: Duration = Duration::from_secs(60);
/// Exec credentials are refreshed this long before they expire.
const EXPIRY_MARGIN: Duration = Duration::from_secs(30);
/// A plugin that runs longer than this is killed.
const EXEC_TIMEOUT: Duration = Duration::from_secs(60);

/// What a request should carry right now.
#[derive(Clone)]
pub(crate) struct Current {
    pub header: Option<String>,
    pub identity: Option<ClientIdentity>,
    /// Changes whenever `identity` changes, so transports know to rebuild.
    pub identity_generation: u64,
}

#[derive(Default)]
struct State {
    header: Option<String>,
    identity: Option<ClientIdentity>,
    identity_generation: u64,
    fetched: Option<Instant>,
    expires: Option<SystemTime>,
    invalid: bool,
}

/// Credentials shared by every stream of a reader.
pub(crate) struct Credentials {
    auth: Auth,
    state: Mutex<State>,
}

impl Credentials {
    pub(crate) fn new(auth: Auth) -> Credentials {
        Credentials {
            auth,
            state: Mutex::new(State::default()),
        }
    }

    /// Whether a 401 may be cured by reloading.
    pub(crate) fn reloadable(&self) -> bool {
        matches!(self.auth, Auth::TokenFile(_) | Auth::Exec(_))
    }

    /// Forces a reload before the next request (after a 401).
    pub(crate) fn invalidate(&self) {
        self.state.lock().invalid = true;
    }

    /// The credentials to send now, refreshed when due. The error names the
    /// file or command and never holds a secret.
    pub(crate) fn current(&self) -> Result<Current, String> {
        let mut st = self.state.lock();
        let due = st.invalid
            || st.fetched.is_none()
            || match &self.auth {
                Auth::TokenFile(_) => st
                    .fetched
                    .is_some_and(|t| t.elapsed() >= TOKEN_FILE_REFRESH),
                Auth::Exec(_) => st
                    .expires
                    .is_some_and(|e| SystemTime::now() + EXPIRY_MARGIN >= e),
                _ => false,
            };
        if due {
            let (header, identity, expires) = self.fetch()?;
            if identity != st.identity {
                st.identity = identity;
                st.identity_generation += 1;
            }
            st.header = header;
            st.expires = expires;
            st.fetched = Some(Instant::now());
            st.invalid = false;
        }
        Ok(Current {
            header: st.header.clone(),
            identity: st.identity.clone(),
            identity_generation: st.identity_generation,
        })
    }

    #[allow(clippy::type_complexity)]
    fn fetch(
        &self,
    ) -> Result<(Option<String>, Option<ClientIdentity>, Option<SystemTime>), String> {
        Ok(match &self.auth {
            Auth::None => (None, None, None),
            Auth::Token(t) => (Some(format!("Bearer {}", t.expose())), None, None),
            Auth::TokenFile(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("cannot read token file {}: {e}", path.display()))?;
                let t = Token::new(&text);
                if t.expose().is_empty() {
                    return Err(format!("token file {} is empty", path.display()));
                }
                (Some(format!("Bearer {}", t.expose())), None, None)
            }
            Auth::Basic { username, password } => {
                let raw = format!("{username}:{}", password.expose());
                (
                    Some(format!("Basic {}", base64_encode(raw.as_bytes()))),
                    None,
                    None,
                )
            }
            Auth::Exec(exec) => {
                let cred = run_exec(exec)?;
                (
                    cred.token.map(|t| format!("Bearer {t}")),
                    cred.identity,
                    cred.expires,
                )
            }
        })
    }
}

struct ExecOutput {
    token: Option<String>,
    identity: Option<ClientIdentity>,
    expires: Option<SystemTime>,
}

#[derive(Deserialize)]
struct ExecCredential {
    #[serde(rename = "apiVersion", default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    status: Option<ExecStatus>,
}

#[derive(Deserialize)]
struct ExecStatus {
    token: Option<String>,
    #[serde(rename = "clientCertificateData")]
    client_certificate_data: Option<String>,
    #[serde(rename = "clientKeyData")]
    client_key_data: Option<String>,
    #[serde(rename = "expirationTimestamp")]
    expiration_timestamp: Option<String>,
}

fn run_exec(exec: &ExecConfig) -> Result<ExecOutput, String> {
    let what = format!("exec plugin {:?}", exec.command);
    if exec.interactive_mode == "Always" {
        return Err(format!(
            "{what}: interactiveMode Always needs a terminal; a library has none"
        ));
    }
    if !matches!(
        exec.api_version.as_str(),
        "client.authentication.k8s.io/v1" | "client.authentication.k8s.io/v1beta1"
    ) {
        return Err(format!(
            "{what}: unsupported apiVersion {:?}",
            exec.api_version
        ));
    }
    let mut spec = serde_json::json!({ "interactive": false });
    if let Some(cluster) = &exec.cluster_info {
        spec["cluster"] = cluster.clone();
    }
    let info = serde_json::json!({ "apiVersion": exec.api_version, "kind": "ExecCredential", "spec": spec });
    let mut command = match (&exec.base_dir, exec.command.contains('/')) {
        (Some(dir), true) if !exec.command.starts_with('/') => {
            Command::new(dir.join(&exec.command))
        }
        _ => Command::new(&exec.command),
    };
    command
        .args(&exec.args)
        .envs(exec.env.iter().map(|(k, v)| (k, v)))
        .env("KUBERNETES_EXEC_INFO", info.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command
        .spawn()
        .map_err(|e| format!("{what}: cannot start: {e}"))?;
    // Read both pipes on threads so a chatty plugin cannot block on a full pipe.
    let mut out_pipe = child.stdout.take().expect("piped");
    let mut err_pipe = child.stderr.take().expect("piped");
    let out_reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out_pipe.by_ref().take(1 << 20).read_to_end(&mut v);
        v
    });
    let err_reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err_pipe.by_ref().take(4096).read_to_end(&mut v);
        v
    });
    let deadline = Instant::now() + EXEC_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{what}: no answer within {EXEC_TIMEOUT:?}; killed"));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => return Err(format!("{what}: {e}")),
        }
    };
    let stdout = out_reader.join().unwrap_or_default();
    let stderr = err_reader.join().unwrap_or_default();
    if !status.success() {
        let stderr = String::from_utf8_lossy(&stderr);
        return Err(format!("{what} failed ({status}): {}", stderr.trim()));
    }
    // stdout holds the secret: errors describe it, never quote it.
    let cred: ExecCredential = serde_json::from_slice(&stdout).map_err(|e| {
        format!(
            "{what}: output is not an ExecCredential (line {}, column {})",
            e.line(),
            e.column()
        )
    })?;
    if cred.kind != "ExecCredential" || cred.api_version != exec.api_version {
        return Err(format!(
            "{what}: output has kind {:?} apiVersion {:?}, want ExecCredential {:?}",
            cred.kind, cred.api_version, exec.api_version
        ));
    }
    let status = cred
        .status
        .ok_or_else(|| format!("{what}: output has no status"))?;
    let identity = match (status.client_certificate_data, status.client_key_data) {
        (Some(c), Some(k)) => Some(ClientIdentity {
            cert_pem: c.into_bytes(),
            key_pem: k.into_bytes(),
        }),
        (None, None) => None,
        _ => {
            return Err(format!(
                "{what}: clientCertificateData and clientKeyData come together"
            ))
        }
    };
    if status.token.is_none() && identity.is_none() {
        return Err(format!(
            "{what}: output has neither a token nor a client certificate"
        ));
    }
    let expires = match status.expiration_timestamp {
        Some(ts) => Some(
            parse_rfc3339(&ts).ok_or_else(|| format!("{what}: bad expirationTimestamp {ts:?}"))?,
        ),
        None => None,
    };
    Ok(ExecOutput {
        token: status.token,
        identity,
        expires,
    })
}

fn base64_encode(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Decodes a kubeconfig `*-data` field, naming it on failure.
pub(crate) fn decode_data(field: &str, value: &str) -> Result<Vec<u8>, String> {
    base64_decode(value).map_err(|e| format!("{field}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trip() {
        for s in ["", "a", "ab", "abc", "user:p@ss", "\u{e9}t\u{e9}"] {
            assert_eq!(
                base64_decode(&base64_encode(s.as_bytes())).unwrap(),
                s.as_bytes()
            );
        }
        assert_eq!(base64_encode(b"user:pass"), "dXNlcjpwYXNz");
    }

    #[test]
    fn basic_and_static_tokens() {
        let c = Credentials::new(Auth::Basic {
            username: "u".into(),
            password: Token::new("p"),
        });
        assert_eq!(c.current().unwrap().header.as_deref(), Some("Basic dTpw"));
        assert!(!c.reloadable());
        let c = Credentials::new(Auth::Token(Token::new("abc")));
        assert_eq!(c.current().unwrap().header.as_deref(), Some("Bearer abc"));
    }

    #[test]
    fn token_file_is_reread_after_invalidate() {
        let dir = std::env::temp_dir().join(format!("tattler-auth-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("token");
        std::fs::write(&f, "one\n").unwrap();
        let c = Credentials::new(Auth::TokenFile(f.clone()));
        assert_eq!(c.current().unwrap().header.as_deref(), Some("Bearer one"));
        std::fs::write(&f, "two").unwrap();
        assert_eq!(
            c.current().unwrap().header.as_deref(),
            Some("Bearer one"),
            "cached within a minute"
        );
        c.invalidate();
        assert_eq!(c.current().unwrap().header.as_deref(), Some("Bearer two"));
        std::fs::remove_file(&f).unwrap();
        c.invalidate();
        let e = c.current().err().unwrap();
        assert!(
            e.contains("token") && e.contains(&f.display().to_string()),
            "{e}"
        );
    }
}
