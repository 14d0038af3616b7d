//! Storage of the restaurant data behind one trait, implemented once by
//! [`SqlStore`], generic over its backend: PostgreSQL (production) or SQLite
//! (embedded mode), which differ only where [`Backend`] says.
//!
//! Stores return raw records (amounts in minor units, times in Unix
//! milliseconds); presentation (locale, timezone offsets) happens in `present`.

use std::future::Future;

use crate::domain::{DomainError, OrderFilter, PageRequest, TenantScope};

pub mod analytics_store;
pub mod backend;
pub mod conversation_store;
pub mod customer_store;
mod load;
mod local_days;
pub mod operator_flags;
mod options;
pub mod order_update_store;
mod owners;
pub mod postgres;
pub mod records;
mod search_columns;
pub mod seed;
mod sql;
mod sql_error;
mod sql_store;
pub mod sqlite;
mod venue;
pub mod venue_records;
mod venue_sql;
pub mod writes;

pub use analytics_store::{AnalyticsStore, MetricsBucketRecord};
pub use backend::Backend;
pub use conversation_store::{ConversationRecord, ConversationStore, MessageRecord};
pub use customer_store::{CustomerRecord, CustomerStore};
pub use operator_flags::{OperatorFlagStore, WritesSwitch};
pub use options::StoreOptions;
pub use order_update_store::OrderUpdateStore;
pub use postgres::PgStore;
pub use records::*;
pub use sql_store::SqlStore;
pub use sqlite::SqliteStore;
pub use venue::VenueStore;
pub use venue_records::*;

/// Everything the tools need from storage. Lists return at most
/// `page.limit + 1` records so the caller can tell whether a next page exists.
pub trait Store:
    Clone
    + Send
    + Sync
    + 'static
    + VenueStore
    + CustomerStore
    + ConversationStore
    + AnalyticsStore
    + OrderUpdateStore
    + OperatorFlagStore
    + writes::IdempotentWrites
{
    /// Applies this backend's migrations.
    fn migrate(&self) -> impl Future<Output = Result<(), DomainError>> + Send;

    /// Cheap liveness check of the database.
    fn ping(&self) -> impl Future<Output = Result<(), DomainError>> + Send;

    /// Organizations visible in `scope` (those in `organization_ids`, those owning
    /// one of `location_ids`, or all), sorted by (name, id).
    fn list_organizations(
        &self,
        scope: &TenantScope,
        page: &PageRequest,
    ) -> impl Future<Output = Result<Vec<OrganizationRecord>, DomainError>> + Send;

    fn get_organization(
        &self,
        organization_id: &str,
    ) -> impl Future<Output = Result<Option<OrganizationRecord>, DomainError>> + Send;

    /// Locations of one organization, optionally restricted to `only` ids,
    /// sorted by (name, id).
    fn list_locations(
        &self,
        organization_id: &str,
        only: Option<&[String]>,
        page: &PageRequest,
    ) -> impl Future<Output = Result<Vec<LocationRecord>, DomainError>> + Send;

    fn get_location(
        &self,
        location_id: &str,
    ) -> impl Future<Output = Result<Option<LocationRecord>, DomainError>> + Send;

    /// Orders matching `filter`, sorted by (created_at, id) in the filter's
    /// order (newest first by default).
    fn list_orders(
        &self,
        filter: &OrderFilter,
        page: &PageRequest,
    ) -> impl Future<Output = Result<Vec<OrderRecord>, DomainError>> + Send;

    /// One order and its lines.
    fn get_order(
        &self,
        order_id: &str,
    ) -> impl Future<Output = Result<Option<(OrderRecord, Vec<OrderLineRecord>)>, DomainError>> + Send;

    /// The real owner of an order: (organization_id, location_id).
    fn order_owner(
        &self,
        order_id: &str,
    ) -> impl Future<Output = Result<Option<Owner>, DomainError>> + Send;

    /// The real owner of a location.
    fn location_owner(
        &self,
        location_id: &str,
    ) -> impl Future<Output = Result<Option<Owner>, DomainError>> + Send;

    /// Writes a generated data set (see `seed`) in batches; idempotent on ids.
    /// Rebuilds the analytics rollup afterwards.
    fn load(&self, data: &seed::DataSet) -> impl Future<Output = Result<(), DomainError>> + Send;
}
