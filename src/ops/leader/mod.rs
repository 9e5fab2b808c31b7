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
//! Why not a crate: `kube-leader-election` 0.44 depends on kube 4, and `kube-lease-manager`
//! 0.13, tried against `tests/operations.rs`, hands a released lease over only when it would
//! have expired (its standbys sleep until then): a graceful stop does not hand over at once. It
//! also has no renew deadline, judges expiry on the holder's clock, and writes with server-side
//! apply (RBAC `patch`). The client-go algorithm needs only GET, POST and PUT, which keeps the
//! RBAC rule small and behaves like every other controller. docs/operations.md says more.
//!
//! Files: `config.rs` (settings), `lease.rs` (the pure decisions), `elector.rs` (the requests on
//! the Lease), `error.rs`; this file runs the loops: wait to lead, renew, report loss, release.

mod config;
mod elector;
mod error;
mod lease;

use std::future::Future;

use futures::FutureExt;
use kube::api::Api;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

pub use config::{DEFAULT_LEASE_NAME, LeaderElectionConfig, lease_namespace};
pub use error::Error;

use crate::ops::client::RETRY_AFTER_CAP;
use elector::Elector;
use lease::{Attempt, jittered};

/// Waits until this replica holds the lease, then keeps renewing it in the background.
///
/// Returns `Ok(None)` if `shutdown` resolves first (a standby told to stop), and an error only
/// for a configuration that cannot work: API errors while waiting are logged and retried, since
/// a standby must survive API-server restarts and RBAC being fixed after it started.
///
/// It logs only what the caller cannot see (who leads meanwhile, failed attempts); the caller
/// says that it waits and that it leads, so each change of state is one line in the log.
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
    let mut failed = 0u32;
    loop {
        // After a failed renewal, again as soon as a `Retry-After` would allow (the client
        // sends no lease request again itself: `ops/client.rs`, `is_lease`).
        let pause = match failed {
            0 => elector.cfg.retry_period,
            _ => elector.cfg.retry_period.min(RETRY_AFTER_CAP),
        };
        tokio::select! {
            _ = &mut stop => return elector,
            _ = tokio::time::sleep(pause) => {}
        }
        let deadline = last_renewal + elector.cfg.renew_deadline;
        // A renewal proves the lease held when it was sent (its renewTime, what a standby
        // counts from), not when its answer came back: a late answer must not move the
        // deadline past the point where a standby may take over.
        let sent = Instant::now();
        let outcome = tokio::time::timeout_at(deadline, elector.try_acquire_or_renew()).await;
        let reason = match outcome {
            Ok(Ok(Attempt::Held)) => {
                if failed > 0 {
                    tracing::info!(failed, "renewed the leader lease again");
                }
                (last_renewal, failed) = (sent, 0);
                continue;
            }
            Ok(Ok(Attempt::HeldBy(holder))) => format!("{holder} holds the lease now"),
            Ok(Ok(Attempt::Raced)) if Instant::now() < deadline => continue,
            Ok(Err(e)) if Instant::now() < deadline => {
                // Told once when renewals start failing; the count when they recover.
                if failed == 0 {
                    tracing::warn!(error = %e, "cannot renew the leader lease, retrying");
                }
                failed += 1;
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
