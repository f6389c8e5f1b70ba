//! Where deliveries may go: an endpoint's URL checked against the rules and the service's
//! [`UrlPolicy`] ([`EndpointUrl`]), the addresses no delivery may reach ([`forbidden_address`]:
//! no request forgery towards the service's own network), when two URLs reach one receiver
//! ([`same_receiver`]), and how a URL may be logged ([`loggable_url`]).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::ValidationError;

/// The longest endpoint URL accepted.
pub const MAX_URL_LENGTH: usize = 2048;

/// What an endpoint's URL may be, beyond its form (the service's settings).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UrlPolicy {
    /// `http://` accepted as well as `https://` (`--webhook-allow-http`).
    pub allow_http: bool,
    /// Addresses of the service's own networks accepted (`--webhook-allow-private`): loopback,
    /// private, link-local, metadata.
    pub allow_private: bool,
}

/// An endpoint's URL, checked: absolute, `https` (or `http` when allowed), with a host, no
/// credentials, no fragment, at most [`MAX_URL_LENGTH`] bytes, and not an address of the
/// service's own networks when the host is one (a name is checked where it is resolved, at
/// registration and again at each delivery, with [`forbidden_address`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointUrl {
    text: String,
    host: String,
    port: u16,
}

impl EndpointUrl {
    /// Checks `text` against the rules and `policy`: [`EndpointError::Invalid`] when it is
    /// not an absolute URL of at most [`MAX_URL_LENGTH`] bytes, [`EndpointError::Refused`] when
    /// it is one that the rules or the policy refuse.
    pub fn parse(text: &str, policy: UrlPolicy) -> Result<Self, EndpointError> {
        let refused = |reason: &str| EndpointError::Refused(reason.to_owned());
        if text.len() > MAX_URL_LENGTH {
            return Err(ValidationError::invalid("url", "must be at most 2048 bytes").into());
        }
        let url = url::Url::parse(text).map_err(|error| {
            ValidationError::invalid("url", format!("is not an absolute URL: {error}"))
        })?;
        match url.scheme() {
            "https" => {}
            "http" if policy.allow_http => {}
            "http" => return Err(refused("it must use https")),
            _ => return Err(refused("it must be an https URL")),
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(refused(
                "it must not hold credentials: receivers authenticate deliveries by their signature",
            ));
        }
        if url.fragment().is_some() {
            return Err(refused("it must not have a fragment"));
        }
        let host = match url.host() {
            Some(url::Host::Domain(name)) => {
                let name = name.trim_end_matches('.').to_ascii_lowercase();
                if !policy.allow_private && (name == "localhost" || name.ends_with(".localhost")) {
                    return Err(refused("it must not name this machine (localhost)"));
                }
                name
            }
            Some(url::Host::Ipv4(ip)) => checked_ip(IpAddr::V4(ip), policy)?,
            Some(url::Host::Ipv6(ip)) => checked_ip(IpAddr::V6(ip), policy)?,
            None => return Err(refused("it must have a host")),
        };
        let port = url.port_or_known_default().unwrap_or(443);
        // Normalising may lengthen it (percent-encoding, an international name's `xn--` form):
        // the bound holds for what is stored and sent too.
        // (A refusal, not a malformed field: the text sent was within its bound.)
        if url.as_str().len() > MAX_URL_LENGTH {
            return Err(refused(
                "it is over 2048 bytes once normalised (percent-encoded, with an international \
                 name in its xn-- form)",
            ));
        }
        Ok(Self {
            text: url.into(),
            host,
            port,
        })
    }

    /// The URL as it is stored and sent to (normalised by the URL standard's parser).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The host: a lowercase name, or an address's text.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port, the scheme's default when the URL names none.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The host as an address, when the URL gives one rather than a name.
    pub fn ip(&self) -> Option<IpAddr> {
        self.host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse()
            .ok()
    }
}

/// Whether two endpoint URLs reach the same receiver: the same scheme, host (a trailing dot
/// aside), port and path, whatever their queries. An owner has one endpoint per receiver, so
/// that no owner multiplies each event towards a third party (`?1`, `?2`, ... would).
pub fn same_receiver(a: &str, b: &str) -> bool {
    let target = |text: &str| {
        let url = url::Url::parse(text).ok()?;
        let host = url.host_str()?.trim_end_matches('.').to_ascii_lowercase();
        Some((
            url.scheme().to_owned(),
            host,
            url.port_or_known_default(),
            url.path().trim_end_matches('/').to_owned(),
        ))
    };
    match (target(a), target(b)) {
        (Some(a), Some(b)) => a == b,
        _ => a == b,
    }
}

/// An endpoint's URL as it may be logged: scheme, host and port, and the path's first segment
/// (`https://hooks.example.com/services/…`), nothing more: receivers often carry a token in the
/// query or in the path (Slack's `/services/T/B/<token>`). A text that is no URL shows as
/// `(not a URL)`.
pub fn loggable_url(text: &str) -> String {
    let Ok(url) = url::Url::parse(text) else {
        return "(not a URL)".to_owned();
    };
    let host = url.host_str().unwrap_or_default();
    let port = url
        .port()
        .map(|port| format!(":{port}"))
        .unwrap_or_default();
    let path = url.path();
    let first = path
        .trim_start_matches('/')
        .split('/')
        .next()
        .unwrap_or_default();
    let rest = if path.trim_start_matches('/').len() > first.len() {
        "/…"
    } else {
        ""
    };
    format!("{}://{host}{port}/{first}{rest}", url.scheme())
}

fn checked_ip(ip: IpAddr, policy: UrlPolicy) -> Result<String, EndpointError> {
    if !policy.allow_private && forbidden_address(ip) {
        return Err(EndpointError::Refused(format!(
            "it points at {ip}, an address of a private, loopback, link-local or reserved network"
        )));
    }
    Ok(ip.to_string())
}

/// Why an endpoint's fields were not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EndpointError {
    /// A field is not of its form (a URL that is not one, a description too long).
    #[error(transparent)]
    Invalid(#[from] ValidationError),
    /// The URL is one, but may not receive deliveries (the rules, or the service's policy),
    /// with why.
    #[error("`url` is refused: {0}")]
    Refused(String),
}

/// Whether a delivery must not go to `ip`: an address that is not a public unicast one
/// (loopback, unspecified, private, shared (CGNAT), link-local with the clouds' metadata
/// service, multicast, broadcast, documentation, benchmarking, reserved, the 6to4 relay; IPv6's
/// unique-local, link-local, site-local, multicast and discard-only ranges, and IPv4 addresses
/// mapped, translated or tunnelled into IPv6: NAT64, 6to4, Teredo).
pub fn forbidden_address(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(ip) => forbidden_v4(ip),
        IpAddr::V6(ip) => forbidden_v6(ip),
    }
}

fn forbidden_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_multicast()
        || ip.is_broadcast()
        || ip.is_documentation()
        || a == 0
        || (a == 100 && (64..128).contains(&b)) // shared address space (CGNAT)
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 192 && b == 88 && c == 99) // the 6to4 relay anycast (deprecated)
        || (a == 198 && (b == 18 || b == 19)) // benchmarking
        || a >= 240 // reserved
}

fn forbidden_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return forbidden_v4(v4);
    }
    let segments = ip.segments();
    // The local-use NAT64 range (64:ff9b:1::/48) reaches whatever its operator maps it to.
    if segments[..3] == [0x64, 0xff9b, 1] {
        return true;
    }
    // NAT64 (64:ff9b::/96) reaches the IPv4 address in its last 32 bits.
    if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        let [.., high, low] = segments;
        let v4 = Ipv4Addr::from((u32::from(high) << 16) | u32::from(low));
        return forbidden_v4(v4);
    }
    ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || (segments[0] & 0xfe00) == 0xfc00 // unique local (fc00::/7)
        || (segments[0] & 0xffc0) == 0xfe80 // link-local (fe80::/10)
        || (segments[0] & 0xffc0) == 0xfec0 // site-local (fec0::/10, deprecated)
        || segments[0] == 0x2001 && segments[1] == 0x0db8 // documentation
        || segments[0] == 0x2002 // 6to4: an IPv4 address inside
        || segments[..2] == [0x2001, 0] // Teredo (2001::/32): a tunnel to an IPv4 address
        || segments[..4] == [0x100, 0, 0, 0] // discard-only (100::/64)
        || segments[..2] == [0, 0] // IPv4-compatible and other reserved forms
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPEN: UrlPolicy = UrlPolicy {
        allow_http: false,
        allow_private: false,
    };

    #[test]
    fn urls_must_be_https_public_and_plain() {
        let ok = EndpointUrl::parse("https://Example.COM:8443/hooks?x=1", OPEN).expect("valid");
        assert_eq!(ok.host(), "example.com");
        assert_eq!(ok.port(), 8443);
        assert_eq!(
            EndpointUrl::parse("https://example.com/h", OPEN)
                .expect("valid")
                .port(),
            443
        );
        for refused in [
            "http://example.com/h",
            "ftp://example.com/h",
            "https://user:pw@example.com/h",
            "https://example.com/h#part",
            "https://127.0.0.1/h",
            "https://10.1.2.3/h",
            "https://169.254.169.254/latest/meta-data",
            "https://[::1]/h",
            "https://[::ffff:10.0.0.1]/h",
            "https://[fd00:ec2::254]/h",
            "https://localhost/h",
            "https://api.localhost./h",
            "https://0.0.0.0/h",
            "not a url",
            "/relative",
        ] {
            assert!(
                EndpointUrl::parse(refused, OPEN).is_err(),
                "{refused} was accepted"
            );
        }
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL_LENGTH));
        assert!(EndpointUrl::parse(&long, OPEN).is_err());
        // Within the bound as sent, past it once percent-encoded.
        let grows = format!(
            "https://example.com/{}",
            "é".repeat(MAX_URL_LENGTH / 2 - 20)
        );
        assert!(grows.len() <= MAX_URL_LENGTH);
        assert!(EndpointUrl::parse(&grows, OPEN).is_err());
        let lax = UrlPolicy {
            allow_http: true,
            allow_private: true,
        };
        let local = EndpointUrl::parse("http://127.0.0.1:9000/h", lax).expect("valid");
        assert_eq!(local.ip(), Some(IpAddr::V4(Ipv4Addr::LOCALHOST)));
        assert_eq!(local.port(), 9000);
    }

    #[test]
    fn forbidden_addresses_are_those_of_no_public_host() {
        for ip in [
            "127.0.0.1",
            "10.0.0.1",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "240.0.0.1",
            "::1",
            "::",
            "fe80::1",
            "fc00::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "64:ff9b::a00:1",
            "64:ff9b:1::808:808",
            "2002:a00:1::",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
            "100::1",
            "192.88.99.1",
        ] {
            assert!(
                forbidden_address(ip.parse().expect("valid")),
                "{ip} allowed"
            );
        }
        for ip in [
            "93.184.216.34",
            "8.8.8.8",
            "2606:4700:4700::1111",
            "64:ff9b::808:808",
        ] {
            assert!(
                !forbidden_address(ip.parse().expect("valid")),
                "{ip} refused"
            );
        }
    }

    #[test]
    fn one_receiver_whatever_its_query() {
        for (a, b) in [
            (
                "https://hooks.example.com/h",
                "https://hooks.example.com/h?1",
            ),
            (
                "https://hooks.example.com/h",
                "https://hooks.example.com./h/",
            ),
            (
                "https://hooks.example.com/h",
                "https://hooks.example.com:443/h",
            ),
        ] {
            assert!(same_receiver(a, b), "{a} {b}");
        }
        for (a, b) in [
            ("https://hooks.example.com/h", "https://hooks.example.com/g"),
            (
                "https://hooks.example.com/h",
                "https://hooks.example.com:8443/h",
            ),
            ("https://hooks.example.com/h", "http://hooks.example.com/h"),
        ] {
            assert!(!same_receiver(a, b), "{a} {b}");
        }
    }

    #[test]
    fn logged_urls_leave_the_query_out() {
        assert_eq!(
            loggable_url("https://hooks.example.com:8443/in?token=s3cret#x"),
            "https://hooks.example.com:8443/in"
        );
        assert_eq!(
            loggable_url("https://hooks.slack.com/services/T000/B000/s3cret"),
            "https://hooks.slack.com/services/…"
        );
        assert_eq!(loggable_url("https://example.com"), "https://example.com/");
        assert_eq!(
            loggable_url("https://u:pw@example.com/h?t=1"),
            "https://example.com/h"
        );
        assert_eq!(loggable_url("no url?token=s3cret"), "(not a URL)");
    }
}
