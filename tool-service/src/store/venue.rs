//! `VenueStore`: storage of what a location offers and how it runs — order
//! intake status, settings, catalog availability, discounts, integrations.
//! Implemented for both backends in `venue_sql`.

use std::future::Future;

use crate::domain::{
    AvailabilityChange, CatalogFilter, DomainError, PageRequest, SettingsSection, StatusChange,
};

use super::seed::VenueData;
use super::{
    CatalogItemRecord, DiscountRecord, GuardedWrite, IntegrationRecord, LocationStatusRecord,
    Owner, SettingsRecord,
};

pub trait VenueStore: Send + Sync {
    /// A location's stored order intake.
    fn location_status(
        &self,
        location_id: &str,
    ) -> impl Future<Output = Result<Option<LocationStatusRecord>, DomainError>> + Send;

    /// Changes the order intake in one statement, only if the status in
    /// force at `now_ms` is `change.expected`.
    fn update_location_status(
        &self,
        location_id: &str,
        change: &StatusChange,
        now_ms: i64,
    ) -> impl Future<Output = Result<GuardedWrite<LocationStatusRecord>, DomainError>> + Send;

    /// The stored sections among `sections` of one location.
    fn location_settings(
        &self,
        location_id: &str,
        sections: &[SettingsSection],
    ) -> impl Future<Output = Result<Vec<SettingsRecord>, DomainError>> + Send;

    /// Items of one location matching `filter`, by (name, id).
    fn list_catalog_items(
        &self,
        filter: &CatalogFilter,
        page: &PageRequest,
    ) -> impl Future<Output = Result<Vec<CatalogItemRecord>, DomainError>> + Send;

    fn get_catalog_item(
        &self,
        item_id: &str,
    ) -> impl Future<Output = Result<Option<CatalogItemRecord>, DomainError>> + Send;

    /// The real owner of a catalog item.
    fn catalog_item_owner(
        &self,
        item_id: &str,
    ) -> impl Future<Output = Result<Option<Owner>, DomainError>> + Send;

    /// Changes an item's availability in one statement, only if the
    /// availability in force at `now_ms` is `change.expected`.
    fn update_item_availability(
        &self,
        item_id: &str,
        change: &AvailabilityChange,
        now_ms: i64,
    ) -> impl Future<Output = Result<GuardedWrite<CatalogItemRecord>, DomainError>> + Send;

    /// Discounts valid in a location (its own and its organization's), by
    /// (name, id); `in_force` keeps only those that apply (or not) at `now_ms`.
    fn list_discounts(
        &self,
        owner: &Owner,
        in_force: Option<bool>,
        now_ms: i64,
        page: &PageRequest,
    ) -> impl Future<Output = Result<Vec<DiscountRecord>, DomainError>> + Send;

    /// Integrations serving a location (its own and its organization's), by (name, id).
    fn list_integrations(
        &self,
        owner: &Owner,
        page: &PageRequest,
    ) -> impl Future<Output = Result<Vec<IntegrationRecord>, DomainError>> + Send;

    /// Writes generated settings, discounts and integrations; idempotent on keys.
    fn load_venue(&self, data: &VenueData) -> impl Future<Output = Result<(), DomainError>> + Send;
}
