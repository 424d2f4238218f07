//! In-cluster access: a pod's service account, as client-go's
//! `rest.InClusterConfig` finds it.

use std::path::Path;

use crate::access::auth::Auth;
use crate::access::cluster::Access;
use crate::error::Error;

/// Where the service-account credentials of a pod live.
pub(crate) const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// The in-cluster configuration of a pod: the service's address from the
/// environment, the service-account token (re-read as it rotates) and CA.
fn in_cluster(dir: &Path) -> Result<Access, Error> {
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
    let mut config = Access::new(format!("https://{host}:{port}"));
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
        path: ca.clone(),
        source,
    })?);
    config.namespace = std::fs::read_to_string(dir.join("namespace"))
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    config.source = format!("in-cluster service account ({})", dir.display());
    Ok(config)
}

/// In-cluster access; [`Access`]'s constructors for it live here, so that
/// `cluster` knows nothing of service accounts.
impl Access {
    /// The configuration of a pod's service account: `KUBERNETES_SERVICE_HOST`
    /// and `_PORT`, and the token (re-read as it rotates), CA and namespace
    /// under `/var/run/secrets/kubernetes.io/serviceaccount/`.
    ///
    /// ```no_run
    /// let access = kube_tattler::Access::in_cluster()?;
    /// let namespace = access.namespace.clone(); // the pod's own
    /// # Ok::<(), kube_tattler::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when the environment variables are not set (not in
    /// a pod) or there is no token file; [`Error::ReadFile`] when the CA
    /// cannot be read.
    pub fn in_cluster() -> Result<Access, Error> {
        Self::in_cluster_at(SERVICE_ACCOUNT_DIR)
    }

    /// [`in_cluster`](Self::in_cluster) with the service-account files in `dir`.
    ///
    /// # Errors
    ///
    /// As [`in_cluster`](Self::in_cluster).
    pub fn in_cluster_at(dir: impl AsRef<Path>) -> Result<Access, Error> {
        let config = in_cluster(dir.as_ref())?;
        log::info!("cluster access from {}", config.source);
        Ok(config)
    }
}
