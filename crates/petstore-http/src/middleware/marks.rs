//! A resource's own layer: a valid key is required, and the resource's marks (deprecation,
//! stability) go on every one of its responses, errors included.

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderName, HeaderValue};
use actix_web::middleware::Next;
use actix_web::{HttpMessage, web};

use crate::auth::ApiClient;
use crate::error::ApiError;
use crate::state::AppState;
use crate::sunset::{DEPRECATED_AT, SUNSET};

/// What a resource adds to every one of its responses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marks {
    /// Nothing.
    None,
    /// `Deprecation`, `Sunset`, and a `Link` to the replacement (`GET /pets` with a `status`
    /// filter): `GET /pets/{petId}`.
    Deprecated,
    /// `X-API-Stability: experimental`: the orders area, whose shape may change without a new
    /// version.
    Experimental,
}

const DEPRECATION: HeaderName = HeaderName::from_static("deprecation");
const SUNSET_HEADER: HeaderName = HeaderName::from_static("sunset");
const STABILITY: HeaderName = HeaderName::from_static("x-api-stability");

/// Answers `401` when admission found no valid key (so `401` precedes `405` and every other
/// answer of the resource), and adds `marks` to whatever comes back.
pub async fn require_key_and_mark(
    marks: Marks,
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let successor = match marks {
        Marks::Deprecated => req
            .app_data::<web::Data<AppState>>()
            .and_then(|state| state.links.successor_link(req.request())),
        Marks::None | Marks::Experimental => None,
    };
    let mut response = if req.extensions().contains::<ApiClient>() {
        next.call(req).await?.map_into_left_body()
    } else {
        req.error_response(ApiError::Unauthorized)
            .map_into_right_body()
    };
    let headers = response.headers_mut();
    match marks {
        Marks::None => {}
        Marks::Deprecated => {
            headers.insert(DEPRECATION, HeaderValue::from_static(DEPRECATED_AT));
            headers.insert(SUNSET_HEADER, HeaderValue::from_static(SUNSET));
            if let Some(link) = successor {
                headers.append(header::LINK, link);
            }
        }
        Marks::Experimental => {
            headers.insert(STABILITY, HeaderValue::from_static("experimental"));
        }
    }
    Ok(response)
}
