//! kubeconfig files, as kubectl reads them: the schema of one file
//! (`model`, over the bounded `yaml` reader: nesting capped, aliases within
//! a budget, errors that name a line and a column, never a value), and
//! several merged, a context selected and resolved (`load`). [`Access`]'s
//! kubeconfig constructors live here, so `cluster` knows nothing of it;
//! `infer` falls back on `in_cluster`.

mod load;
mod model;

use std::path::Path;

use load::default_paths;

use crate::access::cluster::Access;
use crate::error::Error;

/// Cluster access as kubectl finds it; [`Access`]'s constructors for it
/// live here, so that `cluster` knows nothing of kubeconfig files.
impl Access {
    /// Reads kubeconfig the way kubectl does: `path`, else `$KUBECONFIG`
    /// (several files merged, the first file winning for each name), else
    /// `~/.kube/config`; then `context`, else the current context.
    ///
    /// `path` is an `Option<&Path>`, not a generic `Option<impl AsRef<Path>>`,
    /// so that a bare `None` needs no type: `Some(&path_buf)`,
    /// `args.kubeconfig.as_deref()` (an `Option<PathBuf>`) and
    /// `Some(Path::new("kubeconfig"))` give one.
    ///
    /// ```no_run
    /// use std::path::PathBuf;
    /// use kube_tattler::Access;
    /// let default = Access::from_kubeconfig(None, Some("prod"))?;
    /// let file = PathBuf::from("/etc/agent/kubeconfig");
    /// let given = Access::from_kubeconfig(Some(&file), None)?;
    /// # Ok::<(), kube_tattler::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::ReadFile`] when a file cannot be read (a missing file of
    /// `$KUBECONFIG` is skipped, as kubectl skips it); [`Error::Config`]
    /// when no file is found, or a file is not a kubeconfig (the error
    /// names the file, line and field, never a value), or the context, its
    /// cluster or its user is missing, or a CA or client certificate it
    /// names cannot be read.
    pub fn from_kubeconfig(path: Option<&Path>, context: Option<&str>) -> Result<Access, Error> {
        let config = match path {
            Some(p) => load::load(&[p.to_path_buf()], context, false)?,
            None => load::load(&default_paths(), context, true)?,
        };
        log::info!("cluster access from {}", config.source);
        Ok(config)
    }

    /// What kubectl and client-go would use: kubeconfig (`$KUBECONFIG` or
    /// `~/.kube/config`) when there is one, else the in-cluster service account.
    ///
    /// ```no_run
    /// fn main() -> Result<(), Box<dyn std::error::Error>> {
    ///     let access = kube_tattler::Access::infer()?;
    ///     println!("{} ({})", access.server, access.source);
    ///     Ok(())
    /// }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`from_kubeconfig`](Self::from_kubeconfig) when there is a
    /// kubeconfig; else [`Error::Config`] naming the kubeconfig paths looked
    /// at and why in-cluster access failed.
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
