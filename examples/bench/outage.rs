//! How the manager comes back when the API server goes away mid-build: an outage of the
//! in-memory server (issue 8), and a real kube-apiserver killed and started again (issue 17),
//! whose lost watch cache makes every watch relist.

use std::time::{Duration, Instant};

use kube::Client;
use kube::api::{Api, PostParams};
use math_controller::api::{Fermat, FermatSpec, Number};
use test_apiserver::TestServer;

use crate::manager::Manager;
use crate::ready::wait_ready;

/// Issue 8's scenario: the API server goes away while a Fermat 1000 is being built (here
/// once its first Number exists) and is back 8 s later: how long after its return is the
/// Fermat Ready?
pub async fn outage(test: &TestServer, client: &Client, ns: &str) -> anyhow::Result<Duration> {
    let fermats: Api<Fermat> = Api::namespaced(client.clone(), ns);
    fermats
        .create(
            &PostParams::default(),
            &Fermat::new("g", FermatSpec { number: 1000 }),
        )
        .await?;
    // Once its first Numbers exist: the build is under way, most of it still ahead.
    let numbers: Api<Number> = Api::namespaced(client.clone(), ns);
    let start = Instant::now();
    while numbers.get_opt("g-1-and-999-0").await?.is_none() {
        anyhow::ensure!(
            start.elapsed() < Duration::from_secs(60),
            "Fermat g never started building"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    test.stop();
    tokio::time::sleep(Duration::from_secs(8)).await;
    test.resume();
    let back = Instant::now();
    wait_ready(
        &fermats,
        "g",
        Duration::from_secs(120),
        Duration::from_millis(20),
    )
    .await?;
    Ok(back.elapsed())
}

/// Issue 17's scenario on a real control plane: kube-apiserver is killed 1.5 s into a Fermat
/// 1000 and started again by `command` (which returns once the new process runs). A
/// restarted kube-apiserver has lost its watch cache, so every watch must relist. Measured
/// from the moment it answers again to the Fermat's Ready, with the manager's writes and
/// log meanwhile.
pub async fn restart_apiserver(
    command: &str,
    client: &Client,
    ns: &str,
    manager: &Manager,
) -> anyhow::Result<Duration> {
    let fermats: Api<Fermat> = Api::namespaced(client.clone(), ns);
    let before = manager.writes().await?;
    let lines_before = manager.log().len();
    fermats
        .create(
            &PostParams::default(),
            &Fermat::new("r", FermatSpec { number: 1000 }),
        )
        .await?;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    restart(command, client).await?;
    let back = Instant::now();
    wait_ready(
        &fermats,
        "r",
        Duration::from_secs(300),
        Duration::from_millis(20),
    )
    .await?;
    let ready = back.elapsed();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let writes = manager.writes().await?;
    let log = manager.log();
    let during = &log[lines_before.min(log.len())..];
    let waiting = during.iter().filter(|l| l.contains("waiting for")).count();
    println!(
        "  apiserver restart: a Fermat 1000 whose kube-apiserver was killed 1.5 s in is Ready {:.2} s after it answers again; {} object writes (minimum 3001), {} log lines ({} about the outage and watches, {} waiting statuses)",
        ready.as_secs_f64(),
        writes.objects() - before.objects(),
        during.len(),
        during.iter().filter(|l| about_outage(l)).count(),
        waiting,
    );
    Ok(ready)
}

/// Run the restart `command` and wait until the API server answers again (`/version`).
async fn restart(command: &str, client: &Client) -> anyhow::Result<()> {
    let status = tokio::process::Command::new("sh")
        .args(["-c", command])
        .status()
        .await?;
    anyhow::ensure!(status.success(), "BENCH_RESTART failed: {status}");
    let wait = Instant::now();
    while client.apiserver_version().await.is_err() {
        anyhow::ensure!(
            wait.elapsed() < Duration::from_secs(120),
            "the API server did not answer within 120 s of its restart"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// Whether a log line of the manager's is about the outage or its watches.
fn about_outage(line: &str) -> bool {
    [
        "unreachable",
        "reachable again",
        "watching",
        "listing again",
        "relist",
    ]
    .iter()
    .any(|w| line.contains(w))
}
