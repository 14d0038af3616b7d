//! Generated certificates for the internal-TLS tests: a CA and the leaf
//! certificates it signs, written as PEM files the services read (servers
//! and clients alike).

use std::path::Path;

/// A CA that signs the leaf certificates of a test.
pub struct Authority {
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
    /// The CA certificate, PEM.
    pub pem: String,
}

/// A leaf certificate written to disk.
pub struct Leaf {
    pub cert_file: String,
    pub key_file: String,
    /// DER of the certificate, to compare with what a server presents.
    pub der: Vec<u8>,
}

impl Authority {
    pub fn new(name: &str) -> Authority {
        let key = rcgen::KeyPair::generate().expect("CA key");
        let mut params = rcgen::CertificateParams::new(Vec::new()).expect("CA params");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        let pem = params.self_signed(&key).expect("CA certificate").pem();
        Authority {
            issuer: rcgen::Issuer::new(params, key),
            pem,
        }
    }

    /// Writes the CA certificate (PEM) to `path`; returns the path.
    pub fn write(&self, path: &Path) -> String {
        std::fs::write(path, &self.pem).expect("CA file written");
        path.display().to_string()
    }

    /// Writes a leaf for `names` (DNS names or IP addresses) as
    /// `<stem>.crt` / `<stem>.key` in `dir`, replacing existing files in
    /// place (as a renewed Secret does).
    pub fn leaf(&self, dir: &Path, stem: &str, names: &[&str]) -> Leaf {
        let key = rcgen::KeyPair::generate().expect("leaf key");
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let params = rcgen::CertificateParams::new(names).expect("leaf params");
        let cert = params.signed_by(&key, &self.issuer).expect("leaf signed");
        let cert_file = dir.join(format!("{stem}.crt"));
        let key_file = dir.join(format!("{stem}.key"));
        std::fs::write(&key_file, key.serialize_pem()).expect("key written");
        std::fs::write(&cert_file, cert.pem()).expect("certificate written");
        Leaf {
            cert_file: cert_file.display().to_string(),
            key_file: key_file.display().to_string(),
            der: cert.der().to_vec(),
        }
    }
}
