//! One size's measurement, in the order it runs: the floors (a tight client writing the same
//! objects, bare and owned), the manager converging a Fermat n (time, CPU, writes, pace),
//! the 3 s after it, a restart of the manager, healing, the outage, memory, healing as a
//! restarted manager reports ready, and the small Fermat beside a big one. Each step prints
//! its lines as it ends; the row sums them up.

use std::path::Path;
use std::time::{Duration, Instant};

use kube::api::{Api, PostParams};
use math_controller::api::{Fermat, FermatSpec};

use crate::fair::small_during_big;
use crate::floor;
use crate::heal::{delete_all_and_wait, heal, spread};
use crate::manager::{Manager, Sample, Writes};
use crate::outage::{outage, restart_apiserver};
use crate::pace::{busy_tenths, cpu_spent, cpu_times, tenths, watched_pids};
use crate::ready::wait_ready;
use crate::server::{Server, prefix};
use crate::summary::{Row, ms};

/// The processes whose CPU is reported, by name and pid.
type Pids = [(String, u32)];

/// The floors of one size: the bare client's and the owned one's time, and the CPU the
/// watched processes spent under the bare one.
struct Floors {
    bare: Duration,
    owned: Duration,
    cpu: Vec<(String, Duration)>,
}

/// The manager's convergence of a Fermat n: its time, the pace samples, CPU and writes.
struct Run {
    converge: Duration,
    pace: Vec<Sample>,
    /// The watched processes' CPU (the manager's is `manager_cpu`).
    cpu: Vec<(String, Duration)>,
    manager_cpu: Option<Duration>,
    writes: Writes,
}

/// What the restarted manager did: its writes over settled objects, healing, the outage.
struct Restarted {
    writes: u64,
    heal: (Duration, Duration),
    outage: Option<Duration>,
    restart_apiserver: Option<Duration>,
    rss_mib: Option<f64>,
}

/// Measure a Fermat `n` with the manager `binary` on `server`, healing `heal_samples`
/// Numbers: the size's lines as they come, and its row of the summary.
pub async fn measure(
    server: &Server,
    binary: &Path,
    n: i64,
    heal_samples: usize,
) -> anyhow::Result<Row> {
    let tuples = (n / 2).max(0) as usize;
    let numbers = 2 * tuples;
    let tag = format!("{n}-{}", std::process::id());
    println!("Fermat n = {n}: {tuples} Tuples, {numbers} Numbers");
    let pids = watched_pids();
    let floors = floors(server, &tag, n, &pids).await?;

    let ns = format!("{}-{tag}", prefix());
    server.create_namespace(&ns).await?;
    let kubeconfig = server.kubeconfig();
    let manager = Manager::start(binary, kubeconfig.as_deref(), Some(&ns)).await?;
    let sharing = server.share_cpu_with(manager.pid());
    let run = converge(server, &manager, &ns, n, &pids).await?;
    let minimum = 2 * (tuples + numbers) as u64 + 1;
    print_run(&run, &floors, minimum);
    print_refused(server);

    tokio::time::sleep(Duration::from_secs(3)).await;
    let steady = manager.writes().await?.all() - run.writes.all();
    println!("  steady:   {steady} write requests in the 3 s after converging");
    let first_rss = manager.peak_rss_mib();

    if let Some(sharing) = sharing {
        sharing.abort();
    }
    manager.stop().await?;
    let restarted = restarted(server, binary, &ns, (n, heal_samples), first_rss).await?;
    let fair = if std::env::var("BENCH_FAIR").is_ok_and(|v| v == "0") {
        None
    } else {
        small_during_big(server, binary, n, Some(run.converge)).await?
    };
    Ok(Row {
        n,
        floor: floors.bare,
        owned: floors.owned,
        converge: run.converge,
        fair,
        writes: run.writes,
        minimum,
        steady,
        restart: restarted.writes,
        heal: restarted.heal,
        rss_mib: restarted.rss_mib,
        outage: restarted.outage,
        restart_apiserver: restarted.restart_apiserver,
    })
}

/// The bare floor (with the CPU it took, and a warning when another controller answers it),
/// the owned floor, and the floor with watches when `BENCH_FLOOR_WATCHED=1`, each in a
/// namespace of its own deleted before the next.
async fn floors(server: &Server, tag: &str, n: i64, pids: &Pids) -> anyhow::Result<Floors> {
    let tuples = (n / 2).max(0) as usize;
    let prefix = prefix();
    let floor_ns = format!("{prefix}-floor-{tag}");
    server.create_namespace(&floor_ns).await?;
    let cpu_before = cpu_times(pids);
    let floor = floor::run(&server.client, &floor_ns, tuples).await?;
    let floor_cpu = cpu_spent(pids, &cpu_before);
    println!(
        "  floor:    a tight client (32 requests in flight) writes {} objects and their statuses in {:.2} s",
        3 * tuples,
        floor.as_secs_f64()
    );
    if floor::someone_else_reconciles(&server.client, &floor_ns).await {
        println!(
            "  WARNING: another controller created Numbers for the floor's Tuples: a math-controller is already running in this cluster, and the numbers below are not comparable (stop it first)"
        );
    }
    server.delete_namespace(&floor_ns).await;
    let owned_ns = format!("{prefix}-floor-owned-{tag}");
    server.create_namespace(&owned_ns).await?;
    let owned = floor::run_owned(&server.client, &owned_ns, n).await?;
    println!(
        "  owned floor: the same objects as the manager writes them (the Fermat first, controller ownerReferences, a Tuple's Numbers after its create, whole statuses, the Fermat's status last) in {:.2} s ({:.2}× the bare floor)",
        owned.as_secs_f64(),
        owned.as_secs_f64() / floor.as_secs_f64()
    );
    server.delete_namespace(&owned_ns).await;
    if std::env::var("BENCH_FLOOR_WATCHED").is_ok_and(|v| v == "1") {
        let watched_ns = format!("{prefix}-floor-watched-{tag}");
        watched_floor(server, &watched_ns, tuples, floor, pids).await?;
    }
    Ok(Floors {
        bare: floor,
        owned,
        cpu: floor_cpu,
    })
}

/// The bare floor again in `ns`, with three watches open as the manager's: what the watch
/// traffic a controller cannot do without costs, in time (against `floor`) and CPU.
async fn watched_floor(
    server: &Server,
    ns: &str,
    tuples: usize,
    floor: Duration,
    pids: &Pids,
) -> anyhow::Result<()> {
    server.create_namespace(ns).await?;
    let cpu_before = cpu_times(pids);
    let watched = floor::run_watched(&server.client, ns, tuples).await?;
    let spent = cpu_spent(pids, &cpu_before);
    println!(
        "  floor with watches: {:.2} s ({:.2}× the floor); CPU {}",
        watched.as_secs_f64(),
        watched.as_secs_f64() / floor.as_secs_f64(),
        spent
            .iter()
            .map(|(name, d)| format!("{name} {:.2} s", d.as_secs_f64()))
            .collect::<Vec<_>>()
            .join(", ")
    );
    server.delete_namespace(ns).await;
    Ok(())
}

/// Fermat `f` = `n` created in `ns` and waited for until Ready, with the manager's pace
/// sampled and the CPU of everyone watched counted meanwhile.
async fn converge(
    server: &Server,
    manager: &Manager,
    ns: &str,
    n: i64,
    pids: &Pids,
) -> anyhow::Result<Run> {
    let fermats: Api<Fermat> = Api::namespaced(server.client.clone(), ns);
    let cpu_before = cpu_times(pids);
    let manager_cpu_before = manager.cpu();
    let (stop_pace, pace_stopped) = tokio::sync::oneshot::channel();
    let pace = manager.pace(pace_stopped);
    let start = Instant::now();
    fermats
        .create(
            &PostParams::default(),
            &Fermat::new("f", FermatSpec { number: n }),
        )
        .await?;
    wait_ready(
        &fermats,
        "f",
        Duration::from_secs(1200),
        Duration::from_secs(1),
    )
    .await?;
    let converge = start.elapsed();
    let _ = stop_pace.send(());
    let pace = pace.await.unwrap_or_default();
    let cpu = cpu_spent(pids, &cpu_before);
    let manager_cpu = manager
        .cpu()
        .zip(manager_cpu_before)
        .map(|(after, before)| after.saturating_sub(before));
    let writes = manager.writes().await?;
    Ok(Run {
        converge,
        pace,
        cpu,
        manager_cpu,
        writes,
    })
}

/// The run's lines: its time against the floors, CPU, writes against the `minimum`, pace
/// and reconciles.
fn print_run(run: &Run, floors: &Floors, minimum: u64) {
    let (converge, writes) = (run.converge, &run.writes);
    println!(
        "  converge: {:.2} s from creating the Fermat to its Ready status ({:.2}× the owned floor, {:.2}× the bare floor)",
        converge.as_secs_f64(),
        converge.as_secs_f64() / floors.owned.as_secs_f64(),
        converge.as_secs_f64() / floors.bare.as_secs_f64()
    );
    print_cpu(run, floors);
    println!(
        "  writes:   {} creates + {} status writes ({} of them the Fermat's progress reports) + {} other object writes = {} (minimum {minimum}); plus {} Event writes",
        writes.creates,
        writes.statuses,
        writes.fermat_statuses.saturating_sub(1),
        writes.other,
        writes.objects(),
        writes.events
    );
    println!(
        "  pace:     writes/s (Events included) in each tenth of the run: {}",
        tenths(&run.pace, converge)
    );
    if let Some(busy) = busy_tenths(&run.pace, converge) {
        println!("            cores busy (the whole machine) in each tenth: {busy}");
    }
    let [numbers_run, tuples_run, fermats_run] = writes.reconciles;
    println!(
        "            reconciles: {numbers_run} of Numbers, {tuples_run} of Tuples, {fermats_run} of the Fermat"
    );
}

/// Where the CPU went under the floor and under the manager's run (when the manager's own
/// could be read).
fn print_cpu(run: &Run, floors: &Floors) {
    let Some(cpu) = run.manager_cpu else {
        return;
    };
    let others = |spent: &[(String, Duration)]| {
        spent
            .iter()
            .map(|(name, d)| format!(", {name} {:.2} s", d.as_secs_f64()))
            .collect::<String>()
    };
    println!(
        "  CPU:      floor run: {} ; manager run: manager {:.2} s{}",
        others(&floors.cpu).trim_start_matches(", "),
        cpu.as_secs_f64(),
        others(&run.cpu)
    );
}

/// On the test server: the write requests it refused so far, by verb, resource and status.
fn print_refused(server: &Server) {
    let Some(test) = &server.test else {
        return;
    };
    let mut refused = std::collections::BTreeMap::new();
    for r in test
        .requests()
        .iter()
        .filter(|r| r.verb.is_write() && r.status >= 400)
    {
        *refused
            .entry(format!("{:?} {} {}", r.verb, r.resource, r.status))
            .or_insert(0) += 1;
    }
    println!("            write requests refused by the server: {refused:?}");
}

/// The manager started again over the converged Fermat `n` in `ns`: its writes in 3 s, then
/// `heal_samples` deleted Numbers, the outage (test server) or the API server restart
/// (`BENCH_RESTART`, a cluster), and its peak memory against `first_rss`. The namespace is
/// deleted at the end.
async fn restarted(
    server: &Server,
    binary: &Path,
    ns: &str,
    (n, heal_samples): (i64, usize),
    first_rss: Option<f64>,
) -> anyhow::Result<Restarted> {
    let kubeconfig = server.kubeconfig();
    let manager = Manager::start(binary, kubeconfig.as_deref(), Some(ns)).await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let restart = manager.writes().await?.all();
    println!(
        "  restart:  {restart} write requests in the 3 s after the restarted manager was ready"
    );

    let heal = heal(&server.client, ns, n, heal_samples).await?;
    println!(
        "  heal:     a deleted Number is back and Ready after p50 {:.1} ms, p99 {:.1} ms ({heal_samples} samples)",
        ms(heal.0),
        ms(heal.1)
    );
    let (outage, restart_apiserver) = outages(server, ns, &manager).await?;
    let rss_mib = [first_rss, manager.peak_rss_mib()]
        .into_iter()
        .flatten()
        .reduce(f64::max);
    let mib = |m: Option<f64>| m.map_or("?".to_string(), |m| format!("{m:.1} MiB"));
    println!(
        "  memory:   manager peak RSS {} while converging, {} after a restart (listing everything) and healing",
        mib(first_rss),
        mib(manager.peak_rss_mib())
    );
    manager.stop().await?;
    let (median, slowest) = heal_at_restart(server, binary, ns, n).await?;
    println!(
        "  heal at restart: {AT_RESTART} Numbers deleted at once as the restarted manager reports ready (every settled object queued) are back and Ready after p50 {:.1} ms, the slowest {:.1} ms",
        ms(median),
        ms(slowest)
    );
    server.delete_namespace(ns).await;
    Ok(Restarted {
        writes: restart,
        heal,
        outage,
        restart_apiserver,
        rss_mib,
    })
}

/// The manager started again over the settled Fermat `n` in `ns`, and Numbers of
/// [`AT_RESTART`] Tuples deleted at once as soon as it reports ready (every settled object
/// queued by the initial list): how long until they are back, the median and the slowest.
async fn heal_at_restart(
    server: &Server,
    binary: &Path,
    ns: &str,
    n: i64,
) -> anyhow::Result<(Duration, Duration)> {
    let kubeconfig = server.kubeconfig();
    let manager = Manager::start(binary, kubeconfig.as_deref(), Some(ns)).await?;
    let numbers = Api::namespaced(server.client.clone(), ns);
    let back = delete_all_and_wait(&numbers, &spread(n, AT_RESTART)).await?;
    manager.stop().await?;
    Ok(back)
}

/// How many Numbers [`heal_at_restart`] deletes.
const AT_RESTART: usize = 20;

/// The outage, on the test server; the API server restart, on a cluster with
/// `BENCH_RESTART`: how long after the server's return the Fermat was Ready.
async fn outages(
    server: &Server,
    ns: &str,
    manager: &Manager,
) -> anyhow::Result<(Option<Duration>, Option<Duration>)> {
    let outage = match &server.test {
        Some(test) => Some(outage(test, &server.client, ns).await?),
        None => None,
    };
    if let Some(back) = outage {
        println!(
            "  outage:   a Fermat 1000 cut mid-build by an 8 s outage is Ready {:.2} s after the server returned",
            back.as_secs_f64()
        );
    }
    let restart_apiserver = match std::env::var("BENCH_RESTART") {
        Ok(command) if server.test.is_none() => {
            Some(restart_apiserver(&command, &server.client, ns, manager).await?)
        }
        _ => None,
    };
    Ok((outage, restart_apiserver))
}
