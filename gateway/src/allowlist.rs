//! The source-address allowlist of the public listener: finds the client
//! address (the socket peer, or behind trusted proxies the PROXY protocol
//! source and then `X-Forwarded-For`, walked from the right) and refuses
//! addresses outside the configured networks with an empty 403.

use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::HeaderMap;
use ipnet::IpNet;

use crate::config::Allowlist;
use crate::error::GatewayError;
use crate::listener::Peer;
use crate::state::SharedState;

const FORWARDED_FOR: &str = "x-forwarded-for";

/// The allowlist as the middleware applies it.
#[derive(Debug, Clone)]
pub struct Policy {
    enabled: bool,
    cidrs: Arc<[IpNet]>,
    trusted_proxies: Arc<[IpNet]>,
}

/// Why no client address could be found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unresolved {
    /// An `X-Forwarded-For` entry from a trusted proxy is not an address.
    UnreadableForwardedFor,
}

/// IPv4-mapped IPv6 addresses (dual-stack sockets) compare as IPv4.
fn canonical(ip: IpAddr) -> IpAddr {
    ip.to_canonical()
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
            cidrs: config.cidrs.iter().map(IpNet::trunc).collect(),
            trusted_proxies: config.trusted_proxies.iter().map(IpNet::trunc).collect(),
        }
    }

    fn is_trusted(&self, ip: IpAddr) -> bool {
        self.trusted_proxies.iter().any(|net| net.contains(&ip))
    }

    /// Whether `ip` may use the public endpoints.
    pub fn allows(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        self.cidrs.iter().any(|net| net.contains(&ip))
    }

    /// The client address of a request from `peer`: the first untrusted hop
    /// walking from the socket towards the client (socket peer, PROXY
    /// protocol source, then `X-Forwarded-For` from right to left). When
    /// every hop is trusted, the left-most one. Forwarding headers are read
    /// only once a trusted proxy has been reached.
    pub fn client_address(&self, peer: &Peer, headers: &HeaderMap) -> Result<IpAddr, Unresolved> {
        let mut current = canonical(peer.socket.ip());
        if !self.is_trusted(current) {
            return Ok(current);
        }
        if let Some(source) = peer.proxied {
            current = canonical(source.ip());
            if !self.is_trusted(current) {
                return Ok(current);
            }
        }
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

/// The client address the allowlist resolved, for the per-address limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAddress(pub IpAddr);

/// Middleware: serves allowed clients, refuses the others with an empty 403,
/// one info line (reason and address; never a header value) and a count by
/// reason.
pub async fn enforce(
    State((policy, state)): State<(Policy, SharedState)>,
    mut request: Request,
    next: Next,
) -> Response {
    if !policy.enabled {
        let peer = request.extensions().get::<ConnectInfo<Peer>>().cloned();
        if let Some(Ok(client)) =
            peer.map(|ConnectInfo(peer)| policy.client_address(&peer, request.headers()))
        {
            request.extensions_mut().insert(ClientAddress(client));
        }
        return next.run(request).await;
    }
    let Some(ConnectInfo(peer)) = request.extensions().get::<ConnectInfo<Peer>>().cloned() else {
        state.metrics.allowlist_refusal("no_peer_address");
        tracing::error!(
            reason = "no_peer_address",
            "request refused by the allowlist"
        );
        return GatewayError::AddressRefused.into_response();
    };
    match policy.client_address(&peer, request.headers()) {
        Ok(client) if policy.allows(client) => {
            request.extensions_mut().insert(ClientAddress(client));
            next.run(request).await
        }
        Ok(client) => {
            state.metrics.allowlist_refusal("address_not_allowed");
            tracing::info!(
                reason = "address_not_allowed",
                client = %client,
                peer = %peer.socket.ip(),
                "request refused by the allowlist"
            );
            GatewayError::AddressRefused.into_response()
        }
        Err(Unresolved::UnreadableForwardedFor) => {
            state.metrics.allowlist_refusal("unreadable_forwarded_for");
            tracing::info!(
                reason = "unreadable_forwarded_for",
                peer = %peer.socket.ip(),
                "request refused by the allowlist"
            );
            GatewayError::AddressRefused.into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;
    use std::net::SocketAddr;

    fn policy(cidrs: &[&str], trusted: &[&str]) -> Policy {
        Policy::new(&Allowlist {
            enabled: true,
            cidrs: cidrs.iter().map(|c| c.parse().unwrap()).collect(),
            trusted_proxies: trusted.iter().map(|c| c.parse().unwrap()).collect(),
            proxy_protocol: false,
        })
    }

    fn peer(socket: &str, proxied: Option<&str>) -> Peer {
        Peer {
            socket: socket.parse().unwrap(),
            proxied: proxied.map(|p| p.parse::<SocketAddr>().unwrap()),
        }
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
    fn forwarded_for_is_ignored_from_an_untrusted_peer() {
        let p = policy(&["10.0.0.0/8"], &["192.168.0.0/24"]);
        let spoofed = xff(&["10.1.1.1"]);
        assert_eq!(
            p.client_address(&peer("203.0.113.5:4000", None), &spoofed),
            Ok(ip("203.0.113.5"))
        );
    }

    #[test]
    fn forwarded_for_is_walked_from_the_right_skipping_trusted_hops() {
        let p = policy(&["10.0.0.0/8"], &["192.168.0.0/24", "2001:db8:ff::/48"]);
        let from_proxy = peer("192.168.0.7:4000", None);
        // The client forged the left-most entry; the proxies appended the rest.
        let headers = xff(&["10.9.9.9, 198.51.100.4", "192.168.0.3"]);
        assert_eq!(
            p.client_address(&from_proxy, &headers),
            Ok(ip("198.51.100.4"))
        );
        let headers = xff(&["[2001:db8:1::1]:443, 2001:db8:ff::2"]);
        assert_eq!(
            p.client_address(&from_proxy, &headers),
            Ok(ip("2001:db8:1::1"))
        );
        let headers = xff(&["10.2.3.4:5678"]);
        assert_eq!(p.client_address(&from_proxy, &headers), Ok(ip("10.2.3.4")));
        // No header: the proxy itself; only trusted hops: the left-most.
        assert_eq!(
            p.client_address(&from_proxy, &HeaderMap::new()),
            Ok(ip("192.168.0.7"))
        );
        let headers = xff(&["192.168.0.1, 192.168.0.2"]);
        assert_eq!(
            p.client_address(&from_proxy, &headers),
            Ok(ip("192.168.0.1"))
        );
    }

    #[test]
    fn an_unreadable_entry_leaves_the_client_unknown() {
        let p = policy(&["0.0.0.0/0"], &["192.168.0.0/24"]);
        let from_proxy = peer("192.168.0.7:4000", None);
        for bad in ["unknown", "10.0.0.1, garbage", "_hidden"] {
            let headers = xff(&[bad]);
            assert_eq!(
                p.client_address(&from_proxy, &headers),
                Err(Unresolved::UnreadableForwardedFor),
                "{bad}"
            );
        }
        // Left of the first untrusted hop nothing is read, garbage or not.
        let headers = xff(&["garbage, 10.0.0.1"]);
        assert_eq!(p.client_address(&from_proxy, &headers), Ok(ip("10.0.0.1")));
    }

    #[test]
    fn the_proxy_protocol_source_comes_before_forwarded_for() {
        let p = policy(&["10.0.0.0/8"], &["192.168.0.0/24"]);
        let headers = xff(&["10.7.7.7"]);
        assert_eq!(
            p.client_address(&peer("192.168.0.7:1", Some("198.51.100.4:2")), &headers),
            Ok(ip("198.51.100.4")),
            "an untrusted PROXY source is the client; its headers are not believed"
        );
        assert_eq!(
            p.client_address(&peer("192.168.0.7:1", Some("192.168.0.9:2")), &headers),
            Ok(ip("10.7.7.7")),
            "a trusted PROXY source passes the walk on to X-Forwarded-For"
        );
    }
}
