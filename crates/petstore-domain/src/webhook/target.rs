//! Where a webhook endpoint's URL leads, checked when it is registered or changed: the
//! interface the HTTP layer calls and the webhook sender's resolver implements (the one
//! resolver of the service), so that the transport does no name lookups of its own.

use std::time::Duration;

use super::endpoint::EndpointOwner;
use super::url_policy::{EndpointUrl, UrlPolicy};

/// Checks that a URL's host leads only where `policy` lets deliveries go.
#[async_trait::async_trait]
pub trait ReceiverCheck: Send + Sync {
    /// `Ok` when `url` may be registered by `owner`: it names an address (checked when it was
    /// parsed), `policy` allows private networks, or its host resolves, in time, only to
    /// addresses the policy allows. `owner` bounds its own lookups under way, so that one owner
    /// cannot keep others' from starting.
    async fn check(
        &self,
        url: &EndpointUrl,
        policy: UrlPolicy,
        owner: EndpointOwner,
    ) -> Result<(), ReceiverRefused>;
}

/// Why a URL's host could not be accepted. The words never say which address a name has, nor
/// whether it exists: which names lead inside the service's network is not for a caller to
/// learn.
#[derive(Debug, thiserror::Error)]
pub enum ReceiverRefused {
    /// The host does not resolve, or resolves to an address of the service's own networks.
    #[error("its host does not resolve to a public address")]
    NotPublic,
    /// The lookup did not end in time: the target cannot be checked.
    #[error("its host did not resolve within {} s", .0.as_secs())]
    TooSlow(Duration),
    /// No lookup could be made in time: none could start (every lookup slot busy, or the
    /// owner's own lookups still under way), or one that had to wait for its turn could not
    /// end: try again later.
    #[error("no host lookup could be made within {} s: every lookup was busy", .0.as_secs())]
    Busy(Duration),
    /// The lookup could not run (a thread could not start, or ended without an answer).
    #[error("a host lookup failed: {0}")]
    Failed(String),
}
