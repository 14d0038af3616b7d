//! The `Tool` trait every catalogue tool implements once (its declaration,
//! input, output and body), and the `Reply` its body answers with, which each
//! surface turns into its own response: a serialized call result for the MCP
//! bridge, typed data for the gRPC services.

use std::future::Future;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::idempotency::{Finish, Written};
use super::{CallContext, ToolId, ToolOutput, ToolSpec, Tools};
use crate::access::Access;
use crate::domain::DomainError;
use crate::store::Store;

/// One tool: a zero-sized type whose declaration is `SPEC`, whose arguments
/// are `Input` and whose structured result is `Output`. The surfaces apply
/// the call context, the write gate, the deadline and the error mapping from
/// `SPEC` around [`Tool::run`]; a tool never does it itself.
pub trait Tool: Catalogued + Send + Sync + 'static {
    /// The arguments, deserialized from JSON (MCP) or converted from the
    /// typed request (gRPC).
    type Input: DeserializeOwned + JsonSchema + Send;
    /// The structured result, serialized as the call's data.
    type Output: Serialize + JsonSchema + Send;
    /// What the body answers: a [`ToolOutput`] for a plain tool, a
    /// [`Written`] for an idempotent write.
    type Reply: Reply<Self::Output>;
    /// Name, description, scope, kind, deadline class and typed RPC.
    const SPEC: ToolSpec;

    /// The tool's body: authorizes through `tools.access` and reads or
    /// writes through `tools.store`.
    fn run<S: Store, A: Access>(
        tools: &Tools<S, A>,
        input: Self::Input,
        ctx: &CallContext,
    ) -> impl Future<Output = Result<Self::Reply, DomainError>> + Send;
}

/// A tool listed in the catalogue (implemented by the `catalogue!` line of
/// each tool, never by hand), so that a typed RPC can only run a tool the
/// MCP bridge lists too.
pub trait Catalogued {
    const ID: ToolId;
}

/// The typed result of a call, for a surface that converts it itself.
#[derive(Debug)]
pub struct Answered<T> {
    pub data: T,
    pub next_cursor: Option<String>,
    /// An idempotent write answered from its stored result.
    pub replayed: bool,
}

/// What a tool's body answers: serialized for the MCP bridge
/// ([`Finish`]) or typed for the gRPC services.
pub trait Reply<T>: Finish + Send {
    fn answered(self) -> Result<Answered<T>, DomainError>;
}

impl<T: Serialize + Send> Reply<T> for ToolOutput<T> {
    fn answered(self) -> Result<Answered<T>, DomainError> {
        Ok(Answered {
            data: self.data,
            next_cursor: self.next_cursor,
            replayed: false,
        })
    }
}

impl<T: Serialize + DeserializeOwned + Send> Reply<T> for Written<T> {
    fn answered(self) -> Result<Answered<T>, DomainError> {
        let (data, replayed) = self.into_data()?;
        Ok(Answered {
            data,
            next_cursor: None,
            replayed,
        })
    }
}
