//! A record's values as one compact line for a text summary: `key value`
//! pairs, money by its display string, a code by its label when the record
//! has one, yes/no in the caller's language. Used where a summary carries
//! every value of a record whose shape varies (a settings section).

use serde_json::{Map, Value};

use crate::domain::Locale;

/// `value` as a compact line: objects as `key value; key value`, nested
/// objects in parentheses, lists joined by commas.
pub fn compact(value: &Value, locale: Locale) -> String {
    match value {
        Value::Null => "—".to_owned(),
        Value::Bool(b) => locale
            .pick(
                if *b { "oui" } else { "non" },
                if *b { "yes" } else { "no" },
            )
            .to_owned(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        Value::Array(items) if items.is_empty() => "—".to_owned(),
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::Object(_) => format!("({})", compact(item, locale)),
                _ => compact(item, locale),
            })
            .collect::<Vec<_>>()
            .join(", "),
        Value::Object(map) => {
            if let Some(display) = money_display(map) {
                return display.to_owned();
            }
            map.iter()
                .filter(|(key, _)| !has_label(map, key))
                .map(|(key, value)| {
                    let key = shown_key(key);
                    match value {
                        Value::Object(inner) if money_display(inner).is_none() => {
                            format!("{key} ({})", compact(value, locale))
                        }
                        _ => format!("{key} {}", compact(value, locale)),
                    }
                })
                .collect::<Vec<_>>()
                .join("; ")
        }
    }
}

/// The display string of a money object.
fn money_display(map: &Map<String, Value>) -> Option<&str> {
    (map.contains_key("amount_minor") && map.contains_key("currency"))
        .then(|| map.get("display").and_then(Value::as_str))
        .flatten()
}

/// A label's key as the code's (`status_label` as `status`).
fn shown_key(key: &str) -> String {
    if let Some(stem) = key.strip_suffix("_labels") {
        format!("{stem}s")
    } else {
        key.strip_suffix("_label").unwrap_or(key).to_owned()
    }
}

/// Whether `key` is a code whose label the record also holds (`status` and
/// `status_label`, `methods` and `method_labels`).
fn has_label(map: &Map<String, Value>, key: &str) -> bool {
    map.contains_key(&format!("{key}_label"))
        || key
            .strip_suffix('s')
            .is_some_and(|stem| map.contains_key(&format!("{stem}_labels")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_record_reads_as_labelled_values() {
        let value = json!({
            "enabled": true,
            "fee": {"amount_minor": 350, "currency": "EUR", "display": "3,50 €"},
            "tone": "warm", "tone_label": "chaleureux",
            "methods": ["card", "cash"], "method_labels": ["carte", "espèces"],
            "days": [{"weekday": "monday", "weekday_label": "lundi", "closed": false,
                      "periods": [{"opens": "11:30", "closes": "14:30"}]}],
            "free_delivery_above": null
        });
        assert_eq!(
            compact(&value, Locale::Fr),
            "days (closed non; periods (closes 14:30; opens 11:30); weekday lundi); \
             enabled oui; fee 3,50 €; free_delivery_above —; methods carte, espèces; \
             tone chaleureux"
        );
    }
}
