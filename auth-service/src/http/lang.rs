//! The languages of the pages (French, English) and every text they show:
//! one message table per language, chosen from the authorization request's
//! `ui_locales`, then the browser's `Accept-Language`, then the default.
//! A text with `{}` takes one value (already escaped HTML) in its place.

/// A language the pages are written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    En,
    Fr,
}

impl Lang {
    /// The language of a page nobody asked a language for.
    pub const DEFAULT: Lang = Lang::En;

    /// The `ui_locales` the pages speak, as the metadata document lists them.
    pub const SUPPORTED: [&'static str; 2] = ["fr", "en"];

    /// Every language, for the tests that render every page in each.
    #[cfg(test)]
    pub const ALL: [Lang; 2] = [Lang::En, Lang::Fr];

    /// The language of a BCP 47 tag (`fr`, `fr-FR`, `en-US`…), if written.
    fn of_tag(tag: &str) -> Option<Lang> {
        let primary = tag.trim().split(['-', '_']).next().unwrap_or_default();
        if primary.eq_ignore_ascii_case("fr") {
            Some(Lang::Fr)
        } else if primary.eq_ignore_ascii_case("en") {
            Some(Lang::En)
        } else {
            None
        }
    }

    /// The first written language of `ui_locales` (space-separated, by
    /// preference), else the written language the browser prefers most
    /// (`Accept-Language` q-values, the earlier on a tie), else the default.
    pub fn negotiate(ui_locales: Option<&str>, accept_language: Option<&str>) -> Lang {
        if let Some(lang) = ui_locales
            .into_iter()
            .flat_map(str::split_whitespace)
            .find_map(Lang::of_tag)
        {
            return lang;
        }
        let mut best: Option<(Lang, u16)> = None;
        for entry in accept_language
            .into_iter()
            .flat_map(|value| value.split(','))
        {
            let mut parts = entry.split(';');
            let Some(lang) = parts.next().and_then(Lang::of_tag) else {
                continue;
            };
            let quality = parts
                .filter_map(|param| param.trim().strip_prefix("q="))
                .find_map(|q| q.trim().parse::<f32>().ok())
                .unwrap_or(1.0);
            // Thousandths: a q-value has at most three decimals (RFC 9110 §12.4.2).
            let quality = (quality.clamp(0.0, 1.0) * 1000.0).round() as u16;
            if quality > 0 && best.is_none_or(|(_, q)| quality > q) {
                best = Some((lang, quality));
            }
        }
        best.map_or(Lang::DEFAULT, |(lang, _)| lang)
    }

    /// The `lang` attribute of the pages.
    pub fn code(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Fr => "fr",
        }
    }

    /// The texts of the pages in this language.
    pub fn messages(self) -> &'static Messages {
        match self {
            Lang::En => &EN,
            Lang::Fr => &FR,
        }
    }

    /// The consent label of a scope the product knows.
    pub fn scope_label(self, scope: &str) -> Option<&'static str> {
        match self {
            Lang::En => chataigne_common::scopes::label(scope),
            Lang::Fr => chataigne_common::scopes::label_fr(scope),
        }
    }
}

/// `template` with its `{}` replaced by `value` (escaped HTML).
pub fn fill(template: &str, value: &str) -> String {
    template.replacen("{}", value, 1)
}

/// Every text of the pages, in one language.
#[derive(Debug)]
pub struct Messages {
    pub sign_in_title: &'static str,
    pub sign_in_heading: &'static str,
    /// `{}`: who asks.
    pub asks_access: &'static str,
    pub email: &'static str,
    pub password: &'static str,
    pub sign_in_button: &'static str,
    pub wrong_password: &'static str,
    /// `{}`: how long to wait.
    pub too_many_attempts: &'static str,
    pub a_minute: &'static str,
    /// `{}`: a number of minutes.
    pub minutes: &'static str,
    pub signed_out: &'static str,
    pub registered: &'static str,
    pub trusted: &'static str,
    /// `{}`: the host of the client's metadata document.
    pub published_at: &'static str,
    pub unverified: &'static str,
    pub unverified_detail: &'static str,
    pub continue_if_trusted: &'static str,
    /// `{}`: the name the client gives itself.
    pub calling_itself: &'static str,
    /// `{}`: the host the browser goes back to.
    pub goes_back_to: &'static str,
    pub consent_title: &'static str,
    pub consent_heading: &'static str,
    pub signed_in_as: &'static str,
    pub switch_account: &'static str,
    /// `{}`: who asks.
    pub asks_permission: &'static str,
    pub reads_heading: &'static str,
    pub writes_heading: &'static str,
    pub writes_note: &'static str,
    pub admin_heading: &'static str,
    pub admin_note: &'static str,
    pub not_usable_heading: &'static str,
    pub not_usable_note: &'static str,
    pub acts_within_role: &'static str,
    pub allow: &'static str,
    pub deny: &'static str,
    pub other_access: &'static str,
    pub error_title: &'static str,
    pub error_heading: &'static str,
    pub error_client: &'static str,
    pub error_request: &'static str,
    pub error_expired: &'static str,
    pub error_unavailable: &'static str,
    pub error_next_step: &'static str,
    pub error_detail: &'static str,
    pub hand_back_title: &'static str,
    pub hand_back_heading: &'static str,
    pub hand_back_continue: &'static str,
}

#[cfg(test)]
impl Messages {
    /// Every text, for the tests of the tables.
    pub fn all(&self) -> [&'static str; 46] {
        [
            self.sign_in_title,
            self.sign_in_heading,
            self.asks_access,
            self.email,
            self.password,
            self.sign_in_button,
            self.wrong_password,
            self.too_many_attempts,
            self.a_minute,
            self.minutes,
            self.signed_out,
            self.registered,
            self.trusted,
            self.published_at,
            self.unverified,
            self.unverified_detail,
            self.continue_if_trusted,
            self.calling_itself,
            self.goes_back_to,
            self.consent_title,
            self.consent_heading,
            self.signed_in_as,
            self.switch_account,
            self.asks_permission,
            self.reads_heading,
            self.writes_heading,
            self.writes_note,
            self.admin_heading,
            self.admin_note,
            self.not_usable_heading,
            self.not_usable_note,
            self.acts_within_role,
            self.allow,
            self.deny,
            self.other_access,
            self.error_title,
            self.error_heading,
            self.error_client,
            self.error_request,
            self.error_expired,
            self.error_unavailable,
            self.error_next_step,
            self.error_detail,
            self.hand_back_title,
            self.hand_back_heading,
            self.hand_back_continue,
        ]
    }
}

static EN: Messages = Messages {
    sign_in_title: "Sign in",
    sign_in_heading: "Sign in to Chataigne",
    asks_access: "{} asks to access your Chataigne account.",
    email: "E-mail",
    password: "Password",
    sign_in_button: "Sign in",
    wrong_password: "The e-mail or the password is not correct. Check both and try again.",
    too_many_attempts: "Too many sign-in attempts. Wait {} and try again.",
    a_minute: "a minute",
    minutes: "{} minutes",
    signed_out: "You are signed out. Sign in with the account you want to use.",
    registered: "Registered with Chataigne.",
    trusted: "Trusted by Chataigne's administrators.",
    published_at: "Its description is published at {}.",
    unverified: "Unverified application.",
    unverified_detail: "Chataigne has not checked who publishes it, and its name is the one it gives itself.",
    continue_if_trusted: "Continue only if you trust this site.",
    calling_itself: "(calling itself \u{201c}{}\u{201d})",
    goes_back_to: "Afterwards you go back to {}.",
    consent_title: "Allow access",
    consent_heading: "Allow access?",
    signed_in_as: "Signed in as",
    switch_account: "Not you? Switch account",
    asks_permission: "{} asks for permission to:",
    reads_heading: "See your information",
    writes_heading: "Act for you",
    writes_note: "These actions reach your customers or change what your restaurant serves.",
    admin_heading: "Platform administration",
    admin_note: "These are powers of a Chataigne platform administrator, beyond any one restaurant.",
    not_usable_heading: "Not granted: your role does not allow",
    not_usable_note: "Your account cannot use these, so they are left out of this access.",
    acts_within_role: "It acts only where your own role allows, and you can withdraw this access at any time.",
    allow: "Allow",
    deny: "Deny",
    other_access: "Other access",
    error_title: "Sign-in problem",
    error_heading: "This request cannot be completed",
    error_client: "Chataigne does not know the application that sent you here, or it has been switched off.",
    error_request: "The application that sent you here made a request Chataigne cannot accept.",
    error_expired: "This page has expired, or it was opened in another browser.",
    error_unavailable: "Chataigne cannot answer right now.",
    error_next_step: "Go back to the application and start signing in again. If it happens again, tell the application's publisher.",
    error_detail: "Detail for the application's developer:",
    hand_back_title: "Returning to the application",
    hand_back_heading: "Returning to the application\u{2026}",
    hand_back_continue: "Continue",
};

static FR: Messages = Messages {
    sign_in_title: "Connexion",
    sign_in_heading: "Se connecter à Chataigne",
    asks_access: "{} demande l'accès à votre compte Chataigne.",
    email: "Adresse e-mail",
    password: "Mot de passe",
    sign_in_button: "Se connecter",
    wrong_password: "L'adresse e-mail ou le mot de passe est incorrect. Vérifiez-les et réessayez.",
    too_many_attempts: "Trop de tentatives de connexion. Attendez {} puis réessayez.",
    a_minute: "une minute",
    minutes: "{}\u{a0}minutes",
    signed_out: "Vous êtes déconnecté. Connectez-vous avec le compte que vous voulez utiliser.",
    registered: "Enregistrée auprès de Chataigne.",
    trusted: "Approuvée par les administrateurs de Chataigne.",
    published_at: "Sa description est publiée sur {}.",
    unverified: "Application non vérifiée.",
    unverified_detail: "Chataigne n'a pas vérifié qui la publie, et son nom est celui qu'elle se donne.",
    continue_if_trusted: "Ne continuez que si vous faites confiance à ce site.",
    calling_itself: "(qui se présente comme \u{ab}\u{a0}{}\u{a0}\u{bb})",
    goes_back_to: "Vous reviendrez ensuite sur {}.",
    consent_title: "Autoriser l'accès",
    consent_heading: "Autoriser l'accès\u{a0}?",
    signed_in_as: "Connecté en tant que",
    switch_account: "Ce n'est pas vous\u{a0}? Changer de compte",
    asks_permission: "{} demande l'autorisation de\u{a0}:",
    reads_heading: "Consulter vos informations",
    writes_heading: "Agir pour vous",
    writes_note: "Ces actions touchent vos clients ou modifient ce que sert votre restaurant.",
    admin_heading: "Administration de la plateforme",
    admin_note: "Ce sont des pouvoirs d'administrateur de la plateforme Chataigne, au-delà d'un seul restaurant.",
    not_usable_heading: "Non accordé\u{a0}: votre rôle ne le permet pas",
    not_usable_note: "Votre compte ne peut pas s'en servir\u{a0}; ces droits sont exclus de cet accès.",
    acts_within_role: "Elle n'agit que là où votre rôle le permet, et vous pouvez retirer cet accès à tout moment.",
    allow: "Autoriser",
    deny: "Refuser",
    other_access: "Autre accès",
    error_title: "Problème de connexion",
    error_heading: "Cette demande ne peut pas aboutir",
    error_client: "Chataigne ne connaît pas l'application qui vous a envoyé ici, ou elle a été désactivée.",
    error_request: "L'application qui vous a envoyé ici a fait une demande que Chataigne ne peut pas accepter.",
    error_expired: "Cette page a expiré, ou elle a été ouverte dans un autre navigateur.",
    error_unavailable: "Chataigne ne peut pas répondre pour le moment.",
    error_next_step: "Revenez à l'application et recommencez la connexion. Si cela se reproduit, prévenez l'éditeur de l'application.",
    error_detail: "Détail pour le développeur de l'application\u{a0}:",
    hand_back_title: "Retour à l'application",
    hand_back_heading: "Retour à l'application\u{2026}",
    hand_back_continue: "Continuer",
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ui_locales_come_first_then_accept_language_then_the_default() {
        assert_eq!(Lang::negotiate(Some("fr-FR"), Some("en-US")), Lang::Fr);
        assert_eq!(Lang::negotiate(Some("de en"), Some("fr")), Lang::En);
        assert_eq!(
            Lang::negotiate(Some("de"), Some("fr-CA,en;q=0.5")),
            Lang::Fr
        );
        assert_eq!(
            Lang::negotiate(None, Some("en;q=0.4, fr-FR;q=0.9")),
            Lang::Fr
        );
        assert_eq!(Lang::negotiate(None, Some("fr;q=0, en;q=0.1")), Lang::En);
        assert_eq!(Lang::negotiate(None, Some("de, it")), Lang::DEFAULT);
        assert_eq!(Lang::negotiate(None, None), Lang::DEFAULT);
    }

    #[test]
    fn every_text_is_translated_and_keeps_its_placeholders() {
        let (en, fr) = (EN.all(), FR.all());
        for (english, french) in en.iter().zip(fr.iter()) {
            assert_ne!(english, french, "untranslated: {english}");
            assert!(!french.is_empty(), "missing French for {english}");
            assert_eq!(
                english.matches("{}").count(),
                french.matches("{}").count(),
                "{english} / {french}"
            );
        }
        assert_eq!(fill("Wait {} now", "<b>1</b>"), "Wait <b>1</b> now");
    }
}
