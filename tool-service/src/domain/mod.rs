//! Restaurant domain: the records the tools read and write, the filters they
//! take, and the domain error. Nothing here knows of gRPC, MCP or SQL.

mod analytics;
mod catalog;
mod conversation;
mod customer;
mod discount;
mod error;
mod integration;
pub mod labels;
mod locale;
mod location_status;
mod money;
mod opening;
mod order;
pub mod search;
mod settings;
pub mod settings_sections;
mod tenant;

pub use analytics::{
    Bucket, DateRange, MAX_METRICS, MAX_RANGE_DAYS, Metric, MetricChange, MetricSums, MetricValues,
    changes, check_metrics,
};
pub use catalog::{Availability, AvailabilityChange, CatalogFilter, CatalogItem, MAX_TEXT_FILTER};
pub use conversation::{
    ConversationChannel, ConversationFilter, ConversationStatus, ConversationSummary,
    ListedConversation, MatchedMessage, PREVIEW_CHARS, SenderKind, TranscriptMessage,
    preview as conversation_preview,
};
pub use customer::{Customer, CustomerFilter, mask_email, mask_phone};
pub use discount::{Discount, DiscountKind, DiscountStatus, in_force, percent_display};
pub use error::{AbsentOperation, CurrentState, Dependency, DomainError};
pub use integration::{Integration, IntegrationHealth, IntegrationKind};
pub use labels::Labelled;
pub use locale::Locale;
pub use location_status::{IntakeStatus, LocationStatus, MAX_PAUSE_MS, PauseReason, StatusChange};
pub use money::Money;
pub use opening::{HoursAt, OpeningNow};
pub use order::{
    Fulfillment, Order, OrderFilter, OrderLine, OrderNumberQuery, OrderStatus, SortOrder,
};
pub use search::{contains_pattern, fold};
pub use settings::{LocationSettings, SETTINGS_SCOPE, SettingsSection};
pub use tenant::{Address, Location, Organization};

/// Position after the last record of a page, in the order the store sorts by:
/// `(sort key, id)`. The sort key is a creation time in Unix milliseconds for
/// orders and a name for organizations and locations.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PageAfter {
    pub key: String,
    pub id: String,
}

/// A page request after validation: `limit` is within 1..=50.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageRequest {
    pub limit: u32,
    pub after: Option<PageAfter>,
}

/// Who may be read: every tenant (platform admins) or these organizations
/// (org-level memberships) and these locations (location-level memberships).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TenantScope {
    pub all_tenants: bool,
    pub organization_ids: Vec<String>,
    pub location_ids: Vec<String>,
}

impl TenantScope {
    pub fn is_empty(&self) -> bool {
        !self.all_tenants && self.organization_ids.is_empty() && self.location_ids.is_empty()
    }
}
