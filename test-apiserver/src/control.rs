//! What a test does *to* the server, as opposed to what it asks of it: injected failures and
//! latency, outages, restarts and a write cap (their switches live in `faults.rs`), watches
//! ended and history compacted, the bookmark interval, and the pace of the controllers that
//! run behind the API (namespace deletion, quota replenishment). The
//! OwnerReferencesPermissionEnforcement switch is in `admission.rs`.

use std::time::{Duration, Instant};

use crate::{Fault, RequestFilter, TestServer, lock};

/// How a restart of kube-apiserver looks to clients, for [`TestServer::restart_with`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Restart {
    /// How long the port refuses connections.
    pub downtime: Duration,
    /// Once the port is back, how long requests for custom resources (and their
    /// `/apis/<group>[/<version>]` discovery documents) are answered 503 ServiceUnavailable
    /// `the request has been made before all known HTTP paths have been installed, please
    /// try again` with `Retry-After: 5`, as kube-apiserver answers them until its CRD
    /// informer has synced (zero: not at all).
    pub custom_resources_unavailable: Duration,
}

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
        lock(&self.inner.shared.write_weights).clear();
        self.inner.shared.misbehave.clear();
        self.inner.shared.faults_io.set_write_rate(0);
        self.inner
            .shared
            .faults_io
            .set_watch_event_cost(Duration::ZERO);
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

    /// A kube-apiserver restart: an outage of `downtime` (as [`TestServer::outage`]), after
    /// which the watch cache is gone ([`TestServer::resume_as_restart`]): every watch that
    /// resumes from a resourceVersion issued before the restart gets an `ERROR` event, 410
    /// Expired `too old resource version: X (Y)`, and must list again. Returns at once.
    pub fn restart(&self, downtime: Duration) {
        self.restart_with(Restart {
            downtime,
            ..Default::default()
        });
    }

    /// [`TestServer::restart`] with the whole description of how the server comes back.
    pub fn restart_with(&self, restart: Restart) {
        self.stop();
        let s = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(restart.downtime).await;
            s.resume_as_restart_with(restart.custom_resources_unavailable);
        });
    }

    /// Ends an outage ([`TestServer::stop`]) as a restarted kube-apiserver comes back: the
    /// same objects and resourceVersion counter (etcd kept them), but a new watch cache,
    /// so watches from a resourceVersion issued before now answer 410 Expired; lists
    /// (also paged ones, with their `continue` tokens) and watches from the current
    /// resourceVersion work.
    pub fn resume_as_restart(&self) {
        self.resume_as_restart_with(Duration::ZERO);
    }

    fn resume_as_restart_with(&self, custom_resources_unavailable: Duration) {
        self.inner.shared.state().lose_watch_cache();
        *lock(&self.inner.shared.crds_unavailable_until) =
            Some(Instant::now() + custom_resources_unavailable);
        self.resume();
    }

    /// How long kube-controller-manager's namespace controller waits after a namespace's
    /// DELETE before it deletes the content (the real one: 5 s; default here: none).
    pub fn set_namespace_deletion_delay(&self, delay: Duration) {
        self.inner
            .shared
            .state()
            .set_namespace_deletion_delay(delay);
    }

    /// How long after a delete the quota controller recounts the namespace's quotas, which
    /// is when the delete frees its slot (measured on kube-controller-manager v1.24,
    /// loopback: 20–60 ms from the DELETE to an admitted create; default here: at the next
    /// background pass, right after the delete's response).
    pub fn set_quota_replenish_delay(&self, delay: Duration) {
        self.inner.shared.state().set_quota_replenish_delay(delay);
    }

    /// Bounds the garbage collector to `per_second` deletions, reference drops and finalizer
    /// removals a second (0 removes the bound; none by default). kube-controller-manager's
    /// garbage collector sends each of them as a request through a client limited to 20 a
    /// second by default (`--kube-api-qps`, burst 30, v1.24): on a real v1.24 a room of thirty
    /// workshop participants deleting Fermats at once kept a foreground deletion waiting more
    /// than 30 s, and none waited with the limit raised to 200.
    pub fn set_gc_rate(&self, per_second: u32) {
        self.inner.shared.state().set_gc_rate(per_second);
    }

    /// Caps writes at `per_second` (0 removes the cap); writes over the cap queue for
    /// their turn, as behind etcd on a loaded control plane.
    pub fn set_write_rate(&self, per_second: u32) {
        self.inner.shared.faults_io.set_write_rate(per_second);
    }

    /// Under the write cap ([`TestServer::set_write_rate`]), writes matching `filter` take
    /// `weight` slots instead of one (the first matching rule counts). On a loopback
    /// kube-apiserver v1.24 an Event cost the control plane about half the CPU of an object
    /// write (5001 Events, ~5 s of CPU; 30 001 object writes, ~56 s).
    pub fn set_write_weight(&self, filter: RequestFilter, weight: f64) {
        let mut w = lock(&self.inner.shared.write_weights);
        w.retain(|(f, _)| *f != filter);
        w.push((filter, weight));
    }

    /// Under the write cap ([`TestServer::set_write_rate`]), each watch event delivered
    /// costs the server `cost` of its time, which the queued writes wait for (zero: free).
    /// A real kube-apiserver encodes and sends every event to every watcher on the CPU its
    /// writes need: measured on a loopback kube-apiserver v1.24 (`BENCH_FLOOR_WATCHED=1`),
    /// three watches receiving one event per write took 1.2 s more of its CPU for 30 001
    /// writes, and the writes 3–6 % longer.
    pub fn set_watch_event_cost(&self, cost: Duration) {
        self.inner.shared.faults_io.set_watch_event_cost(cost);
    }

    /// Under the write cap, `busy` of the server's time is spent on something else now:
    /// writes queued behind it start that much later. The benchmark charges the CPU time the
    /// manager takes, which on one machine is CPU kube-apiserver and etcd do not get.
    pub fn charge(&self, busy: Duration) {
        self.inner.shared.faults_io.charge(busy);
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
