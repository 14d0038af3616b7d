//! gRPC contracts of Chataigne: the auth-service (`auth::v1`), the MCP tool
//! catalogue and the typed restaurant RPCs (`tools::v1`), generated at build time.

pub mod auth {
    pub mod v1 {
        tonic::include_proto!("chataigne.auth.v1");
    }
}

pub mod tools {
    pub mod v1 {
        tonic::include_proto!("chataigne.tools.v1");
    }
}

/// Serialized `FileDescriptorSet` of every contract, for reflection and for
/// checking that each MCP tool names an RPC that exists.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/chataigne_descriptor.bin"));
