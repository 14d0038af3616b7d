//! Operator commands of the tool-service binary besides serving: `migrate`
//! (apply the schema migrations and exit, as the deployment's migration job
//! does), `seed` (fill the store with a generated data set at scale, for
//! analytics and benchmark runs, then rebuild the analytics rollup) and
//! `writes disable|enable|status` (the run-time write switch, through
//! [`Operator`], which the launcher and tests use too).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::Config;
use crate::domain::DomainError;
use crate::store::seed::{DataSet, SeedSpec};
use crate::store::{PgStore, SqliteStore, Store, StoreOptions, WritesSwitch};

/// Statement bound of the seed command: bulk loads and the rollup rebuild of
/// a large data set run far longer than one tool call may.
const SEED_STATEMENT_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// What the `seed` command generates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScaleSeed {
    /// Generated locations added to the demo ones, spread over the demo organizations.
    pub extra_locations: u32,
    /// Days of order history, ending now.
    pub days: u32,
    /// Average orders per location and day.
    pub orders_per_location_per_day: u32,
    /// Seed of every random choice; the same seed gives the same rows.
    pub seed: u64,
}

/// What the `seed` command wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeedReport {
    pub locations: usize,
    pub orders: usize,
    pub rows: usize,
    pub elapsed: Duration,
}

/// Points `config` at the embedded stack whose data directory is `dir` (the
/// launcher's `--data-dir`): its `tools.db`, which must exist, and its
/// idempotency secret.
pub fn use_data_dir(config: &mut Config, dir: &std::path::Path) -> anyhow::Result<()> {
    use chataigne_common::embedded::{self, DataDir};
    let dir = DataDir::existing(dir, embedded::TOOLS_DB)?;
    config.database.url = secrecy::SecretString::from(dir.sqlite_url(embedded::TOOLS_DB, false));
    config.idempotency.secret = dir.read_secret(embedded::IDEMPOTENCY_SECRET);
    config.seed_demo = false;
    Ok(())
}

/// Applies the migrations of the configured database and returns.
pub async fn migrate(config: &Config) -> anyhow::Result<()> {
    config.validate()?;
    // The migration Job may start before its database: wait for it.
    let database = format!(
        "database {}",
        chataigne_common::startup::redacted_url(config.database.url())
    );
    chataigne_common::startup::retry(&database, &config.startup, || async {
        open(config, statement_timeout(config))
            .await?
            .apply_migrations()
            .await?;
        anyhow::Ok(())
    })
    .await?;
    Ok(())
}

/// Migrates, generates the data set `spec` describes, loads it (idempotent
/// on IDs) and rebuilds the analytics rollup.
pub async fn seed(config: &Config, spec: &ScaleSeed) -> anyhow::Result<SeedReport> {
    let started = Instant::now();
    let data = DataSet::generate(&SeedSpec {
        now_ms: chrono::Utc::now().timestamp_millis(),
        days: spec.days,
        orders_per_location_per_day: spec.orders_per_location_per_day,
        extra_locations: spec.extra_locations,
        seed: spec.seed,
    });
    let store = open(config, SEED_STATEMENT_TIMEOUT).await?;
    store.apply_migrations().await?;
    // Loading rebuilds the rollup once every row is written.
    store.load_data(&data).await?;
    Ok(SeedReport {
        locations: data.locations.len(),
        orders: data.orders.len(),
        rows: data.row_count(),
        elapsed: started.elapsed(),
    })
}

/// Longest reason kept with a change of the write switch, in characters.
pub const REASON_LIMIT: usize = 500;

/// The operator's handle on the run-time flags of a tool-service database:
/// the same rows every replica reads before each write.
#[derive(Clone)]
pub struct Operator {
    store: Arc<dyn OperatorStore>,
}

impl std::fmt::Debug for Operator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Operator").finish_non_exhaustive()
    }
}

impl Operator {
    /// Opens the configured database (already migrated, e.g. by `migrate`).
    pub async fn open(config: &Config) -> anyhow::Result<Operator> {
        Ok(Operator {
            store: open(config, statement_timeout(config)).await?,
        })
    }

    /// The handle on `store`, of either backend.
    pub(crate) fn new(store: impl Store + 'static) -> Operator {
        Operator {
            store: Arc::new(store),
        }
    }

    /// The write switch as stored now.
    pub async fn writes_status(&self) -> anyhow::Result<WritesSwitch> {
        self.store.read_writes_switch().await.map_err(unreadable)
    }

    /// Switches every write tool off, at the next call of any caller, with an
    /// optional reason for other operators (trimmed, one line, at most
    /// [`REASON_LIMIT`] characters).
    pub async fn disable_writes(&self, reason: Option<&str>) -> anyhow::Result<WritesSwitch> {
        let reason = reason.map(str::trim).filter(|reason| !reason.is_empty());
        anyhow::ensure!(
            reason.is_none_or(|reason| reason.chars().count() <= REASON_LIMIT),
            "the reason must be at most {REASON_LIMIT} characters"
        );
        anyhow::ensure!(
            reason.is_none_or(|reason| !reason.chars().any(char::is_control)),
            "the reason must be one line of text"
        );
        self.set_writes(false, reason).await
    }

    /// Switches write tools back on (each still needs its scope and rights).
    pub async fn enable_writes(&self) -> anyhow::Result<WritesSwitch> {
        self.set_writes(true, None).await
    }

    async fn set_writes(
        &self,
        enabled: bool,
        reason: Option<&str>,
    ) -> anyhow::Result<WritesSwitch> {
        let now_ms = chrono::Utc::now().timestamp_millis();
        self.store
            .store_writes_switch(enabled, reason, now_ms)
            .await
            .map_err(unreadable)
    }
}

/// The `writes` subcommands of the tool-service binary and the launcher.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum WritesAction {
    /// Refuse every write tool from the next call on (reads keep working).
    Disable {
        /// Why, for other operators (kept with the switch, never sent to clients).
        #[arg(long)]
        reason: Option<String>,
    },
    /// Allow write tools again.
    Enable,
    /// Print the switch's state.
    Status,
}

/// Runs one `writes` subcommand against the database of `config`; returns
/// the line describing the switch afterwards.
pub async fn writes(config: &Config, action: WritesAction) -> anyhow::Result<String> {
    let operator = Operator::open(config).await?;
    let switch = match action {
        WritesAction::Disable { reason } => operator.disable_writes(reason.as_deref()).await?,
        WritesAction::Enable => operator.enable_writes().await?,
        WritesAction::Status => operator.writes_status().await?,
    };
    Ok(describe_writes(&switch))
}

/// The store's error with its detail: operators read it (it never reaches
/// an MCP client), e.g. a database not migrated yet.
fn unreadable(error: DomainError) -> anyhow::Error {
    anyhow::anyhow!("write switch: {error}; the database must be reachable and migrated")
}

/// One line describing `switch` for the `writes` commands, e.g.
/// `writes: disabled (since 2026-01-02T03:04:05Z; reason: maintenance)`.
pub fn describe_writes(switch: &WritesSwitch) -> String {
    let state = if switch.enabled {
        "enabled"
    } else {
        "disabled"
    };
    let since = switch
        .changed_at_ms
        .and_then(chrono::DateTime::from_timestamp_millis)
        .map(|at| at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
    match (since, &switch.reason) {
        (None, _) => format!("writes: {state} (never changed)"),
        (Some(since), None) => format!("writes: {state} (since {since})"),
        (Some(since), Some(reason)) => {
            format!("writes: {state} (since {since}; reason: {reason})")
        }
    }
}

/// A store's work that the operator commands run, with boxed futures so that
/// one handle serves either backend: the backend is erased here, once.
trait OperatorStore: Send + Sync {
    fn apply_migrations(&self) -> OperatorFuture<'_, ()>;
    fn load_data<'a>(&'a self, data: &'a DataSet) -> OperatorFuture<'a, ()>;
    fn read_writes_switch(&self) -> OperatorFuture<'_, WritesSwitch>;
    fn store_writes_switch<'a>(
        &'a self,
        enabled: bool,
        reason: Option<&'a str>,
        now_ms: i64,
    ) -> OperatorFuture<'a, WritesSwitch>;
}

type OperatorFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, DomainError>> + Send + 'a>>;

impl<S: Store> OperatorStore for S {
    fn apply_migrations(&self) -> OperatorFuture<'_, ()> {
        Box::pin(self.migrate())
    }

    fn load_data<'a>(&'a self, data: &'a DataSet) -> OperatorFuture<'a, ()> {
        Box::pin(self.load(data))
    }

    fn read_writes_switch(&self) -> OperatorFuture<'_, WritesSwitch> {
        Box::pin(self.writes_switch())
    }

    fn store_writes_switch<'a>(
        &'a self,
        enabled: bool,
        reason: Option<&'a str>,
        now_ms: i64,
    ) -> OperatorFuture<'a, WritesSwitch> {
        Box::pin(self.set_writes_switch(enabled, reason, now_ms))
    }
}

fn statement_timeout(config: &Config) -> Duration {
    Duration::from_millis(config.database.statement_timeout_ms)
}

async fn open(
    config: &Config,
    statement_timeout: Duration,
) -> anyhow::Result<Arc<dyn OperatorStore>> {
    config.validate()?;
    let options = StoreOptions {
        max_connections: config.database.max_connections,
        connect_timeout: Duration::from_millis(config.database.connect_timeout_ms),
        statement_timeout,
    };
    let url = config.database.url();
    let backend = config.database.backend();
    let store: Arc<dyn OperatorStore> =
        if backend == Some(chataigne_common::database::Backend::Postgres) {
            Arc::new(PgStore::connect(url, &options).await?)
        } else {
            Arc::new(SqliteStore::connect(url, &options).await?)
        };
    Ok(store)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn operator() -> Operator {
        let store = SqliteStore::connect("sqlite::memory:", &StoreOptions::default())
            .await
            .unwrap();
        store.migrate().await.unwrap();
        Operator::new(store)
    }

    #[tokio::test]
    async fn reasons_are_one_bounded_line_and_blank_ones_are_dropped() {
        let operator = operator().await;
        assert_eq!(
            describe_writes(&operator.writes_status().await.unwrap()),
            "writes: enabled (never changed)"
        );
        assert!(operator.disable_writes(Some("a\nb")).await.is_err());
        assert!(
            operator
                .disable_writes(Some(&"é".repeat(REASON_LIMIT + 1)))
                .await
                .is_err()
        );
        assert!(operator.writes_status().await.unwrap().enabled);
        let switch = operator.disable_writes(Some("   ")).await.unwrap();
        assert!(!switch.enabled);
        assert_eq!(switch.reason, None);
        let line = describe_writes(&switch);
        assert!(line.starts_with("writes: disabled (since "), "{line}");
        let switch = operator
            .disable_writes(Some(&"é".repeat(REASON_LIMIT)))
            .await
            .unwrap();
        assert_eq!(switch.reason.map(|r| r.chars().count()), Some(REASON_LIMIT));
        let switch = operator.enable_writes().await.unwrap();
        assert!(switch.enabled && switch.reason.is_none());
    }
}
