//! `OperatorFlagStore`: the run-time switches an operator flips (today the
//! global write switch), for both backends from one body of SQL. Reads are one primary-key lookup, cheap
//! enough to run before every write so a change applies at the next call on
//! every replica; nothing is cached.

use std::future::Future;

use super::backend::{Backend, Binds};
use super::sql_store::SqlStore;
use crate::domain::DomainError;

/// The state of the global write switch.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct WritesSwitch {
    /// Whether write tools may run.
    pub enabled: bool,
    /// Why the operator changed it last (free text for operators, never shown
    /// to MCP clients).
    pub reason: Option<String>,
    /// When it last changed (Unix milliseconds); `None` if never changed.
    pub changed_at_ms: Option<i64>,
}

impl Default for WritesSwitch {
    /// Writes are enabled until an operator says otherwise.
    fn default() -> Self {
        WritesSwitch {
            enabled: true,
            reason: None,
            changed_at_ms: None,
        }
    }
}

/// Name of the write switch's row in `operator_flags`.
const WRITES: &str = "writes";

const GET_FLAG: &str = "SELECT enabled, reason, changed_at_ms FROM operator_flags WHERE name = $1";

const SET_FLAG: &str = "INSERT INTO operator_flags (name, enabled, reason, changed_at_ms) \
     VALUES ($1, $2, $3, $4) \
     ON CONFLICT (name) DO UPDATE SET enabled = excluded.enabled, \
     reason = excluded.reason, changed_at_ms = excluded.changed_at_ms";

pub trait OperatorFlagStore: Send + Sync {
    /// The write switch as stored now (enabled when no row exists).
    fn writes_switch(&self) -> impl Future<Output = Result<WritesSwitch, DomainError>> + Send;

    /// Sets the write switch and returns it as stored.
    fn set_writes_switch(
        &self,
        enabled: bool,
        reason: Option<&str>,
        now_ms: i64,
    ) -> impl Future<Output = Result<WritesSwitch, DomainError>> + Send;
}

impl<B: Backend> OperatorFlagStore for SqlStore<B> {
    async fn writes_switch(&self) -> Result<WritesSwitch, DomainError> {
        let row: Option<WritesSwitch> = self
            .fetch_optional(sqlx::query(GET_FLAG).text(WRITES))
            .await?;
        Ok(row.unwrap_or_default())
    }

    async fn set_writes_switch(
        &self,
        enabled: bool,
        reason: Option<&str>,
        now_ms: i64,
    ) -> Result<WritesSwitch, DomainError> {
        let set = sqlx::query(SET_FLAG)
            .text(WRITES)
            .flag(enabled)
            .opt_text(reason)
            .int(now_ms);
        self.execute(set).await?;
        self.writes_switch().await
    }
}
