//! What the tattler benchmark programs share: opening a reader on the replay
//! server, syncing, and reading the process's own resource usage.

use std::time::{Duration, Instant};

use kube_tattler::{Access, Change, Config, Entry, Reader};

/// The reader every program uses: pods from `target`, default settings unless
/// `noscrub`. `target` is the replay server's URL, or a file holding the JSON
/// configuration (`Config::from_json`; `bench/real.sh` writes them).
pub fn open(target: &str, noscrub: bool) -> Reader {
    let mut config = if target.starts_with("http://") || target.starts_with("https://") {
        Config::new(Access::new(target)).watch(&["pods"])
    } else {
        let text = std::fs::read_to_string(target)
            .unwrap_or_else(|e| die(&format!("config {target}: {e}")));
        Config::from_json(&text)
    }
    .unwrap_or_else(|e| die(&e.to_string()));
    if noscrub {
        config.shaping.scrub = false;
    }
    Reader::open(config).unwrap_or_else(|e| die(&e.to_string()))
}

/// What the initial sync delivered.
pub struct Synced {
    pub objects: u64,
    pub seconds: f64,
    /// A sum over every entry's metadata and object length, so that nothing is optimised away.
    pub touched: u64,
}

/// Reads entries until Synced, touching each entry's metadata and object.
pub fn sync(reader: &Reader, t0: Instant) -> Synced {
    let mut objects = 0u64;
    let mut touched = 0u64;
    loop {
        let e = reader
            .next()
            .unwrap_or_else(|_| die("reader closed before Synced"));
        match e.change() {
            Change::Synced => break,
            Change::Error => die(&format!("error entry: {:?}", e.error())),
            _ => {
                objects += 1;
                touched += touch(&e);
            }
        }
    }
    Synced {
        objects,
        seconds: t0.elapsed().as_secs_f64(),
        touched,
    }
}

/// Reads what a consumer would: name, namespace, resourceVersion, object bytes.
pub fn touch(e: &Entry) -> u64 {
    (e.name().len() + e.namespace().map_or(0, str::len) + e.object().map_or(0, <[u8]>::len)) as u64
        + (e.resource_version().unwrap_or(0) & 1)
}

/// User + system CPU seconds of this process so far (all threads).
pub fn cpu_seconds() -> f64 {
    // SAFETY: getrusage writes into the zeroed struct we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// A field of /proc/self/status in kB (`VmRSS`, `VmHWM`).
pub fn status_kb(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Resets VmHWM to the current RSS, so a later read gives the peak since now.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

pub fn settle() {
    std::thread::sleep(Duration::from_millis(500));
}

pub fn die(msg: &str) -> ! {
    eprintln!("{}: {msg}", std::env::args().next().unwrap_or_default());
    std::process::exit(1)
}
