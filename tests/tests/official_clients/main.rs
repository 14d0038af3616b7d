//! The official clients against the real stack, one test binary: every
//! client at every version on both profiles (`mcp_clients`), the Python SDK's
//! sessions and auto mode (`python_sdk`) and OAuth flow (`oauth_python_sdk`),
//! the conformance suites (`conformance`), and the consent page in headless
//! Chromium (`consent_browser`), the accessibility of the pages with
//! axe-core (`pages_a11y`), and the MCP Apps views in a real browser host
//! (`apps_host`). Each is installed by `tests/clients/setup.sh`.

mod apps_host;
mod conformance;
mod consent_browser;
mod mcp_clients;
mod oauth_python_sdk;
mod pages_a11y;
mod python_sdk;
