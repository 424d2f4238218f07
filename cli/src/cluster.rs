//! From flags to a [`Config`]: which cluster (`--config`, `--demo`,
//! `--server`, `--kubeconfig`/`--context`, else as kubectl finds it), which
//! resources in which scope (`-n`/`-A`, `-l`, `--field-selector`), and the
//! shaping and tuning flags.

use std::path::Path;

use kube_tattler::{Access, Config, ResourceSpec};

use crate::args::Args;
use crate::files;

/// What keeps the demo cluster alive: dropped after the reader stops.
#[cfg(feature = "demo")]
pub type Demo = tattler_fakeapi::FakeApi;
/// What keeps the demo cluster alive (none in a build without it).
#[cfg(not(feature = "demo"))]
pub type Demo = ();

/// An error and every source under it, on one line: tattler's messages say
/// what failed and leave why to the source (`cannot read ca.crt: No such
/// file or directory (os error 2)`).
pub fn one_line(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// A configuration to open, and the demo cluster it reaches, if any.
pub struct Cluster {
    /// What to open.
    pub config: Config,
    /// The simulated cluster of `--demo`.
    pub demo: Option<Demo>,
}

/// The scope the names of the command line take unless a flag says
/// otherwise.
#[derive(Default)]
struct Scope {
    namespace: Option<String>,
    label_selector: Option<String>,
    field_selector: Option<String>,
}

/// The configuration the flags describe; the error is one line.
pub fn build(a: &Args) -> Result<Cluster, String> {
    let mut demo = None;
    let (mut config, scope) = if let Some(path) = &a.config {
        let text = files::read_text(path)?;
        let config = Config::from_json(&text)
            .map_err(|e| format!("{}: {}", path.display(), one_line(&e)))?;
        // The file's own names take its top-level scope (none: every
        // namespace); so do the names beside it.
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        let get = |key: &str| doc.get(key).and_then(|v| v.as_str()).map(String::from);
        let scope = Scope {
            namespace: get("namespace"),
            label_selector: get("label_selector"),
            field_selector: get("field_selector"),
        };
        (config, scope)
    } else if a.demo {
        let api = start_demo()?;
        let config = Config::new(Access::new(api_url(&api)));
        demo = Some(api);
        // The demo's pods live in several namespaces and no context names one.
        (config, Scope::default())
    } else {
        let access = if let Some(server) = &a.server {
            Access::new(server)
        } else if a.kubeconfig.is_some() || a.context.is_some() {
            let path = a.kubeconfig.as_deref().map(Path::new);
            Access::from_kubeconfig(path, a.context.as_deref()).map_err(|e| one_line(&e))?
        } else {
            Access::infer().map_err(|e| {
                let why = match e {
                    kube_tattler::Error::Config(m) => m,
                    other => one_line(&other),
                };
                format!("no cluster configured: {why}; give --kubeconfig or --server (or --demo for a simulated cluster)")
            })?
        };
        // As kubectl: the context's namespace (the pod's, in a cluster), else "default".
        let namespace = Some(access.namespace.clone().unwrap_or_else(|| "default".into()));
        let scope = Scope {
            namespace,
            ..Scope::default()
        };
        (Config::new(access), scope)
    };
    let namespace = match (a.all_namespaces, &a.namespace) {
        (true, _) => None,
        (false, Some(ns)) => Some(ns.clone()),
        (false, None) => scope.namespace,
    };
    let label_selector = a.selector.clone().or(scope.label_selector);
    let field_selector = a.field_selector.clone().or(scope.field_selector);
    let names = a.resources.iter().map(String::as_str);
    let names = names.chain(a.all.then_some("*"));
    for name in names {
        for mut spec in ResourceSpec::parse(name).map_err(|e| one_line(&e))? {
            if let Some(ns) = &namespace {
                spec = spec.in_namespace(ns);
            }
            if let Some(l) = &label_selector {
                spec = spec.with_label_selector(l);
            }
            if let Some(f) = &field_selector {
                spec = spec.with_field_selector(f);
            }
            config.resources.push(spec);
        }
    }
    if a.metadata_only {
        for spec in &mut config.resources {
            spec.metadata_only = true;
        }
    }
    if let Some(f) = &a.certificate_authority {
        config.access = config.access.ca_file(f).map_err(|e| one_line(&e))?;
    }
    if let Some(t) = &a.token {
        config.access = config.access.token(t);
    }
    if let Some(f) = &a.token_file {
        config.access = config.access.token_file(f).map_err(|e| one_line(&e))?;
    }
    if a.insecure {
        config.access.insecure_skip_tls_verify = true;
    }
    // Set only by a flag: a --config file's own settings stand otherwise.
    if a.gzip {
        config.tuning.gzip = true;
    }
    if a.relist.is_some() {
        config.relist_interval = a.relist;
    }
    if a.no_scrub {
        config.shaping.scrub = false;
        config.shaping.scrub_secret_data = false;
    }
    if a.show_managed_fields {
        config.shaping.drop_managed_fields = false;
    } else if a.config.is_none() {
        // As kubectl prints objects (since 1.21), and less for the server to send.
        config.shaping.drop_managed_fields = true;
    }
    if let Some(path) = &a.checkpoint {
        config.resume = files::load_checkpoint(path)?;
    }
    Ok(Cluster { config, demo })
}

#[cfg(feature = "demo")]
fn start_demo() -> Result<Demo, String> {
    log::info!("--demo: a simulated cluster with churning pods, in this process");
    let api = tattler_fakeapi::FakeApi::start();
    api.start_churn(3, 12, std::time::Duration::from_millis(500));
    Ok(api)
}

#[cfg(feature = "demo")]
fn api_url(api: &Demo) -> String {
    api.url()
}

#[cfg(not(feature = "demo"))]
fn start_demo() -> Result<Demo, String> {
    Err("--demo: this build has no demo cluster (built without the `demo` feature)".into())
}

#[cfg(not(feature = "demo"))]
fn api_url(_: &Demo) -> String {
    unreachable!("start_demo fails without the demo feature")
}
