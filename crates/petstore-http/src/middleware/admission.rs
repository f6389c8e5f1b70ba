//! A resource's admission, as its [`Access`] declares: authentication and rate limiting
//! composed (this is the one place that knows both, and the storage where key bans are kept).

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderMap, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::middleware::Next;
use actix_web::{HttpMessage, ResponseError, web};
use petstore_domain::{Ban, RateDecision, RateLimits, TRACES, async_trait};
use tracing::Instrument;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use super::access::{Access, Counting, Marks};
use crate::auth::{ApiClient, Credentials, bearer_token};
use crate::db::storage_call;
use crate::error::ApiError;
use crate::error::Chain;
use crate::ratelimit::headers;
use crate::ratelimit::{
    Account, BanInForce, KeyBans, LimitError, LimitHeaders, RateStatus, Subject, Tally, Verdict,
    client_address,
};
use crate::state::AppState;

/// Identifies the caller (a valid key, else the client address), counts the request as the
/// resource's `access` says, refuses it with `429` when over a limit or banned, or with `401`
/// when the resource needs a key and none valid was presented, and writes the rate-limit
/// headers and the resource's marks on every answer (the `401` and admission's own refusals
/// included). A refused request does no further work:
/// no body is read, nothing is written. The only storage read on the way is the key lookup,
/// once per key-cache period per key (unknown keys are cached too), and none for a client
/// whose address is banned or at its limit, unless its key was valid when last looked up.
pub async fn admission(
    access: Access,
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    let state = req
        .app_data::<web::Data<AppState>>()
        .expect("BUG: AppState is registered by app()")
        .clone();
    // Under way until answered (or given up): what the webhook sender gives way to. Health
    // checks and metrics scrapes pass no admission, and are not counted.
    let _under_way = state.in_flight.enter();
    gate(access, &state, req, next).await
}

/// The steps: identify the caller, decide on the request, then answer or hand it on with the
/// rate-limit headers.
async fn gate<B: MessageBody>(
    access: Access,
    state: &web::Data<AppState>,
    req: ServiceRequest,
    next: Next<B>,
) -> Result<ServiceResponse<EitherBody<B>>, actix_web::Error> {
    let now = state.clock.unix_seconds();
    let credentials = state.auth.credentials(req.headers());
    let cached = credentials.map(|credentials| (credentials, state.auth.cached(credentials, now)));
    let client = match cached {
        None => None,
        Some((_, Some(cached))) => cached,
        Some((credentials, None)) => {
            // A key this instance has no fresh answer for costs a storage read: not for a
            // client whose address is refused now anyway, unless it was a valid key when this
            // instance last looked it up (a made-up one never was): a client behind an address
            // that others used up (a shared NAT, a /64) keeps its key's own limits. Otherwise
            // the request is counted as the address's, like one without a valid key, and
            // refused without the read.
            if !state.auth.known_valid(credentials, now) {
                let anonymous = Admitted::new(state, &req, None, access);
                if address_refused(state, &anonymous.account, now).await {
                    let (verdict, tally) = decide(state, &anonymous, None, now).await;
                    // Allowed only if the address's window turned meanwhile: then look the key
                    // up.
                    if !matches!(verdict, Ok(Verdict::Allowed(_))) {
                        return annotate(req, next, state, anonymous, (verdict, tally), now).await;
                    }
                }
            }
            match state.auth.fetch(&state.db, credentials, now).await {
                Ok(found) => found,
                Err(error) => {
                    let limits = state.limit_headers.get(state.limiter.anonymous_limits());
                    let successor = successor(state, access.marks, &req);
                    let standing = Standing::Unknown {
                        retry_after: error.retry_after(),
                    };
                    return Ok(refuse(req, &error, |h| {
                        standing.write(h, &limits, now);
                        access.marks.write(h, successor);
                    }));
                }
            }
        }
    };
    if let Some(client) = &client {
        record_use(state, client, now);
    }
    let admitted = Admitted::new(state, &req, client, access);
    let decided = decide(state, &admitted, credentials, now).await;
    annotate(req, next, state, admitted, decided, now).await
}

/// Whether the address `account` is refused now: banned, or at its limit in a window (the
/// limiter's standing, read without counting; a limiter that cannot tell refuses nothing).
async fn address_refused(state: &AppState, account: &Account, now: u64) -> bool {
    match state.limiter.peek(account, now).await {
        Ok(Verdict::Banned(_)) => true,
        Ok(Verdict::Allowed(decision) | Verdict::Limited(decision)) => {
            !decision.allowed || decision.binding().remaining() == 0
        }
        Err(_) => false,
    }
}

/// A request on its way through admission: whom it is counted against, and how.
struct Admitted {
    client: Option<ApiClient>,
    account: Account,
    /// The rate-limit status resource, read by a key: looked at, not counted.
    status_only: bool,
    /// The resource needs a key and none valid was presented: `401` (when not refused first).
    unauthorized: bool,
    /// What the resource adds to its answers.
    marks: Marks,
}

impl Admitted {
    fn new(
        state: &AppState,
        req: &ServiceRequest,
        client: Option<ApiClient>,
        access: Access,
    ) -> Self {
        let limiter = &state.limiter;
        let account = match &client {
            Some(client) => Account {
                subject: Subject::Key(client.key().id),
                limits: client.key().limits(),
                ban: client.key().ban,
            },
            None => Account {
                subject: limiter.address_subject(client_address(&state.trusted_proxies, req)),
                limits: limiter.anonymous_limits(),
                ban: None,
            },
        };
        // The rate-limit status spends nothing: the caller's standing is read, not counted.
        // Only a key's own reads of its status are free: anything else there (no key, another
        // method) is counted like any request.
        let status_only = access.counting == Counting::StandingRead
            && client.is_some()
            && matches!(*req.method(), Method::GET | Method::HEAD);
        Self {
            unauthorized: access.key_required && client.is_none(),
            marks: access.marks,
            client,
            account,
            status_only,
        }
    }
}

/// The limiter's verdict: the caller's standing for the status resource, else the request
/// counted (and the decision counted in the metrics); and where it was counted.
async fn decide(
    state: &AppState,
    admitted: &Admitted,
    credentials: Option<Credentials<'_>>,
    now: u64,
) -> (Result<Verdict, LimitError>, Tally) {
    let limiter = &state.limiter;
    let span = tracing::info_span!(
        target: TRACES,
        "rate limit",
        petstore.ratelimit.subject = if admitted.client.is_some() { "key" } else { "address" },
    );
    let (verdict, tally) = if admitted.status_only {
        let verdict = limiter
            .peek(&admitted.account, now)
            .instrument(span.clone())
            .await;
        (verdict, Tally::Uncounted)
    } else {
        let key_bans = StoredBans { state, credentials };
        let checked = limiter.check(&admitted.account, now, &key_bans);
        let (verdict, tally) = match checked.instrument(span.clone()).await {
            Ok((verdict, tally)) => (Ok(verdict), tally),
            Err(error) => (Err(error), Tally::Uncounted),
        };
        count_decision(state, &verdict, &admitted.account, admitted.client.as_ref());
        (verdict, tally)
    };
    if !span.is_disabled() {
        // On the OpenTelemetry span (a `tracing` record would be a dispatch to every layer).
        span.set_attribute("petstore.ratelimit.outcome", outcome_name(&verdict));
    }
    (verdict, tally)
}

/// Hands an allowed request on, or refuses it; either way with the rate-limit headers.
async fn annotate<B: MessageBody>(
    req: ServiceRequest,
    next: Next<B>,
    state: &AppState,
    admitted: Admitted,
    (verdict, tally): (Result<Verdict, LimitError>, Tally),
    now: u64,
) -> Result<ServiceResponse<EitherBody<B>>, actix_web::Error> {
    let limits = state.limit_headers.get(admitted.account.limits);
    // For the handlers, and the access log (refusals included).
    if let Some(client) = admitted.client {
        req.extensions_mut().insert(client);
    }
    // The `Link` of a deprecated resource, read from the request before it is handed on.
    let successor = successor(state, admitted.marks, &req);
    let mut decision = match outcome(verdict, admitted.account.limits, now) {
        Outcome::Allowed(decision) => decision,
        Outcome::Refused(error, standing) => {
            return Ok(refuse(req, &error, |h| {
                standing.write(h, &limits, now);
                admitted.marks.write(h, successor);
            }));
        }
    };
    if admitted.status_only {
        req.extensions_mut().insert(RateStatus {
            decision,
            limits: admitted.account.limits,
        });
    }
    let mut response = if admitted.unauthorized {
        let presented = bearer_token(req.headers()).is_some();
        refuse(req, &ApiError::Unauthorized { presented }, |_| {})
    } else {
        next.call(req).await?.map_into_left_body()
    };
    // A `304` tells the client nothing new: taken back from its counts, within a bound.
    if response.status() == StatusCode::NOT_MODIFIED
        && state
            .limiter
            .revalidated(&admitted.account, now, tally)
            .await
    {
        decision = decision.taken_back();
    }
    admitted.marks.write(response.headers_mut(), successor);
    headers::write(response.headers_mut(), &decision, &limits, now);
    Ok(response)
}

/// The `Link` to a deprecated resource's successor, for its answers (`None` for any other).
fn successor(state: &AppState, marks: Marks, req: &ServiceRequest) -> Option<HeaderValue> {
    match marks {
        Marks::Deprecated => state.links.successor_link(req.request()),
        Marks::None | Marks::Experimental => None,
    }
}

/// What becomes of a request.
enum Outcome {
    /// Handed on, with its counts.
    Allowed(RateDecision),
    /// Refused: the error answered, and what its rate-limit headers describe.
    Refused(ApiError, Standing),
}

/// The verdict on a request of a caller with `limits`, as what becomes of it.
fn outcome(verdict: Result<Verdict, LimitError>, limits: RateLimits, now: u64) -> Outcome {
    match verdict {
        Ok(Verdict::Allowed(decision)) => Outcome::Allowed(decision),
        Ok(Verdict::Limited(decision)) => Outcome::Refused(
            ApiError::RateLimited {
                limits,
                retry_after: decision.retry_after(now),
            },
            Standing::Counted(decision),
        ),
        Ok(Verdict::Banned(ban)) => Outcome::Refused(
            ApiError::TemporarilyBanned {
                retry_after: ban.until.saturating_sub(now).max(1),
            },
            Standing::Banned(ban),
        ),
        Err(error) => {
            let counted = match &error {
                LimitError::BanNotRecorded { decision, .. } => Some(*decision),
                LimitError::Counters(_) => None,
            };
            let error = ApiError::from(error);
            let standing = match counted {
                Some(decision) => Standing::Counted(decision),
                None => Standing::Unknown {
                    retry_after: error.retry_after(),
                },
            };
            Outcome::Refused(error, standing)
        }
    }
}

/// What a refusal's rate-limit headers describe.
enum Standing {
    /// The request's counts (over a limit).
    Counted(RateDecision),
    /// A ban in force.
    Banned(Ban),
    /// Nothing known: the counts could not be read, or the caller not identified. The
    /// refusal's `Retry-After`, if it has one, is when to look again.
    Unknown { retry_after: Option<u64> },
}

impl Standing {
    fn write(&self, headers: &mut HeaderMap, limits: &LimitHeaders, now: u64) {
        match self {
            Self::Counted(decision) => headers::write(headers, decision, limits, now),
            Self::Banned(ban) => headers::write_ban(headers, *ban, limits, now),
            Self::Unknown { retry_after } => {
                headers::write_unknown(headers, limits, now, *retry_after);
            }
        }
    }
}

/// Records the key's use, at most once a minute per key on this instance, in the background
/// (the request does not wait for it; a failure is logged).
fn record_use(state: &web::Data<AppState>, client: &ApiClient, now: u64) {
    let id = client.key().id;
    if !state.auth.usage.note(id, now) {
        return;
    }
    let state = state.clone();
    let now = i64::try_from(now).unwrap_or(i64::MAX);
    // Its storage call's span is the request's child (when traces are exported).
    let request = tracing::Span::current();
    actix_web::rt::spawn(
        async move {
            if let Err(error) = storage_call!(state.db, touch_key(id, now)).await {
                log::warn!("could not record the use of key {id}: {}", Chain(&error));
            }
        }
        .instrument(request),
    );
}

/// The verdict's name, as the metrics and the traces give it.
fn outcome_name(verdict: &Result<Verdict, LimitError>) -> &'static str {
    match verdict {
        Ok(Verdict::Allowed(_)) => "allowed",
        Ok(Verdict::Limited(_)) => "limited",
        Ok(Verdict::Banned(_)) => "banned",
        Err(_) => "error",
    }
}

/// Counts the decision in [`crate::telemetry::metric::RATE_LIMIT_DECISIONS`].
fn count_decision(
    state: &AppState,
    verdict: &Result<Verdict, LimitError>,
    account: &Account,
    client: Option<&ApiClient>,
) {
    state.request_metrics.decision(
        outcome_name(verdict),
        client.map_or("anonymous", |client| client.key().plan.as_str()),
        account.subject.kind(),
    );
}

/// The error's response, with the rate-limit headers `write` puts on it.
fn refuse<B>(
    req: ServiceRequest,
    error: &ApiError,
    write: impl FnOnce(&mut HeaderMap),
) -> ServiceResponse<EitherBody<B>> {
    let mut response = error.error_response();
    write(response.headers_mut());
    req.into_response(response).map_into_right_body()
}

/// Key bans, kept with the keys in the storage (where `petstore keys` sees and lifts them).
struct StoredBans<'a> {
    state: &'a AppState,
    /// What the caller presented: after a ban the key is read again under it, so this
    /// instance's cache holds the ban in force.
    credentials: Option<Credentials<'a>>,
}

#[async_trait(?Send)]
impl KeyBans for StoredBans<'_> {
    async fn ban_key(
        &self,
        id: i64,
        ban: Ban,
        now: u64,
    ) -> Result<Option<BanInForce>, Box<dyn std::error::Error + Send + Sync>> {
        let state = self.state;
        // `false` when another request just imposed one: the key read below has it.
        let started = storage_call!(state.db, ban_key(id, ban, now)).await?;
        let Some(credentials) = self.credentials else {
            return Ok(None);
        };
        let client: Option<ApiClient> = state.auth.look_up(&state.db, credentials).await?;
        Ok(client
            .and_then(|client| client.key().ban_at(now))
            .map(|ban| BanInForce { ban, started }))
    }
}
