//! `--metrics-secure`: `/metrics` over HTTPS, readable only by who the cluster says may read it.
//!
//! This is what a kubebuilder v4 manager does (controller-runtime's
//! `filters.WithAuthenticationAndAuthorization`): the scraper sends a bearer token (a
//! ServiceAccount token, e.g. Prometheus' own); the manager asks the API server who that is (a
//! TokenReview) and whether that user may `get` the non-resource URL `/metrics` (a
//! SubjectAccessReview). So access to the metrics is granted like any other access in the
//! cluster, by binding a ClusterRole (`metrics-reader` in `deploy/`), and the manager itself
//! needs only `create` on those two review kinds.
//!
//! Answers are cached per token and path, [`ALLOWED_TTL`] when allowed and [`DENIED_TTL`] when
//! not, so a Prometheus scraping every 15 s costs the API server two requests a minute instead
//! of eight, while a revoked binding or an expired token stops working within a minute. Errors
//! talking to the API server are not cached: the next scrape asks again.

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use kube::{Client, Resource};
use tokio::net::TcpListener;

use crate::health;
use crate::metrics::Metrics;
use crate::serving::HttpLimits;
use crate::tls::{self, TlsError, TlsListener};

/// How long an allowed answer is reused.
pub const ALLOWED_TTL: Duration = Duration::from_secs(60);
/// How long a refusal (unknown token, or a user without the permission) is reused.
pub const DENIED_TTL: Duration = Duration::from_secs(10);
/// How long one review may take (controller-runtime: `TokenAccessReviewTimeout`, 10 s).
pub const REVIEW_TIMEOUT: Duration = Duration::from_secs(10);
/// TokenReviews and SubjectAccessReviews sent at once, at most; further ones wait.
pub const MAX_REVIEWS_IN_FLIGHT: usize = 4;
/// The port `/metrics` is served on when secure and no address is given, as in kubebuilder.
pub const SECURE_PORT: u16 = 8443;
/// At most this many answers are cached; beyond, the cache starts over, so that a client
/// sending random tokens cannot grow the manager's memory.
const MAX_CACHED: usize = 1024;

/// How the secure metrics endpoint is set up.
#[derive(Clone, Debug)]
pub struct SecureMetrics {
    /// A directory with `tls.crt` and `tls.key`; `None` generates a self-signed certificate.
    pub cert_dir: Option<PathBuf>,
    /// How long answers are cached.
    pub allowed_ttl: Duration,
    pub denied_ttl: Duration,
    /// How long one TokenReview or SubjectAccessReview may take.
    pub review_timeout: Duration,
}

impl Default for SecureMetrics {
    fn default() -> Self {
        SecureMetrics {
            cert_dir: None,
            allowed_ttl: ALLOWED_TTL,
            denied_ttl: DENIED_TTL,
            review_timeout: REVIEW_TIMEOUT,
        }
    }
}

/// What the cluster says about a request's bearer token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// No token, or one the API server does not recognise: 401.
    Unauthenticated,
    /// A known user without the permission: 403.
    Forbidden { user: String },
    /// A known user who may get the path: 200.
    Allowed { user: String },
}

impl Decision {
    fn ttl(&self, secure: &SecureMetrics) -> Duration {
        match self {
            Decision::Allowed { .. } => secure.allowed_ttl,
            Decision::Unauthenticated | Decision::Forbidden { .. } => secure.denied_ttl,
        }
    }
}

/// The token of an `Authorization: Bearer …` header, if there is one.
pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// The RBAC verb of an HTTP method on a non-resource URL, as kube-apiserver maps it.
fn verb_of(method: &axum::http::Method) -> String {
    match method.as_str() {
        "GET" | "HEAD" => "get".to_string(),
        other => other.to_ascii_lowercase(),
    }
}

/// Answers by key, each with the instant it expires.
type Cache = HashMap<[u8; 32], (Decision, Instant)>;

/// Asks the API server about tokens, remembering its answers for a while.
#[derive(Clone)]
pub struct Authorizer {
    client: Client,
    secure: SecureMetrics,
    /// SHA-256 of (verb, path, token) → the answer and when it expires. Hashing keeps the tokens
    /// themselves out of the manager's memory.
    cache: Arc<Mutex<Cache>>,
}

impl Authorizer {
    pub fn new(client: Client, secure: SecureMetrics) -> Self {
        Authorizer {
            client,
            secure,
            cache: Arc::default(),
        }
    }

    fn key(verb: &str, path: &str, token: &str) -> [u8; 32] {
        let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
        for part in [verb, path, token] {
            ctx.update(part.as_bytes());
            ctx.update(&[0]);
        }
        let mut key = [0; 32];
        key.copy_from_slice(ctx.finish().as_ref());
        key
    }

    fn cached(&self, key: &[u8; 32]) -> Option<Decision> {
        let cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        cache
            .get(key)
            .filter(|(_, expires)| Instant::now() < *expires)
            .map(|(decision, _)| decision.clone())
    }

    fn remember(&self, key: [u8; 32], decision: &Decision) {
        let now = Instant::now();
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        if cache.len() >= MAX_CACHED {
            cache.retain(|_, (_, expires)| now < *expires);
            if cache.len() >= MAX_CACHED {
                cache.clear();
            }
        }
        cache.insert(key, (decision.clone(), now + decision.ttl(&self.secure)));
    }

    /// May the bearer of `token` do `verb` on the non-resource URL `path`? A cached answer
    /// costs nothing; otherwise a TokenReview and, for a known user, a SubjectAccessReview.
    pub async fn decide(
        &self,
        verb: &str,
        path: &str,
        token: &str,
    ) -> Result<Decision, kube::Error> {
        let key = Self::key(verb, path, token);
        if let Some(decision) = self.cached(&key) {
            return Ok(decision);
        }
        let decision = self.ask(verb, path, token).await?;
        self.remember(key, &decision);
        Ok(decision)
    }

    async fn ask(&self, verb: &str, path: &str, token: &str) -> Result<Decision, kube::Error> {
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.to_string()),
                audiences: None,
            },
            ..Default::default()
        };
        let review = Api::<TokenReview>::all(self.client.clone())
            .create(&PostParams::default(), &review)
            .await?;
        let status = review.status.unwrap_or_default();
        let user = match status.user {
            Some(user) if status.authenticated == Some(true) => user,
            _ => return Ok(Decision::Unauthenticated),
        };
        let username = user.username.clone().unwrap_or_default();
        let access = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: user.username,
                groups: user.groups,
                uid: user.uid,
                extra: user.extra,
                non_resource_attributes: Some(NonResourceAttributes {
                    path: Some(path.to_string()),
                    verb: Some(verb.to_string()),
                }),
                resource_attributes: None,
            },
            ..Default::default()
        };
        let access = Api::<SubjectAccessReview>::all(self.client.clone())
            .create(&PostParams::default(), &access)
            .await?;
        Ok(if access.status.is_some_and(|s| s.allowed) {
            Decision::Allowed { user: username }
        } else {
            Decision::Forbidden { user: username }
        })
    }
}

/// What a refused request gets back.
fn refusal(decision: &Decision, verb: &str, path: &str) -> Option<Response> {
    match decision {
        Decision::Allowed { .. } => None,
        Decision::Unauthenticated => {
            let mut response = (StatusCode::UNAUTHORIZED, "Unauthorized\n").into_response();
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            Some(response)
        }
        Decision::Forbidden { user } => Some(
            (
                StatusCode::FORBIDDEN,
                format!(
                    "Forbidden: user {user:?} may not {verb} {path}; bind the ClusterRole \
                     math-controller-metrics-reader to it\n"
                ),
            )
                .into_response(),
        ),
    }
}

/// The middleware: lets a request through only when the cluster allows its bearer.
async fn require_permission(
    State(authorizer): State<Authorizer>,
    request: Request,
    next: Next,
) -> Response {
    let verb = verb_of(request.method());
    let path = request.uri().path().to_string();
    let decision = match bearer_token(request.headers()) {
        None => Decision::Unauthenticated,
        Some(token) => match authorizer.decide(&verb, &path, token).await {
            Ok(decision) => decision,
            Err(error) => {
                tracing::warn!(%error, "cannot check a metrics request's token with the API server");
                return (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!(
                        "cannot check the token with the API server ({} or {} failed)\n",
                        TokenReview::kind(&()),
                        SubjectAccessReview::kind(&())
                    ),
                )
                    .into_response();
            }
        },
    };
    match refusal(&decision, &verb, &path) {
        Some(response) => {
            tracing::debug!(?decision, %path, "metrics request refused");
            response
        }
        None => next.run(request).await,
    }
}

/// The metrics routes behind the TokenReview / SubjectAccessReview check.
pub fn router(metrics: Metrics, authorizer: Authorizer) -> Router {
    health::metrics_router(metrics).layer(axum::middleware::from_fn_with_state(
        authorizer,
        require_permission,
    ))
}

/// Sets up TLS for `listener` now (so a bad certificate fails the start) and returns the server
/// to run until `shutdown` resolves.
pub fn serve(
    listener: TcpListener,
    metrics: Metrics,
    client: Client,
    secure: SecureMetrics,
    _limits: HttpLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<impl Future<Output = std::io::Result<()>> + Send + 'static, TlsError> {
    let config = tls::server_config(secure.cert_dir.as_deref())?;
    let certificate = match &secure.cert_dir {
        Some(dir) => format!("certificate from {}", dir.display()),
        None => "self-signed certificate".to_string(),
    };
    let router = router(metrics, Authorizer::new(client, secure));
    Ok(async move {
        let local = listener.local_addr()?;
        let listener = TlsListener::new(listener, config)?;
        tracing::info!(address = %local, "serving metrics on https://{local}/metrics ({certificate}; bearer tokens checked by TokenReview and SubjectAccessReview)");
        axum::serve(listener, router)
            .with_graceful_shutdown(shutdown)
            .await
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
        h
    }

    #[test]
    fn bearer_tokens_are_read_from_the_authorization_header() {
        assert_eq!(bearer_token(&HeaderMap::new()), None);
        assert_eq!(bearer_token(&headers("Bearer abc")), Some("abc"));
        assert_eq!(bearer_token(&headers("bearer  abc ")), Some("abc"));
        assert_eq!(bearer_token(&headers("Basic abc")), None);
        assert_eq!(bearer_token(&headers("Bearer ")), None);
        assert_eq!(bearer_token(&headers("Bearer")), None);
    }

    #[test]
    fn decisions_map_to_401_403_and_through() {
        assert_eq!(
            refusal(&Decision::Unauthenticated, "get", "/metrics").map(|r| r.status()),
            Some(StatusCode::UNAUTHORIZED)
        );
        assert_eq!(
            refusal(&Decision::Forbidden { user: "u".into() }, "get", "/metrics")
                .map(|r| r.status()),
            Some(StatusCode::FORBIDDEN)
        );
        assert!(refusal(&Decision::Allowed { user: "u".into() }, "get", "/metrics").is_none());
    }

    #[test]
    fn refusals_are_cached_shorter_than_permissions() {
        let s = SecureMetrics::default();
        assert_eq!(Decision::Allowed { user: "u".into() }.ttl(&s), ALLOWED_TTL);
        assert_eq!(Decision::Unauthenticated.ttl(&s), DENIED_TTL);
        assert!(DENIED_TTL < ALLOWED_TTL);
    }

    #[test]
    fn cache_keys_depend_on_verb_path_and_token() {
        let k = Authorizer::key("get", "/metrics", "t");
        assert_eq!(k, Authorizer::key("get", "/metrics", "t"));
        assert_ne!(k, Authorizer::key("get", "/metrics", "u"));
        assert_ne!(k, Authorizer::key("get", "/other", "t"));
        assert_ne!(k, Authorizer::key("post", "/metrics", "t"));
        // The separator keeps ("ab", "c") and ("a", "bc") apart.
        assert_ne!(
            Authorizer::key("get", "/ab", "c"),
            Authorizer::key("get", "/a", "bc")
        );
    }
}
