//! The state one server's handlers share, and kube-controller-manager's loop that works on it.

use crate::{RequestFilter, RequestRecord, Verb, auth, faults, misbehave, store};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

pub(crate) struct Fault {
    pub(crate) filter: RequestFilter,
    pub(crate) remaining: usize,
    pub(crate) status: u16,
}

pub(crate) struct Shared {
    pub(crate) state: Mutex<store::State>,
    pub(crate) log: Mutex<Vec<RequestRecord>>,
    pub(crate) faults: Mutex<Vec<Fault>>,
    pub(crate) latencies: Mutex<Vec<(RequestFilter, Duration)>>,
    /// Under the write cap, how many slots the writes a filter matches take.
    pub(crate) write_weights: Mutex<Vec<(RequestFilter, f64)>>,
    pub(crate) faults_io: faults::Faults,
    pub(crate) gc_notify: Notify,
    pub(crate) bookmark_interval: Mutex<Duration>,
    pub(crate) url: String,
    /// Bearer tokens TokenReviews recognise.
    pub(crate) tokens: auth::Tokens,
    /// After a restart: until when custom-resource paths answer 503 (CRD informer not synced).
    pub(crate) crds_unavailable_until: Mutex<Option<Instant>>,
    /// Expired tokens, throttled flows, a lagging list cache, resourceVersions gone.
    pub(crate) misbehave: misbehave::Misbehaviour,
    /// Whether requests are authorized (RBAC), see [`rbac`](crate::rbac).
    pub(crate) rbac: crate::rbac::Rbac,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    pub(crate) fn state(&self) -> MutexGuard<'_, store::State> {
        lock(&self.state)
    }

    /// Consumes one injected fault matching the request, if any.
    pub(crate) fn take_fault(
        &self,
        verb: Verb,
        resource: &str,
        sub: Option<&str>,
        ns: Option<&str>,
        name: Option<&str>,
    ) -> Option<u16> {
        let mut faults = lock(&self.faults);
        let f = faults
            .iter_mut()
            .find(|f| f.remaining > 0 && f.filter.matches_parts(verb, resource, sub, ns, name))?;
        f.remaining -= 1;
        let status = f.status;
        faults.retain(|f| f.remaining > 0);
        Some(status)
    }

    pub(crate) fn latency(&self, request: &RequestRecord) -> Duration {
        lock(&self.latencies)
            .iter()
            .filter(|(f, _)| f.matches(request))
            .map(|(_, d)| *d)
            .max()
            .unwrap_or_default()
    }

    /// How many write slots a write takes under the cap (1 unless a rule says otherwise).
    pub(crate) fn write_weight(&self, request: &RequestRecord) -> f64 {
        lock(&self.write_weights)
            .iter()
            .find(|(f, _)| f.matches(request))
            .map_or(1.0, |(_, w)| *w)
    }

    pub(crate) fn record(&self, r: RequestRecord) {
        lock(&self.log).push(r);
    }
}

/// kube-controller-manager's part: the garbage collector, the quota controller and the
/// namespace controller, woken after every write request and at least once a second (or
/// when a controller asked to be: a quota recount or a namespace deletion step is due).
pub(crate) async fn background_loop(shared: std::sync::Weak<Shared>) {
    let mut next: Option<Instant> = None;
    loop {
        let Some(s) = shared.upgrade() else { return };
        let now = Instant::now();
        let sleep = next
            .map(|at| at.saturating_duration_since(now))
            .unwrap_or(Duration::from_secs(1))
            .min(Duration::from_secs(1));
        tokio::select! {
            _ = s.gc_notify.notified() => {}
            _ = tokio::time::sleep(sleep) => {}
        }
        let mut st = s.state();
        for _ in 0..100 {
            if !st.gc_pass() {
                break;
            }
        }
        st.namespace_sync();
        st.crd_cleanup_sync();
        for _ in 0..100 {
            if !st.gc_pass() {
                break;
            }
        }
        st.quota_sync();
        next = [
            st.quota_next_due(),
            st.namespaces_next_due(),
            st.crd_cleanup_next_due(),
            st.gc_next_due(),
        ]
        .into_iter()
        .flatten()
        .min();
    }
}
