//! The elector's checkpoint kept in the cluster, the I/O: read from its
//! ConfigMap when the Lease is taken, written while leading (when the
//! consumer has taken every entry) and on close. What the ConfigMap holds,
//! both ways, is `checkpoint_configmap`'s (pure); when to do each, the
//! Lease loop's (`elector`).

use std::time::{Duration, Instant};

use super::Elector;
use crate::checkpoint::Checkpoint;
use crate::config::InClusterCheckpoint;
use crate::coordination::checkpoint_configmap::{self, KeptMap, TERM_ANNOTATION};
use crate::coordination::lease::{self, SHARDS_ANNOTATION};
use crate::coordination::lease_shares::ShardMap;
use crate::entry::{ErrorInfo, Reason, Resource};

/// How soon a periodic checkpoint is tried again when entries were waiting
/// in the channel or a delivery was under way.
const QUIET_RETRY: Duration = Duration::from_millis(100);

impl Elector {
    /// The checkpoint in the cluster, to resume from, read from `began`
    /// on, before the Lease is taken. A read that gets no answer, or a
    /// failure the server may recover from (5xx, 429), is tried again until
    /// half the renew deadline has passed; then `Err` (why): the caller
    /// does not take the Lease rather than start from nothing. `Ok(None)`: there is
    /// none, or it is damaged or refused for good (both said in an Error
    /// entry): the streams start from nothing.
    pub(super) fn load_checkpoint(&mut self, began: Instant) -> Result<Option<Checkpoint>, String> {
        self.merged_from = None;
        let Some(k) = self.kept.clone() else {
            return Ok(None);
        };
        let path = configmap_path(&k);
        let give_up = began + self.election.renew_deadline / 2;
        let mut pause = Duration::from_millis(100);
        let (code, body) = loop {
            let why = match self.call("GET", &path, None, self.request_timeout()) {
                Ok((code, body)) if !matches!(code, 429 | 500..=599) => break (code, body),
                Ok((code, _)) => format!("HTTP {code}"),
                Err(e) => e,
            };
            self.failed(&format!("reading the checkpoint: {why}"));
            if Instant::now() + pause >= give_up {
                return Err(format!(
                    "the checkpoint {}/{} could not be read ({why})",
                    k.namespace, k.name
                ));
            }
            if self.sleep_until(Instant::now() + pause) {
                return Err("stopped".into());
            }
            pause = (pause * 2).min(Duration::from_secs(1));
        };
        match code {
            200 => {}
            404 => {
                self.configmap = Some(None);
                return self.other_map_checkpoint(None);
            }
            _ => {
                let e = self.refused("configmaps", code, &body);
                self.failed(&format!("reading the checkpoint: {e}"));
                if code != 403 {
                    // A 403 is said by `refused`, with the RBAC it needs.
                    let why = format!(
                        "the checkpoint {}/{} could not be read ({e}): starting from nothing",
                        k.namespace, k.name
                    );
                    self.error(
                        configmap_resource(),
                        ErrorInfo::ours(Reason::Checkpoint, 0, why, false),
                    );
                }
                return Ok(None);
            }
        }
        self.said_forbidden_configmap = false;
        let Some(read) = checkpoint_configmap::parse_configmap(&body) else {
            self.damaged(&k, "not a ConfigMap".into());
            return Ok(None);
        };
        let data = read.checkpoint.clone();
        let own_count = kept_count(&read);
        self.configmap = Some(Some(read.clone()));
        if own_count.is_some_and(|n| n != self.map.count) {
            return self.other_map_checkpoint(Some(&read));
        }
        let Some(data) = data else {
            return Ok(None);
        };
        match Checkpoint::from_bytes(&data) {
            Ok(cp) => {
                log::info!(
                    "leader election: resuming from the checkpoint {}/{} ({} resources, {} objects)",
                    k.namespace,
                    k.name,
                    cp.resources(),
                    cp.objects()
                );
                self.written = Some(data);
                Ok(Some(cp))
            }
            Err(e) => {
                self.damaged(&k, e.to_string());
                Ok(None)
            }
        }
    }

    /// After a rollout that changed `shards`, the checkpoints of the other
    /// shard map, merged for this Lease's streams
    /// ([`Checkpoint::merged_for`]): nothing any old shard's consumer was
    /// told is lost to the new map. `own` is this Lease's ConfigMap as
    /// read (`None`: there is none); `Ok(None)` when no other map left
    /// checkpoints. Read once each; no answer is `Err`, as for our own.
    fn other_map_checkpoint(
        &mut self,
        own: Option<&KeptMap>,
    ) -> Result<Option<Checkpoint>, String> {
        let Some(base) = self.map.kept_base.clone() else {
            return Ok(None);
        };
        let mine = self.map.count;
        let theirs = match own.and_then(kept_count) {
            Some(n) => Some(n),
            None => {
                // Ours is not there: the other map's first, if it left one.
                let probes = [(mine > 1).then(|| base.clone()), Some(format!("{base}-0"))];
                let mut found = None;
                for name in probes.into_iter().flatten() {
                    if let Some(m) = self.read_configmap(&name)? {
                        found = Some(kept_count(&m).unwrap_or(1));
                        break;
                    }
                }
                found
            }
        };
        let Some(theirs) = theirs.filter(|&n| n != mine) else {
            return Ok(None);
        };
        let mut old = Vec::new();
        for name in ShardMap::names(&base, theirs) {
            let Some(m) = self.read_configmap(&name)? else {
                log::warn!("leader election: the checkpoint {name} of the {theirs}-shard map is not there: its objects start from nothing");
                continue;
            };
            match m.checkpoint.as_deref().map(Checkpoint::from_bytes) {
                Some(Ok(cp)) => old.push(cp),
                Some(Err(e)) => log::warn!("leader election: the checkpoint {name} is damaged ({e}): its objects start from nothing"),
                None => {}
            }
        }
        let merged = Checkpoint::merged_for(&self.named, &old);
        self.merged_from = Some(theirs);
        log::info!(
            "leader election: a rollout from {theirs} to {mine} shards: resuming from {} checkpoints of the old map ({} objects in this shard)",
            old.len(),
            merged.objects()
        );
        Ok(Some(merged))
    }

    /// Records the new term on the kept ConfigMap as read (its checkpoint
    /// unchanged), before the streams start: a Lease deleted and created
    /// again counts its terms on from it, so a term never goes back to one
    /// a fencing consumer has seen passed. Best effort: a failure is
    /// logged, and the term goes on. Nothing while a rollout's merge
    /// leaves the old map's names alone, or when there is no checkpoint in
    /// it yet (the first one written records the term).
    pub(super) fn record_term(&mut self) {
        let (Some(k), Some(Some(read)), Some(term)) = (
            self.kept.clone(),
            self.configmap.clone(),
            self.held.as_ref().map(|h| h.term.number()),
        ) else {
            return;
        };
        if self.merged_from.is_some() || checkpoint_configmap::recorded_term(&read) == Some(term) {
            return;
        }
        let Some(data) = read.checkpoint.clone() else {
            return;
        };
        let annotations = [
            (SHARDS_ANNOTATION, self.map.count.to_string()),
            (TERM_ANNOTATION, term.to_string()),
        ];
        let Some(body) = checkpoint_configmap::configmap_body(
            &k.namespace,
            &k.name,
            Some(&read),
            &data,
            &annotations,
        ) else {
            return;
        };
        match self.call(
            "PUT",
            &configmap_path(&k),
            Some(&body),
            self.request_timeout(),
        ) {
            Ok((200, answer)) => {
                self.configmap = checkpoint_configmap::parse_configmap(&answer).map(Some);
            }
            Ok((code, _)) => {
                self.configmap = None;
                log::warn!("leader election: the term could not be recorded on the checkpoint (HTTP {code})");
            }
            Err(e) => {
                self.configmap = None;
                log::warn!(
                    "leader election: the term could not be recorded on the checkpoint: {e}"
                );
            }
        }
    }

    /// Whether every Lease of this shard map is held under it (annotated
    /// with its count): each of its shards read the old map's checkpoints
    /// before it wrote its Lease, so the old map's names are free to write.
    fn new_map_held(&mut self) -> bool {
        let names = ShardMap::names(&self.map.lease_base, self.map.count);
        for name in names {
            let path = format!(
                "/apis/coordination.k8s.io/v1/namespaces/{}/leases/{name}",
                self.election.namespace
            );
            let held = match self.call("GET", &path, None, self.request_timeout()) {
                Ok((200, body)) => lease::parse_lease(&body).is_some_and(|l| {
                    !l.record.holder.is_empty() && lease::shards_of(&l) == Some(self.map.count)
                }),
                _ => false,
            };
            if !held {
                return false;
            }
        }
        true
    }

    /// One ConfigMap of the kept checkpoint's names, once: `Ok(None)` when
    /// it is not there; `Err` for no answer or a failure.
    fn read_configmap(&mut self, name: &str) -> Result<Option<KeptMap>, String> {
        let k = self.kept.as_ref().ok_or("no kept checkpoint")?;
        let path = format!("/api/v1/namespaces/{}/configmaps/{name}", k.namespace);
        match self.call("GET", &path, None, self.request_timeout()) {
            Ok((200, body)) => Ok(checkpoint_configmap::parse_configmap(&body)),
            Ok((404, _)) => Ok(None),
            Ok((code, _)) => Err(format!(
                "the checkpoint {name} could not be read (HTTP {code})"
            )),
            Err(e) => Err(format!("the checkpoint {name} could not be read ({e})")),
        }
    }

    fn damaged(&mut self, k: &InClusterCheckpoint, why: String) {
        log::error!(
            "leader election: the checkpoint {}/{} is damaged ({why}): starting from nothing",
            k.namespace,
            k.name
        );
        let why = format!(
            "the checkpoint {}/{} is damaged ({why}): starting from nothing",
            k.namespace, k.name
        );
        self.error(
            configmap_resource(),
            ErrorInfo::ours(Reason::Checkpoint, 0, why, false),
        );
    }

    /// Writes the checkpoint when the consumer has taken everything; how
    /// long until the next try. A term's first is written as soon as every
    /// stream has a resume point (synced), not first after the interval:
    /// until then a successor would resume from the last term's.
    pub(super) fn periodic_checkpoint(&mut self) -> Duration {
        let Some(interval) = self.kept.as_ref().map(|k| k.interval) else {
            return Duration::MAX / 4;
        };
        if self.merged_from.is_some() {
            if !self.new_map_held() {
                // Another new shard may still need the old map's names.
                return Duration::from_secs(1).min(interval);
            }
            self.merged_from = None;
        }
        let Some(mut cp) = self.streams.quiet_checkpoint() else {
            return QUIET_RETRY;
        };
        // Looked at after the consumer was seen done: an entry dropped
        // because the term's time ran out ended the term before the
        // consumer asked again, so a checkpoint that covers it is never
        // written (the elector steps down at its next look).
        if self.held.as_ref().is_none_or(|h| h.term.is_ended()) {
            return QUIET_RETRY;
        }
        if let Some(resumed) = self.held.as_ref().and_then(|h| h.resumed.as_ref()) {
            cp.keep_resume_points(resumed);
        }
        let first = self.held.as_ref().is_some_and(|h| !h.checkpointed);
        let due = self
            .held
            .as_ref()
            .is_some_and(|h| h.since.elapsed() >= interval);
        if first && !due && !cp.resumable() {
            return QUIET_RETRY;
        }
        if self.write_checkpoint(&cp) {
            if let Some(h) = &mut self.held {
                h.checkpointed = true;
            }
        }
        interval
    }

    /// A read or write of the checkpoint's ConfigMap that did not go
    /// through (an answer other than the ones the caller handles, or no
    /// answer): said, and the write given up until its next turn. False.
    fn checkpoint_refused(&mut self, answer: Result<(u16, Vec<u8>), String>) -> bool {
        let e = match answer {
            Ok((code, body)) => self.refused("configmaps", code, &body),
            Err(e) => e,
        };
        self.failed(&format!("writing the checkpoint: {e}"));
        false
    }

    /// Writes `cp` to the ConfigMap (unless unchanged, or too large);
    /// whether it is there now.
    pub(super) fn write_checkpoint(&mut self, cp: &Checkpoint) -> bool {
        let Some(k) = self.kept.clone() else {
            return false;
        };
        let bytes = cp.to_bytes();
        if self.written.as_ref() == Some(&bytes) {
            return true;
        }
        if bytes.len() > checkpoint_configmap::MAX_BYTES {
            if !self.said_too_large {
                self.said_too_large = true;
                let message = format!(
                    "the checkpoint ({} bytes, {} objects) is larger than a ConfigMap may hold ({} bytes): not written",
                    bytes.len(),
                    cp.objects(),
                    checkpoint_configmap::MAX_BYTES
                );
                log::error!("leader election: {message}");
                self.error(
                    configmap_resource(),
                    ErrorInfo::ours(Reason::Checkpoint, 0, message, false),
                );
            }
            return false;
        }
        self.said_too_large = false;
        for _ in 0..3 {
            if self.configmap.is_none() {
                match self.call("GET", &configmap_path(&k), None, self.request_timeout()) {
                    Ok((200, body)) => {
                        self.configmap = checkpoint_configmap::parse_configmap(&body).map(Some);
                    }
                    Ok((404, _)) => self.configmap = Some(None),
                    other => return self.checkpoint_refused(other),
                }
            }
            let read = self.configmap.clone().flatten();
            let mut annotations = vec![(SHARDS_ANNOTATION, self.map.count.to_string())];
            if let Some(h) = &self.held {
                annotations.push((TERM_ANNOTATION, h.term.number().to_string()));
            }
            let Some(body) = checkpoint_configmap::configmap_body(
                &k.namespace,
                &k.name,
                read.as_ref(),
                &bytes,
                &annotations,
            ) else {
                return false;
            };
            let (method, path) = match read {
                Some(_) => ("PUT", configmap_path(&k)),
                None => (
                    "POST",
                    format!("/api/v1/namespaces/{}/configmaps", k.namespace),
                ),
            };
            match self.call(method, &path, Some(&body), self.request_timeout()) {
                Ok((200 | 201, answer)) => {
                    self.said_forbidden_configmap = false;
                    self.configmap = checkpoint_configmap::parse_configmap(&answer).map(Some);
                    self.written = Some(bytes);
                    log::debug!(
                        "leader election: checkpoint written ({} objects)",
                        cp.objects()
                    );
                    return true;
                }
                // Changed or created meanwhile: read it again.
                Ok((409, _)) => self.configmap = None,
                // Deleted meanwhile: created again.
                Ok((404, _)) if method == "PUT" => self.configmap = Some(None),
                other => return self.checkpoint_refused(other),
            }
        }
        false
    }
}

/// The shard count a kept ConfigMap's writer recorded.
fn kept_count(m: &KeptMap) -> Option<u32> {
    m.object["metadata"]["annotations"][SHARDS_ANNOTATION]
        .as_str()?
        .parse()
        .ok()
}

/// The ConfigMap's path.
fn configmap_path(k: &InClusterCheckpoint) -> String {
    format!("/api/v1/namespaces/{}/configmaps/{}", k.namespace, k.name)
}

/// The resource of the elector's entries about the checkpoint.
pub(super) fn configmap_resource() -> Resource {
    Resource {
        group: String::new(),
        version: "v1".into(),
        resource: "configmaps".into(),
        kind: "ConfigMap".into(),
    }
}
