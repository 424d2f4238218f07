//! The credentials a configuration names: a token, a token file, basic
//! auth, a client certificate or an exec plugin (`Auth`, `ExecConfig`), with
//! client-go's rules for them. What is had at run time is `credentials`'.

use std::path::PathBuf;
use std::time::Duration;

use crate::access::go_base64::base64_decode;
use crate::access::secret::Token;

/// How requests authenticate.
///
/// ```
/// use kube_tattler::{Access, Auth, Token};
/// let mut access = Access::new("https://10.0.0.1:6443");
/// access.auth = Auth::Basic { username: "admin".into(), password: Token::new("s3cr3t") };
/// assert!(!format!("{access:?}").contains("s3cr3t"));
/// ```
// One per configuration: the size of the Exec variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Auth {
    /// No credentials (a client certificate may still be set).
    #[default]
    None,
    /// A fixed bearer token.
    Token(Token),
    /// A bearer token read from a file, re-read at least once a minute (projected
    /// service-account tokens rotate) and at once after a 401. A failed re-read
    /// keeps the last token read, as client-go does.
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
/// Its `Debug` output leaves out the values of `args` and `env` (they may be
/// secrets, such as kubelogin's `--oidc-client-secret=…`).
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExecConfig {
    /// `client.authentication.k8s.io/v1` or `…/v1beta1`.
    pub api_version: String,
    /// The program to run.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment variables (the process's own are passed on too).
    pub env: Vec<(String, String)>,
    /// kubeconfig's `interactiveMode`: `Never` or `IfAvailable` (a library has
    /// no terminal, so the plugin is never interactive); `Always` is refused.
    pub interactive_mode: String,
    /// kubeconfig's `installHint`: shown when the command is not found.
    pub install_hint: Option<String>,
    /// Where relative commands are looked up (the kubeconfig's folder).
    pub base_dir: Option<PathBuf>,
    /// The cluster's server, CA and exec extension, passed to the plugin when
    /// it asks (`provideClusterInfo: true`), in client-go's form.
    pub cluster_info: Option<serde_json::Value>,
    /// A run that takes longer is killed, with every process it started.
    /// Default 60 s.
    pub timeout: Duration,
}

impl std::fmt::Debug for ExecConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let env: Vec<&str> = self.env.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("ExecConfig")
            .field("api_version", &self.api_version)
            .field("command", &self.command)
            .field("args", &format_args!("[{} hidden]", self.args.len()))
            .field("env_names", &env)
            .field("interactive_mode", &self.interactive_mode)
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// The apiVersions of ExecCredential that client-go (and tattler) speak.
const EXEC_API_VERSIONS: [&str; 2] = [
    "client.authentication.k8s.io/v1",
    "client.authentication.k8s.io/v1beta1",
];

impl ExecConfig {
    /// A plugin run as `command args…` speaking `client.authentication.k8s.io/v1`.
    ///
    /// `args` stays a slice of `&str`, not a generic list, so that a plugin
    /// without arguments is `&[]`, which a generic parameter could not type;
    /// arguments held as `Vec<String>` go straight into
    /// [`args`](Self::args).
    ///
    /// ```
    /// use kube_tattler::{Access, Auth, ExecConfig};
    /// let mut access = Access::new("https://10.0.0.1:6443");
    /// access.auth = Auth::Exec(ExecConfig::new("gke-gcloud-auth-plugin", &[]));
    /// let mut aws = ExecConfig::new("aws", &["eks", "get-token"]);
    /// aws.args.extend(["--cluster-name".to_string(), "prod".to_string()]);
    /// ```
    #[must_use]
    pub fn new(command: impl Into<String>, args: &[&str]) -> Self {
        ExecConfig {
            api_version: "client.authentication.k8s.io/v1".into(),
            command: command.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: Vec::new(),
            interactive_mode: "Never".into(),
            install_hint: None,
            base_dir: None,
            cluster_info: None,
            timeout: Duration::from_secs(60),
        }
    }

    /// client-go's checks of an exec block, and the interactive mode as a
    /// library (no terminal) meets it.
    ///
    /// Errors name the field, never its value: a command, an apiVersion or
    /// a mode is the user's text, and any of it may have been pasted from a
    /// secret.
    pub(crate) fn check(&self) -> Result<(), String> {
        if self.command.is_empty() {
            return Err("exec: a command is required".into());
        }
        if !EXEC_API_VERSIONS.contains(&self.api_version.as_str()) {
            return Err(format!(
                "exec plugin: invalid apiVersion (want {})",
                EXEC_API_VERSIONS.join(" or ")
            ));
        }
        if self
            .env
            .iter()
            .any(|(k, _)| k.is_empty() || k.contains('='))
        {
            return Err("exec plugin: an env entry has no name".into());
        }
        match self.interactive_mode.as_str() {
            "Never" | "IfAvailable" => {}
            "" => {
                return Err(format!(
                    "exec plugin: interactiveMode must be specified for {}",
                    self.api_version
                ))
            }
            "Always" => {
                return Err(
                    "exec plugin: interactiveMode Always needs a terminal on standard input; a library has none".into(),
                )
            }
            _ => {
                return Err(
                    "exec plugin: invalid interactiveMode (Never, IfAvailable or Always)".into(),
                )
            }
        }
        if self.timeout.is_zero() {
            return Err("exec plugin: the timeout must be above zero".into());
        }
        Ok(())
    }
}

/// Decodes a kubeconfig `*-data` field, naming it on failure.
pub(crate) fn decode_data(field: &str, value: &str) -> Result<Vec<u8>, String> {
    base64_decode(value).map_err(|e| format!("{field}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_config_debug_hides_args_and_env_values() {
        let mut e = ExecConfig::new("kubelogin", &["get-token", "--oidc-client-secret=s3cr3t-a"]);
        e.env.push(("AWS_SECRET".into(), "s3cr3t-e".into()));
        let d = format!("{:?}", Auth::Exec(e));
        assert!(!d.contains("s3cr3t") && !d.contains("get-token"), "{d}");
        assert!(
            d.contains("kubelogin") && d.contains("[2 hidden]") && d.contains("AWS_SECRET"),
            "{d}"
        );
    }

    #[test]
    fn exec_checks_follow_client_go() {
        let check = |f: &dyn Fn(&mut ExecConfig)| {
            let mut e = ExecConfig::new("/opt/s3cr3t-cmd", &[]);
            f(&mut e);
            let r = e.check();
            assert!(!format!("{r:?}").contains("s3cr3t"), "{r:?}");
            r
        };
        assert!(check(&|_| {}).is_ok());
        assert!(check(&|e| e.interactive_mode = "IfAvailable".into()).is_ok());
        assert!(check(&|e| e.api_version = "s3cr3t.k8s.io/v1alpha1".into())
            .unwrap_err()
            .contains("invalid apiVersion"));
        assert!(check(&|e| e.interactive_mode = String::new())
            .unwrap_err()
            .contains("interactiveMode must be specified"));
        assert!(check(&|e| e.interactive_mode = "Always".into())
            .unwrap_err()
            .contains("needs a terminal"));
        assert!(check(&|e| e.interactive_mode = "s3cr3t".into())
            .unwrap_err()
            .contains("invalid interactiveMode"));
        assert!(check(&|e| e.env.push((String::new(), "v".into())))
            .unwrap_err()
            .contains("no name"));
        assert!(check(&|e| e.command.clear())
            .unwrap_err()
            .contains("command"));
    }
}
