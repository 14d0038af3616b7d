//! The folded copies of searched texts (`domain::search::fold`): which column
//! folds which, and the backfill that folds rows written before those
//! columns existed, run by `migrate` on both backends from one body. New
//! rows get their folded copy when written.

use super::backend::{Backend, Binds};
use super::sql_store::SqlStore;
use crate::domain::{DomainError, fold};

/// (table, source column, folded column).
const SEARCH_COLUMNS: &[(&str, &str, &str)] = &[
    ("catalog_items", "name", "name_folded"),
    ("customers", "display_name", "name_folded"),
    ("conversation_messages", "body", "body_folded"),
];

/// Rows folded per transaction by the backfill.
const BACKFILL_BATCH: i64 = 500;

fn select_unfolded(table: &str, source: &str, folded: &str) -> String {
    format!("SELECT id, {source} FROM {table} WHERE {folded} IS NULL ORDER BY id LIMIT $1")
}

fn update_folded(table: &str, folded: &str) -> String {
    format!("UPDATE {table} SET {folded} = $1 WHERE id = $2")
}

impl<B: Backend> SqlStore<B> {
    /// Folds, batch by batch, every searched text that has no folded copy
    /// yet; a no-op once every row has one.
    pub(crate) async fn backfill_search_columns(&self) -> Result<(), DomainError> {
        for &(table, source, folded) in SEARCH_COLUMNS {
            let select = select_unfolded(table, source, folded);
            let update = update_folded(table, folded);
            loop {
                let mut conn = self.pool().acquire().await?;
                let query = sqlx::query(sqlx::AssertSqlSafe(select.clone())).int(BACKFILL_BATCH);
                let rows = B::fetch_rows(&mut conn, query).await?;
                drop(conn);
                let rows: Vec<(String, String)> =
                    rows.iter().map(B::decode).collect::<Result<_, _>>()?;
                if rows.is_empty() {
                    break;
                }
                let mut tx = self.pool().begin().await?;
                for (id, text) in &rows {
                    let query = sqlx::query(sqlx::AssertSqlSafe(update.clone()))
                        .text(&fold(text))
                        .text(id);
                    B::execute(&mut tx, query).await?;
                }
                tx.commit().await?;
                if (rows.len() as i64) < BACKFILL_BATCH {
                    break;
                }
            }
        }
        Ok(())
    }
}
