//! [`KeptSql`]: each statement's SQL written once per query type, for the asynchronous backends
//! (PostgreSQL and MariaDB/MySQL through diesel-async), and updates kept prepared on
//! PostgreSQL. Every statement the [`run!`](crate::conn) macros run there goes through it.

use diesel::QueryResult;

/// A statement whose SQL is written once per query type and kept, for the asynchronous
/// backends. diesel-async writes a statement's SQL on every call, even for one it keeps
/// prepared (it finds the prepared statement by the query's type), and Diesel quotes each
/// identifier through an allocation: about a quarter of a create's instructions on PostgreSQL
/// (`docs/performance.md`). Diesel's own statement cache rests on the rule this one keeps: a
/// query whose type identifies it (a static `QueryId`) and that is safe to keep prepared (no
/// part of it calls `unsafe_to_cache_prepared`, as every part whose SQL depends on values does)
/// has the same SQL every time. Any other statement is written every time.
///
/// Only for a whole statement as it is run (`conn`'s macros wrap it last): the kept SQL
/// numbers its binds from the first. On PostgreSQL it also keeps updates prepared
/// ([`QueryFragment::is_safe_to_cache_prepared`](diesel::query_builder::QueryFragment)).
#[derive(Debug)]
pub(crate) struct KeptSql<Q>(pub(crate) Q);

/// The SQL [`KeptSql`] kept, by backend and query type (`None`: a type whose SQL is written
/// every time). A few dozen entries, written once each.
type Kept = std::collections::BTreeMap<(std::any::TypeId, std::any::TypeId), Option<Box<str>>>;

static KEPT: std::sync::RwLock<Kept> = std::sync::RwLock::new(std::collections::BTreeMap::new());

impl<Q: diesel::query_builder::AsQuery> KeptSql<Q> {
    /// A query (a select, or a write with `RETURNING`), to be loaded.
    pub(crate) fn of(query: Q) -> KeptSql<Q::Query> {
        KeptSql(query.as_query())
    }
}

impl<Q: diesel::query_builder::QueryId> diesel::query_builder::QueryId for KeptSql<Q> {
    type QueryId = Q::QueryId;
    const HAS_STATIC_QUERY_ID: bool = Q::HAS_STATIC_QUERY_ID;
}

impl<Q: diesel::query_builder::Query> diesel::query_builder::Query for KeptSql<Q> {
    type SqlType = Q::SqlType;
}

impl<DB, Q> diesel::query_builder::QueryFragment<DB> for KeptSql<Q>
where
    DB: diesel::backend::Backend + 'static,
    DB::QueryBuilder: Default,
    Q: diesel::query_builder::QueryFragment<DB> + diesel::query_builder::QueryId,
{
    fn walk_ast<'b>(&'b self, pass: diesel::query_builder::AstPass<'_, 'b, DB>) -> QueryResult<()> {
        self.0.walk_ast(pass)
    }

    /// Diesel's verdict, but on PostgreSQL `true` for a statement its connections find by its
    /// SQL text (no static `QueryId`: every update, say), as another SQL is another entry of
    /// the connection's cache. Diesel marks every update unsafe to keep (its changeset may
    /// leave a `None` column out), and diesel-async then prepares it anew on every call: a
    /// round trip more, and the database parsing and planning it again. On PostgreSQL a
    /// statement found by its SQL has a few shapes at most (a list of values is one bind,
    /// `= ANY($1)`); not so on MySQL and MariaDB, where a list is a `?` per value and each
    /// statement kept holds one of the server's `max_prepared_stmt_count`. (A statement with
    /// values written into its SQL, a `sql_query` made by `format!`, would keep one entry per
    /// value: the store runs none through these macros.)
    fn is_safe_to_cache_prepared(&self, backend: &DB) -> QueryResult<bool> {
        #[cfg(feature = "postgres")]
        if Q::query_id().is_none()
            && std::any::TypeId::of::<DB>() == std::any::TypeId::of::<diesel::pg::Pg>()
        {
            return Ok(true);
        }
        self.0.is_safe_to_cache_prepared(backend)
    }

    fn to_sql(&self, out: &mut DB::QueryBuilder, backend: &DB) -> QueryResult<()> {
        use diesel::query_builder::QueryBuilder;
        use std::sync::PoisonError;

        let Some(query) = Q::query_id() else {
            return self.0.to_sql(out, backend);
        };
        let key = (std::any::TypeId::of::<DB>(), query);
        let kept = KEPT.read().unwrap_or_else(PoisonError::into_inner);
        match kept.get(&key) {
            Some(Some(sql)) => {
                out.push_sql(sql);
                return Ok(());
            }
            Some(None) => {
                drop(kept);
                return self.0.to_sql(out, backend);
            }
            None => drop(kept),
        }
        let mut first = DB::QueryBuilder::default();
        self.0.to_sql(&mut first, backend)?;
        let sql = first.finish();
        out.push_sql(&sql);
        let keep = self.0.is_safe_to_cache_prepared(backend)?;
        KEPT.write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key, keep.then(|| sql.into_boxed_str()));
        Ok(())
    }
}

#[cfg(all(test, feature = "postgres"))]
mod tests {
    use std::any::TypeId;

    use diesel::pg::{Pg, PgQueryBuilder};
    use diesel::prelude::*;
    use diesel::query_builder::{AstPass, QueryBuilder, QueryFragment, QueryId};

    use super::{KEPT, KeptSql};
    use crate::schema::pets;

    fn written(query: &impl QueryFragment<Pg>) -> String {
        let mut out = PgQueryBuilder::default();
        query
            .to_sql(&mut out, &Pg)
            .expect("the test's statements are well formed");
        out.finish()
    }

    fn kept<Q: QueryId>(_: &Q) -> Option<Option<String>> {
        let key = (TypeId::of::<Pg>(), Q::query_id()?);
        let kept = KEPT.read().expect("no test panics holding the lock");
        kept.get(&key).map(|sql| sql.as_deref().map(str::to_owned))
    }

    #[test]
    fn a_statement_s_sql_is_kept_as_diesel_writes_it_and_written_alike_again() {
        let query = || pets::table.filter(pets::status.eq("sold")).select(pets::id);
        let plain = written(&query());
        assert_eq!(written(&KeptSql::of(query())), plain);
        assert_eq!(kept(&KeptSql::of(query())), Some(Some(plain.clone())));
        assert_eq!(written(&KeptSql::of(query())), plain);
    }

    /// A statement whose SQL depends on a value, and says so.
    #[derive(QueryId)]
    struct Either(bool);

    impl QueryFragment<Pg> for Either {
        fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
            out.unsafe_to_cache_prepared();
            out.push_sql(if self.0 { "SELECT 1" } else { "SELECT 2" });
            Ok(())
        }
    }

    #[test]
    fn a_statement_unsafe_to_keep_prepared_is_written_every_time() {
        assert_eq!(written(&KeptSql(Either(true))), "SELECT 1");
        assert_eq!(kept(&KeptSql(Either(true))), Some(None));
        assert_eq!(written(&KeptSql(Either(false))), "SELECT 2");
        assert_eq!(written(&KeptSql(Either(true))), "SELECT 1");
    }

    #[test]
    fn an_update_is_kept_prepared_by_its_sql_and_a_statement_found_by_type_as_diesel_says() {
        let safe = |query: &dyn QueryFragment<Pg>| {
            query
                .is_safe_to_cache_prepared(&Pg)
                .expect("the test's statements are well formed")
        };
        let update = || diesel::update(pets::table.find(1)).set(pets::status.eq("sold"));
        assert!(!safe(&update()), "Diesel keeps no update prepared");
        assert!(safe(&KeptSql(update())));
        assert!(!safe(&KeptSql(Either(true))));
        assert!(safe(&KeptSql::of(pets::table.select(pets::id))));
    }

    /// A statement whose kept SQL is not what it writes: which one is run tells the two apart.
    #[derive(QueryId)]
    struct Sentinel;

    impl QueryFragment<Pg> for Sentinel {
        fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
            out.push_sql("SELECT 'written'");
            Ok(())
        }
    }

    #[test]
    fn a_kept_statement_is_not_written_again() {
        let key = (TypeId::of::<Pg>(), TypeId::of::<Sentinel>());
        let kept = Some("SELECT 'kept'".into());
        KEPT.write()
            .expect("no test panics holding the lock")
            .insert(key, kept);
        assert_eq!(written(&KeptSql(Sentinel)), "SELECT 'kept'");
    }

    #[cfg(feature = "mysql")]
    #[test]
    fn each_backend_keeps_its_own_sql_of_one_query_type() {
        use diesel::mysql::{Mysql, MysqlQueryBuilder};
        let query = || KeptSql::of(pets::table.filter(pets::id.eq(7)).select(pets::name));
        let on_mysql = || {
            let mut out = MysqlQueryBuilder::default();
            query()
                .to_sql(&mut out, &Mysql)
                .expect("the test's statements are well formed");
            out.finish()
        };
        for _ in 0..2 {
            let (postgres, mysql) = (written(&query()), on_mysql());
            assert!(postgres.ends_with("\"pets\".\"id\" = $1)"), "{postgres}");
            assert!(mysql.ends_with("`pets`.`id` = ?)"), "{mysql}");
        }
        // Updates are kept prepared on PostgreSQL only: on MySQL Diesel's verdict stands.
        let update = KeptSql(diesel::update(pets::table.find(1)).set(pets::status.eq("sold")));
        let kept_on_mysql = QueryFragment::<Mysql>::is_safe_to_cache_prepared(&update, &Mysql);
        assert!(!kept_on_mysql.expect("the test's statements are well formed"));
    }
}
