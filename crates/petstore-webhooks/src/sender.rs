//! [`Sender`]: the loop that sends due deliveries, on any number of instances at once.
//!
//! It claims only as many deliveries as it has free slots ([`SenderConfig::concurrency`]), each
//! leased for twice the attempt's timeout and a margin, and sends each at once on a task of its
//! own; memory and connections are bounded by the slots whatever the number of endpoints or
//! the size of the backlog. A delivery whose sender stops midway (the process killed) is
//! claimed again by any sender once its lease has run out.
//!
//! Attempts are recorded by one task ([`Sender::recording`]): the attempts that end while it
//! writes wait for it, and it writes them together in its next call (one transaction where
//! each would have been one). An attempt keeps its slot until its record is written.
//!
//! While the API has requests under way (and for a tenth of a second after, as the sender sees
//! it), each storage call is followed, before the next claim, by a wait that keeps the sender's
//! storage calls to [`SenderConfig::share`] of the time ([`Sender::giving_way_to`]).

use std::collections::HashMap;
use std::error::Error;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use petstore_domain::error::Chain;
use petstore_domain::webhook::{
    AttemptRecord, AttemptResult, DeliveryClaim, DueDelivery, EndpointOwner, decide, retry_after,
};
use petstore_domain::{Clock, Storage, SystemClock};
use reqwest::header::{CONTENT_TYPE, RETRY_AFTER};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, mpsc, oneshot};
use tracing::Instrument;

use crate::giving_way::{Busy, GivingWay};
use crate::metric;
use crate::passing_over::{PassedOver, PassingOver};
use crate::resolve::{GuardedResolver, Resolver, check_url};
use crate::sign::signature_header;
use crate::trace;

pub use crate::config::SenderConfig;

/// Most attempts under way to one endpoint that a claim may add to (a claim takes at most
/// this many deliveries too): an endpoint that is slow or down holds at most about twice this
/// many of the instance's slots, never all of them.
const PER_ENDPOINT: usize = 4;
/// How long an endpoint that did not answer (no connection, no answer in time) rests: its
/// deliveries are not claimed by this instance meanwhile (each keeps its own schedule; the
/// first retry comes after about as long).
const REST_AFTER_NO_ANSWER: Duration = Duration::from_secs(5);
/// The longest an endpoint rests for a `429`'s or `503`'s `Retry-After` (its deliveries each
/// wait the whole `Retry-After`).
const MAX_REST: Duration = Duration::from_secs(60);
/// The most endpoints a claim is told to skip.
const MAX_SKIPPED: usize = 1000;

/// How often the backlog's gauges are read.
const BACKLOG_EVERY: Duration = Duration::from_secs(10);
/// How often ended deliveries past their retention are pruned.
const PRUNE_EVERY: Duration = Duration::from_secs(3600);
/// The most of an error's text kept in the log.
const MAX_ERROR_TEXT: usize = 500;

/// Sends the deliveries the storage holds (see the module's documentation).
#[derive(Clone)]
pub struct Sender {
    storage: Arc<dyn Storage>,
    client: reqwest::Client,
    config: SenderConfig,
    slots: Arc<Semaphore>,
    endpoints: Arc<Mutex<HashMap<i64, EndpointState>>>,
    /// Each owner's attempts under way (owners with none are not kept).
    owners: Arc<Mutex<HashMap<EndpointOwner, usize>>>,
    /// Told when an attempt ends: a claim that skipped its endpoint may take more now.
    ended: Arc<Notify>,
    /// The time deliveries are claimed, signed and recorded at.
    clock: Arc<dyn Clock>,
    /// Where its storage calls run: the runtime it runs on, or another
    /// ([`Sender::with_storage_runtime`]).
    storage_runtime: Option<tokio::runtime::Handle>,
    /// What its storage calls owe the API before its next claim.
    giving_way: Arc<GivingWay>,
}

/// An attempt waiting to be recorded, and where its answer goes: whether it was recorded
/// (`false`: its claim no longer held the delivery), or why it could not be.
type Waiting = (AttemptRecord, oneshot::Sender<Result<bool, String>>);

/// What this instance knows of an endpoint: its attempts under way, and until when it rests.
#[derive(Debug, Default)]
struct EndpointState {
    under_way: usize,
    rest_until: Option<Instant>,
}

impl Sender {
    /// A sender over `storage`. Its HTTP client never follows a redirect, uses no proxy (one
    /// would connect where the resolver cannot see), and connects only to addresses the policy
    /// allows.
    pub fn new(storage: Arc<dyn Storage>, config: SenderConfig) -> Result<Self, reqwest::Error> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .timeout(config.timeout)
            .connect_timeout(config.timeout.min(Duration::from_secs(10)))
            .dns_resolver(Arc::new(GuardedResolver::new(
                Resolver::new(config.concurrency, config.timeout),
                config.policy,
            )))
            .user_agent(concat!("petstore-webhooks/", env!("CARGO_PKG_VERSION")))
            .pool_idle_timeout(Duration::from_secs(30))
            .build()?;
        Ok(Self {
            storage,
            client,
            slots: Arc::new(Semaphore::new(config.concurrency.max(1))),
            config,
            endpoints: Arc::default(),
            owners: Arc::default(),
            ended: Arc::default(),
            clock: Arc::new(SystemClock),
            storage_runtime: None,
            giving_way: Arc::new(GivingWay::new(None, config.share)),
        })
    }

    /// The same sender on another clock (tests move time).
    pub fn with_clock(self, clock: Arc<dyn Clock>) -> Self {
        Self { clock, ..self }
    }

    /// The same sender, its storage calls run on `runtime` rather than on the one it runs on:
    /// a sender run at a lower CPU priority than the API then holds no database lock, nor any
    /// connection the API waits for, at that priority (the threads a runtime starts for
    /// blocking calls, SQLite's, inherit its priority).
    pub fn with_storage_runtime(self, runtime: tokio::runtime::Handle) -> Self {
        Self {
            storage_runtime: Some(runtime),
            ..self
        }
    }

    /// The same sender, giving way to an API that `busy` says has requests under way: then each
    /// of its storage calls (claims, records, the backlog, pruning) is followed, before its next
    /// claim, by a wait that keeps them to [`SenderConfig::share`] of the time. Its thread's
    /// lower CPU priority does not lower what the database does for it; this does. The sender
    /// always keeps its share, and what it owes is forgiven once it has seen the API idle for a
    /// tenth of a second.
    pub fn giving_way_to(self, busy: Busy) -> Self {
        Self {
            giving_way: Arc::new(GivingWay::new(Some(busy), self.config.share)),
            ..self
        }
    }

    /// Sends until `stop` resolves, then waits (up to the attempt's timeout) for the attempts
    /// under way to be recorded. Must run inside a tokio runtime; each attempt runs on a task
    /// of its own.
    pub async fn run(self, stop: impl Future<Output = ()>) {
        tokio::pin!(stop);
        let (recorder, waiting) = mpsc::channel(self.config.concurrency.max(1));
        tokio::spawn(self.clone().recording(waiting));
        let pruner = self.clone();
        let pruning = tokio::spawn(async move {
            loop {
                pruner.prune().await;
                tokio::time::sleep(PRUNE_EVERY).await;
            }
        });
        let mut backlog_at = Instant::now();
        let mut passing_over = PassingOver::default();
        loop {
            if backlog_at <= Instant::now() {
                self.record_backlog().await;
                backlog_at = Instant::now() + BACKLOG_EVERY;
            }
            let claimed = tokio::select! {
                () = &mut stop => break,
                claimed = self.round(&recorder, &mut passing_over) => claimed,
            };
            if !claimed {
                tokio::select! {
                    () = &mut stop => break,
                    () = tokio::time::sleep(passing_over.wait(self.config.poll, Instant::now())) => {}
                    () = self.ended.notified() => {}
                }
            }
        }
        pruning.abort();
        let all = u32::try_from(self.config.concurrency.max(1)).unwrap_or(u32::MAX);
        let finished = tokio::time::timeout(self.config.timeout, self.slots.acquire_many(all));
        if finished.await.is_err() {
            log::warn!(
                "stopping with webhook attempts under way: their deliveries will be sent again"
            );
        }
    }

    /// Claims as many due deliveries as there are free slots, [`PER_ENDPOINT`] at most
    /// (waiting for a slot first, then for what its storage calls owe a busy API:
    /// `giving_way`), none of an endpoint that has as many under way or rests, and
    /// of each owner no more than its room under [`SenderConfig::per_owner`] (owners taken in
    /// turn), and starts sending them; whether it claimed as many as it asked for (more may be
    /// due). A claim that would pass endpoints over is not made while `passing_over` says the
    /// last one found nothing else.
    async fn round(
        &self,
        recorder: &mpsc::Sender<Waiting>,
        passing_over: &mut PassingOver,
    ) -> bool {
        let Ok(first) = self.slots.clone().acquire_owned().await else {
            return false;
        };
        // What the last calls owe a busy API, paid just before the claim.
        self.giving_way.wait().await;
        let free_slots = 1 + self.slots.available_permits();
        let free = free_slots.min(PER_ENDPOINT);
        let owner_room = self.owner_room(free_slots);
        let passed = PassedOver {
            endpoints: self.skipped(),
            owners: (owner_room.iter())
                .filter(|(_, room)| *room == 0)
                .map(|(owner, _)| *owner)
                .collect(),
        };
        if !passing_over.may_claim(&passed, Instant::now()) {
            return false;
        }
        let now = self.clock.unix_now();
        let claim = DeliveryClaim {
            now,
            lease_until: now + i64::try_from(self.config.lease().as_secs()).unwrap_or(i64::MAX),
            limit: u32::try_from(free).unwrap_or(u32::MAX),
            token: fastrand::i64(1..),
            skip_endpoints: passed.endpoints.clone(),
            per_owner: u32::try_from(self.config.per_owner()).unwrap_or(u32::MAX),
            owner_room,
        };
        let claimed = self
            .call(move |storage| async move { storage.claim_webhook_deliveries(&claim).await })
            .await;
        let due = match claimed {
            Ok(due) => due,
            Err(error) => {
                log::warn!("could not claim webhook deliveries: {error}");
                return false;
            }
        };
        passing_over.claimed(passed, due.is_empty(), Instant::now() + self.config.poll);
        let full = due.len() >= free;
        let mut permit = Some(first);
        for delivery in due {
            let slot = match permit.take() {
                Some(slot) => slot,
                None => match self.slots.clone().try_acquire_owned() {
                    Ok(slot) => slot,
                    // Every slot is taken (cannot happen: only this loop takes them); the
                    // delivery's lease runs out and it is claimed again.
                    Err(_) => break,
                },
            };
            self.endpoint(delivery.endpoint_id, |state| state.under_way += 1);
            *self.owners().entry(delivery.owner).or_default() += 1;
            let (sender, recorder) = (self.clone(), recorder.clone());
            tokio::spawn(async move { sender.deliver(delivery, slot, recorder).await });
        }
        full
    }

    /// The endpoints the next claim skips: those with [`PER_ENDPOINT`] attempts under way, and
    /// those resting (forgetting the endpoints with nothing under way that rest no more).
    fn skipped(&self) -> Vec<i64> {
        let now = Instant::now();
        let mut endpoints = self
            .endpoints
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        endpoints.retain(|_, state| {
            state.under_way > 0 || state.rest_until.is_some_and(|until| until > now)
        });
        endpoints
            .iter()
            .filter(|(_, state)| {
                state.under_way >= PER_ENDPOINT || state.rest_until.is_some_and(|until| until > now)
            })
            .map(|(id, _)| *id)
            .take(MAX_SKIPPED)
            .collect()
    }

    /// How many more deliveries of each owner with attempts under way the next claim may take,
    /// `free` slots being free: up to its bound, and never the last [`SenderConfig::reserve`]
    /// slots, which are kept for owners with nothing under way (so that owners whose receivers
    /// are all dead cannot, together, take every slot).
    fn owner_room(&self, free: usize) -> Vec<(EndpointOwner, u32)> {
        let per_owner = self.config.per_owner();
        let spare = free.saturating_sub(self.config.reserve());
        self.owners()
            .iter()
            .map(|(owner, under_way)| {
                let room = per_owner.saturating_sub(*under_way).min(spare);
                (*owner, u32::try_from(room).unwrap_or(u32::MAX))
            })
            .collect()
    }

    fn owners(&self) -> std::sync::MutexGuard<'_, HashMap<EndpointOwner, usize>> {
        self.owners.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn endpoint(&self, id: i64, change: impl FnOnce(&mut EndpointState)) {
        let mut endpoints = self
            .endpoints
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        change(endpoints.entry(id).or_default());
    }

    /// One attempt at `delivery`, recorded with what becomes of it (by `recorder`).
    async fn deliver(
        &self,
        delivery: DueDelivery,
        slot: OwnedSemaphorePermit,
        recorder: mpsc::Sender<Waiting>,
    ) {
        self.attempt(&delivery, &recorder).await;
        self.endpoint(delivery.endpoint_id, |state| {
            state.under_way = state.under_way.saturating_sub(1);
        });
        {
            let mut owners = self.owners();
            if let Some(under_way) = owners.get_mut(&delivery.owner) {
                *under_way = under_way.saturating_sub(1);
                if *under_way == 0 {
                    owners.remove(&delivery.owner);
                }
            }
        }
        drop(slot);
        self.ended.notify_one();
    }

    async fn attempt(&self, delivery: &DueDelivery, recorder: &mpsc::Sender<Waiting>) {
        let attempted_at = self.clock.unix_now();
        let started = Instant::now();
        let span = trace::attempt_span(delivery);
        let answer = self
            .send(delivery, attempted_at, trace::traceparent(&span))
            .instrument(span.clone())
            .await;
        let elapsed = started.elapsed();
        trace::record(&span, &answer);
        drop(span);
        metrics::histogram!(metric::ATTEMPT_SECONDS).record(elapsed.as_secs_f64());
        let (status, retry_after, error) = match answer {
            Ok((status, retry_after)) => (Some(status), retry_after, None),
            Err(error) => (None, None, Some(error)),
        };
        // An endpoint that did not answer, or asked to be left alone, rests on this instance.
        let rest = match (status, retry_after) {
            (None, _) => Some(REST_AFTER_NO_ANSWER),
            (Some(429 | 503), Some(after)) => Some(Duration::from_secs(after).min(MAX_REST)),
            _ => None,
        };
        if let Some(rest) = rest {
            self.endpoint(delivery.endpoint_id, |state| {
                state.rest_until = Some(Instant::now() + rest);
            });
        }
        let result = decide(
            status,
            retry_after,
            delivery.tries + 1,
            attempted_at,
            fastrand::f64(),
        );
        let label = match result {
            AttemptResult::Delivered => "delivered",
            AttemptResult::RetryAt(_) => "retry",
            AttemptResult::GaveUp => "failed",
            AttemptResult::Gone => "gone",
        };
        metrics::counter!(metric::ATTEMPTS, "result" => label).increment(1);
        if !matches!(result, AttemptResult::Delivered) {
            let why = error
                .clone()
                .unwrap_or_else(|| format!("HTTP {}", status.unwrap_or(0)));
            log::info!(
                "webhook delivery {} ({}, event {}) to endpoint {}: {label} ({why})",
                delivery.id,
                delivery.event_type,
                delivery.event_id,
                delivery.endpoint_id
            );
        }
        let record = AttemptRecord {
            delivery: delivery.id,
            lease: delivery.lease,
            attempted_at,
            status,
            latency_ms: u32::try_from(elapsed.as_millis()).unwrap_or(u32::MAX),
            error,
            result,
        };
        let (answer, answered) = oneshot::channel();
        let recorded = match recorder.send((record, answer)).await {
            Ok(()) => answered.await.ok(),
            Err(_) => None,
        }
        .unwrap_or_else(|| Err("the sender stopped recording".to_owned()));
        match recorded {
            Ok(true) => {}
            Ok(false) => log::warn!(
                "webhook delivery {}: its lease ran out before its attempt was recorded; \
                 another sender sends it again",
                delivery.id
            ),
            Err(error) => log::warn!(
                "webhook delivery {}: its attempt could not be recorded ({error}); it is sent \
                 again once its lease runs out",
                delivery.id
            ),
        }
    }

    /// Posts the delivery, signed at `timestamp`, with the attempt's `traceparent` when traces
    /// are exported; its status and `Retry-After` (seconds), or why there was no answer.
    async fn send(
        &self,
        delivery: &DueDelivery,
        timestamp: i64,
        traceparent: Option<String>,
    ) -> Result<(u16, Option<u64>), String> {
        check_url(&delivery.url, self.config.policy)?;
        let timestamp = u64::try_from(timestamp).unwrap_or(0);
        let signature = signature_header(
            &delivery.secrets,
            &delivery.event_id,
            timestamp,
            delivery.body.as_bytes(),
        );
        let mut request = self.client.post(&delivery.url);
        if let Some(traceparent) = traceparent {
            request = request.header("traceparent", traceparent);
        }
        let response = request
            .header(CONTENT_TYPE, "application/json")
            .header("webhook-id", &delivery.event_id)
            .header("webhook-timestamp", timestamp.to_string())
            .header("webhook-signature", signature)
            .body(delivery.body.clone())
            .send()
            .await
            // Without the URL, whose query may hold the receiver's token: the error is logged
            // and shown in the delivery log.
            .map_err(|error| describe(&error.without_url()))?;
        let status = response.status().as_u16();
        let header = response.headers().get(RETRY_AFTER);
        let wait = retry_after(
            header.and_then(|value| value.to_str().ok()),
            self.clock.now(),
        );
        Ok((status, wait))
    }

    /// Records the attempts handed to `waiting` until every handle on it is gone: whatever has
    /// gathered (one at the least, as many as there are slots at the most) in one storage call,
    /// each told its answer. An error is every one's.
    async fn recording(self, mut waiting: mpsc::Receiver<Waiting>) {
        let most = self.config.concurrency.max(1);
        let mut gathered = Vec::with_capacity(most);
        while waiting.recv_many(&mut gathered, most).await > 0 {
            let (records, answers): (Vec<_>, Vec<_>) = gathered.drain(..).unzip();
            let asked = records.len();
            let recorded = self
                .call(move |storage| async move { storage.record_webhook_attempts(&records).await })
                .await;
            for (n, answer) in answers.into_iter().enumerate() {
                let held = match &recorded {
                    Ok(held) => held.get(n).copied().ok_or_else(|| {
                        format!(
                            "the storage answered for {} of {} attempts",
                            held.len(),
                            asked
                        )
                    }),
                    Err(error) => Err(error.clone()),
                };
                // Its task gone (the runtime stopping): nobody to tell.
                let _ = answer.send(held);
            }
        }
    }

    /// Sets the backlog's gauges.
    async fn record_backlog(&self) {
        match self
            .call(|storage| async move { storage.webhook_backlog().await })
            .await
        {
            Ok(backlog) => {
                metrics::gauge!(metric::PENDING).set(backlog.pending as f64);
                let age = backlog.oldest_created_at.map_or(0, |created| {
                    self.clock.unix_now().saturating_sub(created).max(0)
                });
                metrics::gauge!(metric::OLDEST_PENDING).set(age as f64);
            }
            Err(error) => log::warn!("could not read the webhook backlog: {error}"),
        }
    }

    /// Deletes ended deliveries older than the retention.
    async fn prune(&self) {
        let retention = i64::try_from(self.config.retention.as_secs()).unwrap_or(i64::MAX);
        let before = self.clock.unix_now().saturating_sub(retention);
        match self
            .call(move |storage| async move { storage.prune_webhook_deliveries(before).await })
            .await
        {
            Ok(0) => {}
            Ok(pruned) => log::info!("pruned {pruned} ended webhook delivery(ies)"),
            Err(error) => log::warn!("could not prune webhook deliveries: {error}"),
        }
    }

    /// A storage call (`call` made of the storage), on the storage's runtime
    /// ([`Sender::with_storage_runtime`]) or this one, given up on (and cancelled) after the
    /// storage's own deadline.
    async fn call<T, E, F>(&self, call: impl FnOnce(Arc<dyn Storage>) -> F) -> Result<T, String>
    where
        F: Future<Output = Result<T, E>> + Send + 'static,
        T: Send + 'static,
        E: Error + Send + 'static,
    {
        let deadline = self.storage.capacity().deadline;
        let runtime = self
            .storage_runtime
            .clone()
            .unwrap_or_else(tokio::runtime::Handle::current);
        let task = runtime.spawn(call(self.storage.clone()));
        // Cancelled with this call: when given up on, or when the sender is dropped.
        let _cancel = CancelOnDrop(task.abort_handle());
        let started = Instant::now();
        let answer = tokio::time::timeout(deadline, task).await;
        let ended = Instant::now();
        self.giving_way.spent(ended - started, ended);
        match answer {
            Ok(Ok(Ok(value))) => Ok(value),
            Ok(Ok(Err(error))) => Err(describe(&error)),
            Ok(Err(ended)) => Err(format!("the storage call ended: {ended}")),
            Err(_) => Err("the storage did not answer in time".to_owned()),
        }
    }
}

/// Aborts a task when dropped.
struct CancelOnDrop(tokio::task::AbortHandle);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// An error with its causes, on one line ([`Chain`]), cut to [`MAX_ERROR_TEXT`].
fn describe(error: &(dyn Error + 'static)) -> String {
    let mut text = Chain(error).to_string();
    if text.len() > MAX_ERROR_TEXT {
        let mut cut = MAX_ERROR_TEXT;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push('…');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_errors_are_cut_on_a_character() {
        let error = std::io::Error::other("é".repeat(400));
        let text = describe(&error);
        assert!(text.len() <= MAX_ERROR_TEXT + '…'.len_utf8());
        assert!(text.ends_with('…'));
    }
}
