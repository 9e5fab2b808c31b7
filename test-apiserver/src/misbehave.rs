//! What a busy, shared, production kube-apiserver does that a quiet one does not: bearer
//! tokens that expire (401), API Priority and Fairness rejecting a flow over its share (429
//! with `Retry-After`), a watch cache that lags behind etcd (a list at `resourceVersion=0`
//! answered from an older snapshot) and resourceVersions a watch can no longer resume from
//! (410). Each mode is off until a test turns it on; `clear_faults` turns them all off.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::RangeInclusive;
use std::sync::Mutex;

use http::HeaderMap;
use serde_json::{Value, json};

use crate::auth::Tokens;
use crate::registry::ResourceType;
use crate::selector::{FieldSelector, LabelSelector};
use crate::status::ApiError;
use crate::store::{Key, State, to_view};
use crate::{TestServer, lock};

/// The user kube-apiserver gives a request without credentials it recognises (the test
/// server authenticates nobody, so every such request is this user's flow).
pub const ANONYMOUS: &str = "system:anonymous";

/// One flow answered 429 at a share of its requests.
struct Throttle {
    user: String,
    share: f64,
    retry_after: u32,
    /// Requests of the flow seen so far (the share is kept exactly, not drawn at random).
    seen: u64,
}

/// The objects and the resourceVersion a lagging watch cache serves lists from.
struct Snapshot {
    rv: u64,
    objects: BTreeMap<Key, Value>,
}

#[derive(Default)]
pub(crate) struct Misbehaviour {
    expired_tokens: Mutex<HashSet<String>>,
    throttles: Mutex<Vec<Throttle>>,
    /// By resource (plural): each resource has a watch cache of its own in kube-apiserver.
    lagging: Mutex<HashMap<String, Snapshot>>,
    gone: Mutex<Vec<RangeInclusive<u64>>>,
}

/// The bearer token of a request, if any.
pub(crate) fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(http::header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
        .map(str::trim)
}

/// Whether the `n`th request (from 0) of a flow throttled at `share` is rejected: exactly
/// `floor(n × share)` of the first `n` requests are.
pub(crate) fn rejected(n: u64, share: f64) -> bool {
    let share = share.clamp(0.0, 1.0);
    ((n + 1) as f64 * share).floor() > (n as f64 * share).floor()
}

impl Misbehaviour {
    pub(crate) fn clear(&self) {
        lock(&self.expired_tokens).clear();
        lock(&self.throttles).clear();
        lock(&self.lagging).clear();
        lock(&self.gone).clear();
    }

    pub(crate) fn expire_token(&self, token: &str) {
        lock(&self.expired_tokens).insert(token.to_string());
    }

    pub(crate) fn throttle(&self, user: &str, share: f64, retry_after: u32) {
        let mut throttles = lock(&self.throttles);
        throttles.retain(|t| t.user != user);
        if share > 0.0 {
            throttles.push(Throttle {
                user: user.to_string(),
                share,
                retry_after,
                seen: 0,
            });
        }
    }

    pub(crate) fn lag_lists(&self, resource: &str, state: &State) -> u64 {
        let snapshot = Snapshot {
            rv: state.rv,
            objects: state.objects.clone(),
        };
        lock(&self.lagging).insert(resource.to_string(), snapshot);
        state.rv
    }

    pub(crate) fn catch_up_lists(&self) {
        lock(&self.lagging).clear();
    }

    pub(crate) fn expire_resource_versions(&self, rvs: RangeInclusive<u64>) {
        lock(&self.gone).push(rvs);
    }

    /// Whether a watch from `rv` answers 410 because a test said so.
    pub(crate) fn is_gone(&self, rv: u64) -> bool {
        lock(&self.gone).iter().any(|r| r.contains(&rv))
    }

    /// The answer authentication or priority and fairness give before the request is
    /// served: 401 for an expired token (kube-apiserver's body: `Unauthorized`), 429 for a
    /// throttled flow's share (kube-apiserver's APF filter answers in plain text, with
    /// `Retry-After`). Watches are long-running requests, left alone by the throttle.
    pub(crate) fn refuse(
        &self,
        headers: &HeaderMap,
        tokens: &Tokens,
        watch: bool,
    ) -> Option<Refusal> {
        let token = bearer(headers);
        if token.is_some_and(|t| lock(&self.expired_tokens).contains(t)) {
            return Some(Refusal::Unauthorized(ApiError::injected(401)));
        }
        if watch {
            return None;
        }
        let user = token
            .and_then(|t| tokens.user(t))
            .unwrap_or_else(|| ANONYMOUS.to_string());
        let mut throttles = lock(&self.throttles);
        let throttle = throttles.iter_mut().find(|t| t.user == user)?;
        let n = throttle.seen;
        throttle.seen += 1;
        rejected(n, throttle.share).then_some(Refusal::TooManyRequests {
            retry_after: throttle.retry_after,
        })
    }

    /// A list at `resourceVersion=0` while the watch cache lags: the snapshot's objects of
    /// `rt` (in `ns`) that the selectors match, at the snapshot's resourceVersion, all in one
    /// page (kube-apiserver's watch cache ignores `limit` for such lists).
    pub(crate) fn lagged_list(
        &self,
        rt: &ResourceType,
        ns: Option<&str>,
        resource_version: Option<&str>,
        lsel: &LabelSelector,
        fsel: &FieldSelector,
    ) -> Option<(Vec<Value>, Value)> {
        if resource_version != Some("0") {
            return None;
        }
        let lagging = lock(&self.lagging);
        let snapshot = lagging.get(&rt.plural)?;
        let items = snapshot
            .objects
            .iter()
            .filter(|(k, _)| k.storage == rt.storage && ns.is_none_or(|n| k.ns == n))
            .filter(|(_, o)| lsel.matches(o) && fsel.matches(o))
            .map(|(_, o)| to_view(rt, o))
            .collect();
        Some((items, json!({"resourceVersion": snapshot.rv.to_string()})))
    }
}

impl TestServer {
    /// From now on, requests bearing `token` answer 401 Unauthorized with kube-apiserver's
    /// body, as they do once a bound ServiceAccount token has expired or been rotated away.
    pub fn expire_token(&self, token: &str) {
        self.inner.shared.misbehave.expire_token(token);
    }

    /// API Priority and Fairness over its limit for one flow: `share` (0 to 1) of the
    /// requests of `user` (the user a bearer token stands for, see
    /// [`TestServer::add_token`]; requests without a known token are [`ANONYMOUS`]'s) answer
    /// 429 `Too many requests, please try again later.` with `Retry-After:
    /// retry_after_seconds`, exactly that share in order, watches excepted. Other flows are
    /// served as usual. A share of 0 removes the rule.
    pub fn throttle_flow(&self, user: &str, share: f64, retry_after_seconds: u32) {
        self.inner
            .shared
            .misbehave
            .throttle(user, share, retry_after_seconds);
    }

    /// The watch cache of `resource` (a plural, `numbers`) falls behind: from now on, its
    /// lists at `resourceVersion=0` (what informers ask for first) are answered from its
    /// objects as they are now, at today's resourceVersion, which is returned, until
    /// [`TestServer::catch_up_lists`]. Consistent lists (`resourceVersion` unset), watches
    /// and other resources see the live store.
    pub fn lag_lists(&self, resource: &str) -> u64 {
        let state = self.inner.shared.state();
        self.inner.shared.misbehave.lag_lists(resource, &state)
    }

    /// Lists at `resourceVersion=0` of every resource see the live store again.
    pub fn catch_up_lists(&self) {
        self.inner.shared.misbehave.catch_up_lists();
    }

    /// A watch (of any resource) from a resourceVersion in `rvs` answers one ERROR event,
    /// 410 Expired `too old resource version`, as from a watch cache that no longer holds
    /// it; others resume as usual.
    pub fn expire_resource_versions(&self, rvs: RangeInclusive<u64>) {
        self.inner.shared.misbehave.expire_resource_versions(rvs);
    }
}

/// A request turned away before it is served.
pub(crate) enum Refusal {
    Unauthorized(ApiError),
    TooManyRequests { retry_after: u32 },
}

#[cfg(test)]
mod tests {
    use super::rejected;

    #[test]
    fn a_share_rejects_exactly_that_share() {
        let count = |share: f64, n: u64| (0..n).filter(|&i| rejected(i, share)).count();
        assert_eq!(count(0.5, 100), 50);
        assert_eq!(count(0.9, 100), 90);
        assert_eq!(count(0.0, 100), 0);
        assert_eq!(count(1.0, 100), 100);
        assert_eq!(count(0.25, 8), 2);
    }
}
