//! The MariaDB (MySQL) floor: the least a server on this stack can do to answer the service's
//! list route from MariaDB, measured beside `petstore` by `scripts/bench.sh --backends mysql`,
//! so that the service's own work (authentication, rate limits and their headers, request ids,
//! telemetry, the storage interface and its pools) is the distance to it.
//!
//! `GET /v1/pets?limit=N` runs the service's own list query (the SQL Diesel writes for it on
//! MySQL, prepared once per connection) with mysql_async, on one connection per worker opened
//! by that worker's runtime, and answers the service's bytes with the service's header set, as
//! the PostgreSQL floor does (`pg_floor.rs`). No key, no limits, no telemetry.
//!
//! `cargo run --release --example mysql_floor -- 127.0.0.1:0 WORKERS mysql://...`

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};

#[path = "floors/answer.rs"]
mod floors;
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts, Statement};
use petstore_domain::{Pet, PetStatus};
use tokio::sync::Mutex;

/// The service's allocator: part of the stack the floor measures.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The list query as the service's store sends it (Diesel's SQL for `pets::list` on MySQL).
const LIST: &str = "SELECT `pets`.`id`, `pets`.`name`, `pets`.`category_id`, `pets`.`status` \
    FROM `pets` ORDER BY `pets`.`id` ASC LIMIT ?";

/// One worker's connection and its prepared statement.
struct Worker {
    conn: Mutex<(Conn, Statement)>,
}

async fn connect(url: String) -> Result<Worker, mysql_async::Error> {
    let mut conn = Conn::new(Opts::from_url(&url)?).await?;
    let list = conn.prep(LIST).await?;
    Ok(Worker {
        conn: Mutex::new((conn, list)),
    })
}

async fn list(worker: web::Data<Worker>, req: HttpRequest) -> HttpResponse {
    let limit = floors::limit(&req);
    let rows: Vec<(i64, String, i64, String)> = {
        let mut guard = worker.conn.lock().await;
        let (conn, statement) = &mut *guard;
        match conn.exec(&*statement, (limit + 1,)).await {
            Ok(rows) => rows,
            Err(error) => return HttpResponse::ServiceUnavailable().body(error.to_string()),
        }
    };
    let pets: Vec<Pet> = rows
        .into_iter()
        .map(|(id, name, category_id, status)| Pet {
            id,
            name,
            category_id,
            status: status.parse().unwrap_or(PetStatus::Available),
        })
        .collect();
    floors::answer(&req, limit, pets)
}

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let bind = args.next().unwrap_or_else(|| "127.0.0.1:8083".into());
    let workers: usize = args.next().and_then(|w| w.parse().ok()).unwrap_or(1);
    let url = args
        .next()
        .unwrap_or_else(|| "mysql://root@127.0.0.1:3306/test".into());
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
