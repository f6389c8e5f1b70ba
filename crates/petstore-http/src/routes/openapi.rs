//! The API's descriptions of themselves, served: the program builds both OpenAPI documents
//! (`petstore-openapi`, which describes every operation) and hands them over in [`Documents`]; the
//! public one is answered at `{base}/openapi.json` naming the servers, the admin one at
//! `/admin/v1/openapi.json` as it is.

use actix_web::{HttpRequest, HttpResponse, web};
use utoipa::openapi::{OpenApi as Document, Server};

use super::respond::tagged_bytes;
use crate::conditional::Caching;
use crate::error::ApiError;
use crate::state::AppState;

/// The public and the admin API's documents.
#[derive(Clone)]
pub struct Documents {
    public: Document,
    admin: Document,
}

impl Documents {
    /// `public` without servers (they are named as it is served), `admin` as it is served.
    pub fn new(public: Document, admin: Document) -> Self {
        Self { public, admin }
    }

    /// The public document listing the servers an operator named (`Production`, `Staging`,
    /// ...), each with its description; `own` (the API's base address, e.g.
    /// `https://api.example.com/v1`, or just the base path) alone when none was named.
    pub fn public(&self, servers: &[(String, String)], own: &str) -> Document {
        let mut document = self.public.clone();
        let servers = if servers.is_empty() {
            vec![Server::new(own)]
        } else {
            servers
                .iter()
                .map(|(name, url)| {
                    let mut server = Server::new(url);
                    server.description = Some(name.clone());
                    server
                })
                .collect()
        };
        document.servers = Some(servers);
        document
    }

    /// The admin document.
    pub fn admin(&self) -> &Document {
        &self.admin
    }
}

/// `GET {base}/openapi.json`: the document, naming the servers the operator named, or the
/// public base address as `Link` does.
pub async fn openapi_json(
    state: web::Data<AppState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let servers = state.links.settings().servers();
    let own = state.links.public_base(&req);
    answer(&req, &state.documents.public(servers, &own))
}

/// `GET /admin/v1/openapi.json` (no token needed: it describes, it grants nothing).
pub async fn admin_openapi_json(
    state: web::Data<AppState>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    answer(&req, state.documents.admin())
}

/// `document` as the answer to a `GET` of it, tagged by its bytes.
fn answer(req: &HttpRequest, document: &Document) -> Result<HttpResponse, ApiError> {
    let body = document.to_pretty_json().map_err(ApiError::internal)?;
    Ok(tagged_bytes(
        req,
        HttpResponse::Ok(),
        body.into_bytes(),
        Caching::Public,
    ))
}
