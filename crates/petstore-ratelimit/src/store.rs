//! The counter store: who a request is counted against ([`Subject`]), what a store answers
//! ([`Hit`]), and the interface every store implements ([`CounterStore`]).

use std::error::Error;
use std::fmt;
use std::net::IpAddr;

use petstore_domain::{Ban, Counts, RateLimits, async_trait};

pub(crate) type BoxError = Box<dyn Error + Send + Sync>;

/// Who a request is counted against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Subject {
    /// An API key, by id.
    Key(i64),
    /// A client address, for requests without a valid key.
    Address(IpAddr),
}

impl Subject {
    /// `key` or `address`: the `subject` label of the rate-limit metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Key(_) => "key",
            Self::Address(_) => "address",
        }
    }
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Key(id) => write!(f, "key:{id}"),
            Self::Address(ip) => write!(f, "addr:{ip}"),
        }
    }
}

/// What a counter store says about one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hit {
    /// The subject is banned (bans of addresses live in the counter store); nothing was counted.
    Banned(Ban),
    /// The request was considered: counted if both windows had room, refused otherwise.
    Counted {
        /// The counts after this request.
        counts: Counts,
        /// The subject's last ban in the store, ended, kept for escalation.
        previous_ban: Option<Ban>,
    },
}

/// The counter store could not answer.
#[derive(Debug, thiserror::Error)]
#[error("the rate-limit store is unavailable")]
pub struct CounterError(#[source] BoxError);

impl CounterError {
    /// A failure caused by `source`.
    pub fn new(source: impl Into<BoxError>) -> Self {
        Self(source.into())
    }
}

/// What counting (or reading) a subject's requests found, or why the store could not tell.
pub type Counted = Result<Hit, CounterError>;

/// What starting a ban found: the ban already in force, if any (`None`: this call started it).
pub type BanStarted = Result<Option<Ban>, CounterError>;

/// Whether a revalidation was taken back from the counts, or why the store could not tell.
pub type TakenBack = Result<bool, CounterError>;

/// Where counters live. Each call is atomic for its subject: concurrent calls never count more
/// than the limits between them.
#[async_trait(?Send)]
pub trait CounterStore: Send + Sync + 'static {
    /// Counts one request for `subject` at `now` (Unix seconds) if both windows of `limits`
    /// have room; refusals are counted too, per minute. A banned subject is not counted.
    async fn hit(&self, subject: Subject, limits: RateLimits, now: u64) -> Counted;

    /// What [`Self::hit`] would find, without counting anything: the subject's counts now (its
    /// ban, if banned). For the rate-limit status, which spends nothing.
    async fn peek(&self, subject: Subject, limits: RateLimits, now: u64) -> Counted;

    /// A request of `subject` counted at `now` was answered `304 Not Modified`: takes it back
    /// from both windows, as one of the subject's free revalidations, while it has had fewer
    /// than `allowance` of them in the minute and in the day; past that it stays counted.
    /// Whether it was taken back (not when the minute has turned since: the windows it was
    /// counted in are gone).
    async fn revalidated(&self, subject: Subject, allowance: RateLimits, now: u64) -> TakenBack;

    /// Whether the store answers now, readying what requests will use (a start-up check; in
    /// memory, always).
    async fn ping(&self) -> Result<(), CounterError> {
        Ok(())
    }

    /// A ban of `subject` starts: forgets its refusals in the current minute (so that, once the
    /// ban ends or is lifted, only new refusals count towards the next one) and, for an address,
    /// records the ban (key bans are kept with the key, in the database). An address's ban is
    /// not started while one is in force at `now` (requests counted together, or on several
    /// instances, cross the threshold together): nothing changes, and the ban in force is the
    /// answer. `None` when this call started it (for a key, always).
    async fn start_ban(&self, subject: Subject, ban: Option<Ban>, now: u64) -> BanStarted;
}
