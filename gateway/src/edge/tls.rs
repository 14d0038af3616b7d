//! TLS for the public listener: the certificate chain and key are read from
//! PEM files once at start-up into a rustls acceptor (aws-lc-rs, TLS 1.2+,
//! ALPN h2 and http/1.1).

use std::sync::Arc;

use anyhow::Context;
use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

use crate::config::TlsConfig;

/// Builds the acceptor from `config`, failing with the file that is wrong.
pub fn acceptor(config: &TlsConfig) -> anyhow::Result<TlsAcceptor> {
    let chain = CertificateDer::pem_file_iter(&config.cert_file)
        .with_context(|| format!("reading tls.cert_file {}", config.cert_file))?
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("parsing tls.cert_file {}", config.cert_file))?;
    anyhow::ensure!(!chain.is_empty(), "tls.cert_file holds no certificate");
    let key = PrivateKeyDer::from_pem_file(&config.key_file)
        .with_context(|| format!("reading tls.key_file {}", config.key_file))?;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut server = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .context("tls.cert_file and tls.key_file do not form a usable pair")?;
    server.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(server)))
}
