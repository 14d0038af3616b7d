//! Settings sections from the domain to protobuf.

use chataigne_proto::tools::v1 as pb;

use super::convert::money;
use super::venue_convert::wire_name;
use crate::domain::LocationSettings;

pub(super) fn settings(settings: LocationSettings) -> pb::LocationSettings {
    pb::LocationSettings {
        location_id: settings.location_id,
        location_name: settings.location_name,
        timezone: settings.timezone,
        currency: settings.currency,
        store: settings.store.map(|s| pb::StoreSettings {
            public_name: s.public_name,
            description: s.description,
            cuisine: s.cuisine,
            phone: s.phone,
            languages: s.languages,
        }),
        order: settings.order.map(|o| pb::OrderSettings {
            pickup_enabled: o.pickup_enabled,
            delivery_enabled: o.delivery_enabled,
            dine_in_enabled: o.dine_in_enabled,
            scheduled_orders_enabled: o.scheduled_orders_enabled,
            auto_accept: o.auto_accept,
            preparation_time_minutes: o.preparation_time_minutes,
            minimum_order: Some(money(o.minimum_order)),
        }),
        opening_hours: settings.opening_hours.map(|h| pb::OpeningHours {
            days: h
                .days
                .into_iter()
                .map(|d| pb::DayHours {
                    weekday: wire_name(&d.weekday),
                    closed: d.closed,
                    periods: d
                        .periods
                        .into_iter()
                        .map(|p| pb::OpeningPeriod {
                            opens: p.opens,
                            closes: p.closes,
                        })
                        .collect(),
                })
                .collect(),
        }),
        delivery: settings.delivery.map(|d| pb::DeliverySettings {
            enabled: d.enabled,
            radius_km: d.radius_km,
            fee: Some(money(d.fee)),
            free_delivery_above: d.free_delivery_above.map(money),
            estimated_delivery_minutes: d.estimated_delivery_minutes,
        }),
        payment_methods: settings.payment_methods.map(|p| pb::PaymentMethodSettings {
            methods: p.methods.iter().map(wire_name).collect(),
            cash_on_delivery: p.cash_on_delivery,
        }),
        ai: settings.ai.map(|a| pb::AiSettings {
            assistant_enabled: a.assistant_enabled,
            tone: wire_name(&a.tone),
            languages: a.languages,
            takes_orders: a.takes_orders,
            handoff_to_staff: a.handoff_to_staff,
        }),
        loyalty: settings.loyalty.map(|l| pb::LoyaltySettings {
            enabled: l.enabled,
            points_per_currency_unit: l.points_per_currency_unit,
            reward_threshold_points: l.reward_threshold_points,
            reward: Some(money(l.reward)),
        }),
        referrals: settings.referrals.map(|r| pb::ReferralSettings {
            enabled: r.enabled,
            referrer_reward: Some(money(r.referrer_reward)),
            referee_reward: Some(money(r.referee_reward)),
        }),
        notifications: settings.notifications.map(|n| pb::NotificationSettings {
            channels: n.channels.iter().map(wire_name).collect(),
            new_order_alerts: n.new_order_alerts,
            daily_summary: n.daily_summary,
            sold_out_alerts: n.sold_out_alerts,
            review_alerts: n.review_alerts,
        }),
    }
}
