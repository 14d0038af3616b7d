//! `chataigne_location_settings_get` ↔ `Locations/GetLocationSettings`: the
//! requested settings sections of one location. The call needs
//! `settings.read` and the scope of every requested section; one missing
//! scope refuses the whole call.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::support::Summary;
use super::{CallContext, DeadlineClass, Tool, ToolFacts, ToolKind, ToolOutput, ToolSpec, Tools};
use crate::access::Access;
use crate::domain::{DomainError, Locale, LocationSettings, SETTINGS_SCOPE, SettingsSection};
use crate::present;
use crate::store::Store;

pub const SPEC: ToolSpec = ToolSpec {
    name: "chataigne_location_settings_get",
    title: "Get a location's settings",
    description: "Returns chosen sections of a location's settings: store (public name, \
description, phone, languages), order (fulfillment types, preparation time, minimum order), \
opening_hours (per weekday, local \"HH:MM\"), delivery (radius in km, fee, free-delivery \
threshold, time in minutes), payment_methods, ai (assistant on or off, tone, languages), \
loyalty (points per currency unit, reward), referrals (rewards) and notifications (channels, \
alerts). Takes 1 to 9 distinct sections, each needing \
its own scope besides settings.read; one missing scope refuses the whole call \
(MCP_SCOPE_REQUIRED naming it).",
    scope: SETTINGS_SCOPE,
    kind: ToolKind::Read,
    deadline: DeadlineClass::Read,
    idempotency_key_required: false,
    open_world: false,
    rpc: "chataigne.tools.v1.Locations/GetLocationSettings",
    facts: ToolFacts::NONE,
};

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LocationSettingsGetInput {
    /// From chataigne_locations_list, e.g. "loc_01paris11".
    #[schemars(length(min = 1, max = 64))]
    pub location_id: String,
    /// Sections to return, each at most once.
    #[schemars(length(min = 1, max = 9), extend("uniqueItems" = true))]
    pub sections: Vec<SettingsSection>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LocationSettingsGetOutput {
    /// The requested sections; a section never configured is absent.
    pub settings: LocationSettings,
}

/// `chataigne_location_settings_get`, declared by [`SPEC`].
pub struct LocationSettingsGet;

impl Tool for LocationSettingsGet {
    type Input = LocationSettingsGetInput;
    type Output = LocationSettingsGetOutput;
    type Reply = ToolOutput<LocationSettingsGetOutput>;
    const SPEC: ToolSpec = SPEC;

    async fn run<S: Store, A: Access>(
        tools: &Tools<S, A>,
        input: LocationSettingsGetInput,
        ctx: &CallContext,
    ) -> Result<ToolOutput<LocationSettingsGetOutput>, DomainError> {
        let mut sections = input.sections.clone();
        sections.sort_by_key(|s| s.as_str());
        sections.dedup();
        if sections.is_empty() || sections.len() != input.sections.len() {
            return Err(DomainError::invalid(
                "sections",
                "expected 1 to 9 distinct sections",
            ));
        }
        let (owner, _) = tools
            .authorize_location(&input.location_id, SETTINGS_SCOPE, ctx)
            .await?;
        // Every section's own scope, each checked live; the first refusal
        // refuses the whole call before anything is read.
        for section in &input.sections {
            tools
                .access
                .authorize(&ctx.credential, section.scope(), &owner)
                .await?;
        }
        let location = tools.location(&input.location_id).await?;
        let records = tools
            .store
            .location_settings(&input.location_id, &sections)
            .await?;
        let settings = present::settings(location, &records, ctx.locale)?;
        let text = settings_text(&settings, &sections, ctx.locale)?;
        Ok(ToolOutput {
            data: LocationSettingsGetOutput { settings },
            text,
            next_cursor: None,
        })
    }
}

/// The settings as text: the location, then each requested section on its
/// line with every value (opening hours one weekday per line); a section
/// never configured is said to be absent.
fn settings_text(
    settings: &LocationSettings,
    sections: &[SettingsSection],
    locale: Locale,
) -> Result<String, DomainError> {
    let (name, id, tz, currency) = (
        &settings.location_name,
        &settings.location_id,
        &settings.timezone,
        &settings.currency,
    );
    let head = locale.pick(
        format!("Réglages de {name} ({id}) · heures locales, fuseau {tz} · devise {currency}."),
        format!("Settings of {name} ({id}) · local times, timezone {tz} · currency {currency}."),
    );
    let mut summary = Summary::new(locale, head);
    let value = serde_json::to_value(settings)
        .map_err(|e| DomainError::Internal(format!("serializing settings: {e}")))?;
    for section in sections {
        let key = section.as_str();
        match (section, &settings.opening_hours, value.get(key)) {
            (SettingsSection::OpeningHours, Some(hours), _) => {
                summary.line(format!("- {key}:"));
                for day in &hours.days {
                    let periods = if day.closed || day.periods.is_empty() {
                        locale.pick("fermé", "closed").to_owned()
                    } else {
                        day.periods
                            .iter()
                            .map(|p| format!("{}–{}", p.opens, p.closes))
                            .collect::<Vec<_>>()
                            .join(", ")
                    };
                    summary.line(format!("  - {}: {periods}", day.weekday_label));
                }
            }
            (_, _, Some(value)) if !value.is_null() => {
                summary.line(format!("- {key}: {}", present::compact(value, locale)));
            }
            _ => {
                summary.line(format!(
                    "- {key}: {}",
                    locale.pick("jamais configuré", "never configured")
                ));
            }
        }
    }
    summary.narrow("moins de sections", "fewer sections");
    Ok(summary.render(None))
}
