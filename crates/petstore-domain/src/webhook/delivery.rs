//! The delivery log: one event on its way to one endpoint ([`Delivery`], where it stands
//! [`DeliveryState`]), its attempts ([`Attempt`], together [`DeliveryRecord`]), and the
//! deliveries waiting ([`Backlog`]).

use serde::{Deserialize, Serialize};

use super::events::EventType;
use crate::rfc3339;

string_enum! {
    /// Where a delivery stands.
    pub enum DeliveryState in "state" {
        /// Waiting for its next attempt.
        Pending = "pending",
        /// Answered `2xx`.
        Delivered = "delivered",
        /// Given up on: its retries ran out, or the endpoint answered `410 Gone`.
        Failed = "failed",
    }
}

/// One event on its way to one endpoint: the delivery log's entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Delivery {
    /// Assigned by the service.
    pub id: i64,
    /// The event's id: `webhook-id` on every attempt (receivers deduplicate by it).
    pub event_id: String,
    /// What happened.
    pub event_type: EventType,
    /// The endpoint.
    pub endpoint_id: i64,
    /// Where it stands.
    pub state: DeliveryState,
    /// Attempts made.
    #[serde(rename = "attemptCount")]
    pub attempts: u32,
    /// The next attempt, while pending.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, format = DateTime))]
    #[serde(with = "rfc3339::optional", default)]
    pub next_attempt_at: Option<i64>,
    /// The last attempt's HTTP status, when it got an answer.
    pub last_status: Option<u16>,
    /// The last attempt's time to an answer (or failure), in milliseconds.
    pub last_latency_ms: Option<u32>,
    /// Why the last attempt failed, when it did.
    pub last_error: Option<String>,
    /// When the event happened.
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    #[serde(with = "rfc3339")]
    pub created_at: i64,
    /// The event's body, exactly as it is sent.
    #[serde(skip)]
    pub body: String,
}

/// One attempt to deliver.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Attempt {
    /// When it was made.
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    #[serde(with = "rfc3339")]
    pub attempted_at: i64,
    /// The HTTP status it got, if it got an answer.
    pub status: Option<u16>,
    /// Time to the answer (or the failure), in milliseconds.
    pub latency_ms: u32,
    /// Why it failed, when it did.
    pub error: Option<String>,
}

/// A delivery with its attempts (the latest hundred, oldest first).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct DeliveryRecord {
    /// The delivery.
    #[serde(flatten)]
    pub delivery: Delivery,
    /// Its attempts.
    pub attempts: Vec<Attempt>,
}

/// The deliveries waiting, for metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Backlog {
    /// Deliveries pending (to enabled endpoints).
    pub pending: u64,
    /// When the oldest of them was created (Unix seconds), if any.
    pub oldest_created_at: Option<i64>,
}
