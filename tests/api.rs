//! What a Rust user writes first (issue 31, item 4): 22 one-line uses of a
//! reader, a spec, an access, a config, an entry, an error and a checkpoint,
//! each by the Rust API guidelines. The twelve marked "refused" did not
//! compile before the guidelines were applied. Each runs here, against the
//! fake apiserver or no server at all (13 is only compiled: it reads the
//! host's kubeconfig), so that a change that breaks one fails to compile and
//! one that changes what it does fails a test.
//!
//! | # | the line | guideline | before |
//! |---|---|---|---|
//! | 1 | `for entry in &reader { … }` | C-ITER | refused |
//! | 2 | `reader.iter().filter(…).take(1).count()` | C-ITER | compiled |
//! | 3 | `let entry = reader.next()?;` into `Box<dyn Error>` | C-QUESTION-MARK | compiled |
//! | 4 | `s.spawn(\|\| reader.stop())` in `thread::scope` (`Send + Sync`) | C-SEND-SYNC | compiled |
//! | 5 | `kube_tattler::crossbeam_channel::select! { recv(reader.receiver_without_byte_budget()) … }` | C-REEXPORT | refused |
//! | 6 | `let spec: ResourceSpec = "pods".parse()?;` | C-COMMON-TRAITS | refused |
//! | 7 | `println!("{spec}")` | C-COMMON-TRAITS | refused |
//! | 8 | `spec.in_namespace(namespace_string)` | C-CALLER-CONTROL | refused |
//! | 9 | `HashSet<ResourceSpec>` | C-COMMON-TRAITS | compiled |
//! | 10 | `Access::new(url_string)` | C-CALLER-CONTROL | refused |
//! | 11 | `access.ca_file(&path_buf)?` | C-GENERIC | refused |
//! | 12 | `Access::from_kubeconfig(Some(&path_buf), None)?` | C-GENERIC | refused |
//! | 13 | `let access = Access::infer()?;` into `Box<dyn Error>` | C-GOOD-ERR | compiled |
//! | 14 | `format!("{access:?}")` (the token hidden) | C-DEBUG | compiled |
//! | 15 | `config.watch(&vec_of_strings)?` | C-GENERIC | refused |
//! | 16 | `config.watch(["pods", "nodes"])?` | C-GENERIC | refused |
//! | 17 | `config.tuning.channel_capacity = 8; config.clone()` | C-COMMON-TRAITS | compiled |
//! | 18 | `matches!(entry.change(), Change::Add \| Change::Update)` | — | compiled |
//! | 19 | `entry.object_as::<Pod>()?` | C-QUESTION-MARK | refused |
//! | 20 | `println!("{entry}")` | C-COMMON-TRAITS | refused |
//! | 21 | `e.source()` of an error `?` put in a `Box<dyn Error + Send + Sync>` | C-GOOD-ERR | compiled |
//! | 22 | `Checkpoint::from_bytes(&std::fs::read(path)?)?` | C-QUESTION-MARK | compiled |

use std::collections::HashSet;
use std::error::Error as StdError;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

use kube_tattler::{
    Access, Change, Checkpoint, Config, Entry, Error, ErrorInfo, Reader, ResourceSpec, Tuning,
};
use tattler_fakeapi::FakeApi;

type BoxError = Box<dyn StdError + Send + Sync>;

/// Runs `body` on its own thread and fails the test if it takes longer
/// than `secs`: a hang fails fast.
fn within(secs: u64, body: impl FnOnce() -> Result<(), BoxError> + Send + 'static) {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let r = body().map_err(|e| e.to_string());
        let _ = tx.send(r);
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(r) => r.unwrap(),
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("no answer within {secs} s"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("the test's thread panicked"),
    }
}

/// A file under the temporary directory, removed on drop.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str, contents: &[u8]) -> TempFile {
        let path = std::env::temp_dir().join(format!("tattler-api-{}-{name}", std::process::id()));
        std::fs::write(&path, contents).unwrap();
        TempFile(path)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The fields of a Pod this test reads (as a user would declare them, or
/// take k8s-openapi's).
#[derive(serde::Deserialize)]
struct Pod {
    metadata: Meta,
    spec: PodSpec,
}

#[derive(serde::Deserialize)]
struct Meta {
    name: String,
    namespace: String,
}

#[derive(serde::Deserialize)]
struct PodSpec {
    containers: Vec<Container>,
}

#[derive(serde::Deserialize)]
struct Container {
    #[serde(default)]
    env: Vec<EnvVar>,
}

#[derive(serde::Deserialize)]
struct EnvVar {
    value: Option<String>,
}

fn pods_of(api: &FakeApi) -> Result<Reader, BoxError> {
    let names: Vec<String> = vec!["pods".to_string()];
    let config = Config::new(Access::new(api.url())).watch(&names)?; // 10, 15
    Ok(Reader::open(config)?)
}

#[test]
fn a_reader_is_iterated_asked_selected_and_stopped() {
    within(30, || {
        let api = FakeApi::start();
        let rv = api.apply("pods", FakeApi::pod("shop", "web-1"));
        let reader = pods_of(&api)?;
        let adds = reader
            .iter()
            .filter(|e| matches!(e.change(), Change::Add))
            .take(1)
            .count(); // 2
        assert_eq!(adds, 1);
        let entry = reader.next()?; // 3
        assert_eq!(entry.change(), Change::Synced);
        // 5: nothing more comes; the receiver is crossbeam's, re-exported.
        let waited = kube_tattler::crossbeam_channel::select! {
            recv(reader.receiver_without_byte_budget()) -> e => Err(format!("{e:?}")),
            default(Duration::from_millis(200)) => Ok(()),
        };
        assert_eq!(waited, Ok(()));
        std::thread::scope(|s| {
            s.spawn(|| reader.stop()); // 4
        });
        let mut after_stop = 0;
        for _entry in &reader {
            after_stop += 1; // 1
        }
        assert_eq!(after_stop, 0);
        // The checkpoint round, with `?` on both kinds of error. 22
        let file = TempFile::new("checkpoint", &reader.checkpoint().to_bytes());
        let saved = Checkpoint::from_bytes(&std::fs::read(&file.0)?)?;
        assert_eq!((saved.resources(), saved.objects()), (1, 1));
        assert!(rv > 0);
        Ok(())
    });
}

#[test]
fn entries_print_match_and_read_as_types() {
    within(30, || {
        let api = FakeApi::start();
        let rv = api.apply("pods", FakeApi::pod("shop", "web-1"));
        let reader = pods_of(&api)?;
        let mut lines = Vec::new();
        for entry in &reader {
            // 1
            if matches!(entry.change(), Change::Add | Change::Update) {
                // 18
                let pod = entry.object_as::<Pod>()?.expect("an Add has its object"); // 19
                assert_eq!(
                    (pod.metadata.namespace.as_str(), pod.metadata.name.as_str()),
                    ("shop", "web-1")
                );
                // The object is the scrubbed one: env values are REDACTED.
                let values: Vec<Option<String>> = pod
                    .spec
                    .containers
                    .into_iter()
                    .flat_map(|c| c.env)
                    .map(|e| e.value)
                    .collect();
                assert!(
                    values.contains(&Some(kube_tattler::REDACTED.to_string())),
                    "{values:?}"
                );
            } else {
                assert_eq!(entry.object_as::<Pod>()?.map(|p| p.metadata.name), None);
            }
            lines.push(entry.to_string()); // 20
            if entry.change() == Change::Synced {
                reader.stop();
            }
        }
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert_eq!(lines[0], format!("Add v1/pods shop/web-1 at {rv}"));
        assert!(lines[1].starts_with("Synced v1/pods at "), "{lines:?}");
        Ok(())
    });
}

#[test]
fn specs_parse_print_and_hash() {
    within(10, || {
        let spec: ResourceSpec = "pods".parse()?; // 6
        assert_eq!(format!("{spec}"), "v1/pods"); // 7
        let namespace_string = String::from("shop");
        let spec = spec.in_namespace(namespace_string); // 8
        assert_eq!(spec.to_string(), "v1/pods (namespace shop)");
        let set: HashSet<ResourceSpec> = [spec.clone(), spec, "po".parse()?].into_iter().collect(); // 9
        assert_eq!(set.len(), 2);
        // A name that stands for several is refused here, and says where to go.
        let e = "rbac".parse::<ResourceSpec>().unwrap_err();
        assert!(e.to_string().contains("use ResourceSpec::parse"), "{e}");
        Ok(())
    });
}

#[test]
fn access_and_config_take_what_the_user_holds() {
    within(10, || {
        let url_string = String::from("https://10.1.2.3:6443");
        let access = Access::new(url_string).token("s3cr3t-9c1f"); // 10
        assert!(!format!("{access:?}").contains("s3cr3t")); // 14
        let ca = TempFile::new("ca.crt", b"-----BEGIN CERTIFICATE-----\n");
        let path_buf: PathBuf = ca.0.clone();
        let access = access.ca_file(&path_buf)?; // 11
        assert_eq!(
            access.ca_pem.as_deref(),
            Some(&b"-----BEGIN CERTIFICATE-----\n"[..])
        );
        let kubeconfig = TempFile::new(
            "kubeconfig",
            b"apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: k\n  cluster:\n    server: https://10.1.2.3:6443\ncontexts:\n- name: c\n  context:\n    cluster: k\n    user: u\nusers:\n- name: u\n  user:\n    token: t0k\n",
        );
        let path_buf: PathBuf = kubeconfig.0.clone();
        let from_file = Access::from_kubeconfig(Some(&path_buf), None)?; // 12
        assert_eq!(from_file.server, "https://10.1.2.3:6443");
        let vec_of_strings: Vec<String> = vec!["pods".into(), "deploy".into()];
        let config = Config::new(access).watch(&vec_of_strings)?; // 15
        let mut config = config.watch(["nodes", "cm"])?; // 16
        let shown: Vec<String> = config.resources.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "v1/pods",
                "apps/v1/deployments",
                "v1/nodes",
                "v1/configmaps"
            ]
        );
        config.tuning.channel_capacity = 8; // 17
        let copy = config.clone();
        assert_eq!(copy.tuning.channel_capacity, 8);
        assert_ne!(copy.tuning, Tuning::default());
        Ok(())
    });
}

#[test]
fn errors_go_through_question_marks_and_keep_their_why_apart() {
    within(10, || {
        fn open_with_missing_ca(path: &std::path::Path) -> Result<Reader, BoxError> {
            let access = Access::new("https://10.1.2.3:6443").ca_file(path)?;
            Ok(Reader::open(Config::new(access).watch(["pods"])?)?)
        }
        let missing = std::env::temp_dir().join("tattler-api-missing-4e7a/ca.crt");
        let e = open_with_missing_ca(&missing).unwrap_err();
        // 21: the message names what failed; the source says why, once.
        assert_eq!(e.to_string(), format!("cannot read {}", missing.display()));
        let why = e.source().expect("an I/O error under it");
        let io = why.downcast_ref::<std::io::Error>().expect("an io::Error");
        assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
        assert!(!e.to_string().contains(&why.to_string()));
        let tattler = e.downcast_ref::<Error>().expect("tattler's own Error");
        assert!(matches!(tattler, Error::ReadFile { path, .. } if *path == missing));
        Ok(())
    });
}

/// 13 reads the host's kubeconfig: compiled, not run.
#[allow(dead_code)]
fn infer_goes_through_a_question_mark() -> Result<(), Box<dyn StdError>> {
    let access = Access::infer()?; // 13
    let _config = Config::new(access).watch(["pods"])?;
    Ok(())
}

/// The traits a user reaches for without looking, on every main type.
#[test]
fn the_main_types_are_send_sync_debug_and_clone_where_it_makes_sense() {
    fn send_sync<T: Send + Sync + 'static>() {}
    fn debug<T: std::fmt::Debug>() {}
    fn clone<T: Clone>() {}
    fn error<T: StdError + Send + Sync + 'static>() {}
    send_sync::<Reader>();
    send_sync::<Entry>();
    send_sync::<Config>();
    send_sync::<Access>();
    send_sync::<ResourceSpec>();
    send_sync::<Checkpoint>();
    error::<Error>();
    error::<ErrorInfo>();
    error::<kube_tattler::Closed>();
    error::<kube_tattler::NextTimeoutError>();
    error::<kube_tattler::TryNextError>();
    debug::<Reader>();
    debug::<kube_tattler::Iter<'static>>();
    debug::<Entry>();
    debug::<Config>();
    clone::<Entry>();
    clone::<Config>();
    clone::<Access>();
    clone::<ResourceSpec>();
    clone::<Checkpoint>();
    clone::<ErrorInfo>();
    // The iterator a reader gives, by name and through `&Reader`.
    fn iterates<'a, I: IntoIterator<Item = Entry, IntoIter = kube_tattler::Iter<'a>>>() {}
    iterates::<&Reader>();
}
