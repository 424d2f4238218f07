//! The YAML of kubeconfig files, read event by event into a small tree of
//! our own: nesting is capped, aliases are expanded within a budget (a few
//! hundred bytes of anchors must not become gigabytes), and every error
//! names a line and a column, never a value (a value may be a password).

use std::collections::HashMap;

use serde_json::Value;
use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};
use yaml_rust2::Yaml;

/// Nesting deeper than this is refused (a kubeconfig is about 6 deep).
const MAX_DEPTH: usize = 64;
/// Nodes, alias copies included, a file may expand to (a 1.8 MB kubeconfig
/// of 1,000 clusters, users and contexts is well within it).
const MAX_NODES: usize = 200_000;
/// Bytes of text, alias copies included, a file may expand to.
const MAX_TEXT_BYTES: usize = 64 << 20;

/// A YAML node and where it starts (1-based line and column).
#[derive(Clone, Debug)]
pub(crate) struct Node {
    line: usize,
    col: usize,
    v: Val,
}

#[derive(Clone, Debug)]
enum Val {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<(String, Node)>),
}

/// A container being read, and what it has cost so far.
struct Frame {
    node: Node,
    anchor: usize,
    key: Option<String>,
    nodes: usize,
    bytes: usize,
}

/// What has been materialised so far, alias copies included.
struct Budget {
    nodes: usize,
    bytes: usize,
}

impl Budget {
    fn spend(&mut self, nodes: usize, bytes: usize, at: Marker) -> Result<(), String> {
        self.nodes += nodes;
        self.bytes += bytes;
        if self.nodes > MAX_NODES || self.bytes > MAX_TEXT_BYTES {
            return Err(format!(
                "line {} column {}: aliases expand to more than {MAX_NODES} nodes or {} MiB",
                at.line(),
                at.col() + 1,
                MAX_TEXT_BYTES >> 20
            ));
        }
        Ok(())
    }
}

/// Reads the first YAML document of `text`; `None` for an empty file.
pub(crate) fn parse_yaml(text: &str) -> Result<Option<Node>, String> {
    let mut parser = Parser::new_from_str(text);
    let mut stack: Vec<Frame> = Vec::new();
    // Anchor id -> the node and its cost (nodes, bytes).
    let mut anchors: HashMap<usize, (Node, usize, usize)> = HashMap::new();
    let mut budget = Budget { nodes: 0, bytes: 0 };
    let mut root = None;
    loop {
        let (ev, mark) = parser.next_token().map_err(|e| {
            let m = e.marker();
            // The scanner quotes the character it met; a value never shows.
            let info = match e.info() {
                i if i.starts_with("unexpected character") => {
                    "a plain scalar cannot start with '%', '@' or '`' (quote it)"
                }
                i => i,
            };
            format!(
                "not YAML: {info} at line {} column {}",
                m.line(),
                m.col() + 1
            )
        })?;
        let at = |m: Marker| (m.line(), m.col() + 1);
        let (node, anchor, nodes, bytes) = match ev {
            Event::StreamEnd | Event::DocumentEnd => break,
            Event::Nothing | Event::StreamStart | Event::DocumentStart => continue,
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                if stack.len() >= MAX_DEPTH {
                    return Err(format!(
                        "line {} column {}: nested more than {MAX_DEPTH} deep",
                        mark.line(),
                        mark.col() + 1
                    ));
                }
                budget.spend(1, 0, mark)?;
                let (line, col) = at(mark);
                let v = if matches!(ev, Event::SequenceStart(..)) {
                    Val::Seq(Vec::new())
                } else {
                    Val::Map(Vec::new())
                };
                stack.push(Frame {
                    node: Node { line, col, v },
                    anchor,
                    key: None,
                    nodes: 1,
                    bytes: 0,
                });
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let mut f = stack.pop().ok_or("unbalanced YAML")?;
                if let Val::Map(entries) = &mut f.node.v {
                    merge_keys(entries);
                }
                (f.node, f.anchor, f.nodes, f.bytes)
            }
            Event::Scalar(text, style, anchor, tag) => {
                budget.spend(1, text.len(), mark)?;
                let (line, col) = at(mark);
                let bytes = text.len();
                let is_str_tag = tag.as_ref().is_some_and(|t| t.suffix == "str");
                // A mapping key is its text (kubeconfig keys are names).
                let is_key = stack
                    .last()
                    .is_some_and(|f| matches!(f.node.v, Val::Map(_)) && f.key.is_none());
                let v = if style == TScalarStyle::Plain && !is_str_tag && !is_key {
                    resolve_plain(text)
                } else {
                    Val::Str(text)
                };
                (Node { line, col, v }, anchor, 1, bytes)
            }
            Event::Alias(id) => {
                let (n, nodes, bytes) = anchors.get(&id).cloned().ok_or_else(|| {
                    format!(
                        "line {} column {}: an alias to an unknown anchor",
                        mark.line(),
                        mark.col() + 1
                    )
                })?;
                budget.spend(nodes, bytes, mark)?;
                (n, 0, nodes, bytes)
            }
        };
        if anchor > 0 {
            // Keeping the anchored copy costs as much again.
            budget.spend(nodes, bytes, mark)?;
            anchors.insert(anchor, (node.clone(), nodes, bytes));
        }
        match stack.last_mut() {
            None => {
                root = Some(node);
            }
            Some(f) => {
                f.nodes += nodes;
                f.bytes += bytes;
                match (&mut f.node.v, f.key.take()) {
                    (Val::Seq(items), _) => items.push(node),
                    (Val::Map(entries), Some(key)) => entries.push((key, node)),
                    (Val::Map(_), None) => {
                        f.key = Some(match node.v {
                            Val::Str(s) => s,
                            Val::Int(i) => i.to_string(),
                            Val::Bool(b) => b.to_string(),
                            Val::Float(x) => x.to_string(),
                            Val::Null => String::new(),
                            Val::Seq(_) | Val::Map(_) => {
                                return Err(format!(
                                    "line {} column {}: a mapping key must be a plain value",
                                    node.line, node.col
                                ))
                            }
                        })
                    }
                    // Only sequences and mappings are ever pushed.
                    _ => {}
                }
            }
        }
    }
    Ok(root)
}

/// YAML merge keys (`<<: *defaults`), as go-yaml applies them: the merged
/// mapping's entries come in where the mapping has no entry of its own.
fn merge_keys(entries: &mut Vec<(String, Node)>) {
    if !entries.iter().any(|(k, _)| k == "<<") {
        return;
    }
    let (merges, mut own): (Vec<_>, Vec<_>) = std::mem::take(entries)
        .into_iter()
        .partition(|(k, _)| k == "<<");
    for (_, m) in merges {
        let sources = match m.v {
            Val::Map(e) => vec![e],
            Val::Seq(items) => items
                .into_iter()
                .filter_map(|n| match n.v {
                    Val::Map(e) => Some(e),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        for source in sources {
            for (k, v) in source {
                if !own.iter().any(|(o, _)| *o == k) {
                    own.push((k, v));
                }
            }
        }
    }
    *entries = own;
}

/// A plain scalar's type, as go-yaml v2 (which kubectl's YAML goes through)
/// resolves it: YAML 1.1 booleans (`yes`, `on`, …) included.
fn resolve_plain(text: String) -> Val {
    match text.as_str() {
        "y" | "Y" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" => return Val::Bool(true),
        "n" | "N" | "no" | "No" | "NO" | "off" | "Off" | "OFF" => return Val::Bool(false),
        _ => {}
    }
    match Yaml::from_str(&text) {
        Yaml::Null => Val::Null,
        Yaml::Boolean(b) => Val::Bool(b),
        Yaml::Integer(i) => Val::Int(i),
        Yaml::Real(r) => r.parse().map(Val::Float).unwrap_or(Val::Str(text)),
        _ => Val::Str(text),
    }
}

impl Node {
    /// Whether the node is YAML's null.
    pub(crate) fn is_null(&self) -> bool {
        matches!(self.v, Val::Null)
    }

    pub(crate) fn kind(&self) -> &'static str {
        match self.v {
            Val::Null => "null",
            Val::Bool(_) => "a boolean",
            Val::Int(_) | Val::Float(_) => "a number",
            Val::Str(_) => "a string",
            Val::Seq(_) => "a list",
            Val::Map(_) => "a mapping",
        }
    }

    /// `what` must be `want`; the error names the place and the types, not the value.
    pub(crate) fn wrong(&self, what: &str, want: &str) -> String {
        let hint =
            if want == "a string" && matches!(self.v, Val::Bool(_) | Val::Int(_) | Val::Float(_)) {
                " (quote it)"
            } else {
                ""
            };
        format!(
            "line {} column {}: `{what}` must be {want}, not {}{hint}",
            self.line,
            self.col,
            self.kind()
        )
    }

    pub(crate) fn get(&self, key: &str) -> Option<&Node> {
        match &self.v {
            Val::Map(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub(crate) fn entries(&self, what: &str) -> Result<&[(String, Node)], String> {
        match &self.v {
            Val::Map(e) => Ok(e),
            Val::Null => Ok(&[]),
            _ => Err(self.wrong(what, "a mapping")),
        }
    }

    pub(crate) fn items(&self, what: &str) -> Result<&[Node], String> {
        match &self.v {
            Val::Seq(items) => Ok(items),
            Val::Null => Ok(&[]),
            _ => Err(self.wrong(what, "a list")),
        }
    }

    /// The JSON form (for the exec extension); depth is already bounded.
    pub(crate) fn to_json(&self) -> Value {
        match &self.v {
            Val::Null => Value::Null,
            Val::Bool(b) => Value::Bool(*b),
            Val::Int(i) => Value::from(*i),
            Val::Float(f) => serde_json::Number::from_f64(*f)
                .map(Value::Number)
                .unwrap_or(Value::Null),
            Val::Str(s) => Value::String(s.clone()),
            Val::Seq(items) => Value::Array(items.iter().map(Node::to_json).collect()),
            Val::Map(e) => Value::Object(e.iter().map(|(k, v)| (k.clone(), v.to_json())).collect()),
        }
    }
}

/// A mapping's typed fields; unknown ones are ignored, as kubectl does.
pub(crate) struct Fields<'a> {
    node: &'a Node,
    path: String,
}

impl<'a> Fields<'a> {
    pub(crate) fn new(node: &'a Node, path: &str) -> Result<Fields<'a>, String> {
        node.entries(path)?;
        Ok(Fields {
            node,
            path: path.to_string(),
        })
    }

    pub(crate) fn what(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    pub(crate) fn str(&self, key: &str) -> Result<Option<String>, String> {
        match self.node.get(key) {
            None => Ok(None),
            Some(n) => match &n.v {
                Val::Null => Ok(None),
                Val::Str(s) => Ok(Some(s.clone())),
                _ => Err(n.wrong(&self.what(key), "a string")),
            },
        }
    }

    /// A string field; empty counts as absent.
    pub(crate) fn text(&self, key: &str) -> Result<Option<String>, String> {
        Ok(self.str(key)?.filter(|s| !s.is_empty()))
    }

    pub(crate) fn bool(&self, key: &str) -> Result<bool, String> {
        match self.node.get(key) {
            None => Ok(false),
            Some(n) => match n.v {
                Val::Null => Ok(false),
                Val::Bool(b) => Ok(b),
                _ => Err(n.wrong(&self.what(key), "true or false")),
            },
        }
    }

    pub(crate) fn strings(&self, key: &str) -> Result<Vec<String>, String> {
        let Some(n) = self.node.get(key) else {
            return Ok(Vec::new());
        };
        let what = self.what(key);
        n.items(&what)?
            .iter()
            .map(|i| match &i.v {
                Val::Str(s) => Ok(s.clone()),
                _ => Err(i.wrong(&format!("{what}[]"), "a string")),
            })
            .collect()
    }

    pub(crate) fn map(&self, key: &str) -> Result<Option<Fields<'a>>, String> {
        match self.node.get(key) {
            None => Ok(None),
            Some(n) if matches!(n.v, Val::Null) => Ok(None),
            Some(n) => Fields::new(n, &self.what(key)).map(Some),
        }
    }

    /// A list of `{name: …, <body>: {…}}` entries, as `clusters`, `users`,
    /// `contexts` and `extensions` are.
    pub(crate) fn named(
        &self,
        key: &str,
        body: &str,
    ) -> Result<Vec<(String, Option<Fields<'a>>)>, String> {
        let Some(n) = self.node.get(key) else {
            return Ok(Vec::new());
        };
        let what = self.what(key);
        let mut out = Vec::new();
        for item in n.items(&what)? {
            let f = Fields::new(item, &format!("{what}[]"))?;
            let name = f.str("name")?.unwrap_or_default();
            out.push((name, f.map(body)?));
        }
        Ok(out)
    }

    pub(crate) fn raw(&self, key: &str) -> Option<&'a Node> {
        self.node.get(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yaml(text: &str) -> Result<Value, String> {
        Ok(parse_yaml(text)?
            .map(|n| n.to_json())
            .unwrap_or(Value::Null))
    }

    #[test]
    fn yaml_values_and_positions() {
        let v =
            yaml("a: 1\nb: [x, 'y', \"z\"]\nc: {d: true, e: ~}\nf: yes\ng: '007'\nh: !!str 12\n")
                .unwrap();
        assert_eq!(
            v,
            serde_json::json!({"a":1,"b":["x","y","z"],"c":{"d":true,"e":null},"f":true,"g":"007","h":"12"})
        );
        let e = parse_yaml("a: [1,\nb: \"unterminated\n").unwrap_err();
        assert!(e.starts_with("not YAML:") && e.contains("line"), "{e}");
        assert!(parse_yaml("").unwrap().is_none());
        // The scanner's "unexpected character: `@'" names no character here.
        let e = parse_yaml("token: @s3cr3t\n").unwrap_err();
        assert!(e.contains("cannot start with") && !e.contains("`@'"), "{e}");
    }

    #[test]
    fn aliases_are_expanded_within_a_budget() {
        let v = yaml("base: &b {x: 1, y: [2]}\nuse: *b\nmerged:\n  <<: *b\n  x: 9\n").unwrap();
        assert_eq!(v["use"], serde_json::json!({"x":1,"y":[2]}));
        assert_eq!(v["merged"], serde_json::json!({"x":9,"y":[2]}));
        // Billion laughs in a few hundred bytes: refused quickly, without the memory.
        let mut bomb = String::from(
            "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
        );
        for (i, (name, prev)) in ["b", "c", "d", "e", "f", "g", "h", "i"]
            .iter()
            .zip(["a", "b", "c", "d", "e", "f", "g", "h"])
            .enumerate()
        {
            let refs = vec![format!("*{prev}"); 9].join(",");
            bomb.push_str(&format!("{name}: &{name} [{refs}]\n"));
            let _ = i;
        }
        assert!(bomb.len() < 600, "{}", bomb.len());
        let t = std::time::Instant::now();
        let e = yaml(&bomb).unwrap_err();
        assert!(e.contains("aliases expand to more than"), "{e}");
        assert!(
            t.elapsed() < std::time::Duration::from_secs(2),
            "{:?}",
            t.elapsed()
        );
        assert!(yaml("a: *nowhere\n")
            .unwrap_err()
            .contains("unknown anchor"));
    }

    #[test]
    fn nesting_is_capped_without_recursion() {
        let deep = format!("{}x{}", "[".repeat(100_000), "]".repeat(100_000));
        let e = yaml(&deep).unwrap_err();
        assert!(
            e.contains("nested more than 64") || e.contains("recursion"),
            "{e}"
        );
        let block = format!("{}x\n", "- ".repeat(100_000));
        let e = yaml(&block).unwrap_err();
        assert!(e.contains("nested more than 64"), "{e}");
        assert!(yaml(&format!("{}1{}", "[".repeat(60), "]".repeat(60))).is_ok());
    }
}
