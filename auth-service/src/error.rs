//! The crate's one error type. The gRPC adapter maps it to a `tonic::Status`
//! in one place; the management API returns it as is.

use crate::store::StoreError;

/// Why a token, an assertion or the live state behind it was refused. Sent to
/// callers only as the `reason` metadata of `MCP_UNAUTHENTICATED`, never in
/// the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthFailure {
    TokenInvalid,
    TokenExpired,
    AudienceMismatch,
    SessionRevoked,
    UserInactive,
    ClientDisabled,
    ConsentRevoked,
}

impl AuthFailure {
    /// The `reason` metadata value.
    pub fn reason(self) -> &'static str {
        match self {
            AuthFailure::TokenInvalid => "token_invalid",
            AuthFailure::TokenExpired => "token_expired",
            AuthFailure::AudienceMismatch => "audience_mismatch",
            AuthFailure::SessionRevoked => "session_revoked",
            AuthFailure::UserInactive => "user_inactive",
            AuthFailure::ClientDisabled => "client_disabled",
            AuthFailure::ConsentRevoked => "consent_revoked",
        }
    }
}

/// Every way an auth-service operation can fail.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// The credential or the live state behind it is not acceptable.
    #[error("authentication failed ({})", .0.reason())]
    Unauthenticated(AuthFailure),
    /// The principal's effective scopes do not include `scope`.
    #[error("scope {scope} is required")]
    ScopeRequired { scope: String },
    /// No membership or role grants the permission on the target.
    #[error("no access to the target")]
    Forbidden,
    /// A request field is missing or malformed.
    #[error("invalid argument {field}: {description}")]
    InvalidArgument {
        field: &'static str,
        description: String,
    },
    /// A management call named something that does not exist.
    #[error("{what} not found")]
    NotFound { what: &'static str },
    /// The database is unreachable, overloaded or timed out.
    #[error("storage unavailable")]
    Unavailable(#[source] StoreError),
    /// An OAuth endpoint refuses the request (RFC 6749 §4.1.2.1, §5.2; RFC 7009; RFC 7591).
    #[error("oauth {}: {description}", .code.as_str())]
    OAuth {
        code: OAuthCode,
        description: String,
    },
    /// Anything else; the detail is logged, never returned to callers.
    #[error("internal error: {0}")]
    Internal(String),
}

impl AuthError {
    pub(crate) fn invalid(field: &'static str, description: impl Into<String>) -> AuthError {
        AuthError::InvalidArgument {
            field,
            description: description.into(),
        }
    }
}

/// The `error` values of the OAuth endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OAuthCode {
    InvalidRequest,
    InvalidClient,
    InvalidGrant,
    UnauthorizedClient,
    UnsupportedGrantType,
    UnsupportedResponseType,
    InvalidScope,
    InvalidTarget,
    AccessDenied,
    InvalidRedirectUri,
    InvalidClientMetadata,
}

impl OAuthCode {
    pub fn as_str(self) -> &'static str {
        match self {
            OAuthCode::InvalidRequest => "invalid_request",
            OAuthCode::InvalidClient => "invalid_client",
            OAuthCode::InvalidGrant => "invalid_grant",
            OAuthCode::UnauthorizedClient => "unauthorized_client",
            OAuthCode::UnsupportedGrantType => "unsupported_grant_type",
            OAuthCode::UnsupportedResponseType => "unsupported_response_type",
            OAuthCode::InvalidScope => "invalid_scope",
            OAuthCode::InvalidTarget => "invalid_target",
            OAuthCode::AccessDenied => "access_denied",
            OAuthCode::InvalidRedirectUri => "invalid_redirect_uri",
            OAuthCode::InvalidClientMetadata => "invalid_client_metadata",
        }
    }
}

impl AuthError {
    pub(crate) fn oauth(code: OAuthCode, description: impl Into<String>) -> AuthError {
        AuthError::OAuth {
            code,
            description: description.into(),
        }
    }
}

impl From<AuthFailure> for AuthError {
    fn from(failure: AuthFailure) -> Self {
        AuthError::Unauthenticated(failure)
    }
}

impl From<StoreError> for AuthError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Unavailable(_) => AuthError::Unavailable(error),
            StoreError::Failed(detail) => AuthError::Internal(detail),
        }
    }
}
