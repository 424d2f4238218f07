//! The keys of the configuration document: each key's JSON type and, where
//! the library has one, its default. The typed setters, the "did you mean"
//! for a mistyped key and `tattler_config_keys` read this table; a test holds
//! it equal to the keys the core's JSON reader reads.

use std::ffi::{c_char, CString};
use std::sync::OnceLock;

use kube_tattler::{Error, Shaping, Tuning};
use serde_json::{json, Map, Value};

use crate::error::{guard_value, Failure};

/// The JSON type a key takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Text,
    Integer,
    Boolean,
    /// `resources`: an array of names and objects.
    Resources,
    /// `exec`: an object.
    Exec,
    /// `shard`: an object, `{"count": N, "index": i}`.
    Shard,
    /// `event_kinds`: an array of strings.
    TextList,
    /// `leader_election`, `checkpoint_in_cluster`: an object of their own keys.
    Object,
}

impl Kind {
    fn json_type(self) -> &'static str {
        match self {
            Kind::Text => "string",
            Kind::Integer => "integer",
            Kind::Boolean => "boolean",
            Kind::Resources | Kind::TextList => "array",
            Kind::Exec | Kind::Shard | Kind::Object => "object",
        }
    }
}

/// One key of the document.
pub(crate) struct Key {
    pub(crate) name: &'static str,
    pub(crate) kind: Kind,
    /// The key it is another name for.
    pub(crate) alias_of: Option<&'static str>,
}

const fn key(name: &'static str, kind: Kind) -> Key {
    Key {
        name,
        kind,
        alias_of: None,
    }
}

use Kind::*;

/// Every key the JSON reader (`kube_tattler::Config::from_json`) reads.
pub(crate) const KEYS: &[Key] = &[
    key("server", Text),
    key("ca_file", Text),
    key("ca_data", Text),
    key("token", Text),
    key("token_file", Text),
    key("insecure", Boolean),
    Key {
        name: "insecure_skip_tls_verify",
        kind: Boolean,
        alias_of: Some("insecure"),
    },
    key("namespace", Text),
    key("label_selector", Text),
    key("field_selector", Text),
    key("resources", Resources),
    key("channel_capacity", Integer),
    key("idle_timeout_secs", Integer),
    key("connect_timeout_secs", Integer),
    key("gzip", Boolean),
    key("page_size", Integer),
    key("max_frame_bytes", Integer),
    key("kubeconfig", Text),
    key("context", Text),
    key("in_cluster", Boolean),
    key("tls_server_name", Text),
    key("proxy", Text),
    key("client_cert_file", Text),
    key("client_key_file", Text),
    key("username", Text),
    key("password", Text),
    key("exec", Exec),
    key("scrub", Boolean),
    key("scrub_secret_data", Boolean),
    key("metadata_only", Boolean),
    key("drop_managed_fields", Boolean),
    key("event_kinds", TextList),
    key("relist_interval_secs", Integer),
    key("initial_events_timeout_secs", Integer),
    key("max_buffered_bytes", Integer),
    key("discovery_interval_secs", Integer),
    key("shard", Shard),
    key("leader_election", Object),
    key("checkpoint_in_cluster", Object),
];

/// The library's default for a key, as the JSON value that means it; `None`
/// for the keys whose absence means something else (no server: found as
/// kubectl finds it; no token: none).
pub(crate) fn default(name: &str) -> Option<Value> {
    let t = Tuning::default();
    let s = Shaping::default();
    let v = match name {
        "channel_capacity" => json!(t.channel_capacity),
        "max_buffered_bytes" => json!(t.max_buffered_bytes),
        "max_frame_bytes" => json!(t.max_frame_bytes),
        "page_size" => json!(t.page_size),
        "idle_timeout_secs" => json!(t.idle_timeout.as_secs()),
        "connect_timeout_secs" => json!(t.connect_timeout.as_secs()),
        "initial_events_timeout_secs" => json!(t.initial_events_timeout.as_secs()),
        "discovery_interval_secs" => json!(t.discovery_interval.as_secs()),
        "gzip" => json!(t.gzip),
        "scrub" => json!(s.scrub),
        "scrub_secret_data" => json!(s.scrub_secret_data),
        "drop_managed_fields" => json!(s.drop_managed_fields),
        // `Config::new`'s: no relist (0 means never), and the flags a
        // missing key leaves off.
        "relist_interval_secs" => json!(0),
        "insecure" | "insecure_skip_tls_verify" | "in_cluster" | "metadata_only" => json!(false),
        _ => return None,
    };
    Some(v)
}

/// The key called `name`, or the failure `tattler_open` reports for it:
/// an unknown key, with the known key it most likely meant.
pub(crate) fn find(name: &str) -> Result<&'static Key, Failure> {
    if let Some(k) = KEYS.iter().find(|k| k.name == name) {
        return Ok(k);
    }
    let hint = match suggestion(name) {
        Some(s) => format!("did you mean `{s}`?"),
        None => "tattler_config_keys() lists every key".to_string(),
    };
    Err(Error::Config(format!("JSON: unknown key `{name}` ({hint})")).into())
}

/// The known key closest to `name`, if it is close enough to be a typo:
/// at most one edit per three characters (one at least), an edit being a
/// character added, dropped, changed, or two swapped; case is ignored.
fn suggestion(name: &str) -> Option<&'static str> {
    let name = name.to_ascii_lowercase();
    let limit = (name.chars().count() / 3).max(1);
    KEYS.iter()
        .map(|k| (edits(&name, k.name), k.name))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// The optimal string alignment distance (Levenshtein with swaps).
fn edits(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

/// The table as `tattler_config_keys` gives it.
fn keys_json() -> String {
    let mut doc = Map::new();
    for k in KEYS {
        let mut about = Map::new();
        about.insert("type".into(), k.kind.json_type().into());
        if let Some(d) = default(k.name) {
            about.insert("default".into(), d);
        }
        if let Some(a) = k.alias_of {
            about.insert("alias_of".into(), a.into());
        }
        doc.insert(k.name.into(), Value::Object(about));
    }
    Value::Object(doc).to_string()
}

/// Every key of the configuration document, with its JSON type and the
/// library's default, as one JSON object:
/// `{"server":{"type":"string"},...,"channel_capacity":{"type":"integer","default":64},...}`.
/// `type` is `"string"`, `"integer"`, `"boolean"`, `"array"` (`resources`,
/// `event_kinds`) or `"object"` (`exec`, `shard`, `leader_election`,
/// `checkpoint_in_cluster`); `default` is there for the keys
/// whose absence means a value (`channel_capacity`, `scrub`, ...), in the
/// key's own unit (`idle_timeout_secs` in seconds); `alias_of` names the key
/// another one stands for. For bindings that check keys or generate setters,
/// and for a test that a binding's documented defaults are the library's.
///
/// Returns: a static NUL-terminated string, never NULL (`"{}"` only if
/// tattler failed internally, a caught panic).
///
/// Ownership: static; do not free it.
///
/// Thread safety: any thread, any time.
#[no_mangle]
pub extern "C" fn tattler_config_keys() -> *const c_char {
    static KEYS_JSON: OnceLock<CString> = OnceLock::new();
    guard_value(c"{}".as_ptr(), || {
        KEYS_JSON
            .get_or_init(|| CString::new(keys_json()).unwrap_or_default())
            .as_ptr()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube_tattler::Config;

    /// The core's key list, from its unknown-key message: the one place it
    /// spells them all out.
    fn core_keys() -> Vec<String> {
        let e = Config::check_json_keys(r#"{"zz_no_such_key":1}"#)
            .unwrap_err()
            .to_string();
        let list = e
            .split_once("(known: ")
            .and_then(|(_, rest)| rest.strip_suffix(')'))
            .unwrap_or_else(|| panic!("no key list in {e:?}"));
        list.split(", ").map(String::from).collect()
    }

    #[test]
    fn the_table_is_every_key_the_json_reader_reads_with_its_type() {
        let mut ours: Vec<&str> = KEYS
            .iter()
            .filter(|k| k.alias_of.is_none())
            .map(|k| k.name)
            .collect();
        let mut core = core_keys();
        ours.sort_unstable();
        core.sort();
        assert_eq!(ours, core);
        // Each key takes a value of its type and refuses another.
        for k in KEYS {
            let (good, bad) = match k.kind {
                Text => (json!("x"), json!(1)),
                Integer => (json!(1), json!("1")),
                Boolean => (json!(true), json!("yes")),
                Resources => (json!(["pods"]), json!(1)),
                Exec => (json!({"command": "x"}), json!("x")),
                Shard => (
                    json!({"count": 2, "index": 1}),
                    json!({"count": 2, "index": 2}),
                ),
                TextList => (json!(["Pod"]), json!("Pod")),
                Object => (json!({}), json!("x")),
            };
            let doc = |v: &Value| json!({ k.name: v }).to_string();
            if k.kind != Resources && k.kind != Exec && k.kind != Object {
                Config::check_json_keys(&doc(&good)).unwrap_or_else(|e| panic!("{}: {e}", k.name));
                assert!(
                    Config::check_json_keys(&doc(&bad)).is_err(),
                    "{} took {bad}",
                    k.name
                );
            }
            if let Some(d) = default(k.name) {
                Config::check_json_keys(&doc(&d)).unwrap_or_else(|e| panic!("{}: {e}", k.name));
                assert_eq!(d.is_boolean(), k.kind == Boolean, "{}", k.name);
                assert_eq!(d.is_u64(), k.kind == Integer, "{}", k.name);
            }
        }
    }

    #[test]
    fn a_mistyped_key_gets_the_key_it_meant() {
        for (typed, meant) in [
            ("sever", "server"),
            ("tokn", "token"),
            ("Server", "server"),
            ("namespce", "namespace"),
            ("chanel_capacity", "channel_capacity"),
            ("lable_selector", "label_selector"),
            ("insecure_skip_verify", "insecure_skip_tls_verify"),
            ("relist_interval", "relist_interval_secs"),
        ] {
            let f = find(typed).map(|_| ()).unwrap_err();
            assert_eq!(
                f.message,
                format!(
                    "invalid configuration: JSON: unknown key `{typed}` (did you mean `{meant}`?)"
                )
            );
        }
        for far in ["x", "bogus", "zz_no_such_key", "resource"] {
            let f = find(far).map(|_| ()).unwrap_err();
            assert!(
                f.message
                    .ends_with("(tattler_config_keys() lists every key)")
                    || f.message.contains("did you mean `resources`"),
                "{far}: {}",
                f.message
            );
            assert!(f.message.len() < 120, "{}", f.message);
        }
        assert_eq!(find("server").map(|k| k.kind).ok(), Some(Text));
    }

    #[test]
    fn the_keys_json_has_each_key_once_with_the_library_s_defaults() {
        let doc: Value = serde_json::from_str(&keys_json()).unwrap();
        let doc = doc.as_object().unwrap();
        assert_eq!(doc.len(), KEYS.len());
        assert_eq!(doc["server"], json!({"type": "string"}));
        assert_eq!(
            doc["channel_capacity"],
            json!({"type": "integer", "default": 64})
        );
        assert_eq!(doc["scrub"], json!({"type": "boolean", "default": true}));
        assert_eq!(
            doc["idle_timeout_secs"],
            json!({"type": "integer", "default": 150})
        );
        assert_eq!(
            doc["insecure_skip_tls_verify"],
            json!({"type": "boolean", "default": false, "alias_of": "insecure"})
        );
        assert_eq!(doc["resources"], json!({"type": "array"}));
        // SAFETY: a static NUL-terminated string.
        let c = unsafe { std::ffi::CStr::from_ptr(tattler_config_keys()) };
        assert_eq!(c.to_str().unwrap(), keys_json());
    }
}
