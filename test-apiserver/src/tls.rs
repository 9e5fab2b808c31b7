//! HTTPS, when a test asks for it ([`crate::ServerOptions::https`], the binary's `--https`).
//!
//! Why a test needs it: kubectl sends a bearer token only over TLS (client-go leaves the
//! credentials out of a plain-HTTP request, kubernetes/kubectl#744), so over plain HTTP kubectl
//! is always the server's administrator and never the user a kubeconfig's token names. And a
//! kubeconfig that names its certificate authority by *file path*, as minikube writes its own
//! (`certificate-authority: ~/.minikube/ca.crt`), is what a tool that hands kubeconfigs to other
//! machines must turn into one that works there; a test can only see that with a server whose
//! authority lives in a file.
//!
//! At start the server makes a certificate authority of its own (rcgen), a serving certificate
//! it signs for `127.0.0.1`, and a client certificate with its key; the kubeconfig names the
//! three as files in `<kubeconfig>.certs/` (`ca.crt`, `client.crt`, `client.key`), as
//! minikube's does. The server does not ask for client certificates: a request without a bearer
//! token is the administrator's, as over plain HTTP (see [`crate::rbac`]); the client files are
//! there so that the kubeconfig has minikube's shape and a client loads them as it would there.
//! ALPN offers `http/1.1` only: the server speaks HTTP/1.1 (kube-apiserver offers `h2` too, and
//! kubectl and kube-rs use HTTP/1.1 where it is all that is offered).

use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

use crate::faults::{FaultyListener, FaultyStream};

/// How long a client may take over its TLS handshake before the connection is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// What the server made at start: the authority's certificate (for clients to trust), the
/// serving configuration, and where the kubeconfig's files are.
pub(crate) struct Identity {
    /// The certificate authority, DER (what [`crate::TestServer::client`] trusts).
    pub(crate) ca_der: Vec<u8>,
    /// The rustls configuration of the serving side.
    pub(crate) acceptor: TlsAcceptor,
    /// The folder of `ca.crt`, `client.crt` and `client.key`.
    pub(crate) dir: PathBuf,
}

impl Identity {
    /// `ca.crt`: the certificate authority's file, as the kubeconfig names it.
    pub(crate) fn ca_file(&self) -> PathBuf {
        self.dir.join("ca.crt")
    }
}

/// Why the server could not make its certificates.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TlsError {
    #[error("cannot make a certificate: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("cannot configure TLS: {0}")]
    Config(#[from] rustls::Error),
    #[error("cannot write {path}: {source}")]
    Write { path: PathBuf, source: io::Error },
}

/// Makes the authority, the serving certificate for `names` and the client certificate,
/// writes the kubeconfig's files into `dir`, and returns what the server serves with.
pub(crate) fn identity(names: &[String], dir: &Path) -> Result<Identity, TlsError> {
    let ca = authority()?;
    let server_key = KeyPair::generate()?;
    let mut serving = CertificateParams::new(names.to_vec())?;
    serving
        .distinguished_name
        .push(DnType::CommonName, "test-apiserver");
    serving.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let serving = serving.signed_by(&server_key, &ca)?;
    let client_key = KeyPair::generate()?;
    let mut client = CertificateParams::new(Vec::<String>::new())?;
    // The subject of minikube's and kubeadm's administrator certificate.
    client
        .distinguished_name
        .push(DnType::CommonName, "kubernetes-admin");
    client
        .distinguished_name
        .push(DnType::OrganizationName, "system:masters");
    client.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let client = client.signed_by(&client_key, &ca)?;

    write(dir, "ca.crt", &ca.pem(), false)?;
    write(dir, "client.crt", &client.pem(), false)?;
    write(dir, "client.key", &client_key.serialize_pem(), true)?;

    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(server_key.serialize_der()));
    let chain = vec![
        serving.der().clone(),
        CertificateDer::from(ca.der().to_vec()),
    ];
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(chain, key)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Identity {
        ca_der: ca.der().to_vec(),
        acceptor: TlsAcceptor::from(Arc::new(config)),
        dir: dir.to_path_buf(),
    })
}

/// A certificate authority of the server's own, as kubeadm's and minikube's `ca.crt`.
fn authority() -> Result<CertifiedIssuer<'static, KeyPair>, TlsError> {
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params
        .distinguished_name
        .push(DnType::CommonName, "test-apiserver-ca");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    Ok(CertifiedIssuer::self_signed(params, KeyPair::generate()?)?)
}

/// Writes one of the kubeconfig's files; a key only its owner may read.
fn write(dir: &Path, name: &str, text: &str, private: bool) -> Result<(), TlsError> {
    let path = dir.join(name);
    let failed = |source| TlsError::Write {
        path: path.clone(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(failed)?;
    std::fs::write(&path, text).map_err(failed)?;
    #[cfg(unix)]
    if private {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).map_err(failed)?;
    }
    #[cfg(not(unix))]
    let _ = private;
    Ok(())
}

/// A listener for `axum::serve` that speaks TLS over the server's [`FaultyListener`] (so that
/// outages work as over plain HTTP). Handshakes run on tasks of their own: a client that
/// stalls in one never holds up the next connection.
pub(crate) struct TlsListener {
    inner: FaultyListener,
    acceptor: TlsAcceptor,
    handshakes: JoinSet<Option<(TlsStream<FaultyStream>, SocketAddr)>>,
}

impl TlsListener {
    pub(crate) fn new(inner: FaultyListener, acceptor: TlsAcceptor) -> TlsListener {
        TlsListener {
            inner,
            acceptor,
            handshakes: JoinSet::new(),
        }
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<FaultyStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, SocketAddr) {
        loop {
            tokio::select! {
                (stream, addr) = axum::serve::Listener::accept(&mut self.inner) => {
                    let acceptor = self.acceptor.clone();
                    self.handshakes.spawn(async move {
                        match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                            Ok(Ok(tls)) => Some((tls, addr)),
                            Ok(Err(e)) => {
                                tracing::debug!(%addr, "TLS handshake: {e}");
                                None
                            }
                            Err(_) => {
                                tracing::debug!(%addr, "TLS handshake timed out");
                                None
                            }
                        }
                    });
                }
                Some(done) = self.handshakes.join_next(), if !self.handshakes.is_empty() => {
                    if let Ok(Some(ready)) = done {
                        return ready;
                    }
                }
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        axum::serve::Listener::local_addr(&self.inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kubeconfigs_files_are_written_and_the_key_is_private() {
        let dir = tempfile::tempdir().expect("a directory");
        let made = identity(&["127.0.0.1".to_string()], dir.path()).expect("certificates");
        for file in ["ca.crt", "client.crt", "client.key"] {
            let text = std::fs::read_to_string(dir.path().join(file)).expect(file);
            assert!(text.starts_with("-----BEGIN "), "{file}: {text}");
        }
        assert_eq!(made.ca_file(), dir.path().join("ca.crt"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join("client.key"))
                .expect("the key")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
