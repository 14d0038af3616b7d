//! Text search as people type: case and accents ignored. Stored names and
//! message bodies keep a folded copy (`fold`) written by the service itself,
//! so both backends compare the very same strings; a query is folded the
//! same way and matched as a substring (`LIKE … ESCAPE '\'`).
//!
//! Folding: Unicode compatibility decomposition (NFKD: "ﬁ" → "fi", full-width
//! letters, no-break spaces), combining marks dropped ("é" → "e"), lower case,
//! Latin letters Unicode does not decompose transliterated ("œ" → "oe",
//! "æ" → "ae", "ß" → "ss", "ø" → "o", "ł" → "l"), typographic quotes and
//! dashes made ASCII ("’" → "'"), whitespace runs collapsed to one space.
//! Letters of other scripts are only lower-cased.

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;
use unicode_script::{Script, UnicodeScript};

/// `text` folded for search; see the module documentation.
pub fn fold(text: &str) -> String {
    let mut folded = String::with_capacity(text.len());
    let mut space = false;
    for c in text.nfkd() {
        if is_combining_mark(c) {
            continue;
        }
        if c.is_whitespace() {
            space = !folded.is_empty();
            continue;
        }
        if space {
            folded.push(' ');
            space = false;
        }
        for lower in c.to_lowercase() {
            push_folded(&mut folded, lower);
        }
    }
    folded
}

fn push_folded(out: &mut String, c: char) {
    if c.is_ascii() {
        out.push(c);
        return;
    }
    let transliterated = match c.script() {
        Script::Latin if c.is_alphabetic() => deunicode::deunicode_char(c)
            .filter(|s| !s.is_empty() && s.chars().all(|t| t.is_ascii_alphabetic())),
        Script::Common if !c.is_alphanumeric() => deunicode::deunicode_char(c)
            .filter(|s| s.len() == 1 && s.chars().all(|t| t.is_ascii_punctuation())),
        _ => None,
    };
    match transliterated {
        Some(ascii) => out.extend(ascii.chars().map(|t| t.to_ascii_lowercase())),
        None => out.push(c),
    }
}

/// A folded substring pattern for `LIKE … ESCAPE '\'`: `%<folded text>%`
/// with the wildcards of the text escaped.
pub fn contains_pattern(text: &str) -> String {
    let folded = fold(text);
    let mut pattern = String::with_capacity(folded.len() + 2);
    pattern.push('%');
    for c in folded.chars() {
        if matches!(c, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn french_accents_ligatures_and_case_fold_to_plain_letters() {
        assert_eq!(fold("Crème brûlée"), "creme brulee");
        assert_eq!(fold("Bœuf BOURGUIGNON"), "boeuf bourguignon");
        assert_eq!(fold("ŒUFS"), "oeufs");
        assert_eq!(fold("Façon grand-mère"), "facon grand-mere");
        assert_eq!(fold("Maïs grillé, Noël"), "mais grille, noel");
        assert_eq!(
            fold("Tête de veau à l’ancienne"),
            "tete de veau a l'ancienne"
        );
        assert_eq!(fold("Élève"), "eleve");
        assert_eq!(fold("Straße"), "strasse");
        assert_eq!(fold("Smørrebrød, Łódź"), "smorrebrod, lodz");
        assert_eq!(fold("ﬁlet"), "filet");
    }

    #[test]
    fn decomposed_input_folds_like_composed_input() {
        // "é" as e + combining acute, as some keyboards send it.
        assert_eq!(
            fold("cre\u{300}me bru\u{302}le\u{301}e"),
            fold("crème brûlée")
        );
    }

    #[test]
    fn whitespace_is_collapsed_and_other_scripts_only_lower_cased() {
        assert_eq!(fold("  Soupe\u{a0}\u{a0}à\tl'oignon "), "soupe a l'oignon");
        assert_eq!(fold("Борщ"), "борщ");
        assert_eq!(fold("寿司"), "寿司");
    }

    #[test]
    fn patterns_are_folded_and_escaped() {
        assert_eq!(contains_pattern("Crème_100%"), "%creme\\_100\\%%");
        assert_eq!(contains_pattern("a\\b"), "%a\\\\b%");
    }
}
