//! How the store maps its database failures onto the domain's error: the
//! shared classes of a SQL error (`chataigne_common::sql_error`) become the
//! tool-service's codes, so that the domain knows nothing of the driver.

use chataigne_common::sql_error::SqlErrorKind;

use crate::domain::{Dependency, DomainError};

/// The shared classes of a database failure, mapped onto the tool-service's
/// codes: unreachable or out of resources is the database dependency, the
/// statement timeout is the call's deadline, anything else is internal.
impl From<sqlx::Error> for DomainError {
    fn from(error: sqlx::Error) -> Self {
        match SqlErrorKind::of_raised(&error) {
            SqlErrorKind::Unavailable => {
                DomainError::Dependency(Dependency::Database, error.to_string())
            }
            SqlErrorKind::StatementTimeout => DomainError::DeadlineExceeded,
            SqlErrorKind::SerializationFailure
            | SqlErrorKind::LockTimeout
            | SqlErrorKind::UniqueViolation
            | SqlErrorKind::Other => DomainError::Internal(error.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_failures_map_onto_the_tool_service_codes() {
        for error in [
            sqlx::Error::PoolTimedOut,
            sqlx::Error::PoolClosed,
            sqlx::Error::WorkerCrashed,
            sqlx::Error::Io(std::io::Error::other("reset")),
        ] {
            assert!(
                matches!(
                    DomainError::from(error),
                    DomainError::Dependency(Dependency::Database, _)
                ),
                "unavailable"
            );
        }
        assert!(matches!(
            DomainError::from(sqlx::Error::RowNotFound),
            DomainError::Internal(_)
        ));
    }
}
