//! The `petstore` program: parse the command line ([`cli`]: clap, every setting also from a
//! `PETSTORE_*` variable) and run `serve` (the default: the `petstore-http` application over the
//! chosen backend, with the admin and metrics listeners), `migrate`, `openapi`, `keys`,
//! `admin-tokens`, `orders` or `health`. This is where the storage backend is chosen and opened
//! ([`open_store`]); everything after it talks to a `dyn Storage`. `main.rs` only calls [`run`].
//!
//! The process's logging is set up here too ([`logging`]: the subscriber, text or JSON lines,
//! every line redacted of secrets).
//!
//! It depends on every other crate of the service, and none depends on it.

mod admin_tokens;
pub mod cli;
mod counters;
mod keys;
pub mod logging;
mod orders;
mod sending;
mod serve;
mod traces;
mod usage;

use std::error::Error;
use std::future::Future;
use std::process::ExitCode;

use clap::Parser;
use petstore_store::{Backend, Store, StoreConfig};
use traces::Traces;

pub use serve::{MetricsEndpoint, ServeConfig, serve};

use cli::{Cli, Command, HealthArgs, MigrateArgs, MigrateCommand, ServeFromEnvironment};

/// Parses the command line and runs it; the exit status of a command that has more to say than
/// success or failure (`keys verify`) comes back as `Ok`.
pub fn run() -> Result<ExitCode, Box<dyn Error>> {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => return Ok(usage::usage_error(&error)),
    };
    let command = match cli.command {
        Some(command) => command,
        None => match ServeFromEnvironment::try_parse_from(["petstore"]) {
            Ok(serve) => Command::Serve(serve.args),
            Err(error) => return Ok(usage::usage_error(&error)),
        },
    };
    let traces = match &command {
        Command::Serve(args) => match Traces::start(&args.traces) {
            Ok(traces) => traces,
            Err(error) => {
                eprintln!("error: {error}");
                return Ok(ExitCode::from(2));
            }
        },
        _ => None,
    };
    logging::init(cli.log_format, traces.as_ref().map(Traces::tracer))
        .map_err(|error| error as Box<dyn Error>)?;
    let done = |result: Result<(), Box<dyn Error>>| result.map(|()| ExitCode::SUCCESS);
    let database = cli.database;
    let uses_database = !matches!(command, Command::Openapi(_) | Command::Health(_));
    if uses_database && let Err(error) = Backend::from_url(&database.database_url) {
        // A usage error, like clap's: nothing is opened or created, and the value given (which
        // may hold a password) is not repeated.
        eprintln!("error: --database-url (PETSTORE_DATABASE_URL): {error}");
        return Ok(ExitCode::from(2));
    }
    match command {
        Command::Serve(args) => {
            let drain = args.shutdown_timeout;
            let served = serve_checked(args, &database);
            if let Some(traces) = traces {
                traces.shutdown(drain);
            }
            served
        }
        Command::Migrate(MigrateArgs { action: None }) => done(administer(
            database.store_config(false),
            Needs::Nothing,
            |store| async move {
                let applied = store.migrate().await?;
                eprintln!("{} migration(s) applied", applied.len());
                Ok(())
            },
        )),
        Command::Migrate(MigrateArgs {
            action: Some(MigrateCommand::Status),
        }) => done(administer(
            database.store_config(false),
            Needs::Database,
            |store| async move { migration_status(&store).await },
        )),
        Command::Openapi(args) => {
            let documents = petstore_openapi::documents();
            let document = if args.admin {
                documents.admin().to_pretty_json()
            } else {
                documents
                    .public(&args.addresses.openapi_servers.0, &args.server())
                    .to_pretty_json()
            }?;
            println!("{document}");
            Ok(ExitCode::SUCCESS)
        }
        Command::Keys(command) => administer(
            database.store_config(false),
            Needs::Schema,
            |store| async move { keys::keys(&store, command).await },
        ),
        Command::AdminTokens(command) => done(administer(
            database.store_config(false),
            Needs::Schema,
            |store| async move { admin_tokens::admin_tokens(&store, command).await },
        )),
        Command::Health(args) => Ok(health(&args)),
        Command::Orders(command) => done(administer(
            database.store_config(false),
            Needs::Schema,
            |store| async move { orders::orders(&store, command).await },
        )),
    }
}

/// `serve` with `args`, once what can be checked of them before anything is opened holds
/// (a usage error, exit 2, otherwise).
fn serve_checked(
    args: cli::ServeArgs,
    database: &cli::DatabaseArgs,
) -> Result<ExitCode, Box<dyn Error>> {
    if let Err(error) = usage::check_serve(&args) {
        eprintln!("error: {error}");
        return Ok(ExitCode::from(2));
    }
    let store = args.store_config(database);
    serve_blocking(args.into_config(), store).map(|()| ExitCode::SUCCESS)
}

/// `petstore health`: 0 when the server answers 200, 1 (saying why on stderr) otherwise.
fn health(args: &HealthArgs) -> ExitCode {
    let target = args.target();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(args.timeout))
        .build()
        .into();
    match agent.get(&target).call() {
        Ok(response) if response.status() == 200 => ExitCode::SUCCESS,
        Ok(response) => {
            eprintln!("petstore health: {target} answered {}", response.status());
            ExitCode::FAILURE
        }
        Err(error) => {
            eprintln!("petstore health: {target}: {error}");
            ExitCode::FAILURE
        }
    }
}

/// What an administrative command needs of the database it is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Needs {
    /// Nothing: `migrate` creates a SQLite file that is not there yet (that is its job).
    Nothing,
    /// That it exists (`migrate status`).
    Database,
    /// That it exists with every migration applied (`keys`, `orders`): they never create or
    /// migrate one, which would leave a key in a database no server reads.
    Schema,
}

/// Runs an administrative command against the store `config` names, on a runtime of its own,
/// after saying on stderr which database it is, and closes the store before returning: no
/// connection or thread of it outlives the command (the runtime, dropped last, joins its
/// blocking threads).
fn administer<T, F, Fut>(config: StoreConfig, needs: Needs, command: F) -> Result<T, Box<dyn Error>>
where
    F: FnOnce(Store) -> Fut,
    Fut: Future<Output = Result<T, Box<dyn Error>>>,
{
    let backend = Backend::from_url(&config.url)?;
    eprintln!("petstore: database: {}", backend.describe());
    if needs != Needs::Nothing && !backend.exists() {
        return Err(format!(
            "there is no database at {}: give the one to use with --database-url \
             (PETSTORE_DATABASE_URL), or create this one with `petstore migrate`",
            config.url
        )
        .into());
    }
    actix_web::rt::System::new().block_on(async move {
        let store = open_store(&config, false)?;
        let result = match needs {
            Needs::Schema => match schema_behind(&store).await {
                Ok(()) => command(store.clone()).await,
                Err(error) => Err(error),
            },
            Needs::Nothing | Needs::Database => command(store.clone()).await,
        };
        store.close();
        result
    })
}

/// Fails, naming what is pending and the command that applies it, unless every migration this
/// build knows is applied.
async fn schema_behind(store: &Store) -> Result<(), Box<dyn Error>> {
    let pending = store.pending_migrations().await?;
    if pending.is_empty() {
        return Ok(());
    }
    Err(format!(
        "the database's schema is behind: {} migration(s) pending ({}); apply them with \
         `petstore migrate`",
        pending.len(),
        pending.join(", ")
    )
    .into())
}

/// `petstore migrate status`: one line per migration on stdout; fails when any is pending.
async fn migration_status(store: &Store) -> Result<(), Box<dyn Error>> {
    let status = store.migration_status().await?;
    for name in &status.applied {
        println!("applied  {name}");
    }
    for name in &status.pending {
        println!("pending  {name}");
    }
    for version in &status.unknown {
        println!("unknown  {version} (applied by a newer build of petstore)");
    }
    if status.pending.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{} migration(s) pending: apply them with `petstore migrate`",
        status.pending.len()
    )
    .into())
}

/// Opens the storage `config` names: today the Diesel store (SQLite, PostgreSQL or MariaDB/MySQL, by URL). A
/// backend of another kind is chosen here, and only here.
fn open_store(config: &StoreConfig, keep_warm: bool) -> Result<Store, Box<dyn Error>> {
    let config = StoreConfig {
        keep_warm,
        ..config.clone()
    };
    Ok(Store::open(&config)?)
}

fn serve_blocking(config: serve::ServeConfig, store: StoreConfig) -> Result<(), Box<dyn Error>> {
    actix_web::rt::System::new().block_on(serve(config, store))
}

/// A Unix time in RFC 3339 (UTC, whole seconds) for the listings; `-` for none.
fn timestamp(unix: Option<i64>) -> String {
    petstore_domain::key_admin::rfc3339(unix).unwrap_or_else(|| "-".into())
}
