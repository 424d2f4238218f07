//! The elector's checkpoint kept in the cluster, the I/O: read from its
//! ConfigMap when the Lease is taken, written while leading (when the
//! consumer has taken every entry) and on close. What the ConfigMap holds,
//! both ways, is `checkpoint_configmap`'s (pure); when to do each, the
//! Lease loop's (`elector`).

use std::time::Duration;

use super::Elector;
use crate::checkpoint::Checkpoint;
use crate::config::InClusterCheckpoint;
use crate::coordination::checkpoint_configmap;
use crate::entry::{ErrorInfo, Reason, Resource};

/// How soon a periodic checkpoint is tried again when entries were waiting
/// in the channel or a delivery was under way.
const QUIET_RETRY: Duration = Duration::from_millis(100);

impl Elector {
    /// The checkpoint in the cluster, to resume from; `None` when there is
    /// none, or it cannot be read (then the streams start from nothing).
    pub(super) fn load_checkpoint(&mut self) -> Option<Checkpoint> {
        let k = self.kept.clone()?;
        let path = configmap_path(&k);
        let (code, body) = match self.call("GET", &path, None, self.request_timeout()) {
            Ok(answer) => answer,
            Err(e) => {
                self.failed(&format!("reading the checkpoint: {e}"));
                let why = format!(
                    "the checkpoint {}/{} could not be read ({e}): starting from nothing",
                    k.namespace, k.name
                );
                self.error(
                    configmap_resource(),
                    ErrorInfo::ours(Reason::Checkpoint, 0, why, false),
                );
                return None;
            }
        };
        match code {
            200 => {}
            404 => {
                self.configmap = Some(None);
                return None;
            }
            _ => {
                let e = self.refused("configmaps", code, &body);
                self.failed(&format!("reading the checkpoint: {e}"));
                return None;
            }
        }
        self.said_forbidden_configmap = false;
        let Some((rv, data)) = checkpoint_configmap::parse_configmap(&body) else {
            self.damaged(&k, "not a ConfigMap".into());
            return None;
        };
        self.configmap = Some(Some(rv));
        let data = data?;
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
                Some(cp)
            }
            Err(e) => {
                self.damaged(&k, e.to_string());
                None
            }
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
    /// long until the next try.
    pub(super) fn periodic_checkpoint(&mut self) -> Duration {
        let Some(interval) = self.kept.as_ref().map(|k| k.interval) else {
            return Duration::MAX / 4;
        };
        match self.streams.quiet_checkpoint() {
            Some(cp) => {
                self.write_checkpoint(&cp);
                interval
            }
            None => QUIET_RETRY,
        }
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
        for _ in 0..2 {
            if self.configmap.is_none() {
                match self.call("GET", &configmap_path(&k), None, self.request_timeout()) {
                    Ok((200, body)) => {
                        self.configmap =
                            checkpoint_configmap::parse_configmap(&body).map(|(rv, _)| Some(rv));
                    }
                    Ok((404, _)) => self.configmap = Some(None),
                    other => return self.checkpoint_refused(other),
                }
            }
            let rv = self.configmap.clone().flatten();
            let Some(body) =
                checkpoint_configmap::configmap_body(&k.namespace, &k.name, rv.as_deref(), &bytes)
            else {
                return false;
            };
            let (method, path) = match rv {
                Some(_) => ("PUT", configmap_path(&k)),
                None => (
                    "POST",
                    format!("/api/v1/namespaces/{}/configmaps", k.namespace),
                ),
            };
            match self.call(method, &path, Some(&body), self.request_timeout()) {
                Ok((200 | 201, answer)) => {
                    self.said_forbidden_configmap = false;
                    self.configmap =
                        checkpoint_configmap::parse_configmap(&answer).map(|(rv, _)| Some(rv));
                    self.written = Some(bytes);
                    log::debug!(
                        "leader election: checkpoint written ({} objects)",
                        cp.objects()
                    );
                    return true;
                }
                // Changed or created meanwhile: read it again, once.
                Ok((409, _)) => self.configmap = None,
                other => return self.checkpoint_refused(other),
            }
        }
        false
    }
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
