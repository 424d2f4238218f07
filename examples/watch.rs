//! The program to copy first: open a reader, print its entries, close it on
//! Ctrl-C.
//!
//! ```text
//! cargo run --example watch -- pods nodes deploy
//! ```
//!
//! The cluster is the one kubectl would use (`$KUBECONFIG`, `~/.kube/config`,
//! or the pod's service account); with none, a built-in simulated cluster with
//! churning pods, so that it runs on a fresh machine. The command
//! `kubectl-tattler` (`cli/`) adds kubectl's flags, output formats, time
//! limits and checkpoints.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use kube_tattler::{Access, Change, Config, Reader};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut names: Vec<String> = std::env::args().skip(1).collect();
    if names.is_empty() {
        names.push("pods".into());
    }

    // Declared before the reader: dropped after it.
    let mut _demo = None;
    let access = match Access::infer() {
        Ok(access) => access,
        Err(e) => {
            eprintln!("no cluster configured ({e}): streaming from a built-in demo cluster");
            let api = tattler_fakeapi::FakeApi::start();
            api.start_churn(3, 12, Duration::from_millis(500));
            let access = Access::new(api.url());
            _demo = Some(api);
            access
        }
    };

    let config = Config::new(access).watch(&names)?; // kubectl's names: po, deploy, a CRD's
    let reader = Arc::new(Reader::open(config)?); // one thread per resource

    // The library never touches signals: the program stops the reader, and
    // the loop below ends once it has taken what was queued.
    let on_signal = Arc::clone(&reader);
    ctrlc::set_handler(move || on_signal.stop())?;

    let mut out = std::io::stdout().lock();
    for entry in reader.iter() {
        let resource = &entry.resource().resource;
        let rv = entry.resource_version_str();
        match entry.change() {
            Change::Synced => writeln!(out, "Synced   {resource}: the full state, at {rv}")?,
            Change::Error => {
                let err = entry.error().expect("an Error entry says why");
                eprintln!("{resource}: {} {}: {}", err.code, err.reason, err.message);
            }
            change => {
                // Add, Update, Delete (inferred: found missing after a re-sync), Snapshot.
                let ns = entry
                    .namespace()
                    .map(|n| format!("{n}/"))
                    .unwrap_or_default();
                let note = if entry.inferred() { " (inferred)" } else { "" };
                let name = entry.name();
                writeln!(
                    out,
                    "{:<8} {resource} {ns}{name} {rv}{note}",
                    change.as_str()
                )?;
            }
        }
    }
    Ok(())
}
