//! kubeconfig files, as kubectl reads them: the schema of one file
//! (`model`, over the bounded `yaml` reader: nesting capped, aliases within
//! a budget, errors that name a line and a column, never a value), and
//! several merged, a context selected and resolved (`load`). [`Access`]'s
//! kubeconfig constructors live here, so `cluster` knows nothing of it;
//! `infer` falls back on `in_cluster`.

mod load;
mod model;

use load::default_paths;

use crate::access::cluster::Access;
use crate::Error;

/// Cluster access as kubectl finds it; [`Access`]'s constructors for it
/// live here, so that `cluster` knows nothing of kubeconfig files.
impl Access {
    /// Reads kubeconfig the way kubectl does: `path`, else `$KUBECONFIG`
    /// (several files merged, the first file winning for each name), else
    /// `~/.kube/config`; then `context`, else the current context.
    pub fn from_kubeconfig(path: Option<&str>, context: Option<&str>) -> Result<Access, Error> {
        let config = match path {
            Some(p) => load::load(&[p.into()], context, false)?,
            None => load::load(&default_paths(), context, true)?,
        };
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
