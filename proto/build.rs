//! Generates the gRPC code of every `.proto` file under `proto/` with a
//! vendored `protoc`, so a fresh machine needs no system protobuf compiler.

use std::path::{Path, PathBuf};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    let mut config = tonic_prost_build::Config::new();
    config.protoc_executable(protoc_bin_vendored::protoc_bin_path()?);
    let include = protoc_bin_vendored::include_path()?;
    let mut protos = Vec::new();
    collect(Path::new("proto"), &mut protos)?;
    protos.sort();
    tonic_prost_build::configure()
        .file_descriptor_set_path(out_dir.join("chataigne_descriptor.bin"))
        .compile_with_config(config, &protos, &[PathBuf::from("proto"), include])?;
    println!("cargo:rerun-if-changed=proto");
    Ok(())
}

/// Every `.proto` file below `dir`.
fn collect(dir: &Path, protos: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect(&path, protos)?;
        } else if path.extension().is_some_and(|ext| ext == "proto") {
            println!("cargo:rerun-if-changed={}", path.display());
            protos.push(path);
        }
    }
    Ok(())
}
