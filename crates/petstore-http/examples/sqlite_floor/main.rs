//! The SQLite floor: the least a server on this stack can do to answer the service's list and
//! get-by-id routes from SQLite, measured beside `petstore` by `scripts/bench.sh` so that the
//! service's own work (authentication, rate limits and their headers, request ids, spans,
//! metrics, the middleware, the storage interface) is the distance to it.
//!
//! actix-web, Diesel over the bundled SQLite built with this project's flags
//! (`.cargo/config.toml`: build from the repository's root), one connection per worker opened
//! as the service opens its own, the service's queries (the same Diesel code, so the same SQL,
//! prepared once per connection), the service's allocator, bytes (the same encoder) and header
//! set (tested against the service in `tests/api/floor.rs`). No key, no limits, no telemetry,
//! no validation.
//!
//! `cargo run --release --example sqlite_floor -- 127.0.0.1:0 WORKERS path/to/petstore.db`

mod floor;

use actix_web::{HttpServer, web};

/// The service's allocator: part of the stack the floor measures.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let bind = args.next().unwrap_or_else(|| "127.0.0.1:8083".into());
    let workers: usize = args.next().and_then(|w| w.parse().ok()).unwrap_or(1);
    let path = args.next().unwrap_or_else(|| "petstore.db".into());
    actix_web::rt::System::new().block_on(async move {
        let server = HttpServer::new(move || {
            let worker = floor::open(&path).unwrap_or_else(|error| {
                eprintln!("sqlite_floor: cannot open {path}: {error}");
                std::process::exit(1)
            });
            floor::app(web::Data::new(worker))
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
