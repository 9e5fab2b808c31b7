//! TLS for the metrics endpoint: where the certificate comes from and how a replaced certificate
//! is picked up. Handshakes happen in [`crate::server`], with a timeout.
//!
//! As in a kubebuilder v4 project, the certificate is either read from a directory
//! (`--metrics-cert-path`) holding the certificate and the key (`--metrics-cert-name`,
//! `--metrics-cert-key`: `tls.crt` and `tls.key`, as a mounted Secret of cert-manager's has
//! them) or, when none is given, generated at start as a self-signed one (with rcgen), which
//! Prometheus scrapes with `insecure_skip_verify` and `curl` with `-k`. The connection is
//! encrypted either way, so the bearer token a scraper sends is never visible on the network.
//!
//! A Secret is updated in place in a running pod (the kubelet swaps the files), so the
//! certificate is re-read when the files change, without a restart: on a handshake, at most once
//! per [`RELOAD_CHECK_INTERVAL`], the files are read and compared with those loaded. Reading two
//! small files at most once a second per scrape is cheaper than a file watcher and works with
//! the kubelet's symlink swaps, which inotify on the files themselves misses. Each read, and
//! whether it gave a certificate to serve, is told to an [`OnCertificateRead`] (the manager's
//! `certwatcher_*` series, as controller-runtime's certificate watcher counts its reads).
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

/// The certificate's file name by default (`--metrics-cert-name`), as in a
/// `kubernetes.io/tls` Secret.
pub const CERT_FILE: &str = "tls.crt";
/// The private key's file name by default (`--metrics-cert-key`).
pub const KEY_FILE: &str = "tls.key";

/// The certificate's and the key's files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl CertFiles {
    /// `tls.crt` and `tls.key` of `dir`.
    pub fn in_dir(dir: &Path) -> CertFiles {
        CertFiles {
            cert: dir.join(CERT_FILE),
            key: dir.join(KEY_FILE),
        }
    }
}

/// Told of each read of the certificate files: `true` when they gave a certificate to serve.
/// This crate keeps no series; the manager counts them.
#[derive(Clone, Default)]
pub struct OnCertificateRead(Option<Arc<dyn Fn(bool) + Send + Sync>>);

impl OnCertificateRead {
    pub fn new(read: impl Fn(bool) + Send + Sync + 'static) -> Self {
        OnCertificateRead(Some(Arc::new(read)))
    }

    fn told(&self, ok: bool) {
        if let Some(read) = &self.0 {
            read(ok);
        }
    }
}

impl fmt::Debug for OnCertificateRead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "OnCertificateRead(..)"
        } else {
            "OnCertificateRead(none)"
        })
    }
}

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
fn parse(files: &CertFiles, (cert, key): &FileBytes) -> Result<CertifiedKey, TlsError> {
    let cert_path = files.cert.clone();
    let key_path = files.key.clone();
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

fn read_files(files: &CertFiles) -> Result<FileBytes, TlsError> {
    Ok((read(&files.cert)?, read(&files.key)?))
}

struct Loaded {
    key: Arc<CertifiedKey>,
    files: FileBytes,
    checked: Instant,
}

/// Serves the certificate of two files and re-reads it when they change. A change that does
/// not parse (a half-written pair, a key that does not match) is logged and the previous
/// certificate kept, so a bad rotation never takes the endpoint down.
pub struct ReloadingCert {
    files: CertFiles,
    check_every: Duration,
    on_read: OnCertificateRead,
    loaded: Mutex<Loaded>,
}

impl fmt::Debug for ReloadingCert {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReloadingCert")
            .field("files", &self.files)
            .finish_non_exhaustive()
    }
}

impl ReloadingCert {
    /// Loads the certificate of `files`; an unreadable or invalid pair is an error at start.
    pub fn load(
        files: CertFiles,
        check_every: Duration,
        on_read: OnCertificateRead,
    ) -> Result<Self, TlsError> {
        let loaded = read_files(&files).and_then(|bytes| Ok((parse(&files, &bytes)?, bytes)));
        on_read.told(loaded.is_ok());
        let (key, bytes) = loaded?;
        Ok(ReloadingCert {
            files,
            check_every,
            on_read,
            loaded: Mutex::new(Loaded {
                key: Arc::new(key),
                files: bytes,
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
            let ok = self.reread(&mut loaded);
            self.on_read.told(ok);
        }
        loaded.key.clone()
    }

    /// Reads the files again and serves what they hold if it changed and can be used: whether
    /// the read gave a certificate to serve (the one loaded, or a new one).
    fn reread(&self, loaded: &mut Loaded) -> bool {
        match read_files(&self.files) {
            Ok(bytes) if bytes != loaded.files => match parse(&self.files, &bytes) {
                Ok(key) => {
                    tracing::info!(cert = %self.files.cert.display(), "the metrics certificate changed; serving the new one");
                    loaded.key = Arc::new(key);
                    loaded.files = bytes;
                    true
                }
                Err(error) => {
                    tracing::warn!(%error, "the metrics certificate changed but cannot be used; still serving the previous one");
                    false
                }
            },
            Ok(_) => true,
            Err(error) => {
                tracing::warn!(%error, "cannot re-read the metrics certificate; still serving the previous one");
                false
            }
        }
    }
}

impl ResolvesServerCert for ReloadingCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}

/// A server configuration serving the certificate of `files` (reloaded on change), or a
/// self-signed one when there are none. HTTP/1.1 only: Prometheus scrapes over HTTP/1.1, and
/// not offering HTTP/2 avoids its rapid-reset and stream-exhaustion attack surface, as
/// kubebuilder v4 does by default.
pub fn server_config(
    files: Option<CertFiles>,
    on_read: OnCertificateRead,
) -> Result<Arc<ServerConfig>, TlsError> {
    let builder =
        ServerConfig::builder_with_provider(provider()).with_safe_default_protocol_versions()?;
    let resolver: Arc<dyn ResolvesServerCert> = match files {
        Some(files) => Arc::new(ReloadingCert::load(files, RELOAD_CHECK_INTERVAL, on_read)?),
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

    fn load(dir: &Path, check_every: Duration) -> Result<ReloadingCert, TlsError> {
        ReloadingCert::load(
            CertFiles::in_dir(dir),
            check_every,
            OnCertificateRead::default(),
        )
    }

    /// Each read is told, and whether it gave a certificate to serve: at start, then at each
    /// check (unchanged files are a good read; a key of another certificate is not).
    #[test]
    fn every_read_is_told_with_whether_it_could_be_served() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let dir = tempfile::tempdir().unwrap();
        // Files named as `--metrics-cert-name` and `--metrics-cert-key` name them.
        let files = CertFiles {
            cert: dir.path().join("server.pem"),
            key: dir.path().join("server-key.pem"),
        };
        let generated = rcgen::generate_simple_self_signed(vec!["x".to_string()]).unwrap();
        std::fs::write(&files.cert, generated.cert.pem()).unwrap();
        std::fs::write(&files.key, generated.signing_key.serialize_pem()).unwrap();
        let counts = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
        let told = counts.clone();
        let on_read = OnCertificateRead::new(move |ok| {
            told[usize::from(!ok)].fetch_add(1, Ordering::SeqCst);
        });
        let cert = ReloadingCert::load(files.clone(), Duration::ZERO, on_read).unwrap();
        let _ = cert.current();
        let other = rcgen::KeyPair::generate().unwrap();
        std::fs::write(&files.key, other.serialize_pem()).unwrap();
        let _ = cert.current();
        let read = |i: usize| counts[i].load(Ordering::SeqCst);
        assert_eq!((read(0), read(1)), (2, 1));
        assert_eq!(
            cert.current().cert[0].to_vec(),
            generated.cert.der().to_vec()
        );
    }

    #[test]
    fn a_self_signed_certificate_is_generated() {
        let key = self_signed().unwrap();
        assert_eq!(key.cert.len(), 1);
        assert!(key.keys_match().is_ok());
        assert!(server_config(None, OnCertificateRead::default()).is_ok());
    }

    #[test]
    fn a_replaced_certificate_is_served_and_a_broken_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let first = write_pair(dir.path(), "first");
        let cert = load(dir.path(), Duration::ZERO).unwrap();
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
        let cert = load(dir.path(), Duration::from_secs(3600)).unwrap();
        write_pair(dir.path(), "second");
        assert_eq!(served(&cert), first);
    }

    #[test]
    fn bad_files_fail_at_start_with_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let err = load(dir.path(), Duration::ZERO).unwrap_err();
        assert!(err.to_string().contains(CERT_FILE), "{err}");
        write_pair(dir.path(), "x");
        std::fs::write(dir.path().join(KEY_FILE), "not a key").unwrap();
        let err = load(dir.path(), Duration::ZERO).unwrap_err();
        assert!(err.to_string().contains(KEY_FILE), "{err}");
        std::fs::write(
            dir.path().join(KEY_FILE),
            rcgen::KeyPair::generate().unwrap().serialize_pem(),
        )
        .unwrap();
        let err = load(dir.path(), Duration::ZERO).unwrap_err();
        assert!(err.to_string().contains("does not belong"), "{err}");
    }
}
