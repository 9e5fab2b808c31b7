//! A minimal HTTPS client for the `--metrics-secure` tests, behaving like `curl -k`: it accepts
//! any server certificate (the manager's is self-signed, or one the test made) and reports the
//! one it was shown, so a test can see which certificate is served.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context as _, Result};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_rustls::TlsConnector;

/// What a GET returned.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    /// Headers and body, as received.
    pub text: String,
    /// SHA-256 of the certificate the server presented.
    pub fingerprint: Vec<u8>,
}

#[derive(Debug)]
struct AcceptAnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// SHA-256 of a DER certificate.
pub fn fingerprint(der: &[u8]) -> Vec<u8> {
    ring::digest::digest(&ring::digest::SHA256, der)
        .as_ref()
        .to_vec()
}

/// `curl -k [-H "Authorization: Bearer TOKEN"] https://ADDR/PATH`.
pub async fn get(addr: SocketAddr, path: &str, token: Option<&str>) -> Result<Answer> {
    let mut tls = connect(addr).await?;
    let fingerprint = tls
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|c| c.first())
        .map(|c| fingerprint(c))
        .context("the server presented no certificate")?;
    let authorization = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    tls.write_all(
        format!(
            "GET {path} HTTP/1.1\r\nHost: localhost\r\n{authorization}Connection: close\r\n\r\n"
        )
        .as_bytes(),
    )
    .await?;
    let mut raw = Vec::new();
    // A server that closes without close_notify is an error for rustls; what arrived counts.
    let _ = tls.read_to_end(&mut raw).await;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .with_context(|| format!("no HTTP status in {text:?}"))?;
    Ok(Answer {
        status,
        text,
        fingerprint,
    })
}

/// A TLS connection to `addr` that accepts any certificate, as `curl -k` does.
pub async fn connect(
    addr: SocketAddr,
) -> Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate(provider)))
        .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(addr).await?;
    TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("localhost")?, tcp)
        .await
        .context("TLS handshake")
}

/// One keep-alive HTTPS connection, for many requests without a handshake each.
pub struct KeepAlive {
    tls: tokio_rustls::client::TlsStream<tokio::net::TcpStream>,
    buffered: Vec<u8>,
}

impl KeepAlive {
    pub async fn open(addr: SocketAddr) -> Result<KeepAlive> {
        Ok(KeepAlive {
            tls: connect(addr).await?,
            buffered: Vec::new(),
        })
    }

    /// `method path` with the bearer `token`; the status and the whole answer. The body is read
    /// by its `Content-Length` (none for HEAD).
    pub async fn request(
        &mut self,
        method: &str,
        path: &str,
        token: Option<&str>,
    ) -> Result<(u16, String)> {
        let authorization = token
            .map(|t| format!("Authorization: Bearer {t}\r\n"))
            .unwrap_or_default();
        self.tls
            .write_all(
                format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\n{authorization}\r\n")
                    .as_bytes(),
            )
            .await?;
        let mut chunk = [0u8; 16 * 1024];
        loop {
            if let Some(end) = self.buffered.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&self.buffered[..end]).into_owned();
                let length: usize = if method == "HEAD" {
                    0
                } else {
                    head.lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .and_then(|v| v.trim().parse().ok())
                        })
                        .unwrap_or(0)
                };
                let total = end + 4 + length;
                if self.buffered.len() >= total {
                    let answer: Vec<u8> = self.buffered.drain(..total).collect();
                    let text = String::from_utf8_lossy(&answer).into_owned();
                    let status = text
                        .split_whitespace()
                        .nth(1)
                        .and_then(|s| s.parse().ok())
                        .with_context(|| format!("no HTTP status in {text:?}"))?;
                    return Ok((status, text));
                }
            }
            let n = self.tls.read(&mut chunk).await?;
            anyhow::ensure!(n > 0, "the server closed the connection");
            self.buffered.extend_from_slice(&chunk[..n]);
        }
    }
}
