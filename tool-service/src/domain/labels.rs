//! Display labels of every status and enumerated value the tools return, in
//! English and French (the [`Locale`] parsed from `_meta.user_locale`): one
//! table per type, declared once with `labels!`, which also
//! registers the type for the completeness tests.

use super::settings_sections::{AiTone, NotificationChannel, PaymentMethod, Weekday};
use super::{
    Availability, Bucket, ConversationChannel, ConversationStatus, DiscountKind, DiscountStatus,
    Fulfillment, IntakeStatus, IntegrationHealth, IntegrationKind, Locale, Metric, OrderStatus,
    PauseReason, SenderKind,
};

/// A type whose values have a label in each supported language.
pub trait Labelled: Copy + Sized + 'static {
    /// Every value, in declaration order.
    const ALL: &'static [Self];
    /// The value as serialized (its wire name).
    fn wire(self) -> &'static str;
    /// The label in `locale`.
    fn localized(self, locale: Locale) -> &'static str;
}

/// One labelled value: (type, wire name, English, French).
pub type LabelRow = (&'static str, &'static str, &'static str, &'static str);

macro_rules! labels {
    ($($ty:ident { $($variant:ident => $wire:literal, $en:literal, $fr:literal;)* })*) => {
        $(
            impl $ty {
                /// The label of this value in `locale`.
                pub fn label(self, locale: Locale) -> &'static str {
                    match self { $($ty::$variant => locale.pick($fr, $en),)* }
                }
            }

            impl Labelled for $ty {
                const ALL: &'static [Self] = &[$($ty::$variant,)*];
                fn wire(self) -> &'static str {
                    match self { $($ty::$variant => $wire,)* }
                }
                fn localized(self, locale: Locale) -> &'static str {
                    self.label(locale)
                }
            }
        )*

        /// Every labelled value of every type, for the completeness tests.
        pub fn all_labels() -> Vec<LabelRow> {
            vec![$($((stringify!($ty), $wire, $en, $fr),)*)*]
        }

        /// Checks that each labelled type's wire names are exactly its
        /// serialized values; returns the mismatches.
        pub fn wire_mismatches() -> Vec<String> {
            let mut found = Vec::new();
            $(
                for value in <$ty as Labelled>::ALL {
                    let serialized = serde_json::to_value(value).ok();
                    if serialized.as_ref().and_then(|v| v.as_str()) != Some(value.wire()) {
                        found.push(format!("{}: {} serializes as {serialized:?}", stringify!($ty), value.wire()));
                    }
                }
            )*
            found
        }
    };
}

labels! {
    OrderStatus {
        Received => "received", "received", "reçue";
        Accepted => "accepted", "accepted", "acceptée";
        Preparing => "preparing", "preparing", "en préparation";
        Ready => "ready", "ready", "prête";
        OutForDelivery => "out_for_delivery", "out for delivery", "en livraison";
        Completed => "completed", "completed", "terminée";
        Cancelled => "cancelled", "cancelled", "annulée";
    }
    Fulfillment {
        Pickup => "pickup", "pickup", "à emporter";
        Delivery => "delivery", "delivery", "livraison";
        DineIn => "dine_in", "dine-in", "sur place";
    }
    Availability {
        Available => "available", "available", "disponible";
        SoldOut => "sold_out", "sold out", "épuisé";
    }
    IntakeStatus {
        Accepting => "accepting", "accepting orders", "prend les commandes";
        Paused => "paused", "orders paused", "commandes en pause";
    }
    PauseReason {
        Busy => "busy", "busy", "affluence";
        StaffShortage => "staff_shortage", "staff shortage", "manque de personnel";
        TechnicalIssue => "technical_issue", "technical issue", "problème technique";
        ClosedEarly => "closed_early", "closed early", "fermeture anticipée";
        Other => "other", "other reason", "autre raison";
    }
    ConversationStatus {
        Open => "open", "open, awaiting the restaurant", "ouverte, en attente du restaurant";
        Waiting => "waiting", "waiting for the customer", "en attente du client";
        Closed => "closed", "closed", "clôturée";
    }
    ConversationChannel {
        Sms => "sms", "SMS", "SMS";
        Whatsapp => "whatsapp", "WhatsApp", "WhatsApp";
        WebChat => "web_chat", "web chat", "chat du site";
        Email => "email", "email", "e-mail";
    }
    SenderKind {
        Customer => "customer", "customer", "client";
        Staff => "staff", "staff", "équipe";
        Assistant => "assistant", "assistant", "assistant";
        Instruction => "instruction", "instruction to the assistant", "consigne à l'assistant";
    }
    DiscountKind {
        Percent => "percent", "percentage off", "pourcentage";
        Amount => "amount", "fixed amount off", "montant fixe";
    }
    DiscountStatus {
        Active => "active", "active", "active";
        Scheduled => "scheduled", "scheduled", "programmée";
        Expired => "expired", "expired", "expirée";
        Disabled => "disabled", "disabled", "désactivée";
    }
    IntegrationKind {
        Pos => "pos", "point of sale", "caisse";
        Delivery => "delivery", "delivery", "livraison";
        Payments => "payments", "payments", "paiements";
        Accounting => "accounting", "accounting", "comptabilité";
        Marketing => "marketing", "marketing", "marketing";
        Reservations => "reservations", "reservations", "réservations";
        Other => "other", "other", "autre";
    }
    IntegrationHealth {
        Ok => "ok", "working", "fonctionne";
        Degraded => "degraded", "degraded", "dégradée";
        Down => "down", "down", "en panne";
    }
    Bucket {
        Day => "day", "day", "jour";
        Week => "week", "week", "semaine";
        Month => "month", "month", "mois";
    }
    Metric {
        OrdersCount => "orders_count", "orders", "commandes";
        Revenue => "revenue", "revenue", "chiffre d'affaires";
        AverageOrderValue => "average_order_value", "average order value", "panier moyen";
        CancelledCount => "cancelled_count", "cancelled orders", "commandes annulées";
        CompletedCount => "completed_count", "completed orders", "commandes terminées";
        ItemsSold => "items_sold", "items sold", "articles vendus";
        NewCustomers => "new_customers", "new customers", "nouveaux clients";
        DeliveryShare => "delivery_share", "delivery share", "part livraison";
        PickupShare => "pickup_share", "pickup share", "part à emporter";
    }
    Weekday {
        Monday => "monday", "Monday", "lundi";
        Tuesday => "tuesday", "Tuesday", "mardi";
        Wednesday => "wednesday", "Wednesday", "mercredi";
        Thursday => "thursday", "Thursday", "jeudi";
        Friday => "friday", "Friday", "vendredi";
        Saturday => "saturday", "Saturday", "samedi";
        Sunday => "sunday", "Sunday", "dimanche";
    }
    PaymentMethod {
        Card => "card", "card", "carte bancaire";
        Cash => "cash", "cash", "espèces";
        MealVoucher => "meal_voucher", "meal voucher", "titre-restaurant";
        MobileWallet => "mobile_wallet", "mobile wallet", "paiement mobile";
        OnlineCard => "online_card", "online card payment", "carte en ligne";
    }
    AiTone {
        Friendly => "friendly", "friendly", "chaleureux";
        Professional => "professional", "professional", "professionnel";
        Concise => "concise", "concise", "concis";
    }
    NotificationChannel {
        Email => "email", "email", "e-mail";
        Sms => "sms", "SMS", "SMS";
        Push => "push", "push notification", "notification push";
        Dashboard => "dashboard", "dashboard", "tableau de bord";
    }
}

/// The labels of `values` in `locale`, in order.
pub fn labels_of<T: Labelled>(values: &[T], locale: Locale) -> Vec<String> {
    values
        .iter()
        .map(|v| v.localized(locale).to_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_names_are_the_serialized_values() {
        assert_eq!(wire_mismatches(), Vec::<String>::new());
    }

    #[test]
    fn every_value_has_an_english_and_a_french_label() {
        for (ty, wire, en, fr) in all_labels() {
            assert!(
                !en.trim().is_empty() && !fr.trim().is_empty(),
                "{ty}.{wire}"
            );
        }
    }

    #[test]
    fn order_location_and_conversation_statuses_read_in_french_words() {
        for (ty, wire, en, fr) in all_labels() {
            if matches!(ty, "OrderStatus" | "IntakeStatus" | "ConversationStatus") {
                assert_ne!(fr, en, "{ty}.{wire} has a French word");
                assert_ne!(fr, wire, "{ty}.{wire} has a French word");
            }
        }
        assert_eq!(OrderStatus::Received.label(Locale::Fr), "reçue");
        assert_eq!(IntakeStatus::Paused.label(Locale::Fr), "commandes en pause");
        assert_eq!(ConversationStatus::Closed.label(Locale::Fr), "clôturée");
    }
}
