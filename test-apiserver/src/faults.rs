//! What a test does *to* the server, as opposed to what it asks of it: injected failures and
//! latency, watches ended and history compacted as on an apiserver restart, the bookmark
//! interval, and the OwnerReferencesPermissionEnforcement admission plugin with its checks.

use std::time::Duration;

use serde_json::Value;

use crate::{AuthorizationCheck, Fault, PolicyRule, RequestFilter, TestServer, lock};

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

    /// Removes all pending injected faults and latencies.
    pub fn clear_faults(&self) {
        lock(&self.inner.shared.faults).clear();
        lock(&self.inner.shared.latencies).clear();
    }

    /// Requests matching `filter` are delayed by `latency` (zero removes the rule).
    pub fn set_latency(&self, filter: RequestFilter, latency: Duration) {
        let mut l = lock(&self.inner.shared.latencies);
        l.retain(|(f, _)| *f != filter);
        if !latency.is_zero() {
            l.push((filter, latency));
        }
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

    /// Turns on kube-apiserver's OwnerReferencesPermissionEnforcement admission plugin for
    /// the rest of the server's life: setting `blockOwnerDeletion: true` on an ownerReference
    /// needs `update` on the owner's `finalizers`, changing ownerReferences on an update needs
    /// `delete` on the object, else 403. `rules` (RBAC PolicyRules as JSON, e.g. a ClusterRole's
    /// `rules`) are what the one user of this server may do, in every namespace.
    pub fn enforce_owner_references(&self, rules: &[Value]) -> anyhow::Result<()> {
        let rules = rules
            .iter()
            .map(|r| serde_json::from_value(r.clone()))
            .collect::<Result<Vec<PolicyRule>, _>>()?;
        self.inner
            .shared
            .state()
            .admission
            .enforce_owner_references(rules);
        Ok(())
    }

    /// The questions admission plugins asked the authorizer, with the answers, in order.
    pub fn authorization_checks(&self) -> Vec<AuthorizationCheck> {
        self.inner.shared.state().admission.checks().to_vec()
    }
}
