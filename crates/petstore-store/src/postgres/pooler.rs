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

    /// Whether there is a pooler at all (one that pools transactions).
    pub(crate) fn is_some(&self) -> bool {
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
/// from the role. In one transaction (one server connection): a statement prepared by name, then
/// looked for among the server's prepared statements. A pooler that keeps statements prepares it
/// there under a name of its own (PgBouncer: `PGBOUNCER_n`); one that does not passes the
/// client's name on (tokio-postgres': `s` and a number), and a statement prepared in one
/// transaction would be missing, or another client's, in the next.
pub(crate) async fn keeps_statements(
    client: &tokio_postgres::Client,
    read_urls: bool,
) -> Result<(), StoreError> {
    let refused = |what: String| Err(StoreError::Connect(what.into()));
    client
        .batch_execute("BEGIN")
        .await
        .map_err(|error| StoreError::Connect(error.into()))?;
    let found = async {
        let statement = client.prepare(FIND_ITSELF).await?;
        let names = client.query(&statement, &[&FIND_ITSELF]).await?;
        let synchronous_commit = if read_urls {
            Some(client.query_one("SHOW synchronous_commit", &[]).await?)
        } else {
            None
        };
        client.batch_execute("COMMIT").await?;
        Ok::<_, tokio_postgres::Error>((names, synchronous_commit))
    };
    let (names, synchronous_commit) = found
        .await
        .map_err(|error| StoreError::Connect(error.into()))?;
    let names: Vec<String> = names.iter().map(|row| row.get(0)).collect();
    if names.is_empty() || names.iter().any(|name| is_tokio_postgres_name(name)) {
        return refused(format!(
            "`pooler=transaction-prepared`, but the pooler does not keep prepared statements \
             (the server holds {names:?}, the client's own names): use PgBouncer 1.21 or later \
             with max_prepared_statements above 0, or `pooler=transaction`"
        ));
    }
    if let Some(row) = synchronous_commit {
        let value: String = row.get(0);
        if value != "remote_apply" {
            return refused(format!(
                "`pooler=transaction-prepared` with read URLs: synchronous_commit is {value:?}, \
                 and reads on a standby could miss the writes just answered; set it on the role \
                 or the database (`ALTER ROLE ... SET synchronous_commit = remote_apply`): a \
                 transaction pooler cannot carry it as a session setting"
            ));
        }
    }
    Ok(())
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
