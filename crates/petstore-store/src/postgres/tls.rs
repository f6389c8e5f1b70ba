//! TLS to PostgreSQL with rustls (ring), with libpq's `sslmode` meanings:
//!
//! | `sslmode` | TLS | the server's certificate |
//! |---|---|---|
//! | `disable` | never | - |
//! | `prefer` (default) | if the server offers it | not checked |
//! | `require` | always | not checked; with `sslrootcert`, checked as `verify-ca` (libpq does the same) |
//! | `verify-ca` | always | signed by a trusted CA |
//! | `verify-full` | always | signed by a trusted CA, and issued for the host connected to |
//!
//! The trusted CAs are `sslrootcert`: a PEM file, or `system` for the operating system's store;
//! without it, libpq's default file `~/.postgresql/root.crt`.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};

use crate::StoreError;

/// libpq's `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    pub(crate) fn parse(value: &str) -> Result<Self, StoreError> {
        Ok(match value {
            "disable" => Self::Disable,
            "prefer" => Self::Prefer,
            "require" => Self::Require,
            "verify-ca" => Self::VerifyCa,
            "verify-full" => Self::VerifyFull,
            // `allow` tries plain first: a downgrade this service does not offer.
            other => {
                return Err(StoreError::Config(format!(
                    "the database URL's sslmode={other:?} is not one of disable, prefer, \
                     require, verify-ca, verify-full"
                )));
            }
        })
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Disable => "disable",
            Self::Prefer => "prefer",
            Self::Require => "require",
            Self::VerifyCa => "verify-ca",
            Self::VerifyFull => "verify-full",
        }
    }
}

/// What the connection asks of the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wire {
    /// No TLS.
    Plain,
    /// TLS if the server offers it, else plain.
    TryTls,
    /// TLS, or no connection.
    Tls,
}

/// What `mode` sends over the wire, and the rustls configuration that checks the server.
pub(crate) fn client_config(
    mode: SslMode,
    rootcert: Option<&str>,
) -> Result<(Wire, ClientConfig), StoreError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|error| StoreError::Config(format!("TLS: {error}")))?;
    let check_ca = match mode {
        SslMode::Disable | SslMode::Prefer => false,
        SslMode::Require => rootcert.is_some(),
        SslMode::VerifyCa | SslMode::VerifyFull => true,
    };
    let wire = match mode {
        SslMode::Disable => Wire::Plain,
        SslMode::Prefer => Wire::TryTls,
        _ => Wire::Tls,
    };
    let config = if mode == SslMode::VerifyFull {
        let roots = trusted_roots(mode, rootcert)?;
        builder.with_root_certificates(roots).with_no_client_auth()
    } else {
        let chain = if check_ca {
            let roots = Arc::new(trusted_roots(mode, rootcert)?);
            let chain = WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
                .build()
                .map_err(|error| StoreError::Config(format!("TLS: {error}")))?;
            Some(chain)
        } else {
            None
        };
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Relaxed { provider, chain }))
            .with_no_client_auth()
    };
    Ok((wire, config))
}

/// The CAs `rootcert` names (see the module's documentation).
fn trusted_roots(mode: SslMode, rootcert: Option<&str>) -> Result<RootCertStore, StoreError> {
    let mut roots = RootCertStore::empty();
    let path = match rootcert {
        Some("system") => {
            let found = rustls_native_certs::load_native_certs();
            let (added, _) = roots.add_parsable_certificates(found.certs);
            if added == 0 {
                return Err(StoreError::Config(format!(
                    "sslmode={} with sslrootcert=system: no CA certificate could be read from \
                     the system's store",
                    mode.as_str()
                )));
            }
            return Ok(roots);
        }
        Some(path) => PathBuf::from(path),
        None => {
            let default = std::env::var_os("HOME")
                .map(|home| PathBuf::from(home).join(".postgresql/root.crt"))
                .filter(|path| path.is_file());
            default.ok_or_else(|| {
                StoreError::Config(format!(
                    "sslmode={} needs the CA that signed the server's certificate: add \
                     sslrootcert=PATH (a PEM file) or sslrootcert=system to the database URL \
                     (~/.postgresql/root.crt does not exist)",
                    mode.as_str()
                ))
            })?
        }
    };
    let unreadable =
        |reason: String| StoreError::Config(format!("sslrootcert={}: {reason}", path.display()));
    let certificates = CertificateDer::pem_file_iter(&path)
        .map_err(|error| unreadable(error.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| unreadable(error.to_string()))?;
    for certificate in certificates {
        roots
            .add(certificate)
            .map_err(|error| unreadable(format!("not a usable CA certificate: {error}")))?;
    }
    if roots.is_empty() {
        return Err(unreadable("holds no PEM certificate".into()));
    }
    Ok(roots)
}

/// A server check looser than rustls' own: the handshake's signatures are always checked, with
/// the provider's algorithms (as `WebPkiServerVerifier` checks them), and the certificate
/// `chain` decides what else is.
///
/// - No `chain` (`prefer` and `require`): any certificate is accepted (libpq's meaning: the
///   network is trusted to reach the right server).
/// - `chain` (`verify-ca`): the chain must lead to a trusted CA; the name in the certificate is
///   not compared with the host.
#[derive(Debug)]
struct Relaxed {
    provider: Arc<CryptoProvider>,
    chain: Option<Arc<WebPkiServerVerifier>>,
}

impl ServerCertVerifier for Relaxed {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        // The chain is checked first: a name error means the chain was good.
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.provider.signature_verification_algorithms;
        verify_tls12_signature(message, cert, dss, algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.provider.signature_verification_algorithms;
        verify_tls13_signature(message, cert, dss, algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}
