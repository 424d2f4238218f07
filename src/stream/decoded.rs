//! An object event decoded ahead of its verdict, holding its object and the
//! metadata strings tattler needs in one buffer: each string is kept where
//! it stands in the object's JSON when it is there as it reads (almost
//! always), so that a delivered entry is one allocation, its object's.

use std::borrow::Cow;

use crate::entry::Text;
use crate::resource_version::Rv;
use crate::wire::decode::{EventType, ObjectMeta};

/// An object event decoded ahead of its verdict.
pub(crate) struct Decoded {
    pub kind: EventType,
    /// `None`: not to be delivered (shaping dropped it, or it could not be
    /// shaped): an object the consumer has gets a Delete.
    pub object: Option<Vec<u8>>,
    /// The object's kind, kept only when the resource's is not known yet.
    object_kind: Option<Text>,
    namespace: Option<Text>,
    pub name: Text,
    pub uid: Text,
    pub resource_version: Rv,
}

impl Decoded {
    /// An event of `meta`, whose strings borrowed from `source` (the object
    /// as it was received) are kept where they stand in `object` (made from
    /// `source`, edited or shaped or not); `with_kind` keeps the object's kind.
    pub(crate) fn new(
        kind: EventType,
        meta: ObjectMeta<'_>,
        source: &[u8],
        object: Option<Vec<u8>>,
        with_kind: bool,
    ) -> Decoded {
        let held = |s: &str| Text::held(s, source, object.as_deref());
        Decoded {
            kind,
            object_kind: meta.kind.as_deref().filter(|_| with_kind).map(held),
            namespace: meta.namespace.as_deref().map(held),
            name: held(&meta.name),
            uid: held(&meta.uid),
            resource_version: meta.resource_version,
            object,
        }
    }

    /// The object's uid.
    pub(crate) fn uid(&self) -> &str {
        self.uid.get(self.object.as_deref())
    }

    /// The event's metadata, borrowed.
    pub(crate) fn meta(&self) -> ObjectMeta<'_> {
        let object = self.object.as_deref();
        let get = |t| Cow::Borrowed(Text::get(t, object));
        ObjectMeta {
            kind: self.object_kind.as_ref().map(get),
            namespace: self.namespace.as_ref().map(get),
            name: get(&self.name),
            uid: get(&self.uid),
            resource_version: self.resource_version.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta<'a>(source: &'a str, name: &'a str) -> ObjectMeta<'a> {
        let at = |s: &'a str| Cow::Borrowed(&source[source.find(s).unwrap()..][..s.len()]);
        ObjectMeta {
            kind: Some(at("Pod")),
            namespace: Some(at("shop")),
            name: if name.is_empty() {
                Cow::Borrowed("")
            } else {
                at(name)
            },
            uid: at("u-1"),
            resource_version: Rv::new("7"),
        }
    }

    const SRC: &str = r#"{"kind":"Pod","metadata":{"name":"web","namespace":"shop","uid":"u-1"}}"#;

    #[test]
    fn strings_standing_in_the_object_are_kept_there() {
        let d = Decoded::new(
            EventType::Added,
            meta(SRC, "web"),
            SRC.as_bytes(),
            Some(SRC.as_bytes().to_vec()),
            true,
        );
        assert!(matches!(d.name, Text::InObject(..)));
        assert!(matches!(d.uid, Text::InObject(..)));
        assert_eq!(d.meta(), meta(SRC, "web"));
    }

    #[test]
    fn strings_an_edit_moved_or_a_drop_took_are_copied() {
        // An edit before the name shifted it: the bytes there are not it.
        let edited = SRC.replace(r#""kind":"Pod""#, r#""kind":"Pods""#);
        let d = Decoded::new(
            EventType::Added,
            meta(SRC, "web"),
            SRC.as_bytes(),
            Some(edited.into_bytes()),
            false,
        );
        assert_eq!(d.name, Text::from("web"));
        assert_eq!(d.meta().name, "web");
        assert_eq!(d.meta().kind, None);
        // No object (shaping dropped it): every string its own.
        let d = Decoded::new(
            EventType::Deleted,
            meta(SRC, ""),
            SRC.as_bytes(),
            None,
            true,
        );
        assert_eq!(d.uid, Text::from("u-1"));
        assert_eq!(d.name, Text::Empty);
        assert_eq!(d.meta(), meta(SRC, ""));
    }

    #[test]
    fn strings_not_borrowed_from_the_source_are_copied() {
        let owned = meta(SRC, "web");
        let copy = ObjectMeta {
            name: Cow::Owned(owned.name.to_string()),
            ..owned
        };
        let d = Decoded::new(
            EventType::Added,
            copy,
            SRC.as_bytes(),
            Some(SRC.as_bytes().to_vec()),
            true,
        );
        // Its own copy, or its place when the same bytes stand there: the text is the same.
        assert_eq!(d.meta().name, "web");
    }
}
