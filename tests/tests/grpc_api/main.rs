//! The gRPC API as internal teams meet it: reflection on both servers, the
//! contracts' lint and comments, the field rules and wording of every typed
//! RPC, and the caller guide's sessions. One test binary, one module per
//! concern.

mod caller_guide;
mod field_rules;
mod proto_comments;
mod proto_lint;
mod reflection;
