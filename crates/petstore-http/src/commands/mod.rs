//! The `petstore` binary's commands: parse the command line ([`cli`]) and run `serve` (the
//! default), `migrate`, `openapi`, `keys` or `orders`. This is where the storage backend is chosen and opened
//! ([`open_store`]); everything after it talks to a `dyn Storage`.

pub mod cli;
mod keys;
mod orders;
mod serve;

use std::error::Error;
use std::future::Future;

use clap::Parser;
use petstore_store::{Store, StoreConfig};

pub use serve::serve;

use cli::{Cli, Command, ServeFromEnvironment};

/// Parses the command line and runs it.
pub fn run() -> Result<(), Box<dyn Error>> {
    let cli = Cli::parse();
    crate::telemetry::logging::init(cli.log_format).map_err(|error| error as Box<dyn Error>)?;
    match cli.command {
        None => {
            let serve = ServeFromEnvironment::try_parse_from(["petstore"])?;
            serve_blocking(serve.args.into_config(), cli.database.store_config(true))
        }
        Some(Command::Serve(args)) => {
            serve_blocking(args.into_config(), cli.database.store_config(true))
        }
        Some(Command::Migrate) => {
            administer(cli.database.store_config(false), |store| async move {
                let applied = store.migrate().await?;
                eprintln!("{} migration(s) applied", applied.len());
                Ok(())
            })
        }
        Some(Command::Openapi(args)) => {
            let document = crate::routes::openapi::document(&args.server()).to_pretty_json()?;
            println!("{document}");
            Ok(())
        }
        Some(Command::Keys(command)) => {
            administer(cli.database.store_config(false), |store| async move {
                store.migrate().await?;
                keys::keys(&store, command).await
            })
        }
        Some(Command::Orders(command)) => {
            administer(cli.database.store_config(false), |store| async move {
                store.migrate().await?;
                orders::orders(&store, command).await
            })
        }
    }
}

/// Runs an administrative command against the store `config` names, on a runtime of its own,
/// and closes the store before returning: no connection or thread of it outlives the command
/// (the runtime, dropped last, joins its blocking threads).
fn administer<F, Fut>(config: StoreConfig, command: F) -> Result<(), Box<dyn Error>>
where
    F: FnOnce(Store) -> Fut,
    Fut: Future<Output = Result<(), Box<dyn Error>>>,
{
    actix_web::rt::System::new().block_on(async move {
        let store = open_store(&config, false)?;
        let result = command(store.clone()).await;
        store.close();
        result
    })
}

/// Opens the storage `config` names: today the Diesel store (SQLite or PostgreSQL, by URL). A
/// backend of another kind is chosen here, and only here.
fn open_store(config: &StoreConfig, keep_warm: bool) -> Result<Store, Box<dyn Error>> {
    let config = StoreConfig {
        keep_warm,
        ..config.clone()
    };
    Ok(Store::open(&config)?)
}

fn serve_blocking(config: crate::config::Config, store: StoreConfig) -> Result<(), Box<dyn Error>> {
    actix_web::rt::System::new().block_on(serve(config, store))
}

/// A Unix time in RFC 3339 (UTC, whole seconds) for the listings; `-` for none.
fn timestamp(unix: Option<i64>) -> String {
    unix.and_then(|secs| u64::try_from(secs).ok())
        .map(|secs| {
            humantime::format_rfc3339_seconds(
                std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs),
            )
            .to_string()
        })
        .unwrap_or_else(|| "-".into())
}
