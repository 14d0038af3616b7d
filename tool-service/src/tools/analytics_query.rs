//! `chataigne_analytics_query` ↔ `Analytics/QueryAnalytics`: a location's
//! metrics per day, week or month of its own calendar, read from the daily
//! rollup and summed per bucket by the database.

use std::collections::HashMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::support::TEXT_LIMIT;
use super::{
    CallContext, DeadlineClass, Tool, ToolFacts, ToolKind, ToolOutput, ToolSpec, Tools, deadline,
};
use crate::access::Access;
use crate::domain::labels::labels_of;
use crate::domain::{
    Bucket, DateRange, DomainError, Locale, Metric, MetricChange, MetricSums, MetricValues,
    changes, check_metrics,
};
use crate::store::Store;

pub const SPEC: ToolSpec = ToolSpec {
    name: "chataigne_analytics_query",
    title: "Query analytics",
    description: "Returns a location's sales figures per day, week or month of its own \
calendar, with totals over the range: orders, revenue, average order value, cancelled and \
completed orders, items sold, new customers, and delivery or pickup share. Suited to trends and \
comparing periods. Takes 1 to 8 distinct metrics and a range of at most 366 \
days, both ends included. Each bucket's `values` are keyed by metric name; figures cover orders not cancelled unless stated \
otherwise, shares in percent (one decimal). `compare_previous` adds the change against the previous period; future dates \
are refused.",
    scope: "analytics.read",
    kind: ToolKind::Read,
    deadline: DeadlineClass::Analytics,
    idempotency_key_required: false,
    open_world: false,
    rpc: "chataigne.tools.v1.Analytics/QueryAnalytics",
    facts: ToolFacts {
        view: Some(&super::views::ANALYTICS_CHART),
        ..ToolFacts::NONE
    },
};

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnalyticsQueryInput {
    /// From chataigne_locations_list, e.g. "loc_01paris11".
    #[schemars(length(min = 1, max = 64))]
    pub location_id: String,
    /// Each at most once; units: orders_count, cancelled_count, completed_count (orders), revenue, average_order_value (money), items_sold (items), new_customers (customers), delivery_share, pickup_share (percent).
    #[schemars(length(min = 1, max = 8), extend("uniqueItems" = true))]
    pub metrics: Vec<Metric>,
    /// First day, included, ISO 8601 date in the location's calendar, e.g. "2026-03-01".
    #[schemars(extend("format" = "date"))]
    pub date_from: String,
    /// Last day, included, ISO 8601 date, not before date_from, e.g. "2026-03-31".
    #[schemars(extend("format" = "date"))]
    pub date_to: String,
    /// Bucket width: day, week (Monday to Sunday) or month; day when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bucket: Option<Bucket>,
    /// true: add the change against the previous period of equal length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compare_previous: Option<bool>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct BucketValues {
    /// First day of the bucket, ISO 8601 date in the location's calendar; the first and last buckets only count days within the requested range.
    pub start: String,
    pub values: MetricValues,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct AnalyticsQueryOutput {
    pub location_id: String,
    pub location_name: String,
    /// IANA timezone whose calendar defines the days, e.g. "Europe/Paris".
    pub timezone: String,
    /// ISO 4217 currency of money values.
    pub currency: String,
    /// ISO 8601 date, included.
    pub date_from: String,
    /// ISO 8601 date, included.
    pub date_to: String,
    pub bucket: Bucket,
    pub bucket_label: String,
    /// The metrics requested, in request order: the keys of every `values`.
    pub metrics: Vec<Metric>,
    /// The labels of `metrics`, in the same order.
    pub metric_labels: Vec<String>,
    /// Every bucket of the range, oldest first, zero when nothing happened.
    pub buckets: Vec<BucketValues>,
    /// The requested metrics over the whole range.
    pub totals: MetricValues,
    /// With `compare_previous`: the totals against the period of the same length just before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<Comparison>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Comparison {
    /// First day of the previous period, ISO 8601 date, included.
    pub previous_date_from: String,
    /// Last day of the previous period (the day before date_from), included.
    pub previous_date_to: String,
    /// The requested metrics over the previous period.
    pub previous_totals: MetricValues,
    /// One entry per metric of `metrics`, in that order.
    pub changes: Vec<MetricChange>,
}

/// `chataigne_analytics_query`, declared by [`SPEC`].
pub struct AnalyticsQuery;

impl Tool for AnalyticsQuery {
    type Input = AnalyticsQueryInput;
    type Output = AnalyticsQueryOutput;
    type Reply = ToolOutput<AnalyticsQueryOutput>;
    const SPEC: ToolSpec = SPEC;

    async fn run<S: Store, A: Access>(
        tools: &Tools<S, A>,
        input: AnalyticsQueryInput,
        ctx: &CallContext,
    ) -> Result<ToolOutput<AnalyticsQueryOutput>, DomainError> {
        tools
            .authorize_location(&input.location_id, SPEC.scope, ctx)
            .await?;
        check_metrics(&input.metrics)?;
        let range = DateRange::parse(&input.date_from, &input.date_to)?;
        let bucket = input.bucket.unwrap_or(Bucket::Day);
        let location = tools.location(&input.location_id).await?;
        range.check_not_after(
            local_today(&location.timezone, ctx.now_ms)?,
            &location.timezone,
        )?;
        let (from, to) = (
            range.from.format("%Y-%m-%d").to_string(),
            range.to.format("%Y-%m-%d").to_string(),
        );
        let rows: HashMap<String, MetricSums> = tools
            .store
            .metrics_buckets(
                &input.location_id,
                &from,
                &to,
                bucket,
                deadline::remaining(),
            )
            .await?
            .into_iter()
            .map(|row| (row.bucket_start.clone(), row.sums()))
            .collect();
        let currency = location.currency.as_str();
        let mut totals = MetricSums::default();
        let buckets: Vec<BucketValues> = bucket
            .starts(range.from, range.to)
            .into_iter()
            .map(|start| {
                let start = start.format("%Y-%m-%d").to_string();
                let sums = rows.get(&start).copied().unwrap_or_default();
                totals += sums;
                BucketValues {
                    values: MetricValues::from_sums(&input.metrics, &sums, currency, ctx.locale),
                    start,
                }
            })
            .collect();
        let totals = MetricValues::from_sums(&input.metrics, &totals, currency, ctx.locale);
        let comparison = match (input.compare_previous, range.previous()) {
            (Some(true), Some(previous)) => {
                let (previous_from, previous_to) = (
                    previous.from.format("%Y-%m-%d").to_string(),
                    previous.to.format("%Y-%m-%d").to_string(),
                );
                let mut sums = MetricSums::default();
                for row in tools
                    .store
                    .metrics_buckets(
                        &input.location_id,
                        &previous_from,
                        &previous_to,
                        bucket,
                        deadline::remaining(),
                    )
                    .await?
                {
                    sums += row.sums();
                }
                let previous_totals =
                    MetricValues::from_sums(&input.metrics, &sums, currency, ctx.locale);
                Some(Comparison {
                    changes: changes(
                        &input.metrics,
                        &totals,
                        &previous_totals,
                        currency,
                        ctx.locale,
                    ),
                    previous_date_from: previous_from,
                    previous_date_to: previous_to,
                    previous_totals,
                })
            }
            _ => None,
        };
        let data = AnalyticsQueryOutput {
            location_id: location.id,
            location_name: location.name,
            timezone: location.timezone,
            currency: location.currency,
            date_from: from,
            date_to: to,
            bucket,
            bucket_label: bucket.label(ctx.locale).to_owned(),
            metric_labels: labels_of(&input.metrics, ctx.locale),
            metrics: input.metrics,
            buckets,
            totals,
            comparison,
        };
        Ok(ToolOutput {
            text: summary(&data, ctx.locale),
            data,
            next_cursor: None,
        })
    }
}

/// Today's date in `timezone`, the location's calendar.
fn local_today(timezone: &str, now_ms: i64) -> Result<chrono::NaiveDate, DomainError> {
    use chrono::TimeZone;
    let tz: chrono_tz::Tz = timezone
        .parse()
        .map_err(|_| DomainError::Internal(format!("unknown timezone {timezone}")))?;
    tz.timestamp_millis_opt(now_ms)
        .single()
        .map(|t| t.date_naive())
        .ok_or_else(|| DomainError::Internal("the current time is out of range".to_owned()))
}

/// The text for people: the location, range and bucket width, the totals,
/// then each bucket's figures, oldest first, as many as fit in the summary
/// bound; a note says how many were left out (every bucket is in
/// `data.buckets`).
fn summary(output: &AnalyticsQueryOutput, locale: Locale) -> String {
    let fr = locale == Locale::Fr;
    let count = output.buckets.len();
    let width = output.bucket.label(locale);
    let mut text = if fr {
        format!(
            "{}, du {} au {}, {count} période(s) ({width}), totaux et chiffres par période :",
            output.location_name, output.date_from, output.date_to
        )
    } else {
        format!(
            "{}, {} to {}, {count} bucket(s) ({width}), totals and figures per bucket:",
            output.location_name, output.date_from, output.date_to
        )
    };
    let totals = output.totals.line(&output.metrics, locale);
    text.push_str(&if fr {
        format!("\nTotal : {totals}")
    } else {
        format!("\nTotal: {totals}")
    });
    if let Some(comparison) = &output.comparison {
        let changes = comparison
            .changes
            .iter()
            .map(|c| format!("{} {}", c.metric_label, c.display))
            .collect::<Vec<_>>()
            .join(" · ");
        text.push_str(&if fr {
            format!(
                "\nPar rapport au {} – {} : {changes}",
                comparison.previous_date_from, comparison.previous_date_to
            )
        } else {
            format!(
                "\nVs {} to {}: {changes}",
                comparison.previous_date_from, comparison.previous_date_to
            )
        });
        // The previous period's own figures, so that the text answers "vs"
        // questions without subtracting.
        let before = comparison.previous_totals.line(&output.metrics, locale);
        text.push_str(&if fr {
            format!("\nTotaux de la période précédente : {before}")
        } else {
            format!("\nPrevious period totals: {before}")
        });
    }
    // Room kept for the note on left-out buckets.
    const NOTE_ROOM: usize = 160;
    for (shown, bucket) in output.buckets.iter().enumerate() {
        let line = format!(
            "\n- {}{} {}",
            bucket.start,
            if fr { " :" } else { ":" },
            bucket.values.line(&output.metrics, locale)
        );
        if text.len() + line.len() + NOTE_ROOM > TEXT_LIMIT {
            let left = count - shown;
            text.push_str(&if fr {
                format!(
                    "\n… {left} période(s) de plus non affichées (limite de 4 Kio du texte) : \
                     data.buckets les contient toutes."
                )
            } else {
                format!(
                    "\n… {left} more bucket(s) not shown (4 KiB text limit): data.buckets has \
                     every bucket."
                )
            });
            break;
        }
        text.push_str(&line);
    }
    text
}
