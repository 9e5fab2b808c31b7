//! Leader election with a `coordination.k8s.io/v1` Lease, so that two replicas never reconcile
//! (and fight over children) at the same time.
//!
//! The algorithm is client-go's `leaderelection` package, which controller-runtime uses, so a
//! Lease written by this manager reads the same in `kubectl get lease -o yaml` as one written by a
//! kubebuilder manager:
//! - a candidate GETs the Lease; when nobody holds it, or the holder has not renewed it for
//!   `leaseDurationSeconds` *as measured on the candidate's own clock since it last saw the
//!   record change* (so clock skew between nodes does not matter), it writes itself in as holder
//!   with an UPDATE carrying the resourceVersion it read: of two candidates racing, the API server
//!   accepts one and answers 409 Conflict to the other;
//! - the holder renews every `retry_period`; when it cannot renew for `renew_deadline` (shorter
//!   than the lease duration) it considers leadership lost, before anyone else may take it;
//! - on graceful shutdown the holder clears `holderIdentity` (and sets the duration to 1 s, as
//!   client-go's `ReleaseOnCancel` does), so a standby takes over at its next retry instead of
//!   waiting for the lease to expire: a rolling update hands over at once.
//!
//! Why not a crate: `kube-leader-election` 0.44 depends on kube 4, and `kube-lease-manager` 0.13
//! writes the Lease with server-side apply and a grace-period model of its own (30 s default,
//! whole-second arithmetic against the holder's clock); the client-go algorithm needs only GET,
//! POST and PUT, which keeps the RBAC rule small and behaves like every other controller.

use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use futures::FutureExt;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ObjectMeta, PostParams};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// The Lease's name; kubebuilder names it `<hash>.<domain>`, ours needs no hash since the
/// project's name is unique in its group.
pub const DEFAULT_LEASE_NAME: &str = "math-controller.math.example.com";

/// Where the service account's namespace is mounted in a pod; the fallback when `POD_NAMESPACE`
/// is not set.
const SERVICE_ACCOUNT_NAMESPACE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/// Leader election settings; the durations default to controller-runtime's (15 s / 10 s / 2 s).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaderElectionConfig {
    /// The Lease's name.
    pub lease_name: String,
    /// The Lease's namespace (in a cluster, the manager's own).
    pub namespace: String,
    /// This replica's name in `holderIdentity`; unique among replicas.
    pub identity: String,
    /// How long a standby waits, after the holder's last renewal it saw, before taking over.
    pub lease_duration: Duration,
    /// How long the holder keeps trying to renew before it gives up leadership; shorter than
    /// `lease_duration` so that it stops before a standby may start.
    pub renew_deadline: Duration,
    /// Pause between attempts to acquire or renew.
    pub retry_period: Duration,
}

impl LeaderElectionConfig {
    /// A configuration with controller-runtime's default durations.
    pub fn new(
        lease_name: impl Into<String>,
        namespace: impl Into<String>,
        identity: impl Into<String>,
    ) -> Self {
        LeaderElectionConfig {
            lease_name: lease_name.into(),
            namespace: namespace.into(),
            identity: identity.into(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }

    /// The configuration for `lease_name`, with identity and namespace taken from the pod
    /// (`POD_NAME`, `POD_NAMESPACE` from the downward API), the namespace falling back to the
    /// mounted service-account namespace; see [`lease_namespace`] for why there is no default
    /// outside a cluster. Without `POD_NAME` the identity is the host name plus a random suffix,
    /// so two local runs never mistake each other for themselves.
    pub fn from_env(lease_name: &str, namespace: Option<&str>) -> Result<Self, Error> {
        let service_account_namespace = || std::fs::read_to_string(SERVICE_ACCOUNT_NAMESPACE).ok();
        let namespace = lease_namespace(
            namespace,
            env_nonempty("POD_NAMESPACE"),
            service_account_namespace,
        )?;
        let identity = env_nonempty("POD_NAME").unwrap_or_else(random_identity);
        Ok(Self::new(lease_name, namespace, identity))
    }

    fn validate(&self) -> Result<(), Error> {
        let problem = if self.lease_name.is_empty() || self.namespace.is_empty() {
            Some("the lease name and namespace must not be empty".to_string())
        } else if self.identity.is_empty() {
            Some("the identity must not be empty".to_string())
        } else if self.retry_period.is_zero() {
            Some("the retry period must be positive".to_string())
        } else if self.renew_deadline >= self.lease_duration {
            Some(format!(
                "the renew deadline ({:?}) must be shorter than the lease duration ({:?})",
                self.renew_deadline, self.lease_duration
            ))
        } else if self.retry_period >= self.renew_deadline {
            Some(format!(
                "the retry period ({:?}) must be shorter than the renew deadline ({:?})",
                self.retry_period, self.renew_deadline
            ))
        } else if self.lease_duration.as_secs() == 0
            || self.lease_duration.as_secs() > i32::MAX as u64
        {
            Some("the lease duration must be between 1 s and i32::MAX s".to_string())
        } else {
            None
        };
        problem.map_or(Ok(()), |p| Err(Error::Config(p)))
    }
}

/// The Lease's namespace: the one given, else in a cluster the pod's own (`POD_NAMESPACE`, else
/// the mounted service-account namespace). Outside a cluster there is no safe default, as
/// controller-runtime also decides: the kubeconfig's namespace differs from laptop to laptop, and
/// a manager that took its Lease there would lead next to the Deployment's leader in
/// `math-system`, and both would reconcile.
pub fn lease_namespace(
    given: Option<&str>,
    pod_namespace: Option<String>,
    service_account_namespace: impl FnOnce() -> Option<String>,
) -> Result<String, Error> {
    let nonempty = |s: String| Some(s.trim().to_string()).filter(|s| !s.is_empty());
    given
        .map(str::to_string)
        .and_then(nonempty)
        .or_else(|| pod_namespace.and_then(nonempty))
        .or_else(|| service_account_namespace().and_then(nonempty))
        .ok_or(Error::NamespaceRequired)
}

fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn random_u64() -> u64 {
    // RandomState is seeded from the OS per instance: enough randomness for an identity suffix
    // and for jitter, without a dependency on `rand`.
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    h.finish()
}

fn random_identity() -> String {
    let host = env_nonempty("HOSTNAME")
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|s| s.trim().to_string())
        })
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "math-controller".to_string());
    format!("{host}_{:016x}", random_u64())
}

/// Failures of leader election.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The configuration cannot work (for example a renew deadline longer than the lease).
    #[error("invalid leader election configuration: {0}")]
    Config(String),
    /// Outside a cluster the Lease's namespace must be given.
    #[error(
        "--leader-elect outside a cluster needs --leader-election-namespace: the namespace of the Lease all replicas share (the Deployment's is math-system)"
    )]
    NamespaceRequired,
    /// The API server refused or failed a request on the Lease.
    #[error("lease {namespace}/{name}: {source}")]
    Api {
        /// The Lease's namespace.
        namespace: String,
        /// The Lease's name.
        name: String,
        /// What the client reported.
        #[source]
        source: kube::Error,
    },
    /// Releasing did not finish within the renew deadline.
    #[error("lease {namespace}/{name}: no answer within {timeout:?}")]
    Timeout {
        /// The Lease's namespace.
        namespace: String,
        /// The Lease's name.
        name: String,
        /// How long we waited.
        timeout: Duration,
    },
}

/// What one attempt to acquire or renew found.
#[derive(Debug, PartialEq, Eq)]
enum Attempt {
    /// We hold the lease now.
    Held,
    /// Someone else holds a valid lease.
    HeldBy(String),
    /// Lost a race (409): try again after the retry period.
    Raced,
}

/// The parts of a lease's spec that tell whether the holder is alive: when any of them changes,
/// the holder (or someone) wrote it, and the expiry clock restarts.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Record {
    holder: String,
    duration_seconds: i32,
    acquire_time: Option<Timestamp>,
    renew_time: Option<Timestamp>,
    transitions: i32,
}

impl Record {
    fn of(spec: Option<&LeaseSpec>) -> Record {
        let spec = spec.cloned().unwrap_or_default();
        Record {
            holder: spec.holder_identity.unwrap_or_default(),
            duration_seconds: spec.lease_duration_seconds.unwrap_or_default(),
            acquire_time: spec.acquire_time.map(|t| t.0),
            renew_time: spec.renew_time.map(|t| t.0),
            transitions: spec.lease_transitions.unwrap_or_default(),
        }
    }
}

/// Who holds a valid lease other than `me`, judged by when *we* last saw the record change.
fn valid_other_holder(
    record: &Record,
    me: &str,
    observed_at: Instant,
    now: Instant,
    default_duration: Duration,
) -> Option<String> {
    if record.holder.is_empty() || record.holder == me {
        return None;
    }
    let duration = u64::try_from(record.duration_seconds)
        .ok()
        .filter(|s| *s > 0)
        .map_or(default_duration, Duration::from_secs);
    (now < observed_at + duration).then(|| record.holder.clone())
}

/// The spec that makes `me` the holder, renewing when we already hold it.
fn holder_spec(old: &Record, me: &str, duration: Duration, now: Timestamp) -> LeaseSpec {
    let renewing = old.holder == me;
    LeaseSpec {
        holder_identity: Some(me.to_string()),
        lease_duration_seconds: Some(i32::try_from(duration.as_secs()).unwrap_or(i32::MAX)),
        acquire_time: Some(MicroTime(match (renewing, old.acquire_time) {
            (true, Some(t)) => t,
            _ => now,
        })),
        renew_time: Some(MicroTime(now)),
        lease_transitions: Some(if renewing {
            old.transitions
        } else {
            old.transitions.saturating_add(1)
        }),
        ..LeaseSpec::default()
    }
}

/// The spec that hands the lease back (client-go's release record).
fn released_spec(old: &Record, now: Timestamp) -> LeaseSpec {
    LeaseSpec {
        holder_identity: None,
        lease_duration_seconds: Some(1),
        acquire_time: Some(MicroTime(now)),
        renew_time: Some(MicroTime(now)),
        lease_transitions: Some(old.transitions),
        ..LeaseSpec::default()
    }
}

/// The state of one candidate between attempts.
struct Elector {
    api: Api<Lease>,
    cfg: LeaderElectionConfig,
    observed: Option<(Record, Instant)>,
}

impl Elector {
    fn api_error(&self, source: kube::Error) -> Error {
        Error::Api {
            namespace: self.cfg.namespace.clone(),
            name: self.cfg.lease_name.clone(),
            source,
        }
    }

    fn observe(&mut self, record: Record) {
        let now = Instant::now();
        match &self.observed {
            Some((seen, _)) if *seen == record => {}
            _ => self.observed = Some((record, now)),
        }
    }

    async fn try_acquire_or_renew(&mut self) -> Result<Attempt, Error> {
        let me = self.cfg.identity.clone();
        let existing = self
            .api
            .get_opt(&self.cfg.lease_name)
            .await
            .map_err(|e| self.api_error(e))?;
        let Some(mut lease) = existing else {
            let mut spec = holder_spec(
                &Record::of(None),
                &me,
                self.cfg.lease_duration,
                Timestamp::now(),
            );
            // A new lease has seen no transition yet (client-go starts at 0 too).
            spec.lease_transitions = Some(0);
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.cfg.lease_name.clone()),
                    namespace: Some(self.cfg.namespace.clone()),
                    ..ObjectMeta::default()
                },
                spec: Some(spec),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(created) => {
                    self.observe(Record::of(created.spec.as_ref()));
                    Ok(Attempt::Held)
                }
                Err(kube::Error::Api(s)) if s.code == 409 => Ok(Attempt::Raced),
                Err(e) => Err(self.api_error(e)),
            };
        };

        let record = Record::of(lease.spec.as_ref());
        self.observe(record.clone());
        let observed_at = self.observed.as_ref().map_or_else(Instant::now, |o| o.1);
        if let Some(holder) = valid_other_holder(
            &record,
            &me,
            observed_at,
            Instant::now(),
            self.cfg.lease_duration,
        ) {
            return Ok(Attempt::HeldBy(holder));
        }

        // resourceVersion stays as read: the update succeeds only if nobody wrote in between.
        lease.spec = Some(holder_spec(
            &record,
            &me,
            self.cfg.lease_duration,
            Timestamp::now(),
        ));
        match self
            .api
            .replace(&self.cfg.lease_name, &PostParams::default(), &lease)
            .await
        {
            Ok(updated) => {
                self.observe(Record::of(updated.spec.as_ref()));
                Ok(Attempt::Held)
            }
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(Attempt::Raced),
            Err(e) => Err(self.api_error(e)),
        }
    }

    /// Clears the holder if it is still us; retries conflicts (another candidate may have read
    /// the lease meanwhile, its update then fails, not ours).
    async fn release(&mut self) -> Result<(), Error> {
        for _ in 0..5 {
            let Some(mut lease) = self
                .api
                .get_opt(&self.cfg.lease_name)
                .await
                .map_err(|e| self.api_error(e))?
            else {
                return Ok(());
            };
            let record = Record::of(lease.spec.as_ref());
            if record.holder != self.cfg.identity {
                return Ok(());
            }
            lease.spec = Some(released_spec(&record, Timestamp::now()));
            match self
                .api
                .replace(&self.cfg.lease_name, &PostParams::default(), &lease)
                .await
            {
                Ok(_) => {
                    tracing::info!(
                        lease = %self.cfg.lease_name,
                        namespace = %self.cfg.namespace,
                        identity = %self.cfg.identity,
                        "released the leader lease, a standby can take over now"
                    );
                    return Ok(());
                }
                Err(kube::Error::Api(s)) if s.code == 409 => continue,
                Err(e) => return Err(self.api_error(e)),
            }
        }
        Ok(())
    }
}

/// Sleep for the retry period stretched by up to 120 %, as client-go does, so that standbys
/// started together do not all ask at the same moment.
fn jittered(period: Duration) -> Duration {
    let factor = (random_u64() % 1000) as f64 / 1000.0 * 1.2;
    period + period.mul_f64(factor)
}

/// Waits until this replica holds the lease, then keeps renewing it in the background.
///
/// Returns `Ok(None)` if `shutdown` resolves first (a standby told to stop), and an error only
/// for a configuration that cannot work: API errors while waiting are logged and retried, since
/// a standby must survive API-server restarts and RBAC being fixed after it started.
pub async fn acquire(
    client: kube::Client,
    cfg: LeaderElectionConfig,
    shutdown: impl Future,
) -> Result<Option<Leadership>, Error> {
    cfg.validate()?;
    let mut elector = Elector {
        api: Api::namespaced(client, &cfg.namespace),
        cfg,
        observed: None,
    };
    let mut shutdown = std::pin::pin!(shutdown);
    let mut last_holder: Option<String> = None;
    tracing::info!(
        lease = %elector.cfg.lease_name,
        namespace = %elector.cfg.namespace,
        identity = %elector.cfg.identity,
        "waiting to become leader"
    );
    loop {
        // An attempt is never cancelled half-way: a write the server applied but we never heard
        // of would leave the lease held by nobody who knows it.
        let attempt =
            tokio::time::timeout(elector.cfg.renew_deadline, elector.try_acquire_or_renew()).await;
        match attempt {
            Ok(Ok(Attempt::Held)) => break,
            Ok(Ok(Attempt::HeldBy(holder))) => {
                if last_holder.as_ref() != Some(&holder) {
                    tracing::info!(
                        leader = %holder,
                        "another replica leads; standing by until its lease expires or is released"
                    );
                    last_holder = Some(holder);
                }
            }
            Ok(Ok(Attempt::Raced)) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "cannot acquire the leader lease yet"),
            Err(_) => {
                tracing::warn!("the API server did not answer about the leader lease in time")
            }
        }
        tokio::select! {
            _ = &mut shutdown => return Ok(None),
            _ = tokio::time::sleep(jittered(elector.cfg.retry_period)) => {}
        }
    }

    if shutdown.as_mut().now_or_never().is_some() {
        elector.release().await?;
        return Ok(None);
    }
    tracing::info!(
        lease = %elector.cfg.lease_name,
        identity = %elector.cfg.identity,
        "became leader"
    );
    let (lost_tx, lost_rx) = watch::channel(false);
    let (stop_tx, stop_rx) = oneshot::channel();
    let task = tokio::spawn(renew(elector, stop_rx, lost_tx));
    Ok(Some(Leadership {
        lost: lost_rx,
        stop: Some(stop_tx),
        task: Some(task),
    }))
}

/// Renews every retry period until stopped, or until renewal has failed for the renew deadline
/// or someone else holds the lease; then reports loss and stops.
async fn renew(
    mut elector: Elector,
    mut stop: oneshot::Receiver<()>,
    lost: watch::Sender<bool>,
) -> Elector {
    let mut last_renewal = Instant::now();
    loop {
        tokio::select! {
            _ = &mut stop => return elector,
            _ = tokio::time::sleep(elector.cfg.retry_period) => {}
        }
        let deadline = last_renewal + elector.cfg.renew_deadline;
        let outcome = tokio::time::timeout_at(deadline, elector.try_acquire_or_renew()).await;
        let reason = match outcome {
            Ok(Ok(Attempt::Held)) => {
                last_renewal = Instant::now();
                continue;
            }
            Ok(Ok(Attempt::HeldBy(holder))) => format!("{holder} holds the lease now"),
            Ok(Ok(Attempt::Raced)) if Instant::now() < deadline => continue,
            Ok(Err(e)) if Instant::now() < deadline => {
                tracing::warn!(error = %e, "cannot renew the leader lease, retrying");
                continue;
            }
            Ok(Ok(Attempt::Raced)) => "the lease kept changing under us".to_string(),
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!(
                "no renewal within the renew deadline of {:?}",
                elector.cfg.renew_deadline
            ),
        };
        tracing::error!(
            lease = %elector.cfg.lease_name,
            identity = %elector.cfg.identity,
            %reason,
            "lost leadership"
        );
        lost.send_replace(true);
        return elector;
    }
}

/// Proof that this replica held the lease; renewal runs in the background while it lives.
/// Dropping it stops renewing without releasing (the lease then expires after its duration);
/// call [`Leadership::release`] on graceful shutdown instead.
#[derive(Debug)]
pub struct Leadership {
    lost: watch::Receiver<bool>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<Elector>>,
}

impl std::fmt::Debug for Elector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Elector")
            .field("cfg", &self.cfg)
            .finish_non_exhaustive()
    }
}

impl Leadership {
    /// Resolves when leadership is lost (renewal failed past the renew deadline, or another
    /// replica took the lease). The manager must then stop reconciling at once; like
    /// controller-runtime it should exit, and let the Deployment restart it as a standby.
    pub async fn lost(&self) {
        let mut rx = self.lost.clone();
        // An Err means the renewal task ended without saying so (it panicked): not leading.
        let _ = rx.wait_for(|lost| *lost).await;
    }

    /// Whether leadership has been lost already.
    pub fn is_lost(&self) -> bool {
        *self.lost.borrow() || self.task.as_ref().is_none_or(|t| t.is_finished())
    }

    /// Stops renewing and hands the lease back, so a standby takes over at its next retry.
    /// Call it after the controllers have finished their in-flight reconciles.
    pub async fn release(mut self) -> Result<(), Error> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let Some(task) = self.task.take() else {
            return Ok(());
        };
        let Ok(mut elector) = task.await else {
            return Ok(());
        };
        let timeout = elector.cfg.renew_deadline;
        match tokio::time::timeout(timeout, elector.release()).await {
            Ok(result) => result,
            Err(_) => Err(Error::Timeout {
                namespace: elector.cfg.namespace.clone(),
                name: elector.cfg.lease_name.clone(),
                timeout,
            }),
        }
    }
}

impl Drop for Leadership {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn record(holder: &str, duration: i32) -> Record {
        Record {
            holder: holder.to_string(),
            duration_seconds: duration,
            acquire_time: Some(ts("2025-01-01T00:00:00Z")),
            renew_time: Some(ts("2025-01-01T00:00:10Z")),
            transitions: 3,
        }
    }

    #[test]
    fn defaults_match_controller_runtime_and_validate() {
        let cfg = LeaderElectionConfig::new("l", "ns", "me");
        assert_eq!(cfg.lease_duration, Duration::from_secs(15));
        assert_eq!(cfg.renew_deadline, Duration::from_secs(10));
        assert_eq!(cfg.retry_period, Duration::from_secs(2));
        cfg.validate().unwrap();
    }

    #[test]
    fn impossible_timings_are_refused() {
        let mut cfg = LeaderElectionConfig::new("l", "ns", "me");
        cfg.renew_deadline = Duration::from_secs(15);
        assert!(matches!(cfg.validate(), Err(Error::Config(_))));
        let mut cfg = LeaderElectionConfig::new("l", "ns", "me");
        cfg.retry_period = Duration::from_secs(10);
        assert!(cfg.validate().is_err());
        assert!(LeaderElectionConfig::new("l", "ns", "").validate().is_err());
        assert!(
            LeaderElectionConfig::new("", "ns", "me")
                .validate()
                .is_err()
        );
    }

    #[test]
    fn other_holder_is_valid_until_its_duration_passes_on_our_clock() {
        let seen = Instant::now();
        let r = record("other", 15);
        let d = Duration::from_secs(15);
        assert_eq!(
            valid_other_holder(&r, "me", seen, seen + Duration::from_secs(14), d),
            Some("other".to_string())
        );
        assert_eq!(
            valid_other_holder(&r, "me", seen, seen + Duration::from_secs(15), d),
            None
        );
    }

    #[test]
    fn empty_or_own_holder_can_be_taken_at_once() {
        let seen = Instant::now();
        let d = Duration::from_secs(15);
        assert_eq!(
            valid_other_holder(&record("", 1), "me", seen, seen, d),
            None
        );
        assert_eq!(
            valid_other_holder(&record("me", 15), "me", seen, seen, d),
            None
        );
    }

    #[test]
    fn missing_duration_falls_back_to_ours() {
        let seen = Instant::now();
        let d = Duration::from_secs(15);
        let r = record("other", 0);
        assert!(valid_other_holder(&r, "me", seen, seen + Duration::from_secs(14), d).is_some());
        assert!(valid_other_holder(&r, "me", seen, seen + Duration::from_secs(16), d).is_none());
    }

    #[test]
    fn taking_over_counts_a_transition_and_renewing_keeps_acquire_time() {
        let now = ts("2025-01-01T00:01:00Z");
        let d = Duration::from_secs(15);
        let taken = holder_spec(&record("other", 15), "me", d, now);
        assert_eq!(taken.holder_identity.as_deref(), Some("me"));
        assert_eq!(taken.lease_transitions, Some(4));
        assert_eq!(taken.acquire_time, Some(MicroTime(now)));
        assert_eq!(taken.renew_time, Some(MicroTime(now)));
        assert_eq!(taken.lease_duration_seconds, Some(15));

        let renewed = holder_spec(&record("me", 15), "me", d, now);
        assert_eq!(renewed.lease_transitions, Some(3));
        assert_eq!(
            renewed.acquire_time,
            Some(MicroTime(ts("2025-01-01T00:00:00Z")))
        );
        assert_eq!(renewed.renew_time, Some(MicroTime(now)));

        let fresh = holder_spec(&Record::of(None), "me", d, now);
        assert_eq!(fresh.lease_transitions, Some(1));
    }

    #[test]
    fn release_clears_the_holder_like_client_go() {
        let now = ts("2025-01-01T00:01:00Z");
        let released = released_spec(&record("me", 15), now);
        assert_eq!(released.holder_identity, None);
        assert_eq!(released.lease_duration_seconds, Some(1));
        assert_eq!(released.lease_transitions, Some(3));
    }

    #[test]
    fn record_changes_restart_the_expiry_clock() {
        let spec = holder_spec(
            &Record::of(None),
            "other",
            Duration::from_secs(15),
            ts("2025-01-01T00:00:00Z"),
        );
        let a = Record::of(Some(&spec));
        let mut later = spec.clone();
        later.renew_time = Some(MicroTime(ts("2025-01-01T00:00:02Z")));
        assert_ne!(a, Record::of(Some(&later)));
        assert_eq!(a, Record::of(Some(&spec)));
    }

    #[test]
    fn jitter_stays_within_client_go_bounds() {
        let p = Duration::from_secs(2);
        for _ in 0..100 {
            let j = jittered(p);
            assert!(j >= p && j <= p.mul_f64(2.2), "{j:?}");
        }
    }

    #[test]
    fn the_lease_namespace_is_given_or_the_pods() {
        let none = || None;
        assert_eq!(
            lease_namespace(Some("math-system"), Some("pod-ns".into()), none).unwrap(),
            "math-system"
        );
        assert_eq!(
            lease_namespace(None, Some("pod-ns".into()), none).unwrap(),
            "pod-ns"
        );
        assert_eq!(
            lease_namespace(None, None, || Some("sa-ns\n".into())).unwrap(),
            "sa-ns"
        );
        assert!(matches!(
            lease_namespace(None, None, none),
            Err(Error::NamespaceRequired)
        ));
        assert!(matches!(
            lease_namespace(Some(""), None, || Some(" ".into())),
            Err(Error::NamespaceRequired)
        ));
    }

    #[test]
    fn random_identities_differ() {
        assert_ne!(random_identity(), random_identity());
    }
}
