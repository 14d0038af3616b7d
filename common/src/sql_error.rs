//! What a failed sqlx call means for its caller, read once for both backends:
//! the database is unavailable, a bound ran out (statement timeout, busy
//! lock), the transaction lost a serialization race, a unique key refused
//! the row, or anything else (a bug or bad data).

use crate::database::Backend;

/// The class of a sqlx error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SqlErrorKind {
    /// Unreachable, shutting down or out of resources: I/O, TLS, the pool
    /// timed out or closed, a crashed worker; PostgreSQL SQLSTATE classes
    /// 08 (connection exception), 53 (insufficient resources) and 57P
    /// (operator intervention: shutdown, cannot connect now).
    Unavailable,
    /// The statement timeout fired (PostgreSQL 57014, `query_canceled`).
    StatementTimeout,
    /// Serialization failure or deadlock (PostgreSQL 40001, 40P01): the
    /// transaction may be run again.
    SerializationFailure,
    /// A lock was not granted in time: SQLite `SQLITE_BUSY` and
    /// `SQLITE_LOCKED` (with their extended codes) after the busy timeout,
    /// PostgreSQL 55P03 (`lock_not_available`).
    LockTimeout,
    /// A unique or primary-key constraint refused the row.
    UniqueViolation,
    /// Anything else: other constraints, decoding, migrations, bad SQL.
    Other,
}

impl SqlErrorKind {
    /// The class of `error`, raised by a `backend` connection (database
    /// codes are read in that backend's numbering).
    pub fn of(backend: Backend, error: &sqlx::Error) -> SqlErrorKind {
        match error {
            sqlx::Error::Database(db) if db.is_unique_violation() => SqlErrorKind::UniqueViolation,
            sqlx::Error::Database(db) => match (backend, db.code()) {
                (Backend::Postgres, Some(code)) => SqlErrorKind::of_sqlstate(&code),
                (Backend::Sqlite, Some(code)) => code
                    .parse::<i64>()
                    .map_or(SqlErrorKind::Other, SqlErrorKind::of_sqlite_code),
                (_, None) => SqlErrorKind::Other,
            },
            sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::WorkerCrashed => SqlErrorKind::Unavailable,
            _ => SqlErrorKind::Other,
        }
    }

    /// The class of `error` where the connection's backend is not at hand:
    /// a database error is read in the numbering of the backend that raised
    /// it (SQLite result codes for an SQLite error, SQLSTATE otherwise).
    pub fn of_raised(error: &sqlx::Error) -> SqlErrorKind {
        let backend = match error {
            sqlx::Error::Database(db)
                if db.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some() =>
            {
                Backend::Sqlite
            }
            _ => Backend::Postgres,
        };
        SqlErrorKind::of(backend, error)
    }

    /// Whether retrying later may succeed: every class but
    /// [`SqlErrorKind::UniqueViolation`] and [`SqlErrorKind::Other`].
    pub fn is_transient(self) -> bool {
        !matches!(self, SqlErrorKind::UniqueViolation | SqlErrorKind::Other)
    }

    /// A PostgreSQL SQLSTATE.
    pub fn of_sqlstate(code: &str) -> SqlErrorKind {
        match code {
            "57014" => SqlErrorKind::StatementTimeout,
            "40001" | "40P01" => SqlErrorKind::SerializationFailure,
            "55P03" => SqlErrorKind::LockTimeout,
            "23505" => SqlErrorKind::UniqueViolation,
            _ if code.starts_with("08") || code.starts_with("53") || code.starts_with("57P") => {
                SqlErrorKind::Unavailable
            }
            _ => SqlErrorKind::Other,
        }
    }

    /// An SQLite (extended) result code.
    pub fn of_sqlite_code(code: i64) -> SqlErrorKind {
        match (code, code & 0xff) {
            // SQLITE_CONSTRAINT_UNIQUE, SQLITE_CONSTRAINT_PRIMARYKEY.
            (2067 | 1555, _) => SqlErrorKind::UniqueViolation,
            // SQLITE_BUSY, SQLITE_LOCKED.
            (_, 5 | 6) => SqlErrorKind::LockTimeout,
            _ => SqlErrorKind::Other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_timeouts_connection_loss_and_conflicts_are_transient() {
        let cases = [
            ("57014", SqlErrorKind::StatementTimeout),
            ("08006", SqlErrorKind::Unavailable),
            ("57P01", SqlErrorKind::Unavailable),
            ("53300", SqlErrorKind::Unavailable),
            ("40001", SqlErrorKind::SerializationFailure),
            ("40P01", SqlErrorKind::SerializationFailure),
            ("55P03", SqlErrorKind::LockTimeout),
        ];
        for (code, kind) in cases {
            assert_eq!(SqlErrorKind::of_sqlstate(code), kind, "{code}");
            assert!(kind.is_transient(), "{code}");
        }
        for (code, kind) in [
            ("23505", SqlErrorKind::UniqueViolation),
            ("42P01", SqlErrorKind::Other),
            ("22001", SqlErrorKind::Other),
        ] {
            assert_eq!(SqlErrorKind::of_sqlstate(code), kind, "{code}");
            assert!(!kind.is_transient(), "{code}");
        }
    }

    #[test]
    fn sqlite_busy_and_locked_are_transient() {
        for code in [5, 517, 6, 262] {
            assert_eq!(
                SqlErrorKind::of_sqlite_code(code),
                SqlErrorKind::LockTimeout,
                "{code}"
            );
        }
        assert_eq!(
            SqlErrorKind::of_sqlite_code(2067),
            SqlErrorKind::UniqueViolation
        );
        assert_eq!(
            SqlErrorKind::of_sqlite_code(1555),
            SqlErrorKind::UniqueViolation
        );
        for code in [19, 787, 1] {
            assert!(!SqlErrorKind::of_sqlite_code(code).is_transient(), "{code}");
        }
    }

    #[test]
    fn transport_failures_are_unavailable_and_the_rest_other() {
        for backend in [Backend::Postgres, Backend::Sqlite] {
            for error in [
                sqlx::Error::PoolTimedOut,
                sqlx::Error::PoolClosed,
                sqlx::Error::WorkerCrashed,
                sqlx::Error::Io(std::io::Error::other("reset")),
            ] {
                assert_eq!(
                    SqlErrorKind::of(backend, &error),
                    SqlErrorKind::Unavailable,
                    "{error}"
                );
            }
            for error in [sqlx::Error::RowNotFound, sqlx::Error::Protocol("x".into())] {
                assert_eq!(SqlErrorKind::of(backend, &error), SqlErrorKind::Other);
            }
        }
    }

    #[tokio::test]
    async fn a_real_sqlite_unique_violation_is_recognised() {
        use sqlx::Connection;
        let mut connection = sqlx::SqliteConnection::connect("sqlite::memory:")
            .await
            .unwrap();
        sqlx::query("CREATE TABLE t (id TEXT PRIMARY KEY)")
            .execute(&mut connection)
            .await
            .unwrap();
        let insert = || sqlx::query("INSERT INTO t (id) VALUES ('a')");
        insert().execute(&mut connection).await.unwrap();
        let error = insert().execute(&mut connection).await.unwrap_err();
        assert_eq!(
            SqlErrorKind::of(Backend::Sqlite, &error),
            SqlErrorKind::UniqueViolation
        );
        assert_eq!(
            SqlErrorKind::of_raised(&error),
            SqlErrorKind::UniqueViolation
        );
    }

    #[tokio::test]
    async fn a_raised_sqlite_error_is_read_in_sqlite_numbering() {
        use sqlx::ConnectOptions;
        use sqlx::sqlite::SqliteConnectOptions;
        let path = std::env::temp_dir().join(format!("sql-error-{}.db", uuid::Uuid::new_v4()));
        let options = SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(true)
            .busy_timeout(std::time::Duration::ZERO);
        let mut holder = options.connect().await.unwrap();
        sqlx::query("CREATE TABLE t (id TEXT)")
            .execute(&mut holder)
            .await
            .unwrap();
        sqlx::query("BEGIN EXCLUSIVE")
            .execute(&mut holder)
            .await
            .unwrap();
        let mut other = options.connect().await.unwrap();
        let busy = sqlx::query("INSERT INTO t (id) VALUES ('a')")
            .execute(&mut other)
            .await
            .unwrap_err();
        // SQLITE_BUSY (5): a lock, not an unknown SQLSTATE.
        assert_eq!(SqlErrorKind::of_raised(&busy), SqlErrorKind::LockTimeout);
        drop((holder, other));
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut file = path.clone().into_os_string();
            file.push(suffix);
            let _ = std::fs::remove_file(file);
        }
        for error in [sqlx::Error::PoolTimedOut, sqlx::Error::WorkerCrashed] {
            assert_eq!(SqlErrorKind::of_raised(&error), SqlErrorKind::Unavailable);
        }
        assert_eq!(
            SqlErrorKind::of_raised(&sqlx::Error::RowNotFound),
            SqlErrorKind::Other
        );
    }
}
