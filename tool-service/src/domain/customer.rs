//! Customers as staff see them: contact details masked before they leave the
//! service, order count and last order, and list filters.

use serde::Serialize;

/// Mask character of contact details.
const MASK: char = '•';

/// A customer with masked contact details.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Customer {
    /// Customer ID, e.g. "cus_01bistrochataigne_0042".
    pub id: String,
    /// Display name of the customer.
    pub name: String,
    pub organization_id: String,
    pub organization_name: String,
    /// Home location ID; null for a customer of the whole organization.
    pub location_id: Option<String>,
    /// Masked e-mail address, e.g. "c•••••@example.com"; null when unknown.
    pub email_masked: Option<String>,
    /// Masked phone number, e.g. "+33 6 •• •• •• 42"; null when unknown.
    pub phone_masked: Option<String>,
    /// Orders placed (at the requested location when the listing is narrowed to one).
    pub order_count: u32,
    /// Time of the last order, ISO 8601 with the ordering location's UTC offset; null without orders.
    pub last_order_at: Option<String>,
    /// Creation time of the customer record, ISO 8601 in UTC.
    pub created_at: String,
}

/// Filters of a customer listing, already authorized.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CustomerFilter {
    pub organization_id: String,
    /// Customers of this location (home location, or at least one order there).
    pub location_id: Option<String>,
    /// Folded substring pattern of the name (`search::contains_pattern`).
    pub name_pattern: Option<String>,
}

/// "camille.martin@example.com" → "c•••••@example.com": the first character of
/// the local part and the domain stay, the rest of the local part is hidden.
pub fn mask_email(email: &str) -> String {
    match email.rsplit_once('@') {
        Some((local, domain)) => {
            let first: String = local.chars().take(1).collect();
            format!("{first}{}@{domain}", mask(5))
        }
        None => mask(5),
    }
}

/// "+33 6 12 34 56 42" → "+33 6 •• •• •• 42": the country code, the first
/// digit of the national number and the last two digits stay; separators are
/// kept; every other digit is hidden.
pub fn mask_phone(phone: &str) -> String {
    let digits = phone.chars().filter(char::is_ascii_digit).count();
    let country = if phone.trim_start().starts_with('+') {
        phone
            .trim_start()
            .trim_start_matches('+')
            .chars()
            .take_while(char::is_ascii_digit)
            .count()
    } else {
        0
    };
    let keep_head = country + 1;
    let keep_tail = 2;
    if digits <= keep_head + keep_tail {
        // Too short to show anything safely.
        return phone
            .chars()
            .map(|c| if c.is_ascii_digit() { MASK } else { c })
            .collect();
    }
    let mut seen = 0;
    phone
        .chars()
        .map(|c| {
            if !c.is_ascii_digit() {
                return c;
            }
            seen += 1;
            if seen <= keep_head || seen > digits - keep_tail {
                c
            } else {
                MASK
            }
        })
        .collect()
}

fn mask(n: usize) -> String {
    std::iter::repeat_n(MASK, n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails_keep_one_letter_and_the_domain() {
        assert_eq!(
            mask_email("camille.martin12@example.com"),
            "c•••••@example.com"
        );
        assert_eq!(mask_email("x@example.fr"), "x•••••@example.fr");
        assert_eq!(mask_email("no-at-sign"), "•••••");
    }

    #[test]
    fn phones_keep_country_code_first_digit_and_last_two() {
        assert_eq!(mask_phone("+33 6 12 34 56 42"), "+33 6 •• •• •• 42");
        assert_eq!(mask_phone("+1 617-555-0142"), "+1 6••-•••-••42");
        assert_eq!(mask_phone("06 12 34 56 78"), "0• •• •• •• 78");
        assert_eq!(mask_phone("+33 12"), "+•• ••");
    }
}
