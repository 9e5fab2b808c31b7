//! The HTTP endpoints that the kubelet and Prometheus poll: `/healthz` and `/readyz` on the
//! probe address, `/metrics` on the metrics address.
//!
//! They are two servers on two addresses, as in a kubebuilder project, so that the metrics port
//! can be exposed (or protected) separately from the probes the kubelet needs. Both stop when
//! the manager's shutdown future resolves, which lets `main` exit cleanly after SIGTERM.

use std::fmt;
use std::future::Future;
use std::net::{SocketAddr, ToSocketAddrs};
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use tokio::net::TcpListener;

use crate::exposition::{self, Encoder};
use crate::server::{self, HttpLimits, Transport};

/// What `/readyz` answers (not to be confused with a custom resource's `Ready` condition):
/// whether the manager may receive traffic / count as available in a rollout. It turns true once
/// the reflector caches have synced; a standby replica (waiting for the leader lease) sets it too,
/// because a Deployment rollout must not wait for a standby to become leader, which it never
/// does while the old leader runs.
#[derive(Clone, Default, Debug)]
pub struct ReadyFlag(Arc<AtomicBool>);

impl ReadyFlag {
    /// Marks the manager ready or not ready.
    pub fn set_ready(&self, ready: bool) {
        self.0.store(ready, Ordering::Release);
    }

    /// What `/readyz` answers.
    pub fn is_ready(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

/// A `--*-bind-address` flag value: `host:port`, `:port` (all interfaces, as controller-runtime
/// accepts) or `0`, which turns the endpoint off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BindAddress(pub Option<SocketAddr>);

impl FromStr for BindAddress {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if s == "0" {
            return Ok(BindAddress(None));
        }
        let spec = match s.strip_prefix(':') {
            Some(port) => format!("0.0.0.0:{port}"),
            None => s.to_string(),
        };
        if let Ok(addr) = spec.parse::<SocketAddr>() {
            return Ok(BindAddress(Some(addr)));
        }
        // Host names such as `localhost:8080`; resolved once, at start-up.
        spec.to_socket_addrs()
            .ok()
            .and_then(|mut addrs| addrs.next())
            .map(|addr| BindAddress(Some(addr)))
            .ok_or_else(|| format!("{s:?} is not an address: expected host:port, :port or 0"))
    }
}

impl fmt::Display for BindAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(addr) => write!(f, "{addr}"),
            None => f.write_str("0"),
        }
    }
}

/// The probe routes, for serving on a listener of the caller's choosing.
pub fn probe_router(readiness: ReadyFlag) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .with_state(readiness)
}

async fn readyz(State(readiness): State<ReadyFlag>) -> impl IntoResponse {
    if readiness.is_ready() {
        (StatusCode::OK, "ok\n")
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: caches have not synced yet\n",
        )
    }
}

/// The metrics route, serving what `metrics` encodes at each scrape.
pub fn metrics_router(metrics: Encoder) -> Router {
    Router::new()
        .route("/metrics", get(serve_metrics_text))
        .with_state(metrics)
}

/// `/metrics` in the format the scraper asks for ([`exposition::negotiate`]):
/// OpenMetrics for Prometheus, the Prometheus text format for curl and older scrapers.
async fn serve_metrics_text(
    State(metrics): State<Encoder>,
    headers: axum::http::HeaderMap,
) -> impl IntoResponse {
    let accept = headers.get(header::ACCEPT).and_then(|a| a.to_str().ok());
    let format = exposition::negotiate(accept);
    (
        [(header::CONTENT_TYPE, format.content_type())],
        metrics.encode_as(format),
    )
}

/// Serves `/healthz` and `/readyz` on `addr` until `shutdown` resolves. A bind error (port in
/// use) is returned rather than logged, so the manager fails at start instead of running without
/// probes and being restarted by the kubelet later for a reason nobody sees.
pub async fn serve_probes(
    addr: SocketAddr,
    readiness: ReadyFlag,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let listener = bind(addr).await?;
    let limits = HttpLimits::default();
    serve_on(
        listener,
        "health probes",
        probe_router(readiness),
        limits,
        shutdown,
    )
    .await
}

/// Serves `/metrics` on `addr` until `shutdown` resolves; bind errors are returned.
pub async fn serve_metrics(
    addr: SocketAddr,
    metrics: Encoder,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let listener = bind(addr).await?;
    let limits = HttpLimits::default();
    serve_on(
        listener,
        "metrics",
        metrics_router(metrics),
        limits,
        shutdown,
    )
    .await
}

/// Binds `addr`, naming it in the error, so a caller can learn the port of `127.0.0.1:0` via
/// `local_addr()` before serving (tests do).
pub async fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr)
        .await
        .map_err(|e| std::io::Error::new(e.kind(), format!("cannot listen on {addr}: {e}")))
}

/// Serves `router` on an already bound listener until `shutdown` resolves, within `limits`
/// (see [`crate::server`]).
pub async fn serve_on(
    listener: TcpListener,
    what: &'static str,
    router: Router,
    limits: HttpLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let local = listener.local_addr()?;
    tracing::info!(address = %local, "serving {what} on http://{local}");
    server::serve(listener, Transport::Plain, router, limits, shutdown).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bind_address_forms() {
        assert_eq!("0".parse::<BindAddress>(), Ok(BindAddress(None)));
        assert_eq!(
            "127.0.0.1:8080".parse::<BindAddress>(),
            Ok(BindAddress(Some(([127, 0, 0, 1], 8080).into())))
        );
        assert_eq!(
            ":8081".parse::<BindAddress>(),
            Ok(BindAddress(Some(([0, 0, 0, 0], 8081).into())))
        );
        assert_eq!(
            "[::1]:9".parse::<BindAddress>(),
            Ok(BindAddress(Some("[::1]:9".parse().unwrap())))
        );
        assert!("nonsense".parse::<BindAddress>().is_err());
        assert!("1.2.3.4".parse::<BindAddress>().is_err());
        assert_eq!(BindAddress(None).to_string(), "0");
        assert_eq!(
            "0.0.0.0:8080".parse::<BindAddress>().unwrap().to_string(),
            "0.0.0.0:8080"
        );
    }

    #[test]
    fn readiness_is_shared_between_clones() {
        let r = ReadyFlag::default();
        let c = r.clone();
        assert!(!c.is_ready());
        r.set_ready(true);
        assert!(c.is_ready());
    }

    /// A minimal HTTP/1.0 GET, to test the servers without an HTTP client dependency.
    async fn get(addr: SocketAddr, path: &str) -> (u16, String) {
        get_with(addr, path, "").await
    }

    /// A GET with `headers` (each line ending in CRLF) besides Host.
    async fn get_with(addr: SocketAddr, path: &str, headers: &str) -> (u16, String) {
        let (path, headers) = (path.to_string(), headers.to_string());
        tokio::task::spawn_blocking(move || {
            use std::io::{Read, Write};
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            s.write_all(format!("GET {path} HTTP/1.0\r\nHost: x\r\n{headers}\r\n").as_bytes())
                .unwrap();
            let mut buf = String::new();
            s.read_to_string(&mut buf).unwrap();
            let status = buf.split_whitespace().nth(1).unwrap().parse().unwrap();
            (status, buf)
        })
        .await
        .unwrap()
    }

    #[tokio::test]
    async fn probes_answer_and_stop_on_shutdown() {
        let readiness = ReadyFlag::default();
        let listener = bind(([127, 0, 0, 1], 0).into()).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve_on(
            listener,
            "health probes",
            probe_router(readiness.clone()),
            HttpLimits::default(),
            async {
                let _ = rx.await;
            },
        ));
        assert_eq!(get(addr, "/healthz").await.0, 200);
        assert_eq!(get(addr, "/readyz").await.0, 503);
        readiness.set_ready(true);
        assert_eq!(get(addr, "/readyz").await.0, 200);
        assert_eq!(get(addr, "/nothing").await.0, 404);
        tx.send(()).unwrap();
        server.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn metrics_endpoint_serves_the_format_the_scraper_asks_for() {
        // A registry as a manager keeps one, encoded at each scrape.
        let mut registry = prometheus_client::registry::Registry::default();
        let writes = prometheus_client::metrics::counter::Counter::<u64>::default();
        registry.register("demo_write_requests", "Write requests sent", writes.clone());
        let metrics = Encoder::new(move || {
            let mut out = String::new();
            let encoded = prometheus_client::encoding::text::encode(&mut out, &registry);
            encoded.map(|()| out).unwrap_or_default()
        });
        writes.inc();
        let listener = bind(([127, 0, 0, 1], 0).into()).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(serve_on(
            listener,
            "metrics",
            metrics_router(metrics),
            HttpLimits::default(),
            std::future::pending(),
        ));
        let series = "demo_write_requests_total 1";
        // What Prometheus sends: OpenMetrics first.
        let prometheus = "Accept: application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1\r\n";
        let (status, body) = get_with(addr, "/metrics", prometheus).await;
        assert_eq!(status, 200);
        let om = "content-type: application/openmetrics-text; version=1.0.0; charset=utf-8";
        assert!(body.to_ascii_lowercase().contains(om), "{body}");
        assert!(body.contains(series) && body.ends_with("# EOF\n"));
        assert!(body.contains("# TYPE demo_write_requests counter\n"));
        // Encoded at the scrape: what was counted since is in the next answer.
        writes.inc();
        let series = "demo_write_requests_total 2";
        // curl (no Accept) and `*/*`: the Prometheus text format, as controller-runtime serves.
        for headers in ["", "Accept: */*\r\n", "Accept: text/plain\r\n"] {
            let (status, body) = get_with(addr, "/metrics", headers).await;
            assert_eq!(status, 200);
            let text = "content-type: text/plain; version=0.0.4; charset=utf-8";
            assert!(
                body.to_ascii_lowercase().contains(text),
                "{headers}: {body}"
            );
            assert!(body.contains(series) && !body.contains("# EOF"));
            assert!(body.contains("# TYPE demo_write_requests_total counter\n"));
        }
        server.abort();
    }

    #[tokio::test]
    async fn bind_error_is_returned() {
        let taken = bind(([127, 0, 0, 1], 0).into()).await.unwrap();
        let addr = taken.local_addr().unwrap();
        let err = serve_probes(addr, ReadyFlag::default(), std::future::pending())
            .await
            .unwrap_err();
        assert!(err.to_string().contains(&addr.to_string()), "{err}");
    }

    // The limits of `crate::server`, on the probe server. Timeouts are shortened so that the
    // tests take moments; the generous bounds only catch a connection that is never closed.

    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    /// Long enough for a loaded CI machine; only a connection the server never closes hits it.
    const NEVER: Duration = Duration::from_secs(20);

    /// A probe server with `limits`, stopped by the returned sender.
    async fn probes_with(
        limits: HttpLimits,
    ) -> (
        SocketAddr,
        tokio::sync::oneshot::Sender<()>,
        tokio::task::JoinHandle<std::io::Result<()>>,
    ) {
        let readiness = ReadyFlag::default();
        readiness.set_ready(true);
        let listener = bind(([127, 0, 0, 1], 0).into()).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve_on(
            listener,
            "health probes",
            probe_router(readiness),
            limits,
            async {
                let _ = rx.await;
            },
        ));
        (addr, tx, server)
    }

    /// Reads until the server closes the connection; what it sent, or `None` if it kept the
    /// connection open for [`NEVER`].
    async fn until_closed(stream: &mut TcpStream) -> Option<String> {
        let mut out = Vec::new();
        match tokio::time::timeout(NEVER, stream.read_to_end(&mut out)).await {
            Ok(_) => Some(String::from_utf8_lossy(&out).into_owned()),
            Err(_) => None,
        }
    }

    /// Reads one response to a keep-alive request (its head and `Content-Length` body).
    async fn one_response(stream: &mut TcpStream) -> String {
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            let text = String::from_utf8_lossy(&out).into_owned();
            if let Some((head, body)) = text.split_once("\r\n\r\n") {
                let length: usize = head
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().parse().unwrap())
                    })
                    .unwrap_or(0);
                if body.len() >= length {
                    return text;
                }
            }
            let n = tokio::time::timeout(NEVER, stream.read(&mut buf))
                .await
                .expect("an answer")
                .unwrap();
            assert!(n > 0, "closed before the answer: {text}");
            out.extend_from_slice(&buf[..n]);
        }
    }

    /// Every timeout from `timeout` (the total deadline 4 times it).
    fn short(timeout: Duration) -> HttpLimits {
        HttpLimits {
            header_read_timeout: timeout,
            idle_timeout: timeout,
            max_connection_age: timeout * 4,
            shutdown_grace: Duration::from_millis(200),
            ..HttpLimits::default()
        }
    }

    #[tokio::test]
    async fn half_a_request_is_cut_off_after_the_header_read_timeout() {
        let (addr, _stop, _server) = probes_with(short(Duration::from_millis(300))).await;
        let mut slow = TcpStream::connect(addr).await.unwrap();
        slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow:")
            .await
            .unwrap();
        let sent = until_closed(&mut slow).await;
        assert!(sent.is_some(), "the half request is still held open");
        // Nothing was served to it.
        assert!(!sent.unwrap_or_default().contains("200 OK"));
        // A silent client too.
        let mut silent = TcpStream::connect(addr).await.unwrap();
        assert!(
            until_closed(&mut silent).await.is_some(),
            "a silent client is still held"
        );
    }

    #[tokio::test]
    async fn an_idle_keep_alive_connection_is_closed() {
        let (addr, _stop, _server) = probes_with(short(Duration::from_millis(300))).await;
        let mut client = TcpStream::connect(addr).await.unwrap();
        client
            .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let first = one_response(&mut client).await;
        assert!(first.starts_with("HTTP/1.1 200"), "{first}");
        assert!(
            !first.to_ascii_lowercase().contains("connection: close"),
            "kept alive: {first}"
        );
        // Then nothing: the server closes it.
        assert!(
            until_closed(&mut client).await.is_some(),
            "an idle connection is held for ever"
        );
    }

    #[tokio::test]
    async fn a_request_head_above_the_bound_is_refused() {
        let limits = HttpLimits {
            max_header_bytes: 16 * 1024,
            ..short(Duration::from_secs(3600))
        };
        let (addr, _stop, _server) = probes_with(limits).await;
        let mut client = TcpStream::connect(addr).await.unwrap();
        let big = format!(
            "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
            "a".repeat(64 * 1024)
        );
        // The server may close before it has read everything; what it answered counts.
        let _ = client.write_all(big.as_bytes()).await;
        let answer = until_closed(&mut client).await.expect("closed");
        assert!(answer.starts_with("HTTP/1.1 431"), "{answer}");
        // A head within the bound is served.
        let mut client = TcpStream::connect(addr).await.unwrap();
        let fine = format!(
            "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Fine: {}\r\nConnection: close\r\n\r\n",
            "a".repeat(8 * 1024)
        );
        client.write_all(fine.as_bytes()).await.unwrap();
        let answer = until_closed(&mut client).await.expect("closed");
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    }

    /// One probe on a fresh connection, as the kubelet sends it; its answer, or a panic if none
    /// came within [`NEVER`].
    async fn probe(addr: SocketAddr) -> String {
        let mut client = TcpStream::connect(addr).await.unwrap();
        client
            .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        one_response(&mut client).await
    }

    /// A client that pipelines requests and never reads an answer: it writes until the server
    /// stops reading (its socket buffers full), then its write waits. The task ends only when
    /// the server cuts the connection (the write fails).
    async fn pipeliner(addr: SocketAddr) -> tokio::task::JoinHandle<std::io::Error> {
        let mut client = TcpStream::connect(addr).await.unwrap();
        tokio::spawn(async move {
            let requests = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".repeat(256);
            loop {
                if let Err(error) = client.write_all(&requests).await {
                    return error;
                }
            }
        })
    }

    #[tokio::test]
    async fn many_idle_connections_do_not_keep_the_probe_out() {
        let limits = HttpLimits {
            max_connections: 8,
            ..short(Duration::from_secs(3600))
        };
        let (addr, _stop, _server) = probes_with(limits).await;
        // Many clients that connect and say nothing, far more than the bound.
        let mut idle = Vec::new();
        for _ in 0..64 {
            idle.push(TcpStream::connect(addr).await.unwrap());
        }
        // The probe is answered while they are all still connected.
        let answer = probe(addr).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        // It was made room for by closing the oldest idle connection.
        assert!(
            until_closed(&mut idle[0]).await.is_some(),
            "the oldest idle connection is still held"
        );
        // Again, with the attackers re-opening what was closed.
        for _ in 0..64 {
            idle.push(TcpStream::connect(addr).await.unwrap());
        }
        let answer = probe(addr).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    }

    #[tokio::test]
    async fn clients_that_pipeline_and_never_read_do_not_keep_the_probe_out() {
        let limits = HttpLimits {
            max_connections: 4,
            ..short(Duration::from_secs(3600))
        };
        let (addr, _stop, _server) = probes_with(limits).await;
        let mut attackers = Vec::new();
        for _ in 0..8 {
            attackers.push(pipeliner(addr).await);
        }
        let answer = probe(addr).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        // The first attacker's connection was closed to make room.
        let first = attackers.remove(0);
        assert!(
            tokio::time::timeout(NEVER, first).await.is_ok(),
            "the oldest pipelining client is still held"
        );
    }

    #[tokio::test]
    async fn a_client_that_never_reads_its_answers_is_cut_off() {
        // hyper's header-read timer runs only while it reads a head; this client's requests
        // were all read, and the server waits to write the answers.
        let (addr, _stop, _server) = probes_with(short(Duration::from_millis(300))).await;
        let attacker = pipeliner(addr).await;
        let error = tokio::time::timeout(NEVER, attacker).await;
        assert!(error.is_ok(), "a client that never reads is held for ever");
    }

    #[tokio::test]
    async fn a_busy_keep_alive_connection_ends_at_its_total_deadline() {
        let limits = HttpLimits {
            shutdown_grace: Duration::from_millis(300),
            ..short(Duration::from_millis(300))
        };
        let (addr, _stop, _server) = probes_with(limits).await;
        let mut client = TcpStream::connect(addr).await.unwrap();
        // Never idle: a request every 50 ms, each answered; only a total deadline ends it.
        let mut answered = 0;
        let mut buf = [0u8; 4096];
        let closed = loop {
            if answered >= 400 {
                break false;
            }
            if client
                .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                .await
                .is_err()
            {
                break true;
            }
            match tokio::time::timeout(NEVER, client.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => break true,
                Ok(Ok(_)) => answered += 1,
                Err(_) => break false,
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert!(
            closed,
            "a connection in use is held for ever ({answered} answers)"
        );
    }

    #[tokio::test]
    async fn a_shutdown_is_not_held_up_by_idle_or_half_requests() {
        let (addr, stop, server) = probes_with(short(Duration::from_secs(3600))).await;
        let mut half = Vec::new();
        for _ in 0..3 {
            let mut c = TcpStream::connect(addr).await.unwrap();
            c.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow:")
                .await
                .unwrap();
            half.push(c);
        }
        let mut kept = TcpStream::connect(addr).await.unwrap();
        kept.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        one_response(&mut kept).await;
        stop.send(()).unwrap();
        let stopped = tokio::time::timeout(NEVER, server).await;
        assert!(
            stopped.is_ok(),
            "the server waits for its half-open connections"
        );
        for mut c in half {
            assert!(until_closed(&mut c).await.is_some());
        }
        assert!(until_closed(&mut kept).await.is_some());
        assert!(
            TcpStream::connect(addr).await.is_err(),
            "no longer listening"
        );
    }
}
