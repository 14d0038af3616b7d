//! The folded copies of searched texts (`domain::search::fold`): which column
//! folds which, and the backfill that folds rows written before those
//! columns existed, run by `migrate` on both backends from one body
//! (`impl_backfill!`). New rows get their folded copy when written.

/// (table, source column, folded column).
pub(crate) const SEARCH_COLUMNS: &[(&str, &str, &str)] = &[
    ("catalog_items", "name", "name_folded"),
    ("customers", "display_name", "name_folded"),
    ("conversation_messages", "body", "body_folded"),
];

/// Rows folded per transaction by the backfill.
pub(crate) const BACKFILL_BATCH: i64 = 500;

pub(crate) fn select_unfolded(table: &str, source: &str, folded: &str) -> String {
    format!("SELECT id, {source} FROM {table} WHERE {folded} IS NULL ORDER BY id LIMIT $1")
}

pub(crate) fn update_folded(table: &str, folded: &str) -> String {
    format!("UPDATE {table} SET {folded} = $1 WHERE id = $2")
}

/// Implements `backfill_search_columns` for a backend with a `pool` field.
macro_rules! impl_backfill {
    ($store:ty) => {
        impl $store {
            /// Folds, batch by batch, every searched text that has no folded
            /// copy yet; a no-op once every row has one.
            pub(crate) async fn backfill_search_columns(
                &self,
            ) -> Result<(), $crate::domain::DomainError> {
                use $crate::store::search_columns::{
                    BACKFILL_BATCH, SEARCH_COLUMNS, select_unfolded, update_folded,
                };
                for &(table, source, folded) in SEARCH_COLUMNS {
                    let select = select_unfolded(table, source, folded);
                    let update = update_folded(table, folded);
                    loop {
                        let rows: Vec<(String, String)> =
                            sqlx::query_as(sqlx::AssertSqlSafe(select.clone()))
                                .bind(BACKFILL_BATCH)
                                .fetch_all(&self.pool)
                                .await?;
                        if rows.is_empty() {
                            break;
                        }
                        let mut tx = self.pool.begin().await?;
                        for (id, text) in &rows {
                            sqlx::query(sqlx::AssertSqlSafe(update.clone()))
                                .bind($crate::domain::fold(text))
                                .bind(id)
                                .execute(&mut *tx)
                                .await?;
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
    };
}

pub(crate) use impl_backfill;
