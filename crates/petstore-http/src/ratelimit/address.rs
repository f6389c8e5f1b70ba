//! The client address a request is counted against when it has no valid key: the TCP peer,
//! unless the peer is a trusted proxy, in which case the forwarding headers say who it is.

use std::net::{IpAddr, Ipv4Addr};
use std::str::FromStr;

use actix_web::dev::ServiceRequest;
use actix_web::http::header::HeaderMap;
use ipnet::{IpNet, Ipv4Net};

/// Proxies (load balancers) whose `Forwarded` / `X-Forwarded-For` headers are believed.
#[derive(Debug, Clone, Default)]
pub struct TrustedProxies(Vec<IpNet>);

impl FromStr for TrustedProxies {
    type Err = String;

    /// A comma-separated list of addresses or CIDR blocks, e.g. `10.0.0.0/8, 192.0.2.7`. An
    /// IPv4-mapped IPv6 address (`::ffff:10.0.0.1`) is that IPv4 address.
    fn from_str(list: &str) -> Result<Self, String> {
        let mut blocks = Vec::new();
        for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let block = if item.contains('/') {
                item.parse::<IpNet>()
                    .map_err(|_| format!("`{item}` is not a CIDR block (address/prefix length)"))?
            } else {
                let addr: IpAddr = item
                    .parse()
                    .map_err(|_| format!("`{item}` is not an IP address or CIDR block"))?;
                IpNet::from(addr)
            };
            blocks.push(canonical_block(block).trunc());
        }
        Ok(Self(blocks))
    }
}

/// An IPv4-mapped IPv6 block (`::ffff:10.0.0.0/104`, or an address: `/128`) as its IPv4 block
/// (`10.0.0.0/8`); any other block as it is.
fn canonical_block(block: IpNet) -> IpNet {
    match block {
        IpNet::V6(v6) if v6.prefix_len() >= 96 => match v6.addr().to_ipv4_mapped() {
            Some(v4) => Ipv4Net::new(v4, v6.prefix_len() - 96).map_or(block, IpNet::V4),
            None => block,
        },
        _ => block,
    }
}

impl TrustedProxies {
    /// Whether `ip` is one of the trusted proxies (an IPv4-mapped IPv6 address as its IPv4
    /// address: a dual-stack listener sees IPv4 peers so).
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.0.iter().any(|block| block.contains(&ip))
    }

    /// The address to count `req` against.
    pub fn client_address(&self, req: &ServiceRequest) -> IpAddr {
        let peer = req
            .peer_addr()
            .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |a| a.ip().to_canonical());
        if !self.contains(peer) {
            return peer;
        }
        let chain = forwarded_chain(req.headers());
        // Walk back from the nearest hop: the first address that is not one of ours is the
        // client; everything before it could have been written by the client itself.
        chain
            .iter()
            .rev()
            .find(|ip| !self.contains(**ip))
            .or(chain.first())
            .map(|ip| ip.to_canonical())
            .unwrap_or(peer)
    }
}

/// The hop addresses, client first: from `Forwarded` (RFC 7239) when present, else from
/// `X-Forwarded-For`. Unparseable entries end the chain there (nothing before them is trusted).
fn forwarded_chain(headers: &HeaderMap) -> Vec<IpAddr> {
    let forwarded: Vec<String> = headers
        .get_all("forwarded")
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|element| {
            element.split(';').find_map(|pair| {
                let (name, value) = pair.trim().split_once('=')?;
                name.eq_ignore_ascii_case("for")
                    .then(|| value.trim_matches('"').to_owned())
            })
        })
        .collect();
    let entries: Vec<String> = if forwarded.is_empty() {
        headers
            .get_all("x-forwarded-for")
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(|s| s.trim().to_owned())
            .collect()
    } else {
        forwarded
    };
    let parsed: Vec<Option<IpAddr>> = entries.iter().map(|e| parse_node(e)).collect();
    // Keep only the trailing run of parseable addresses.
    let start = parsed
        .iter()
        .rposition(Option::is_none)
        .map_or(0, |i| i + 1);
    parsed[start..].iter().flatten().copied().collect()
}

/// `192.0.2.1`, `192.0.2.1:4711`, `[2001:db8::1]:4711` or `2001:db8::1`.
fn parse_node(node: &str) -> Option<IpAddr> {
    if let Ok(ip) = node.parse() {
        return Some(ip);
    }
    if let Some(rest) = node.strip_prefix('[') {
        return rest.split_once(']')?.0.parse().ok();
    }
    node.rsplit_once(':')?.0.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::test::TestRequest;

    fn address(trusted: &str, peer: &str, headers: &[(&str, &str)]) -> String {
        let mut req = TestRequest::default().peer_addr(peer.parse().expect("peer"));
        for header in headers {
            req = req.insert_header(*header);
        }
        let proxies: TrustedProxies = trusted.parse().expect("list");
        proxies.client_address(&req.to_srv_request()).to_string()
    }

    #[test]
    fn the_peer_is_the_client_unless_it_is_a_trusted_proxy() {
        let spoof = [("x-forwarded-for", "198.51.100.9")];
        assert_eq!(address("", "192.0.2.1:5000", &spoof), "192.0.2.1");
        assert_eq!(address("10.0.0.0/8", "192.0.2.1:5000", &spoof), "192.0.2.1");
        assert_eq!(
            address("10.0.0.0/8", "10.1.2.3:5000", &spoof),
            "198.51.100.9"
        );
    }

    #[test]
    fn the_nearest_untrusted_hop_is_the_client() {
        let chain = [("x-forwarded-for", "203.0.113.5, 198.51.100.9, 10.0.0.2")];
        assert_eq!(address("10.0.0.0/8", "10.0.0.1:1", &chain), "198.51.100.9");
        let forwarded = [(
            "forwarded",
            r#"for=203.0.113.5;proto=https, for="[2001:db8::7]:4711""#,
        )];
        assert_eq!(address("10.0.0.1", "10.0.0.1:1", &forwarded), "2001:db8::7");
        let garbage = [("x-forwarded-for", "nonsense")];
        assert_eq!(address("10.0.0.1", "10.0.0.1:1", &garbage), "10.0.0.1");
    }

    #[test]
    fn proxy_lists_are_validated() {
        assert!(
            "10.0.0.0/8, ::1, 192.0.2.7"
                .parse::<TrustedProxies>()
                .is_ok()
        );
        assert!("10.0.0.0/33".parse::<TrustedProxies>().is_err());
        assert!("10.0.0.0/".parse::<TrustedProxies>().is_err());
        assert!("proxy.example".parse::<TrustedProxies>().is_err());
    }

    #[test]
    fn ipv4_mapped_addresses_are_their_ipv4_addresses() {
        let spoof = [("x-forwarded-for", "198.51.100.9")];
        // A dual-stack listener sees an IPv4 proxy as `::ffff:10.1.2.3`: still trusted.
        assert_eq!(
            address("10.0.0.0/8", "[::ffff:10.1.2.3]:5000", &spoof),
            "198.51.100.9"
        );
        // A mapped proxy in the list is its IPv4 address.
        assert_eq!(
            address("::ffff:10.1.2.3", "10.1.2.3:5000", &spoof),
            "198.51.100.9"
        );
        // An untrusted mapped peer is counted as its IPv4 address, and so is a mapped client.
        assert_eq!(
            address("10.0.0.0/8", "[::ffff:192.0.2.1]:5000", &spoof),
            "192.0.2.1"
        );
        let mapped = [("x-forwarded-for", "::ffff:198.51.100.9")];
        assert_eq!(
            address("10.0.0.0/8", "10.1.2.3:5000", &mapped),
            "198.51.100.9"
        );
        assert_eq!(
            address("::ffff:10.0.0.0/104", "10.1.2.3:5000", &spoof),
            "198.51.100.9"
        );
        // Host bits in a block are ignored, as the prefix says.
        assert_eq!(
            address("10.9.9.9/8", "10.1.2.3:5000", &spoof),
            "198.51.100.9"
        );
    }
}
