//! "Small during big" (issue 28): what a second user of the manager sees. A Fermat 13 alone,
//! then one applied in another namespace 3 s into a Fermat n's build, then one after a
//! restart of the manager over everything, each next to the watch's timeline of its children.

use std::path::Path;
use std::time::{Duration, Instant};

use kube::api::{Api, ListParams, PostParams};
use kube::{Client, ResourceExt};
use math_controller::api::{Fermat, FermatSpec, Tuple};

use crate::manager::Manager;
use crate::ready::wait_ready;
use crate::server::{Server, prefix};
use crate::timeline::Timeline;

/// "Small during big" (issue 28): what a second user of the manager sees.
pub struct Fair {
    /// A Fermat 13's time to Ready on the idle manager.
    pub small_alone: Duration,
    /// Its time to Ready when applied (in another namespace) 3 s into a Fermat n's build.
    pub small_during: Duration,
    /// The Fermat n's convergence with the small one beside it.
    pub big_during: Duration,
    /// A Fermat 13's time to Ready once the manager was restarted over the Fermat n's objects.
    pub small_after_restart: Duration,
}

/// The manager on all namespaces (the scenario needs two), a Fermat 13 alone, then a Fermat
/// `n` and 3 s later a Fermat 13 in another namespace, then a restart over everything and a
/// new Fermat 13. On a shared cluster a manager of all namespaces would reconcile other
/// people's objects: the scenario is skipped when any Fermat or Tuple exists outside its
/// namespaces.
pub async fn small_during_big(
    server: &Server,
    binary: &Path,
    n: i64,
    big_alone: Option<Duration>,
) -> anyhow::Result<Option<Fair>> {
    let tag = format!("{n}-{}", std::process::id());
    let prefix = prefix();
    let (big_ns, small_ns) = (
        format!("{prefix}-big-{tag}"),
        format!("{prefix}-small-{tag}"),
    );
    let foreign = foreign_namespaces(&server.client, [&big_ns, &small_ns]).await?;
    if !foreign.is_empty() {
        println!(
            "  small during big: skipped, the cluster holds math objects of others ({foreign:?}); a manager of all namespaces would reconcile them"
        );
        return Ok(None);
    }
    server.create_namespace(&big_ns).await?;
    server.create_namespace(&small_ns).await?;
    let kubeconfig = server.kubeconfig();
    let manager = Manager::start(binary, kubeconfig.as_deref(), None).await?;
    let big: Api<Fermat> = Api::namespaced(server.client.clone(), &big_ns);
    let small: Api<Fermat> = Api::namespaced(server.client.clone(), &small_ns);
    let watch = (&server.client, small_ns.as_str());
    let settle = Duration::from_millis(500);
    let (small_alone, alone_timeline) = watched_small(watch, &small, "alone", settle).await?;
    let start = Instant::now();
    big.create(
        &PostParams::default(),
        &Fermat::new("f", FermatSpec { number: n }),
    )
    .await?;
    let into_big = Duration::from_secs(3);
    let (small_during, during_timeline) = watched_small(watch, &small, "during", into_big).await?;
    wait_ready(&big, "f", Duration::from_secs(1200), Duration::from_secs(1)).await?;
    let big_during = start.elapsed();
    print_during(n, big_alone, big_during, (small_alone, small_during));
    println!("  the Fermat 13's children as a watch of the bench saw them, alone:");
    alone_timeline.iter().for_each(|line| println!("{line}"));
    println!("  and during the big one:");
    during_timeline.iter().for_each(|line| println!("{line}"));
    manager.stop().await?;
    let small_after_restart = after_restart(server, binary, &small, n).await?;
    server.delete_namespace(&small_ns).await;
    server.delete_namespace(&big_ns).await;
    Ok(Some(Fair {
        small_alone,
        small_during,
        big_during,
        small_after_restart,
    }))
}

/// The namespaces other than `ours` that hold a Fermat or a Tuple (the first Tuple listed
/// only: enough to know the cluster is shared).
async fn foreign_namespaces(client: &Client, ours: [&String; 2]) -> anyhow::Result<Vec<String>> {
    let others = |list: Vec<String>| {
        list.into_iter()
            .filter(|ns| !ours.contains(&ns))
            .collect::<Vec<_>>()
    };
    let fermat_namespaces = Api::<Fermat>::all(client.clone())
        .list(&Default::default())
        .await?
        .items
        .iter()
        .filter_map(|f| f.namespace())
        .collect();
    let tuple_namespaces = Api::<Tuple>::all(client.clone())
        .list(&ListParams::default().limit(1))
        .await?
        .items
        .iter()
        .filter_map(|t| t.namespace())
        .collect();
    Ok([others(fermat_namespaces), others(tuple_namespaces)].concat())
}

/// A Fermat 13 `name` applied `settle` after a watch of its namespace (`small`'s, `ns`) opened:
/// its time to Ready, and its children's timeline as that watch saw them.
async fn watched_small(
    (client, ns): (&Client, &str),
    small: &Api<Fermat>,
    name: &str,
    settle: Duration,
) -> anyhow::Result<(Duration, Vec<String>)> {
    let watched = Timeline::watch(client, ns);
    tokio::time::sleep(settle).await;
    let applied = Instant::now();
    let took = apply_and_wait(small, name, 13).await?;
    Ok((took, watched.report(name, applied)))
}

/// The line of the small one during the big one, with the big one's cost of it.
fn print_during(
    n: i64,
    big_alone: Option<Duration>,
    big_during: Duration,
    (small_alone, small_during): (Duration, Duration),
) {
    let beside = match big_alone {
        Some(alone) => format!(
            "{:.2} s alone, {:+.1} %",
            alone.as_secs_f64(),
            (big_during.as_secs_f64() / alone.as_secs_f64() - 1.0) * 100.0
        ),
        None => "not measured alone".to_string(),
    };
    println!(
        "  small during big: a Fermat 13 is Ready {:.2} s after it is applied 3 s into the Fermat {n}'s build (alone: {:.2} s); the Fermat {n} converges in {:.2} s beside it ({beside})",
        small_during.as_secs_f64(),
        small_alone.as_secs_f64(),
        big_during.as_secs_f64(),
    );
}

/// The manager restarted over the Fermat n's objects, a new Fermat 13: its time to Ready.
async fn after_restart(
    server: &Server,
    binary: &Path,
    small: &Api<Fermat>,
    n: i64,
) -> anyhow::Result<Duration> {
    let kubeconfig = server.kubeconfig();
    let manager = Manager::start(binary, kubeconfig.as_deref(), None).await?;
    let small_after_restart = apply_and_wait(small, "after-restart", 13).await?;
    println!(
        "  restart:  the manager restarted over the Fermat {n}'s {} objects; a new Fermat 13 is Ready {:.2} s after it is applied",
        1 + 3 * (n / 2),
        small_after_restart.as_secs_f64()
    );
    manager.stop().await?;
    Ok(small_after_restart)
}

/// Create Fermat `name` = `number` and wait for it to be Ready: how long that took.
async fn apply_and_wait(api: &Api<Fermat>, name: &str, number: i64) -> anyhow::Result<Duration> {
    let start = Instant::now();
    api.create(
        &PostParams::default(),
        &Fermat::new(name, FermatSpec { number }),
    )
    .await?;
    wait_ready(
        api,
        name,
        Duration::from_secs(600),
        Duration::from_millis(200),
    )
    .await?;
    Ok(start.elapsed())
}
