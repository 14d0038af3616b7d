//! MCP protocol revisions, one per endpoint (`endpoints[].revision`). A
//! revision owns what changes between MCP releases: the protocol versions it
//! speaks, its header rules (before the body, and against it), its method
//! set and dispatch, the shape of its results and how tool arguments are
//! mirrored in headers. Adding one is a module here implementing
//! [`Protocol`], its line in [`protocol`] and its name in the endpoint
//! configuration (`config::Revision`); the tools, their envelopes, limits
//! and authorization are shared (`mcp/protocol.rs`).

pub mod v2025_11_25;
pub mod v2026_07_28;

use crate::config::Revision;
use crate::mcp::protocol::Protocol;

/// The one registration of every revision: the implementation an endpoint's
/// configured [`Revision`] names.
pub fn protocol(revision: Revision) -> &'static dyn Protocol {
    match revision {
        Revision::V2025_11_25 => &v2025_11_25::V2025_11_25,
        Revision::V2026_07_28 => &v2026_07_28::V2026_07_28,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_revision_is_named_by_its_release_date() {
        assert_eq!(Revision::default(), Revision::V2025_11_25);
        assert_eq!(
            serde_json::to_value(Revision::V2025_11_25).unwrap(),
            "2025-11-25"
        );
        let parsed: Revision = serde_json::from_value("2025-11-25".into()).unwrap();
        assert_eq!(parsed, Revision::V2025_11_25);
        let modern: Revision = serde_json::from_value("2026-07-28".into()).unwrap();
        assert_eq!(modern, Revision::V2026_07_28);
        assert!(serde_json::from_value::<Revision>("2099-01-01".into()).is_err());
    }

    #[test]
    fn each_revision_speaks_the_version_it_is_named_by_first() {
        for revision in [Revision::V2025_11_25, Revision::V2026_07_28] {
            let name = serde_json::to_value(revision).unwrap();
            assert_eq!(
                Some(name.as_str().unwrap()),
                protocol(revision).supported_versions().first().copied()
            );
        }
    }
}
