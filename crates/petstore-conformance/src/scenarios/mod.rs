//! The scenarios, each an `async fn(&dyn Storage)` that panics where the backend breaks a rule
//! of the interface. Each expects a fresh, empty storage. Grouped by what they hold to:
//! pets, orders, keys, idempotency, admin tokens, webhooks.

mod admin_tokens;
mod idempotency;
mod keys;
mod orders;
mod pets;
mod support;
mod webhook_attempts;
mod webhook_owners;
mod webhooks;

pub use admin_tokens::*;
pub use idempotency::*;
pub use keys::*;
pub use orders::*;
pub use pets::*;
pub use webhook_attempts::*;
pub use webhook_owners::*;
pub use webhooks::*;
