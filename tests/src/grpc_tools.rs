//! The gRPC tooling the tests drive as external processes: the buf CLI
//! (`buf lint` of `proto/`) and a Python with grpcio, grpcio-reflection and
//! protobuf (the caller guide's session, `tests/clients/grpc_session.py`),
//! installed by `tests/clients/setup.sh` beside the MCP clients.

use std::path::{Path, PathBuf};

use crate::in_ci;

/// Where `setup.sh` installed the tools, from `CHATAIGNE_TEST_MCP_CLIENTS`.
fn installed(relative: &str, what: &str) -> Option<PathBuf> {
    let found = std::env::var_os("CHATAIGNE_TEST_MCP_CLIENTS")
        .map(|dir| PathBuf::from(dir).join(relative))
        .filter(|path| path.exists());
    match found {
        Some(path) => Some(path),
        None if in_ci() => panic!(
            "{what} is required in CI: install it with tests/clients/setup.sh DIR and set CHATAIGNE_TEST_MCP_CLIENTS=DIR (scripts/test.sh does both)"
        ),
        None => {
            eprintln!(
                "skipping: {what} not installed (scripts/test.sh installs it with tests/clients/setup.sh)"
            );
            None
        }
    }
}

/// The buf CLI; `None` outside CI when it is not installed, a panic in CI.
pub fn buf() -> Option<PathBuf> {
    installed("buf/node_modules/.bin/buf", "the buf CLI")
}

/// The Python of the gRPC client packages; `None` outside CI when it is not
/// installed, a panic in CI.
pub fn grpc_python() -> Option<PathBuf> {
    installed("venv-grpc/bin/python", "the Python gRPC client (grpcio)")
}

/// The caller guide's Python session (`tests/clients/grpc_session.py`).
pub fn grpc_session_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("clients/grpc_session.py")
}

/// The `proto/` folder of the repository (with its `buf.yaml`).
pub fn proto_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../proto")
}
