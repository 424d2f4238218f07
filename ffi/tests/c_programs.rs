//! The C and C++ programs in ffi/examples and ffi/tests/programs, built with
//! gcc/g++ against include/ and the libraries cargo just built, run against
//! the fake apiserver (in this process), with AddressSanitizer + UBSan and
//! valgrind. (ffi/ci-consumers.sh builds them against an installed tattler.)
//!
//! gcc and g++ are required. valgrind is used when present; with
//! TATTLER_REQUIRE_VALGRIND=1 (ffi/test.sh sets it) its absence fails.

mod common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use tattler_fakeapi::FakeApi;

/// No run of a program may take longer (valgrind included).
const RUN_TIMEOUT: Duration = Duration::from_secs(120);

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// target/<profile>, where cargo put libtattler.a and libtattler.so.
fn lib_dir() -> PathBuf {
    let dir = common::target_dir();
    assert!(
        dir.join("libtattler.a").exists(),
        "no libtattler.a in {}",
        dir.display()
    );
    dir
}

fn out_dir() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ffi-c-programs");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Libraries the Rust standard library needs when linked statically.
const NATIVE_LIBS: [&str; 4] = ["-lpthread", "-ldl", "-lm", "-lrt"];

/// Builds ffi/examples/`source` (or ffi/tests/programs/`source` when it is
/// `programs/...`) with -Wall -Wextra -Werror.
fn compile(compiler: &str, source: &str, flags: &[&str], link: &[String], out: &str) -> PathBuf {
    try_compile(compiler, source, flags, link, out).unwrap_or_else(|e| panic!("{e}"))
}

fn try_compile(
    compiler: &str,
    source: &str,
    flags: &[&str],
    link: &[String],
    out: &str,
) -> Result<PathBuf, String> {
    let out = out_dir().join(out);
    let include = format!("-I{}", root().join("include").display());
    let src = match source.strip_prefix("programs/") {
        Some(p) => root().join("ffi/tests/programs").join(p),
        None => root().join("ffi/examples").join(source),
    };
    let result = Command::new(compiler)
        .args(["-Wall", "-Wextra", "-Werror", "-g"])
        .args(flags)
        .arg(&include)
        .arg(&src)
        // Whatever follows is not source (-x c++ would apply to the archive too).
        .args(["-x", "none"])
        .args(link)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run {compiler} (install it: apt-get install gcc g++): {e}")
        });
    if !result.status.success() {
        return Err(format!(
            "{compiler} {flags:?} {source} failed:\n{}",
            String::from_utf8_lossy(&result.stderr)
        ));
    }
    Ok(out)
}

fn static_link() -> Vec<String> {
    let mut l = vec![lib_dir().join("libtattler.a").display().to_string()];
    l.extend(NATIVE_LIBS.map(String::from));
    l
}

fn shared_link() -> Vec<String> {
    let d = lib_dir().display().to_string();
    vec![
        format!("-L{d}"),
        "-ltattler".into(),
        format!("-Wl,-rpath,{d}"),
        "-lpthread".into(),
    ]
}

// No -D_POSIX_C_SOURCE: the programs define it, as a user's copy must.
const C_FLAGS: [&str; 1] = ["-std=c11"];

const SANITIZE: [&str; 4] = [
    "-O1",
    "-fno-omit-frame-pointer",
    "-fsanitize=address,undefined",
    "-fno-sanitize-recover=all",
];

fn watch_static() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| compile("gcc", "watch.c", &C_FLAGS, &static_link(), "watch-static"))
}

fn watch_sanitized() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let mut flags = C_FLAGS.to_vec();
        flags.extend(SANITIZE);
        compile("gcc", "watch.c", &flags, &static_link(), "watch-asan")
    })
}

struct Run {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

impl Run {
    fn lines(&self) -> Vec<&str> {
        self.stdout.lines().collect()
    }
}

/// Runs a program, which must succeed.
fn run(program: &Path, args: &[&str], prefix: &[&str]) -> Run {
    let run = run_to_end(program, args, prefix);
    assert!(
        run.status.success(),
        "{} {args:?} failed ({}):\nstdout:\n{}\nstderr:\n{}",
        program.display(),
        run.status,
        run.stdout,
        run.stderr
    );
    run
}

/// A program (under `prefix`, e.g. valgrind) with the sanitizers' options
/// and its output piped.
fn program_command(program: &Path, args: &[&str], prefix: &[&str]) -> Command {
    let mut cmd = match prefix.split_first() {
        Some((first, rest)) => {
            let mut c = Command::new(first);
            c.args(rest).arg(program);
            c
        }
        None => Command::new(program),
    };
    cmd.args(args)
        .env(
            "ASAN_OPTIONS",
            "detect_leaks=1:abort_on_error=0:exitcode=86",
        )
        .env("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
        .env(
            "TSAN_OPTIONS",
            format!(
                "halt_on_error=1:exitcode=66:suppressions={}",
                root().join("ffi/tsan.supp").display()
            ),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Reads a pipe to its end on a thread of its own.
fn drain(mut pipe: Box<dyn Read + Send>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = pipe.read_to_string(&mut s);
        s
    })
}

/// Runs a program to its end, killing it after RUN_TIMEOUT.
fn run_to_end(program: &Path, args: &[&str], prefix: &[&str]) -> Run {
    let mut child = program_command(program, args, prefix)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", program.display()));
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    wait_for(child, out, err, program, args)
}

/// Waits for a started program's end (killing it after RUN_TIMEOUT) and
/// collects what its pipes' drains read.
fn wait_for(
    mut child: std::process::Child,
    out: std::thread::JoinHandle<String>,
    err: std::thread::JoinHandle<String>,
    program: &Path,
    args: &[&str],
) -> Run {
    let deadline = Instant::now() + RUN_TIMEOUT;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{} {args:?} hung for {RUN_TIMEOUT:?}; stderr:\n{}",
                program.display(),
                err.join().unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Run {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

/// A fake cluster with three pods, and the lines watch.c must print for
/// them: the Adds (in any order), then Synced at the last resourceVersion.
fn cluster() -> (FakeApi, Vec<String>, String) {
    let api = FakeApi::start();
    let adds = ["web-1", "web-2", "db-0"]
        .map(|name| {
            let rv = api.apply("pods", FakeApi::pod("shop", name));
            format!("Add shop/{name} {rv}")
        })
        .to_vec();
    let synced = format!("Synced v1/pods {}", api.current_rv());
    (api, adds, synced)
}

/// Checks the first sync: exactly the Adds, then the Synced line.
fn assert_first_sync(lines: &[&str], adds: &[String], synced: &str) {
    assert!(lines.len() > adds.len(), "{lines:?}");
    let mut got: Vec<&str> = lines[..adds.len()].to_vec();
    got.sort();
    let mut want: Vec<&str> = adds.iter().map(String::as_str).collect();
    want.sort();
    assert_eq!(got, want, "{lines:?}");
    assert_eq!(lines[adds.len()], synced, "{lines:?}");
}

fn assert_sanitizers_quiet(run: &Run) {
    for bad in ["AddressSanitizer", "LeakSanitizer", "runtime error:"] {
        assert!(
            !run.stderr.contains(bad),
            "{bad} in stderr:\n{}",
            run.stderr
        );
    }
}

#[test]
fn c_example_prints_one_line_per_entry_then_synced() {
    let (api, adds, synced) = cluster();
    let run = run(watch_static(), &["--until-synced", &api.url(), "pods"], &[]);
    assert_first_sync(&run.lines(), &adds, &synced);
    assert_eq!(run.lines().len(), adds.len() + 1, "{}", run.stdout);
    // The log callback routed tattler's lines to stderr.
    assert!(run.stderr.contains("INFO kube_tattler::"), "{}", run.stderr);
}

#[test]
fn c_example_reports_a_forbidden_resource_and_fails() {
    let (api, _, _) = cluster();
    api.forbid("nodes", true);
    let run = run_to_end(
        watch_static(),
        &["--until-synced", &api.url(), "pods", "nodes"],
        &[],
    );
    assert_eq!(run.status.code(), Some(1), "{}", run.stdout);
    let errors: Vec<&str> = run
        .lines()
        .into_iter()
        .filter(|l| l.starts_with("Error"))
        .collect();
    assert_eq!(errors.len(), 1, "{}", run.stdout);
    assert!(
        errors[0].starts_with("Error v1/nodes 403 Forbidden: "),
        "{}",
        errors[0]
    );
}

#[test]
fn c_example_close_and_stop_racing_a_blocked_wait() {
    let (api, adds, synced) = cluster();
    for mode in ["--close-race", "--stop-race"] {
        let run = run(watch_static(), &[mode, &api.url(), "pods"], &[]);
        let lines = run.lines();
        assert_first_sync(&lines, &adds, &synced);
        assert_eq!(lines[adds.len() + 1..], ["Closed"], "{mode}: {lines:?}");
    }
}

#[test]
fn c_example_under_address_and_undefined_behaviour_sanitizers() {
    let (api, adds, synced) = cluster();
    for mode in ["--until-synced", "--close-race", "--stop-race"] {
        let run = run(watch_sanitized(), &[mode, &api.url(), "pods", "nodes"], &[]);
        assert_sanitizers_quiet(&run);
        let pods: Vec<&str> = run
            .lines()
            .into_iter()
            .filter(|l| !l.contains("nodes"))
            .collect();
        assert_first_sync(&pods, &adds, &synced);
        assert!(run
            .lines()
            .contains(&format!("Synced v1/nodes {}", api.current_rv()).as_str()));
    }
}

fn valgrind() -> Option<&'static str> {
    let present = Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !present && std::env::var_os("TATTLER_REQUIRE_VALGRIND").is_some_and(|v| v == "1") {
        panic!("valgrind is missing (apt-get install valgrind) and TATTLER_REQUIRE_VALGRIND=1");
    }
    present.then_some("valgrind")
}

#[test]
fn c_example_under_valgrind() {
    let Some(valgrind) = valgrind() else {
        eprintln!(
            "valgrind not installed: skipped (set TATTLER_REQUIRE_VALGRIND=1 to fail instead)"
        );
        return;
    };
    let (api, adds, synced) = cluster();
    let supp = format!(
        "--suppressions={}",
        root().join("ffi/valgrind.supp").display()
    );
    let prefix = [
        valgrind,
        "-q",
        "--error-exitcode=1",
        "--leak-check=full",
        "--errors-for-leak-kinds=definite,possible",
        &supp,
    ];
    for mode in ["--until-synced", "--close-race"] {
        let run = run(watch_static(), &[mode, &api.url(), "pods"], &prefix);
        assert_first_sync(&run.lines(), &adds, &synced);
        assert!(
            !run.stderr.contains("=="),
            "valgrind reported:\n{}",
            run.stderr
        );
    }
}

#[test]
fn c_example_links_the_shared_library() {
    let bin = compile("gcc", "watch.c", &C_FLAGS, &shared_link(), "watch-shared");
    let ldd = Command::new("ldd").arg(&bin).output().expect("ldd");
    let ldd = String::from_utf8_lossy(&ldd.stdout);
    assert!(
        ldd.contains(&lib_dir().join("libtattler.so").display().to_string()),
        "{ldd}"
    );
    let (api, adds, synced) = cluster();
    let run = run(&bin, &["--until-synced", &api.url(), "pods"], &[]);
    assert_first_sync(&run.lines(), &adds, &synced);
}

#[test]
fn cpp_smoke_test_links_the_static_library() {
    let flags = ["-std=c++17", "-pedantic"];
    let bin = compile("g++", "smoke.cpp", &flags, &static_link(), "smoke-static");
    let (api, _, _) = cluster();
    let run = run(&bin, &[&api.url()], &[]);
    assert_eq!(
        run.lines(),
        ["smoke: 3 pods synced", "smoke: ok"],
        "{}",
        run.stderr
    );
    let bin = compile("g++", "smoke.cpp", &flags, &shared_link(), "smoke-shared");
    assert_eq!(run_lines(&bin), ["smoke: ok"]);
}

fn run_lines(bin: &Path) -> Vec<String> {
    run(bin, &[], &[])
        .lines()
        .into_iter()
        .map(String::from)
        .collect()
}

#[test]
fn the_header_compiles_as_c99_c11_cpp11_cpp17_and_refuses_older_standards() {
    let version = env!("CARGO_PKG_VERSION");
    for (compiler, std) in [
        ("gcc", "-std=c99"),
        ("gcc", "-std=c11"),
        ("g++", "-std=c++11"),
        ("g++", "-std=c++17"),
    ] {
        let mut flags = vec!["-Wpedantic", std];
        if compiler == "g++" {
            flags.extend(["-x", "c++"]);
        }
        let bin = compile(
            compiler,
            "programs/header_check.c",
            &flags,
            &static_link(),
            &format!("header-check{std}"),
        );
        let lines = run_lines(&bin);
        assert_eq!(lines.len(), 1, "{std}: {lines:?}");
        assert!(
            lines[0].starts_with(&format!("header_check: {version} (111 5 out)")),
            "{std}: {lines:?}"
        );
    }
    for (compiler, std, message) in [
        ("gcc", "-std=c89", "tattler.h needs C99 or later"),
        ("g++", "-std=c++98", "tattler.h needs C++11 or later"),
    ] {
        let mut flags = vec!["-fsyntax-only", std];
        if compiler == "g++" {
            flags.extend(["-x", "c++"]);
        }
        let err =
            try_compile(compiler, "programs/header_check.c", &flags, &[], "never").expect_err(std);
        assert!(err.contains(message), "{std}: {err}");
    }
    // The legacy calls compile as they did; TATTLER_WARN_LEGACY points at them.
    let legacy = compile(
        "gcc",
        "programs/legacy.c",
        &["-std=c99", "-Wpedantic"],
        &static_link(),
        "legacy",
    );
    assert!(run(&legacy, &[], &[]).status.success());
    for (compiler, lang) in [("gcc", "c"), ("g++", "c++")] {
        let err = try_compile(
            compiler,
            "programs/legacy.c",
            &["-fsyntax-only", "-x", lang, "-DTATTLER_WARN_LEGACY"],
            &[],
            "never",
        )
        .expect_err("TATTLER_WARN_LEGACY");
        assert!(
            err.contains("deprecated")
                && err.contains("use tattler_config_set_json and tattler_open_config"),
            "{lang}: {err}"
        );
    }
    let err = try_compile(
        "g++",
        "programs/hpp_test.cpp",
        &["-fsyntax-only", "-std=c++14"],
        &[],
        "never",
    )
    .expect_err("C++14");
    assert!(err.contains("tattler.hpp needs C++17"), "{err}");
}

/// Runs reentrant.c (ffi/tests/programs) in `mode` against a fake with pods.
fn reentrant(bin: &Path, mode: &str, prefix: &[&str]) -> Run {
    let (api, _, _) = cluster();
    let run = run_to_end(bin, &[mode, &api.url()], prefix);
    assert!(
        run.status.success() && run.stdout.ends_with("reentrant: ok\n"),
        "reentrant {mode} ({}):\nstdout:\n{}\nstderr:\n{}",
        run.status,
        run.stdout,
        run.stderr
    );
    assert!(!run.stdout.contains("FAILED"), "{}", run.stdout);
    run
}

#[test]
fn every_call_from_inside_the_log_callback_works_or_says_reentrant() {
    let flags = [&C_FLAGS[..], &["-Wpedantic"], &SANITIZE].concat();
    let asan = compile(
        "gcc",
        "programs/reentrant.c",
        &flags,
        &static_link(),
        "reentrant-asan",
    );
    let run = reentrant(&asan, "calls", &[]);
    assert_sanitizers_quiet(&run);
    // One line per check, all ok: 27 of them.
    let oks = run.lines().iter().filter(|l| l.starts_with("ok: ")).count();
    assert_eq!(oks, 27, "{}", run.stdout);
    let run = reentrant(&asan, "close", &[]);
    assert_sanitizers_quiet(&run);
    assert!(
        run.stdout
            .contains("ok: close of the logging thread's own reader works"),
        "{}",
        run.stdout
    );
    if let Some(valgrind) = valgrind() {
        let plain = compile(
            "gcc",
            "programs/reentrant.c",
            &C_FLAGS,
            &static_link(),
            "reentrant",
        );
        let supp = format!(
            "--suppressions={}",
            root().join("ffi/valgrind.supp").display()
        );
        for mode in ["calls", "close"] {
            let run = reentrant(&plain, mode, &[valgrind, "-q", "--error-exitcode=1", &supp]);
            assert!(!run.stderr.contains("=="), "valgrind:\n{}", run.stderr);
        }
    }
}

#[test]
fn every_misuse_of_a_handle_is_refused_under_sanitizers_and_valgrind() {
    let flags = [&C_FLAGS[..], &["-Wpedantic"], &SANITIZE].concat();
    let asan = compile(
        "gcc",
        "programs/misuse.c",
        &flags,
        &static_link(),
        "misuse-asan",
    );
    let mut runs: Vec<(PathBuf, Vec<String>)> = vec![(asan, vec![])];
    if let Some(valgrind) = valgrind() {
        let plain = compile(
            "gcc",
            "programs/misuse.c",
            &C_FLAGS,
            &static_link(),
            "misuse",
        );
        let supp = format!(
            "--suppressions={}",
            root().join("ffi/valgrind.supp").display()
        );
        let prefix = [
            valgrind,
            "-q",
            "--error-exitcode=1",
            "--leak-check=full",
            &supp,
        ];
        runs.push((plain, prefix.map(String::from).to_vec()));
    }
    for (bin, prefix) in &runs {
        let (api, _, _) = cluster();
        let prefix: Vec<&str> = prefix.iter().map(String::as_str).collect();
        let run = run_to_end(bin, &[&api.url()], &prefix);
        assert_sanitizers_quiet(&run);
        assert!(!run.stderr.contains("=="), "valgrind:\n{}", run.stderr);
        assert!(
            run.status.success() && run.stdout.ends_with("misuse: ok\n"),
            "misuse ({}):\nstdout:\n{}\nstderr:\n{}",
            run.status,
            run.stdout,
            run.stderr
        );
        assert!(!run.stdout.contains("FAILED"), "{}", run.stdout);
        // One line per check, all ok: 19 of them.
        let oks = run.lines().iter().filter(|l| l.starts_with("ok: ")).count();
        assert_eq!(oks, 19, "{}", run.stdout);
    }
}

#[test]
fn the_cpp_wrapper_under_address_and_undefined_behaviour_sanitizers() {
    for std in ["-std=c++17", "-std=c++20"] {
        let flags = [&[std, "-Wpedantic"][..], &SANITIZE].concat();
        let bin = compile(
            "g++",
            "programs/hpp_test.cpp",
            &flags,
            &static_link(),
            &format!("hpp-test-asan{std}"),
        );
        let (api, _, _) = cluster();
        // For the reader under leader election.
        api.add_resource("coordination.k8s.io", "v1", "leases", "Lease", true);
        let run = run(&bin, &[&api.url()], &[]);
        assert_sanitizers_quiet(&run);
        assert_eq!(
            run.lines().last(),
            Some(&"hpp_test: ok"),
            "{std}: {}",
            run.stdout
        );
        assert!(!run.stdout.contains("FAILED"), "{std}: {}", run.stdout);
        assert_eq!(
            run.stdout.contains("std::views::filter over a reader"),
            std == "-std=c++20",
            "{}",
            run.stdout
        );
    }
}

/// ThreadSanitizer's flags (the Rust library is not instrumented: only the
/// wrapper's own state, such as closed(), is checked).
const TSAN: [&str; 4] = [
    "-O1",
    "-fno-omit-frame-pointer",
    "-fsanitize=thread",
    "-fno-sanitize-recover=all",
];

#[test]
fn the_cpp_wrapper_without_exceptions_from_several_threads_under_thread_sanitizer() {
    for std in ["-std=c++17", "-std=c++20"] {
        let flags = [&[std, "-Wpedantic", "-fno-exceptions"][..], &TSAN].concat();
        let bin = compile(
            "g++",
            "programs/hpp_threads.cpp",
            &flags,
            // Shared: ffi/tsan.supp ignores what libtattler.so does (see there).
            &shared_link(),
            &format!("hpp-threads-tsan{std}"),
        );
        let (api, _, _) = cluster();
        let run = run_to_end(&bin, &[&api.url()], &[]);
        assert!(
            run.status.success() && !run.stderr.contains("ThreadSanitizer"),
            "{std} ({}):\nstdout:\n{}\nstderr:\n{}",
            run.status,
            run.stdout,
            run.stderr
        );
        assert_eq!(
            run.lines().last(),
            Some(&"hpp_threads: ok"),
            "{}",
            run.stdout
        );
        assert_eq!(
            run.stdout.contains("stop_token checked"),
            std == "-std=c++20",
            "{}",
            run.stdout
        );
        assert_eq!(
            run.stdout.contains("C++20 ranges checked"),
            std == "-std=c++20",
            "{}",
            run.stdout
        );
    }
    // The whole header, throwing calls included, is valid C++20 too.
    compile(
        "g++",
        "programs/hpp_test.cpp",
        &["-std=c++20", "-Wpedantic", "-fsyntax-only"],
        &[],
        "never",
    );
}

#[test]
fn the_configuration_builder_and_error_sizes_from_c() {
    let flags = [&C_FLAGS[..], &["-Wpedantic"], &SANITIZE].concat();
    let bin = compile(
        "gcc",
        "programs/config.c",
        &flags,
        &static_link(),
        "config-asan",
    );
    let (api, _, _) = cluster();
    let run = run(&bin, &[&api.url()], &[]);
    assert_sanitizers_quiet(&run);
    assert!(!run.stdout.contains("FAILED"), "{}", run.stdout);
    assert_eq!(run.lines().last(), Some(&"config: ok"), "{}", run.stdout);
    assert_eq!(run.lines().len(), 27, "{}", run.stdout);
}

#[test]
fn the_epoll_agent_is_driven_by_the_readiness_fd() {
    let bin = epoll_sanitized();
    let (api, adds, synced) = cluster();
    let run = run(bin, &["--until-synced", &api.url(), "pods"], &[]);
    assert_sanitizers_quiet(&run);
    let lines = run.lines();
    assert_first_sync(&lines, &adds, &synced);
    assert_eq!(lines[adds.len() + 1..], ["Closed"], "{lines:?}");
    // Two resources, one forbidden: an Error entry ends it with 1.
    api.forbid("nodes", true);
    let run = run_to_end(bin, &["--until-synced", &api.url(), "pods", "nodes"], &[]);
    assert_eq!(run.status.code(), Some(1), "{}", run.stdout);
    assert!(
        run.stdout.contains("Error nodes 403 Forbidden"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.ends_with("Closed\n"), "{}", run.stdout);
}

fn epoll_sanitized() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let flags = [&C_FLAGS[..], &SANITIZE].concat();
        compile("gcc", "epoll.c", &flags, &static_link(), "epoll-asan")
    })
}

#[test]
fn the_epoll_agent_closes_cleanly_on_a_real_sigterm_and_keeps_its_checkpoint() {
    let bin = epoll_sanitized();
    let (api, adds, synced) = cluster();
    let file = out_dir().join("epoll-checkpoint");
    let _ = std::fs::remove_file(&file);
    let file_arg = file.to_str().unwrap();
    // No --until-synced: it runs until a signal. It blocks SIGTERM only
    // after its open, so the streams' threads were started first.
    let args = ["--checkpoint", file_arg, &api.url(), "pods"];
    let mut child = program_command(bin, &args, &[]).spawn().expect("epoll");
    let (lines_tx, lines_rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut all = String::new();
        for line in std::io::BufRead::lines(std::io::BufReader::new(stdout)) {
            let line = line.unwrap_or_default();
            let _ = lines_tx.send(line.clone());
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    let err = drain(Box::new(child.stderr.take().unwrap()));
    // Printed from the loop, after its sigprocmask: the signal cannot come
    // before it.
    let deadline = Instant::now() + RUN_TIMEOUT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines_rx.recv_timeout(left) {
            Ok(line) if line == synced => break,
            Ok(_) => {}
            Err(e) => {
                let _ = child.kill();
                panic!("no {synced:?} line: {e}");
            }
        }
    }
    let kill = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(kill.success());
    let stopped = wait_for(child, out, err, bin, &args);
    assert_sanitizers_quiet(&stopped);
    assert_eq!(
        stopped.status.code(),
        Some(0),
        "{} (143 is SIGTERM's death: a tattler thread took it)\nstdout:\n{}\nstderr:\n{}",
        stopped.status,
        stopped.stdout,
        stopped.stderr
    );
    assert!(
        stopped.stderr.contains("signal 15: stopping"),
        "{}",
        stopped.stderr
    );
    let lines = stopped.lines();
    assert_first_sync(&lines, &adds, &synced);
    assert_eq!(lines[adds.len() + 1..], ["Closed"], "{lines:?}");
    let cp: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(cp["tattler_checkpoint"], 1, "{cp}");
    assert_eq!(
        cp["resources"][0]["objects"].as_array().unwrap().len(),
        adds.len(),
        "{cp}"
    );
    // The next start resumes from it: Synced at once, nothing else.
    let again = run(
        bin,
        &[
            "--until-synced",
            "--checkpoint",
            file_arg,
            &api.url(),
            "pods",
        ],
        &[],
    );
    assert_sanitizers_quiet(&again);
    assert_eq!(
        again.lines(),
        [synced.as_str(), "Closed"],
        "{}",
        again.stderr
    );
}

#[test]
fn the_cpp_example_prints_what_the_c_example_prints() {
    let bin = compile(
        "g++",
        "watch.cpp",
        &["-std=c++17", "-Wpedantic"],
        &static_link(),
        "watch-cpp",
    );
    let (api, adds, synced) = cluster();
    let run = run(&bin, &["--until-synced", &api.url(), "pods"], &[]);
    assert_first_sync(&run.lines(), &adds, &synced);
    assert_eq!(run.lines().len(), adds.len() + 1, "{}", run.stdout);
    assert!(run.stderr.contains("INFO kube_tattler::"), "{}", run.stderr);
}

/// Runs resume.c (ffi/tests/programs): COUNT entries from `api`, resuming
/// from and saving to `file`.
fn resume(bin: &Path, api: &FakeApi, file: &Path, count: usize, prefix: &[&str]) -> Run {
    run_to_end(
        bin,
        &[&api.url(), file.to_str().unwrap(), &count.to_string()],
        prefix,
    )
}

#[test]
fn a_c_agent_resumes_from_its_checkpoint_across_restarts() {
    let flags = [&C_FLAGS[..], &["-Wpedantic"], &SANITIZE].concat();
    let asan = compile(
        "gcc",
        "programs/resume.c",
        &flags,
        &static_link(),
        "resume-asan",
    );
    let plain = compile(
        "gcc",
        "programs/resume.c",
        &C_FLAGS,
        &static_link(),
        "resume",
    );
    let supp = format!(
        "--suppressions={}",
        root().join("ffi/valgrind.supp").display()
    );
    let valgrind = valgrind();
    let mut runs: Vec<(&Path, Vec<&str>)> = vec![(&asan, vec![])];
    if let Some(v) = valgrind {
        runs.push((
            &plain,
            vec![v, "-q", "--error-exitcode=1", "--leak-check=full", &supp],
        ));
    }
    for (bin, prefix) in runs {
        let (api, adds, synced) = cluster();
        let file = out_dir().join(format!(
            "checkpoint-{}",
            bin.file_name().unwrap().to_str().unwrap()
        ));
        let _ = std::fs::remove_file(&file);
        // First start: no checkpoint, a full sync.
        let first = resume(bin, &api, &file, adds.len() + 1, &prefix);
        assert!(first.status.success(), "{}\n{}", first.stdout, first.stderr);
        assert_sanitizers_quiet(&first);
        assert!(!first.stderr.contains("=="), "valgrind:\n{}", first.stderr);
        let lines = first.lines();
        assert_first_sync(&lines, &adds, &synced);
        assert_eq!(
            lines[adds.len() + 1],
            "metrics: objects 3 synced 1",
            "{lines:?}"
        );
        let size = std::fs::metadata(&file).unwrap().len();
        assert_eq!(lines[adds.len() + 2], format!("saved {size} bytes"));
        assert_eq!(lines.len(), adds.len() + 3, "{lines:?}");
        // While it is down: an update, a delete, a new pod.
        let up = api.apply("pods", FakeApi::pod("shop", "web-1"));
        let del = api.delete("pods", Some("shop"), "db-0").unwrap();
        let add = api.apply("pods", FakeApi::pod("shop", "web-3"));
        let second = resume(bin, &api, &file, 4, &prefix);
        assert!(
            second.status.success(),
            "{}\n{}",
            second.stdout,
            second.stderr
        );
        assert_sanitizers_quiet(&second);
        assert!(
            !second.stderr.contains("=="),
            "valgrind:\n{}",
            second.stderr
        );
        let size = std::fs::metadata(&file).unwrap().len();
        assert_eq!(
            second.lines(),
            // What changed while it was down, then Synced: caught up.
            [
                format!("Update shop/web-1 {up}"),
                format!("Delete shop/db-0 {del}"),
                format!("Add shop/web-3 {add}"),
                format!("Synced v1/pods {add}"),
                "metrics: objects 3 synced 1".to_string(),
                format!("saved {size} bytes"),
            ]
        );

        // A third start with nothing changed: Synced alone.
        let third = resume(bin, &api, &file, 1, &prefix);
        assert!(third.status.success(), "{}", third.stderr);
        assert_eq!(
            third.lines()[..2],
            [
                format!("Synced v1/pods {add}").as_str(),
                "metrics: objects 3 synced 1"
            ]
        );

        // A damaged file is refused with its own status; nothing runs.
        std::fs::write(&file, b"{\"tattler_checkpoint\":1,\"resources\":[{\"gro").unwrap();
        let bad = resume(bin, &api, &file, 1, &prefix);
        assert_eq!(bad.status.code(), Some(3), "{}", bad.stderr);
        assert!(
            bad.stdout.starts_with(
                "open: invalid checkpoint: checkpoint: not a tattler checkpoint (line 1, column"
            ),
            "{}",
            bad.stdout
        );
    }
}
