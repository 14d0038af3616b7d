//! The source-address allowlist of the public listener. The client address
//! is decided when the connection is accepted whenever the connection itself
//! tells it (the socket peer; behind a trusted proxy speaking the PROXY
//! protocol, the source it relays), so a refused address is closed before
//! any byte of HTTP is read (`edge/listener.rs`). Only connections from trusted
//! proxies that forward with `X-Forwarded-For` are decided per request, by
//! [`enforce`], with an empty 403. Configured networks and client addresses
//! are compared in one canonical form (IPv4-mapped IPv6 as IPv4).

use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::HeaderMap;
use ipnet::IpNet;

use crate::access::address_limit::ClientAddress;
use crate::config::Allowlist;
use crate::error::GatewayError;
use crate::state::SharedState;

const FORWARDED_FOR: &str = "x-forwarded-for";

/// The allowlist as the listener and the middleware apply it.
#[derive(Debug, Clone)]
pub struct Policy {
    enabled: bool,
    cidrs: Arc<[IpNet]>,
    trusted_proxies: Arc<[IpNet]>,
}

/// Where a connection comes from: the socket peer and the origin of its
/// requests as decided at accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peer {
    pub socket: std::net::SocketAddr,
    pub origin: Origin,
}

/// Where the requests of a connection come from, as decided at accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The client, known from the connection itself: the socket peer, the
    /// source a trusted proxy relayed with the PROXY protocol, or that proxy
    /// itself when its header names no source (`LOCAL`, `UNKNOWN`).
    /// Forwarding headers are never read.
    Client(IpAddr),
    /// A trusted proxy at this address forwards for its clients: the walk
    /// goes on in `X-Forwarded-For`.
    Forwarded(IpAddr),
}

/// What a trusted proxy's PROXY header says of the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relayed {
    /// The client's address.
    Source(IpAddr),
    /// `LOCAL`, `UNKNOWN` or a non-IP family: the proxy's own connection.
    Unknown,
}

/// Why no client address could be found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unresolved {
    /// An `X-Forwarded-For` entry from a trusted proxy is not an address.
    UnreadableForwardedFor,
}

/// IPv4-mapped IPv6 addresses (dual-stack sockets) compare as IPv4.
pub fn canonical(ip: IpAddr) -> IpAddr {
    ip.to_canonical()
}

pub use chataigne_common::http_server::canonical_net;

fn canonical_nets(nets: &[IpNet]) -> Arc<[IpNet]> {
    nets.iter().copied().map(canonical_net).collect()
}

/// One `X-Forwarded-For` entry: an address, optionally with a port
/// (`1.2.3.4:80`, `[2001:db8::1]:443`) or in brackets.
fn parse_entry(entry: &str) -> Option<IpAddr> {
    let entry = entry.trim();
    entry
        .parse::<IpAddr>()
        .ok()
        .or_else(|| {
            entry
                .parse::<std::net::SocketAddr>()
                .ok()
                .map(|addr| addr.ip())
        })
        .or_else(|| {
            entry
                .strip_prefix('[')
                .and_then(|rest| rest.strip_suffix(']'))
                .and_then(|inner| inner.parse().ok())
        })
        .map(canonical)
}

impl Policy {
    pub fn new(config: &Allowlist) -> Policy {
        Policy {
            enabled: config.enabled,
            cidrs: canonical_nets(&config.cidrs),
            trusted_proxies: canonical_nets(&config.trusted_proxies),
        }
    }

    /// Whether `ip` is a trusted proxy.
    pub fn is_trusted(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        self.trusted_proxies.iter().any(|net| net.contains(&ip))
    }

    /// Whether `ip` is inside the configured networks.
    pub fn allows(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        self.cidrs.iter().any(|net| net.contains(&ip))
    }

    /// Whether `ip` may use the public endpoints (always, when disabled).
    pub fn admits(&self, ip: IpAddr) -> bool {
        !self.enabled || self.allows(ip)
    }

    /// The origin of a connection from `socket` that sends no PROXY header.
    pub fn origin(&self, socket: IpAddr) -> Origin {
        let socket = canonical(socket);
        if self.is_trusted(socket) {
            Origin::Forwarded(socket)
        } else {
            Origin::Client(socket)
        }
    }

    /// The origin of a connection from the trusted proxy `proxy` after its
    /// PROXY header: the relayed source, walked on only when it is itself a
    /// trusted proxy; without a source, the proxy itself, never what it
    /// forwards.
    pub fn origin_via_proxy(&self, proxy: IpAddr, relayed: Relayed) -> Origin {
        match relayed {
            Relayed::Source(source) => self.origin(source),
            Relayed::Unknown => Origin::Client(canonical(proxy)),
        }
    }

    /// The client address of a request of a connection from `origin`: the
    /// client itself, or, from a trusted proxy, the first untrusted hop
    /// walking `X-Forwarded-For` from right to left (when every hop is
    /// trusted, the left-most one).
    pub fn client_address(
        &self,
        origin: Origin,
        headers: &HeaderMap,
    ) -> Result<IpAddr, Unresolved> {
        let mut current = match origin {
            Origin::Client(client) => return Ok(client),
            Origin::Forwarded(hop) => hop,
        };
        let mut entries = Vec::new();
        for value in headers.get_all(FORWARDED_FOR) {
            let value = value
                .to_str()
                .map_err(|_| Unresolved::UnreadableForwardedFor)?;
            entries.extend(value.split(',').map(str::trim).filter(|e| !e.is_empty()));
        }
        for entry in entries.iter().rev() {
            current = parse_entry(entry).ok_or(Unresolved::UnreadableForwardedFor)?;
            if !self.is_trusted(current) {
                return Ok(current);
            }
        }
        Ok(current)
    }
}

/// Logs one refusal: reason and addresses, never a header value.
pub fn log_refusal(reason: &'static str, client: Option<IpAddr>, peer: IpAddr) {
    match client {
        Some(client) => tracing::info!(
            reason,
            client = %client,
            peer = %peer,
            "request refused by the allowlist"
        ),
        None => tracing::info!(reason, peer = %peer, "request refused by the allowlist"),
    }
}

/// Middleware: finds the client address of each request (for the
/// per-address limit) and, for connections from trusted proxies that
/// forward with `X-Forwarded-For`, refuses clients outside the allowlist
/// with an empty 403, one info line and a count by reason. Connections whose
/// client was known at accept were already screened there.
pub async fn enforce(
    State((policy, state)): State<(Policy, SharedState)>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(ConnectInfo(peer)) = request.extensions().get::<ConnectInfo<Peer>>().copied() else {
        state.metrics.allowlist_refusal("no_peer_address");
        tracing::error!(
            reason = "no_peer_address",
            "request refused by the allowlist"
        );
        return GatewayError::AddressRefused.into_response();
    };
    match policy.client_address(peer.origin, request.headers()) {
        Ok(client) if policy.admits(client) => {
            request.extensions_mut().insert(ClientAddress(client));
            next.run(request).await
        }
        Ok(client) => {
            state.metrics.allowlist_refusal("address_not_allowed");
            log_refusal("address_not_allowed", Some(client), peer.socket.ip());
            GatewayError::AddressRefused.into_response()
        }
        Err(Unresolved::UnreadableForwardedFor) if !policy.enabled => next.run(request).await,
        Err(Unresolved::UnreadableForwardedFor) => {
            state.metrics.allowlist_refusal("unreadable_forwarded_for");
            log_refusal("unreadable_forwarded_for", None, peer.socket.ip());
            GatewayError::AddressRefused.into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn policy(cidrs: &[&str], trusted: &[&str]) -> Policy {
        Policy::new(&Allowlist {
            enabled: true,
            cidrs: cidrs.iter().map(|c| c.parse().unwrap()).collect(),
            trusted_proxies: trusted.iter().map(|c| c.parse().unwrap()).collect(),
            proxy_protocol: false,
        })
    }

    fn xff(values: &[&'static str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append(FORWARDED_FOR, HeaderValue::from_static(value));
        }
        headers
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    /// The client address of a request over a plain connection from `socket`.
    fn client(p: &Policy, socket: &str, headers: &HeaderMap) -> Result<IpAddr, Unresolved> {
        p.client_address(p.origin(ip(socket)), headers)
    }

    #[test]
    fn ipv4_and_ipv6_networks_match() {
        let p = policy(&["74.125.232.0/24", "2001:db8::/32"], &[]);
        assert!(p.allows(ip("74.125.232.9")));
        assert!(!p.allows(ip("74.125.233.9")));
        assert!(p.allows(ip("2001:db8:1::7")));
        assert!(!p.allows(ip("2001:db9::7")));
        assert!(p.allows(ip("::ffff:74.125.232.9")), "IPv4-mapped IPv6");
    }

    #[test]
    fn configured_ipv4_mapped_ranges_are_canonicalised_like_client_addresses() {
        let p = policy(
            &["::ffff:74.125.232.5/128", "::ffff:192.0.2.0/120"],
            &["::ffff:10.0.0.1/128"],
        );
        for client in ["74.125.232.5", "::ffff:74.125.232.5", "192.0.2.77"] {
            assert!(p.allows(ip(client)), "{client}");
        }
        assert!(!p.allows(ip("74.125.232.6")));
        assert!(!p.allows(ip("192.0.3.1")));
        assert!(p.is_trusted(ip("10.0.0.1")));
        assert_eq!(
            canonical_net("::ffff:192.0.2.9/120".parse().unwrap()),
            "192.0.2.0/24".parse::<IpNet>().unwrap()
        );
        // Other IPv6 networks are only truncated.
        assert_eq!(
            canonical_net("2001:db8::1/32".parse().unwrap()),
            "2001:db8::/32".parse::<IpNet>().unwrap()
        );
    }

    #[test]
    fn forwarded_for_is_ignored_from_an_untrusted_peer() {
        let p = policy(&["10.0.0.0/8"], &["192.168.0.0/24"]);
        let spoofed = xff(&["10.1.1.1"]);
        assert_eq!(client(&p, "203.0.113.5", &spoofed), Ok(ip("203.0.113.5")));
    }

    #[test]
    fn forwarded_for_is_walked_from_the_right_skipping_trusted_hops() {
        let p = policy(&["10.0.0.0/8"], &["192.168.0.0/24", "2001:db8:ff::/48"]);
        let proxy = "192.168.0.7";
        // The client forged the left-most entry; the proxies appended the rest.
        let headers = xff(&["10.9.9.9, 198.51.100.4", "192.168.0.3"]);
        assert_eq!(client(&p, proxy, &headers), Ok(ip("198.51.100.4")));
        let headers = xff(&["[2001:db8:1::1]:443, 2001:db8:ff::2"]);
        assert_eq!(client(&p, proxy, &headers), Ok(ip("2001:db8:1::1")));
        let headers = xff(&["10.2.3.4:5678"]);
        assert_eq!(client(&p, proxy, &headers), Ok(ip("10.2.3.4")));
        // No header: the proxy itself; only trusted hops: the left-most.
        assert_eq!(client(&p, proxy, &HeaderMap::new()), Ok(ip("192.168.0.7")));
        let headers = xff(&["192.168.0.1, 192.168.0.2"]);
        assert_eq!(client(&p, proxy, &headers), Ok(ip("192.168.0.1")));
    }

    #[test]
    fn an_unreadable_entry_leaves_the_client_unknown() {
        let p = policy(&["0.0.0.0/0"], &["192.168.0.0/24"]);
        for bad in ["unknown", "10.0.0.1, garbage", "_hidden"] {
            let headers = xff(&[bad]);
            assert_eq!(
                client(&p, "192.168.0.7", &headers),
                Err(Unresolved::UnreadableForwardedFor),
                "{bad}"
            );
        }
        // Left of the first untrusted hop nothing is read, garbage or not.
        let headers = xff(&["garbage, 10.0.0.1"]);
        assert_eq!(client(&p, "192.168.0.7", &headers), Ok(ip("10.0.0.1")));
    }

    #[test]
    fn the_proxy_protocol_source_comes_before_forwarded_for() {
        let p = policy(&["10.0.0.0/8"], &["192.168.0.0/24"]);
        let headers = xff(&["10.7.7.7"]);
        let proxy = ip("192.168.0.7");
        let untrusted = p.origin_via_proxy(proxy, Relayed::Source(ip("198.51.100.4")));
        assert_eq!(
            p.client_address(untrusted, &headers),
            Ok(ip("198.51.100.4")),
            "an untrusted PROXY source is the client; its headers are not believed"
        );
        let trusted = p.origin_via_proxy(proxy, Relayed::Source(ip("192.168.0.9")));
        assert_eq!(
            p.client_address(trusted, &headers),
            Ok(ip("10.7.7.7")),
            "a trusted PROXY source passes the walk on to X-Forwarded-For"
        );
    }

    #[test]
    fn forwarded_for_is_never_believed_behind_a_proxy_header_without_source() {
        let p = policy(&["74.125.232.0/24"], &["127.0.0.1/32"]);
        let unknown = p.origin_via_proxy(ip("127.0.0.1"), Relayed::Unknown);
        assert_eq!(unknown, Origin::Client(ip("127.0.0.1")));
        let spoofed = xff(&["74.125.232.5"]);
        assert_eq!(p.client_address(unknown, &spoofed), Ok(ip("127.0.0.1")));
        assert!(!p.admits(ip("127.0.0.1")), "the proxy itself is refused");
    }
}
