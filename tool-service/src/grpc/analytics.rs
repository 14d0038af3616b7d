//! `Analytics`: the typed analytics query for internal callers, running the
//! same tool as `chataigne_analytics_query` through the runner; this file
//! holds the declaration and the conversions.
//!
//! | RPC (`chataigne.tools.v1.`) | kind | scope          | required fields                          |
//! |-----------------------------|------|----------------|------------------------------------------|
//! | `Analytics/QueryAnalytics`  | read | analytics.read | location_id, metrics, date_from, date_to |

use chataigne_proto::tools::v1 as pb;

use super::convert::money;
use super::fields::typed_service;
use crate::domain::{Bucket, DomainError, Metric, MetricValues};
use crate::tools::Answered;
use crate::tools::analytics_query::{AnalyticsQueryInput, AnalyticsQueryOutput};

typed_service! {
    /// The `Analytics` service.
    AnalyticsService serves analytics_server::Analytics {
        query_analytics: QueryAnalyticsRequest => AnalyticsQuery
            -> QueryAnalyticsResponse { location_id, metrics, date_from, date_to };
    }
}

impl TryFrom<pb::QueryAnalyticsRequest> for AnalyticsQueryInput {
    type Error = DomainError;
    fn try_from(request: pb::QueryAnalyticsRequest) -> Result<Self, DomainError> {
        Ok(AnalyticsQueryInput {
            location_id: request.location_id,
            metrics: request
                .metrics
                .iter()
                .map(|&m| metric_from_pb(m))
                .collect::<Result<Vec<_>, _>>()?,
            date_from: request.date_from,
            date_to: request.date_to,
            bucket: bucket_from_pb(request.bucket)?,
            compare_previous: request.compare_previous.then_some(true),
        })
    }
}

impl From<Answered<AnalyticsQueryOutput>> for pb::QueryAnalyticsResponse {
    fn from(answer: Answered<AnalyticsQueryOutput>) -> Self {
        let data = answer.data;
        pb::QueryAnalyticsResponse {
            location_id: data.location_id,
            location_name: data.location_name,
            timezone: data.timezone,
            currency: data.currency,
            bucket: bucket_to_pb(data.bucket) as i32,
            buckets: data
                .buckets
                .into_iter()
                .map(|b| pb::AnalyticsBucketValues {
                    start: b.start,
                    values: Some(values(b.values)),
                })
                .collect(),
            totals: Some(values(data.totals)),
            comparison: data.comparison.map(|c| pb::AnalyticsComparison {
                previous_date_from: c.previous_date_from,
                previous_date_to: c.previous_date_to,
                previous_totals: Some(values(c.previous_totals)),
                changes: c
                    .changes
                    .into_iter()
                    .map(|change| pb::AnalyticsChange {
                        metric: metric_to_pb(change.metric) as i32,
                        absolute: change.absolute,
                        percent: change.percent,
                        display: change.display,
                    })
                    .collect(),
            }),
        }
    }
}

fn metric_from_pb(value: i32) -> Result<Metric, DomainError> {
    use pb::AnalyticsMetric as P;
    match P::try_from(value) {
        Ok(P::OrdersCount) => Ok(Metric::OrdersCount),
        Ok(P::Revenue) => Ok(Metric::Revenue),
        Ok(P::AverageOrderValue) => Ok(Metric::AverageOrderValue),
        Ok(P::CancelledCount) => Ok(Metric::CancelledCount),
        Ok(P::CompletedCount) => Ok(Metric::CompletedCount),
        Ok(P::ItemsSold) => Ok(Metric::ItemsSold),
        Ok(P::NewCustomers) => Ok(Metric::NewCustomers),
        Ok(P::DeliveryShare) => Ok(Metric::DeliveryShare),
        Ok(P::PickupShare) => Ok(Metric::PickupShare),
        Ok(P::Unspecified) | Err(_) => Err(DomainError::invalid("metrics", "unknown metric")),
    }
}

fn metric_to_pb(metric: Metric) -> pb::AnalyticsMetric {
    use pb::AnalyticsMetric as P;
    match metric {
        Metric::OrdersCount => P::OrdersCount,
        Metric::Revenue => P::Revenue,
        Metric::AverageOrderValue => P::AverageOrderValue,
        Metric::CancelledCount => P::CancelledCount,
        Metric::CompletedCount => P::CompletedCount,
        Metric::ItemsSold => P::ItemsSold,
        Metric::NewCustomers => P::NewCustomers,
        Metric::DeliveryShare => P::DeliveryShare,
        Metric::PickupShare => P::PickupShare,
    }
}

fn bucket_from_pb(value: i32) -> Result<Option<Bucket>, DomainError> {
    use pb::AnalyticsBucket as P;
    match P::try_from(value) {
        Ok(P::Unspecified) => Ok(None),
        Ok(P::Day) => Ok(Some(Bucket::Day)),
        Ok(P::Week) => Ok(Some(Bucket::Week)),
        Ok(P::Month) => Ok(Some(Bucket::Month)),
        Err(_) => Err(DomainError::invalid("bucket", "unknown bucket")),
    }
}

fn bucket_to_pb(bucket: Bucket) -> pb::AnalyticsBucket {
    match bucket {
        Bucket::Day => pb::AnalyticsBucket::Day,
        Bucket::Week => pb::AnalyticsBucket::Week,
        Bucket::Month => pb::AnalyticsBucket::Month,
    }
}

fn values(values: MetricValues) -> pb::AnalyticsValues {
    pb::AnalyticsValues {
        orders_count: values.orders_count,
        revenue: values.revenue.map(money),
        average_order_value: values.average_order_value.map(money),
        cancelled_count: values.cancelled_count,
        completed_count: values.completed_count,
        items_sold: values.items_sold,
        new_customers: values.new_customers,
        delivery_share_percent: values.delivery_share,
        pickup_share_percent: values.pickup_share,
    }
}
