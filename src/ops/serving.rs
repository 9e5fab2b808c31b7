//! How the probe, metrics and secure-metrics endpoints are served: one accept loop with the
//! limits a server reachable from the pod network needs, the ones controller-runtime gives its
//! servers (`pkg/internal/httpserver`), so that a slow or hostile client costs a bounded
//! amount of memory and time and never holds up a shutdown.
//!
//! Built from hyper's own features rather than `axum::serve`, which gives hyper no timer and
//! so turns hyper's header-read timeout off:
//! - **header-read timeout** (hyper's `header_read_timeout` with a Tokio timer): a connection
//!   that has not sent a whole request head within it is closed. hyper starts that clock
//!   whenever the connection waits for a request head, also between two requests of a
//!   keep-alive connection, so the same timeout bounds an idle keep-alive connection;
//! - **header size** (hyper's `max_buf_size`): a longer head is answered `431` and the
//!   connection closed;
//! - **concurrent connections** (a semaphore, as in Tokio's accept-loop example): at the bound
//!   the loop stops accepting until a connection ends; new clients wait in the kernel's
//!   backlog. With the header bound this caps the memory all connections together can hold
//!   (controller-runtime's are unbounded). The price: a client that keeps that many connections
//!   open delays the others by up to the header-read timeout; on the probe port that could be
//!   the kubelet, which is why `deploy/optional/network-policy.yaml` admits other pods to the
//!   metrics port only;
//! - **TLS handshake timeout**, for the secure metrics port;
//! - **graceful shutdown** (hyper-util's `GracefulShutdown`): the listener closes, idle
//!   connections close at once, requests in progress get [`SHUTDOWN_GRACE`], then whatever is
//!   left (a client that sent half a request) is cut.
//!
//! HTTP/1.1 only, as before: Prometheus and the kubelet speak it, and not offering HTTP/2 avoids
//! its rapid-reset and stream-exhaustion attack surface (kubebuilder v4 disables HTTP/2 too).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;

/// controller-runtime's `ReadHeaderTimeout` (32 s): a client must send a whole request head
/// within it. hyper also applies it to the wait for the next request on a keep-alive
/// connection, so it bounds idle connections too (controller-runtime: `IdleTimeout` 90 s).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(32);
/// The largest request head read. controller-runtime allows 1 MiB (`MaxHeaderBytes`); a scrape
/// or a probe sends a few hundred bytes, a bearer token a few kilobytes, and 1 MiB per
/// connection times [`MAX_CONNECTIONS`] would be the pod's whole memory limit.
pub const MAX_HEADER_BYTES: usize = 32 * 1024;
/// Connections served at once, per server. controller-runtime has no bound (a goroutine per
/// connection, until the file descriptors run out); the kubelet probes with one connection at
/// a time and Prometheus scrapes with one per target. With [`MAX_HEADER_BYTES`] this bounds
/// what clients can make a server hold: about 8 MiB of request heads (plus TLS buffers on the
/// metrics port).
pub const MAX_CONNECTIONS: usize = 256;
/// A client that has not finished its TLS handshake after this long is dropped
/// (Go's net/http uses the header-read timeout for it, 32 s).
pub const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a shutdown lets requests in progress finish before the connections are cut. Every
/// request here is answered in milliseconds; whatever takes longer is a client that sent half a
/// request, and the process is going away. Runs alongside the controllers' drain.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// The limits of one server; [`Default`] is what the manager uses, tests shorten them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpLimits {
    pub header_read_timeout: Duration,
    /// At least 8192 (hyper's minimum read buffer).
    pub max_header_bytes: usize,
    pub max_connections: usize,
    pub tls_handshake_timeout: Duration,
    pub shutdown_grace: Duration,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            header_read_timeout: HEADER_READ_TIMEOUT,
            max_header_bytes: MAX_HEADER_BYTES,
            max_connections: MAX_CONNECTIONS,
            tls_handshake_timeout: TLS_HANDSHAKE_TIMEOUT,
            shutdown_grace: SHUTDOWN_GRACE,
        }
    }
}

/// What a connection speaks underneath HTTP.
#[derive(Clone)]
pub enum Transport {
    Plain,
    Tls(TlsAcceptor),
}

/// Serves `router` on `listener` until `shutdown` resolves, within `limits`; returns once every
/// connection has ended or been cut (at most [`HttpLimits::shutdown_grace`] after `shutdown`).
pub async fn serve(
    listener: TcpListener,
    transport: Transport,
    router: Router,
    limits: HttpLimits,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_buf_size(limits.max_header_bytes.max(8192));
    let http = Arc::new(http);
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    let mut connections = JoinSet::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        // Finished connections leave the set here, so it holds only live ones.
        while connections.try_join_next().is_some() {}
        let permit = tokio::select! {
            () = &mut shutdown => break,
            permit = permits.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break, // never closed
            },
        };
        let (tcp, peer) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors and the like: wait rather than spin.
                    tracing::warn!(%error, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let connection = Connection {
            http: http.clone(),
            router: router.clone(),
            watcher: graceful.watcher(),
            peer,
        };
        let transport = transport.clone();
        let handshake_timeout = limits.tls_handshake_timeout;
        connections.spawn(async move {
            let _permit = permit;
            match transport {
                Transport::Plain => connection.serve(tcp).await,
                Transport::Tls(acceptor) => {
                    match tokio::time::timeout(handshake_timeout, acceptor.accept(tcp)).await {
                        Ok(Ok(tls)) => connection.serve(tls).await,
                        Ok(Err(error)) => {
                            tracing::debug!(%peer, %error, "TLS handshake failed")
                        }
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                    }
                }
            }
        });
    }
    // New clients are refused from here on; idle connections close at once, requests in
    // progress may finish within the grace, and the rest is cut when `connections` drops.
    drop(listener);
    if tokio::time::timeout(limits.shutdown_grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::debug!(
            open = connections.len(),
            "connections still open after the shutdown grace; closing them"
        );
    }
    connections.shutdown().await;
    Ok(())
}

/// One accepted connection and what serving it needs.
struct Connection {
    http: Arc<http1::Builder>,
    router: Router,
    watcher: Watcher,
    peer: SocketAddr,
}

impl Connection {
    async fn serve<I>(self, io: I)
    where
        I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let service = TowerToHyperService::new(self.router);
        let conn = self.http.serve_connection(TokioIo::new(io), service);
        if let Err(error) = self.watcher.watch(conn).await {
            // A header-read timeout, a head too large, a client gone: its problem, not ours.
            tracing::debug!(peer = %self.peer, %error, "connection ended");
        }
    }
}
