//! The addresses the service writes into responses: the public base address (for `Location`
//! and `Link`), the `next` page link, and the deprecated endpoint's successor link.

use std::sync::{Arc, Mutex, PoisonError};

use actix_web::HttpRequest;
use actix_web::http::header::{self, HeaderValue};

use crate::config::HttpSettings;

/// Builds links from the [`HttpSettings`]. Shared by every worker.
#[derive(Debug, Clone)]
pub struct Links {
    settings: HttpSettings,
    successor: SuccessorLink,
}

/// How [`Links::successor_link`] gets its value. Both ways save building the link on every
/// response of `GET /pets/{petId}` (what that saves: docs/performance.md).
#[derive(Debug, Clone)]
enum SuccessorLink {
    /// Built once from the configured public base URL.
    Fixed(HeaderValue),
    /// Built from each request's scheme and `Host`, keeping the last one built: behind one
    /// public name every request carries the same `Host`, so it is built once, not per request.
    /// Shared by clones.
    PerHost(Arc<Mutex<Option<HostLink>>>),
}

/// A successor `Link` and what it was built from.
#[derive(Debug)]
struct HostLink {
    secure: bool,
    /// A copy of the request's `Host` value, not a slice of that request's read buffer.
    host: HeaderValue,
    link: HeaderValue,
}

impl Links {
    /// Links for `settings`.
    pub fn new(settings: HttpSettings) -> Self {
        let successor = match settings.public_base_url().and_then(|base| {
            HeaderValue::from_str(&successor_link(base, &settings.docs_page(base))).ok()
        }) {
            Some(link) => SuccessorLink::Fixed(link),
            None => SuccessorLink::PerHost(Arc::default()),
        };
        Self {
            settings,
            successor,
        }
    }

    /// The scheme clients are told to use: the public base URL's, else the listener's (never a
    /// client's `X-Forwarded-Proto`).
    pub fn scheme(&self, req: &HttpRequest) -> &'static str {
        match self.settings.public_base_url() {
            Some(url) if url.starts_with("https://") => "https",
            Some(_) => "http",
            None => Self::listener_scheme(req),
        }
    }

    /// The scheme of the listener `req` came in on (plain HTTP: the service serves no TLS
    /// itself).
    pub fn listener_scheme(req: &HttpRequest) -> &'static str {
        if req.app_config().secure() {
            "https"
        } else {
            "http"
        }
    }

    /// The settings the links are built from.
    pub fn settings(&self) -> &HttpSettings {
        &self.settings
    }

    /// The `Link` of the deprecated `GET /pets/{petId}`: to its successor, `GET /pets`, and to
    /// where its deprecation and sunset are documented ([`successor_link`]): built
    /// once when the public base URL is configured, else from `req` (see [`Self::public_base`]),
    /// and then again only when the scheme or `Host` differs from the last request's.
    pub fn successor_link(&self, req: &HttpRequest) -> Option<HeaderValue> {
        let last = match &self.successor {
            SuccessorLink::Fixed(link) => return Some(link.clone()),
            SuccessorLink::PerHost(last) => last,
        };
        let secure = req.app_config().secure();
        let host = req.headers().get(header::HOST);
        let mut last = last.lock().unwrap_or_else(PoisonError::into_inner);
        if let (Some(built), Some(host)) = (last.as_ref(), host)
            && built.secure == secure
            && built.host == host
        {
            return Some(built.link.clone());
        }
        // Anything but the scheme and `Host` that the link depends on is fixed for the server.
        let base = self.public_base(req);
        let link =
            HeaderValue::from_str(&successor_link(&base, &self.settings.docs_page(&base))).ok()?;
        if let Some(host) = host.and_then(|h| HeaderValue::from_bytes(h.as_bytes()).ok()) {
            *last = Some(HostLink {
                secure,
                host,
                link: link.clone(),
            });
        }
        Some(link)
    }

    /// The docs page's address, for links in responses to `req` (`/docs/` at the site's root).
    pub fn docs_page(&self, req: &HttpRequest) -> String {
        self.settings.docs_page(&self.public_base(req))
    }

    /// The base address clients should use, for links in responses to `req`. Without a
    /// configured public base URL it is built from the request's own `Host` header and the
    /// listener's scheme; `X-Forwarded-*`/`Forwarded` are deliberately ignored, since any client
    /// can send them and links must not point where a client chose.
    pub fn public_base(&self, req: &HttpRequest) -> String {
        let mut base = String::new();
        self.write_public_base(req, &mut base);
        base
    }

    /// Appends [`Self::public_base`] to `out` (links are built in one buffer).
    fn write_public_base(&self, req: &HttpRequest, out: &mut String) {
        match self.settings.public_base_url() {
            Some(url) => out.push_str(url),
            None => {
                let config = req.app_config();
                let scheme = if config.secure() { "https" } else { "http" };
                let host = req
                    .headers()
                    .get(header::HOST)
                    .and_then(|h| h.to_str().ok())
                    .filter(|h| is_plain_host(h))
                    .unwrap_or_else(|| config.host());
                out.push_str(scheme);
                out.push_str("://");
                out.push_str(host);
                out.push_str(self.settings.base_path());
            }
        }
    }

    /// `<{base}{path}?limit=…[&status=…]&after=…>; rel="next"` (RFC 8288), the link to the
    /// page after `after`. Every value is digits or a status name, so nothing needs
    /// percent-encoding.
    pub fn next_page(
        &self,
        req: &HttpRequest,
        path: &str,
        limit: u32,
        status: Option<&str>,
        after: i64,
    ) -> String {
        let mut digits = itoa::Buffer::new();
        let mut link = String::with_capacity(96);
        link.push('<');
        self.write_public_base(req, &mut link);
        link.push_str(path);
        link.push_str("?limit=");
        link.push_str(digits.format(limit));
        if let Some(status) = status {
            link.push_str("&status=");
            link.push_str(status);
        }
        link.push_str("&after=");
        link.push_str(digits.format(after));
        link.push_str(">; rel=\"next\"");
        link
    }
}

/// Whether a `Host` header is a host name or address and an optional port as clients send them:
/// letters, digits, `-`, `.`, `_`, an IPv6 literal's brackets and colons. Nothing else goes
/// into a link: a `>`, `,` or `;` would end its URI and start a link of the client's choosing.
fn is_plain_host(host: &str) -> bool {
    !host.is_empty()
        && host.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b':' | b'[' | b']')
        })
}

/// The links of the deprecated `GET /pets/{petId}`, one `Link` value (RFC 8288): its successor
/// `<{base}/pets>; rel="successor-version"`, then the operation on the docs page (`docs_page`,
/// at the site's root, not under the base path) as what documents its deprecation
/// (`rel="deprecation"`, RFC 9745 §3) and its sunset (`rel="sunset"`, RFC 8594 §4).
fn successor_link(base: &str, docs_page: &str) -> String {
    let docs = format!("{docs_page}#/pets/getPet");
    format!(
        "<{base}/pets>; rel=\"successor-version\", \
         <{docs}>; rel=\"deprecation\"; type=\"text/html\", \
         <{docs}>; rel=\"sunset\"; type=\"text/html\""
    )
}
