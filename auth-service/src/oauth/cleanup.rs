//! The periodic cleanup of expired authorization state: authorization codes,
//! refresh tokens, browser sessions and sessions past their lifetime, and
//! those revoked (codes: spent) longer than `oauth.revoked_retention_secs`
//! ago. Deleted in bounded batches (`oauth.cleanup_batch_size` rows per
//! statement) every `oauth.cleanup_interval_secs`.

use std::time::Duration;

use crate::error::AuthError;
use crate::model::now_ms;
use crate::store::oauth::Purged;

use super::OAuthServer;

/// Batches per run at most; what is left waits for the next run.
const MAX_BATCHES_PER_RUN: u32 = 1_000;

impl OAuthServer {
    /// Deletes expired and long-revoked state, batch after batch, until a
    /// batch comes back short; returns the rows deleted.
    pub async fn purge_expired(&self) -> Result<Purged, AuthError> {
        let batch = self.config.cleanup_batch_size.max(1);
        let now = now_ms();
        let retention_ms = i64::try_from(self.config.revoked_retention_secs)
            .unwrap_or(i64::MAX)
            .saturating_mul(1000);
        let cutoff = now.saturating_sub(retention_ms);
        let mut total = Purged::default();
        for _ in 0..MAX_BATCHES_PER_RUN {
            let purged = self
                .core
                .store()
                .purge_expired(now, cutoff, i64::from(batch))
                .await?;
            total.codes += purged.codes;
            total.refresh_tokens += purged.refresh_tokens;
            total.browser_sessions += purged.browser_sessions;
            total.sessions += purged.sessions;
            if !purged.maybe_more(u64::from(batch)) {
                break;
            }
            tokio::task::yield_now().await;
        }
        Ok(total)
    }

    /// Runs [`OAuthServer::purge_expired`] every `oauth.cleanup_interval_secs`
    /// (the first run one interval after start), forever (the caller aborts
    /// the task).
    pub async fn clean_up_periodically(&self) {
        let every = Duration::from_secs(self.config.cleanup_interval_secs.max(1));
        let mut ticks = tokio::time::interval(every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticks.tick().await;
        loop {
            ticks.tick().await;
            match self.purge_expired().await {
                Ok(purged) if purged.total() > 0 => tracing::info!(
                    codes = purged.codes,
                    refresh_tokens = purged.refresh_tokens,
                    browser_sessions = purged.browser_sessions,
                    sessions = purged.sessions,
                    "expired authorization state deleted"
                ),
                Ok(_) => {}
                Err(error) => {
                    tracing::warn!(%error, "cleanup of expired authorization state failed")
                }
            }
        }
    }
}
