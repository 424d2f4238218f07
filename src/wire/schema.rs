//! The built-in kinds' protobuf schema with their JSON rules, as
//! `schema/gen.go` read them by reflection from the Go types of
//! k8s.io/api v0.36.3 (`schema/schema.txt`, generated, committed): for each
//! struct its fields in declaration order (the order `encoding/json`
//! writes), each with its JSON name, protobuf field number, type and shape.
//! Read once, on first use. Pure.

use std::sync::OnceLock;

/// The generated schema.
const TEXT: &str = include_str!("schema/schema.txt");

/// A field's value type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ty {
    Str,
    Bool,
    I32,
    I64,
    U32,
    U64,
    /// `[]byte`: base64.
    Bytes,
    /// `metav1.Time`: RFC 3339 in seconds, `null` when zero.
    Time,
    /// `metav1.MicroTime`: RFC 3339 in microseconds, `null` when zero.
    MicroTime,
    /// `metav1.Duration`: Go's `time.Duration` text.
    Duration,
    /// `resource.Quantity`: its canonical string.
    Quantity,
    /// `intstr.IntOrString`: a number or a string.
    IntOrString,
    /// `runtime.RawExtension`: its raw JSON.
    Raw,
    /// `metav1.FieldsV1`: its raw JSON.
    FieldsV1,
    /// `metav1.ObjectMeta` (`metav1`'s).
    ObjectMeta,
    /// A struct of the schema, by index.
    Msg(u32),
}

impl Ty {
    /// Whether `omitempty` can leave a value of this type out (Go never
    /// counts a struct as empty).
    pub(crate) fn can_be_empty(self) -> bool {
        matches!(
            self,
            Ty::Str | Ty::Bool | Ty::I32 | Ty::I64 | Ty::U32 | Ty::U64 | Ty::Bytes
        )
    }
}

/// How a field holds its type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    One,
    /// A pointer: absent is `nil`.
    Pointer,
    List,
    /// A map with string keys (protobuf entries: key 1, value 2).
    Map,
    /// An embedded struct whose fields are written in this object's.
    Inline,
}

/// One field of a struct.
#[derive(Debug)]
pub(crate) struct Field {
    /// The JSON key (printable ASCII that needs no escape: the parse
    /// checks), a slice of the schema's text.
    pub(crate) key: &'static str,
    pub(crate) ty: Ty,
    pub(crate) shape: Shape,
    pub(crate) omitempty: bool,
    /// For a struct whose own `kind` and `apiVersion` the apiserver always
    /// sets (protobuf does not carry them): `"kind":"…","apiVersion":"…"`.
    pub(crate) type_meta: Option<Box<[u8]>>,
}

/// One struct: fields in declaration order, and their positions by field
/// number.
#[derive(Debug, Default)]
pub(crate) struct Msg {
    pub(crate) name: &'static str,
    pub(crate) fields: Vec<Field>,
    by_number: Vec<(u32, u16)>,
}

impl Msg {
    /// The position in `fields` of field `number`.
    pub(crate) fn position(&self, number: u32) -> Option<usize> {
        self.by_number
            .binary_search_by_key(&number, |&(n, _)| n)
            .ok()
            .map(|i| usize::from(self.by_number[i].1))
    }

    /// The field number of the field at `position` in `fields`.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn number(&self, position: usize) -> Option<u32> {
        self.by_number
            .iter()
            .find(|&&(_, p)| usize::from(p) == position)
            .map(|&(n, _)| n)
    }
}

/// The whole schema.
#[derive(Debug, Default)]
pub(crate) struct Schema {
    /// (apiVersion, kind, struct), sorted.
    kinds: Vec<(&'static str, &'static str, u32)>,
    pub(crate) msgs: Vec<Msg>,
}

impl Schema {
    /// The struct of kind `kind` of `api_version` (`v1`, `apps/v1`).
    pub(crate) fn kind(&self, api_version: &[u8], kind: &[u8]) -> Option<u32> {
        let (v, k) = (
            std::str::from_utf8(api_version).ok()?,
            std::str::from_utf8(kind).ok()?,
        );
        let i = self
            .kinds
            .binary_search_by(|&(kv, kk, _)| (kv, kk).cmp(&(v, k)))
            .ok()?;
        Some(self.kinds[i].2)
    }

    pub(crate) fn msg(&self, i: u32) -> &Msg {
        &self.msgs[i as usize]
    }

    /// Every kind: (apiVersion, kind, struct).
    #[cfg(test)]
    pub(crate) fn kinds(&self) -> &[(&'static str, &'static str, u32)] {
        &self.kinds
    }
}

/// The schema, read on first use.
pub(crate) fn schema() -> &'static Schema {
    static SCHEMA: OnceLock<Schema> = OnceLock::new();
    SCHEMA.get_or_init(|| parse(TEXT).unwrap_or_default())
}

/// Whether tattler can write the JSON of kind `kind` of group `group`,
/// version `version` from protobuf.
pub(crate) fn knows(group: &str, version: &str, kind: &str) -> bool {
    let api_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    schema()
        .kind(api_version.as_bytes(), kind.as_bytes())
        .is_some()
}

/// Reads the schema's text; an error names the line.
fn parse(text: &'static str) -> Result<Schema, String> {
    let mut s = Schema::default();
    for (n, line) in text.lines().enumerate() {
        let bad = || format!("schema line {}", n + 1);
        let words: Vec<&str> = line.split(' ').collect();
        match words.as_slice() {
            ["#", ..] | [""] => {}
            ["K", gv, kind, msg] => {
                let msg = msg.parse().map_err(|_| bad())?;
                s.kinds.push((gv, kind, msg));
            }
            ["M", index, name] => {
                if index.parse::<usize>().ok() != Some(s.msgs.len()) {
                    return Err(bad());
                }
                s.msgs.push(Msg {
                    name,
                    ..Msg::default()
                });
            }
            ["F", json, number, ty, flags, rest @ ..] => {
                let type_meta = match rest {
                    [] => None,
                    [carried] => {
                        let (v, k) = carried.rsplit_once('/').ok_or_else(bad)?;
                        let mut b = b"\"kind\":".to_vec();
                        crate::wire::go_json::string(&mut b, k.as_bytes());
                        b.extend_from_slice(b",\"apiVersion\":");
                        crate::wire::go_json::string(&mut b, v.as_bytes());
                        Some(b.into_boxed_slice())
                    }
                    _ => return Err(bad()),
                };
                let msg = s.msgs.last_mut().ok_or_else(bad)?;
                let ty = match *ty {
                    "s" => Ty::Str,
                    "b" => Ty::Bool,
                    "i32" => Ty::I32,
                    "i64" => Ty::I64,
                    "u32" => Ty::U32,
                    "u64" => Ty::U64,
                    "y" => Ty::Bytes,
                    "T" => Ty::Time,
                    "U" => Ty::MicroTime,
                    "D" => Ty::Duration,
                    "Q" => Ty::Quantity,
                    "I" => Ty::IntOrString,
                    "R" => Ty::Raw,
                    "F" => Ty::FieldsV1,
                    "O" => Ty::ObjectMeta,
                    m => Ty::Msg(
                        m.strip_prefix('m')
                            .and_then(|i| i.parse().ok())
                            .ok_or_else(bad)?,
                    ),
                };
                let has = |c| flags.contains(c);
                let shape = if has('n') {
                    Shape::Inline
                } else if has('l') {
                    Shape::List
                } else if has('k') {
                    Shape::Map
                } else if has('p') {
                    Shape::Pointer
                } else {
                    Shape::One
                };
                let plain =
                    |c: char| c.is_ascii_graphic() && !matches!(c, '"' | '\\' | '<' | '>' | '&');
                if json.is_empty() || !json.chars().all(plain) {
                    return Err(bad());
                }
                let number: u32 = number.parse().map_err(|_| bad())?;
                let position = u16::try_from(msg.fields.len()).map_err(|_| bad())?;
                msg.by_number.push((number, position));
                msg.fields.push(Field {
                    key: json,
                    ty,
                    shape,
                    omitempty: has('o'),
                    type_meta,
                });
            }
            _ => return Err(bad()),
        }
    }
    // Messages refer only to earlier ones (the generator writes a struct
    // after every struct it holds): no cycle, so writing one recurses no
    // deeper than the schema.
    for (i, m) in s.msgs.iter_mut().enumerate() {
        m.by_number.sort_unstable();
        for f in &m.fields {
            if let Ty::Msg(j) = f.ty {
                if j as usize >= i {
                    return Err(format!("schema message {i} refers to {j}"));
                }
            }
        }
    }
    s.kinds.sort_unstable();
    if s.kinds
        .windows(2)
        .any(|w| (w[0].0, w[0].1) == (w[1].0, w[1].1))
    {
        return Err("a kind given twice".into());
    }
    if s.kinds.iter().any(|&(_, _, k)| k as usize >= s.msgs.len()) {
        return Err("a kind without its message".into());
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generated_schema_reads_and_knows_the_built_in_kinds() {
        let s = parse(TEXT).unwrap();
        assert!(s.kinds.len() >= 140, "{}", s.kinds.len());
        for (gv, kind) in [
            ("v1", "Pod"),
            ("v1", "Secret"),
            ("apps/v1", "Deployment"),
            ("batch/v1", "CronJob"),
            ("rbac.authorization.k8s.io/v1", "ClusterRole"),
            ("coordination.k8s.io/v1", "Lease"),
            ("events.k8s.io/v1", "Event"),
        ] {
            assert!(
                s.kind(gv.as_bytes(), kind.as_bytes()).is_some(),
                "{gv} {kind}"
            );
        }
        let pod = s.msg(s.kind(b"v1", b"Pod").unwrap());
        let keys: Vec<String> = pod.fields.iter().map(|f| f.key.to_string()).collect();
        assert_eq!(keys, ["metadata", "spec", "status"]);
        assert_eq!(pod.position(3), Some(2));
        assert!(s.kind(b"v1", b"Widget").is_none());
        let spec = s
            .msgs
            .iter()
            .find(|m| m.name == "k8s.io/api/apps/v1.StatefulSetSpec")
            .unwrap();
        let templates = spec.fields.iter().find(|f| f.type_meta.is_some()).unwrap();
        assert_eq!(templates.key, "volumeClaimTemplates");
        assert_eq!(
            templates.type_meta.as_deref().unwrap(),
            b"\"kind\":\"PersistentVolumeClaim\",\"apiVersion\":\"v1\""
        );
    }

    #[test]
    fn a_bad_schema_is_refused_by_line() {
        assert_eq!(parse("M 1 x").unwrap_err(), "schema line 1");
        assert_eq!(
            parse("M 0 a\nF x 1 m0 -").unwrap_err(),
            "schema message 0 refers to 0"
        );
        assert_eq!(
            parse("K v1 Pod 3").unwrap_err(),
            "a kind without its message"
        );
    }
}
