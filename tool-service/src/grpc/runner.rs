//! The one way every RPC of the tool-service runs: the caller's deadline
//! (down to the database statement timeout), the admission of the caller's
//! credential (a principal assertion is verified and accepted once, see
//! `access`), a slot of the RPC's deadline class, the operator's write
//! switch for writes and the error class of the RPC's kind, so that no RPC
//! can forget them; for typed RPCs also the required fields (before any
//! authorization) and statuses worded for gRPC callers. The catalogue
//! listing, the same for every caller, runs the same path as an explicit
//! public RPC ([`public`]): no credential is read, nothing else is skipped.

use std::future::Future;

use chataigne_common::codes::FieldViolation;
use tonic::{Request, Response, Status};

use super::credential::credential;
use super::deadline;
use super::fields::{TypedRequest, TypedRpc};
use super::status::typed_status;
use crate::access::{Access, Credential};
use crate::domain::{DomainError, Locale};
use crate::store::Store;
use crate::tools::{
    Answered, CallContext, DeadlineClass, Reply, ToolKind, Tools, deadline as tools_deadline,
};

/// Runs `work` for an RPC of `kind` until its `deadline` (each database
/// statement bounded by what remains of it, dropped work rolled back): the
/// `presented` credential admitted first, then a slot of its deadline
/// `class` (`Overloaded` when the class stays exhausted), then the write
/// switch read when it writes, then `work` with the admitted credential.
pub(super) async fn bounded<S: Store, A: Access, T, W, F>(
    tools: &Tools<S, A>,
    deadline: Option<tokio::time::Instant>,
    (kind, class): (ToolKind, DeadlineClass),
    presented: Credential,
    work: W,
) -> Result<T, DomainError>
where
    W: FnOnce(Credential) -> F,
    F: Future<Output = Result<T, DomainError>>,
{
    admitted(
        tools,
        deadline,
        (kind, class),
        tools.access.admit(presented),
        work,
    )
    .await
}

/// [`bounded`] for the one RPC whose answer is the same for every caller,
/// the catalogue listing: no credential is read or admitted (it names no
/// principal and decides nothing on one), and everything else is the same
/// path: the caller's deadline, a slot of its `class`, the error mapping of
/// the caller, the metrics and the log line of the layer.
pub(super) async fn public<S: Store, A: Access, T, W, F>(
    tools: &Tools<S, A>,
    deadline: Option<tokio::time::Instant>,
    class: DeadlineClass,
    work: W,
) -> Result<T, DomainError>
where
    W: FnOnce() -> F,
    F: Future<Output = Result<T, DomainError>>,
{
    let anyone = async { Ok(()) };
    admitted(tools, deadline, (ToolKind::Read, class), anyone, |()| {
        work()
    })
    .await
}

/// The one sequence of every RPC: until `deadline`, the caller `admission`,
/// a slot of `class`, the write switch when `kind` writes, then `work`.
async fn admitted<S: Store, A: Access, C, T, W, F>(
    tools: &Tools<S, A>,
    deadline: Option<tokio::time::Instant>,
    (kind, class): (ToolKind, DeadlineClass),
    admission: impl Future<Output = Result<C, DomainError>>,
    work: W,
) -> Result<T, DomainError>
where
    W: FnOnce(C) -> F,
    F: Future<Output = Result<T, DomainError>>,
{
    tools_deadline::within(deadline, async {
        let caller = admission.await?;
        let _admitted = tools.admission.admit(class).await?;
        if kind == ToolKind::Write {
            tools.ensure_writes_enabled().await?;
        }
        work(caller).await
    })
    .await
}

/// The adapter of the typed surface: runs any typed RPC as its tool.
pub(crate) struct Runner<S, A> {
    tools: Tools<S, A>,
}

impl<S, A> Runner<S, A> {
    pub(crate) fn new(tools: Tools<S, A>) -> Self {
        Runner { tools }
    }
}

impl<S: Store, A: Access> Runner<S, A> {
    /// Runs one typed RPC as the tool `T`: the caller's credential, then
    /// within its deadline the write switch (writes, from `T::SPEC`), the
    /// request's required fields, the request converted into the tool's
    /// input, the tool, and its answer converted into the response. Every
    /// error becomes a status in the one mapping, by the tool's kind; the
    /// metrics layer records the call by its RPC path.
    pub(crate) async fn run<T>(
        &self,
        request: Request<T::Request>,
    ) -> Result<Response<T::Response>, Status>
    where
        T: TypedRpc,
        T::Input: TryFrom<T::Request, Error = DomainError>,
        T::Response: From<Answered<T::Output>>,
    {
        let kind = T::SPEC.kind;
        let presented = credential(&request).map_err(|error| typed_status(error, kind))?;
        let deadline = deadline::of(&request);
        deadline::starts(&request, kind);
        let request = request.into_inner();
        let locale = Locale::parse(request.locale());
        let now_ms = chrono::Utc::now().timestamp_millis();
        let tools = &self.tools;
        let work = |credential| async move {
            let ctx = CallContext {
                credential,
                locale,
                now_ms,
            };
            required_fields(&request)?;
            let input = T::Input::try_from(request)?;
            // Boxed, as in the MCP bridge's dispatch: only a pointer moves
            // through the layers above.
            let answered = Box::pin(T::run(tools, input, &ctx)).await?.answered()?;
            Ok(T::Response::from(answered))
        };
        bounded(tools, deadline, (kind, T::SPEC.deadline), presented, work)
            .await
            .map(Response::new)
            .map_err(|error| typed_status(error, kind))
    }
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
