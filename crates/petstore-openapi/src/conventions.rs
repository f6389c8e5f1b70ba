//! What the annotations leave to convention, applied to every operation of a document alike
//! ([`Conventions`]): the bearer scheme, the headers every answer carries, the errors any request
//! can meet, what a resource's marks add (deprecation, stability), conditional reads, the `405`
//! of other methods, and the links from what creates a resource to what reads and changes it.

use petstore_domain::query::{DEFAULT_LIMIT, MAX_LIMIT, MIN_LIMIT};
use serde_json::json;
use utoipa::Modify;
use utoipa::openapi::extensions::Extensions;
use utoipa::openapi::header::{Header, HeaderBuilder};
use utoipa::openapi::path::{Operation, ParameterBuilder, ParameterIn, PathItem};
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{
    ContentBuilder, Deprecated, OpenApi as Document, Ref, RefOr, Required, Response,
    ResponseBuilder,
};

use petstore_http::sunset::{DELETE_ORDER_SUNSET, SUNSET};

/// A bearer security scheme: its name in the document, the tokens' format, its description.
pub(crate) struct Bearer {
    pub(crate) name: &'static str,
    pub(crate) format: &'static str,
    pub(crate) description: &'static str,
}

/// Declares `scheme` in `document`.
pub(crate) fn declare(document: &mut Document, scheme: &Bearer) {
    let http = HttpBuilder::new()
        .scheme(HttpAuthScheme::Bearer)
        .bearer_format(scheme.format)
        .description(Some(scheme.description))
        .build();
    let components = document.components.get_or_insert_with(Default::default);
    components
        .security_schemes
        .insert(scheme.name.into(), RefOr::T(SecurityScheme::Http(http)));
}

/// The API keys' security scheme.
const BEARER: Bearer = Bearer {
    name: "bearer",
    format: "pst_ followed by 64 lowercase hex digits",
    description: "An API key. Missing, malformed, unknown and revoked keys all get `401 \
        unauthorized`.",
};

/// What the annotations leave to convention, applied to every operation alike.
pub(crate) struct Conventions;

impl Modify for Conventions {
    fn modify(&self, document: &mut Document) {
        declare(document, &BEARER);
        let components = document.components.get_or_insert_with(Default::default);
        for (name, integer, description) in SHARED_HEADERS {
            let kind = if integer { Type::Integer } else { Type::String };
            components
                .headers
                .insert(name.into(), RefOr::T(header_of(kind, description, true)));
        }
        for (name, description) in ALWAYS_HEADERS {
            components
                .headers
                .insert(name.into(), RefOr::T(header(description, true)));
        }
        declare_revalidation(document, &REVALIDATION);
        describe_methods(
            document,
            "after admission: a missing key's `401` and a `429` come first",
        );
        let security = vec![SecurityRequirement::new(BEARER.name, Vec::<String>::new())];
        for item in document.paths.paths.values_mut() {
            for operation in operations(item) {
                let open = operation
                    .operation_id
                    .as_deref()
                    .is_some_and(|id| OPEN.contains(&id));
                // An open operation needs no key: no security requirement (`[{}]`, as
                // annotated), and no `401`.
                if !open {
                    operation.security = Some(security.clone());
                }
                describe_limit(operation);
                let deprecated = matches!(operation.deprecated, Some(Deprecated::True))
                    .then(|| schedule(operation.operation_id.as_deref()))
                    .flatten();
                let experimental = operation
                    .extensions
                    .as_ref()
                    .is_some_and(|ext| ext.contains_key("x-stability"));
                if operation
                    .operation_id
                    .as_deref()
                    .is_some_and(is_conditional)
                {
                    make_conditional(operation, &REVALIDATION);
                }
                let responses = &mut operation.responses.responses;
                for (status, description) in COMMON_ERRORS {
                    if open && status == 401 {
                        continue;
                    }
                    responses
                        .entry(status.to_string())
                        .or_insert_with(|| RefOr::T(error_doc(description)));
                }
                for (status, response) in responses.iter_mut() {
                    let RefOr::T(response) = response else {
                        continue;
                    };
                    add_headers(response, status, deprecated.as_ref(), experimental);
                }
                crate::links::add_links(operation);
            }
        }
    }
}

/// Headers every response carries (`Retry-After`: every 429 and 503), defined once under
/// `components/headers`: name, whether the value is an integer, description.
const SHARED_HEADERS: [(&str, bool, &str); 7] = [
    (
        "X-RateLimit-Limit",
        true,
        "Requests allowed in the window closest to exhaustion (minute or day).",
    ),
    (
        "X-RateLimit-Remaining",
        true,
        "Requests left in that window.",
    ),
    (
        "X-RateLimit-Reset",
        true,
        "Unix time (seconds) at which that window resets.",
    ),
    (
        "RateLimit",
        false,
        "Both windows' remaining requests and seconds to reset, e.g. \
         `\"minute\";r=59;t=42, \"day\";r=999;t=40000` (IETF draft-ietf-httpapi-ratelimit-headers).",
    ),
    (
        "RateLimit-Policy",
        false,
        "Both windows' quotas, e.g. `\"minute\";q=60;w=60, \"day\";q=1000;w=86400`.",
    ),
    ("Retry-After", true, "Seconds to wait before retrying."),
    (
        "X-Request-Id",
        false,
        "The request's id, as the service logged it: the request's own `X-Request-Id` when it \
         sent one of 1 to 40 letters, digits, `-`, `_`, `.`, `:`, `+`, `/` or `=`, else a new UUIDv7. Quote it when \
         reporting a problem.",
    ),
];

/// The operations that need no key.
const OPEN: [&str; 1] = ["getApiIndex"];

/// Whether the public operation `id`'s `200` is tagged and its `GET` may be conditional.
pub(crate) fn is_conditional(id: &str) -> bool {
    CONDITIONAL.contains(&id)
}

/// The operations whose `200` is tagged and whose `GET` may be conditional.
const CONDITIONAL: [&str; 9] = [
    "listPets",
    "getPet",
    "listOrders",
    "getOrder",
    "getInventory",
    "listWebhookEndpoints",
    "getWebhookEndpoint",
    "listWebhookDeliveries",
    "getWebhookDelivery",
];

/// The headers of a tagged representation (its `200` and `304`), under `components/headers`.
const CACHE_HEADERS: [(&str, &str); 3] = [
    (
        "ETag",
        "The representation's validator, weak (`W/\"...\"`): the same for the same content on \
         every instance, another after any change of what the body shows (a page's `next` link \
         included). Send it back in `If-None-Match` to be answered `304` while nothing changed.",
    ),
    (
        "Cache-Control",
        "`private, no-cache`: a client's own cache may keep the answer and must ask again \
         (`If-None-Match`) before each use; no shared cache keeps it.",
    ),
    (
        "Vary",
        "`Authorization`: an answer is for the credential it was asked with.",
    ),
];

/// Headers of other answers, under `components/headers`: every answer's, and errors'.
const ALWAYS_HEADERS: [(&str, &str); 2] = [
    (
        "X-Content-Type-Options",
        "`nosniff`: the body is what `Content-Type` says, nothing a browser should guess at.",
    ),
    (
        "Cache-Control-No-Store",
        "`Cache-Control: no-store`: an error (or a standing that changes with every request) is \
         never stored by a cache.",
    ),
];

/// What a document says of conditional reads: `If-None-Match` (under `components/parameters`)
/// and the `304`.
pub(crate) struct Revalidation {
    pub(crate) if_none_match: &'static str,
    pub(crate) not_modified: &'static str,
}

/// The public API's: a `304` is taken back from the key's counts.
const REVALIDATION: Revalidation = Revalidation {
    if_none_match: "Entity tags of representations the client holds (RFC 9110 §13.1.2): one, a \
        comma-separated list, or `*`, compared weakly. When one is the current representation's, \
        the answer is `304 Not Modified` with no body. A `304` is taken back from the key's \
        counts: free, up to as many a minute as the key's per-minute limit and a day as its \
        per-day limit (past those it counts like any answer). It still needs a valid key.",
    not_modified: "Not modified: `If-None-Match` names the current representation's tag. No \
        body; the headers the `200` would carry. Not counted against the limits (up to the key's \
        per-minute limit of them a minute, and its per-day limit a day): its rate-limit headers \
        show the counts without it.",
};

/// Declares in `document` the headers of a tagged answer and `If-None-Match`, as `revalidation`
/// describes it.
pub(crate) fn declare_revalidation(document: &mut Document, revalidation: &Revalidation) {
    let components = document.components.get_or_insert_with(Default::default);
    for (name, description) in CACHE_HEADERS {
        components
            .headers
            .insert(name.into(), RefOr::T(header(description, true)));
    }
    let if_none_match = ParameterBuilder::new()
        .name("If-None-Match")
        .parameter_in(ParameterIn::Header)
        .required(Required::False)
        .schema(Some(ObjectBuilder::new().schema_type(Type::String)))
        .description(Some(revalidation.if_none_match))
        .build();
    components
        .parameters
        .insert("If-None-Match".into(), RefOr::T(if_none_match));
}

/// A tagged operation: `If-None-Match`, the tag's headers on its `200`, and its `304`, as
/// `revalidation` describes them (declared in the document: [`declare_revalidation`]).
pub(crate) fn make_conditional(operation: &mut Operation, revalidation: &Revalidation) {
    operation
        .parameters
        .get_or_insert_with(Vec::new)
        .push(RefOr::Ref(Ref::new(
            "#/components/parameters/If-None-Match",
        )));
    let responses = &mut operation.responses.responses;
    if let Some(RefOr::T(ok)) = responses.get_mut("200") {
        for (name, _) in CACHE_HEADERS {
            ok.headers.insert(name.into(), shared(name));
        }
    }
    // A `304` carries the headers its `200` would, a page's `next` link among them.
    let link = match responses.get("200") {
        Some(RefOr::T(ok)) => ok.headers.get("Link").cloned(),
        _ => None,
    };
    let mut not_modified = ResponseBuilder::new()
        .description(revalidation.not_modified)
        .build();
    for (name, _) in CACHE_HEADERS {
        not_modified.headers.insert(name.into(), shared(name));
    }
    if let Some(link) = link {
        not_modified.headers.insert("Link".into(), link);
    }
    responses.insert("304".into(), RefOr::T(not_modified));
}

/// The operations of a path (of the methods the documents use).
pub(crate) fn operations(item: &mut PathItem) -> impl Iterator<Item = &mut Operation> {
    [
        &mut item.get,
        &mut item.post,
        &mut item.put,
        &mut item.patch,
        &mut item.delete,
    ]
    .into_iter()
    .flatten()
}

/// Says on each path of `document` that any method it does not list is answered `405` (the
/// response under `components/responses`), `first` what comes before: OpenAPI describes only
/// the methods a path has.
pub(crate) fn describe_methods(document: &mut Document, first: &str) {
    let components = document.components.get_or_insert_with(Default::default);
    components
        .responses
        .insert("MethodNotAllowed".into(), RefOr::T(method_not_allowed()));
    for item in document.paths.paths.values_mut() {
        describe_path(item, first);
        // Each operation points at it: the answer its path gives any other method.
        for operation in operations(item) {
            operation.responses.responses.insert(
                "405".into(),
                RefOr::Ref(Ref::new("#/components/responses/MethodNotAllowed")),
            );
        }
    }
}

fn describe_path(item: &mut PathItem, first: &str) {
    let mut allow = Vec::new();
    if item.get.is_some() {
        allow.extend(["GET", "HEAD"]);
    }
    if item.post.is_some() {
        allow.push("POST");
    }
    if item.put.is_some() {
        allow.push("PUT");
    }
    if item.patch.is_some() {
        allow.push("PATCH");
    }
    if item.delete.is_some() {
        allow.push("DELETE");
    }
    let allow = allow.join(", ");
    item.description = Some(format!(
        "Any other method is answered `405 method_not_allowed` with `Allow: {allow}` \
         ([MethodNotAllowed](#/components/responses/MethodNotAllowed)); {first}."
    ));
}

/// The `405` of any method a path does not list.
fn method_not_allowed() -> Response {
    let mut response = error_doc(
        "`method_not_allowed`: the path does not serve this method; `Allow` lists those it does.",
    );
    response.headers.insert(
        "Allow".into(),
        RefOr::T(header(
            "The methods the path serves, e.g. `GET, HEAD, POST`.",
            true,
        )),
    );
    response
}

/// Responses any operation can give, whatever its input.
const COMMON_ERRORS: [(u16, &str); 4] = [
    (
        401,
        "`unauthorized`: the API key is missing, malformed, unknown or revoked.",
    ),
    (
        429,
        "`rate_limited` (over the plan's per-minute or per-day limit) or `temporarily_banned` \
         (for sending on after 429s). Retry after `Retry-After`, with exponential backoff.",
    ),
    (
        500,
        "`internal_error`: an unexpected failure, logged by the service.",
    ),
    (
        503,
        "`service_unavailable`: the database or the shared rate-limit store is unavailable; or, \
         for writes, `storage_full`: the database's disk is full. Retry after `Retry-After`.",
    ),
];

/// What a deprecated operation's answers announce.
struct Schedule {
    deprecated_at: &'static str,
    sunset: &'static str,
    successor: &'static str,
    anchor: &'static str,
    /// Whether its `200` carries the `Link` too (the successor link of `getPet`'s `200` is
    /// described by the operation itself).
    link_always: bool,
    /// Whether admission's own answers (`401`, `429`) carry the marks too (a resource's marks,
    /// as `getPet`'s are), or only the operation's answers (`deleteOrder`, one method of a
    /// resource whose others are not deprecated).
    on_admission: bool,
}

/// The deprecated operations' schedules, by operation id.
fn schedule(operation_id: Option<&str>) -> Option<Schedule> {
    match operation_id? {
        "getPet" => Some(Schedule {
            deprecated_at: "`@1767225600`, 2026-01-01",
            sunset: SUNSET,
            successor: "{base}/pets",
            anchor: "pets/getPet",
            link_always: false,
            on_admission: true,
        }),
        "deleteOrder" => Some(Schedule {
            deprecated_at: "`@1795737600`, 2026-11-27",
            sunset: DELETE_ORDER_SUNSET,
            successor: "{base}/store/orders/{orderId}/cancel",
            anchor: "store/deleteOrder",
            link_always: true,
            on_admission: false,
        }),
        _ => None,
    }
}

fn add_headers(
    response: &mut Response,
    status: &str,
    deprecated: Option<&Schedule>,
    experimental: bool,
) {
    let headers = &mut response.headers;
    for name in [
        "X-RateLimit-Limit",
        "X-RateLimit-Remaining",
        "X-RateLimit-Reset",
    ] {
        headers.insert(name.into(), shared(name));
    }
    for name in ["RateLimit", "RateLimit-Policy", "X-Request-Id"] {
        headers.insert(name.into(), shared(name));
    }
    if status == "429" || status == "503" {
        headers.insert("Retry-After".into(), shared("Retry-After"));
    }
    headers.insert(
        "X-Content-Type-Options".into(),
        shared("X-Content-Type-Options"),
    );
    // Errors are never stored by a cache (a success's caching is its operation's to say).
    if status.starts_with('4') || status.starts_with('5') {
        headers.insert("Cache-Control".into(), shared("Cache-Control-No-Store"));
    }
    if status == "401" {
        headers.insert(
            "WWW-Authenticate".into(),
            RefOr::T(header(
                "The bearer challenge (RFC 6750 §3): `Bearer realm=\"petstore\"` when no bearer \
                 token was sent; `Bearer realm=\"petstore\", error=\"invalid_token\"` when one \
                 was and is not a valid key (malformed, unknown, revoked or expired alike).",
                true,
            )),
        );
    }
    if status == "403" {
        headers.insert(
            "WWW-Authenticate".into(),
            RefOr::T(header(
                "`Bearer realm=\"petstore\", error=\"insufficient_scope\"` (RFC 6750 §3): the \
                 key's scope does not allow the operation.",
                true,
            )),
        );
    }
    if let Some(schedule) = deprecated {
        let required = schedule.on_admission || !matches!(status, "401" | "429");
        headers.insert(
            "Deprecation".into(),
            RefOr::T(header(
                &format!(
                    "When the operation was deprecated (RFC 9745): {}.",
                    schedule.deprecated_at
                ),
                required,
            )),
        );
        headers.insert(
            "Sunset".into(),
            RefOr::T(header(
                &format!("When it is removed (RFC 8594): `{}`.", schedule.sunset),
                required,
            )),
        );
        if status != "200" || schedule.link_always {
            headers.insert(
                "Link".into(),
                RefOr::T(header(
                    &format!(
                        "`<{}>; rel=\"successor-version\"`, the replacement; then \
                         `<{{site}}/docs/#/{}>; rel=\"deprecation\"; type=\"text/html\"` \
                         (RFC 9745 §3) and the same target with `rel=\"sunset\"` (RFC 8594 \
                         §4), where the deprecation and removal are documented (`{{site}}` is \
                         the base address without its path).",
                        schedule.successor, schedule.anchor
                    ),
                    false,
                )),
            );
        }
    }
    if experimental {
        headers.insert(
            "X-API-Stability".into(),
            RefOr::T(header(
                "`experimental`: may change without a new version.",
                true,
            )),
        );
    }
}

/// The `limit` query parameter's bounds and default, from the domain constants its parser uses.
fn describe_limit(operation: &mut Operation) {
    for parameter in operation.parameters.iter_mut().flatten() {
        let RefOr::T(parameter) = parameter else {
            continue;
        };
        if parameter.name == "limit" && parameter.parameter_in == ParameterIn::Query {
            parameter.schema = Some(
                ObjectBuilder::new()
                    .schema_type(Type::Integer)
                    .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int32)))
                    .minimum(Some(MIN_LIMIT))
                    .maximum(Some(MAX_LIMIT))
                    .default(Some(json!(DEFAULT_LIMIT)))
                    .into(),
            );
        }
    }
}

fn shared(name: &str) -> RefOr<Header> {
    RefOr::Ref(Ref::new(format!("#/components/headers/{name}")))
}

/// A string header.
fn header(description: &str, required: bool) -> Header {
    header_of(Type::String, description, required)
}

/// A header whose value is of `kind`. `required` goes in as a field of its own: OpenAPI's Header
/// Object has it, utoipa's `Header` type does not.
fn header_of(kind: Type, description: &str, required: bool) -> Header {
    let mut header = HeaderBuilder::new()
        .schema(Some(ObjectBuilder::new().schema_type(kind)))
        .description(Some(description))
        .build();
    if required {
        header.extensions = Some(Extensions::from_iter([("required", json!(true))]));
    }
    header
}

/// An Error object response, as documented.
pub(crate) fn error_doc(description: &str) -> Response {
    ResponseBuilder::new()
        .description(description)
        .content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("Error")))
                .build(),
        )
        .build()
}
