//! The bearer token of a kubeconfig's `tokenFile` (and of a pod's projected ServiceAccount
//! token, which in-cluster configuration reads the same way), read again when the API server
//! answers 401.
//!
//! kube 5 re-reads a token file only once a minute (`TokenFile` in kube-client's auth), as
//! client-go does. The kubelet rotates a projected token well before it expires, so that
//! usually suffices; but a token revoked or rotated out of band (a ServiceAccount re-created,
//! a kubeconfig rewritten by hand or by a credentials tool) answers 401 to every request
//! until that minute is up, and each 401 used to end a write as a refusal with a five-minute
//! backoff. Here the client reads the file again on a 401 and, when the token changed,
//! sends the request once more with the new one.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http::{HeaderValue, Request, header::AUTHORIZATION};
use tracing::{info, warn};

/// How long a token read from the file is used before the file is read again, 401 or not.
const RELOAD_EVERY: Duration = Duration::from_secs(60);

/// The token file and what was last read from it. Cheap to clone; clones share the token.
#[derive(Clone)]
pub struct TokenFile {
    path: Arc<PathBuf>,
    cached: Arc<Mutex<Cached>>,
}

struct Cached {
    header: HeaderValue,
    read_at: Instant,
    /// The token the API server refused and that the file still holds: said once.
    refused_said: Option<HeaderValue>,
}

/// Why the token file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    #[error("cannot read the token file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the token file {path} does not hold a token usable in a header")]
    Invalid { path: PathBuf },
}

/// `Bearer <token>` for the token in `path`, marked sensitive (kept out of debug output).
fn read_header(path: &Path) -> Result<HeaderValue, TokenFileError> {
    let token = std::fs::read_to_string(path).map_err(|source| TokenFileError::Read {
        path: path.to_owned(),
        source,
    })?;
    let mut header = HeaderValue::from_str(&format!("Bearer {}", token.trim())).map_err(|_| {
        TokenFileError::Invalid {
            path: path.to_owned(),
        }
    })?;
    header.set_sensitive(true);
    Ok(header)
}

impl TokenFile {
    /// The token in `path`, read now: a missing file is an error at startup, as in kube.
    pub fn open(path: impl Into<PathBuf>) -> Result<TokenFile, TokenFileError> {
        let path = path.into();
        let header = read_header(&path)?;
        Ok(TokenFile {
            path: Arc::new(path),
            cached: Arc::new(Mutex::new(Cached {
                header,
                read_at: Instant::now(),
                refused_said: None,
            })),
        })
    }

    fn cached(&self) -> std::sync::MutexGuard<'_, Cached> {
        self.cached.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Put the current token on `request`, reading the file again once a minute. A file that
    /// cannot be read then keeps the last token (client-go and kube do the same).
    pub fn authorize<B>(&self, mut request: Request<B>) -> Request<B> {
        let header = {
            let mut cached = self.cached();
            if cached.read_at.elapsed() >= RELOAD_EVERY {
                if let Ok(header) = read_header(&self.path) {
                    cached.header = header;
                }
                cached.read_at = Instant::now();
            }
            cached.header.clone()
        };
        request.headers_mut().insert(AUTHORIZATION, header);
        request
    }

    /// The API server answered 401 to `sent` (the Authorization header of that request):
    /// read the file again. True when it now holds another token, worth one more try.
    pub fn refused(&self, sent: Option<&HeaderValue>) -> bool {
        let fresh = read_header(&self.path);
        let mut cached = self.cached();
        match fresh {
            Ok(header) => {
                cached.read_at = Instant::now();
                let changed = sent != Some(&header);
                if changed {
                    if cached.header != header {
                        info!(
                            "the API server refused the token (401 Unauthorized); read a new one from {}",
                            self.path.display()
                        );
                    }
                    cached.refused_said = None;
                } else if cached.refused_said.as_ref() != Some(&header) {
                    warn!(
                        "the API server refuses the token in {} (401 Unauthorized); it is read again on every 401 and every minute",
                        self.path.display()
                    );
                    cached.refused_said = Some(header.clone());
                }
                cached.header = header;
                changed
            }
            Err(error) => {
                warn!(%error, "the API server refused the token (401 Unauthorized) and the token file cannot be read again");
                false
            }
        }
    }
}
