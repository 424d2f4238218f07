//! The program to run first: stream resources and print one JSON line per entry.
//!
//! ```text
//! cargo run --example watch -- --demo pods nodes          # built-in simulated cluster
//! cargo run --example watch -- --server https://127.0.0.1:6443 \
//!     --ca-file ca.crt --token-file token pods apps/v1/deployments
//! cargo run --example watch -- --config agent.json --checkpoint state.ckpt
//! cargo run --example watch -- --all --metadata-only       # everything, metadata only
//! ```
//!
//! Output, one line per entry (stable: scripts parse it):
//! `{"change":"Add","group":"","version":"v1","resource":"pods","kind":"Pod","namespace":"a","name":"p","uid":"…","resourceVersion":"42"}`
//! plus `"inferred":true` on inferred deletes, `"object":{…}` with `--objects`,
//! and `"error":{"code":403,"reason":"Forbidden","message":"…"}` on Error entries.
//! Logs go to stderr; SIGINT and SIGTERM close the reader and exit 0.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use kube_tattler::{Access, Change, Checkpoint, Config, Entry, Reader, ResourceSpec};

const USAGE: &str = "usage: watch [--demo] [--kubeconfig F] [--context C] [--server URL] [--ca-file F] [--token-file F]
             [--insecure-skip-tls-verify] [--config FILE] [--namespace NS] [--selector L] [--all]
             [--metadata-only] [--checkpoint FILE] [--until-synced] [--objects] [--gzip] [--relist SECONDS]
             [--no-scrub] [--drop-managed-fields] RESOURCE...
  RESOURCE: a name as kubectl takes it (pods, po, cm, deploy, deployment.apps, podtemplates, widgets.example.com),
            rbac, group/version/resource (apps/v1/deployments), or \"*\" / \"*.GROUP\" (as --all)
  --config FILE      the JSON configuration C and Go pass (cluster, resources with their own scope, tuning);
                     RESOURCEs are added to its resources; excludes the cluster flags
  --all              every resource the identity can list and watch, followed as CRDs come and go
  --metadata-only    every resource as PartialObjectMetadata: only the metadata, far less to send and read
  --checkpoint FILE  resume from FILE when it exists (only what changed since); write it on exit
  The cluster: --server, else --kubeconfig/--context, else $KUBECONFIG or ~/.kube/config, else the
  pod's service account; with none of them, a built-in simulated cluster (as --demo).";

/// The largest --config or --checkpoint file read (a checkpoint holds about
/// 100 bytes per object: a million objects fit).
const MAX_FILE: u64 = 256 << 20;

struct Args {
    demo: bool,
    kubeconfig: Option<String>,
    context: Option<String>,
    server: Option<String>,
    ca_file: Option<String>,
    token_file: Option<String>,
    insecure: bool,
    namespace: Option<String>,
    selector: Option<String>,
    until_synced: bool,
    objects: bool,
    gzip: bool,
    relist: Option<u64>,
    no_scrub: bool,
    drop_managed_fields: bool,
    config: Option<PathBuf>,
    all: bool,
    metadata_only: bool,
    checkpoint: Option<PathBuf>,
    resources: Vec<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        demo: false,
        kubeconfig: None,
        context: None,
        server: None,
        ca_file: None,
        token_file: None,
        insecure: false,
        namespace: None,
        selector: None,
        until_synced: false,
        objects: false,
        gzip: false,
        relist: None,
        no_scrub: false,
        drop_managed_fields: false,
        config: None,
        all: false,
        metadata_only: false,
        checkpoint: None,
        resources: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |flag: &str| it.next().ok_or(format!("{flag} needs a value"));
        match arg.as_str() {
            "--demo" => a.demo = true,
            "--server" => a.server = Some(value("--server")?),
            "--kubeconfig" => a.kubeconfig = Some(value("--kubeconfig")?),
            "--context" => a.context = Some(value("--context")?),
            "--ca-file" => a.ca_file = Some(value("--ca-file")?),
            "--token-file" => a.token_file = Some(value("--token-file")?),
            "--insecure-skip-tls-verify" => a.insecure = true,
            "--namespace" | "-n" => a.namespace = Some(value("--namespace")?),
            "--selector" | "-l" => a.selector = Some(value("--selector")?),
            "--until-synced" => a.until_synced = true,
            "--objects" => a.objects = true,
            "--gzip" => a.gzip = true,
            "--relist" => {
                let v = value("--relist")?;
                a.relist = Some(
                    v.parse()
                        .map_err(|_| format!("--relist takes seconds, not {v:?}"))?,
                );
            }
            "--no-scrub" => a.no_scrub = true,
            "--drop-managed-fields" => a.drop_managed_fields = true,
            "--config" => a.config = Some(value("--config")?.into()),
            "--all" => a.all = true,
            "--metadata-only" => a.metadata_only = true,
            "--checkpoint" => a.checkpoint = Some(value("--checkpoint")?.into()),
            "--help" | "-h" => return Err(String::new()),
            s if s.starts_with('-') => return Err(format!("unknown flag {s}")),
            s => a.resources.push(s.to_string()),
        }
    }
    if a.all {
        a.resources.push("*".into());
    }
    if a.resources.is_empty() && a.config.is_none() {
        a.resources.push("pods".into());
    }
    Ok(a)
}

fn main() -> ExitCode {
    StderrLogger::install();
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("watch: {e}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("watch: {e}");
            ExitCode::from(1)
        }
    }
}

fn run(args: Args) -> Result<ExitCode, Box<dyn std::error::Error>> {
    // The demo cluster lives as long as this function.
    let mut _demo = None;
    let mut demo = |why: &str| {
        log::info!("{why}: running against the built-in demo cluster");
        let api = tattler_fakeapi::FakeApi::start();
        api.start_churn(3, 12, Duration::from_millis(500));
        let config = Config::new(Access::new(&api.url()));
        _demo = Some(api);
        config
    };
    let explicit = args.kubeconfig.is_some() || args.context.is_some();
    let cluster_flags = args.server.is_some()
        || explicit
        || args.demo
        || args.ca_file.is_some()
        || args.token_file.is_some()
        || args.insecure;
    let mut config = match (&args.config, &args.server, explicit, args.demo) {
        (Some(_), ..) if cluster_flags => {
            return Err("--config names the cluster: it excludes the cluster flags".into())
        }
        (Some(path), ..) => {
            let text = read_bounded(path)?;
            let text =
                String::from_utf8(text).map_err(|_| format!("{}: not UTF-8", path.display()))?;
            Config::from_json(&text).map_err(|e| format!("{}: {e}", path.display()))?
        }
        (None, Some(_), true, _) => {
            return Err("--server excludes --kubeconfig and --context".into())
        }
        (None, _, _, true) if args.server.is_some() || explicit => {
            return Err("--demo excludes the cluster flags".into())
        }
        (None, _, _, true) => demo("--demo"),
        (None, Some(s), false, false) => Config::new(Access::new(s)),
        (None, None, true, false) => Config::new(Access::from_kubeconfig(
            args.kubeconfig.as_deref(),
            args.context.as_deref(),
        )?),
        (None, None, false, false) => match Access::infer() {
            Ok(a) => Config::new(a),
            Err(e) => demo(&format!("no cluster configured ({e})")),
        },
    };
    for name in &args.resources {
        for mut spec in ResourceSpec::parse(name)? {
            if let Some(ns) = &args.namespace {
                spec = spec.in_namespace(ns);
            }
            if let Some(l) = &args.selector {
                spec = spec.with_label_selector(l);
            }
            config.resources.push(spec);
        }
    }
    if args.metadata_only {
        for spec in &mut config.resources {
            spec.metadata_only = true;
        }
    }
    if let Some(f) = &args.ca_file {
        config.access = config.access.ca_file(f)?;
    }
    if let Some(f) = &args.token_file {
        config.access = config.access.token_file(f)?;
    }
    if args.insecure {
        config.access.insecure_skip_tls_verify = true;
    }
    if let Some(path) = &args.checkpoint {
        match std::fs::metadata(path) {
            Ok(_) => {
                let bytes = read_bounded(path)?;
                let cp = Checkpoint::from_bytes(&bytes).map_err(|e| {
                    format!(
                        "{}: {e}; remove it to start with a full sync",
                        path.display()
                    )
                })?;
                log::info!(
                    "resuming from {}: {} resources, {} objects",
                    path.display(),
                    cp.resources(),
                    cp.objects()
                );
                config.resume = Some(cp);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                log::info!("{} does not exist yet: a full sync", path.display());
            }
            Err(e) => return Err(format!("{}: {e}", path.display()).into()),
        }
    }
    config.tuning.gzip = args.gzip;
    config.relist_interval = args.relist.map(Duration::from_secs);
    config.shaping.scrub = !args.no_scrub;
    config.shaping.drop_managed_fields = args.drop_managed_fields;
    let named = config.resources.iter().filter(|s| !s.is_wildcard()).count();
    let wildcard = config.resources.iter().any(ResourceSpec::is_wildcard);
    let reader = std::sync::Arc::new(Reader::open(config)?);

    let on_signal = reader.clone();
    ctrlc::set_handler(move || on_signal.stop())?;

    let mut out = std::io::stdout().lock();
    let mut printed = print_entries(&reader, &mut out, &args, named, wildcard);
    // Stop the streams (before the demo cluster, if any, goes away), and
    // take what they had queued: once drained, the checkpoint matches what
    // was printed.
    reader.stop();
    if printed.is_ok() {
        for entry in reader.iter() {
            if let Err(e) = print(&mut out, &entry, args.objects) {
                printed = Err(e);
                break;
            }
        }
    }
    if let Some(path) = &args.checkpoint {
        match printed {
            Ok(_) => save_checkpoint(path, &reader.checkpoint())?,
            // Entries the reader of our output never got must come again.
            Err(_) => log::warn!("the output went away: {} is left as it was", path.display()),
        }
    }
    Ok(printed.unwrap_or(ExitCode::SUCCESS))
}

/// Writes one entry's line and flushes it; an error means the reading end
/// of the pipe went away.
fn print(out: &mut impl Write, entry: &Entry, objects: bool) -> std::io::Result<()> {
    writeln!(out, "{}", json_line(entry, objects))?;
    out.flush()
}

/// Prints entries until the reader is stopped (a signal) or, with
/// `--until-synced`, every stream has its full state: `Ok` with the exit
/// code, `Err` when the output went away.
fn print_entries(
    reader: &Reader,
    out: &mut impl Write,
    args: &Args,
    named: usize,
    wildcard: bool,
) -> std::io::Result<ExitCode> {
    for entry in reader.iter() {
        print(out, &entry, args.objects)?;
        // A resource that failed for good, or a name the server does not
        // serve (looked for again, as a CRD may come): never synced. Under
        // --all such resources are skipped; a named one fails the run.
        let ended = entry
            .error()
            .is_some_and(|e| e.ended || e.reason == "NotFound");
        if args.until_synced && ended && !wildcard {
            eprintln!(
                "watch: {} will not be synced: {}",
                entry.resource().resource,
                entry.error().map(|e| e.reason.as_str()).unwrap_or("")
            );
            return Ok(ExitCode::from(1));
        }
        if args.until_synced && (entry.change() == Change::Synced || ended) {
            // The stats say a stream is synced (or failed) before its entry
            // comes. With a wildcard, the found streams join once discovery
            // has answered: more streams than the named ones.
            let stats = reader.stats();
            let found = !wildcard || stats.len() > named;
            // A named resource that failed is not done: its Error entry,
            // on its way, ends the run with 1.
            if found && stats.iter().all(|s| s.synced || (wildcard && s.failed)) {
                return Ok(ExitCode::SUCCESS);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A file of at most MAX_FILE bytes.
fn read_bounded(path: &Path) -> Result<Vec<u8>, String> {
    let f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut bytes = Vec::new();
    f.take(MAX_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(format!(
            "{}: larger than {} MiB",
            path.display(),
            MAX_FILE >> 20
        ));
    }
    Ok(bytes)
}

/// Writes the checkpoint beside `path` and renames it over: a crash while
/// writing leaves the old one whole.
fn save_checkpoint(path: &Path, cp: &Checkpoint) -> Result<(), String> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let bytes = cp.to_bytes();
    let written = std::fs::File::create(&tmp)
        .and_then(|mut f| f.write_all(&bytes).and_then(|_| f.sync_all()))
        .and_then(|_| std::fs::rename(&tmp, path));
    written.map_err(|e| format!("{}: cannot write the checkpoint: {e}", path.display()))?;
    log::info!(
        "wrote {} ({} resources, {} objects, {} bytes)",
        path.display(),
        cp.resources(),
        cp.objects(),
        bytes.len()
    );
    Ok(())
}

/// One output line, keys in the documented order. The object is spliced in
/// as received, not re-serialised.
fn json_line(e: &Entry, with_object: bool) -> String {
    fn field(line: &mut String, key: &str, value: impl serde::Serialize) {
        line.push_str(if line.len() > 1 { ",\"" } else { "\"" });
        line.push_str(key);
        line.push_str("\":");
        line.push_str(&serde_json::to_string(&value).expect("strings and numbers serialise"));
    }
    let r = e.resource();
    let mut line = String::from("{");
    field(&mut line, "change", e.change().as_str());
    field(&mut line, "group", &r.group);
    field(&mut line, "version", &r.version);
    field(&mut line, "resource", &r.resource);
    field(&mut line, "kind", &r.kind);
    if !matches!(e.change(), Change::Synced | Change::Error) {
        field(&mut line, "namespace", e.namespace().unwrap_or(""));
        field(&mut line, "name", e.name());
        field(&mut line, "uid", e.uid());
    }
    if e.change() != Change::Error {
        field(&mut line, "resourceVersion", e.resource_version_str());
    }
    if e.inferred() {
        field(&mut line, "inferred", true);
    }
    if let Some(err) = e.error() {
        let v = serde_json::json!({"code": err.code, "reason": err.reason, "message": err.message});
        field(&mut line, "error", v);
    }
    if let (true, Some(obj)) = (with_object, e.object()) {
        line.push_str(",\"object\":");
        line.push_str(&String::from_utf8_lossy(obj));
    }
    line.push('}');
    line
}

/// Log lines to stderr; the level comes from TATTLER_LOG (error, warn, info, debug), default info.
struct StderrLogger;

impl StderrLogger {
    fn install() {
        let level = match std::env::var("TATTLER_LOG").as_deref() {
            Ok("error") => log::LevelFilter::Error,
            Ok("warn") => log::LevelFilter::Warn,
            Ok("debug") => log::LevelFilter::Debug,
            Ok("off") => log::LevelFilter::Off,
            _ => log::LevelFilter::Info,
        };
        if log::set_logger(&StderrLogger).is_ok() {
            log::set_max_level(level);
        }
    }
}

impl log::Log for StderrLogger {
    fn enabled(&self, _: &log::Metadata) -> bool {
        true
    }
    fn log(&self, record: &log::Record) {
        eprintln!("{} {}: {}", record.level(), record.target(), record.args());
    }
    fn flush(&self) {}
}
