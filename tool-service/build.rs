//! Rebuilds the crate when a migration is added, since `sqlx::migrate!` embeds
//! the migration files at compile time.

fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
