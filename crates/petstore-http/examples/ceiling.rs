//! The benchmark ceiling: the least an actix-web server can do for the same requests, measured
//! beside `petstore` by `scripts/bench.sh` so that every figure is a ratio to what the framework
//! itself reaches on the same machine at the same moment.
//!
//! `GET /v1/pets` answers a static 20-pet JSON array with the headers `petstore` sends;
//! `POST /v1/pets` parses the JSON body and echoes it with `201`. Same worker count, same
//! logging off/on as the run asks.
//!
//! `cargo run --release --example ceiling -- 127.0.0.1:0 [workers]`

use actix_web::http::header::{self, HeaderName, HeaderValue};
use actix_web::{App, HttpResponse, HttpServer, web};
use petstore_domain::{Pet, PetStatus};

fn page() -> web::Bytes {
    let pets: Vec<Pet> = (1..=20)
        .map(|id| Pet {
            id,
            name: format!("pet {id}"),
            category_id: 1,
            status: PetStatus::Available,
        })
        .collect();
    web::Bytes::from(serde_json::to_vec(&pets).expect("serialises"))
}

fn with_limit_headers(mut response: HttpResponse) -> HttpResponse {
    let headers = response.headers_mut();
    for (name, value) in [
        ("x-ratelimit-limit", "1000000"),
        ("x-ratelimit-remaining", "999999"),
        ("x-ratelimit-reset", "1795264500"),
        (
            "ratelimit-policy",
            "\"minute\";q=1000000;w=60, \"day\";q=100000000;w=86400",
        ),
        (
            "ratelimit",
            "\"minute\";r=999999;t=41, \"day\";r=99999999;t=41095",
        ),
    ] {
        headers.insert(
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        );
    }
    response
}

async fn list(body: web::Data<web::Bytes>) -> HttpResponse {
    with_limit_headers(
        HttpResponse::Ok()
            .content_type("application/json")
            .body(body.get_ref().clone()),
    )
}

async fn create(body: web::Json<serde_json::Value>) -> HttpResponse {
    with_limit_headers(
        HttpResponse::Created()
            .insert_header((header::LOCATION, "http://127.0.0.1/v1/pets/1"))
            .json(body.into_inner()),
    )
}

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let bind = args.next().unwrap_or_else(|| "127.0.0.1:8081".into());
    let workers: usize = args.next().and_then(|w| w.parse().ok()).unwrap_or(1);
    let body = web::Data::new(page());
    actix_web::rt::System::new().block_on(async move {
        let server = HttpServer::new(move || {
            App::new()
                .app_data(body.clone())
                .route("/v1/pets", web::get().to(list))
                .route("/v1/pets", web::post().to(create))
        })
        .workers(workers)
        .bind(bind)?;
        for addr in server.addrs() {
            println!("listening on http://{addr}");
        }
        std::io::Write::flush(&mut std::io::stdout())?;
        server.run().await
    })
}
