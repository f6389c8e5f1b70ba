//! The scenarios, each an `async fn(&dyn Storage)` that panics where the backend breaks a rule
//! of the interface. Each expects a fresh, empty storage. Grouped by what they hold to:
//! pets, orders, keys, idempotency, admin tokens, and webhooks (endpoints, the outbox, claims,
//! attempts, deliveries once sent, rules between owners). `support` and `webhook_support` hold
//! what they share.

mod admin_tokens;
mod idempotency;
mod keys;
mod orders;
mod pets;
mod support;
mod webhook_attempts;
mod webhook_claims;
mod webhook_deliveries;
mod webhook_endpoints;
mod webhook_outbox;
mod webhook_owners;
mod webhook_support;

pub use admin_tokens::*;
pub use idempotency::*;
pub use keys::*;
pub use orders::*;
pub use pets::*;
pub use webhook_attempts::*;
pub use webhook_claims::*;
pub use webhook_deliveries::*;
pub use webhook_endpoints::*;
pub use webhook_outbox::*;
pub use webhook_owners::*;
