//! Generates the gRPC code from `proto/` with a vendored `protoc`, so a fresh
//! machine needs no system protobuf compiler.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    let mut config = tonic_prost_build::Config::new();
    config.protoc_executable(protoc_bin_vendored::protoc_bin_path()?);
    let include = protoc_bin_vendored::include_path()?;
    let protos: [PathBuf; 3] = [
        "proto/chataigne/auth/v1/auth.proto",
        "proto/chataigne/tools/v1/catalog.proto",
        "proto/chataigne/tools/v1/restaurant.proto",
    ]
    .map(PathBuf::from);
    tonic_prost_build::configure()
        .file_descriptor_set_path(out_dir.join("chataigne_descriptor.bin"))
        .compile_with_config(
            config,
            &protos,
            &[PathBuf::from("proto"), include],
        )?;
    for proto in protos {
        println!("cargo:rerun-if-changed={}", proto.display());
    }
    Ok(())
}
