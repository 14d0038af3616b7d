//! Operating the product from its documentation: the production runbook run
//! as written, the configuration reference generated from the typed configs,
//! and services that wait for their dependencies at start. One test binary,
//! one module per concern.

mod configuration_reference;
mod runbook;
mod startup_retry;
