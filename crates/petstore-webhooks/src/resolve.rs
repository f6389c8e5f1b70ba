//! Where a delivery may go: a resolver for the HTTP client that refuses addresses of the
//! service's own networks ([`forbidden_address`]) unless allowed, so that the check holds for
//! the address actually connected to (a name that resolved to a public address when the
//! endpoint was registered may resolve elsewhere now), and [`check_url`] for what no resolver
//! sees (a URL naming an address).

use std::io;
use std::net::SocketAddr;

use petstore_domain::webhook::{EndpointUrl, UrlPolicy, forbidden_address};
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// Resolves with the system's resolver, keeping only the addresses `policy` allows; a name with
/// none left fails to resolve, with the reason.
#[derive(Debug, Clone, Copy)]
pub struct GuardedResolver {
    policy: UrlPolicy,
}

impl GuardedResolver {
    /// A resolver applying `policy`.
    pub fn new(policy: UrlPolicy) -> Self {
        Self { policy }
    }
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.policy;
        Box::pin(async move {
            let host = name.as_str().to_owned();
            // One error whether the name does not resolve or resolves only to forbidden
            // addresses: a delivery's log must not tell a receiver's owner which names are the
            // service's own network's.
            let refused = || {
                io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    format!("{host} does not resolve to an address deliveries may go to"),
                )
            };
            let found: Vec<SocketAddr> = match tokio::net::lookup_host((host.as_str(), 0)).await {
                Ok(found) => found.collect(),
                Err(_) => return Err(refused().into()),
            };
            let allowed = allowed_addresses(&found, policy);
            if allowed.is_empty() {
                return Err(refused().into());
            }
            let addrs: Addrs = Box::new(allowed.into_iter());
            Ok(addrs)
        })
    }
}

/// The addresses of `found` that `policy` allows.
pub fn allowed_addresses(found: &[SocketAddr], policy: UrlPolicy) -> Vec<SocketAddr> {
    found
        .iter()
        .copied()
        .filter(|addr| policy.allow_private || !forbidden_address(addr.ip()))
        .collect()
}

/// Checks a stored URL again before it is sent to (the policy may have changed since it was
/// registered, and an address in the URL is never resolved).
pub fn check_url(url: &str, policy: UrlPolicy) -> Result<EndpointUrl, String> {
    EndpointUrl::parse(url, policy).map_err(|error| error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_allowed_addresses_are_kept() {
        let found: Vec<SocketAddr> = ["127.0.0.1:0", "93.184.216.34:0", "[fd00::1]:0"]
            .iter()
            .map(|text| text.parse().expect("address"))
            .collect();
        let strict = UrlPolicy::default();
        assert_eq!(allowed_addresses(&found, strict), vec![found[1]]);
        let lax = UrlPolicy {
            allow_private: true,
            ..strict
        };
        assert_eq!(allowed_addresses(&found, lax), found);
    }

    /// A name that does not resolve and one that resolves only to forbidden addresses fail
    /// with the same words (with the name itself in them), so that a delivery's log tells a
    /// receiver's owner nothing of which names exist inside the service's network.
    #[test]
    fn no_answer_and_a_forbidden_answer_read_alike() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let resolver = GuardedResolver::new(UrlPolicy::default());
        let error = |text: &'static str| {
            let name: Name = text.parse().expect("a name");
            let resolving = resolver.resolve(name);
            match runtime.block_on(resolving) {
                Ok(_) => panic!("{text} resolved to an allowed address"),
                Err(error) => error.to_string(),
            }
        };
        let private = error("localhost");
        let nowhere = error("no-such-host.invalid");
        assert_eq!(
            private.replace("localhost", "NAME"),
            nowhere.replace("no-such-host.invalid", "NAME")
        );
        assert!(private.contains("does not resolve to an address deliveries may go to"));
    }
}
