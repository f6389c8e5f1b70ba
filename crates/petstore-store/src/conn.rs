//! One connection over the three backends, [`Conn`], and the [`run!`] macro that runs a Diesel query
//! on it: every query of the store is written once, in an async function over a `Conn`.
//!
//! On SQLite a query runs synchronously (sync Diesel) and the function never waits, so a SQLite
//! call completes in one poll ([`complete_now`]); on PostgreSQL and MariaDB/MySQL each query is awaited
//! (diesel-async over tokio-postgres or mysql_async). A query built once is run on the concrete
//! connection, so Diesel keeps each static query prepared on each.

use diesel::QueryResult;
#[cfg(feature = "sqlite")]
use diesel::{SqliteConnection, connection::SimpleConnection};
#[cfg(feature = "postgres")]
use diesel_async::{AsyncPgConnection, SimpleAsyncConnection};
#[cfg(feature = "sqlite")]
use futures_util::FutureExt;
use futures_util::future::BoxFuture;

use crate::StoreError;

/// A connection to one of the backends, borrowed for one call.
pub(crate) enum Conn<'a> {
    /// SQLite, the embedded default: statements run synchronously.
    #[cfg(feature = "sqlite")]
    Sqlite(&'a mut SqliteConnection),
    /// PostgreSQL: statements are round trips, awaited. Used through a shared reference, so that
    /// calls on one connection may pipeline (tokio-postgres sends a statement without waiting for
    /// the previous one's answer); `exclusive` when the call has the connection to itself, as a
    /// transaction must.
    #[cfg(feature = "postgres")]
    Postgres {
        /// The connection.
        conn: &'a AsyncPgConnection,
        /// Whether no other call uses it meanwhile.
        exclusive: bool,
        /// Whether the backend runs the call inside a transaction of its own (behind a
        /// transaction pooler that keeps no statements, `pooler=transaction`,
        /// `postgres::connections::Connections::call`): [`Conn::begin`] and
        /// [`Conn::finish`] then make a savepoint of it.
        in_transaction: bool,
    },
    /// MariaDB or MySQL: statements are round trips, awaited, one at a time.
    #[cfg(feature = "mysql")]
    Mysql(&'a mut diesel_async::AsyncMysqlConnection),
}

/// A storage operation: an async function of a connection, run by a backend where it sees fit.
pub(crate) trait Op<T>:
    for<'c> FnOnce(Conn<'c>) -> BoxFuture<'c, Result<T, StoreError>> + Send + 'static
{
}

impl<T, F> Op<T> for F where
    F: for<'c> FnOnce(Conn<'c>) -> BoxFuture<'c, Result<T, StoreError>> + Send + 'static
{
}

/// Runs a Diesel query (`$query`, built once) with a `RunQueryDsl` method (`load`, `execute`,
/// `get_result`, `first`) on the connection `$conn` (a `&mut Conn`): synchronously on SQLite,
/// awaited on PostgreSQL, where it resolves only once the statement has ended
/// ([`on_postgres!`]). Only usable inside an async function.
///
/// `run!(conn, load, sqlite: a, servers: b)` runs a query written for each kind of planner,
/// where one statement cannot suit both: `a` on SQLite, `b` on the database servers
/// (PostgreSQL, MariaDB and MySQL); the other is not built. `run!(conn, load, sqlite: a,
/// postgres: b, mysql: c)` gives each backend its own.
///
/// `run!(conn, locked first, query)` reads rows that the transaction then holds until it ends:
/// `SELECT ... FOR UPDATE` on PostgreSQL; on SQLite the query as it is, the transaction
/// (`BEGIN IMMEDIATE`) holding the whole database already.
macro_rules! run {
    ($conn:expr, locked $method:ident, $query:expr) => {
        run!(
            @on $conn,
            $method,
            $query,
            diesel::QueryDsl::for_update($query),
            diesel::QueryDsl::for_update($query)
        )
    };
    ($conn:expr, $method:ident, sqlite: $sqlite:expr, servers: $servers:expr) => {
        run!(@on $conn, $method, $sqlite, $servers, $servers)
    };
    ($conn:expr, $method:ident, sqlite: $sqlite:expr, postgres: $postgres:expr, mysql: $mysql:expr) => {
        run!(@on $conn, $method, $sqlite, $postgres, $mysql)
    };
    ($conn:expr, $method:ident, $query:expr) => {
        run!(@on $conn, $method, $query, $query, $query)
    };
    // The query as SQLite runs it, as PostgreSQL does, and MySQL's arm an expression over its
    // connection `$c`.
    (@on $conn:expr, $method:ident, $sqlite:expr, $postgres:expr, mysql($c:ident) => $mysql:expr) => {
        match $conn {
            #[cfg(feature = "sqlite")]
            $crate::conn::Conn::Sqlite(c) => diesel::RunQueryDsl::$method($sqlite, &mut **c),
            #[cfg(feature = "postgres")]
            $crate::conn::Conn::Postgres { conn, .. } => {
                let mut shared: &diesel_async::AsyncPgConnection = conn;
                on_postgres!($method, $postgres, &mut shared)
            }
            #[cfg(feature = "mysql")]
            $crate::conn::Conn::Mysql($c) => $mysql,
        }
    };
    // The same, with MySQL's arm running the query as MySQL does.
    (@on $conn:expr, $method:ident, $sqlite:expr, $postgres:expr, $mysql:expr) => {
        run!(
            @on $conn,
            $method,
            $sqlite,
            $postgres,
            mysql(c) => on_mysql!($method, $mysql, &mut **c)
        )
    };
}

/// diesel-async's `RunQueryDsl` method `$method` on a PostgreSQL connection (`&mut &AsyncPgConnection`),
/// resolving only when the server has ended the statement (`ReadyForQuery`), never at its
/// first row.
///
/// diesel-async's own `get_result` and `first` resolve as soon as the first row arrives. For a
/// write outside an explicit transaction (an `INSERT ... RETURNING` in autocommit) that is too
/// early: the server sends the row before its implicit commit, and the commit may still fail
/// or wait (for a synchronous standby). Output buffering usually hides the gap, but a server
/// shutting down at once, or crashing, flushes the row with its last message, and the write
/// would be answered `2xx` though its commit was never confirmed. So `get_result` and `first`
/// read the statement's rows to the end of its stream (`load`): the end is `ReadyForQuery`,
/// sent after the implicit commit, and an error in between (the connection lost) fails the
/// call. It costs no round trip: the server sends the row, the statement's end and
/// `ReadyForQuery` together. `execute` (and a `COMMIT`, through `batch_execute`) already waits
/// for `ReadyForQuery`. (Written inline, not as generic functions: a generic async function
/// over the connection's lifetime does not prove its future `Send` for every lifetime.) Each
/// statement runs through [`KeptSql`](crate::kept_sql::KeptSql) (its SQL written once per
/// query type where Diesel's rules allow).
#[cfg(feature = "postgres")]
macro_rules! on_postgres {
    (get_result, $query:expr, $conn:expr) => {
        on_postgres!(load, $query, $conn).and_then(|rows: Vec<_>| {
            rows.into_iter()
                .next()
                .ok_or(diesel::result::Error::NotFound)
        })
    };
    (first, $query:expr, $conn:expr) => {
        on_postgres!(get_result, diesel::QueryDsl::limit($query, 1), $conn)
    };
    (load, $query:expr, $conn:expr) => {
        diesel_async::RunQueryDsl::load($crate::kept_sql::KeptSql::of($query), $conn).await
    };
    (execute, $query:expr, $conn:expr) => {
        diesel_async::RunQueryDsl::execute($crate::kept_sql::KeptSql($query), $conn).await
    };
}

/// diesel-async's `RunQueryDsl` method `$method` on a MySQL connection, through
/// [`KeptSql`](crate::kept_sql::KeptSql).
#[cfg(feature = "mysql")]
macro_rules! on_mysql {
    (first, $query:expr, $conn:expr) => {
        on_mysql!(get_result, diesel::QueryDsl::limit($query, 1), $conn)
    };
    (execute, $query:expr, $conn:expr) => {
        diesel_async::RunQueryDsl::execute($crate::kept_sql::KeptSql($query), $conn).await
    };
    ($method:ident, $query:expr, $conn:expr) => {
        diesel_async::RunQueryDsl::$method($crate::kept_sql::KeptSql::of($query), $conn).await
    };
}

/// [`run!`] for a statement only PostgreSQL has ([`Then`]), on a connection that must be
/// PostgreSQL's: any other is a bug in the caller, reported as a query that could not be built.
#[cfg(feature = "postgres")]
macro_rules! run_on_postgres {
    ($conn:expr, $method:ident, $query:expr) => {
        match $conn {
            $crate::conn::Conn::Postgres { conn, .. } => {
                let mut shared: &diesel_async::AsyncPgConnection = conn;
                on_postgres!($method, $query, &mut shared)
            }
            // Unreachable when PostgreSQL is the only backend built.
            #[allow(unreachable_patterns)]
            _ => Err(diesel::result::Error::QueryBuilderError(
                "BUG: a PostgreSQL statement run on another backend".into(),
            )),
        }
    };
}

/// Two writes run as one statement, `WITH first AS (a), second AS (b) SELECT id FROM first`:
/// PostgreSQL's data-modifying `WITH`, in one round trip and atomically (in autocommit, one
/// implicit transaction). `a` writes a row and returns its `id` (`RETURNING id`); `b` may read
/// that id ([`FirstId`]); the statement answers it. Neither sees the other's rows otherwise.
#[cfg(feature = "postgres")]
#[derive(Debug, Clone, Copy, diesel::query_builder::QueryId)]
pub(crate) struct Then<A, B>(pub(crate) A, pub(crate) B);

#[cfg(feature = "postgres")]
impl<A, B> diesel::query_builder::Query for Then<A, B> {
    type SqlType = diesel::sql_types::BigInt;
}

#[cfg(feature = "postgres")]
impl<A, B> diesel::query_builder::QueryFragment<diesel::pg::Pg> for Then<A, B>
where
    A: diesel::query_builder::QueryFragment<diesel::pg::Pg>,
    B: diesel::query_builder::QueryFragment<diesel::pg::Pg>,
{
    fn walk_ast<'b>(
        &'b self,
        mut out: diesel::query_builder::AstPass<'_, 'b, diesel::pg::Pg>,
    ) -> QueryResult<()> {
        out.push_sql("WITH first AS (");
        self.0.walk_ast(out.reborrow())?;
        out.push_sql("), second AS (");
        self.1.walk_ast(out.reborrow())?;
        out.push_sql(") SELECT id FROM first");
        Ok(())
    }
}

/// In the second write of a [`Then`], the id of the row the first wrote, as text.
#[cfg(feature = "postgres")]
#[derive(Debug, Clone, Copy, diesel::query_builder::QueryId, diesel::expression::ValidGrouping)]
pub(crate) struct FirstId;

#[cfg(feature = "postgres")]
impl diesel::Expression for FirstId {
    type SqlType = diesel::sql_types::Text;
}

#[cfg(feature = "postgres")]
impl<QS> diesel::AppearsOnTable<QS> for FirstId {}

#[cfg(feature = "postgres")]
impl<QS> diesel::SelectableExpression<QS> for FirstId {}

#[cfg(feature = "postgres")]
impl diesel::query_builder::QueryFragment<diesel::pg::Pg> for FirstId {
    fn walk_ast<'b>(
        &'b self,
        mut out: diesel::query_builder::AstPass<'_, 'b, diesel::pg::Pg>,
    ) -> QueryResult<()> {
        out.push_sql("(SELECT id::text FROM first)");
        Ok(())
    }
}

/// [`run!`] for a statement with `RETURNING` (`$query`: an insert, or an update, that answers
/// its row): as it is on SQLite and PostgreSQL; on MySQL and MariaDB, which have no
/// `RETURNING`, `$mysql`, an expression over `$c` (the MySQL connection, `&mut &mut
/// AsyncMysqlConnection`) that runs the statement and reads the row back.
macro_rules! run_returning {
    ($conn:expr, $method:ident, $query:expr, mysql($c:ident) => $mysql:expr) => {
        run!(@on $conn, $method, $query, $query, mysql($c) => $mysql)
    };
}

/// On MySQL and MariaDB, `$insert` (with no `RETURNING`) run, then the row it inserted read back
/// by the id the connection was given (`WHERE id = LAST_INSERT_ID()`, one statement, prepared
/// once per connection like any other), as a `$row` of `$table`: what `RETURNING` answers
/// elsewhere. For an insert of one row; one that inserts none is `NotFound` (the connection's
/// last id would be another insert's). `$c` is the MySQL connection
/// (`&mut &mut AsyncMysqlConnection`).
#[cfg(feature = "mysql")]
macro_rules! mysql_inserted {
    ($c:expr, $insert:expr, $table:path, $row:ty) => {
        async {
            use diesel::ExpressionMethods;
            if on_mysql!(execute, $insert, &mut **$c)? != 1 {
                return Err(diesel::result::Error::NotFound);
            }
            let this_row = diesel::Table::primary_key(&$table).eq($crate::conn::last_insert_id());
            let row = diesel::QueryDsl::select(
                diesel::QueryDsl::filter($table, this_row),
                columns::<$row>(),
            );
            on_mysql!(get_result, row, &mut **$c)
        }
        .await
    };
}

/// On MySQL and MariaDB, `$update` (with no `RETURNING`) of the row `$id` of `$table` run, then
/// that row read back as a `$row`, in one transaction (the row stays locked between the two, so
/// the read is the update's); `NotFound` when it matched no row (the connection counts the rows
/// matched, as the other backends do, not only those changed). Not for a call already in a
/// transaction (MySQL's `BEGIN` would commit it).
#[cfg(feature = "mysql")]
macro_rules! mysql_updated {
    ($c:expr, $update:expr, $table:path, $id:expr, $row:ty) => {
        async {
            use diesel_async::SimpleAsyncConnection;
            (&mut **$c).batch_execute("BEGIN").await?;
            let updated = async {
                if on_mysql!(execute, $update, &mut **$c)? == 0 {
                    return Err(diesel::result::Error::NotFound);
                }
                let row = diesel::QueryDsl::select(
                    diesel::QueryDsl::find($table, $id),
                    columns::<$row>(),
                );
                on_mysql!(get_result, row, &mut **$c)
            }
            .await;
            let end = if updated.is_ok() {
                "COMMIT"
            } else {
                "ROLLBACK"
            };
            (&mut **$c).batch_execute(end).await?;
            updated
        }
        .await
    };
}

#[cfg(feature = "mysql")]
diesel::define_sql_function! {
    /// MySQL's `LAST_INSERT_ID()`: the id the connection's last insert was given (kept per
    /// connection). Declared a `BIGINT` to be compared with an id; never decoded (MySQL's is
    /// unsigned).
    fn last_insert_id() -> diesel::sql_types::BigInt;
}

impl Conn<'_> {
    /// Whether it is PostgreSQL's: for a statement only PostgreSQL can run
    /// ([`run_on_postgres!`]), with another way elsewhere.
    #[cfg(feature = "postgres")]
    pub(crate) fn is_postgres(&self) -> bool {
        matches!(self, Self::Postgres { .. })
    }

    /// The same connection, borrowed again for a nested call.
    pub(crate) fn reborrow(&mut self) -> Conn<'_> {
        match self {
            #[cfg(feature = "sqlite")]
            Self::Sqlite(c) => Conn::Sqlite(c),
            #[cfg(feature = "postgres")]
            Self::Postgres {
                conn,
                exclusive,
                in_transaction,
            } => Conn::Postgres {
                conn,
                exclusive: *exclusive,
                in_transaction: *in_transaction,
            },
            #[cfg(feature = "mysql")]
            Self::Mysql(c) => Conn::Mysql(c),
        }
    }

    /// Runs SQL statements that return nothing.
    pub(crate) async fn batch_execute(&mut self, sql: &str) -> QueryResult<()> {
        match self {
            #[cfg(feature = "sqlite")]
            Self::Sqlite(c) => c.batch_execute(sql),
            #[cfg(feature = "postgres")]
            Self::Postgres { conn, .. } => {
                let mut shared: &AsyncPgConnection = conn;
                shared.batch_execute(sql).await
            }
            #[cfg(feature = "mysql")]
            Self::Mysql(c) => {
                diesel_async::SimpleAsyncConnection::batch_execute(&mut **c, sql).await
            }
        }
    }

    /// Starts a transaction that writes: on SQLite `BEGIN IMMEDIATE` (the write lock from the
    /// start, so that concurrent writers queue on it instead of failing to upgrade a read); on
    /// PostgreSQL `BEGIN` (rows are locked as they are read, `FOR UPDATE`), or a savepoint in
    /// the transaction the call already runs in.
    pub(crate) async fn begin(&mut self) -> Result<(), StoreError> {
        let begin = match self {
            #[cfg(feature = "sqlite")]
            Self::Sqlite(_) => "BEGIN IMMEDIATE",
            #[cfg(feature = "postgres")]
            Self::Postgres {
                exclusive: true,
                in_transaction: true,
                ..
            } => "SAVEPOINT call",
            #[cfg(feature = "postgres")]
            Self::Postgres {
                exclusive: true, ..
            } => "BEGIN",
            #[cfg(feature = "mysql")]
            Self::Mysql(_) => "BEGIN",
            #[cfg(feature = "postgres")]
            Self::Postgres {
                exclusive: false, ..
            } => {
                return Err(StoreError::Config(
                    "BUG: a transaction was started on a shared connection".into(),
                ));
            }
        };
        Ok(self.batch_execute(begin).await?)
    }

    /// Ends the transaction [`Self::begin`] started: commits if `result` is a success, else
    /// rolls back. A transaction that cannot be ended cleanly leaves the connection unusable:
    /// reported as the connection lost, so that it is not handed out again.
    pub(crate) async fn finish<T, E: From<StoreError>>(
        &mut self,
        result: Result<T, E>,
    ) -> Result<T, E> {
        #[cfg(feature = "postgres")]
        if let Self::Postgres {
            in_transaction: true,
            ..
        } = self
        {
            // A savepoint: its end is the call's transaction's to confirm (or roll back).
            let end = if result.is_ok() {
                "RELEASE SAVEPOINT call"
            } else {
                "ROLLBACK TO SAVEPOINT call"
            };
            self.batch_execute(end).await.map_err(StoreError::from)?;
            return result;
        }
        let end = if result.is_ok() { "COMMIT" } else { "ROLLBACK" };
        match self.batch_execute(end).await {
            Ok(()) => result,
            Err(error) => {
                // A failed COMMIT leaves the transaction open: end it, or give up the connection.
                if self.batch_execute("ROLLBACK").await.is_err() {
                    return Err(StoreError::ConnectionLost(error.into()).into());
                }
                Err(StoreError::from(error).into())
            }
        }
    }
}

#[cfg(feature = "sqlite")]
/// Runs a SQLite operation to its end on this thread. SQLite statements never wait on anything
/// but the database, so an operation over a SQLite connection completes in its first poll.
pub(crate) fn complete_now<T>(
    operation: BoxFuture<'_, Result<T, StoreError>>,
) -> Result<T, StoreError> {
    operation
        .now_or_never()
        .expect("BUG: an operation on a SQLite connection waited for something")
}
