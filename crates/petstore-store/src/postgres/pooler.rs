//! [`Pooler`]: what stands between this service and PostgreSQL, as the database URL's `pooler`
//! says, and what each kind needs of a connection.

use crate::{StoreConfig, StoreError};

/// What stands between this service and PostgreSQL (the database URL's `pooler`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Pooler {
    /// Nothing, or a pooler that lends each client a session of its own (`none`, the default):
    /// settings sent at start-up, prepared statements kept, reads pipelined on a shared
    /// connection.
    None,
    /// A transaction pooler that keeps no prepared statement from one transaction to the next
    /// (`transaction`; any PgBouncer): every call runs in a transaction of its own, which
    /// `begin` opens, and nothing prepared is kept.
    Transaction {
        /// What opens a call's transaction ([`Pooler::begin`]).
        begin: String,
    },
    /// A transaction pooler that keeps each client's prepared statements wherever it sends them
    /// (`transaction-prepared`: PgBouncer 1.21 or later with `max_prepared_statements` above 0):
    /// calls run as they do straight to PostgreSQL (statements kept prepared, reads pipelined),
    /// but with no start-up settings, which the pooler refuses; they come from the role.
    /// Each connection checks as it opens that the pooler does keep statements
    /// ([`keeps_statements`]).
    KeepsStatements,
}

impl Pooler {
    /// The URL's `pooler` (`None` when absent) with the start-up `options` the URL gives.
    pub(crate) fn parse(
        value: Option<&str>,
        options: &str,
        store: &StoreConfig,
    ) -> Result<Self, StoreError> {
        let pooler = match value {
            None | Some("none") => return Ok(Self::None),
            Some("transaction") => Self::Transaction {
                begin: Self::begin(store),
            },
            Some("transaction-prepared") => Self::KeepsStatements,
            Some(other) => {
                return Err(StoreError::Config(format!(
                    "the database URL's `pooler` is {other:?}: `transaction` (behind a \
                     transaction pooler such as PgBouncer's pool_mode = transaction), \
                     `transaction-prepared` (one that keeps prepared statements: PgBouncer 1.21 \
                     or later with max_prepared_statements above 0) or `none`"
                )));
            }
        };
        if !options.is_empty() {
            return Err(StoreError::Config(
                "the database URL's `options` cannot go with a transaction pooler: it refuses \
                 start-up options (PgBouncer: \"unsupported startup parameter\") and would not \
                 keep them; set them on the role (`ALTER ROLE ... SET name = value`) instead"
                    .into(),
            ));
        }
        Ok(pooler)
    }

    /// What opens a call's transaction behind a transaction pooler that keeps no statements:
    /// `BEGIN`, then `DEALLOCATE ALL` (a server connection the pooler hands out may hold
    /// statements another client prepared and left: tokio-postgres names them `s0`, `s1`, ...
    /// in every process, so one of ours would collide), then the settings a session would have
    /// had, scoped to the transaction. One round trip, as `BEGIN` alone.
    fn begin(store: &StoreConfig) -> String {
        let mut statements = vec![
            "BEGIN".to_owned(),
            "DEALLOCATE ALL".to_owned(),
            format!(
                "SET LOCAL statement_timeout = {}",
                store.statement_timeout.as_millis()
            ),
        ];
        if !store.read_urls.is_empty() {
            statements.push("SET LOCAL synchronous_commit = remote_apply".to_owned());
        }
        statements.join("; ")
    }

    /// Whether a transaction pooler stands between the service and PostgreSQL (either kind):
    /// no session outlives a transaction, so nothing that needs one (migrations' lock,
    /// start-up options) can run through it.
    pub(crate) fn pools_transactions(&self) -> bool {
        *self != Self::None
    }

    /// What opens every call's transaction, where each call needs one of its own
    /// ([`Pooler::Transaction`]).
    pub(crate) fn per_call_transaction(&self) -> Option<&str> {
        match self {
            Self::Transaction { begin } => Some(begin),
            Self::None | Self::KeepsStatements => None,
        }
    }
}

/// The statement that finds itself among the server's prepared statements.
const FIND_ITSELF: &str = "SELECT name FROM pg_prepared_statements WHERE statement = $1";

/// Checks, on a new connection through a pooler said to keep prepared statements, that it does,
/// and that a session has what the service would otherwise have set at start-up and cannot
/// here: with read URLs, `synchronous_commit = remote_apply` (read-your-writes on the standbys)
/// from the role, refused without it; a statement timeout, warned of without one. In one
/// transaction (one server connection): a statement prepared by name, then looked for among the
/// server's prepared statements. A pooler that keeps statements prepares it there under a name
/// of its own (PgBouncer: `PGBOUNCER_n`); one that does not passes the client's name on
/// (tokio-postgres': `s` and a number), and a statement prepared in one transaction would be
/// missing, or another client's, in the next.
pub(crate) async fn keeps_statements(
    client: &tokio_postgres::Client,
    read_urls: bool,
) -> Result<(), StoreError> {
    use tokio_postgres::error::SqlState;
    // (A check that fails leaves its transaction to the connection's end: the connection is
    // dropped, and the pooler gives its server connection up.)
    let failed = |error: tokio_postgres::Error| {
        let why = petstore_domain::error::Chain(&error).to_string();
        match error.code() {
            // Only a pooler that keeps no statements lets another client's statement of the
            // same name be found, or ours be missing.
            Some(&SqlState::DUPLICATE_PSTATEMENT | &SqlState::INVALID_SQL_STATEMENT_NAME) => {
                not_kept(&why)
            }
            _ => StoreError::Connect(
                format!("`pooler=transaction-prepared`: checking the pooler: {why}").into(),
            ),
        }
    };
    client.batch_execute("BEGIN").await.map_err(failed)?;
    let statement = client.prepare(FIND_ITSELF).await.map_err(failed)?;
    let names: Vec<String> = client
        .query(&statement, &[&FIND_ITSELF])
        .await
        .map_err(failed)?
        .iter()
        .map(|row| row.get(0))
        .collect();
    if names.is_empty() {
        let _ = client.batch_execute("ROLLBACK").await;
        return Err(not_kept(
            "the server holds no statement of this check's text: the pooler does not prepare \
             it by name",
        ));
    }
    // Under the client's own names are this check's statement and those of checks before it
    // on this server connection; kept, it is there under the pooler's name too.
    if names.iter().all(|name| is_tokio_postgres_name(name)) {
        // Leave none of them behind, and the server connection out of a transaction (each
        // name checked above: `s` and digits).
        let mut end: Vec<String> = names
            .iter()
            .map(|name| format!("DEALLOCATE {name}"))
            .collect();
        end.push("ROLLBACK".to_owned());
        let _ = client.batch_execute(&end.join("; ")).await;
        return Err(not_kept(&format!(
            "the server holds this check's statement as {names:?}, the client's own names"
        )));
    }
    let settings = client
        .simple_query("SHOW synchronous_commit; SHOW statement_timeout; COMMIT")
        .await
        .map_err(failed)?;
    let mut values = settings.iter().filter_map(|message| match message {
        tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0),
        _ => None,
    });
    let (synchronous_commit, statement_timeout) = (values.next(), values.next());
    if read_urls && synchronous_commit != Some("remote_apply") {
        return Err(StoreError::Connect(
            format!(
                "`pooler=transaction-prepared` with read URLs: synchronous_commit is {:?}, \
                 and reads on a standby could miss the writes just \
                 answered; set it on the role or the database (`ALTER ROLE ... SET \
                 synchronous_commit = remote_apply`, then have the pooler open its server \
                 connections again): a transaction pooler cannot carry it as a session setting",
                synchronous_commit.unwrap_or("not shown")
            )
            .into(),
        ));
    }
    if statement_timeout == Some("0") {
        log::warn!(
            "`pooler=transaction-prepared`: the session has no statement timeout (the service \
             cannot set one through the pooler), so a statement that runs away runs on; set it \
             on the role (`ALTER ROLE ... SET statement_timeout = '5s'`)"
        );
    }
    Ok(())
}

/// The refusal of a pooler said to keep prepared statements that does not, naming the fix.
fn not_kept(why: &str) -> StoreError {
    StoreError::Connect(
        format!(
            "`pooler=transaction-prepared`, but the pooler does not keep prepared statements \
             ({why}): use PgBouncer 1.21 or later with max_prepared_statements above 0, or \
             `pooler=transaction` (`none` straight to PostgreSQL)"
        )
        .into(),
    )
}

/// Whether `name` is one tokio-postgres gives the statements it prepares (`s0`, `s1`, ...).
fn is_tokio_postgres_name(name: &str) -> bool {
    name.strip_prefix('s')
        .is_some_and(|number| !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_s_own_statement_names_are_told_from_a_pooler_s() {
        for ours in ["s0", "s1", "s4096"] {
            assert!(is_tokio_postgres_name(ours), "{ours}");
        }
        for theirs in ["PGBOUNCER_1", "s", "sx1", "s1x", "S1", ""] {
            assert!(!is_tokio_postgres_name(theirs), "{theirs}");
        }
    }
}
