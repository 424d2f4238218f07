//! Credentials at run time: tokens that rotate, exec plugins whose output
//! expires, and the reload after a 401. Secrets never reach a log or an error.
//!
//! An exec plugin runs on a thread of its own, once for every stream that
//! needs it (single flight), with no lock held: the streams wait for it, each
//! honouring its own stop, and when the last one stops the plugin is killed.
//! A failure is kept for a few seconds so that many streams do not run a
//! failing plugin over and over; one that cannot heal (the command is missing,
//! its output is unusable), or that keeps failing, is final.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use crate::sync::Mutex;
use crossbeam_channel::{bounded, Receiver, Select, Sender};

use crate::access::auth::{Auth, ExecConfig};
use crate::access::exec::{ExecOutput, RunError};
use crate::access::go_base64::base64_encode;
use crate::access::secret::ClientIdentity;
use crate::access::secret::Token;

/// Token files are re-read at least this often, as client-go does.
const TOKEN_FILE_REFRESH: Duration = Duration::from_secs(60);
/// A failed re-read (the last token still in use) is tried again this soon.
const TOKEN_FILE_RETRY: Duration = Duration::from_secs(10);
/// A token file larger than this is refused.
const MAX_TOKEN_FILE_BYTES: u64 = 1 << 20;
/// Exec credentials are refreshed this long before they expire.
const EXPIRY_MARGIN: Duration = Duration::from_secs(30);
/// A failed fetch is answered from memory for this long.
const FAILURE_CACHE: Duration = Duration::from_secs(5);
/// This many failed fetches in a row make the failure final.
const FAILURES_BEFORE_FINAL: u32 = 5;

/// What a request should carry right now.
#[derive(Clone)]
pub(crate) struct Current {
    pub header: Option<String>,
    pub identity: Option<ClientIdentity>,
    /// Changes whenever `identity` changes, so transports know to rebuild.
    pub identity_generation: u64,
}

/// Why [`Credentials::current`] gave no credentials.
#[derive(Debug, Clone)]
pub(crate) enum CredentialError {
    /// The stream was stopped while it waited.
    Stopped,
    /// Fetching failed. `fatal`: retrying cannot help (a missing command,
    /// unusable output) or it failed too many times in a row; the stream
    /// should end with an Error entry. The message names the file or command
    /// and never holds a secret.
    Failed { message: String, fatal: bool },
}

impl std::fmt::Display for CredentialError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CredentialError::Stopped => f.write_str("stopped"),
            CredentialError::Failed { message, .. } => f.write_str(message),
        }
    }
}

struct Failure {
    message: String,
    fatal: bool,
    at: Instant,
}

/// One run of an exec plugin that streams wait for.
struct Flight {
    /// Disconnects when the run has stored its result.
    done: Receiver<()>,
    /// The streams waiting; the last to stop cancels the run.
    waiters: AtomicUsize,
    cancel: Arc<AtomicBool>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

#[derive(Default)]
struct State {
    header: Option<String>,
    identity: Option<ClientIdentity>,
    identity_generation: u64,
    /// Whether a good value is held, and when it is due again.
    have: bool,
    due: Option<Instant>,
    invalid: bool,
    failure: Option<Failure>,
    failures_in_a_row: u32,
    flight: Option<Arc<Flight>>,
}

impl State {
    fn fresh(&self) -> Option<Current> {
        let due = self.invalid || !self.have || self.due.is_some_and(|d| Instant::now() >= d);
        (!due).then(|| self.current())
    }

    fn current(&self) -> Current {
        Current {
            header: self.header.clone(),
            identity: self.identity.clone(),
            identity_generation: self.identity_generation,
        }
    }

    /// The failure still in memory, unless a 401 asked for a new attempt.
    fn recent_failure(&self) -> Option<CredentialError> {
        let f = self.failure.as_ref()?;
        (f.fatal || (!self.invalid && f.at.elapsed() < FAILURE_CACHE)).then(|| {
            CredentialError::Failed {
                message: f.message.clone(),
                fatal: f.fatal,
            }
        })
    }

    fn store(&mut self, header: Option<String>, identity: Option<ClientIdentity>) {
        if identity != self.identity {
            self.identity = identity;
            self.identity_generation += 1;
        }
        self.header = header;
        self.have = true;
        self.invalid = false;
        self.failure = None;
        self.failures_in_a_row = 0;
    }

    fn fail(&mut self, message: String, permanent: bool) -> CredentialError {
        self.failures_in_a_row = self.failures_in_a_row.saturating_add(1);
        let fatal = permanent || self.failures_in_a_row >= FAILURES_BEFORE_FINAL;
        self.invalid = false;
        self.failure = Some(Failure {
            message: message.clone(),
            fatal,
            at: Instant::now(),
        });
        CredentialError::Failed { message, fatal }
    }
}

/// Credentials shared by every stream of a reader.
pub(crate) struct Credentials {
    auth: Arc<Auth>,
    state: Arc<Mutex<State>>,
}

impl Credentials {
    pub(crate) fn new(auth: Auth) -> Credentials {
        Credentials {
            auth: Arc::new(auth),
            state: Arc::new(Mutex::new(State::default())),
        }
    }

    /// Whether a 401 may be cured by reloading.
    pub(crate) fn reloadable(&self) -> bool {
        matches!(*self.auth, Auth::TokenFile(_) | Auth::Exec(_))
    }

    /// Forces a reload before the next request (after a 401).
    pub(crate) fn invalidate(&self) {
        self.state.lock().invalid = true;
    }

    /// The credentials to send now, refreshed when due. Waits for a running
    /// exec plugin (no lock held) until it answers or one of `stops`
    /// disconnects.
    pub(crate) fn current(&self, stops: &[&Receiver<()>]) -> Result<Current, CredentialError> {
        loop {
            let flight = {
                let mut st = self.state.lock();
                if let Some(c) = st.fresh() {
                    return Ok(c);
                }
                if let Some(e) = st.recent_failure() {
                    return Err(e);
                }
                match &*self.auth {
                    Auth::Exec(exec) => match st.flight.clone() {
                        Some(f) => {
                            f.waiters.fetch_add(1, Ordering::SeqCst);
                            f
                        }
                        None => match self.start(exec) {
                            Ok(f) => {
                                st.flight = Some(f.clone());
                                f
                            }
                            Err(e) => {
                                return Err(st.fail(
                                    format!("exec plugin: cannot start a thread: {e}"),
                                    false,
                                ))
                            }
                        },
                    },
                    _ => {
                        let mut warning = None;
                        let result = self.fetch_now(&mut st, &mut warning);
                        // Logged without the lock: a log callback may call back in.
                        drop(st);
                        if let Some(w) = warning {
                            log::warn!("{w}");
                        }
                        return result;
                    }
                }
            };
            if !wait(&flight.done, stops) {
                self.leave(&flight);
                return Err(CredentialError::Stopped);
            }
            // Done: the result is in the state (or, if the run died, the
            // next pass starts another).
            flight.waiters.fetch_sub(1, Ordering::SeqCst);
            join(&flight);
        }
    }

    /// A waiter gives up; the last one cancels the run and joins its thread
    /// (the plugin is killed within 20 ms).
    fn leave(&self, flight: &Arc<Flight>) {
        let last = {
            let mut st = self.state.lock();
            let last = flight.waiters.fetch_sub(1, Ordering::SeqCst) == 1;
            if last {
                flight.cancel.store(true, Ordering::SeqCst);
                if st.flight.as_ref().is_some_and(|f| Arc::ptr_eq(f, flight)) {
                    st.flight = None;
                }
            }
            last
        };
        if last {
            join(flight);
        }
    }

    /// Starts a plugin run on its own thread; it stores its result in the
    /// state, then disconnects `done`.
    fn start(&self, exec: &ExecConfig) -> std::io::Result<Arc<Flight>> {
        let (done_tx, done): (Sender<()>, Receiver<()>) = bounded(0);
        let cancel = Arc::new(AtomicBool::new(false));
        let flight = Arc::new(Flight {
            done,
            waiters: AtomicUsize::new(1),
            cancel: cancel.clone(),
            thread: Mutex::new(None),
        });
        let (state, me, exec) = (self.state.clone(), Arc::downgrade(&flight), exec.clone());
        let handle = std::thread::Builder::new()
            .name("tattler-exec".into())
            .spawn(move || {
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    crate::access::exec::run(&exec, &cancel)
                }))
                .unwrap_or_else(|_| {
                    Err(RunError::Failed {
                        message: "exec plugin: the run panicked".into(),
                        permanent: false,
                    })
                });
                let mut st = state.lock();
                let ours = st
                    .flight
                    .as_ref()
                    .is_some_and(|f| me.upgrade().is_some_and(|me| Arc::ptr_eq(f, &me)));
                if ours {
                    st.flight = None;
                    match result {
                        Ok(ExecOutput {
                            token,
                            identity,
                            expires,
                        }) => {
                            st.store(token.map(|t| format!("Bearer {t}")), identity);
                            st.due = expires.map(due_before);
                        }
                        Err(RunError::Failed { message, permanent }) => {
                            st.fail(message, permanent);
                        }
                        Err(RunError::Cancelled) => {}
                    }
                }
                drop(st);
                drop(done_tx);
            })?;
        *flight.thread.lock() = Some(handle);
        Ok(flight)
    }

    /// Static credentials and token files: quick, under the lock; what to
    /// log goes to `warning`, for the caller to log once the lock is released.
    fn fetch_now(
        &self,
        st: &mut State,
        warning: &mut Option<String>,
    ) -> Result<Current, CredentialError> {
        match &*self.auth {
            Auth::None => st.store(None, None),
            Auth::Token(t) => st.store(Some(format!("Bearer {}", t.expose())), None),
            Auth::Basic { username, password } => {
                let raw = format!("{username}:{}", password.expose());
                st.store(
                    Some(format!("Basic {}", base64_encode(raw.as_bytes()))),
                    None,
                );
            }
            Auth::TokenFile(path) => match read_token_file(path) {
                Ok(t) => {
                    st.store(Some(format!("Bearer {}", t.expose())), None);
                    st.due = Some(Instant::now() + TOKEN_FILE_REFRESH);
                }
                Err(e) if st.have && st.header.is_some() => {
                    // client-go: "Unable to rotate token"; the last one goes on.
                    *warning = Some(format!("{e}; using the token read before"));
                    st.invalid = false;
                    st.due = Some(Instant::now() + TOKEN_FILE_RETRY);
                }
                Err(e) => return Err(st.fail(e, false)),
            },
            // Exec credentials come from a flight (see `current`).
            Auth::Exec(_) => {}
        }
        Ok(st.current())
    }
}

fn read_token_file(path: &std::path::Path) -> Result<Token, String> {
    let data = crate::access::files::read_bounded(path, MAX_TOKEN_FILE_BYTES)
        .map_err(|e| format!("cannot read token file {}: {e}", path.display()))?;
    let text = String::from_utf8(data)
        .map_err(|_| format!("token file {} is not UTF-8", path.display()))?;
    let t = Token::new(&text);
    if t.expose().is_empty() {
        return Err(format!("token file {} is empty", path.display()));
    }
    if t.expose().bytes().any(|b| b.is_ascii_control()) {
        return Err(format!(
            "token file {} holds control characters",
            path.display()
        ));
    }
    Ok(t)
}

/// When a credential expiring at `expires` is due for a refresh: the margin
/// before it, but at least a second from now (a plugin that hands out an
/// expired credential is not run in a loop).
fn due_before(expires: SystemTime) -> Instant {
    let left = expires
        .duration_since(SystemTime::now() + EXPIRY_MARGIN)
        .unwrap_or(Duration::ZERO);
    Instant::now() + left.max(Duration::from_secs(1))
}

/// Waits for `done` to disconnect (true) or any of `stops` (false).
fn wait(done: &Receiver<()>, stops: &[&Receiver<()>]) -> bool {
    let mut sel = Select::new();
    sel.recv(done);
    for s in stops {
        sel.recv(s);
    }
    let op = sel.select();
    let i = op.index();
    let _ = op.recv(if i == 0 { done } else { stops[i - 1] });
    i == 0
}

fn join(flight: &Flight) {
    let handle = flight.thread.lock().take();
    if let Some(h) = handle {
        // The thread catches its own panics.
        let _ = crate::sync::join(h);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_and_static_tokens() {
        let c = Credentials::new(Auth::Basic {
            username: "u".into(),
            password: Token::new("p"),
        });
        assert_eq!(
            c.current(&[]).unwrap().header.as_deref(),
            Some("Basic dTpw")
        );
        assert!(!c.reloadable());
        let c = Credentials::new(Auth::Token(Token::new("abc")));
        assert_eq!(
            c.current(&[]).unwrap().header.as_deref(),
            Some("Bearer abc")
        );
    }

    #[test]
    fn token_file_keeps_the_last_good_token_and_is_bounded() {
        let dir = std::env::temp_dir().join(format!("tattler-auth-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("token");
        std::fs::write(&f, "one\n").unwrap();
        let c = Credentials::new(Auth::TokenFile(f.clone()));
        assert_eq!(
            c.current(&[]).unwrap().header.as_deref(),
            Some("Bearer one")
        );
        std::fs::write(&f, "two").unwrap();
        assert_eq!(
            c.current(&[]).unwrap().header.as_deref(),
            Some("Bearer one"),
            "cached within a minute"
        );
        c.invalidate();
        assert_eq!(
            c.current(&[]).unwrap().header.as_deref(),
            Some("Bearer two")
        );
        // Gone, empty or too large: the last good token goes on.
        for bad in [
            None,
            Some(vec![]),
            Some(vec![b'a'; (MAX_TOKEN_FILE_BYTES + 1) as usize]),
        ] {
            match bad {
                None => std::fs::remove_file(&f).unwrap(),
                Some(data) => std::fs::write(&f, data).unwrap(),
            }
            c.invalidate();
            assert_eq!(
                c.current(&[]).unwrap().header.as_deref(),
                Some("Bearer two")
            );
        }
        // With no good token ever read it is an error naming the file.
        let fresh = Credentials::new(Auth::TokenFile(f.clone()));
        match fresh.current(&[]) {
            Err(CredentialError::Failed { message, fatal }) => {
                assert!(
                    message.contains(&f.display().to_string()) && message.contains("larger than"),
                    "{message}"
                );
                assert!(!fatal);
            }
            other => panic!("{:?}", other.map(|c| c.header)),
        }
        std::fs::remove_file(&f).unwrap();
    }
}
