//! Embeds the source revision the binaries are built from as
//! `CHATAIGNE_REVISION` (read by `metrics::REVISION`): `CHATAIGNE_BUILD_REVISION`
//! when set (the image build passes its commit), else the checkout's commit
//! (`git rev-parse --short=12 HEAD`) when git and the repository are there,
//! else `unknown`. Rebuilt only when that variable, HEAD or the branch it
//! points at changes, not at every edit.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=CHATAIGNE_BUILD_REVISION");
    let given = std::env::var("CHATAIGNE_BUILD_REVISION")
        .ok()
        .map(|revision| revision.trim().to_owned())
        .filter(|revision| !revision.is_empty());
    let revision = given
        .or_else(checkout_revision)
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=CHATAIGNE_REVISION={revision}");
}

/// One line of `git <args>` run in this crate's directory, when it succeeds.
fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let line = String::from_utf8(output.stdout).ok()?.trim().to_owned();
    (!line.is_empty()).then_some(line)
}

/// The checkout's commit, and the files whose change means a new one.
fn checkout_revision() -> Option<String> {
    let revision = git(&["rev-parse", "--short=12", "HEAD"])?;
    let mut watched = vec!["HEAD".to_owned(), "packed-refs".to_owned()];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(branch);
    }
    for name in watched {
        let Some(path) = git(&["rev-parse", "--path-format=absolute", "--git-path", &name]) else {
            continue;
        };
        // A missing file would rerun the script at every build.
        if Path::new(&path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    Some(revision)
}
