//! `kubectl-tattler`: stream the full state of Kubernetes objects, then
//! every change, from the command line (and, on the PATH, as the kubectl
//! plugin `kubectl tattler`). `--help` says how; so does docs/command.md.

#![forbid(unsafe_code)]

mod age;
mod args;
mod cluster;
mod deadline;
mod files;
mod logger;
mod output;
mod progress;
mod watch;

use std::io::Write;
use std::process::ExitCode;

use args::Command;

fn main() -> ExitCode {
    let argv: Result<Vec<String>, _> = std::env::args_os()
        .skip(1)
        .map(|a| a.into_string())
        .collect();
    let parsed = match argv {
        Ok(argv) => args::parse(argv),
        Err(bad) => Err(format!("an argument is not UTF-8: {bad:?}")),
    };
    let command = match parsed {
        Ok(c) => c,
        Err(e) => {
            stderr_line(&format!("error: {e}\nSee 'kubectl-tattler --help'."));
            return ExitCode::from(1);
        }
    };
    let a = match command {
        Command::Help => return stdout_text(args::USAGE),
        Command::Version => {
            return stdout_text(&format!("kubectl-tattler {}\n", env!("CARGO_PKG_VERSION")))
        }
        Command::Run(a) => a,
    };
    logger::install(a.verbosity);
    match watch::run(&a) {
        Ok(()) => ExitCode::SUCCESS,
        Err(line) => {
            stderr_line(&line);
            ExitCode::from(1)
        }
    }
}

/// Help and version text; a closed stdout is not a failure of ours.
fn stdout_text(text: &str) -> ExitCode {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|_| out.flush());
    ExitCode::SUCCESS
}

/// One line on stderr (never a panic when stderr is closed).
pub(crate) fn stderr_line(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}
