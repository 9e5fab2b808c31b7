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
//! The endpoint is reachable from the pod network, so what a client can make the manager ask the
//! API server is bounded:
//! - **two caches**, as kube-apiserver's delegating authenticator and authorizer keep them: "who
//!   is this token" (by the token's SHA-256, so tokens are not kept) and "may this user do this
//!   verb on this path". Each remembers an answer for [`ALLOWED_TTL`] when it is a yes and
//!   [`DENIED_TTL`] when it is a no, and keeps yeses and noes in separate least-recently-used
//!   lists of [`CACHE_ENTRIES`] each, so that a flood of made-up tokens (every one a no) never
//!   pushes out the answer Prometheus relies on. A Prometheus scraping every 15 s costs the API
//!   server two requests a minute; a revoked binding or an expired token stops working within a
//!   minute; a new token of a known user costs only its TokenReview;
//! - **one question for many**: concurrent requests that need the same answer wait for one
//!   review (single flight);
//! - **a few at a time**: at most [`MAX_REVIEWS_IN_FLIGHT`] reviews are in flight; the rest wait;
//! - **a timeout**: a review unanswered after [`REVIEW_TIMEOUT`] (or a wait that long for a turn)
//!   answers `500`, and is not remembered: the next scrape asks again.
//!
//! The verb is the request's method in lower case, as kube-apiserver authorises non-resource
//! URLs: `GET` is `get`, `HEAD` is `head`.
//!
//! `tls.rs` holds the certificate (a directory, reloaded on change, or self-signed);
//! `tests.rs` the unit tests of the caches and the refusals.

pub mod tls;

use std::collections::HashMap;
use std::future::Future;
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec, UserInfo};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use kube::{Client, Resource};
use lru::LruCache;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;

use crate::exposition::Encoder;
use crate::health;
use crate::server::{self, HttpLimits, Transport};
use tls::TlsError;

/// How long a yes is reused: a known token's user, a granted permission
/// (controller-runtime: 1 min for tokens, 5 min for permissions).
pub const ALLOWED_TTL: Duration = Duration::from_secs(60);
/// How long a no is reused: an unknown token, a refused permission
/// (controller-runtime: 1 min for tokens, 30 s for permissions).
pub const DENIED_TTL: Duration = Duration::from_secs(10);
/// How long one review may take (controller-runtime: `TokenAccessReviewTimeout`, 10 s).
pub const REVIEW_TIMEOUT: Duration = Duration::from_secs(10);
/// TokenReviews and SubjectAccessReviews sent at once, at most; further ones wait.
pub const MAX_REVIEWS_IN_FLIGHT: usize = 4;
/// Answers kept per list (yeses and noes, tokens and permissions: four lists).
/// kube-apiserver's webhook authorizer keeps 8192 permissions; its token cache is unbounded.
pub const CACHE_ENTRIES: usize = 1024;
/// The port `/metrics` is served on when secure and no address is given, as in kubebuilder.
pub const SECURE_PORT: u16 = 8443;

/// How the secure metrics endpoint is set up.
#[derive(Clone, Debug)]
pub struct SecureMetrics {
    /// A directory with the certificate and its key (kubebuilder's `--metrics-cert-path`);
    /// `None` generates a self-signed certificate.
    pub cert_dir: Option<PathBuf>,
    /// The certificate's and the key's file names in `cert_dir` (`--metrics-cert-name`,
    /// `--metrics-cert-key`; `tls.crt` and `tls.key`, as in a `kubernetes.io/tls` Secret).
    pub cert_name: String,
    pub key_name: String,
    /// Told of each read of those files (the manager's `certwatcher_*` series).
    pub on_certificate_read: tls::OnCertificateRead,
    /// How long answers are cached.
    pub allowed_ttl: Duration,
    pub denied_ttl: Duration,
    /// How long one TokenReview or SubjectAccessReview may take.
    pub review_timeout: Duration,
    /// The ClusterRole that grants `get` on `/metrics` (the manager's deploy manifests have
    /// one), named in a 403 so that its reader knows what to bind; `None` names none.
    pub reader_role: Option<String>,
}

impl Default for SecureMetrics {
    fn default() -> Self {
        SecureMetrics {
            cert_dir: None,
            cert_name: tls::CERT_FILE.to_string(),
            key_name: tls::KEY_FILE.to_string(),
            on_certificate_read: tls::OnCertificateRead::default(),
            allowed_ttl: ALLOWED_TTL,
            denied_ttl: DENIED_TTL,
            review_timeout: REVIEW_TIMEOUT,
            reader_role: None,
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

/// Why the cluster could not be asked; answered `500`, never remembered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReviewError {
    #[error("the {kind} failed: {message}")]
    Failed { kind: &'static str, message: String },
    #[error("the API server did not answer the {kind} within {timeout:?}")]
    TimedOut {
        kind: &'static str,
        timeout: Duration,
    },
    #[error("{MAX_REVIEWS_IN_FLIGHT} reviews were in flight for {0:?}; no turn for this one")]
    Busy(Duration),
}

/// The token of an `Authorization: Bearer …` header, if there is one.
pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// The RBAC verb of an HTTP method on a non-resource URL, as kube-apiserver maps it
/// (`RequestInfoFactory.NewRequestInfo`: the method in lower case; `HEAD` is `head`, not `get`).
fn verb_of(method: &axum::http::Method) -> String {
    method.as_str().to_ascii_lowercase()
}

/// A cache key: SHA-256 of its parts, each followed by a 0 byte so that ("ab", "c") and
/// ("a", "bc") differ. Fixed-size, and a token is not kept.
type Key = [u8; 32];

fn key(parts: &[&[u8]]) -> Key {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    for part in parts {
        ctx.update(part);
        ctx.update(&[0]);
    }
    let mut key = [0; 32];
    key.copy_from_slice(ctx.finish().as_ref());
    key
}

/// Who a token belongs to.
#[derive(Clone, Debug, PartialEq)]
enum Identity {
    Unknown,
    User(Arc<UserInfo>),
}

/// A review in flight, awaited by every request that needs its answer.
type Pending<V> = Shared<BoxFuture<'static, Result<V, ReviewError>>>;

/// Answers of one kind: remembered for a while in two least-recently-used lists (yeses and
/// noes), and asked once however many requests want the same answer at the same moment.
struct Answers<V> {
    /// Which answers are yeses.
    is_yes: fn(&V) -> bool,
    state: Mutex<AnswersState<V>>,
}

struct AnswersState<V> {
    yes: LruCache<Key, (V, Instant)>,
    no: LruCache<Key, (V, Instant)>,
    asking: HashMap<Key, Pending<V>>,
}

enum Found<V> {
    Known(V),
    Asking(Pending<V>),
    Nothing,
}

impl<V: Clone + Send + Sync + 'static> Answers<V> {
    fn new(is_yes: fn(&V) -> bool, entries: NonZeroUsize) -> Arc<Self> {
        Arc::new(Answers {
            is_yes,
            state: Mutex::new(AnswersState {
                yes: LruCache::new(entries),
                no: LruCache::new(entries),
                asking: HashMap::new(),
            }),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, AnswersState<V>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn find(state: &mut AnswersState<V>, key: &Key) -> Found<V> {
        let now = Instant::now();
        for list in [&mut state.yes, &mut state.no] {
            if let Some((answer, expires)) = list.get(key)
                && now < *expires
            {
                return Found::Known(answer.clone());
            }
        }
        match state.asking.get(key) {
            Some(pending) => Found::Asking(pending.clone()),
            None => Found::Nothing,
        }
    }

    /// The answer for `key`: remembered, or the one being asked, or `ask`ed now once a turn
    /// (a permit of `turns`) is free. The review runs in a task of its own, so that it ends,
    /// frees its turn and is remembered even when every request that wanted it went away.
    async fn get_or_ask(
        self: &Arc<Self>,
        key: Key,
        turns: &Arc<Semaphore>,
        ttl: (Duration, Duration),
        wait: Duration,
        ask: impl Future<Output = Result<V, ReviewError>> + Send + 'static,
    ) -> Result<V, ReviewError> {
        // Looked up in a statement of its own: the lock is released before any await.
        let found = Self::find(&mut self.state(), &key);
        match found {
            Found::Known(answer) => return Ok(answer),
            Found::Asking(pending) => return pending.await,
            Found::Nothing => {}
        }
        let turn = match tokio::time::timeout(wait, turns.clone().acquire_owned()).await {
            Ok(Ok(turn)) => turn,
            _ => return Err(ReviewError::Busy(wait)),
        };
        let pending = {
            let mut state = self.state();
            // Asked, or answered, while this request waited for its turn.
            match Self::find(&mut state, &key) {
                Found::Known(answer) => return Ok(answer),
                Found::Asking(pending) => pending,
                Found::Nothing => {
                    let flight = Flight {
                        answers: self.clone(),
                        key,
                        settled: false,
                    };
                    let task = tokio::spawn(async move {
                        // Declared before the turn, so dropped after it: the turn is free
                        // by the time the next request finds no flight and asks again.
                        let mut flight = flight;
                        let _turn = turn;
                        let answer = ask.await;
                        flight.settle(&answer, ttl);
                        answer
                    });
                    let pending = task
                        .map(|joined| {
                            joined.unwrap_or_else(|error| {
                                Err(ReviewError::Failed {
                                    kind: "review",
                                    message: error.to_string(),
                                })
                            })
                        })
                        .boxed()
                        .shared();
                    state.asking.insert(key, pending.clone());
                    pending
                }
            }
        };
        pending.await
    }

    /// Remembers an answer (errors are not) and ends its flight.
    fn settle(
        &self,
        key: Key,
        answer: &Result<V, ReviewError>,
        (yes_ttl, no_ttl): (Duration, Duration),
    ) {
        let mut state = self.state();
        state.asking.remove(&key);
        if let Ok(answer) = answer {
            let now = Instant::now();
            if (self.is_yes)(answer) {
                state.no.pop(&key);
                state.yes.put(key, (answer.clone(), now + yes_ttl));
            } else {
                state.yes.pop(&key);
                state.no.put(key, (answer.clone(), now + no_ttl));
            }
        }
    }

    #[cfg(test)]
    fn remembered(&self) -> (usize, usize) {
        let state = self.state();
        (state.yes.len(), state.no.len())
    }
}

/// A review in flight, ended however its task ends: a review that panics (or a task that is
/// cancelled) would otherwise leave its entry in `asking` for good, and every later request
/// for that token would await the same failed answer instead of asking again.
struct Flight<V: Clone + Send + Sync + 'static> {
    answers: Arc<Answers<V>>,
    key: Key,
    settled: bool,
}

impl<V: Clone + Send + Sync + 'static> Flight<V> {
    /// Remembers the answer and ends the flight.
    fn settle(&mut self, answer: &Result<V, ReviewError>, ttl: (Duration, Duration)) {
        self.settled = true;
        self.answers.settle(self.key, answer, ttl);
    }
}

impl<V: Clone + Send + Sync + 'static> Drop for Flight<V> {
    fn drop(&mut self) {
        if !self.settled {
            // Nothing is remembered: the next request asks again.
            self.answers.state().asking.remove(&self.key);
        }
    }
}

/// Asks the API server about tokens, remembering its answers for a while.
#[derive(Clone)]
pub struct Authorizer {
    client: Client,
    secure: SecureMetrics,
    /// SHA-256 of the token → who it is.
    tokens: Arc<Answers<Identity>>,
    /// SHA-256 of (user, verb, path) → allowed.
    permissions: Arc<Answers<bool>>,
    /// Turns for reviews in flight, shared by both kinds.
    turns: Arc<Semaphore>,
}

impl Authorizer {
    pub fn new(client: Client, secure: SecureMetrics) -> Self {
        let entries = NonZeroUsize::new(CACHE_ENTRIES).unwrap_or(NonZeroUsize::MIN);
        Authorizer {
            client,
            secure,
            tokens: Answers::new(|i| matches!(i, Identity::User(_)), entries),
            permissions: Answers::new(|allowed| *allowed, entries),
            turns: Arc::new(Semaphore::new(MAX_REVIEWS_IN_FLIGHT)),
        }
    }

    /// The ClusterRole a 403 tells its reader to bind, if any.
    fn reader_role(&self) -> Option<&str> {
        self.secure.reader_role.as_deref()
    }

    fn ttl(&self) -> (Duration, Duration) {
        (self.secure.allowed_ttl, self.secure.denied_ttl)
    }

    /// May the bearer of `token` do `verb` on the non-resource URL `path`? Remembered answers
    /// cost nothing; otherwise a TokenReview and, for a known user, a SubjectAccessReview.
    pub async fn decide(
        &self,
        verb: &str,
        path: &str,
        token: &str,
    ) -> Result<Decision, ReviewError> {
        let timeout = self.secure.review_timeout;
        let identity = self
            .tokens
            .get_or_ask(
                key(&[token.as_bytes()]),
                &self.turns,
                self.ttl(),
                timeout,
                review_token(self.client.clone(), token.to_string(), timeout),
            )
            .await?;
        let user = match identity {
            Identity::Unknown => return Ok(Decision::Unauthenticated),
            Identity::User(user) => user,
        };
        let who = serde_json::to_vec(user.as_ref()).unwrap_or_default();
        let allowed = self
            .permissions
            .get_or_ask(
                key(&[&who, verb.as_bytes(), path.as_bytes()]),
                &self.turns,
                self.ttl(),
                timeout,
                review_access(
                    self.client.clone(),
                    user.clone(),
                    verb.to_string(),
                    path.to_string(),
                    timeout,
                ),
            )
            .await?;
        let user = user.username.clone().unwrap_or_default();
        Ok(if allowed {
            Decision::Allowed { user }
        } else {
            Decision::Forbidden { user }
        })
    }
}

/// `create` of a review, bounded by `timeout`.
async fn create<K>(
    client: Client,
    review: K,
    kind: &'static str,
    timeout: Duration,
) -> Result<K, ReviewError>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::ClusterResourceScope>
        + Clone
        + serde::Serialize
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    match tokio::time::timeout(
        timeout,
        Api::<K>::all(client).create(&PostParams::default(), &review),
    )
    .await
    {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(error)) => Err(ReviewError::Failed {
            kind,
            message: error.to_string(),
        }),
        Err(_) => Err(ReviewError::TimedOut { kind, timeout }),
    }
}

/// Who is `token`? A TokenReview.
async fn review_token(
    client: Client,
    token: String,
    timeout: Duration,
) -> Result<Identity, ReviewError> {
    let review = TokenReview {
        spec: TokenReviewSpec {
            token,
            audiences: None,
        },
        ..Default::default()
    };
    let status = create(client, review, "TokenReview", timeout)
        .await?
        .status
        .unwrap_or_default();
    Ok(match status.user {
        Some(user) if status.authenticated == Some(true) => Identity::User(Arc::new(user)),
        _ => Identity::Unknown,
    })
}

/// May `user` do `verb` on `path`? A SubjectAccessReview.
async fn review_access(
    client: Client,
    user: Arc<UserInfo>,
    verb: String,
    path: String,
    timeout: Duration,
) -> Result<bool, ReviewError> {
    let user = user.as_ref().clone();
    let access = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: user.username,
            groups: user.groups,
            uid: user.uid,
            extra: user.extra,
            non_resource_attributes: Some(NonResourceAttributes {
                path: Some(path),
                verb: Some(verb),
            }),
            resource_attributes: None,
        },
        ..Default::default()
    };
    let access = create(client, access, "SubjectAccessReview", timeout).await?;
    Ok(access.status.is_some_and(|s| s.allowed))
}

/// What a refused request gets back; a 403 names `reader_role`, the ClusterRole to bind.
fn refusal(
    decision: &Decision,
    verb: &str,
    path: &str,
    reader_role: Option<&str>,
) -> Option<Response> {
    match decision {
        Decision::Allowed { .. } => None,
        Decision::Unauthenticated => {
            let mut response = (StatusCode::UNAUTHORIZED, "Unauthorized\n").into_response();
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            Some(response)
        }
        Decision::Forbidden { user } => {
            let hint = match reader_role {
                Some(role) => format!("; bind the ClusterRole {role} to it"),
                None => String::new(),
            };
            let message = format!("Forbidden: user {user:?} may not {verb} {path}{hint}\n");
            Some((StatusCode::FORBIDDEN, message).into_response())
        }
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
                    format!("cannot check the token with the API server: {error}\n"),
                )
                    .into_response();
            }
        },
    };
    match refusal(&decision, &verb, &path, authorizer.reader_role()) {
        Some(response) => {
            tracing::debug!(?decision, %path, "metrics request refused");
            response
        }
        None => next.run(request).await,
    }
}

/// The metrics routes behind the TokenReview / SubjectAccessReview check.
pub fn router(metrics: Encoder, authorizer: Authorizer) -> Router {
    health::metrics_router(metrics).layer(axum::middleware::from_fn_with_state(
        authorizer,
        require_permission,
    ))
}

/// Sets up TLS for `listener` now (so a bad certificate fails the start) and returns the server
/// to run until `shutdown` resolves.
pub fn serve(
    listener: TcpListener,
    metrics: Encoder,
    client: Client,
    secure: SecureMetrics,
    limits: HttpLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<impl Future<Output = std::io::Result<()>> + Send + 'static, TlsError> {
    let files = secure.cert_dir.as_ref().map(|dir| tls::CertFiles {
        cert: dir.join(&secure.cert_name),
        key: dir.join(&secure.key_name),
    });
    let certificate = match &files {
        Some(files) => format!("certificate {}", files.cert.display()),
        None => "self-signed certificate".to_string(),
    };
    let config = tls::server_config(files, secure.on_certificate_read.clone())?;
    let router = router(metrics, Authorizer::new(client, secure));
    Ok(async move {
        let local = listener.local_addr()?;
        tracing::info!(address = %local, "serving metrics on https://{local}/metrics ({certificate}; bearer tokens checked by TokenReview and SubjectAccessReview)");
        let transport = Transport::Tls(TlsAcceptor::from(config));
        server::serve(listener, transport, router, limits, shutdown).await
    })
}

#[cfg(test)]
mod tests;
