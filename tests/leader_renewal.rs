//! Leader election's renewals on a slow API server (issue 39, F6): the holder counts its
//! renew deadline from when it *sent* its last successful renewal, the moment the lease's
//! `renewTime` names and a standby counts from, not from when the answer came back. A late
//! answer must not let the holder go on past the point where a standby may take over.

mod common;

use std::time::Duration;

use anyhow::{Context as _, Result};
use math_controller::ops::leader::{self, LeaderElectionConfig};
use test_apiserver::{RequestFilter, Verb};

/// Every renewal of the holder takes 3 s to be answered, within its renew deadline (3.96 s)
/// each on its own; but a renewal sent at t answered at t + 3 s only proves the lease held
/// at t, so the next one (sent at t + 3.2 s, answered at t + 6.2 s) comes too late: the
/// holder gives up its leadership. Before: it counted from t + 3 s and held on, every
/// renewal late, for as long as the server stayed slow.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_renewal_does_not_extend_the_renew_deadline() -> Result<()> {
    let server = common::server().await?;
    let mut cfg = LeaderElectionConfig::new("renewal-lease", "default", "a");
    cfg.lease_duration = Duration::from_secs(6);
    cfg.renew_deadline = Duration::from_millis(3960);
    cfg.retry_period = Duration::from_millis(200);
    let a = leader::acquire(server.client(), cfg, std::future::pending::<()>())
        .await?
        .context("a acquires a free lease")?;
    server.set_latency(
        RequestFilter::new().verb(Verb::Update).resource("leases"),
        Duration::from_secs(3),
    );
    tokio::time::timeout(Duration::from_secs(15), a.lost())
        .await
        .context("the holder gives up the lease it can no longer renew in time")?;
    Ok(())
}

/// A renewal answered 429 (priority and fairness, `Retry-After: 1`) is not held inside the
/// client's retry loop (issue 48, N11): five lease updates in a row are throttled, and the
/// holder, renewing every 0.5 s with a renew deadline of 4 s, tries again with a fresh
/// renewal after each and keeps its lease. Before, the one renewal sat in the client's ten
/// retries of a second each, past the renew deadline, and the holder gave up the lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throttled_renewal_does_not_wait_out_the_clients_retries() -> Result<()> {
    let server = common::server().await?;
    let config = kube::Config::new(server.url().parse()?);
    let client =
        math_controller::ops::client::build(config, &math_controller::metrics::Metrics::new())?;
    let mut cfg = LeaderElectionConfig::new("throttled-lease", "default", "a");
    cfg.lease_duration = Duration::from_secs(6);
    cfg.renew_deadline = Duration::from_secs(4);
    cfg.retry_period = Duration::from_millis(500);
    let a = leader::acquire(client, cfg, std::future::pending::<()>())
        .await?
        .context("a acquires a free lease")?;
    let updates = RequestFilter::new().verb(Verb::Update).resource("leases");
    server.reset_requests();
    server.fail_next(updates.clone(), 5, 429);
    let lost = tokio::time::timeout(Duration::from_secs(8), a.lost()).await;
    let answers: Vec<u16> = (server.requests().iter())
        .filter(|r| r.verb == Verb::Update && r.resource == "leases")
        .map(|r| r.status)
        .collect();
    assert!(
        lost.is_err(),
        "the holder gave up its lease; its updates were answered {answers:?}"
    );
    assert_eq!(answers.iter().filter(|s| **s == 429).count(), 5);
    assert!(
        answers.iter().filter(|s| **s == 200).count() >= 4,
        "renewed again after the 429s: {answers:?}"
    );
    Ok(())
}
