//! The full state by paged LIST, for servers without watch-list: each page
//! read item by item as it arrives (a page of any size costs one item of
//! memory), the items delivered as watch-list's initial events would be,
//! then Synced at the last page's resourceVersion.

use crate::objects::reuse::Reuse;
use std::sync::atomic::Ordering;

use crate::api::end::End;
use crate::entry::Reason;
use crate::resource::ResourceSpec;
use crate::stream::decoded::Decoded;
use crate::stream::Parts;
use crate::wire::decode::{self, DecodeError, EventType};
use crate::wire::frames::{ListError, ListItem};
use crate::wire::request::{self, Asking};

/// The full state by paged LIST.
pub(crate) fn list(p: &mut Parts) -> End {
    if !p.claim_sync() {
        return End::Stopped;
    }
    let mut token: Option<String> = None;
    let settings = p.client.settings().clone();
    let max = settings.max_frame_bytes;
    // The object walks' memory, from item to item.
    let mut reuse = Reuse::default();
    loop {
        // One answer, not pages, once a continue token expired.
        let limit = if p.course().unpaged() {
            0
        } else {
            settings.page_size
        };
        let path = match token.as_deref() {
            Some(t) => request::list_page(&p.target.collection(), limit, Some(t), None),
            None => {
                request::list_page(&p.target.collection(), limit, None, p.course().cache_read())
            }
        };
        let resp = match p.get(&path, Asking::List, None) {
            Ok(r) => r,
            // A later page's 410: its continue token expired, not the history
            // the full state stands on.
            Err(End::Expired) if token.is_some() => return End::TokenExpired,
            Err(end) => return end,
        };
        let mut items = match p.client.items(resp) {
            Ok(i) => i,
            Err(end) => return end,
        };
        let mut counted = 0;
        loop {
            p.received(items.bytes() - counted);
            counted = items.bytes();
            let item = match items.next_walked(p.edits()) {
                Ok(Some((ListItem::Item(b), Some(found)))) => walked_item(b, found),
                Ok(Some((ListItem::Item(b), None))) => {
                    list_item(p.target, p.edits(), &p.resource().kind, b, &mut reuse)
                }
                Ok(Some((ListItem::TooLarge(n), _))) => Err(DecodeError {
                    reason: Reason::FrameTooLarge,
                    message: format!(
                        "a list item of {n} bytes exceeds max_frame_bytes ({max}); skipped"
                    ),
                    namespace: None,
                    name: None,
                    meta: None,
                }),
                Ok(Some((ListItem::Unknown(message), _))) => match p.schema_miss(&message) {
                    Some(end) => return p.end(end),
                    None => Err(invalid_protobuf(message)),
                },
                Ok(Some((ListItem::Invalid(message), _))) => Err(invalid_protobuf(message)),
                Ok(None) => break,
                Err(_) if p.client.stop().is_set() => return End::Stopped,
                Err(ListError::Io(e)) => {
                    let end = End::Broke(format!("reading a list page failed: {e}"));
                    return p.end(end);
                }
                Err(ListError::Unknown(m)) => {
                    let end = p
                        .schema_miss(&m)
                        .unwrap_or_else(|| End::Retry(format!("bad list page: {m}"), None));
                    return p.end(end);
                }
                Err(ListError::Invalid(m)) => {
                    let end = End::Retry(format!("bad list page: {m}"), None);
                    return p.end(end);
                }
            };
            p.counters().events.fetch_add(1, Ordering::Relaxed);
            match item {
                Ok((meta, bytes)) => {
                    let object = match p.shaped(bytes, &meta) {
                        Ok(o) => o,
                        Err(end) => return end,
                    };
                    p.push(Decoded::new(EventType::Added, meta, &[], object, true));
                    if p.due(true) {
                        if let Some(end) = p.flush() {
                            return end;
                        }
                    }
                }
                Err(e) => {
                    if let Err(end) = p.skip(e, &[]) {
                        return end;
                    }
                }
            }
        }
        p.received(items.bytes() - counted);
        if let Some(end) = p.flush() {
            return end;
        }
        let Some(meta) = items.meta().cloned() else {
            return End::Retry("a list page without metadata".into(), None);
        };
        p.listed_shard_info(meta.shard_selector.as_deref());
        match meta.continue_token {
            Some(t) => token = Some(t),
            None => {
                if let Err(m) = decode::checked_rv(meta.resource_version.as_str()) {
                    return End::Retry(format!("bad list page: {m}"), None);
                }
                if !p.listed(meta.resource_version) {
                    return End::Stopped;
                }
                return End::Listed;
            }
        }
    }
}

fn invalid_protobuf(message: String) -> DecodeError {
    DecodeError {
        reason: Reason::InvalidProtobuf,
        message,
        namespace: None,
        name: None,
        meta: None,
    }
}

/// A protobuf LIST item its writer checked and edited in one pass
/// (`kind` and `apiVersion` written first), and where its metadata is.
fn walked_item(
    item: &[u8],
    found: crate::objects::edits::Found,
) -> Result<(decode::ObjectMeta<'static>, Vec<u8>), DecodeError> {
    let meta = decode::walked_object(item, found)?.into_owned();
    Ok((meta, item.to_vec()))
}

/// A LIST item, checked and edited as a watch event's object is, with the
/// `kind` and `apiVersion` LIST items lack put back (`kind`: the
/// resource's, when known), so that an object looks the same whichever way
/// it arrived.
fn list_item(
    target: &ResourceSpec,
    edits: crate::objects::edits::Edits,
    kind: &str,
    item: &[u8],
    reuse: &mut Reuse,
) -> Result<(decode::ObjectMeta<'static>, Vec<u8>), DecodeError> {
    let text = std::str::from_utf8(item).map_err(|e| DecodeError {
        reason: decode::INVALID_OBJECT,
        message: format!(
            "a list item is not UTF-8 (invalid byte after {} bytes)",
            e.valid_up_to()
        ),
        namespace: None,
        name: None,
        meta: None,
    })?;
    let (meta, edited) = decode::object_walk(text, edits, reuse)?;
    let meta = meta.into_owned();
    let body = edited.as_deref().unwrap_or(item);
    let add_kind = meta.kind.is_none() && !kind.is_empty();
    let Some(rest) = body.strip_prefix(b"{").filter(|_| add_kind) else {
        return Ok((meta, edited.unwrap_or_else(|| item.to_vec())));
    };
    let mut buf = Vec::with_capacity(body.len() + 64);
    buf.extend_from_slice(b"{\"kind\":");
    buf.extend_from_slice(serde_json::to_string(kind).unwrap_or_default().as_bytes());
    buf.extend_from_slice(b",\"apiVersion\":");
    buf.extend_from_slice(
        serde_json::to_string(&target.api_version())
            .unwrap_or_default()
            .as_bytes(),
    );
    if !rest.trim_ascii_start().starts_with(b"}") {
        buf.push(b',');
    }
    buf.extend_from_slice(rest);
    Ok((meta, buf))
}
