//! The one way every RPC of the tool-service runs: the caller's deadline
//! (down to the database statement timeout), the operator's write switch for
//! writes and the error class of the RPC's kind, so that no RPC can forget
//! them; for typed RPCs also the credential, the required fields (before any
//! authorization) and statuses worded for gRPC callers.

use std::future::Future;
use std::time::Duration;

use chataigne_common::codes::FieldViolation;
use tonic::{Request, Response, Status};

use super::credential::credential;
use super::deadline;
use super::fields::TypedRequest;
use super::status::typed_status;
use crate::access::Access;
use crate::domain::DomainError;
use crate::present::normalize_locale;
use crate::store::Store;
use crate::tools::{CallContext, ToolKind, Tools, deadline as tools_deadline};

/// Runs `work` for an RPC of `kind` within `timeout` (each database
/// statement bounded by what remains of it, dropped work rolled back), the
/// write switch read first when it writes.
pub(super) async fn bounded<S: Store, A: Access, T>(
    tools: &Tools<S, A>,
    timeout: Option<Duration>,
    kind: ToolKind,
    work: impl Future<Output = Result<T, DomainError>>,
) -> Result<T, DomainError> {
    tools_deadline::within(timeout, async {
        if kind == ToolKind::Write {
            tools.ensure_writes_enabled().await?;
        }
        work.await
    })
    .await
}

/// Runs one typed RPC: the caller's credential, then within its deadline
/// the write switch (writes), the request's required fields and `body` (which
/// converts, authorizes through the tool and converts back). Every error
/// becomes a status in the one mapping, by the kind of the RPC's tool.
pub(super) async fn run<S, A, R, T, F, Fut>(
    tools: &Tools<S, A>,
    request: Request<R>,
    body: F,
) -> Result<Response<T>, Status>
where
    S: Store,
    A: Access,
    R: TypedRequest,
    F: FnOnce(R, CallContext) -> Fut,
    Fut: Future<Output = Result<T, DomainError>>,
{
    let kind = R::TOOL.spec().kind;
    let credential = credential(&request).map_err(|error| typed_status(error, kind))?;
    let timeout = deadline::of(&request);
    let request = request.into_inner();
    let ctx = CallContext {
        credential,
        locale: normalize_locale(request.locale()),
        now_ms: chrono::Utc::now().timestamp_millis(),
    };
    let work = async move {
        required_fields(&request)?;
        body(request, ctx).await
    };
    bounded(tools, timeout, kind, work)
        .await
        .map(Response::new)
        .map_err(|error| typed_status(error, kind))
}

/// `InvalidArguments` naming every required field left empty.
fn required_fields<R: TypedRequest>(request: &R) -> Result<(), DomainError> {
    let missing = request.missing();
    if missing.is_empty() {
        return Ok(());
    }
    Err(DomainError::InvalidArguments(
        missing
            .into_iter()
            .map(|field| FieldViolation {
                field: field.to_owned(),
                description: "is required".to_owned(),
            })
            .collect(),
    ))
}
