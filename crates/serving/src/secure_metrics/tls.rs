//! TLS for the metrics endpoint: where the certificate comes from and how a replaced certificate
//! is picked up. Handshakes happen in [`crate::server`], with a timeout.
//!
//! As in a kubebuilder v4 project, the certificate is either read from a directory holding
//! `tls.crt` and `tls.key` (a mounted Secret, typically issued and rotated by cert-manager) or,
//! when none is given, generated at start as a self-signed one (with rcgen), which Prometheus
//! scrapes with `insecure_skip_verify` and `curl` with `-k`. The connection is encrypted either
//! way, so the bearer token a scraper sends is never visible on the network.
//!
//! A Secret is updated in place in a running pod (the kubelet swaps the files), so the
//! certificate is re-read when the files change, without a restart: on a handshake, at most once
//! per [`RELOAD_CHECK_INTERVAL`], the files are read and compared with those loaded. Reading two
//! small files at most once a second per scrape is cheaper than a file watcher and works with
//! the kubelet's symlink swaps, which inotify on the files themselves misses.
//!
//! The crypto provider is ring, the one `kube` already uses for its client, so the binary carries
//! one TLS stack.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rustls::ServerConfig;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

/// The certificate file in `--metrics-cert-dir`, as in a `kubernetes.io/tls` Secret.
pub const CERT_FILE: &str = "tls.crt";
/// The private key file in `--metrics-cert-dir`.
pub const KEY_FILE: &str = "tls.key";

/// How often, at most, the certificate files are checked for a change.
pub const RELOAD_CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// Why TLS could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} holds no PEM certificate", path.display())]
    NoCertificate { path: PathBuf },
    #[error("{} is not a PEM certificate chain: {message}", path.display())]
    BadCertificate { path: PathBuf, message: String },
    #[error("{} is not a PEM private key: {message}", path.display())]
    BadKey { path: PathBuf, message: String },
    #[error("the key in {} does not belong to the certificate in {}: {message}", key.display(), cert.display())]
    Mismatch {
        cert: PathBuf,
        key: PathBuf,
        message: String,
    },
    #[error("cannot generate a self-signed certificate: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("cannot configure TLS: {0}")]
    Config(#[from] rustls::Error),
}

/// The crypto provider for the server: ring, as kube's client uses.
fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A self-signed certificate for `localhost`, valid for the life of the process. Its only
/// purpose is encryption: scrapers skip verification (`curl -k`, Prometheus'
/// `insecure_skip_verify`), as they do for a kubebuilder manager without cert-manager.
pub fn self_signed() -> Result<CertifiedKey, TlsError> {
    let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
    let generated = rcgen::generate_simple_self_signed(names)?;
    let key = PrivateKeyDer::try_from(generated.signing_key.serialize_der()).map_err(|e| {
        TlsError::BadKey {
            path: PathBuf::from("(generated)"),
            message: e.to_string(),
        }
    })?;
    Ok(CertifiedKey::from_der(
        vec![generated.cert.der().clone()],
        key,
        &provider(),
    )?)
}

/// The raw contents of `tls.crt` and `tls.key`, to notice a change.
type FileBytes = (Vec<u8>, Vec<u8>);

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        path: path.to_path_buf(),
        source,
    })
}

/// Parses a PEM certificate chain and key into a key pair rustls can serve, checking that the
/// key belongs to the certificate.
fn parse(dir: &Path, (cert, key): &FileBytes) -> Result<CertifiedKey, TlsError> {
    let cert_path = dir.join(CERT_FILE);
    let key_path = dir.join(KEY_FILE);
    let chain = CertificateDer::pem_slice_iter(cert)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::BadCertificate {
            path: cert_path.clone(),
            message: e.to_string(),
        })?;
    if chain.is_empty() {
        return Err(TlsError::NoCertificate { path: cert_path });
    }
    let key = PrivateKeyDer::from_pem_slice(key).map_err(|e| TlsError::BadKey {
        path: key_path.clone(),
        message: e.to_string(),
    })?;
    CertifiedKey::from_der(chain, key, &provider()).map_err(|e| TlsError::Mismatch {
        cert: cert_path,
        key: key_path,
        message: e.to_string(),
    })
}

fn read_dir_files(dir: &Path) -> Result<FileBytes, TlsError> {
    Ok((read(&dir.join(CERT_FILE))?, read(&dir.join(KEY_FILE))?))
}

struct Loaded {
    key: Arc<CertifiedKey>,
    files: FileBytes,
    checked: Instant,
}

/// Serves the certificate of a directory and re-reads it when the files change. A change that
/// does not parse (a half-written pair, a key that does not match) is logged and the previous
/// certificate kept, so a bad rotation never takes the endpoint down.
pub struct ReloadingCert {
    dir: PathBuf,
    check_every: Duration,
    loaded: Mutex<Loaded>,
}

impl fmt::Debug for ReloadingCert {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReloadingCert")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl ReloadingCert {
    /// Loads the certificate of `dir`; an unreadable or invalid pair is an error at start.
    pub fn load(dir: &Path, check_every: Duration) -> Result<Self, TlsError> {
        let files = read_dir_files(dir)?;
        let key = Arc::new(parse(dir, &files)?);
        Ok(ReloadingCert {
            dir: dir.to_path_buf(),
            check_every,
            loaded: Mutex::new(Loaded {
                key,
                files,
                checked: Instant::now(),
            }),
        })
    }

    /// The certificate to serve now, re-read first if the check interval has passed and the
    /// files changed.
    pub fn current(&self) -> Arc<CertifiedKey> {
        let mut loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        if loaded.checked.elapsed() >= self.check_every {
            loaded.checked = Instant::now();
            match read_dir_files(&self.dir) {
                Ok(files) if files != loaded.files => match parse(&self.dir, &files) {
                    Ok(key) => {
                        tracing::info!(dir = %self.dir.display(), "the metrics certificate changed; serving the new one");
                        loaded.key = Arc::new(key);
                        loaded.files = files;
                    }
                    Err(error) => {
                        tracing::warn!(%error, "the metrics certificate changed but cannot be used; still serving the previous one");
                    }
                },
                Ok(_) => {}
                Err(error) => {
                    tracing::warn!(%error, "cannot re-read the metrics certificate; still serving the previous one");
                }
            }
        }
        loaded.key.clone()
    }
}

impl ResolvesServerCert for ReloadingCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}

/// A server configuration serving the certificate of `cert_dir` (reloaded on change), or a
/// self-signed one when there is none. HTTP/1.1 only: Prometheus scrapes over HTTP/1.1, and
/// not offering HTTP/2 avoids its rapid-reset and stream-exhaustion attack surface, as
/// kubebuilder v4 does by default.
pub fn server_config(cert_dir: Option<&Path>) -> Result<Arc<ServerConfig>, TlsError> {
    let builder =
        ServerConfig::builder_with_provider(provider()).with_safe_default_protocol_versions()?;
    let resolver: Arc<dyn ResolvesServerCert> = match cert_dir {
        Some(dir) => Arc::new(ReloadingCert::load(dir, RELOAD_CHECK_INTERVAL)?),
        None => Arc::new(SelfSigned(Arc::new(self_signed()?))),
    };
    let mut config = builder.with_no_client_auth().with_cert_resolver(resolver);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// The certificate generated at start, served for the life of the process.
#[derive(Debug)]
struct SelfSigned(Arc<CertifiedKey>);

impl ResolvesServerCert for SelfSigned {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_pair(dir: &Path, name: &str) -> Vec<u8> {
        let generated = rcgen::generate_simple_self_signed(vec![name.to_string()]).unwrap();
        std::fs::write(dir.join(CERT_FILE), generated.cert.pem()).unwrap();
        std::fs::write(dir.join(KEY_FILE), generated.signing_key.serialize_pem()).unwrap();
        generated.cert.der().to_vec()
    }

    fn served(cert: &ReloadingCert) -> Vec<u8> {
        cert.current().cert[0].to_vec()
    }

    #[test]
    fn a_self_signed_certificate_is_generated() {
        let key = self_signed().unwrap();
        assert_eq!(key.cert.len(), 1);
        assert!(key.keys_match().is_ok());
        assert!(server_config(None).is_ok());
    }

    #[test]
    fn a_replaced_certificate_is_served_and_a_broken_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let first = write_pair(dir.path(), "first");
        let cert = ReloadingCert::load(dir.path(), Duration::ZERO).unwrap();
        assert_eq!(served(&cert), first);

        let second = write_pair(dir.path(), "second");
        assert_eq!(served(&cert), second);

        // A key that belongs to another certificate: the previous pair stays.
        let other = rcgen::KeyPair::generate().unwrap();
        std::fs::write(dir.path().join(KEY_FILE), other.serialize_pem()).unwrap();
        assert_eq!(served(&cert), second);
        // Half-written files, or none: the same.
        std::fs::write(dir.path().join(CERT_FILE), "-----BEGIN CERT").unwrap();
        assert_eq!(served(&cert), second);
        std::fs::remove_file(dir.path().join(CERT_FILE)).unwrap();
        assert_eq!(served(&cert), second);
    }

    #[test]
    fn changes_are_looked_for_at_most_once_per_interval() {
        let dir = tempfile::tempdir().unwrap();
        let first = write_pair(dir.path(), "first");
        let cert = ReloadingCert::load(dir.path(), Duration::from_secs(3600)).unwrap();
        write_pair(dir.path(), "second");
        assert_eq!(served(&cert), first);
    }

    #[test]
    fn bad_files_fail_at_start_with_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let err = ReloadingCert::load(dir.path(), Duration::ZERO).unwrap_err();
        assert!(err.to_string().contains(CERT_FILE), "{err}");
        write_pair(dir.path(), "x");
        std::fs::write(dir.path().join(KEY_FILE), "not a key").unwrap();
        let err = ReloadingCert::load(dir.path(), Duration::ZERO).unwrap_err();
        assert!(err.to_string().contains(KEY_FILE), "{err}");
        std::fs::write(
            dir.path().join(KEY_FILE),
            rcgen::KeyPair::generate().unwrap().serialize_pem(),
        )
        .unwrap();
        let err = ReloadingCert::load(dir.path(), Duration::ZERO).unwrap_err();
        assert!(err.to_string().contains("does not belong"), "{err}");
    }
}
