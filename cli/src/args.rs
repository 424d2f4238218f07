//! The command line, read as kubectl's (pflag) reads it: `-n NS`, `-nNS`,
//! `-n=NS`, `--namespace NS`, `--namespace=NS`, `--` before names that start
//! with a dash. Pure: argv in, [`Command`] or a usage error out.

use std::path::PathBuf;
use std::time::Duration;

/// The help text, printed on stdout by `--help`.
pub const USAGE: &str = "\
kubectl-tattler streams the full state of Kubernetes objects, then every change, as `kubectl get -w`
would if it never lost one: after a lost watch it re-syncs and reports what changed meanwhile,
deletes included. On the PATH it is also the kubectl plugin `kubectl tattler`.

Examples:
  # Every pod in every namespace, then every change
  kubectl tattler pods -A

  # Deployments and stateful sets of one namespace, one JSON object per line (for jq)
  kubectl tattler deploy,sts -n shop -o json

  # The names of everything the identity may see, once, then exit
  kubectl tattler --all -A --metadata-only --until-synced -o name

  # An exporter that resumes where it stopped: only what changed meanwhile
  kubectl tattler events -A -o json --checkpoint events.ckpt

Usage:
  kubectl-tattler [flags] RESOURCE...

RESOURCE is a name as kubectl takes it (pods, po, deploy, deployment.apps, widgets.example.com,
apps/v1/deployments, 'apps/v1 Deployment'; rbac: the four RBAC resources), several of them or
comma-separated (pods,nodes).

Flags:
  -A, --all-namespaces          every namespace (default: the context's namespace, else \"default\")
  -n, --namespace NS            the namespace NS
  -l, --selector SELECTOR       a label selector (app=web,tier!=db)
      --field-selector SELECTOR a field selector (spec.nodeName=node-1)
  -o, --output FORMAT           table (the default: CHANGE, NAMESPACE, NAME, RESOURCEVERSION, AGE),
                                wide (and UID, RESOURCE), json (one object per line), yaml (documents
                                separated by ---) or name (kind.group/name)
      --no-headers              no header line (table, wide)
      --objects                 each entry with its object (json, yaml)
      --show-managed-fields     keep metadata.managedFields in objects (left out by default, as kubectl does)
      --metadata-only           only each object's metadata (PartialObjectMetadata): far less to send
      --all                     every resource the identity can list and watch, as CRDs come and go
      --until-synced            exit 0 once every resource has its full state
      --request-timeout D       exit 1 when a resource has no full state after D and is failing or
                                silent (30s, 1m, 2m30s; 0: wait); default 0, 30s with --until-synced
      --checkpoint FILE         resume from FILE when it exists (only what changed since); write it on exit
      --config FILE             the JSON configuration C and Go pass (cluster, resources with their own
                                scope, tuning); RESOURCEs join its resources, with its namespace and selectors
      --relist D                relist every resource this often (1m to 168h)
      --gzip                    ask for gzip bodies
      --no-scrub                keep env values and Secret data (redacted by default)

Cluster (default: $KUBECONFIG, else ~/.kube/config, else the pod's service account):
      --kubeconfig FILE         the kubeconfig file
      --context NAME            the kubeconfig context
  -s, --server URL              the apiserver, without a kubeconfig
      --certificate-authority FILE  the CA bundle to trust
      --token TOKEN             a bearer token
      --token-file FILE         a bearer token in FILE, re-read as it rotates
      --insecure-skip-tls-verify    do not check the server's certificate
      --demo                    a simulated cluster with churning pods, in this process (every namespace)

Other:
  -v, --v N                     log level: 0 none (the default), 1 warnings, 2 info, 4 debug, 6 trace
  -h, --help                    this help
      --version                 the version

Output goes to stdout; progress (on a terminal), warnings and errors to stderr.
Exit status: 0 when done (--until-synced) or stopped by SIGINT or SIGTERM (queued entries
printed, the checkpoint written); 1 on failure (a bad flag, a resource forbidden or not served,
no full state within --request-timeout), with the reason in one line on stderr.
";

/// What the command line asks for.
#[derive(Debug, PartialEq)]
pub enum Command {
    /// Stream.
    Run(Box<Args>),
    /// `-h`, `--help`.
    Help,
    /// `--version`.
    Version,
}

/// How entries are printed (`-o`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Output {
    /// Columns for people, as `kubectl get -w` prints them.
    #[default]
    Table,
    /// The table with more columns.
    Wide,
    /// One JSON object per line.
    Json,
    /// YAML documents, each starting with `---`.
    Yaml,
    /// `kind.group/name`, one per object change.
    Name,
}

/// The flags and names of a run.
#[derive(Debug, Default, PartialEq)]
pub struct Args {
    /// Names as given, commas split.
    pub resources: Vec<String>,
    /// `-n`.
    pub namespace: Option<String>,
    /// `-A`.
    pub all_namespaces: bool,
    /// `-l`.
    pub selector: Option<String>,
    /// `--field-selector`.
    pub field_selector: Option<String>,
    /// `-o`.
    pub output: Output,
    /// `--no-headers`.
    pub no_headers: bool,
    /// `--objects`.
    pub objects: bool,
    /// `--show-managed-fields`.
    pub show_managed_fields: bool,
    /// `--metadata-only`.
    pub metadata_only: bool,
    /// `--all`.
    pub all: bool,
    /// `--until-synced`.
    pub until_synced: bool,
    /// `--request-timeout`: `None` when not given, `Some(ZERO)` for none.
    pub request_timeout: Option<Duration>,
    /// `--checkpoint`.
    pub checkpoint: Option<PathBuf>,
    /// `--config`.
    pub config: Option<PathBuf>,
    /// `--relist`.
    pub relist: Option<Duration>,
    /// `--gzip`.
    pub gzip: bool,
    /// `--no-scrub`.
    pub no_scrub: bool,
    /// `--kubeconfig`.
    pub kubeconfig: Option<String>,
    /// `--context`.
    pub context: Option<String>,
    /// `-s`, `--server`.
    pub server: Option<String>,
    /// `--certificate-authority`.
    pub certificate_authority: Option<String>,
    /// `--token`.
    pub token: Option<String>,
    /// `--token-file`.
    pub token_file: Option<String>,
    /// `--insecure-skip-tls-verify`.
    pub insecure: bool,
    /// `--demo`.
    pub demo: bool,
    /// `-v`.
    pub verbosity: u8,
}

/// With `--until-synced` and no `--request-timeout`: a sync-and-exit run
/// must end, and 30 s is how long kubectl-like tools let a server answer.
pub const UNTIL_SYNCED_TIMEOUT: Duration = Duration::from_secs(30);

impl Args {
    /// How long a resource may go without its full state, failing or
    /// silent, before the run fails; `None`: as long as it takes.
    pub fn sync_deadline(&self) -> Option<Duration> {
        match self.request_timeout {
            Some(d) if d.is_zero() => None,
            Some(d) => Some(d),
            None if self.until_synced => Some(UNTIL_SYNCED_TIMEOUT),
            None => None,
        }
    }
}

/// Long name, short letter, and whether it takes a value.
const FLAGS: &[(&str, Option<char>, bool)] = &[
    ("all-namespaces", Some('A'), false),
    ("namespace", Some('n'), true),
    ("selector", Some('l'), true),
    ("field-selector", None, true),
    ("output", Some('o'), true),
    ("no-headers", None, false),
    ("objects", None, false),
    ("show-managed-fields", None, false),
    ("metadata-only", None, false),
    ("all", None, false),
    ("until-synced", None, false),
    ("request-timeout", None, true),
    ("checkpoint", None, true),
    ("config", None, true),
    ("relist", None, true),
    ("gzip", None, false),
    ("no-scrub", None, false),
    ("kubeconfig", None, true),
    ("context", None, true),
    ("server", Some('s'), true),
    ("certificate-authority", None, true),
    ("token", None, true),
    ("token-file", None, true),
    ("insecure-skip-tls-verify", None, false),
    ("demo", None, false),
    ("v", Some('v'), true),
    ("help", Some('h'), false),
    ("version", None, false),
];

/// Reads argv (without the program name).
pub fn parse<I: IntoIterator<Item = String>>(argv: I) -> Result<Command, String> {
    let mut a = Args::default();
    let mut it = argv.into_iter();
    let mut names = Vec::new();
    while let Some(arg) = it.next() {
        if arg == "--" {
            names.extend(it.by_ref());
            break;
        }
        let (long, shown, inline) = if let Some(rest) = arg.strip_prefix("--") {
            let (name, value) = match rest.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (rest, None),
            };
            let Some(&(long, _, _)) = FLAGS.iter().find(|f| f.0 == name) else {
                return Err(format!("unknown flag: --{name}"));
            };
            (long, format!("--{long}"), value)
        } else if arg.len() > 1 && arg.starts_with('-') {
            let c = arg[1..].chars().next().expect("a letter after -");
            let Some(&(long, _, takes)) = FLAGS.iter().find(|f| f.1 == Some(c)) else {
                return Err(format!("unknown shorthand flag: '{c}' in {arg}"));
            };
            let rest = &arg[1 + c.len_utf8()..];
            let value = match rest.strip_prefix('=') {
                Some(v) => Some(v.to_string()),
                None if rest.is_empty() => None,
                None if takes => Some(rest.to_string()),
                None => {
                    let next = rest.chars().next().expect("not empty");
                    return Err(format!("unknown shorthand flag: '{next}' in {arg}"));
                }
            };
            (long, format!("-{c}"), value)
        } else {
            names.push(arg);
            continue;
        };
        let takes = FLAGS.iter().any(|f| f.0 == long && f.2);
        let value = if takes {
            match inline {
                Some(v) => v,
                None => it
                    .next()
                    .ok_or_else(|| format!("flag needs an argument: {shown}"))?,
            }
        } else {
            match inline.as_deref() {
                None | Some("true") => String::new(),
                Some("false") => continue,
                Some(v) => return Err(invalid(v, &shown, "true or false")),
            }
        };
        match long {
            "help" => return Ok(Command::Help),
            "version" => return Ok(Command::Version),
            _ => set(&mut a, long, &shown, value)?,
        }
    }
    for name in names {
        a.resources.extend(
            name.split(',')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(String::from),
        );
    }
    check(&a)?;
    Ok(Command::Run(Box::new(a)))
}

fn invalid(value: &str, flag: &str, want: &str) -> String {
    format!("invalid argument {value:?} for {flag:?} flag: want {want}")
}

fn set(a: &mut Args, long: &str, shown: &str, v: String) -> Result<(), String> {
    match long {
        "all-namespaces" => a.all_namespaces = true,
        "namespace" => a.namespace = Some(v),
        "selector" => a.selector = Some(v),
        "field-selector" => a.field_selector = Some(v),
        "output" => {
            a.output = match v.as_str() {
                "table" => Output::Table,
                "wide" => Output::Wide,
                "json" => Output::Json,
                "yaml" => Output::Yaml,
                "name" => Output::Name,
                _ => return Err(invalid(&v, shown, "table, wide, json, yaml or name")),
            }
        }
        "no-headers" => a.no_headers = true,
        "objects" => a.objects = true,
        "show-managed-fields" => a.show_managed_fields = true,
        "metadata-only" => a.metadata_only = true,
        "all" => a.all = true,
        "until-synced" => a.until_synced = true,
        "request-timeout" => {
            a.request_timeout = Some(
                duration(&v)
                    .ok_or_else(|| invalid(&v, shown, "a duration (30s, 1m, 2m30s) or 0"))?,
            )
        }
        "checkpoint" => a.checkpoint = Some(v.into()),
        "config" => a.config = Some(v.into()),
        "relist" => {
            a.relist = Some(duration(&v).ok_or_else(|| invalid(&v, shown, "a duration (10m, 1h)"))?)
        }
        "gzip" => a.gzip = true,
        "no-scrub" => a.no_scrub = true,
        "kubeconfig" => a.kubeconfig = Some(v),
        "context" => a.context = Some(v),
        "server" => a.server = Some(v),
        "certificate-authority" => a.certificate_authority = Some(v),
        "token" => a.token = Some(v),
        "token-file" => a.token_file = Some(v),
        "insecure-skip-tls-verify" => a.insecure = true,
        "demo" => a.demo = true,
        "v" => {
            a.verbosity = v
                .parse()
                .map_err(|_| invalid(&v, shown, "a level, 0 to 9"))?
        }
        _ => unreachable!("every flag of FLAGS is set here"),
    }
    Ok(())
}

/// What no single flag can judge.
fn check(a: &Args) -> Result<(), String> {
    if a.resources.is_empty() && !a.all && a.config.is_none() {
        return Err(
            "you must name the resources to watch (pods, deploy, …), or give --all or --config FILE"
                .into(),
        );
    }
    if a.objects && !matches!(a.output, Output::Json | Output::Yaml) {
        return Err("--objects needs -o json or -o yaml".into());
    }
    let credentials = a.certificate_authority.is_some()
        || a.token.is_some()
        || a.token_file.is_some()
        || a.insecure;
    let kubeconfig = a.kubeconfig.is_some() || a.context.is_some();
    if a.config.is_some() && (a.server.is_some() || kubeconfig || a.demo || credentials) {
        return Err("--config names the cluster: it excludes the cluster flags".into());
    }
    if a.demo && (a.server.is_some() || kubeconfig || credentials) {
        return Err("--demo excludes the cluster flags".into());
    }
    if a.server.is_some() && kubeconfig {
        return Err("--server excludes --kubeconfig and --context".into());
    }
    if a.token.is_some() && a.token_file.is_some() {
        return Err("--token excludes --token-file".into());
    }
    Ok(())
}

/// A duration as kubectl's `--request-timeout` takes it: Go's form (`30s`,
/// `1m`, `1h30m`, `1.5s`, `250ms`), or whole seconds (`30`), `0` for none.
pub fn duration(s: &str) -> Option<Duration> {
    if let Ok(secs) = s.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let mut rest = s;
    let mut total = Duration::ZERO;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 0.001,
            _ => return None,
        };
        rest = &rest[unit_len..];
        total += Duration::try_from_secs_f64(number * scale).ok()?;
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(argv: &[&str]) -> Result<Args, String> {
        match parse(argv.iter().map(|s| s.to_string()))? {
            Command::Run(a) => Ok(*a),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn flags_as_kubectl_writes_them() {
        for argv in [
            &["-n", "shop", "pods"][..],
            &["-nshop", "pods"],
            &["-n=shop", "pods"],
            &["--namespace", "shop", "pods"],
            &["pods", "--namespace=shop"],
        ] {
            let a = run(argv).unwrap();
            assert_eq!(
                (a.namespace.as_deref(), a.resources.as_slice()),
                (Some("shop"), &["pods".to_string()][..]),
                "{argv:?}"
            );
        }
        let a = run(&[
            "-A",
            "-l",
            "app=web",
            "--field-selector",
            "spec.nodeName=n1",
            "-o",
            "yaml",
            "--objects",
            "po,deploy",
            "nodes",
            "--until-synced",
            "--request-timeout=1m30s",
            "-v",
            "2",
        ])
        .unwrap();
        assert!(a.all_namespaces && a.until_synced && a.objects);
        assert_eq!(a.selector.as_deref(), Some("app=web"));
        assert_eq!(a.field_selector.as_deref(), Some("spec.nodeName=n1"));
        assert_eq!(a.output, Output::Yaml);
        assert_eq!(a.resources, ["po", "deploy", "nodes"]);
        assert_eq!(a.request_timeout, Some(Duration::from_secs(90)));
        assert_eq!(a.verbosity, 2);
        // After `--`, everything is a name; a boolean takes =false.
        let a = run(&["--until-synced=false", "--", "-odd"]).unwrap();
        assert_eq!(
            (a.until_synced, a.resources.as_slice()),
            (false, &["-odd".to_string()][..])
        );
    }

    #[test]
    fn help_and_version_win() {
        let p = |argv: &[&str]| parse(argv.iter().map(|s| s.to_string()));
        assert_eq!(p(&["-h"]), Ok(Command::Help));
        assert_eq!(p(&["pods", "--help"]), Ok(Command::Help));
        assert_eq!(p(&["--version"]), Ok(Command::Version));
    }

    #[test]
    fn errors_name_the_flag() {
        let cases: &[(&[&str], &str)] = &[
            (&["--bogus"], "unknown flag: --bogus"),
            (&["--bogus=1", "pods"], "unknown flag: --bogus"),
            (&["-x", "pods"], "unknown shorthand flag: 'x' in -x"),
            (&["-Ax", "pods"], "unknown shorthand flag: 'x' in -Ax"),
            (&["pods", "-n"], "flag needs an argument: -n"),
            (&["pods", "--context"], "flag needs an argument: --context"),
            (
                &["pods", "-o", "xml"],
                "invalid argument \"xml\" for \"-o\" flag: want table, wide, json, yaml or name",
            ),
            (
                &["pods", "--request-timeout", "5x"],
                "invalid argument \"5x\" for \"--request-timeout\" flag: want a duration (30s, 1m, 2m30s) or 0",
            ),
            (
                &["pods", "--all=maybe"],
                "invalid argument \"maybe\" for \"--all\" flag: want true or false",
            ),
            (
                &[],
                "you must name the resources to watch (pods, deploy, …), or give --all or --config FILE",
            ),
            (&["pods", "--objects"], "--objects needs -o json or -o yaml"),
            (
                &["pods", "--config", "f", "--server", "https://h"],
                "--config names the cluster: it excludes the cluster flags",
            ),
            (&["pods", "--demo", "--context", "c"], "--demo excludes the cluster flags"),
            (
                &["pods", "-s", "https://h", "--kubeconfig", "k"],
                "--server excludes --kubeconfig and --context",
            ),
        ];
        for (argv, want) in cases {
            assert_eq!(run(argv).unwrap_err(), *want, "{argv:?}");
        }
    }

    #[test]
    fn durations_as_kubectl_reads_them() {
        let cases = [
            ("0", Some(0)),
            ("30", Some(30_000)),
            ("30s", Some(30_000)),
            ("1m", Some(60_000)),
            ("2m30s", Some(150_000)),
            ("1h", Some(3_600_000)),
            ("1.5s", Some(1_500)),
            ("250ms", Some(250)),
            ("", None),
            ("s", None),
            ("5x", None),
            ("-1s", None),
            ("1d", None),
        ];
        for (text, ms) in cases {
            assert_eq!(duration(text).map(|d| d.as_millis() as u64), ms, "{text:?}");
        }
    }

    #[test]
    fn the_sync_deadline() {
        let a = |timeout: Option<u64>, until: bool| Args {
            request_timeout: timeout.map(Duration::from_secs),
            until_synced: until,
            ..Args::default()
        };
        assert_eq!(a(None, false).sync_deadline(), None);
        assert_eq!(a(None, true).sync_deadline(), Some(UNTIL_SYNCED_TIMEOUT));
        assert_eq!(a(Some(0), true).sync_deadline(), None);
        assert_eq!(
            a(Some(5), false).sync_deadline(),
            Some(Duration::from_secs(5))
        );
    }
}
