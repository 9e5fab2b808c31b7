//! How the probe, metrics and secure-metrics endpoints are served: one accept loop with the
//! limits a server reachable from the pod network needs, so that a slow or hostile client costs
//! a bounded amount of memory and time, can never keep the kubelet's probe out, and never holds
//! up a shutdown. controller-runtime's servers (`pkg/internal/httpserver`) have the timeouts
//! but no bound on connections; ours have both, and room kept for a new client.
//!
//! Built from hyper's own features rather than `axum::serve`, which gives hyper no timer and
//! so turns hyper's header-read timeout off:
//! - **header-read timeout** (hyper's `header_read_timeout` with a Tokio timer): a connection
//!   that has not sent a whole request head within it is closed. hyper starts that clock
//!   whenever the connection waits for a request head, also between two requests of a
//!   keep-alive connection. It does not run while hyper waits to *write*: a client that
//!   pipelines requests and never reads the answers would hold its connection for ever;
//! - **idle timeout**: a connection on which no byte moved and no request was being answered
//!   for this long is closed, whatever hyper waits for (the pipelining client above);
//! - **total deadline**: a connection is closed gracefully (the request in progress is
//!   answered) this long after it was opened, however busy; a client that trickles requests
//!   or reads a byte at a time holds a slot for that long at most;
//! - **header size** (hyper's `max_buf_size`): a longer head is answered `431` and the
//!   connection closed;
//! - **concurrent connections, with room kept** (`slots.rs`): at most that many at once, and
//!   whenever fewer than the reserve are free the connection idle longest is closed, so a new
//!   client (the kubelet's probe) is served at once however many connections an attacker
//!   holds or re-opens. Only when every connection is answering a request does the loop stop
//!   accepting (new clients wait in the kernel's backlog), and answers take milliseconds. With
//!   the header bound this caps the memory all connections together can hold;
//! - **TLS handshake timeout**, for the secure metrics port;
//! - **graceful shutdown**: the listener closes, idle connections close at once, requests in
//!   progress get [`SHUTDOWN_GRACE`], then whatever is left (a client that sent half a
//!   request) is cut.
//!
//! HTTP/1.1 only, as before: Prometheus and the kubelet speak it, and not offering HTTP/2 avoids
//! its rapid-reset and stream-exhaustion attack surface (kubebuilder v4 disables HTTP/2 too).

mod slots;

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::response::IntoResponse;
use std::pin::Pin;
use std::task::{Context, Poll};

use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tower::Service;

use slots::{Slot, Slots};

/// controller-runtime's `ReadHeaderTimeout` (32 s): a client must send a whole request head
/// within it. hyper also applies it to the wait for the next request on a keep-alive
/// connection.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(32);
/// A connection on which nothing moved for this long is closed, also one whose answers wait
/// to be read (controller-runtime: `IdleTimeout` 90 s; ours matches the header-read timeout,
/// since a probe or a scrape moves bytes within milliseconds).
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(32);
/// A connection is closed (gracefully) this long after it opened. The kubelet opens one per
/// probe; Prometheus re-opens its keep-alive connection every two minutes at this bound.
pub const MAX_CONNECTION_AGE: Duration = Duration::from_secs(120);
/// Slots kept free: when fewer are, the connection idle longest is closed for the newcomer.
pub const RESERVED_CONNECTIONS: usize = 16;
/// The largest request head read. controller-runtime allows 1 MiB (`MaxHeaderBytes`); a scrape
/// or a probe sends a few hundred bytes, a bearer token a few kilobytes, and 1 MiB per
/// connection times [`MAX_CONNECTIONS`] would be the pod's whole memory limit.
pub const MAX_HEADER_BYTES: usize = 32 * 1024;
/// Connections served at once, per server. controller-runtime has no bound (a goroutine per
/// connection, until the file descriptors run out); the kubelet probes with one connection at
/// a time and Prometheus scrapes with one per target. With [`MAX_HEADER_BYTES`] this bounds
/// what clients can make a server hold: about 8 MiB of request heads (plus TLS buffers on the
/// metrics port). [`RESERVED_CONNECTIONS`] of them are kept free for new clients.
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
    /// At least 1: a server with no free slot would stop accepting.
    pub reserved_connections: usize,
    pub idle_timeout: Duration,
    pub max_connection_age: Duration,
    pub tls_handshake_timeout: Duration,
    pub shutdown_grace: Duration,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            header_read_timeout: HEADER_READ_TIMEOUT,
            max_header_bytes: MAX_HEADER_BYTES,
            max_connections: MAX_CONNECTIONS,
            reserved_connections: RESERVED_CONNECTIONS,
            idle_timeout: IDLE_TIMEOUT,
            max_connection_age: MAX_CONNECTION_AGE,
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
    let http = Arc::new(http_builder(&limits));
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let slots = Arc::new(Slots::default());
    let stopping = CancellationToken::new();
    let mut connections = JoinSet::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        // Finished connections leave the set here, so it holds only live ones.
        while connections.try_join_next().is_some() {}
        // Waits only when every connection is answering a request; otherwise a slot is free.
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
        let open = slots.open();
        make_room(&slots, &permits, &limits, &open.slot, peer);
        let connection = Connection {
            http: http.clone(),
            router: router.clone(),
            stopping: stopping.clone(),
            limits: limits.clone(),
            slot: open.slot.clone(),
            peer,
        };
        let transport = transport.clone();
        connections.spawn(async move {
            let _held = (open, permit);
            connection.run(tcp, transport).await;
        });
    }
    // New clients are refused from here on.
    drop(listener);
    drain(connections, &stopping, limits.shutdown_grace).await;
    Ok(())
}

/// Closes the longest-idle connection when the free slots fall to the reserved ones, so a new client
/// is answered even while keep-alive connections hold the rest.
fn make_room(
    slots: &Slots,
    permits: &Semaphore,
    limits: &HttpLimits,
    newest: &Slot,
    peer: std::net::SocketAddr,
) {
    if slots::must_make_room(permits.available_permits(), limits.reserved_connections)
        && !slots.evict_longest_idle(newest)
    {
        tracing::debug!(%peer, "every connection is answering a request; none closed for a new one");
    }
}

/// The HTTP/1 settings every connection shares: a header that is slow or large is cut, so a
/// client cannot hold a slot by trickling bytes.
fn http_builder(limits: &HttpLimits) -> http1::Builder {
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_buf_size(limits.max_header_bytes.max(8192));
    http
}

/// Ends the connections on shutdown: idle ones close at once, requests in progress may finish
/// within `grace`, and the rest is cut, so shutdown never waits on a slow client.
async fn drain(mut connections: JoinSet<()>, stopping: &CancellationToken, grace: Duration) {
    stopping.cancel();
    let drained = tokio::time::timeout(grace, async {
        while connections.join_next().await.is_some() {}
    });
    if drained.await.is_err() {
        tracing::debug!(
            open = connections.len(),
            "connections still open after the shutdown grace; closing them"
        );
    }
    connections.shutdown().await;
}

/// Why a connection ended, besides the client closing it.
#[derive(Debug)]
enum Ending {
    /// hyper ended it: the client closed, a header-read timeout, a head too large.
    Served(Result<(), hyper::Error>),
    /// Closed to make room for a new connection.
    Evicted,
    /// Nothing moved for the idle timeout.
    Idle,
    /// The server stops, or the connection reached its total deadline: answered gracefully.
    Draining(&'static str),
}

/// One accepted connection and what serving it needs.
struct Connection {
    http: Arc<http1::Builder>,
    router: Router,
    stopping: CancellationToken,
    limits: HttpLimits,
    slot: Arc<Slot>,
    peer: SocketAddr,
}

impl Connection {
    /// The TLS handshake (bounded, and given up when the slot is needed), then HTTP.
    async fn run(self, tcp: tokio::net::TcpStream, transport: Transport) {
        let peer = self.peer;
        match transport {
            Transport::Plain => self.serve(tcp).await,
            Transport::Tls(acceptor) => {
                let handshake = tokio::time::timeout(
                    self.limits.tls_handshake_timeout,
                    acceptor.accept(Tracked {
                        io: tcp,
                        slot: self.slot.clone(),
                    }),
                );
                let tls = tokio::select! {
                    () = self.slot.evicted() => {
                        tracing::debug!(%peer, "TLS handshake given up to make room");
                        return;
                    }
                    tls = handshake => tls,
                };
                match tls {
                    Ok(Ok(tls)) => self.serve(tls).await,
                    Ok(Err(error)) => tracing::debug!(%peer, %error, "TLS handshake failed"),
                    Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                }
            }
        }
    }

    async fn serve<I>(self, io: I)
    where
        I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let slot = self.slot.clone();
        let router = self.router;
        // Each answer is computed in a task of its own, so that the connection counts as busy
        // exactly while a handler runs: hyper stops polling the handler's future while its
        // write buffer is full, and a client that never reads would otherwise look busy (and
        // so never idle, never the one to make room) for ever.
        let service = hyper::service::service_fn(move |request: http::Request<Incoming>| {
            let busy = slot.busy();
            let answer = router.clone().call(request);
            let task = tokio::spawn(async move {
                let answer = answer.await;
                drop(busy);
                answer
            });
            async move {
                task.await.unwrap_or_else(|error| {
                    tracing::warn!(%error, "a request's handler failed");
                    Ok::<_, Infallible>(http::StatusCode::INTERNAL_SERVER_ERROR.into_response())
                })
            }
        });
        let io = Tracked {
            io,
            slot: self.slot.clone(),
        };
        let mut conn = std::pin::pin!(self.http.serve_connection(TokioIo::new(io), service));
        let ending = tokio::select! {
            served = conn.as_mut() => Ending::Served(served),
            () = self.slot.evicted() => Ending::Evicted,
            () = self.slot.idle_for(self.limits.idle_timeout) => Ending::Idle,
            () = self.stopping.cancelled() => Ending::Draining("the server stops"),
            () = tokio::time::sleep(self.limits.max_connection_age) => {
                Ending::Draining("the connection reached its total deadline")
            }
        };
        let peer = self.peer;
        match ending {
            // A header-read timeout, a head too large, a client gone: its problem, not ours.
            Ending::Served(Err(error)) => tracing::debug!(%peer, %error, "connection ended"),
            Ending::Served(Ok(())) => {}
            Ending::Evicted | Ending::Idle => {
                tracing::debug!(%peer, why = ?ending, "connection closed");
            }
            Ending::Draining(why) => {
                tracing::debug!(%peer, why, "closing the connection after its request in progress");
                conn.as_mut().graceful_shutdown();
                let _ = tokio::time::timeout(self.limits.shutdown_grace, conn).await;
            }
        }
    }
}

/// A connection's transport that notes on its [`Slot`] whenever bytes move, so that the idle
/// timeout and the choice of whom to close see every kind of progress (reads and writes).
struct Tracked<I> {
    io: I,
    slot: Arc<Slot>,
}

impl<I: AsyncRead + Unpin> AsyncRead for Tracked<I> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let read = Pin::new(&mut this.io).poll_read(cx, buf);
        if matches!(read, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            this.slot.progress();
        }
        read
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Tracked<I> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let written = Pin::new(&mut this.io).poll_write(cx, buf);
        if matches!(written, Poll::Ready(Ok(n)) if n > 0) {
            this.slot.progress();
        }
        written
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let written = Pin::new(&mut this.io).poll_write_vectored(cx, bufs);
        if matches!(written, Poll::Ready(Ok(n)) if n > 0) {
            this.slot.progress();
        }
        written
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}
