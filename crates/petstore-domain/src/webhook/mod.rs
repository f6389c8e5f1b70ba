//! Webhooks: endpoints that receive events (an order placed, approved, delivered or cancelled; a
//! pet created), signed as the Standard Webhooks specification (v1, standardwebhooks.com) says.
//!
//! What is pure lives here, the rules as functions over these types, one module each (every
//! item is re-exported here): `events`, the event types and sets, and which event a change
//! emits ([`EventType::of_order`], [`NewEvent`], its body [`event_body`]); `url_policy`, the
//! rules an endpoint's URL must follow ([`EndpointUrl`], [`forbidden_address`]: no request
//! forgery towards the service's own network; [`same_receiver`], [`loggable_url`]); `secret`,
//! the signing secret's form ([`SigningSecret`], `whsec_` + base64) and a rotation's grace
//! ([`grace_until`]); `endpoint`, the wire shapes
//! of an endpoint and what a write of one checks; `delivery`, the delivery log; `claim`, which
//! due deliveries a sender's claim takes ([`take_in_turn`]); `attempt`, what an attempt's
//! answer means ([`decide`], [`retry_after`], the schedule [`retry_delay`]) and when it turns
//! its endpoint off ([`turns_endpoint_off`]); `signing`, the signatures, written once for the
//! sender and the client's verifier ([`signature`], [`signed_by`]); `target`, the check of where
//! an endpoint's host leads ([`ReceiverCheck`], implemented by the sender's resolver). Storing endpoints and deliveries is the storage's
//! ([`WebhookRepository`](crate::WebhookRepository)), which carries these rules out and encodes
//! them its own way; sending them is the program's. Modules import one way: `events`,
//! `url_policy` and `secret`, then `endpoint`, `delivery`,
//! `claim`, `attempt` and `target`; `signing` alone.

mod attempt;
mod claim;
mod delivery;
mod endpoint;
mod events;
mod secret;
mod signing;
mod target;
mod url_policy;

pub use attempt::{
    AttemptRecord, AttemptResult, MAX_RETRY_AFTER, RETRY_SCHEDULE, TurnOff, decide, retry_after,
    retry_delay, turns_endpoint_off,
};
pub use claim::{DeliveryClaim, DueDelivery, take_in_turn};
pub use delivery::{Attempt, Backlog, Delivery, DeliveryRecord, DeliveryState};
pub use endpoint::{
    EndpointChanges, EndpointOwner, EndpointSpec, EndpointUpdate, EndpointWrite, IssuedEndpoint,
    MAX_DESCRIPTION, MAX_ENDPOINTS, NewEndpoint, WebhookEndpoint,
};
pub use events::{BodyAroundId, EventSet, EventType, NewEvent, event_body};
pub use secret::{DEFAULT_GRACE_SECONDS, MAX_GRACE_SECONDS, SigningSecret, grace_until};
pub use signing::{signature, signed_by};
pub use target::{ReceiverCheck, ReceiverRefused};
pub use url_policy::{
    EndpointError, EndpointUrl, MAX_URL_LENGTH, UrlPolicy, forbidden_address, loggable_url,
    same_receiver,
};
