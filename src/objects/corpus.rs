//! Real custom resources (and core objects with copies of themselves),
//! written after their documented schemas, through the scrub path a stream
//! runs (`scrub::walk`, as `wire::decode` calls it, with the default
//! shaping's edits):
//! each file's listed secrets become `"REDACTED"` and nothing else changes.
//! The files are `tests/corpus/NAME.json`; `NAME.secrets` lists JSON
//! pointers, one a line, `#` standing for "the JSON this string holds".

use serde_json::Value;

use super::shape::Shaping;
use crate::entry::Resource;

macro_rules! corpus {
    ($($name:literal),* $(,)?) => {
        [$((
            $name,
            include_str!(concat!("../../tests/corpus/", $name, ".json")),
            include_str!(concat!("../../tests/corpus/", $name, ".secrets")),
        )),*]
    };
}

const CORPUS: [(&str, &str, &str); 11] = corpus![
    "argo-workflow",
    "tekton-task",
    "tekton-taskrun",
    "tekton-pipeline",
    "spark-application",
    "knative-service",
    "flux-helmrelease",
    "crossplane-composition",
    "pod-kapp-original",
    "deployment-template-last-applied",
    "secret-nested-last-applied",
];

/// Replaces the string at each copy along `path` by the JSON it holds;
/// returns the pointer to the value inside the innermost.
fn open_copies(v: &mut Value, path: &str) -> String {
    let parts: Vec<&str> = path.split("/#").collect();
    let mut at = String::new();
    for part in &parts[..parts.len() - 1] {
        at.push_str(part);
        let slot = v.pointer_mut(&at).unwrap_or_else(|| panic!("no {at}"));
        if let Value::String(text) = slot {
            *slot = serde_json::from_str(text).unwrap_or_else(|e| panic!("{at}: {e}"));
        }
    }
    at.push_str(parts[parts.len() - 1]);
    at
}

#[test]
fn every_listed_secret_is_redacted_and_nothing_else_changes() {
    let shaping = Shaping::default();
    for (name, text, secrets) in CORPUS {
        let input: Value = serde_json::from_str(text).unwrap();
        let secret = input["kind"] == "Secret";
        let resource = Resource {
            group: if secret { "" } else { "example.com" }.into(),
            version: "v1".into(),
            resource: if secret { "secrets" } else { "things" }.into(),
            kind: String::new(),
        };
        let (edited, found) = super::scrub::walk(
            text.as_bytes(),
            shaping.edits(&resource),
            &mut crate::objects::reuse::Reuse::default(),
        );
        let (from, to) = found
            .name
            .unwrap_or_else(|| panic!("{name}: no name found"));
        assert_eq!(
            format!("\"{}\"", input["metadata"]["name"].as_str().unwrap()),
            text[from..to],
            "{name}"
        );
        let edited = edited
            .unwrap()
            .unwrap_or_else(|| panic!("{name}: nothing redacted"));
        let out = String::from_utf8(edited).unwrap();
        assert!(!out.contains("s3cret"), "{name}: {out}");
        let mut got: Value = serde_json::from_str(&out).unwrap();
        let mut want = input.clone();
        let paths: Vec<&str> = secrets.lines().filter(|l| !l.is_empty()).collect();
        assert!(!paths.is_empty(), "{name}");
        for path in &paths {
            open_copies(&mut got, path);
            let at = open_copies(&mut want, path);
            let slot = want
                .pointer_mut(&at)
                .unwrap_or_else(|| panic!("{name}: no {path}"));
            assert!(slot.is_string(), "{name}: {path} is {slot}");
            assert_ne!(slot, "REDACTED", "{name}: {path}");
            *slot = "REDACTED".into();
        }
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn memory_reused_from_object_to_object_changes_no_walk() {
    // Each object walked with fresh memory, and then all of them, twice
    // over, with one `Reuse` that every walk before it has used (escaped
    // and nested copies included): the same edits, the same strings found.
    let shaping = Shaping::default();
    let resource = Resource {
        group: String::new(),
        version: "v1".into(),
        resource: "secrets".into(),
        kind: String::new(),
    };
    let edits = shaping.edits(&resource);
    let walk = |text: &str, reuse: &mut crate::objects::reuse::Reuse| {
        let (edited, found) = super::scrub::walk(text.as_bytes(), edits, reuse);
        (edited, format!("{found:?}"))
    };
    let fresh: Vec<_> = CORPUS
        .iter()
        .map(|(_, text, _)| walk(text, &mut Default::default()))
        .collect();
    let mut reuse = crate::objects::reuse::Reuse::default();
    for _ in 0..2 {
        for ((name, text, _), want) in CORPUS.iter().zip(&fresh) {
            assert_eq!(&walk(text, &mut reuse), want, "{name}");
        }
    }
}
