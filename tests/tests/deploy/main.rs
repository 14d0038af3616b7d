//! What SREs deploy, one test binary: the Helm chart rendered and checked
//! with real Helm and promtool (`helm_chart`), and the container and
//! collector artefacts (`deploy_artefacts`).

mod deploy_artefacts;
mod helm_chart;
