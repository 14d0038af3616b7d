//! Operator commands of the tool-service binary besides serving: `migrate`
//! (apply the schema migrations and exit, as the deployment's migration job
//! does) and `seed` (fill the store with a generated data set at scale, for
//! analytics and benchmark runs, then rebuild the analytics rollup).

use std::time::{Duration, Instant};

use crate::config::Config;
use crate::store::seed::{DataSet, SeedSpec};
use crate::store::{PgStore, SqliteStore, Store, StoreOptions};

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

/// Applies the migrations of the configured database and returns.
pub async fn migrate(config: &Config) -> anyhow::Result<()> {
    match open(config, statement_timeout(config)).await? {
        AnyStore::Postgres(store) => store.migrate().await?,
        AnyStore::Sqlite(store) => store.migrate().await?,
    }
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
    match open(config, SEED_STATEMENT_TIMEOUT).await? {
        AnyStore::Postgres(store) => load(&store, &data).await?,
        AnyStore::Sqlite(store) => load(&store, &data).await?,
    }
    Ok(SeedReport {
        locations: data.locations.len(),
        orders: data.orders.len(),
        rows: data.row_count(),
        elapsed: started.elapsed(),
    })
}

async fn load<S: Store>(store: &S, data: &DataSet) -> anyhow::Result<()> {
    store.migrate().await?;
    // `load` rebuilds the rollup once every row is written.
    store.load(data).await?;
    Ok(())
}

enum AnyStore {
    Postgres(PgStore),
    Sqlite(SqliteStore),
}

fn statement_timeout(config: &Config) -> Duration {
    Duration::from_millis(config.database.statement_timeout_ms)
}

async fn open(config: &Config, statement_timeout: Duration) -> anyhow::Result<AnyStore> {
    config.validate()?;
    let options = StoreOptions {
        max_connections: config.database.max_connections,
        connect_timeout: Duration::from_millis(config.database.connect_timeout_ms),
        statement_timeout,
    };
    let url = config.database.url();
    Ok(
        if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            AnyStore::Postgres(PgStore::connect(url, &options).await?)
        } else {
            AnyStore::Sqlite(SqliteStore::connect(url, &options).await?)
        },
    )
}
