//! Assembling a reader: [`Reader::open`] checks the configuration, builds
//! the registry and the channel, and starts what runs: the streams (or, with
//! leader election, one elector per Lease, which starts them), the relist
//! timer and the wildcards' discovery thread. The consumer's calls are in
//! `reader/mod.rs`; close (`Drop`) takes it apart there.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{bounded, Sender};

use super::registry::{Registry, Roster, Starter};
use super::relist::relist_timer;
use super::watchset::{dedup, sync_gates};
use super::wildcard::explore;
use super::{leader, threads, Reader, ReaderInfo};
use crate::access::transport::Transport;
use crate::api::settings::StreamSettings;
use crate::config::Config;
use crate::delivery::channel::{ChannelControl, Out};
use crate::error::Error;
use crate::resource::ResourceSpec;
use crate::sync::Mutex;

impl Reader {
    /// Checks the configuration and starts one thread per resource.
    ///
    /// With [`Config::leader_election`], it starts none: the elector thread
    /// (`tattler-elector`) sends [`Change::Following`](crate::Change::Following),
    /// and starts the streams once it holds the Lease, after
    /// [`Change::Leading`](crate::Change::Leading).
    ///
    /// Fails only on what can be judged without the network (a bad URL, an
    /// unreadable CA bundle, no resources). Server-side failures arrive later
    /// as retries, and as Error entries when retrying cannot help.
    ///
    /// ```no_run
    /// use kube_tattler::{Access, Config, Reader};
    /// fn main() -> Result<(), Box<dyn std::error::Error>> {
    ///     let reader = Reader::open(Config::new(Access::infer()?).watch(["pods"])?)?;
    ///     let first = reader.next()?;
    ///     Ok(())
    /// }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for a configuration that cannot work (no
    /// resources, a bad server URL, a tuning value out of range, an
    /// insecure setting together with a CA; the message names the field);
    /// [`Error::Tls`] for a CA bundle or client certificate that cannot be
    /// used; [`Error::Spawn`] when a thread cannot be started. Nothing is
    /// left running then.
    pub fn open(mut config: Config) -> Result<Reader, Error> {
        let server = config.validate()?;
        config.apply_shard();
        let transport = Arc::new(Transport::new(
            &config.access,
            &server,
            config.tuning.connecting(),
        )?);
        log::info!(
            "streaming {} resources from {} ({})",
            config.resources.len(),
            server.base,
            config.access.source
        );
        let settings = Arc::new(StreamSettings {
            page_size: config.tuning.page_size,
            max_frame_bytes: config.tuning.max_frame_bytes,
            backoff: config.tuning.backoff.clone(),
            shaping: config.shaping.clone(),
            idle_timeout: config.tuning.idle_timeout,
            initial_events_timeout: config.tuning.initial_events_timeout,
            gzip: config.tuning.gzip,
            short_watch: config.tuning.short_watch,
        });
        let (tx, rx) = bounded(config.tuning.channel_capacity);
        let control = Arc::new(ChannelControl::new(config.tuning.max_buffered_bytes));
        let (closing_tx, closing) = bounded(0);
        let (wake_tx, wake_rx) = bounded(1);
        let start = Starter {
            transport,
            settings,
            out: Out {
                tx,
                control: control.clone(),
                term: None,
            },
            closing: closing.clone(),
        };
        let reader = Reader {
            info: ReaderInfo {
                server: config.access.server.clone(),
                source: config.access.source.clone(),
            },
            rx,
            control,
            closing: closing.clone(),
            wake_tx,
            wake_rx,
            registry: Arc::new(Registry::new(
                Roster {
                    closing_tx: Some(closing_tx),
                    handles: Vec::new(),
                    start: None,
                    wildcards: Vec::new(),
                    look_now: None,
                    probe_slot: None,
                    helpers: Vec::new(),
                },
                closing.clone(),
                config.tuning.discovery_interval,
            )),
            timer: Mutex::new(None),
            explorer: Mutex::new(None),
            shard: config.shard,
            electors: Mutex::new(Vec::new()),
        };
        let (wildcards, named): (Vec<ResourceSpec>, Vec<ResourceSpec>) = dedup(&config.resources)
            .into_iter()
            .partition(ResourceSpec::is_wildcard);
        let mut electing = Vec::new();
        if let Some(election) = &config.leader_election {
            if !wildcards.is_empty() {
                return Err(Error::Config(
                    "leader_election: wildcard resources (\"*\") are not supported with it yet"
                        .into(),
                ));
            }
            // No stream starts now: an elector starts them once it holds its
            // Lease (with shards, one Lease and one elector per shard).
            let shares = crate::coordination::lease_shares::shares(
                election,
                config.checkpoint_in_cluster.as_ref(),
                &named,
            )?;
            electing = shares;
        } else {
            let gates = sync_gates(&named);
            for (spec, gate) in named.iter().zip(gates) {
                // On failure, dropping `reader` stops and joins what was started.
                let part = config.resume.as_ref().and_then(|c| c.part(spec));
                let handle = start.start_from(spec, part, gate, None)?;
                reader.registry.roster.lock().handles.push(handle);
            }
        }
        // The electors start their streams through the roster's starter:
        // it is there before any of them runs.
        let starter = start.clone();
        reader.registry.roster.lock().start = Some(start);
        let leading = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        for share in electing {
            let elector = reader.start_elector(&config, &server, share, &starter, &leading)?;
            reader.electors.lock().push(elector);
        }
        drop(starter);
        reader.set_wildcards(wildcards)?;
        if let Some(interval) = config.relist_interval {
            let registry = reader.registry.clone();
            let report = reader
                .registry
                .roster
                .lock()
                .start
                .as_ref()
                .map(Starter::report);
            let report = report.ok_or(Error::Stopped)?;
            let t = threads::spawn("tattler-relist".into(), report, move || {
                relist_timer(&registry, &closing, interval)
            })
            .map_err(Error::Spawn)?;
            *reader.timer.lock() = Some(t);
        }
        Ok(reader)
    }

    /// Starts the elector thread, with a client of its own whose connect
    /// waits at most half of `lease_duration - renew_deadline` (a holder
    /// must notice in time that it cannot renew), and the sender whose
    /// drop tells it that close has joined the streams.
    fn start_elector(
        &self,
        config: &Config,
        server: &crate::access::cluster::ServerUrl,
        share: crate::coordination::lease_shares::LeaseShare,
        start: &Starter,
        leading: &Arc<std::sync::atomic::AtomicUsize>,
    ) -> Result<(JoinHandle<()>, Sender<()>), Error> {
        let election = &share.election;
        let mut own = config.clone();
        let margin = (election.lease_duration - election.renew_deadline) / 2;
        own.tuning.connect_timeout = own
            .tuning
            .connect_timeout
            .min(margin.max(Duration::from_millis(100)));
        let transport = Arc::new(Transport::new(
            &own.access,
            server,
            own.tuning.connecting(),
        )?);
        let client = crate::api::client::Client::new(
            transport,
            Arc::new(crate::access::client::AgentSlot::default()),
            start.settings.clone(),
            crate::delivery::channel::Stop {
                all: crossbeam_channel::never(),
                own: crossbeam_channel::never(),
            },
        );
        let streams = Arc::new(leader::LeaderStreams {
            registry: self.registry.clone(),
            named: share.named.clone(),
            rx: self.rx.clone(),
            control: self.control.clone(),
        });
        let (finish_tx, finish) = bounded(0);
        let elector =
            crate::coordination::elector::Elector::new(crate::coordination::elector::ElectorInit {
                election: share.election,
                kept: share.kept,
                leading: leading.clone(),
                client,
                out: start.out.clone(),
                closing: self.closing.clone(),
                finish,
                streams,
                map: share.map,
                named: share.named.clone(),
            });
        let t = threads::spawn("tattler-elector".into(), start.report(), move || {
            elector.run()
        })
        .map_err(Error::Spawn)?;
        Ok((t, finish_tx))
    }

    /// Keeps the wildcards, starting the discovery thread for them (or
    /// telling it to look again) when there are any.
    pub(super) fn set_wildcards(&self, wildcards: Vec<ResourceSpec>) -> Result<(), Error> {
        let mut roster = self.registry.roster.lock();
        if roster.wildcards == wildcards {
            return Ok(());
        }
        let any = !wildcards.is_empty();
        roster.wildcards = wildcards;
        if let Some(poke) = &roster.look_now {
            let _ = poke.try_send(());
            return Ok(());
        }
        if !any {
            return Ok(());
        }
        let Some((probe, slot, own_stop)) = roster.start.as_ref().map(Starter::probe) else {
            return Err(Error::Stopped);
        };
        let report = roster.start.as_ref().map(Starter::report);
        let report = report.ok_or(Error::Stopped)?;
        let (poke, look_now) = bounded(1);
        roster.look_now = Some(poke);
        roster.probe_slot = Some(slot);
        drop(roster);
        let (registry, closing) = (self.registry.clone(), self.closing.clone());
        let t = threads::spawn("tattler-discovery".into(), report, move || {
            let _own_stop = own_stop;
            explore(&registry, &closing, &look_now, probe)
        })
        .map_err(Error::Spawn)?;
        *self.explorer.lock() = Some(t);
        Ok(())
    }
}
