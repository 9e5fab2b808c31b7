//! Before any file is written: the address the files carry answers, and the API server's
//! certificate names it. Otherwise every participant's kubectl fails the same way at 0:15
//! (`x509: certificate is valid for 127.0.0.1, not 10.0.0.5`), and the organiser learns why
//! thirty times. The organiser's own credentials and authority are used, at that address.

use std::time::Duration;

use crate::cluster::root_cause;
use crate::messages as m;
use crate::t;

/// Asks the API server at `server` for its version, as the organiser's `config` (its
/// authority, its credentials) would: `Ok` once it answered; `Err` with the line that says
/// that its certificate does not name the address (and how to add it), or that it cannot be
/// reached.
pub async fn answers_at(mut config: kube::Config, server: &http::Uri) -> Result<(), String> {
    config.cluster_url = server.clone();
    let shown = server.to_string();
    let shown = shown.trim_end_matches('/');
    let unreachable = |cause: String| t!(m::ROOM_SERVER_UNREACHABLE, server = shown, cause = cause);
    let client = kube::Client::try_from(config).map_err(|e| unreachable(root_cause(&e)))?;
    let asked = tokio::time::timeout(Duration::from_secs(10), client.apiserver_version()).await;
    let error = match asked {
        Ok(Ok(_)) => return Ok(()),
        // It answered: whatever it said (401 for another cluster's credentials, say), the
        // address and its certificate are good.
        Ok(Err(kube::Error::Api(_))) => return Ok(()),
        Ok(Err(e)) => e,
        Err(_) => return Err(unreachable("no answer within 10 s".to_string())),
    };
    if names_another(&error) {
        Err(t!(
            m::ROOM_SERVER_NOT_NAMED,
            server = shown,
            host = server.host().unwrap_or_default(),
            cause = root_cause(&error)
        ))
    } else {
        Err(unreachable(root_cause(&error)))
    }
}

/// Whether TLS failed because the server's certificate is not valid for the name asked (rustls
/// says `NotValidForName`), anywhere in the error's chain. An `io::Error` hides what it wraps
/// from `source()` (and hyper-rustls wraps tokio-rustls's `io::Error` in another), so the
/// errors inside each are looked at too.
fn names_another(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(error);
    while let Some(e) = next {
        if wraps_wrong_name(e) {
            return true;
        }
        next = e.source();
    }
    false
}

/// Whether `e` is rustls's `NotValidForName`, or `io::Error`s around it.
fn wraps_wrong_name(e: &(dyn std::error::Error + 'static)) -> bool {
    use rustls::{CertificateError, Error as Tls};
    if let Some(io) = e.downcast_ref::<std::io::Error>() {
        return io
            .get_ref()
            .is_some_and(|inner| wraps_wrong_name(inner as &(dyn std::error::Error + 'static)));
    }
    matches!(
        e.downcast_ref::<Tls>(),
        Some(Tls::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. }
        ))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_certificate_for_another_name_is_told_from_other_failures() {
        let wrong_name =
            rustls::Error::InvalidCertificate(rustls::CertificateError::NotValidForName);
        let wrapped = std::io::Error::new(std::io::ErrorKind::InvalidData, wrong_name);
        // hyper-rustls puts tokio-rustls's io::Error into one of its own.
        let twice = std::io::Error::other(wrapped);
        assert!(names_another(&twice));
        let expired = rustls::Error::InvalidCertificate(rustls::CertificateError::Expired);
        assert!(!names_another(&std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            expired
        )));
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert!(!names_another(&refused));
    }
}
