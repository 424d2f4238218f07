//! The program to run first: stream resources and print one JSON line per entry.
//!
//! ```text
//! cargo run --example watch -- --demo pods nodes          # built-in simulated cluster
//! cargo run --example watch -- --server https://127.0.0.1:6443 \
//!     --ca-file ca.crt --token-file token pods apps/v1/deployments
//! ```
//!
//! Output, one line per entry (stable: scripts parse it):
//! `{"change":"Add","group":"","version":"v1","resource":"pods","kind":"Pod","namespace":"a","name":"p","uid":"…","resourceVersion":"42"}`
//! plus `"inferred":true` on inferred deletes, `"object":{…}` with `--objects`,
//! and `"error":{"code":403,"reason":"Forbidden","message":"…"}` on Error entries.
//! Logs go to stderr; SIGINT and SIGTERM close the reader and exit 0.

use std::collections::HashSet;
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use tattler::{Change, Config, Entry, Reader, ResourceSpec};

const USAGE: &str = "usage: watch [--demo] [--kubeconfig F] [--context C] [--server URL] [--ca-file F] [--token-file F]
             [--insecure-skip-tls-verify] [--namespace NS] [--selector L] [--until-synced] [--objects] [--gzip]
             [--relist SECONDS] [--no-scrub] [--drop-managed-fields] RESOURCE...
  RESOURCE: pods, nodes, namespaces, services, endpoints, deployments, ingresses, persistentvolumes,
            rbac, configmaps, ..., or group/version/resource (apps/v1/deployments, example.com/v1/widgets)
  The cluster: --server, else --kubeconfig/--context, else $KUBECONFIG or ~/.kube/config, else the
  pod's service account; with none of them, a built-in simulated cluster (as --demo).";

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
            "--help" | "-h" => return Err(String::new()),
            s if s.starts_with('-') => return Err(format!("unknown flag {s}")),
            s => a.resources.push(s.to_string()),
        }
    }
    if a.resources.is_empty() {
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
        let config = Config::new(&api.url());
        _demo = Some(api);
        config
    };
    let explicit = args.kubeconfig.is_some() || args.context.is_some();
    let mut config = match (&args.server, explicit, args.demo) {
        (Some(_), true, _) => return Err("--server excludes --kubeconfig and --context".into()),
        (_, _, true) if args.server.is_some() || explicit => {
            return Err("--demo excludes the cluster flags".into())
        }
        (_, _, true) => demo("--demo"),
        (Some(s), false, false) => Config::new(s),
        (None, true, false) => {
            Config::from_kubeconfig(args.kubeconfig.as_deref(), args.context.as_deref())?
        }
        (None, false, false) => match Config::infer() {
            Ok(c) => c,
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
    if let Some(f) = &args.ca_file {
        config = config.ca_file(f)?;
    }
    if let Some(f) = &args.token_file {
        config = config.token_file(f)?;
    }
    if args.insecure {
        config.insecure_skip_tls_verify = true;
    }
    config.gzip = args.gzip;
    config.relist_interval = args.relist.map(Duration::from_secs);
    config.shaping.scrub = !args.no_scrub;
    config.shaping.drop_managed_fields = args.drop_managed_fields;
    let want: usize = config.resources.len();
    let reader = std::sync::Arc::new(Reader::open(config)?);

    let on_signal = reader.clone();
    ctrlc::set_handler(move || on_signal.stop())?;

    let code = print_entries(&reader, &args, want);
    // Stop the streams before the demo cluster (if any) goes away.
    reader.stop();
    Ok(code)
}

fn print_entries(reader: &Reader, args: &Args, want: usize) -> ExitCode {
    let mut synced: HashSet<String> = HashSet::new();
    let mut out = std::io::stdout().lock();
    for entry in reader.iter() {
        let line = json_line(&entry, args.objects);
        if writeln!(out, "{line}").and_then(|_| out.flush()).is_err() {
            break; // the reading end of the pipe went away
        }
        let gvr = format!(
            "{}/{}/{}",
            entry.resource().group,
            entry.resource().version,
            entry.resource().resource
        );
        match entry.change() {
            Change::Synced if args.until_synced => {
                synced.insert(gvr);
                if synced.len() == want {
                    return ExitCode::SUCCESS;
                }
            }
            Change::Error if args.until_synced => {
                eprintln!("watch: {gvr} failed; it will never be synced");
                return ExitCode::from(1);
            }
            _ => {}
        }
    }
    ExitCode::SUCCESS
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
        field(
            &mut line,
            "resourceVersion",
            e.resource_version().to_string(),
        );
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
