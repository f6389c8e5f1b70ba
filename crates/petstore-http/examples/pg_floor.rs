//! The PostgreSQL floor: the least a server on this stack can do to answer the service's list
//! route from PostgreSQL, measured beside `petstore` by `scripts/bench.sh` so that the service's
//! own work (authentication, rate limits and their headers, request ids, telemetry, the storage
//! interface and its pools) is the distance to it.
//!
//! `GET /v1/pets?limit=N` runs the service's own list query (the SQL Diesel writes for it,
//! prepared once per connection) with tokio-postgres, on one connection per worker opened and
//! driven by that worker's runtime, and answers the service's bytes (the same encoding) with the
//! service's header set: the rate-limit headers, a request id, and `Link` when a next page
//! follows. It runs with the best settings found, not the defaults: generic plans
//! (`plan_cache_mode = force_generic_plan`; PostgreSQL otherwise re-plans this query on every
//! execution, as it never settles on the generic plan for it). No key, no limits, no telemetry.
//!
//! `cargo run --release --example pg_floor -- 127.0.0.1:0 WORKERS postgres://...`

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};

#[path = "floors/answer.rs"]
mod floors;
use petstore_domain::{Pet, PetStatus};
use tokio_postgres::{Client, NoTls, Statement};

/// The service's allocator: part of the stack the floor measures.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The list query as the service's store sends it (Diesel's SQL for `pets::list`).
const LIST: &str = "SELECT \"pets\".\"id\", \"pets\".\"name\", \"pets\".\"category_id\", \
    \"pets\".\"status\" FROM \"pets\" ORDER BY \"pets\".\"id\" ASC LIMIT $1";

/// One worker's connection and its prepared statement.
struct Worker {
    client: Client,
    list: Statement,
}

async fn connect(url: String) -> Result<Worker, tokio_postgres::Error> {
    let mut config: tokio_postgres::Config = url.parse()?;
    config.options("-c plan_cache_mode=force_generic_plan");
    let (client, connection) = config.connect(NoTls).await?;
    // Driven by this worker's runtime: every round trip stays on the worker that asks.
    actix_web::rt::spawn(connection);
    let list = client.prepare(LIST).await?;
    Ok(Worker { client, list })
}

async fn list(worker: web::Data<Worker>, req: HttpRequest) -> HttpResponse {
    let limit = floors::limit(&req);
    let rows = match worker.client.query(&worker.list, &[&(limit + 1)]).await {
        Ok(rows) => rows,
        Err(error) => return HttpResponse::ServiceUnavailable().body(error.to_string()),
    };
    let mut pets = Vec::with_capacity(rows.len());
    for row in &rows {
        let status: &str = row.get(3);
        pets.push(Pet {
            id: row.get(0),
            name: row.get(1),
            category_id: row.get(2),
            status: status.parse().unwrap_or(PetStatus::Available),
        });
    }
    floors::answer(&req, limit, pets)
}

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let bind = args.next().unwrap_or_else(|| "127.0.0.1:8082".into());
    let workers: usize = args.next().and_then(|w| w.parse().ok()).unwrap_or(1);
    let url = args
        .next()
        .unwrap_or_else(|| "postgres://postgres@127.0.0.1:5432/test".into());
    actix_web::rt::System::new().block_on(async move {
        let server = HttpServer::new(move || {
            let url = url.clone();
            App::new()
                .data_factory(move || connect(url.clone()))
                .route("/v1/pets", web::get().to(list))
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
