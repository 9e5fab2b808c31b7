//! Faults that make the server behave like a real kube-apiserver under stress: an
//! outage (the port refuses connections and open connections are reset, while every
//! object and the resourceVersion counter are kept) and a write-throughput cap (writes
//! queue for a slot, as they do behind etcd on a loaded control plane). Under the cap the
//! server is one queue of busy time: watch events delivered and time charged from outside
//! (another process's CPU on the same machine) take their share of it too. Per-request
//! latency lives with the other request rules in `lib.rs` (`set_latency`).
//!
//! The outage is done at the socket, not in the HTTP handler, so a client sees what it
//! sees when kube-apiserver is down: `connect()` fails with ECONNREFUSED
//! (`kube::Error::HyperError` wrapping a Connect error) and pooled connections break.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Mutex;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::time::Instant;

/// The server's fault switches, shared by the listener, every connection and the
/// request pipeline.
pub(crate) struct Faults {
    /// `true` while the server is "down".
    down: watch::Sender<bool>,
    /// Minimum spacing between two writes (`None`: no cap), and when the next may start.
    write_slot: Mutex<(Option<Duration>, Instant)>,
    /// Under a write cap, what one watch event delivered costs the server (zero: nothing).
    watch_event_cost: Mutex<Duration>,
}

impl Faults {
    pub(crate) fn new(start_down: bool) -> Faults {
        Faults {
            down: watch::Sender::new(start_down),
            write_slot: Mutex::new((None, Instant::now())),
            watch_event_cost: Mutex::new(Duration::ZERO),
        }
    }

    pub(crate) fn set_down(&self, down: bool) {
        self.down.send_replace(down);
    }

    pub(crate) fn is_down(&self) -> bool {
        *self.down.borrow()
    }

    /// At most `per_second` writes per second (0: no cap).
    pub(crate) fn set_write_rate(&self, per_second: u32) {
        let mut slot = self.write_slot.lock().unwrap_or_else(|e| e.into_inner());
        slot.0 = (per_second > 0).then(|| Duration::from_secs(1) / per_second);
        slot.1 = Instant::now();
    }

    /// Under a write cap, each watch event delivered takes `cost` of the server's time.
    pub(crate) fn set_watch_event_cost(&self, cost: Duration) {
        *self
            .watch_event_cost
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = cost;
    }

    /// Hook for the watch streams: one event was delivered.
    pub(crate) fn watch_event(&self) {
        let cost = *self
            .watch_event_cost
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if !cost.is_zero() {
            self.charge(cost);
        }
    }

    /// Takes `busy` of the server's time, as work other than writes does (serving watch
    /// events, a process on the same machine taking the CPU): the writes queued behind it
    /// start that much later. Nothing without a write cap.
    pub(crate) fn charge(&self, busy: Duration) {
        let mut slot = self.write_slot.lock().unwrap_or_else(|e| e.into_inner());
        if slot.0.is_some() {
            slot.1 = slot.1.max(Instant::now()) + busy;
        }
    }

    /// Hook for the request pipeline: waits for this write's slot under the cap. Slots
    /// are handed out in arrival order, so writes queue instead of failing.
    /// A write of `weight` takes that many slots (an Event is cheaper than an object).
    pub(crate) async fn throttle_write(&self, weight: f64) {
        let at = {
            let mut slot = self.write_slot.lock().unwrap_or_else(|e| e.into_inner());
            let Some(gap) = slot.0 else { return };
            let at = slot.1.max(Instant::now());
            slot.1 = at + gap.mul_f64(weight);
            at
        };
        tokio::time::sleep_until(at).await;
    }

    /// A listener for `axum::serve` that honours outages.
    pub(crate) fn listener(&self, listener: TcpListener, addr: SocketAddr) -> FaultyListener {
        FaultyListener {
            listener: Some(listener),
            addr,
            down: self.down.subscribe(),
        }
    }
}

/// Closes its socket while the server is down (so connects are refused, not hung) and
/// binds the same port again when it is back up.
pub(crate) struct FaultyListener {
    listener: Option<TcpListener>,
    addr: SocketAddr,
    down: watch::Receiver<bool>,
}

impl axum::serve::Listener for FaultyListener {
    type Io = FaultyStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (FaultyStream, SocketAddr) {
        loop {
            if *self.down.borrow_and_update() {
                self.listener = None;
                if self.down.wait_for(|d| !*d).await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
            let listener = match &self.listener {
                Some(l) => l,
                None => match TcpListener::bind(self.addr).await {
                    Ok(l) => self.listener.insert(l),
                    Err(e) => {
                        tracing::warn!("rebinding {} after an outage: {e}", self.addr);
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
            };
            tokio::select! {
                r = listener.accept() => match r {
                    Ok((stream, addr)) => {
                        if *self.down.borrow() {
                            continue;
                        }
                        let _ = stream.set_nodelay(true);
                        return (FaultyStream::new(stream, self.down.clone()), addr);
                    }
                    Err(e) => {
                        tracing::debug!("accept: {e}");
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                },
                r = self.down.changed() => {
                    if r.is_err() {
                        std::future::pending::<()>().await;
                    }
                }
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.addr)
    }
}

type DownFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A connection that breaks (reads and writes fail with ConnectionReset) as soon as an
/// outage begins, as connections to a killed apiserver do.
pub(crate) struct FaultyStream {
    inner: TcpStream,
    broken: DownFuture,
    is_broken: bool,
}

impl FaultyStream {
    fn new(inner: TcpStream, mut down: watch::Receiver<bool>) -> FaultyStream {
        FaultyStream {
            inner,
            broken: Box::pin(async move {
                if down.wait_for(|d| *d).await.is_err() {
                    std::future::pending::<()>().await;
                }
            }),
            is_broken: false,
        }
    }

    fn check(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        if !self.is_broken && self.broken.as_mut().poll(cx).is_ready() {
            self.is_broken = true;
        }
        match self.is_broken {
            true => Err(io::Error::new(
                io::ErrorKind::ConnectionReset,
                "test-apiserver outage",
            )),
            false => Ok(()),
        }
    }
}

impl AsyncRead for FaultyStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.check(cx)?;
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for FaultyStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.check(cx)?;
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.check(cx)?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
