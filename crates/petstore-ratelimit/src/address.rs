//! The client address a request is counted against when it has no valid key: the TCP peer,
//! unless the peer is a trusted proxy, in which case the forwarding header that the proxies
//! write says who it is. Framework-free: the caller hands over the peer and that header's
//! values.

use std::net::{IpAddr, Ipv4Addr};
use std::str::FromStr;

use ipnet::{IpNet, Ipv4Net};

/// Proxies (load balancers) whose forwarding header is believed, and which header that is.
#[derive(Debug, Clone, Default)]
pub struct TrustedProxies {
    blocks: Vec<IpNet>,
    header: ForwardedHeader,
}

/// The header the trusted proxies write the client's address in. Only that one is read: a
/// proxy appends to it, and passes any other through from the client, who can write anything
/// there.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ForwardedHeader {
    /// `X-Forwarded-For` (nginx's `$proxy_add_x_forwarded_for`, cloud load balancers).
    #[default]
    XForwardedFor,
    /// `Forwarded` (RFC 7239), its `for=` parameters.
    Forwarded,
}

impl ForwardedHeader {
    /// The header's name, lowercase: `x-forwarded-for` or `forwarded`.
    pub fn name(self) -> &'static str {
        match self {
            Self::XForwardedFor => "x-forwarded-for",
            Self::Forwarded => "forwarded",
        }
    }
}

impl FromStr for ForwardedHeader {
    type Err = String;

    /// A header's name (any case).
    fn from_str(name: &str) -> Result<Self, String> {
        [Self::XForwardedFor, Self::Forwarded]
            .into_iter()
            .find(|header| header.name().eq_ignore_ascii_case(name.trim()))
            .ok_or_else(|| "the forwarding header is `x-forwarded-for` or `forwarded`".into())
    }
}

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
        Ok(Self {
            blocks,
            header: ForwardedHeader::default(),
        })
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
    /// The same proxies, writing the client's address in `header`.
    pub fn with_header(self, header: ForwardedHeader) -> Self {
        Self { header, ..self }
    }

    /// Whether `ip` is one of the trusted proxies (an IPv4-mapped IPv6 address as its IPv4
    /// address: a dual-stack listener sees IPv4 peers so).
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        self.blocks.iter().any(|block| block.contains(&ip))
    }

    /// The request header the proxies write the client's address in, lowercase:
    /// `x-forwarded-for` or `forwarded`.
    pub fn header_name(&self) -> &'static str {
        self.header.name()
    }

    /// The address to count a request against, given its TCP `peer` (`None`: unknown, counted
    /// as `0.0.0.0`) and `values`, every value of the header [`Self::header_name`] names, in
    /// order (a value that is not text as `unknown`).
    pub fn client_address<'h>(
        &self,
        peer: Option<IpAddr>,
        values: impl IntoIterator<Item = &'h str>,
    ) -> IpAddr {
        let peer = peer.map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |ip| ip.to_canonical());
        if !self.contains(peer) {
            return peer;
        }
        // Walk back from the nearest hop, each entry written by the proxy after it: the first
        // address that is not one of ours is the client; everything before it could have been
        // written by the client itself. An entry that names no address (`unknown`, an
        // obfuscated `_name`, garbage) stands for the peer of the proxy that wrote it, which is
        // all that is known: the last trusted hop.
        let mut client = peer;
        for entry in self.entries(values).iter().rev() {
            let Some(ip) = parse_node(entry) else {
                return client;
            };
            client = ip.to_canonical();
            if !self.contains(client) {
                return client;
            }
        }
        client
    }

    /// The entries of the proxies' header, client first (every occurrence of the header, in
    /// order, as one list).
    fn entries<'h>(&self, values: impl IntoIterator<Item = &'h str>) -> Vec<&'h str> {
        let elements = values
            .into_iter()
            .flat_map(|value| value.split(','))
            .map(str::trim);
        match self.header {
            ForwardedHeader::XForwardedFor => elements.collect(),
            ForwardedHeader::Forwarded => elements
                .map(|element| {
                    element
                        .split(';')
                        .find_map(|pair| {
                            let (name, value) = pair.trim().split_once('=')?;
                            name.trim()
                                .eq_ignore_ascii_case("for")
                                .then(|| value.trim().trim_matches('"'))
                        })
                        // An element without `for=` says nothing of the client.
                        .unwrap_or("unknown")
                })
                .collect(),
        }
    }
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

    fn address(trusted: &str, peer: &str, headers: &[(&str, &str)]) -> String {
        address_from(ForwardedHeader::XForwardedFor, trusted, peer, headers)
    }

    fn address_from(
        header: ForwardedHeader,
        trusted: &str,
        peer: &str,
        headers: &[(&str, &str)],
    ) -> String {
        let peer: std::net::SocketAddr = peer.parse().expect("peer");
        let proxies = trusted
            .parse::<TrustedProxies>()
            .expect("list")
            .with_header(header);
        let values = headers
            .iter()
            .filter(|(name, _)| name.eq_ignore_ascii_case(proxies.header_name()))
            .map(|(_, value)| *value);
        proxies.client_address(Some(peer.ip()), values).to_string()
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
        assert_eq!(
            address_from(
                ForwardedHeader::Forwarded,
                "10.0.0.1",
                "10.0.0.1:1",
                &forwarded
            ),
            "2001:db8::7"
        );
        let garbage = [("x-forwarded-for", "nonsense")];
        assert_eq!(address("10.0.0.1", "10.0.0.1:1", &garbage), "10.0.0.1");
        // Several headers are one list, in order.
        let split = [
            ("x-forwarded-for", "203.0.113.5"),
            ("x-forwarded-for", "198.51.100.9"),
        ];
        assert_eq!(address("10.0.0.1", "10.0.0.1:1", &split), "198.51.100.9");
    }

    #[test]
    fn only_the_header_the_proxies_write_is_read() {
        // nginx appends the real client to X-Forwarded-For and passes the client's own
        // `Forwarded` through: that one is the client's to write, and is not read.
        let both = [
            ("forwarded", "for=192.0.2.200"),
            ("x-forwarded-for", "203.0.113.7"),
        ];
        assert_eq!(address("10.0.0.1", "10.0.0.1:1", &both), "203.0.113.7");
        // A proxy declared to write `Forwarded`: a client's X-Forwarded-For is not read.
        let both = [
            ("x-forwarded-for", "192.0.2.200"),
            ("forwarded", "for=203.0.113.7"),
        ];
        assert_eq!(
            address_from(ForwardedHeader::Forwarded, "10.0.0.1", "10.0.0.1:1", &both),
            "203.0.113.7"
        );
        // Neither written: the proxy itself.
        let other = [("forwarded", "for=192.0.2.200")];
        assert_eq!(address("10.0.0.1", "10.0.0.1:1", &other), "10.0.0.1");
    }

    #[test]
    fn a_hop_that_names_no_address_is_the_peer_of_the_proxy_that_wrote_it() {
        let forwarded = |value| {
            let headers = [("forwarded", value)];
            address_from(
                ForwardedHeader::Forwarded,
                "10.0.0.0/8",
                "10.0.0.1:1",
                &headers,
            )
        };
        assert_eq!(forwarded("for=unknown"), "10.0.0.1");
        assert_eq!(forwarded(r#"for=192.0.2.9, for=_hidden"#), "10.0.0.1");
        assert_eq!(
            forwarded("for=192.0.2.9, for=unknown, for=10.0.0.2"),
            "10.0.0.2"
        );
        assert_eq!(
            forwarded("for=192.0.2.9;proto=http, proto=https"),
            "10.0.0.1"
        );
        assert_eq!(
            address(
                "10.0.0.0/8",
                "10.0.0.1:1",
                &[("x-forwarded-for", "192.0.2.9, unknown")]
            ),
            "10.0.0.1"
        );
        // Addresses before an unknown hop are the client's to write: not believed.
        assert_eq!(
            address(
                "10.0.0.0/8",
                "10.0.0.1:1",
                &[("x-forwarded-for", "192.0.2.9, unknown, 10.0.0.3")]
            ),
            "10.0.0.3"
        );
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
        let mapped = [("x-forwarded-for", "::ffff:198.51.100.9")];
        // Trusted proxies, peer, headers, the client address.
        type Case<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)], &'a str);
        let cases: [Case; 6] = [
            // A dual-stack listener sees an IPv4 proxy as `::ffff:10.1.2.3`: still trusted.
            (
                "10.0.0.0/8",
                "[::ffff:10.1.2.3]:5000",
                &spoof,
                "198.51.100.9",
            ),
            // A mapped proxy in the list is its IPv4 address.
            ("::ffff:10.1.2.3", "10.1.2.3:5000", &spoof, "198.51.100.9"),
            // An untrusted mapped peer is counted as its IPv4 address, and so is a mapped client.
            ("10.0.0.0/8", "[::ffff:192.0.2.1]:5000", &spoof, "192.0.2.1"),
            ("10.0.0.0/8", "10.1.2.3:5000", &mapped, "198.51.100.9"),
            (
                "::ffff:10.0.0.0/104",
                "10.1.2.3:5000",
                &spoof,
                "198.51.100.9",
            ),
            // Host bits in a block are ignored, as the prefix says.
            ("10.9.9.9/8", "10.1.2.3:5000", &spoof, "198.51.100.9"),
        ];
        for (trusted, peer, headers, client) in cases {
            assert_eq!(address(trusted, peer, headers), client, "{trusted} {peer}");
        }
    }
}
