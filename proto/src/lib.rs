//! gRPC contracts of Chataigne: the auth-service (`auth::v1`), the MCP tool
//! catalogue and the typed restaurant RPCs (`tools::v1`), generated at build time.

pub mod auth {
    pub mod v1 {
        /// The protobuf package of the auth-service's contract.
        pub const PACKAGE: &str = "chataigne.auth.v1";

        tonic::include_proto!("chataigne.auth.v1");
    }
}

pub mod tools {
    pub mod v1 {
        /// The protobuf package of the tool-service's contracts.
        pub const PACKAGE: &str = "chataigne.tools.v1";

        tonic::include_proto!("chataigne.tools.v1");
    }
}

/// Serialized `FileDescriptorSet` of every contract (with source comments),
/// for server reflection and for checking that each MCP tool names an RPC
/// that exists.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/chataigne_descriptor.bin"));
