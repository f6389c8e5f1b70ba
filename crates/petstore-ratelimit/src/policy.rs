//! The policies a limiter is built with: what to do when its store fails, and how client
//! addresses are told apart.

use std::net::IpAddr;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};

use ipnet::Ipv6Net;

use crate::Subject;

/// What to do when the counter store is unreachable (`--rate-limit-on-failure open|closed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailurePolicy {
    /// Serve, counting in this instance's memory until the store is back (limits then hold per
    /// instance instead of across instances), and log it.
    Open,
    /// Answer `503 service_unavailable` until the store is back.
    Closed,
}

impl FromStr for FailurePolicy {
    type Err = String;

    /// `open` or `closed` (any case).
    fn from_str(name: &str) -> Result<Self, String> {
        match name.trim().to_ascii_lowercase().as_str() {
            "open" => Ok(Self::Open),
            "closed" => Ok(Self::Closed),
            _ => Err("the failure policy is `open` or `closed`".into()),
        }
    }
}

/// Whether a warning may be logged at `now` (Unix seconds): at most one every 10 seconds per
/// `last` (which it updates), so an outage or a flood writes a line, not one per request.
pub(crate) fn first_in_10_seconds(last: &AtomicU64, now: u64) -> bool {
    let previous = last.load(Ordering::Relaxed);
    now >= previous + 10
        && last
            .compare_exchange(previous, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
}

/// How anonymous clients are told apart and how many the limiter keeps count of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddressPolicy {
    /// IPv6 clients are counted per prefix of this length (one host owns a /64, so counting
    /// per address would let it make up 2^64 clients). 128: per address.
    pub ipv6_prefix: u8,
    /// Most client addresses counted in memory at once (see [`MemoryCounters`]).
    pub max_addresses: usize,
}

impl Default for AddressPolicy {
    /// Per /64; 50,000 addresses, a bound chosen from the memory a flood of made-up addresses
    /// was measured to take (docs/performance.md, "Memory under a flood").
    fn default() -> Self {
        Self {
            ipv6_prefix: 64,
            max_addresses: 50_000,
        }
    }
}

impl AddressPolicy {
    /// The subject a request from `ip` without a valid key is counted against.
    pub fn subject(&self, ip: IpAddr) -> Subject {
        // `::ffff:192.0.2.1` (an IPv4 client on a dual-stack listener) is that IPv4 client.
        Subject::Address(match ip.to_canonical() {
            v4 @ IpAddr::V4(_) => v4,
            // The prefix is at most 128 (clamped): `new` cannot refuse it.
            IpAddr::V6(v6) => Ipv6Net::new(v6, self.ipv6_prefix.min(128))
                .map_or(v6, |block| block.network())
                .into(),
        })
    }
}
