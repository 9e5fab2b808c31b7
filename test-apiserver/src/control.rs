//! What a test does *to* the server, as opposed to what it asks of it: injected failures and
//! latency, outages and a write cap (their switches live in `faults.rs`), watches ended and
//! history compacted as on an apiserver restart, the bookmark interval. The
//! OwnerReferencesPermissionEnforcement switch is in `admission.rs`.

use std::time::Duration;

use crate::{Fault, RequestFilter, TestServer, lock};

impl TestServer {
    /// The next `times` requests matching `filter` fail with `status` (500, 409, 429, ...)
    /// and a `Status` body with the matching reason.
    pub fn fail_next(&self, filter: RequestFilter, times: usize, status: u16) {
        lock(&self.inner.shared.faults).push(Fault {
            filter,
            remaining: times,
            status,
        });
    }

    /// Removes all pending injected faults, latencies and the write cap.
    pub fn clear_faults(&self) {
        lock(&self.inner.shared.faults).clear();
        lock(&self.inner.shared.latencies).clear();
        self.inner.shared.faults_io.set_write_rate(0);
    }

    /// Requests matching `filter` are delayed by `latency` (zero removes the rule).
    pub fn set_latency(&self, filter: RequestFilter, latency: Duration) {
        let mut l = lock(&self.inner.shared.latencies);
        l.retain(|(f, _)| *f != filter);
        if !latency.is_zero() {
            l.push((filter, latency));
        }
    }

    /// Starts an outage: the port refuses connections and open connections (watches
    /// included) are reset, as when kube-apiserver is killed. Every object and the
    /// resourceVersion counter are kept for [`TestServer::resume`].
    pub fn stop(&self) {
        self.inner.shared.faults_io.set_down(true);
        self.close_watches();
    }

    /// Ends an outage: the same port accepts connections again and serves the same
    /// objects with the same resourceVersions.
    pub fn resume(&self) {
        self.inner.shared.faults_io.set_down(false);
    }

    /// Whether the server is in an outage.
    pub fn is_down(&self) -> bool {
        self.inner.shared.faults_io.is_down()
    }

    /// [`TestServer::stop`] now and [`TestServer::resume`] after `duration`, in the
    /// background.
    pub fn outage(&self, duration: Duration) {
        self.stop();
        let s = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(duration).await;
            s.resume();
        });
    }

    /// Caps writes at `per_second` (0 removes the cap); writes over the cap queue for
    /// their turn, as behind etcd on a loaded control plane.
    pub fn set_write_rate(&self, per_second: u32) {
        self.inner.shared.faults_io.set_write_rate(per_second);
    }

    /// Ends every open watch now (clients see the stream end, as on an apiserver restart).
    pub fn close_watches(&self) {
        self.inner.shared.state().watch.watchers.clear();
    }

    /// Every resourceVersion issued so far now answers 410 Gone (watch: an ERROR event
    /// with reason Expired; list with `continue`: HTTP 410).
    pub fn compact(&self) {
        self.inner.shared.state().compact();
    }

    /// Changes how often watches get BOOKMARK events.
    pub fn set_bookmark_interval(&self, interval: Duration) {
        *lock(&self.inner.shared.bookmark_interval) = interval;
    }
}
