//! `/authorize` and its two forms: validate the request, sign the browser
//! in (password form), show the consent page, and hand the code (or the
//! refusal) back to the client. Each form's CSRF token is bound to the
//! browser's CSRF cookie, to its sign-in session (consent) and to the
//! authorization request it carries (`oauth::login::csrf_token`).

use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use crate::error::OAuthCode;
use crate::model::now_ms;
use crate::oauth::login::{csrf_token, csrf_valid};
use crate::oauth::{AuthorizationRequest, ValidatedRequest, secrets};

use super::device::DEVICE_TTL_SECS;
use super::lang::Lang;
use super::limits::{ClientAddress, retry_after_secs};
use super::page::{ClientView, ErrorKind, SignInNotice};
use super::{Shared, cookies, page};

/// The sign-in form.
#[derive(Deserialize)]
pub struct LoginForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    email: String,
    #[serde(default)]
    password: String,
    #[serde(flatten)]
    request: AuthorizationRequest,
}

/// The language of the pages for `request` from this browser.
fn lang(headers: &HeaderMap, request: &AuthorizationRequest) -> Lang {
    let accept = headers
        .get(header::ACCEPT_LANGUAGE)
        .and_then(|value| value.to_str().ok());
    Lang::negotiate(request.ui_locales.as_deref(), accept)
}

/// The consent form (also the switch-account form, whose `decision` is empty).
#[derive(Deserialize)]
pub struct ConsentForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    decision: String,
    #[serde(flatten)]
    request: AuthorizationRequest,
}

fn see_other(lang: Lang, location: &str) -> Response {
    match HeaderValue::from_str(location) {
        Ok(value) => {
            let mut response = StatusCode::SEE_OTHER.into_response();
            response.headers_mut().insert(header::LOCATION, value);
            response
                .headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            response
        }
        Err(_) => page::error(
            lang,
            StatusCode::BAD_REQUEST,
            ErrorKind::Request,
            Some("the redirect URI is not valid"),
        ),
    }
}

/// Validates; refusals go to the page or back to the client.
async fn validated(
    state: &Shared,
    lang: Lang,
    request: &AuthorizationRequest,
) -> Result<ValidatedRequest, Response> {
    match state.oauth.validate(request).await {
        Ok(validated) => Ok(validated),
        Err(rejection) => {
            let description = match &rejection.error {
                crate::error::AuthError::OAuth { description, .. } => description.clone(),
                _ => "The request could not be checked. Try again later.".to_owned(),
            };
            let code = match &rejection.error {
                crate::error::AuthError::OAuth { code, .. } => *code,
                _ => OAuthCode::InvalidRequest,
            };
            let (status, kind) = match (&rejection.error, code) {
                (crate::error::AuthError::OAuth { .. }, OAuthCode::InvalidClient)
                | (crate::error::AuthError::OAuth { .. }, OAuthCode::UnauthorizedClient) => {
                    (StatusCode::BAD_REQUEST, ErrorKind::Client)
                }
                (crate::error::AuthError::OAuth { .. }, _) => {
                    (StatusCode::BAD_REQUEST, ErrorKind::Request)
                }
                _ => (StatusCode::SERVICE_UNAVAILABLE, ErrorKind::Unavailable),
            };
            let shown = || page::error(lang, status, kind, Some(&description));
            Err(match rejection.redirect {
                Some((uri, state_param)) => match state.oauth.error_redirect(
                    &uri,
                    state_param.as_deref(),
                    code,
                    &description,
                ) {
                    Ok(url) => see_other(lang, &url),
                    Err(_) => shown(),
                },
                None => shown(),
            })
        }
    }
}

/// The CSRF cookie of the request, or a new one to set.
fn csrf_cookie(
    state: &Shared,
    headers: &HeaderMap,
) -> Result<(String, bool), crate::error::AuthError> {
    match cookies::get(headers, names(state).csrf) {
        Some(existing) if existing.len() <= 128 => Ok((existing.to_owned(), false)),
        _ => secrets::generate().map(|fresh| (fresh, true)),
    }
}

fn names(state: &Shared) -> cookies::Names {
    cookies::names(state.secure_cookies)
}

/// The sign-in session cookie of the request (bounded), if any.
fn session_cookie<'a>(state: &Shared, headers: &'a HeaderMap) -> Option<&'a str> {
    cookies::get(headers, names(state).session).filter(|value| value.len() <= 128)
}

fn form_expired(lang: Lang) -> Response {
    page::error(
        lang,
        StatusCode::FORBIDDEN,
        ErrorKind::Expired,
        Some("the form has expired"),
    )
}

fn with_cookie(mut response: Response, cookie: Option<HeaderValue>) -> Response {
    if let Some(cookie) = cookie {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

/// The signed-in account of this browser, if any.
async fn signed_in(
    state: &Shared,
    session: Option<&str>,
) -> Result<Option<crate::oauth::Account>, crate::error::AuthError> {
    let Some(session) = session else {
        return Ok(None);
    };
    match state.oauth.signed_in_user(session).await? {
        Some(user) => state.oauth.account(&user).await,
        None => Ok(None),
    }
}

/// The page for a validated request: sign-in, or consent when signed in.
async fn page_for(
    state: &Shared,
    headers: &HeaderMap,
    request: &AuthorizationRequest,
    validated: &ValidatedRequest,
) -> Response {
    let lang = lang(headers, request);
    let (csrf, fresh) = match csrf_cookie(state, headers) {
        Ok(found) => found,
        Err(error) => return super::error_response(&error),
    };
    let set_csrf = fresh
        .then(|| cookies::set(names(state).csrf, &csrf, 3600, state.secure_cookies))
        .flatten();
    let session = session_cookie(state, headers);
    let account = match signed_in(state, session).await {
        Ok(account) => account,
        Err(error) => return super::error_response(&error),
    };
    let client = ClientView::of(validated);
    let response = match account {
        Some(account) => page::consent(
            lang,
            request,
            &csrf_token(&csrf, session, request),
            &client,
            &account,
            &validated.scopes,
        ),
        None => page::sign_in(
            lang,
            request,
            &csrf_token(&csrf, None, request),
            &client,
            SignInNotice::None,
            "",
        ),
    };
    with_cookie(response, set_csrf)
}

/// `GET /authorize`.
pub async fn start(
    State(state): State<Shared>,
    headers: HeaderMap,
    Query(request): Query<AuthorizationRequest>,
) -> Response {
    let lang = lang(&headers, &request);
    let validated = match validated(&state, lang, &request).await {
        Ok(validated) => validated,
        Err(response) => return response,
    };
    if let Some(user) = state.oauth.auto_approve_user() {
        return match state.oauth.approve(&validated, user).await {
            Ok(url) => see_other(lang, &url),
            Err(error) => super::error_response(&error),
        };
    }
    page_for(&state, &headers, &request, &validated).await
}

/// `POST /authorize/login`. Limited per client address (every post), per
/// client address × account (failures), and per account (attempts from a
/// browser without the account's device cookie) or per device (failures of
/// one that has it); a refusal re-renders the form with 429 and the wait.
/// A successful sign-in (re)issues the browser's device cookie.
pub async fn login(
    State(state): State<Shared>,
    ClientAddress(address): ClientAddress,
    headers: HeaderMap,
    Form(form): Form<LoginForm>,
) -> Response {
    // The sign-in form is shown before there is a session: its token is
    // bound to the CSRF cookie and the request only.
    let lang = lang(&headers, &form.request);
    let csrf = cookies::get(&headers, names(&state).csrf);
    if !csrf_valid(csrf, None, &form.request, &form.csrf) {
        return form_expired(lang);
    }
    let validated = match validated(&state, lang, &form.request).await {
        Ok(validated) => validated,
        Err(response) => return response,
    };
    let client = ClientView::of(&validated);
    let now_secs = u64::try_from(now_ms() / 1000).unwrap_or_default();
    let device = cookies::get(&headers, names(&state).device)
        .and_then(|cookie| state.devices.recognise(cookie, &form.email, now_secs));
    let subjects = state.limits.sign_in_subjects(
        address.as_ref(),
        &form.email,
        device.as_ref().map(|id| id.as_bytes()),
    );
    if let Err(wait) = state.limits.sign_in_allowed(&subjects).await {
        tracing::info!(
            retry_after_secs = retry_after_secs(wait),
            "sign-in refused by a rate limit"
        );
        return page::sign_in_limited(
            lang,
            &form.request,
            &form.csrf,
            &client,
            retry_after_secs(wait),
            &form.email,
        );
    }
    match state.oauth.sign_in(&form.email, &form.password).await {
        Ok(Some(session)) => {
            let query = serde_urlencoded_request(&form.request);
            let response = see_other(lang, &format!("{}?{query}", super::AUTHORIZE_PATH));
            let max_age = state.oauth.config().browser_session_ttl_secs;
            let cookie = cookies::set(
                names(&state).session,
                &session,
                max_age,
                state.secure_cookies,
            );
            let device = match state.devices.issue(&form.email, now_secs) {
                Ok(value) => cookies::set_strict(
                    names(&state).device,
                    &value,
                    DEVICE_TTL_SECS,
                    state.secure_cookies,
                ),
                Err(error) => return super::error_response(&error),
            };
            with_cookie(with_cookie(response, cookie), device)
        }
        Ok(None) => {
            state.limits.sign_in_failed(&subjects).await;
            page::sign_in(
                lang,
                &form.request,
                &form.csrf,
                &client,
                SignInNotice::WrongPassword,
                &form.email,
            )
        }
        Err(error) => super::error_response(&error),
    }
}

/// `POST /authorize/consent`.
pub async fn consent(
    State(state): State<Shared>,
    headers: HeaderMap,
    Form(form): Form<ConsentForm>,
) -> Response {
    // Bound to this browser's CSRF cookie, its sign-in session and this
    // request: a pair taken from another browser or for another request
    // does not verify.
    let lang = lang(&headers, &form.request);
    let csrf = cookies::get(&headers, names(&state).csrf);
    let session = session_cookie(&state, &headers);
    if !csrf_valid(csrf, session, &form.request, &form.csrf) {
        return form_expired(lang);
    }
    let validated = match validated(&state, lang, &form.request).await {
        Ok(validated) => validated,
        Err(response) => return response,
    };
    let account = match signed_in(&state, session).await {
        Ok(account) => account,
        Err(error) => return super::error_response(&error),
    };
    let Some(account) = account else {
        return page_for(&state, &headers, &form.request, &validated).await;
    };
    let outcome = match form.decision.as_str() {
        // The grant leaves out the scopes the account's roles cannot use,
        // as the consent page says.
        "approve" => {
            let granted = ValidatedRequest {
                scopes: account.usable(&validated.scopes),
                ..validated.clone()
            };
            state.oauth.approve(&granted, &account.user_id).await
        }
        _ => state.oauth.error_redirect(
            &validated.redirect_uri,
            validated.state.as_deref(),
            OAuthCode::AccessDenied,
            "the user denied the request",
        ),
    };
    match outcome {
        Ok(url) => page::hand_back(lang, &url),
        Err(error) => super::error_response(&error),
    }
}

/// `POST /authorize/switch`: "not you? switch account" on the consent page.
/// Ends this browser's sign-in session and shows the sign-in page again for
/// the same request. Its token is the consent form's (bound to the CSRF
/// cookie, the session and the request).
pub async fn switch_account(
    State(state): State<Shared>,
    headers: HeaderMap,
    Form(form): Form<ConsentForm>,
) -> Response {
    let lang = lang(&headers, &form.request);
    let csrf = cookies::get(&headers, names(&state).csrf);
    let session = session_cookie(&state, &headers);
    if session.is_none() || !csrf_valid(csrf, session, &form.request, &form.csrf) {
        return form_expired(lang);
    }
    let validated = match validated(&state, lang, &form.request).await {
        Ok(validated) => validated,
        Err(response) => return response,
    };
    if let Some(session) = session
        && let Err(error) = state.oauth.sign_out(session).await
    {
        return super::error_response(&error);
    }
    let client = ClientView::of(&validated);
    let response = page::sign_in(
        lang,
        &form.request,
        &csrf_token(csrf.unwrap_or_default(), None, &form.request),
        &client,
        SignInNotice::SignedOut,
        "",
    );
    with_cookie(
        response,
        cookies::set(names(&state).session, "", 0, state.secure_cookies),
    )
}

/// The authorization request as a query string.
fn serde_urlencoded_request(request: &AuthorizationRequest) -> String {
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    for (name, value) in [
        ("response_type", &request.response_type),
        ("client_id", &request.client_id),
        ("redirect_uri", &request.redirect_uri),
        ("scope", &request.scope),
        ("state", &request.state),
        ("code_challenge", &request.code_challenge),
        ("code_challenge_method", &request.code_challenge_method),
        ("resource", &request.resource),
        ("ui_locales", &request.ui_locales),
    ] {
        if let Some(value) = value {
            query.append_pair(name, value);
        }
    }
    query.finish()
}
