//! How the manager stops: a graceful drain with a bound, and an immediate stop when the lease is
//! lost.
//!
//! On SIGTERM the controllers stop taking work and the reconciles in flight finish, but a
//! reconcile stuck on a slow API server must not hold the pod past its
//! `terminationGracePeriodSeconds` (after which the kubelet sends SIGKILL and the lease is never
//! released): the drain is bounded by `--shutdown-timeout`, then what is still running is dropped.
//! A leader that lost its lease must not write even once more, since another replica may be
//! reconciling already: it drops its controllers at once, in-flight requests included, and exits
//! (like controller-runtime, the restarted pod comes back as a standby).

use std::future::Future;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// How long releasing the lease may take after the drain, so that drain plus release stay
/// within the grace period (`deploy/`: `--shutdown-timeout` 10 s + 2 s < 15 s). A release that
/// does not finish in time is left to expire after the lease duration.
pub const RELEASE_TIMEOUT: Duration = Duration::from_secs(2);

/// Why the controllers did not end with a complete graceful drain.
#[derive(Debug, thiserror::Error)]
pub enum Stopped {
    /// Another replica may be reconciling: this one stopped at once.
    #[error(
        "leadership lost: stopped at once, abandoning the reconciles in flight, so that only the new leader writes"
    )]
    LeadershipLost,
    /// The reconciles in flight did not finish in time and were dropped half-way.
    #[error(
        "the reconciles in flight did not finish within the shutdown timeout ({0:?}); stopped them half-way"
    )]
    DrainTimedOut(Duration),
}

/// Drives `controllers` until they end, which they do on their own once `stop` is cancelled and
/// their in-flight reconciles have finished. Two things cut that short by dropping
/// `controllers` (and with it every reconcile and request in flight): `lost` resolving at any
/// time, and the drain lasting longer than `shutdown_timeout` after `stop` was cancelled.
pub async fn drive(
    controllers: impl Future<Output = ()>,
    stop: &CancellationToken,
    lost: impl Future<Output = ()>,
    shutdown_timeout: Duration,
) -> Result<(), Stopped> {
    let mut controllers = std::pin::pin!(controllers);
    let mut lost = std::pin::pin!(lost);
    tokio::select! {
        () = &mut controllers => return Ok(()),
        () = &mut lost => return Err(Stopped::LeadershipLost),
        () = stop.cancelled() => {}
    }
    tracing::info!(
        timeout = ?shutdown_timeout,
        "shutting down: waiting for the reconciles in flight"
    );
    tokio::select! {
        () = &mut controllers => Ok(()),
        () = &mut lost => Err(Stopped::LeadershipLost),
        () = tokio::time::sleep(shutdown_timeout) => Err(Stopped::DrainTimedOut(shutdown_timeout)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LONG: Duration = Duration::from_secs(3600);

    #[tokio::test]
    async fn a_drain_that_finishes_in_time_is_a_clean_stop() {
        let stop = CancellationToken::new();
        stop.cancel();
        let drain = tokio::time::sleep(Duration::from_millis(10));
        let outcome = drive(drain, &stop, std::future::pending(), LONG).await;
        assert!(outcome.is_ok());
    }

    #[tokio::test]
    async fn a_drain_is_cut_at_the_timeout() {
        let stop = CancellationToken::new();
        stop.cancel();
        let outcome = drive(
            std::future::pending(),
            &stop,
            std::future::pending(),
            Duration::from_millis(10),
        )
        .await;
        assert!(matches!(outcome, Err(Stopped::DrainTimedOut(_))));
    }

    #[tokio::test]
    async fn losing_the_lease_stops_at_once_also_during_a_drain() {
        let stop = CancellationToken::new();
        let outcome = drive(std::future::pending(), &stop, std::future::ready(()), LONG).await;
        assert!(matches!(outcome, Err(Stopped::LeadershipLost)));

        stop.cancel();
        let lost = tokio::time::sleep(Duration::from_millis(10));
        let outcome = drive(std::future::pending(), &stop, lost, LONG).await;
        assert!(matches!(outcome, Err(Stopped::LeadershipLost)));
    }
}
