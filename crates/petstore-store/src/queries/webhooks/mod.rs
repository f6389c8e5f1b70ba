//! Webhooks, by what each query serves: `endpoints` (create, list, find, update, delete,
//! rotate; turning one off), `deliveries` (the delivery log: list, find with its attempts,
//! redeliver), `outbox` (the deliveries written with each change, [`record`]; the senders'
//! claims of due deliveries under a lease; the backlog; pruning) and `attempts` (an attempt
//! recorded, and the endpoint turned off when the domain's rule,
//! [`turns_endpoint_off`](petstore_domain::webhook::turns_endpoint_off), says so). What the
//! tables hold that the domain's types do not say (an event set's text, the operators' owner
//! id) is `stored`'s; the rows, shared by all, are here.
//!
//! A claim takes the oldest due deliveries that no unexpired lease holds and leases them, in a
//! transaction: on PostgreSQL and MariaDB their rows are read `FOR UPDATE SKIP LOCKED`, so that
//! senders on several instances claim different deliveries at once without waiting for each
//! other; on SQLite the transaction holds the database. An attempt is recorded only by the
//! claim that still holds the delivery (its token, cleared when an attempt is recorded or the
//! delivery redelivered): a sender whose delivery was claimed again after its lease ran out
//! (it was slow, or stopped) records nothing, and the delivery is sent by whoever claimed it
//! next: at least once.

use diesel::prelude::*;
use petstore_domain::webhook::{
    Delivery, DeliveryState, EventType, SigningSecret, WebhookEndpoint,
};

use super::{Now, Result};
use crate::StoreError;
use crate::schema::{webhook_deliveries, webhook_endpoints};
use stored::{events_from_stored, owner_of};

/// Whether the key that owns a `webhook_endpoints` row still works at `$now` (Unix seconds):
/// neither revoked nor expired (an `EXISTS` over `api_keys`).
macro_rules! key_works {
    ($now:expr) => {{
        use crate::schema::{api_keys, webhook_endpoints};
        diesel::dsl::exists(
            api_keys::table
                .filter(api_keys::id.eq(webhook_endpoints::owner_key_id))
                .filter(api_keys::revoked_at.is_null())
                .filter(
                    api_keys::expires_at
                        .is_null()
                        .or(api_keys::expires_at.gt($now)),
                ),
        )
    }};
}

/// Whether a `webhook_endpoints` row may be sent to at `$now` (Unix seconds): it is on, and
/// it is the operators' or its key still works ([`key_works!`]). A revoked or expired key's
/// events are no longer recorded nor sent; its endpoints stay, for the operators to see and
/// turn off.
macro_rules! sendable {
    ($now:expr) => {{
        use crate::queries::webhooks::stored::OPERATORS;
        use crate::schema::webhook_endpoints;
        webhook_endpoints::enabled.eq(true).and(
            webhook_endpoints::owner_key_id
                .eq(OPERATORS)
                .or(key_works!($now)),
        )
    }};
}

mod attempts;
mod deliveries;
mod endpoints;
mod outbox;
mod stored;

pub(crate) use attempts::{record_attempts, turn_off};
pub(crate) use deliveries::{find_delivery, list_deliveries, redeliver};
pub(crate) use endpoints::{create, delete, find, list, random_secret, rotate, update};
#[cfg(feature = "postgres")]
pub(crate) use outbox::insert_with_event;
pub(crate) use outbox::{PRUNE_BATCH, backlog, claim, prune_batch, record};

#[derive(Queryable, Selectable)]
#[diesel(table_name = webhook_endpoints)]
struct EndpointRow {
    id: i64,
    owner_key_id: i64,
    url: String,
    events: String,
    description: String,
    secret: String,
    previous_secret: Option<String>,
    previous_secret_until: Option<i64>,
    enabled: bool,
    disabled_reason: Option<String>,
    created_at: i64,
}

impl EndpointRow {
    /// The endpoint as shown `now` (a rotated-out secret's grace shown while it lasts).
    fn endpoint(&self, now: Now) -> Result<WebhookEndpoint> {
        let events = events_from_stored(&self.events).ok_or_else(|| StoreError::Corrupt {
            table: "webhook_endpoints",
            reason: format!("endpoint {} has events {:?}", self.id, self.events),
        })?;
        Ok(WebhookEndpoint {
            id: self.id,
            url: self.url.clone(),
            events,
            description: self.description.clone(),
            enabled: self.enabled,
            disabled_reason: self.disabled_reason.clone(),
            previous_secret_expires_at: self
                .previous_secret_until
                .filter(|until| *until > now.unix()),
            created_at: self.created_at,
            owner: owner_of(self.owner_key_id),
        })
    }

    /// The secrets that sign a delivery at `now`: the current one, and the previous while its
    /// grace lasts.
    fn secrets(&self, now: i64) -> Result<Vec<SigningSecret>> {
        let current = self.stored_secret(&self.secret)?;
        let previous = match (&self.previous_secret, self.previous_secret_until) {
            (Some(previous), Some(until)) if until > now => Some(self.stored_secret(previous)?),
            _ => None,
        };
        Ok(std::iter::once(current).chain(previous).collect())
    }

    fn stored_secret(&self, stored: &str) -> Result<SigningSecret> {
        SigningSecret::from_stored(stored).ok_or_else(|| StoreError::Corrupt {
            table: "webhook_endpoints",
            reason: format!(
                "endpoint {} has a secret that is not base64 of a key",
                self.id
            ),
        })
    }
}

#[derive(Queryable, Selectable)]
#[diesel(table_name = webhook_deliveries)]
struct DeliveryRow {
    id: i64,
    endpoint_id: i64,
    event_id: String,
    event_type: String,
    body: String,
    state: String,
    attempts: i32,
    tries: i32,
    next_attempt_at: i64,
    last_status: Option<i32>,
    last_latency_ms: Option<i32>,
    last_error: Option<String>,
    created_at: i64,
    trace_context: Option<String>,
}

impl DeliveryRow {
    fn corrupt(&self, what: &str) -> StoreError {
        StoreError::Corrupt {
            table: "webhook_deliveries",
            reason: format!("delivery {} has {what}", self.id),
        }
    }

    fn event_type(&self) -> Result<EventType> {
        self.event_type
            .parse()
            .map_err(|_| self.corrupt(&format!("event type {:?}", self.event_type)))
    }

    fn delivery(self) -> Result<Delivery> {
        let state: DeliveryState = self
            .state
            .parse()
            .map_err(|_| self.corrupt(&format!("state {:?}", self.state)))?;
        Ok(Delivery {
            id: self.id,
            event_type: self.event_type()?,
            endpoint_id: self.endpoint_id,
            state,
            attempts: u32::try_from(self.attempts).unwrap_or(0),
            next_attempt_at: (state == DeliveryState::Pending).then_some(self.next_attempt_at),
            last_status: self
                .last_status
                .and_then(|status| u16::try_from(status).ok()),
            last_latency_ms: self.last_latency_ms.and_then(|ms| u32::try_from(ms).ok()),
            last_error: self.last_error,
            created_at: self.created_at,
            event_id: self.event_id,
            body: self.body,
        })
    }
}

/// The columns a delivery ends with as failed at `now`, with `why`; its lease let go.
#[diesel::dsl::auto_type]
fn failed<'a>(why: &'a str, now: i64) -> _ {
    let failed: &'static str = DeliveryState::Failed.as_str();
    (
        webhook_deliveries::state.eq(failed),
        webhook_deliveries::last_error.eq(why),
        webhook_deliveries::lease_until.eq(0_i64),
        webhook_deliveries::ended_at.eq(now),
    )
}
