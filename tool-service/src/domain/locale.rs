//! The language of the display strings a call returns: parsed once from the
//! caller's locale tag at the edge of the service, then matched as an enum.

/// A language with translated display strings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Locale {
    /// French, for any tag starting with `fr` (case-insensitive).
    Fr,
    /// English: every other tag, and none.
    #[default]
    En,
}

impl Locale {
    /// The language of a BCP 47 tag such as `fr-FR`, `en-US` or `""`:
    /// French for any `fr…` tag, English otherwise.
    pub fn parse(tag: &str) -> Locale {
        let french = tag
            .get(..2)
            .is_some_and(|prefix| prefix.eq_ignore_ascii_case("fr"));
        if french { Locale::Fr } else { Locale::En }
    }

    /// `fr` in French, `en` in English.
    pub fn pick<T>(self, fr: T, en: T) -> T {
        match self {
            Locale::Fr => fr,
            Locale::En => en,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Locale;

    #[test]
    fn french_tags_are_french_and_everything_else_english() {
        for tag in ["fr", "FR", "fr-FR", "fr_CA", "Fr-be", "french"] {
            assert_eq!(Locale::parse(tag), Locale::Fr, "{tag}");
        }
        for tag in ["", "f", "en", "en-US", "de-DE", "xfr", "é"] {
            assert_eq!(Locale::parse(tag), Locale::En, "{tag}");
        }
        assert_eq!(Locale::Fr.pick("oui", "yes"), "oui");
        assert_eq!(Locale::En.pick("oui", "yes"), "yes");
    }
}
