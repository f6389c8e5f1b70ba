//! The batches: the requests pending on an instance, grouped by subject and cluster slot, sent
//! to Redis in one script call each by a task of their own.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures_util::future::join_all;
use petstore_domain::{RateLimits, Window};
use redis::cluster_routing::Slot;
use tokio::sync::oneshot;

use crate::{Hit, Subject};

use super::connection::Connection;
use super::script::{DAY_SLACK, MAX_BATCH, MINUTE_SLACK, RoundTripError, bounded, group_hits};

/// What the requests of one instance share with the task that sends their batches.
pub(super) struct Counting {
    pub(super) connection: Connection,
    pub(super) hit: redis::Script,
    pub(super) prefix: String,
    pub(super) timeout: Duration,
    /// One queue for every worker of the instance.
    pub(super) queue: Mutex<Queue>,
}

#[derive(Default)]
pub(super) struct Queue {
    pub(super) pending: Vec<Pending>,
    /// Whether a task is sending batches (it takes what is pending until none is left).
    pub(super) sending: bool,
}

/// A request waiting for its decision.
pub(super) struct Pending {
    pub(super) subject: Subject,
    pub(super) limits: RateLimits,
    pub(super) now: u64,
    pub(super) answer: oneshot::Sender<Result<Hit, RoundTripError>>,
}

impl Counting {
    pub(super) fn lock_queue(&self) -> MutexGuard<'_, Queue> {
        // The queue holds no invariant a panic could break half-way.
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `{prefix}:{subject}:`, how every key of the subject begins; the braces keep one
    /// subject's keys in one cluster slot.
    pub(super) fn key_base(&self, subject: Subject) -> String {
        format!("{}:{{{subject}}}:", self.prefix)
    }

    /// Adds one subject's 4 keys and 6 arguments to a [`HIT`] call for `requests` requests, or
    /// to a [`PEEK`] call (which has no use for the last).
    pub(super) fn add_subject(
        &self,
        invocation: &mut redis::ScriptInvocation<'_>,
        subject: Subject,
        limits: RateLimits,
        now: u64,
        requests: usize,
    ) {
        let minute = Window::Minute.index(now);
        let day = Window::Day.index(now);
        // The subject is written once, not once a key (what that saves: docs/performance.md).
        let base = self.key_base(subject);
        invocation
            .key(numbered(&base, "m:", minute))
            .key(numbered(&base, "d:", day))
            .key(numbered(&base, "r:", minute))
            .key(base + "ban")
            .arg(limits.per_minute)
            .arg(limits.per_day)
            .arg(now)
            .arg(Window::Minute.reset_at(now) - now + MINUTE_SLACK)
            .arg(Window::Day.reset_at(now) - now + DAY_SLACK)
            .arg(requests);
    }

    /// Sends what is pending, batch after batch, until nothing is; the only task doing so.
    pub(super) async fn send_batches(self: Arc<Self>) {
        let mut sending = Sending(Some(&self));
        loop {
            let batch = {
                let mut queue = self.lock_queue();
                // A request that gave up (its deadline passed) is not counted after all.
                queue.pending.retain(|pending| !pending.answer.is_closed());
                if queue.pending.is_empty() {
                    queue.sending = false;
                    sending.0 = None;
                    return;
                }
                let size = queue.pending.len().min(MAX_BATCH);
                queue.pending.drain(..size).collect()
            };
            self.send(batch).await;
        }
    }

    /// One batch: one script call on a single server; in a cluster, one per slot, at once
    /// (a script's keys must share a slot).
    pub(super) async fn send(&self, batch: Vec<Pending>) {
        match self.connection {
            Connection::Single(_) => self.call(batch).await,
            Connection::Cluster(_) => {
                let mut groups: HashMap<Slot, Vec<Pending>> = HashMap::new();
                for pending in batch {
                    // Every key of a subject hashes by the tag in its beginning.
                    let slot = Slot::for_key(self.key_base(pending.subject));
                    groups.entry(slot).or_default().push(pending);
                }
                join_all(groups.into_values().map(|group| self.call(group))).await;
            }
        }
    }

    /// One [`HIT`] call for `batch` (one slot), each request answered.
    pub(super) async fn call(&self, batch: Vec<Pending>) {
        let groups = Group::of(batch);
        let mut invocation = self.hit.prepare_invoke();
        for group in &groups {
            self.add_subject(
                &mut invocation,
                group.subject,
                group.limits,
                group.now,
                group.answers.len(),
            );
        }
        let mut connection = self.connection.link();
        let reply = bounded::<String>(self.timeout, invocation.invoke_async(&mut connection)).await;
        self.connection.after(&connection, reply.is_ok());
        let reply = reply
            .and_then(|reply| group_hits(&reply, groups.iter().map(|group| group.answers.len())));
        match reply {
            Ok(hits) => {
                for (group, hit) in groups.into_iter().zip(hits) {
                    for (nth, answer) in (0..).zip(group.answers) {
                        // The request may have given up meanwhile: nobody to tell.
                        let _ = answer.send(Ok(hit.nth(nth)));
                    }
                }
            }
            Err(error) => {
                for answer in groups.into_iter().flat_map(|group| group.answers) {
                    let _ = answer.send(Err(error.clone()));
                }
            }
        }
    }
}

/// A batch's requests of one subject that came one after the other for that subject, with the
/// same limits and at the same second: counted together, in the order they came.
pub(super) struct Group {
    pub(super) subject: Subject,
    pub(super) limits: RateLimits,
    pub(super) now: u64,
    pub(super) answers: Vec<oneshot::Sender<Result<Hit, RoundTripError>>>,
}

impl Group {
    /// `batch` grouped, the groups in the order of their first request. A request joins its
    /// subject's last group when it has the same limits and second, else starts a group: each
    /// subject's requests are counted in the order they came, whatever came between them.
    pub(super) fn of(batch: Vec<Pending>) -> Vec<Self> {
        let mut groups: Vec<Self> = Vec::new();
        let mut last: HashMap<Subject, usize> = HashMap::new();
        for pending in batch {
            let joins = last.get(&pending.subject).copied().filter(|&at| {
                let group = &groups[at];
                (group.limits, group.now) == (pending.limits, pending.now)
            });
            let at = joins.unwrap_or_else(|| {
                groups.push(Self {
                    subject: pending.subject,
                    limits: pending.limits,
                    now: pending.now,
                    answers: Vec::new(),
                });
                last.insert(pending.subject, groups.len() - 1);
                groups.len() - 1
            });
            groups[at].answers.push(pending.answer);
        }
        groups
    }
}

/// `{base}{kind}{index}`: a window's key.
pub(super) fn numbered(base: &str, kind: &str, index: u64) -> String {
    let mut digits = itoa::Buffer::new();
    let index = digits.format(index);
    let mut key = String::with_capacity(base.len() + kind.len() + index.len());
    key.push_str(base);
    key.push_str(kind);
    key.push_str(index);
    key
}

/// Ends the sending when its task ends otherwise than by emptying the queue (the runtime
/// shutting down, a panic): the requests it leaves are told at once, and the next one starts a
/// new task.
pub(super) struct Sending<'a>(Option<&'a Counting>);

impl Drop for Sending<'_> {
    fn drop(&mut self) {
        if let Some(counting) = self.0 {
            let mut queue = counting.lock_queue();
            queue.sending = false;
            queue.pending.clear();
        }
    }
}
