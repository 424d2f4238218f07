//! The full state by paged LIST, for servers without watch-list: each page
//! read item by item as it arrives (a page of any size costs one item of
//! memory), the items delivered as watch-list's initial events would be,
//! then Synced at the last page's resourceVersion.

use std::sync::atomic::Ordering;

use crate::stream::machine::End;
use crate::stream::sink::{Batch, Decoded};
use crate::stream::{Asking, Stream};
use crate::wire::decode::{self, DecodeError, EventType};
use crate::wire::frames::{ListError, ListItem};
use crate::wire::request;

impl Stream {
    pub(crate) fn list(&mut self) -> End {
        if !self.claim_sync() {
            return End::Stopped;
        }
        let mut token: Option<String> = None;
        let max = self.settings.max_frame_bytes;
        loop {
            let path = request::list_page(&self.spec, self.settings.page_size, token.as_deref());
            let resp = match self.get(&path, Asking::List, None) {
                Ok(r) => r,
                Err(end) => return end,
            };
            let mut items = match self.items(resp) {
                Ok(i) => i,
                Err(end) => return end,
            };
            let mut batch = Batch::default();
            let mut counted = 0;
            loop {
                self.counters
                    .bytes
                    .fetch_add(items.bytes() - counted, Ordering::Relaxed);
                counted = items.bytes();
                let item = match items.next_item() {
                    Ok(Some(ListItem::Item(b))) => self.list_item(b),
                    Ok(Some(ListItem::TooLarge(n))) => Err(DecodeError {
                        reason: crate::Reason::FrameTooLarge,
                        message: format!(
                            "a list item of {n} bytes exceeds max_frame_bytes ({max}); skipped"
                        ),
                        namespace: None,
                        name: None,
                        meta: None,
                    }),
                    Ok(Some(ListItem::Invalid(message))) => {
                        if let Some(end) = self.schema_miss(&message) {
                            return self.deliver(&mut batch, true).unwrap_or(end);
                        }
                        Err(DecodeError {
                            reason: crate::Reason::InvalidProtobuf,
                            message,
                            namespace: None,
                            name: None,
                            meta: None,
                        })
                    }
                    Ok(None) => break,
                    Err(_) if self.stop.is_set() => return End::Stopped,
                    Err(ListError::Io(e)) => {
                        let end = End::Broke(format!("reading a list page failed: {e}"));
                        return self.deliver(&mut batch, true).unwrap_or(end);
                    }
                    Err(ListError::Invalid(m)) => {
                        let end = self
                            .schema_miss(&m)
                            .unwrap_or_else(|| End::Retry(format!("bad list page: {m}"), None));
                        return self.deliver(&mut batch, true).unwrap_or(end);
                    }
                };
                self.counters.events.fetch_add(1, Ordering::Relaxed);
                match item {
                    Ok((meta, bytes)) => {
                        let object = match self.shaped(bytes, &meta, &mut batch, true) {
                            Ok(o) => o,
                            Err(end) => return end,
                        };
                        batch.push(Decoded {
                            kind: EventType::Added,
                            meta,
                            object,
                        });
                        if batch.full() {
                            if let Some(end) = self.deliver(&mut batch, true) {
                                return end;
                            }
                        }
                    }
                    Err(e) => {
                        if let Some(end) = self.deliver(&mut batch, true) {
                            return end;
                        }
                        self.skip(e, &[]);
                    }
                }
            }
            self.counters
                .bytes
                .fetch_add(items.bytes() - counted, Ordering::Relaxed);
            if let Some(end) = self.deliver(&mut batch, true) {
                return end;
            }
            let Some(meta) = items.meta().cloned() else {
                return End::Retry("a list page without metadata".into(), None);
            };
            match meta.continue_token {
                Some(t) => token = Some(t),
                None => {
                    if let Err(m) = decode::checked_rv(meta.resource_version.as_str()) {
                        return End::Retry(format!("bad list page: {m}"), None);
                    }
                    self.set_rv(meta.resource_version);
                    if !self.finish_sync() {
                        return End::Stopped;
                    }
                    return End::Listed;
                }
            }
        }
    }

    /// A LIST item, checked and edited as a watch event's object is, with the
    /// `kind` and `apiVersion` LIST items lack put back, so that an object
    /// looks the same whichever way it arrived.
    fn list_item(
        &self,
        item: &[u8],
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
        let (meta, edited) = decode::object_walk(text, self.edits)?;
        let meta = meta.into_owned();
        let body = edited.as_deref().unwrap_or(item);
        let add_kind = meta.kind.is_none() && !self.resource.kind.is_empty();
        let Some(rest) = body.strip_prefix(b"{").filter(|_| add_kind) else {
            return Ok((meta, edited.unwrap_or_else(|| item.to_vec())));
        };
        let mut buf = Vec::with_capacity(body.len() + 64);
        buf.extend_from_slice(b"{\"kind\":");
        buf.extend_from_slice(
            serde_json::to_string(&self.resource.kind)
                .unwrap_or_default()
                .as_bytes(),
        );
        buf.extend_from_slice(b",\"apiVersion\":");
        buf.extend_from_slice(
            serde_json::to_string(&self.spec.api_version())
                .unwrap_or_default()
                .as_bytes(),
        );
        if !rest.trim_ascii_start().starts_with(b"}") {
            buf.push(b',');
        }
        buf.extend_from_slice(rest);
        Ok((meta, buf))
    }
}
