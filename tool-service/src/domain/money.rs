//! Money in minor units with its currency and a display string for a locale.

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
    /// anything else falls back to English). Currencies here have two decimals.
    pub fn new(amount_minor: i64, currency: &str, locale: &str) -> Money {
        let sign = if amount_minor < 0 { "-" } else { "" };
        let abs = amount_minor.unsigned_abs();
        let (units, cents) = (abs / 100, abs % 100);
        let symbol = match currency {
            "EUR" => "€",
            "USD" => "$",
            "GBP" => "£",
            other => other,
        };
        let display = if locale.starts_with("fr") {
            format!("{sign}{},{cents:02} {symbol}", group(units, '\u{202f}'))
        } else if symbol.len() > 1 && symbol.chars().all(|c| c.is_ascii_uppercase()) {
            format!("{sign}{symbol} {}.{cents:02}", group(units, ','))
        } else {
            format!("{sign}{symbol}{}.{cents:02}", group(units, ','))
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
        assert_eq!(Money::new(1250, "EUR", "fr-FR").display, "12,50 €");
        assert_eq!(
            Money::new(123456789, "EUR", "fr").display,
            "1\u{202f}234\u{202f}567,89 €"
        );
        assert_eq!(Money::new(1250, "USD", "en-US").display, "$12.50");
        assert_eq!(Money::new(-5, "USD", "en").display, "-$0.05");
        assert_eq!(Money::new(100000, "CHF", "en").display, "CHF 1,000.00");
    }
}
