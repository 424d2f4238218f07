//! What goes to stdout, per `-o`: a table for people (as `kubectl get -w`
//! prints one), JSON lines for `jq`, YAML documents, or `kind.group/name`.
//! Pure but for the writer: a [`View`] in, bytes out.

use std::io::{self, Write};
use std::time::SystemTime;

use kube_tattler::{Change, Entry};
use serde_json::Value;
use yaml_rust2::yaml::{Hash, Yaml};

use crate::age;
use crate::args::Output;

/// One entry as the printers see it: borrowed from an [`Entry`], or made
/// by a test.
#[derive(Debug, Clone, Copy)]
pub struct View<'a> {
    /// The kind of change.
    pub change: Change,
    /// A delete found by comparing a re-sync with what was delivered.
    pub inferred: bool,
    /// API group; empty for the core group.
    pub group: &'a str,
    /// API version.
    pub version: &'a str,
    /// Plural resource name.
    pub resource: &'a str,
    /// Kind; empty until the server sent an object.
    pub kind: &'a str,
    /// Empty for cluster-scoped objects and for Synced and Error entries.
    pub namespace: &'a str,
    /// Empty for Synced and Error entries of a resource.
    pub name: &'a str,
    /// The object's uid.
    pub uid: &'a str,
    /// As the server sent it.
    pub resource_version: &'a str,
    /// An Error entry's HTTP status, reason and message.
    pub error: Option<(u16, &'a str, &'a str)>,
    /// The object's JSON, as sent.
    pub object: Option<&'a [u8]>,
    /// Under leader election, the term the entry was delivered in.
    pub term: Option<u64>,
    /// On Leading and Following, the replica holding the Lease now.
    pub holder: Option<&'a str>,
}

impl<'a> View<'a> {
    /// The view of an entry.
    pub fn of(e: &'a Entry) -> View<'a> {
        let r = e.resource();
        View {
            change: e.change(),
            inferred: e.inferred(),
            group: &r.group,
            version: &r.version,
            resource: &r.resource,
            kind: &r.kind,
            namespace: e.namespace().unwrap_or(""),
            name: e.name(),
            uid: e.uid(),
            resource_version: e.resource_version_str(),
            error: e
                .error()
                .map(|x| (x.code, x.reason.as_str(), x.message.as_str())),
            object: e.object(),
            term: e.term(),
            holder: e.holder(),
        }
    }

    /// Whether it reports an object (not a resource's Synced, Stale or
    /// Error, nor leader election's Leading or Following).
    fn is_object(&self) -> bool {
        !matches!(
            self.change,
            Change::Synced | Change::Error | Change::Stale | Change::Leading | Change::Following
        )
    }

    /// `pod`, `deployment.apps`: the type as kubectl's `-o name` writes it.
    fn kind_ref(&self) -> String {
        let kind = if self.kind.is_empty() {
            self.resource.to_string()
        } else {
            self.kind.to_ascii_lowercase()
        };
        dotted(&kind, self.group)
    }

    /// `Add`, …, `Delete(inferred)`.
    fn change_text(&self) -> &'static str {
        if self.inferred {
            "Delete(inferred)"
        } else {
            self.change.as_str()
        }
    }
}

fn dotted(name: &str, group: &str) -> String {
    if group.is_empty() {
        name.to_string()
    } else {
        format!("{name}.{group}")
    }
}

/// What the table shows beyond its fixed columns, decided from the
/// resources asked for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Layout {
    /// A NAMESPACE column: some resource spans several namespaces.
    pub namespace: bool,
    /// Names as `kind.group/name`: several resources share the table.
    pub kinds: bool,
}

/// The most rows a table holds back to align them.
pub const HOLD_ROWS: usize = 1000;

/// Prints entries in one format, remembering the table's column widths.
pub struct Printer {
    output: Output,
    objects: bool,
    layout: Layout,
    widths: Vec<usize>,
    /// A table's rows held back until [`release`](Self::release), so that
    /// the initial state comes out aligned, as kubectl prints its list.
    held: Option<Vec<Vec<String>>>,
    /// The header line comes before the first row (none without rows).
    header_due: bool,
}

impl Printer {
    /// A printer for `-o output`; `objects` adds each object to JSON and
    /// YAML, `headers` prints the table's header line before its first row.
    /// A table holds its rows back until [`release`](Self::release) (or
    /// [`HOLD_ROWS`] of them).
    pub fn new(output: Output, objects: bool, headers: bool, layout: Layout) -> Printer {
        let table = matches!(output, Output::Table | Output::Wide);
        Printer {
            output,
            objects,
            layout,
            widths: Vec::new(),
            held: table.then(Vec::new),
            header_due: headers,
        }
    }

    /// Writes the rows held back, aligned on the widest of them; later
    /// rows are written at once.
    pub fn release(&mut self, out: &mut impl Write) -> io::Result<()> {
        let Some(rows) = self.held.take() else {
            return Ok(());
        };
        self.widths = self.header().iter().map(|h| h.chars().count()).collect();
        for row in &rows {
            for (w, cell) in self.widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        for row in &rows {
            self.row(out, row)?;
        }
        Ok(())
    }

    /// Writes a row, after the header line if it is the first.
    fn row(&mut self, out: &mut impl Write, cells: &[String]) -> io::Result<()> {
        if std::mem::take(&mut self.header_due) {
            let header = self.header();
            let line = self.line(&header);
            writeln!(out, "{line}")?;
        }
        let line = self.line(cells);
        writeln!(out, "{line}")
    }

    /// Writes the entry (unflushed); false when this format does not show
    /// it (Error and Stale entries in a table, Synced, Stale and Error ones
    /// as names).
    pub fn print(&mut self, out: &mut impl Write, v: &View, now: SystemTime) -> io::Result<bool> {
        match self.output {
            Output::Json => writeln!(out, "{}", json_line(v, self.objects))?,
            Output::Yaml => writeln!(out, "{}", yaml_document(v, self.objects))?,
            Output::Name if v.is_object() => writeln!(out, "{}/{}", v.kind_ref(), v.name)?,
            Output::Name => return Ok(false),
            Output::Table | Output::Wide
                if matches!(
                    v.change,
                    Change::Error | Change::Stale | Change::Leading | Change::Following
                ) =>
            {
                return Ok(false)
            }
            Output::Table | Output::Wide => {
                let cells = self.cells(v, now);
                if let Some(rows) = &mut self.held {
                    rows.push(cells);
                    if rows.len() >= HOLD_ROWS {
                        self.release(out)?;
                    }
                } else {
                    self.row(out, &cells)?;
                }
            }
        }
        Ok(true)
    }

    fn header(&self) -> Vec<String> {
        let mut h = vec!["CHANGE"];
        if self.layout.namespace {
            h.push("NAMESPACE");
        }
        h.extend(["NAME", "RESOURCEVERSION", "AGE"]);
        if self.output == Output::Wide {
            h.extend(["UID", "RESOURCE"]);
        }
        h.into_iter().map(String::from).collect()
    }

    fn cells(&self, v: &View, now: SystemTime) -> Vec<String> {
        let mut c = vec![v.change_text().to_string()];
        if self.layout.namespace {
            c.push(v.namespace.to_string());
        }
        let (name, age) = if v.is_object() {
            let name = if self.layout.kinds {
                format!("{}/{}", v.kind_ref(), v.name)
            } else {
                v.name.to_string()
            };
            let age = v
                .object
                .and_then(created)
                .map_or_else(|| "<unknown>".into(), |t| age::human(t, now));
            (name, age)
        } else {
            (dotted(v.resource, v.group), String::new())
        };
        c.extend([name, v.resource_version.to_string(), age]);
        if self.output == Output::Wide {
            let gvr = if v.group.is_empty() {
                format!("{}/{}", v.version, v.resource)
            } else {
                format!("{}/{}/{}", v.group, v.version, v.resource)
            };
            c.extend([v.uid.to_string(), gvr]);
        }
        c
    }

    /// The cells padded to the widest seen so far in each column (three
    /// spaces apart, as kubectl's tabwriter), without trailing blanks.
    /// Rows already printed stay as they were: a wider cell moves the
    /// columns after it from its row on.
    fn line(&mut self, cells: &[String]) -> String {
        let mut line = String::new();
        for (i, cell) in cells.iter().enumerate() {
            let len = cell.chars().count();
            self.widths[i] = self.widths[i].max(len);
            line.push_str(cell);
            if i + 1 < cells.len() {
                line.extend(std::iter::repeat_n(' ', self.widths[i] - len + 3));
            }
        }
        line.truncate(line.trim_end().len());
        line
    }
}

/// `metadata.creationTimestamp`, read without building the object.
fn created(object: &[u8]) -> Option<SystemTime> {
    #[derive(serde::Deserialize)]
    struct Object<'a> {
        #[serde(borrow)]
        metadata: Option<Meta<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct Meta<'a> {
        #[serde(rename = "creationTimestamp", borrow)]
        created: Option<&'a str>,
    }
    let o: Object = serde_json::from_slice(object).ok()?;
    age::parse_timestamp(o.metadata?.created?)
}

/// The fields of an entry, in the documented order (the object apart).
fn fields(v: &View) -> Vec<(&'static str, Value)> {
    let mut f: Vec<(&'static str, Value)> = vec![
        ("change", v.change.as_str().into()),
        ("group", v.group.into()),
        ("version", v.version.into()),
        ("resource", v.resource.into()),
        ("kind", v.kind.into()),
    ];
    if v.is_object() {
        f.push(("namespace", v.namespace.into()));
        f.push(("name", v.name.into()));
        f.push(("uid", v.uid.into()));
    } else if v.change == Change::Stale && !v.namespace.is_empty() {
        // Which namespace's stream is not current.
        f.push(("namespace", v.namespace.into()));
    } else if matches!(v.change, Change::Leading | Change::Following) {
        // The Lease, this replica's identity in it, and who holds it now.
        f.push(("namespace", v.namespace.into()));
        f.push(("name", v.name.into()));
        f.push(("identity", v.uid.into()));
        if let Some(holder) = v.holder {
            f.push(("holder", holder.into()));
        }
    }
    if v.change != Change::Error {
        f.push(("resourceVersion", v.resource_version.into()));
    }
    if let Some(term) = v.term {
        // For fencing: a store shared by replicas refuses a lower term.
        f.push(("term", term.into()));
    }
    if v.inferred {
        f.push(("inferred", true.into()));
    }
    if let Some((code, reason, message)) = v.error {
        f.push((
            "error",
            serde_json::json!({"code": code, "reason": reason, "message": message}),
        ));
    }
    f
}

/// One JSON object, keys in the documented order; the object is spliced in
/// as received, not re-serialised.
pub fn json_line(v: &View, with_object: bool) -> String {
    let mut line = String::from("{");
    for (i, (key, value)) in fields(v).iter().enumerate() {
        if i > 0 {
            line.push(',');
        }
        line.push_str(&Value::from(*key).to_string());
        line.push(':');
        line.push_str(&value.to_string());
    }
    if let (true, Some(obj)) = (with_object, v.object) {
        line.push_str(",\"object\":");
        line.push_str(&String::from_utf8_lossy(obj));
    }
    line.push('}');
    line
}

/// One YAML document (`---` first) with the fields of [`json_line`]. An
/// object JSON cannot hold as a value (nested deeper than serde_json's 128
/// levels) comes as its JSON text.
pub fn yaml_document(v: &View, with_object: bool) -> String {
    let mut doc = Hash::new();
    for (key, value) in fields(v) {
        doc.insert(Yaml::String(key.into()), yaml(&value));
    }
    if let (true, Some(obj)) = (with_object, v.object) {
        let value = serde_json::from_slice::<Value>(obj).map_or_else(
            |_| Yaml::String(String::from_utf8_lossy(obj).into()),
            |o| yaml(&o),
        );
        doc.insert(Yaml::String("object".into()), value);
    }
    let mut text = String::new();
    yaml_rust2::YamlEmitter::new(&mut text)
        .dump(&Yaml::Hash(doc))
        .expect("writing to a String cannot fail");
    text
}

fn yaml(v: &Value) -> Yaml {
    match v {
        Value::Null => Yaml::Null,
        Value::Bool(b) => Yaml::Boolean(*b),
        Value::Number(n) => n
            .as_i64()
            .map_or_else(|| Yaml::Real(n.to_string()), Yaml::Integer),
        Value::String(s) => Yaml::String(s.clone()),
        Value::Array(a) => Yaml::Array(a.iter().map(yaml).collect()),
        Value::Object(m) => Yaml::Hash(
            m.iter()
                .map(|(k, v)| (Yaml::String(k.clone()), yaml(v)))
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    const POD: &str = r#"{"metadata":{"name":"p1","namespace":"a","creationTimestamp":"2026-12-02T07:47:45Z","labels":{"version":"1"}},"spec":{"n":[1,2.5,null,true]}}"#;

    fn pod() -> View<'static> {
        View {
            change: Change::Add,
            inferred: false,
            group: "",
            version: "v1",
            resource: "pods",
            kind: "Pod",
            namespace: "a",
            name: "p1",
            uid: "u-1",
            resource_version: "42",
            error: None,
            object: Some(POD.as_bytes()),
            term: None,
            holder: None,
        }
    }

    fn synced() -> View<'static> {
        View {
            change: Change::Synced,
            name: "",
            namespace: "",
            uid: "",
            resource_version: "57",
            object: None,
            ..pod()
        }
    }

    fn forbidden() -> View<'static> {
        View {
            change: Change::Error,
            group: "apps",
            resource: "deployments",
            kind: "Deployment",
            resource_version: "",
            error: Some((403, "Forbidden", "no \"way\"")),
            ..synced()
        }
    }

    fn deployment() -> View<'static> {
        View {
            change: Change::Delete,
            inferred: true,
            group: "apps",
            resource: "deployments",
            kind: "Deployment",
            name: "web-server",
            resource_version: "1234567",
            object: Some(br#"{"metadata":{"name":"web-server"}}"#),
            ..pod()
        }
    }

    /// 2 minutes 5 seconds after POD's creationTimestamp.
    fn now() -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(1_796_197_665 + 125)
    }

    fn print(p: &mut Printer, views: &[View]) -> String {
        let mut out = Vec::new();
        for v in views {
            p.print(&mut out, v, now()).unwrap();
        }
        p.release(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn json_lines_keep_the_documented_keys_in_order() {
        assert_eq!(
            json_line(&pod(), false),
            r#"{"change":"Add","group":"","version":"v1","resource":"pods","kind":"Pod","namespace":"a","name":"p1","uid":"u-1","resourceVersion":"42"}"#
        );
        assert_eq!(
            json_line(&pod(), true),
            format!(
                r#"{{"change":"Add","group":"","version":"v1","resource":"pods","kind":"Pod","namespace":"a","name":"p1","uid":"u-1","resourceVersion":"42","object":{POD}}}"#
            )
        );
        assert_eq!(
            json_line(&synced(), true),
            r#"{"change":"Synced","group":"","version":"v1","resource":"pods","kind":"Pod","resourceVersion":"57"}"#
        );
        assert_eq!(
            json_line(&forbidden(), false),
            r#"{"change":"Error","group":"apps","version":"v1","resource":"deployments","kind":"Deployment","error":{"code":403,"reason":"Forbidden","message":"no \"way\""}}"#
        );
        assert!(json_line(&deployment(), false)
            .ends_with(r#""resourceVersion":"1234567","inferred":true}"#));
    }

    #[test]
    fn under_leader_election_the_term_and_the_holder_are_fields() {
        let lease = View {
            change: Change::Leading,
            group: "coordination.k8s.io",
            resource: "leases",
            kind: "Lease",
            namespace: "ns",
            name: "feed",
            uid: "me",
            resource_version: "",
            object: None,
            term: Some(5),
            holder: Some("me"),
            ..pod()
        };
        assert_eq!(
            json_line(&lease, true),
            r#"{"change":"Leading","group":"coordination.k8s.io","version":"v1","resource":"leases","kind":"Lease","namespace":"ns","name":"feed","identity":"me","holder":"me","resourceVersion":"","term":5}"#
        );
        // Following has no term; nobody holding the Lease, no holder.
        let following = View {
            change: Change::Following,
            term: None,
            holder: None,
            ..lease
        };
        assert!(json_line(&following, false).ends_with(r#""identity":"me","resourceVersion":""}"#));
        let add = View {
            term: Some(0),
            ..pod()
        };
        assert!(json_line(&add, false).ends_with(r#""resourceVersion":"42","term":0}"#));
        assert!(yaml_document(&add, false).ends_with("resourceVersion: \"42\"\nterm: 0"));
    }

    #[test]
    fn yaml_documents_hold_the_same_fields() {
        assert_eq!(
            yaml_document(&pod(), true),
            "---
change: Add
group: \"\"
version: v1
resource: pods
kind: Pod
namespace: a
name: p1
uid: u-1
resourceVersion: \"42\"
object:
  metadata:
    name: p1
    namespace: a
    creationTimestamp: \"2026-12-02T07:47:45Z\"
    labels:
      version: \"1\"
  spec:
    \"n\":
      - 1
      - 2.5
      - ~
      - true"
        );
        assert_eq!(
            yaml_document(&forbidden(), false),
            "---
change: Error
group: apps
version: v1
resource: deployments
kind: Deployment
error:
  code: 403
  reason: Forbidden
  message: \"no \\\"way\\\"\""
        );
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        let v = View {
            object: Some(deep.as_bytes()),
            ..pod()
        };
        assert!(yaml_document(&v, true).ends_with(&format!("object: \"{deep}\"")));
    }

    #[test]
    fn names_as_kubectl_writes_them() {
        let mut p = Printer::new(Output::Name, false, true, Layout::default());
        assert_eq!(
            print(&mut p, &[pod(), synced(), forbidden(), deployment()]),
            "pod/p1\ndeployment.apps/web-server\n"
        );
        let unknown_kind = View { kind: "", ..pod() };
        assert_eq!(print(&mut p, &[unknown_kind]), "pods/p1\n");
    }

    #[test]
    fn a_table_aligns_what_it_held_then_grows_its_columns() {
        let mut p = Printer::new(Output::Table, false, true, Layout::default());
        let mut out = Vec::new();
        for v in [pod(), forbidden(), synced()] {
            assert!(p.print(&mut out, &v, now()).unwrap() != (v.change == Change::Error));
        }
        assert!(out.is_empty(), "held");
        p.release(&mut out).unwrap();
        p.print(&mut out, &deployment(), now()).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "\
CHANGE   NAME   RESOURCEVERSION   AGE
Add      p1     42                2m5s
Synced   pods   57
Delete(inferred)   web-server   1234567           <unknown>
"
        );
        let mut p = Printer::new(Output::Table, false, true, Layout::default());
        let mut out = Vec::new();
        p.release(&mut out).unwrap();
        assert!(out.is_empty(), "no header without a row");
        for _ in 0..HOLD_ROWS {
            p.print(&mut out, &pod(), now()).unwrap();
        }
        assert_eq!(
            String::from_utf8(out).unwrap().lines().count(),
            HOLD_ROWS + 1
        );
        let mut p = Printer::new(
            Output::Wide,
            false,
            false,
            Layout {
                namespace: true,
                kinds: true,
            },
        );
        assert_eq!(
            print(&mut p, &[pod(), deployment(), synced()]),
            "\
Add                a           pod/p1                       42                2m5s        u-1   v1/pods
Delete(inferred)   a           deployment.apps/web-server   1234567           <unknown>   u-1   apps/v1/deployments
Synced                         pods                         57                                  v1/pods
"
        );
    }
}
