//! Serves the fake apiserver for programs that are not Rust (the C example,
//! the Go tests): `cargo build -p tattler-ffi --example fakeapi_serve`.
//!
//! Prints the URL on the first line of stdout, then one line per seeded pod,
//! `seeded NAMESPACE/NAME RESOURCE_VERSION`, then `ready`. Serves until stdin
//! closes. Lines on stdin drive the cluster; each gets one answer line:
//!
//! ```text
//! apply RESOURCE NAMESPACE NAME    -> ok RV        (creates or updates; NAMESPACE "-" for cluster-scoped)
//! apply-json RESOURCE OBJECT       -> ok RV        (the rest of the line is the object's JSON)
//! delete RESOURCE NAMESPACE NAME   -> ok RV | missing
//! compact                          -> ok           (history before now is gone: watches from it get 410)
//! add-resource G V R KIND SCOPE    -> ok           (serve a CRD's resource; G "-" for core, SCOPE namespaced|cluster)
//! remove-resource RESOURCE         -> ok | missing (a deleted CRD: its objects deleted, its watches ended)
//! forbid RESOURCE on|off           -> ok
//! wait-watches N SECONDS           -> ok | timeout (until exactly N watches are open)
//! ```
//!
//! Flags: `--pods N` seeds N pods `default/pod-1` … (default 3); `--churn`
//! starts the fake's churn generator.

use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::time::Duration;

use tattler_fakeapi::FakeApi;

fn main() -> ExitCode {
    let mut pods = 3usize;
    let mut churn = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--pods" => match args.next().and_then(|n| n.parse().ok()) {
                Some(n) => pods = n,
                None => return usage("--pods needs a number"),
            },
            "--churn" => churn = true,
            other => return usage(&format!("unknown argument {other}")),
        }
    }
    let api = FakeApi::start();
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", api.url());
    for i in 1..=pods {
        let name = format!("pod-{i}");
        let rv = api.apply("pods", FakeApi::pod("default", &name));
        let _ = writeln!(out, "seeded default/{name} {rv}");
    }
    if churn {
        api.start_churn(2, 8, Duration::from_millis(200));
    }
    let _ = writeln!(out, "ready");
    let _ = out.flush();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let answer = command(&api, &line);
        let _ = writeln!(out, "{answer}");
        let _ = out.flush();
    }
    ExitCode::SUCCESS
}

fn command(api: &FakeApi, line: &str) -> String {
    if let Some(rest) = line.strip_prefix("apply-json ") {
        let Some((res, obj)) = rest.trim_start().split_once(' ') else {
            return format!("error cannot parse {line:?}");
        };
        let obj: serde_json::Value = match serde_json::from_str(obj) {
            Ok(v) => v,
            Err(e) => return format!("error not JSON: {e}"),
        };
        return match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| api.apply(res, obj)))
        {
            Ok(rv) => format!("ok {rv}"),
            Err(_) => format!("error cannot apply to {res}"),
        };
    }
    let words: Vec<&str> = line.split_whitespace().collect();
    let ns = |w: &str| if w == "-" { None } else { Some(w.to_string()) };
    match words.as_slice() {
        ["apply", res, namespace, name] => {
            let obj = match (*res, ns(namespace)) {
                ("pods", Some(n)) => FakeApi::pod(&n, name),
                (_, n) => FakeApi::object(n.as_deref(), name),
            };
            // apply panics on an unknown resource: answer instead of dying.
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| api.apply(res, obj))) {
                Ok(rv) => format!("ok {rv}"),
                Err(_) => format!("error unknown resource {res}"),
            }
        }
        ["delete", res, namespace, name] => match api.delete(res, ns(namespace).as_deref(), name) {
            Some(rv) => format!("ok {rv}"),
            None => "missing".into(),
        },
        ["forbid", res, on @ ("on" | "off")] => {
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                api.forbid(res, *on == "on")
            })) {
                Ok(()) => "ok".into(),
                Err(_) => format!("error unknown resource {res}"),
            }
        }
        ["add-resource", g, v, r, kind, scope @ ("namespaced" | "cluster")] => {
            let g = if *g == "-" { "" } else { g };
            api.add_resource(g, v, r, kind, *scope == "namespaced");
            "ok".into()
        }
        ["remove-resource", res] => {
            if api.remove_resource(res) {
                "ok".into()
            } else {
                "missing".into()
            }
        }
        ["compact"] => {
            api.compact();
            "ok".into()
        }
        ["wait-watches", n, secs] => match (n.parse(), secs.parse()) {
            (Ok(n), Ok(secs)) if secs <= 600 => {
                if api.wait_open_watches(n, Duration::from_secs(secs)) {
                    "ok".into()
                } else {
                    format!("timeout with {} watches open", api.open_watches())
                }
            }
            _ => format!("error cannot parse {line:?}"),
        },
        _ => format!("error cannot parse {line:?}"),
    }
}

fn usage(why: &str) -> ExitCode {
    eprintln!("fakeapi_serve: {why}\nusage: fakeapi_serve [--pods N] [--churn]");
    ExitCode::from(2)
}
