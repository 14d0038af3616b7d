//! What a model meets: the contract it reads (schemas, listing size, error
//! texts, summaries) and requests walked through as a model would. One test
//! binary, one module per concern.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod contract;
mod texts;
mod walkthroughs;
