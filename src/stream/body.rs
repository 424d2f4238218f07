//! A response body opened by its Content-Type: JSON, or protobuf (asked for
//! by metadata-only specs) turned into the same JSON as it is read. The
//! stream reads either through one interface.

use std::io::Read;

use crate::access::client::Response;
use crate::stream::machine::End;
use crate::stream::Stream;
use crate::wire::frames::{FrameError, FrameReader, ListError, ListItem, ListMeta, ListReader};
use crate::wire::proto_frames::{ProtoFrameReader, ProtoListReader};

type Body = Box<dyn Read + Send>;

/// The media type of the apiserver's protobuf (`;stream=watch` on watches).
const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// Whether a response's Content-Type is the apiserver's protobuf.
pub(crate) fn is_protobuf(resp: &Response) -> bool {
    resp.header("Content-Type")
        .is_some_and(|t| t.trim().to_ascii_lowercase().starts_with(PROTOBUF))
}

/// A watch body's frames, each a JSON event.
pub(crate) enum Frames {
    Json(FrameReader<Body>),
    Proto(ProtoFrameReader<Body>),
}

impl Frames {
    pub(crate) fn next_frame(&mut self) -> Result<Option<&[u8]>, FrameError> {
        match self {
            Frames::Json(r) => r.next_frame(),
            Frames::Proto(r) => r.next_frame(),
        }
    }

    pub(crate) fn buffered(&mut self) -> bool {
        match self {
            Frames::Json(r) => r.buffered(),
            Frames::Proto(r) => r.buffered(),
        }
    }

    pub(crate) fn partial(&self) -> bool {
        match self {
            Frames::Json(r) => r.partial(),
            Frames::Proto(r) => r.partial(),
        }
    }

    pub(crate) fn bytes(&self) -> u64 {
        match self {
            Frames::Json(r) => r.bytes,
            Frames::Proto(r) => r.bytes(),
        }
    }
}

/// A LIST body's items, each a JSON object.
pub(crate) enum Items {
    Json(ListReader<Body>),
    Proto(ProtoListReader<Body>),
}

impl Items {
    pub(crate) fn next_item(&mut self) -> Result<Option<ListItem<'_>>, ListError> {
        match self {
            Items::Json(r) => r.next_item(),
            Items::Proto(r) => r.next_item(),
        }
    }

    pub(crate) fn meta(&self) -> Option<&ListMeta> {
        match self {
            Items::Json(r) => r.meta(),
            Items::Proto(r) => r.meta(),
        }
    }

    pub(crate) fn bytes(&self) -> u64 {
        match self {
            Items::Json(r) => r.bytes,
            Items::Proto(r) => r.bytes(),
        }
    }
}

impl Stream {
    /// A watch response's frames, read as its Content-Type says.
    pub(crate) fn frames(&self, resp: Response) -> Result<Frames, End> {
        let proto = is_protobuf(&resp);
        let body = self.body(resp)?;
        let max = self.settings.max_frame_bytes;
        Ok(if proto {
            Frames::Proto(ProtoFrameReader::new(body, max))
        } else {
            Frames::Json(FrameReader::new(body, max))
        })
    }

    /// A LIST response's items, read as its Content-Type says.
    pub(crate) fn items(&self, resp: Response) -> Result<Items, End> {
        let proto = is_protobuf(&resp);
        let body = self.body(resp)?;
        let max = self.settings.max_frame_bytes;
        Ok(if proto {
            Items::Proto(ProtoListReader::new(body, max))
        } else {
            Items::Json(ListReader::new(body, max))
        })
    }
}
