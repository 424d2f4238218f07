//! What the real-cluster tests compare: the entries about objects exactly,
//! and the notices by the kinds each test states. A notice kind the library
//! learns to send later (as `Stale` once was) then breaks no test that does
//! not state it; an `Error` entry always fails.
//!
//! Entries are as the tests print them: `"RESOURCE KIND …"` (`show`).

/// The kinds of entries about objects: compared exactly.
const OBJECT_KINDS: [&str; 6] = [
    "Add",
    "Update",
    "Delete",
    "Delete(inferred)",
    "Snapshot",
    "Synced",
];

/// The entry's kind: its second word.
fn kind(line: &str) -> &str {
    line.split(' ').nth(1).unwrap_or("")
}

/// The entries about objects, in order.
pub fn objects(seen: &[String]) -> Vec<String> {
    assert!(
        seen.iter().all(|l| kind(l) != "Error"),
        "an Error entry: {seen:?}"
    );
    seen.iter()
        .filter(|l| OBJECT_KINDS.contains(&kind(l)))
        .cloned()
        .collect()
}

/// The notices of the `stated` kinds (`["Stale"]`), in order; notices of
/// other kinds are left out, and printed.
pub fn notices(seen: &[String], stated: &[&str]) -> Vec<String> {
    let (ours, others): (Vec<&String>, Vec<&String>) = seen
        .iter()
        .filter(|l| !OBJECT_KINDS.contains(&kind(l)) && kind(l) != "Error")
        .partition(|l| stated.contains(&kind(l)));
    if !others.is_empty() {
        println!("notices of kinds this test does not state: {others:?}");
    }
    ours.into_iter().cloned().collect()
}

#[test]
fn objects_compare_exactly_and_only_stated_notices_count() {
    let seen: Vec<String> = [
        "cm Stale cm@a Unreachable",
        "cm Delete(inferred) a/x",
        "cm Degraded cm",
        "cm Synced cm",
    ]
    .map(String::from)
    .into();
    assert_eq!(objects(&seen), ["cm Delete(inferred) a/x", "cm Synced cm"]);
    assert_eq!(notices(&seen, &["Stale"]), ["cm Stale cm@a Unreachable"]);
    assert!(notices(&seen, &[]).is_empty());
}
