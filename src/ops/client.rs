//! The manager's `kube::Client` settings that kube's defaults leave out: a read timeout, a
//! bound on how long a `Retry-After` and the client's retries may hold a request, 429s
//! counted, a token file read again on a 401, and every try counted by its answer's code
//! ([`CountRequestsLayer`], client-go's `rest_client_requests_total`).
//!
//! kube 5 sets no read timeout (`Config::read_timeout` is `None`), so a request the API server
//! accepted but never answers (a hung connection, a load balancer that dropped it silently)
//! blocks its reconcile for good, and with it a shutdown. The read timeout is a socket-level
//! inactivity timeout (hyper-timeout): the request fails when no byte has arrived for that long,
//! and the error policy retries it. It applies to every connection, watches included, so the
//! watches ask the API server to end them (`timeoutSeconds`, see [`watch_timeout_seconds`])
//! before a quiet one could be cut; the watcher then resumes from its last resourceVersion
//! without a relist, and a watch on a dead connection is noticed within the read timeout.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::header::{AUTHORIZATION, RETRY_AFTER};
use http::{HeaderValue, Request, Response, StatusCode};
use kube::client::retry::RetryPolicy;
use kube::client::{Body, ClientBuilder};
use tower::buffer::BufferLayer;
use tower::retry::{Policy, RetryLayer};
use tower::util::MapRequestLayer;
use tower::{BoxError, Layer, Service};

use crate::metrics::Metrics;
use crate::ops::token_file::{TokenFile, TokenFileError};
use crate::scheduler::request_slots::wait_without_slot;

/// How long a request may wait for its next byte from the API server.
pub const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest wait a `Retry-After` buys before a retry. Right after a restart, kube-apiserver
/// answers every custom-resource request `503 … please try again` with `Retry-After: 5` until
/// its CRD informer has synced (about 0.1 s on the real v1.24 here), and kube's retry policy
/// honoured the 5 s: the manager's watches and writes sat idle 4–5 s after the server was
/// back. Overload (priority and fairness) answers 429 with `Retry-After: 1`, kept as it is.
pub const RETRY_AFTER_CAP: Duration = Duration::from_secs(1);

/// How often a request answered 429, 503 or 504 is sent again inside the client. kube's own
/// policy tried 15 times from 5 ms doubling, with no cap on the delay: under a sustained 429
/// (API Priority and Fairness, the manager's flow over its share) one create could sit
/// 160–490 s in the client, holding one of the manager's request slots
/// ([`crate::reconcile::context::Context::requests`]). Ten retries of at most a second each,
/// as client-go (`maxRetries` 10, honouring `Retry-After`), ride out a busy cluster; after
/// them the error goes to the reconcile, whose error policy tries again later, outside any
/// slot; between tries a write lends its slot to others ([`wait_without_slot`]). Three were too few on a real kube-apiserver v1.24 whose priority level gave the
/// manager 3 seats: a Fermat 1000 took 69.7 s instead of 60.5 s, re-planning reconciles
/// whose writes had failed (135 more write requests, 183 log lines about 429s).
pub const MAX_RETRIES: u32 = 10;

/// The longest pause between two tries inside the client.
pub const MAX_RETRY_DELAY: Duration = Duration::from_secs(1);

/// Why the client could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error(transparent)]
    Kube(#[from] kube::Error),
    #[error(transparent)]
    TokenFile(#[from] TokenFileError),
}

/// A client for `config`: kube's own stack, with a bounded retry of 429/503/504
/// ([`MAX_RETRIES`], [`MAX_RETRY_DELAY`], a `Retry-After` honoured up to [`RETRY_AFTER_CAP`]),
/// each 429 counted in `metrics`, and a `tokenFile` read again on a 401 ([`TokenFile`]).
pub fn build(mut config: kube::Config, metrics: &Metrics) -> Result<kube::Client, BuildError> {
    config.default_retry = false;
    let token = take_token_file(&mut config)?;
    let policy = ManagerRetry {
        inner: bounded_retry(),
        token: token.clone(),
        reauthorized: false,
        metrics: metrics.clone(),
    };
    let count = CountRequestsLayer::new(metrics, &config.cluster_url);
    Ok(ClientBuilder::try_from(config)?
        // Below the retry: each try is counted, as client-go counts each attempt.
        .with_layer(&count)
        // Below the retry: every try carries the token of its moment.
        .with_layer(&MapRequestLayer::new(move |request| match &token {
            Some(token) => token.authorize(request),
            None => request,
        }))
        // A retry sends the request again through the service below it, which must be
        // cloneable: kube's stack is a boxed service, so it goes behind a buffer (kube's
        // `Client` puts its whole stack behind one the same way).
        .with_layer(&BufferLayer::new(1024))
        .with_layer(&RetryLayer::new(policy))
        .build())
}

/// kube's server-aware policy, bounded.
fn bounded_retry() -> RetryPolicy {
    match RetryPolicy::new(Duration::from_millis(5), MAX_RETRY_DELAY, MAX_RETRIES, true) {
        Ok(policy) => policy,
        // Constant, valid parameters (min below max): kube's default is the fallback.
        Err(_) => RetryPolicy::server_retry(),
    }
}

/// The kubeconfig's token file, taken out of `config` so that this client, not kube's (which
/// reads it once a minute only), puts the token on each request. An inline token wins, as in
/// kube and kubectl.
fn take_token_file(config: &mut kube::Config) -> Result<Option<TokenFile>, TokenFileError> {
    if config.auth_info.token.is_some() {
        return Ok(None);
    }
    match config.auth_info.token_file.take() {
        Some(path) => TokenFile::open(path).map(Some),
        None => Ok(None),
    }
}

/// The client's retry: kube's bounded policy seeing a `Retry-After` of at most
/// [`RETRY_AFTER_CAP`], counting 429s, and one more try after a 401 when the token file
/// holds a new token.
#[derive(Clone)]
struct ManagerRetry {
    inner: RetryPolicy,
    token: Option<TokenFile>,
    /// This request was already sent again with a new token.
    reauthorized: bool,
    metrics: Metrics,
}

impl<Res> Policy<Request<Body>, Response<Res>, BoxError> for ManagerRetry {
    /// A retry's wait, during which a write lends its slot to others
    /// ([`crate::scheduler::request_slots::wait_without_slot`]).
    type Future = Pin<Box<dyn Future<Output = ()> + Send>>;

    fn retry(
        &mut self,
        request: &mut Request<Body>,
        result: &mut Result<Response<Res>, BoxError>,
    ) -> Option<Self::Future> {
        if let Ok(response) = result {
            match response.status() {
                StatusCode::UNAUTHORIZED => return self.reauthorize(request),
                StatusCode::TOO_MANY_REQUESTS => self.metrics.throttled(),
                _ => {}
            }
            cap_retry_after(response.headers_mut());
        }
        if is_lease(request) {
            return None;
        }
        let wait = self.inner.retry(request, result)?;
        Some(Box::pin(wait_without_slot(wait)))
    }

    fn clone_request(&mut self, request: &Request<Body>) -> Option<Request<Body>> {
        <RetryPolicy as Policy<Request<Body>, Response<Res>, BoxError>>::clone_request(
            &mut self.inner,
            request,
        )
    }
}

impl ManagerRetry {
    /// After a 401: once, at once, if the token file holds another token than the one sent.
    fn reauthorize(
        &mut self,
        request: &Request<Body>,
    ) -> Option<Pin<Box<dyn Future<Output = ()> + Send>>> {
        let token = self.token.as_ref()?;
        if self.reauthorized || !token.refused(request.headers().get(AUTHORIZATION)) {
            return None;
        }
        self.reauthorized = true;
        Some(Box::pin(std::future::ready(())))
    }
}

/// Whether `request` is about a Lease (leader election): never sent again inside the client
/// (issue 48, N11). A renewal held in ten retries of a second each outlived the renew
/// deadline while its body aged (the renewTime and resourceVersion of its first try); the
/// renewal loop tries again itself, a fresh renewal each time, within its deadline
/// ([`crate::ops::leader`]).
fn is_lease(request: &Request<Body>) -> bool {
    request
        .uri()
        .path()
        .starts_with("/apis/coordination.k8s.io/")
}

/// A `Retry-After` in seconds above [`RETRY_AFTER_CAP`] becomes the cap.
fn cap_retry_after(headers: &mut http::HeaderMap) {
    let cap = RETRY_AFTER_CAP.as_secs();
    let seconds = headers
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if seconds.is_some_and(|s| s > cap) {
        headers.insert(RETRY_AFTER, HeaderValue::from(cap));
    }
}

/// kube-runtime's server-side watch timeout when nothing else is asked for.
const KUBE_WATCH_TIMEOUT_SECONDS: u32 = 290;

/// `config` with a read timeout. The timer restarts when a request is written
/// (`reset_reader_on_write`), so the time a pooled connection sat idle does not count against
/// the next response on it.
pub fn with_read_timeout(mut config: kube::Config, read_timeout: Duration) -> kube::Config {
    config.read_timeout = Some(read_timeout);
    config.reset_reader_on_write = true;
    config
}

/// The `timeoutSeconds` a watch asks for: five sixths of the read timeout (25 s for 30 s), so
/// that the server ends a quiet watch before the client would cut it; kube-runtime's 290 s
/// without a read timeout.
pub fn watch_timeout_seconds(read_timeout: Option<Duration>) -> u32 {
    match read_timeout {
        None => KUBE_WATCH_TIMEOUT_SECONDS,
        Some(timeout) => {
            let seconds = timeout.as_secs().saturating_mul(5) / 6;
            u32::try_from(seconds)
                .unwrap_or(u32::MAX)
                .clamp(1, KUBE_WATCH_TIMEOUT_SECONDS)
        }
    }
}

/// Counts every request that passes by the status code of its answer, its HTTP method and the
/// API server's host, as client-go's `rest_client_requests_total` (which controller-runtime
/// exports): a try that got no answer (a refused connection, a read timeout) counts as
/// `<error>`. Placed below the client's retry, so that each try counts, as client-go counts
/// each attempt of its retry loop.
#[derive(Clone)]
pub struct CountRequestsLayer {
    metrics: Metrics,
    host: Arc<str>,
}

impl CountRequestsLayer {
    /// For a client of `cluster_url`; its host is the `host` label (client-go: the base URL's
    /// `Host`, `host:port` as the kubeconfig writes it).
    pub fn new(metrics: &Metrics, cluster_url: &http::Uri) -> Self {
        let host = cluster_url.authority().map_or("none", |a| a.as_str());
        CountRequestsLayer {
            metrics: metrics.clone(),
            host: host.into(),
        }
    }
}

impl<S> Layer<S> for CountRequestsLayer {
    type Service = CountRequests<S>;

    fn layer(&self, inner: S) -> CountRequests<S> {
        CountRequests {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service of [`CountRequestsLayer`].
#[derive(Clone)]
pub struct CountRequests<S> {
    inner: S,
    layer: CountRequestsLayer,
}

impl<S, B> Service<Request<Body>> for CountRequests<S>
where
    S: Service<Request<Body>, Response = Response<B>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    B: Send + 'static,
{
    type Response = Response<B>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response<B>, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let method = request.method().clone();
        let CountRequestsLayer { metrics, host } = self.layer.clone();
        let answer = self.inner.call(request);
        Box::pin(async move {
            let result = answer.await;
            let code = match &result {
                Ok(response) => response.status().as_str().to_string(),
                Err(_) => crate::metrics::rest_client::NO_ANSWER.to_string(),
            };
            metrics.rest_request(&code, method.as_str(), &host);
            result
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_retry_after_is_cut_to_a_second() {
        let after = |value: &str| {
            let mut headers = http::HeaderMap::new();
            headers.insert(
                RETRY_AFTER,
                HeaderValue::from_str(value).expect("a header value"),
            );
            cap_retry_after(&mut headers);
            headers
                .get(RETRY_AFTER)
                .and_then(|v| v.to_str().ok().map(str::to_string))
        };
        assert_eq!(after("5").as_deref(), Some("1"));
        assert_eq!(after("1").as_deref(), Some("1"));
        assert_eq!(after("0").as_deref(), Some("0"));
        // An HTTP date is not seconds: left to kube's policy, which ignores it.
        assert_eq!(
            after("Wed, 21 Oct 2015 07:28:00 GMT").as_deref(),
            Some("Wed, 21 Oct 2015 07:28:00 GMT")
        );
    }

    /// A server that answers every request 429 with `Retry-After: 0` (priority and fairness
    /// over the manager's share, sustained): the client tries 1 + [`MAX_RETRIES`] times, then
    /// hands the 429 to the reconcile; each 429 is counted.
    #[tokio::test]
    async fn a_sustained_429_is_tried_eleven_times_and_counted() {
        use std::sync::atomic::{AtomicU32, Ordering};
        use tower::{Layer, ServiceExt};
        let calls = std::sync::Arc::new(AtomicU32::new(0));
        let counted = calls.clone();
        let server = tower::service_fn(move |_request: Request<Body>| {
            counted.fetch_add(1, Ordering::SeqCst);
            async {
                let response = Response::builder()
                    .status(StatusCode::TOO_MANY_REQUESTS)
                    .header(RETRY_AFTER, "0")
                    .body(())
                    .map_err(BoxError::from)?;
                Ok::<_, BoxError>(response)
            }
        });
        let metrics = Metrics::new();
        let policy = ManagerRetry {
            inner: bounded_retry(),
            token: None,
            reauthorized: false,
            metrics: metrics.clone(),
        };
        let client = RetryLayer::new(policy).layer(server);
        let request = Request::builder()
            .uri("/api/v1/namespaces/default/configmaps")
            .body(Body::empty())
            .expect("a request");
        let answer = tokio::time::timeout(Duration::from_secs(10), client.oneshot(request))
            .await
            .expect("the retries end within seconds")
            .expect("an answer");
        assert_eq!(answer.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(calls.load(Ordering::SeqCst), 1 + MAX_RETRIES);
        assert!(
            metrics
                .encode()
                .contains("math_controller_api_throttled_total 11"),
            "{}",
            metrics.encode()
        );
    }

    /// A write throttled with `Retry-After: 1` lends its slot while the client waits to send it
    /// again: with one slot, another write goes out and is answered during that second. (Before,
    /// the throttled write held the slot through every wait, and under a sustained 429 every
    /// slot was held by requests that were only waiting.)
    #[tokio::test]
    async fn a_throttled_write_lends_its_slot_while_it_waits() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use tower::{Layer, ServiceExt};
        let throttled_once = std::sync::Arc::new(AtomicBool::new(false));
        let server = tower::service_fn(move |request: Request<Body>| {
            let first_of_a = request.uri().path().ends_with("/a")
                && !throttled_once.swap(true, Ordering::SeqCst);
            async move {
                let status = if first_of_a {
                    StatusCode::TOO_MANY_REQUESTS
                } else {
                    StatusCode::OK
                };
                let response = Response::builder()
                    .status(status)
                    .header(RETRY_AFTER, "1")
                    .body(())
                    .map_err(BoxError::from)?;
                Ok::<_, BoxError>(response)
            }
        });
        let policy = ManagerRetry {
            inner: bounded_retry(),
            token: None,
            reauthorized: false,
            metrics: Metrics::new(),
        };
        let client = RetryLayer::new(policy).layer(server);
        let slots = std::sync::Arc::new(crate::scheduler::request_slots::RequestSlots::new(1));
        let send = |path: &'static str| {
            let (client, slots) = (client.clone(), slots.clone());
            async move {
                let request = Request::builder()
                    .method("POST")
                    .uri(path)
                    .body(Body::empty())
                    .map_err(BoxError::from)?;
                let answer = slots.run(client.oneshot(request)).await?;
                Ok::<_, BoxError>((answer.status(), std::time::Instant::now()))
            }
        };
        let (a, b) = tokio::join!(send("/api/v1/namespaces/n/configmaps/a"), async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            tokio::time::timeout(
                Duration::from_millis(800),
                send("/api/v1/namespaces/n/configmaps/b"),
            )
            .await
        });
        let a = a.expect("an answer");
        let b = b
            .expect("the other write is sent while the throttled one waits")
            .expect("an answer");
        assert_eq!((a.0, b.0), (StatusCode::OK, StatusCode::OK));
        assert!(
            b.1 < a.1,
            "the other write was answered before the throttled one was sent again"
        );
    }

    /// Below the retry, each try is counted by its code, as client-go counts each attempt: two
    /// 429s then a 200 are three requests; a try that got no answer is `<error>`.
    #[tokio::test]
    async fn each_try_is_counted_by_code_method_and_host() {
        use std::sync::atomic::{AtomicU32, Ordering};
        use tower::ServiceExt;
        let calls = std::sync::Arc::new(AtomicU32::new(0));
        let counted = calls.clone();
        let server = tower::service_fn(move |request: Request<Body>| {
            let call = counted.fetch_add(1, Ordering::SeqCst);
            let broken = request.uri().path().ends_with("/broken");
            async move {
                if broken {
                    return Err(BoxError::from("connection refused"));
                }
                let status = match call {
                    0 | 1 => StatusCode::TOO_MANY_REQUESTS,
                    _ => StatusCode::OK,
                };
                let response = Response::builder()
                    .status(status)
                    .header(RETRY_AFTER, "0")
                    .body(())
                    .map_err(BoxError::from)?;
                Ok::<_, BoxError>(response)
            }
        });
        let metrics = Metrics::new();
        let url: http::Uri = "https://10.96.0.1:443".parse().expect("a URL");
        let counted = CountRequestsLayer::new(&metrics, &url).layer(server);
        let policy = ManagerRetry {
            inner: bounded_retry(),
            token: None,
            reauthorized: false,
            metrics: metrics.clone(),
        };
        let client = RetryLayer::new(policy).layer(counted);
        let request = |path: &str| {
            Request::builder()
                .method("PATCH")
                .uri(path)
                .body(Body::empty())
                .expect("a request")
        };
        let answer = client
            .clone()
            .oneshot(request("/api/v1/namespaces/n/configmaps/a"))
            .await;
        assert_eq!(answer.expect("an answer").status(), StatusCode::OK);
        let failed = client
            .oneshot(request("/api/v1/namespaces/n/configmaps/broken"))
            .await;
        assert!(failed.is_err());
        let text = metrics.encode();
        for (code, n) in [("429", 2), ("200", 1), ("<error>", 1)] {
            let line = format!(
                "rest_client_requests_total{{code=\"{code}\",host=\"10.96.0.1:443\",method=\"PATCH\"}} {n}\n"
            );
            assert!(text.contains(&line), "{line} in\n{text}");
        }
    }

    #[test]
    fn watches_end_before_the_read_timeout() {
        assert_eq!(watch_timeout_seconds(Some(DEFAULT_READ_TIMEOUT)), 25);
        assert_eq!(watch_timeout_seconds(Some(Duration::from_secs(2))), 1);
        assert_eq!(watch_timeout_seconds(Some(Duration::from_secs(3600))), 290);
        assert_eq!(watch_timeout_seconds(None), 290);
        for seconds in 2..400 {
            let t = watch_timeout_seconds(Some(Duration::from_secs(seconds)));
            assert!(u64::from(t) < seconds, "{t} for {seconds}");
        }
    }

    #[test]
    fn the_read_timeout_counts_from_the_request() {
        let config = with_read_timeout(
            kube::Config::new("http://127.0.0.1:1".parse().unwrap()),
            DEFAULT_READ_TIMEOUT,
        );
        assert_eq!(config.read_timeout, Some(DEFAULT_READ_TIMEOUT));
        assert!(config.reset_reader_on_write);
    }
}
