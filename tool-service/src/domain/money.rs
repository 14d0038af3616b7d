//! Money in minor units with its currency and a display string for a locale.

use crate::domain::Locale;
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Money {
    /// Amount in the currency's minor unit (cents), e.g. 1250 for 12.50.
    pub amount_minor: i64,
    /// ISO 4217 currency code, e.g. "EUR".
    pub currency: String,
    /// The amount formatted for the caller's locale, e.g. "12,50 €".
    pub display: String,
}

impl Money {
    /// Formats `amount_minor` of `currency` for `locale` (French or English;
    /// anything else falls back to English), with the currency's own number
    /// of decimals (ISO 4217 minor units: 2 for EUR, 0 for JPY, 3 for TND).
    pub fn new(amount_minor: i64, currency: &str, locale: Locale) -> Money {
        let sign = if amount_minor < 0 { "-" } else { "" };
        let abs = amount_minor.unsigned_abs();
        let decimals = iso_currency::Currency::from_code(currency)
            .and_then(|c| c.exponent())
            .map_or(2, u32::from);
        let scale = 10_u64.pow(decimals);
        let (units, fraction) = (abs / scale, abs % scale);
        let width = decimals as usize;
        let symbol = match currency {
            "EUR" => "€",
            "USD" => "$",
            "GBP" => "£",
            other => other,
        };
        let (fr_fraction, en_fraction) = if width == 0 {
            (String::new(), String::new())
        } else {
            (
                format!(",{fraction:0width$}"),
                format!(".{fraction:0width$}"),
            )
        };
        let display = if locale == Locale::Fr {
            format!("{sign}{}{fr_fraction} {symbol}", group(units, '\u{202f}'))
        } else if symbol.len() > 1 && symbol.chars().all(|c| c.is_ascii_uppercase()) {
            format!("{sign}{symbol} {}{en_fraction}", group(units, ','))
        } else {
            format!("{sign}{symbol}{}{en_fraction}", group(units, ','))
        };
        Money {
            amount_minor,
            currency: currency.to_owned(),
            display,
        }
    }
}

fn group(mut value: u64, separator: char) -> String {
    let mut groups = Vec::new();
    loop {
        if value < 1000 {
            groups.push(value.to_string());
            break;
        }
        groups.push(format!("{:03}", value % 1000));
        value /= 1000;
    }
    groups.reverse();
    groups.join(&separator.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_by_locale() {
        assert_eq!(
            Money::new(1250, "EUR", Locale::parse("fr-FR")).display,
            "12,50 €"
        );
        assert_eq!(
            Money::new(123456789, "EUR", Locale::Fr).display,
            "1\u{202f}234\u{202f}567,89 €"
        );
        assert_eq!(
            Money::new(1250, "USD", Locale::parse("en-US")).display,
            "$12.50"
        );
        assert_eq!(Money::new(-5, "USD", Locale::En).display, "-$0.05");
        assert_eq!(
            Money::new(100000, "CHF", Locale::En).display,
            "CHF 1,000.00"
        );
    }

    #[test]
    fn decimals_follow_the_currency_minor_units() {
        assert_eq!(Money::new(1250, "JPY", Locale::En).display, "JPY 1,250");
        assert_eq!(
            Money::new(1250, "JPY", Locale::Fr).display,
            "1\u{202f}250 JPY"
        );
        assert_eq!(Money::new(12345, "TND", Locale::En).display, "TND 12.345");
    }
}
