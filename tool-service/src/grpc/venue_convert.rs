//! Conversions shared by the `Locations` and `Catalog` adapters: their enums
//! between protobuf and the domain (the basics every adapter uses are in
//! `convert.rs`).

use chataigne_proto::tools::v1 as pb;

use crate::domain::{
    self, Availability, DomainError, IntakeStatus, IntegrationHealth, PauseReason, SettingsSection,
};

pub(super) fn intake_from_pb(field: &str, value: i32) -> Result<IntakeStatus, DomainError> {
    match pb::IntakeStatus::try_from(value) {
        Ok(pb::IntakeStatus::Accepting) => Ok(IntakeStatus::Accepting),
        Ok(pb::IntakeStatus::Paused) => Ok(IntakeStatus::Paused),
        _ => Err(DomainError::invalid(field, "expected accepting or paused")),
    }
}

pub(super) fn intake_to_pb(status: IntakeStatus) -> pb::IntakeStatus {
    match status {
        IntakeStatus::Accepting => pb::IntakeStatus::Accepting,
        IntakeStatus::Paused => pb::IntakeStatus::Paused,
    }
}

/// Unspecified means no reason.
pub(super) fn reason_from_pb(value: i32) -> Result<Option<PauseReason>, DomainError> {
    use pb::PauseReason as P;
    match P::try_from(value) {
        Ok(P::Unspecified) => Ok(None),
        Ok(P::Busy) => Ok(Some(PauseReason::Busy)),
        Ok(P::StaffShortage) => Ok(Some(PauseReason::StaffShortage)),
        Ok(P::TechnicalIssue) => Ok(Some(PauseReason::TechnicalIssue)),
        Ok(P::ClosedEarly) => Ok(Some(PauseReason::ClosedEarly)),
        Ok(P::Other) => Ok(Some(PauseReason::Other)),
        Err(_) => Err(DomainError::invalid("reason", "unknown reason")),
    }
}

pub(super) fn reason_to_pb(reason: Option<PauseReason>) -> pb::PauseReason {
    use pb::PauseReason as P;
    match reason {
        None => P::Unspecified,
        Some(PauseReason::Busy) => P::Busy,
        Some(PauseReason::StaffShortage) => P::StaffShortage,
        Some(PauseReason::TechnicalIssue) => P::TechnicalIssue,
        Some(PauseReason::ClosedEarly) => P::ClosedEarly,
        Some(PauseReason::Other) => P::Other,
    }
}

pub(super) fn section_from_pb(value: i32) -> Result<SettingsSection, DomainError> {
    use pb::SettingsSection as P;
    let section = match P::try_from(value) {
        Ok(P::Store) => SettingsSection::Store,
        Ok(P::Order) => SettingsSection::Order,
        Ok(P::OpeningHours) => SettingsSection::OpeningHours,
        Ok(P::Delivery) => SettingsSection::Delivery,
        Ok(P::PaymentMethods) => SettingsSection::PaymentMethods,
        Ok(P::Ai) => SettingsSection::Ai,
        Ok(P::Loyalty) => SettingsSection::Loyalty,
        Ok(P::Referrals) => SettingsSection::Referrals,
        Ok(P::Notifications) => SettingsSection::Notifications,
        Ok(P::Unspecified) | Err(_) => {
            return Err(DomainError::invalid("sections", "unknown section"));
        }
    };
    Ok(section)
}

/// `None` for unspecified (no filter); an unknown value is refused.
pub(super) fn availability_from_pb(
    field: &str,
    value: i32,
) -> Result<Option<Availability>, DomainError> {
    match pb::ItemAvailability::try_from(value) {
        Ok(pb::ItemAvailability::Unspecified) => Ok(None),
        Ok(pb::ItemAvailability::Available) => Ok(Some(Availability::Available)),
        Ok(pb::ItemAvailability::SoldOut) => Ok(Some(Availability::SoldOut)),
        Err(_) => Err(DomainError::invalid(
            field,
            "expected available or sold_out",
        )),
    }
}

pub(super) fn availability_to_pb(availability: Availability) -> pb::ItemAvailability {
    match availability {
        Availability::Available => pb::ItemAvailability::Available,
        Availability::SoldOut => pb::ItemAvailability::SoldOut,
    }
}

pub(super) fn health_to_pb(health: IntegrationHealth) -> pb::IntegrationHealth {
    match health {
        IntegrationHealth::Ok => pb::IntegrationHealth::Ok,
        IntegrationHealth::Degraded => pb::IntegrationHealth::Degraded,
        IntegrationHealth::Down => pb::IntegrationHealth::Down,
    }
}

/// The snake_case name serde gives a unit enum value.
pub(super) fn wire_name<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(name)) => name,
        _ => String::new(),
    }
}

pub(super) fn location_status(status: domain::LocationStatus) -> pb::LocationStatus {
    pb::LocationStatus {
        location_id: status.location_id,
        location_name: status.location_name,
        status: intake_to_pb(status.status) as i32,
        status_label: status.status_label,
        paused_until: status.paused_until.unwrap_or_default(),
        reason: reason_to_pb(status.reason) as i32,
        reason_label: status.reason_label.unwrap_or_default(),
        updated_at: status.updated_at,
    }
}
