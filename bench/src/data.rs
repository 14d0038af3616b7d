//! Benchmark databases on the local PostgreSQL server: one template tool
//! database per orders-table size, generated with the tool-service's own data
//! generator and kept between runs (a marker row records the generator
//! settings, so a template is rebuilt only when they change); each run works
//! on databases of its own, named after the run (its tool databases copied
//! from the templates), so concurrent runs never clobber each other and the
//! writes of one run never reach the next.

use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use chataigne_tools::store::seed::{DataSet, SeedSpec};
use chataigne_tools::store::{PgStore, Store, StoreOptions};
use sqlx::{Connection, Executor, PgConnection, Row};

/// Days of order history of every benchmark data set.
const DAYS: u32 = 365;
/// Bump when the generated rows change shape, to rebuild cached databases.
const LAYOUT: u32 = 1;
/// A fixed "now" so a cached data set stays the same between runs.
const NOW_MS: i64 = 1_767_225_600_000; // 2026-01-01T00:00:00Z

/// The server the benchmark databases live on, and this run's databases.
pub struct Server {
    admin_url: String,
    /// Names this run's databases: process id and start time.
    run: String,
    /// Databases this run created, dropped by [`Server::drop_run_databases`].
    created: Mutex<Vec<String>>,
}

impl Server {
    /// `admin_url` must name an existing database (used for CREATE/DROP).
    pub fn new(admin_url: &str) -> Server {
        let started = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_millis());
        Server {
            admin_url: admin_url.to_owned(),
            run: format!("{:x}{:x}", std::process::id(), started),
            created: Mutex::default(),
        }
    }

    /// Records `database` as this run's (idempotent).
    fn own(&self, database: &str) {
        let mut created = self.created.lock().unwrap_or_else(|p| p.into_inner());
        if !created.iter().any(|name| name == database) {
            created.push(database.to_owned());
        }
    }

    fn url_of(&self, database: &str) -> String {
        let base = self
            .admin_url
            .rsplit_once('/')
            .map_or(self.admin_url.as_str(), |(base, _)| base);
        format!("{base}/{database}")
    }

    async fn admin(&self) -> anyhow::Result<PgConnection> {
        tokio::time::timeout(
            Duration::from_secs(5),
            PgConnection::connect(&self.admin_url),
        )
        .await
        .context("PostgreSQL connection timed out")?
        .with_context(|| "connecting to PostgreSQL (set --postgres)".to_owned())
    }

    async fn exists(&self, admin: &mut PgConnection, database: &str) -> anyhow::Result<bool> {
        let row = sqlx::query("SELECT count(*) FROM pg_database WHERE datname = $1")
            .bind(database)
            .fetch_one(&mut *admin)
            .await?;
        Ok(row.try_get::<i64, _>(0)? > 0)
    }

    /// Drops `database` and creates it again, empty or as a copy of `template`.
    async fn recreate(
        &self,
        admin: &mut PgConnection,
        database: &str,
        template: Option<&str>,
    ) -> anyhow::Result<()> {
        let drop = format!("DROP DATABASE IF EXISTS \"{database}\" WITH (FORCE)");
        admin.execute(sqlx::AssertSqlSafe(drop)).await?;
        let create = match template {
            // FILE_COPY: the files are copied between two checkpoints, with
            // no WAL for the blocks. The default (WAL_LOG) writes the whole
            // database to the WAL (1 GB for a million orders), whose
            // write-back then overlaps the measurement that follows.
            Some(template) => {
                format!("CREATE DATABASE \"{database}\" TEMPLATE \"{template}\" STRATEGY FILE_COPY")
            }
            None => format!("CREATE DATABASE \"{database}\""),
        };
        admin.execute(sqlx::AssertSqlSafe(create)).await?;
        Ok(())
    }

    /// An empty auth database of this run (the auth-service migrates and
    /// seeds it).
    pub async fn fresh_auth_database(&self) -> anyhow::Result<String> {
        let name = format!("chataigne_bench_{}_auth", self.run);
        let mut admin = self.admin().await?;
        self.own(&name);
        self.recreate(&mut admin, &name, None).await?;
        Ok(self.url_of(&name))
    }

    /// A tool database of this run holding about `orders` orders, copied from
    /// the template of that size. Returns its URL and the exact order count.
    pub async fn tool_database(&self, orders: u64) -> anyhow::Result<(String, u64)> {
        let (template, count) = self.tool_template(orders).await?;
        let name = format!("chataigne_bench_{}_tools_{orders}", self.run);
        let mut admin = self.admin().await?;
        self.own(&name);
        self.recreate(&mut admin, &name, Some(&template)).await?;
        Ok((self.url_of(&name), count))
    }

    /// The template database holding about `orders` orders, built if missing
    /// or built with other settings. Returns its name and the exact order count.
    async fn tool_template(&self, orders: u64) -> anyhow::Result<(String, u64)> {
        let spec = spec_for(orders);
        let marker = format!(
            "layout={LAYOUT} days={} per_day={} extra={} seed={:x}",
            spec.days, spec.orders_per_location_per_day, spec.extra_locations, spec.seed
        );
        let name = format!("chataigne_bench_tools_{orders}");
        let url = self.url_of(&name);
        let mut admin = self.admin().await?;
        if self.exists(&mut admin, &name).await?
            && let Some(count) = cached_count(&url, &marker).await
        {
            return Ok((name, count));
        }
        eprintln!("building {name} (about {orders} orders; kept for later runs)…");
        let started = Instant::now();
        self.recreate(&mut admin, &name, None).await?;
        let options = StoreOptions {
            max_connections: 4,
            connect_timeout: Duration::from_secs(5),
            statement_timeout: Duration::from_secs(600),
        };
        let store = PgStore::connect(&url, &options)
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        store.migrate().await.map_err(|e| anyhow::anyhow!("{e}"))?;
        let data = DataSet::generate(&spec);
        let generated = data.orders.len();
        store
            .load(&data)
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        drop(data);
        let pool = store.pool();
        pool.execute("ANALYZE").await?;
        pool.execute("CREATE TABLE bench_marker (spec TEXT NOT NULL)")
            .await?;
        sqlx::query("INSERT INTO bench_marker (spec) VALUES ($1)")
            .bind(&marker)
            .execute(pool)
            .await?;
        pool.close().await;
        eprintln!(
            "built {name}: {generated} orders in {:.0} s",
            started.elapsed().as_secs_f64()
        );
        Ok((name, generated as u64))
    }

    /// Drops every database of this run (the templates stay).
    pub async fn drop_run_databases(&self) -> anyhow::Result<()> {
        let names = std::mem::take(&mut *self.created.lock().unwrap_or_else(|p| p.into_inner()));
        let mut admin = self.admin().await?;
        for name in names {
            let drop = format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)");
            admin.execute(sqlx::AssertSqlSafe(drop)).await?;
        }
        Ok(())
    }
}

/// The order count of a complete cached database built with `marker`.
async fn cached_count(url: &str, marker: &str) -> Option<u64> {
    let mut conn = PgConnection::connect(url).await.ok()?;
    let stored: String = sqlx::query("SELECT spec FROM bench_marker")
        .fetch_one(&mut conn)
        .await
        .ok()?
        .try_get(0)
        .ok()?;
    if stored != marker {
        return None;
    }
    let count: i64 = sqlx::query("SELECT count(*) FROM orders")
        .fetch_one(&mut conn)
        .await
        .ok()?
        .try_get(0)
        .ok()?;
    // A template must have no session open when it is copied.
    conn.close().await.ok()?;
    u64::try_from(count).ok()
}

/// Generator settings for about `orders` orders: the five demo locations
/// over a year, denser as the table grows (so the filtered location's own
/// index range grows with it).
pub fn spec_for(orders: u64) -> SeedSpec {
    let locations = chataigne_common::demo::LOCATIONS.len().max(1) as u64;
    let per_day = orders.div_ceil(locations * u64::from(DAYS)).max(1);
    SeedSpec {
        now_ms: NOW_MS,
        days: DAYS,
        orders_per_location_per_day: u32::try_from(per_day).unwrap_or(u32::MAX),
        extra_locations: 0,
        seed: SeedSpec::DEMO_SEED,
    }
}
