//! Benchmark: how fast the real (release) manager binary converges a Fermat, what it writes,
//! how fast it heals, how much memory it holds and how it comes back from an outage, each
//! size next to the *floor* measured in the same run on the same server: a tight kube-rs
//! client writing the same objects and statuses with 32 requests in flight.
//!
//! ```text
//! cargo build --release --locked && cargo run --release --locked --example bench -- [--cluster] [n ...]
//! ```
//! (`make bench`, `make bench CLUSTER=1` do both.) Sizes default to 1000 and 10000. It prints
//! numbers; it asserts nothing.
//!
//! - Default: the in-memory test API server, on loopback. `BENCH_SERVER=slow` gives it a real
//!   kube-apiserver's write cost: 25 ms per write and at most 1000 writes/s, queued (the
//!   loopback kube-apiserver + etcd of issue 8 wrote about 1000 objects/s with 32 in flight).
//! - `--cluster` (or `BENCH_CLUSTER=1`): the cluster of the current kubeconfig (minikube,
//!   kind, anything). Everything happens in namespaces of its own (`math-bench-…`, deleted at
//!   the end); the CRDs must be installed (`make install`) and no other math-controller may
//!   watch those namespaces (stop a deployed one first; the bench warns if it sees one). The
//!   outage is only caused on the test API server.
//!
//! - `BENCH_RESTART="command"` (`make bench CLUSTER=1 RESTART="…"`): a command that restarts
//!   the cluster's kube-apiserver (SIGKILL, a pause, start again; it returns once the new
//!   process is started), for a control plane run from binaries on this machine
//!   `hack/restart-apiserver.sh`. Run 1.5 s into a Fermat 1000; measured: how long after the
//!   API server answers again the Fermat is Ready, the manager's writes against the minimum,
//!   and what its log said meanwhile.
//!
//! - `BENCH_PIDS="kube-apiserver=PID etcd=PID"`: processes on this machine (a local control
//!   plane) whose CPU time is reported for the floor and for the manager's run, next to the
//!   manager's own: where the time went.
//!
//! `BENCH_CONCURRENCY=N` starts the manager with `--concurrency N` (default: its own default).
//! `BENCH_REPEAT=N` measures each size N times and prints the medians: a real server's ratio
//! at n = 1000 moved from 1.08× to 1.78× between runs of the same build here.
//!
//! Writes are counted by the manager itself (`math_controller_write_requests_total` on its
//! `/metrics`), so they are the same on any server. `HEAL_SAMPLES` (default 50) sets how many
//! Numbers are deleted one at a time to time their return; `BENCH_MANAGER=path` measures
//! another binary (an older build, or a script that wraps it in `perf record` or valgrind).

mod floor;
mod manager;
mod timeline;

use std::time::{Duration, Instant};

use kube::api::{Api, DeleteParams, PostParams};
use kube::{Client, ResourceExt};
use math_controller::api::{Fermat, FermatSpec, Number};
use test_apiserver::{RequestFilter, TestServer, Verb};

use manager::{Manager, Writes};
use timeline::Timeline;

/// The slowed test server (`BENCH_SERVER=slow`): a model of the loopback kube-apiserver v1.24 +
/// etcd docs/benchmark.md's real-control-plane rows come from (2 cores, the manager on the same
/// machine), calibrated there. The server is one queue of busy time:
///
/// - each write takes a slot of 1 ms (the floor wrote ~1000 objects/s with 32 in flight) and
///   answers 25 ms after it arrived at the earliest;
/// - an Event takes half a slot ([`SLOW_EVENT_WEIGHT`]: 5001 Events cost the control plane
///   ~5 s of CPU, 30 001 object writes ~56 s);
/// - each watch event delivered takes [`SLOW_WATCH_EVENT_COST`] (the floor with the manager's
///   three watches open: +1.2 s of kube-apiserver CPU for 30 001 events, 3–6 % longer);
/// - each CPU second the manager takes is [`SLOW_CPU_SHARE`] of a second less for the server:
///   at the floor the control plane keeps both cores busy (~1.9 ms of CPU per write), so a
///   core second of the manager costs half a second of its throughput.
const SLOW_WRITE_LATENCY: Duration = Duration::from_millis(25);
const SLOW_WRITES_PER_SECOND: u32 = 1000;
const SLOW_EVENT_WEIGHT: f64 = 0.5;
const SLOW_WATCH_EVENT_COST: Duration = Duration::from_micros(40);
const SLOW_CPU_SHARE: f64 = 0.5;

/// Where the benchmark runs.
struct Server {
    client: Client,
    /// The in-memory server, when it is one: it can be slowed and stopped.
    test: Option<TestServer>,
    /// Slowed like a real kube-apiserver (see [`SLOW_CPU_SHARE`]).
    slow: bool,
}

impl Server {
    async fn new(cluster: bool, slow: bool) -> anyhow::Result<Server> {
        if cluster {
            let mut config = kube::Config::infer().await.map_err(|e| {
                anyhow::anyhow!(
                    "no cluster in the current kubeconfig ({e}); try `kubectl cluster-info`"
                )
            })?;
            // No retries hidden in the client: the bench polls on its own, every 20 ms, and
            // a `Retry-After: 5` answered right after an API server restart would otherwise
            // hold a poll for 5 s and add it to what is measured.
            config.default_retry = false;
            let client = Client::try_from(config)?;
            let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
                Api::all(client.clone());
            if crds.get_opt("fermats.math.example.com").await?.is_none() {
                anyhow::bail!(
                    "the CRDs are not installed in this cluster: run `make install` first"
                );
            }
            return Ok(Server {
                client,
                test: None,
                slow: false,
            });
        }
        let server = TestServer::start().await?;
        server.apply_crd_yaml(&math_controller::api::crds_yaml()?)?;
        if slow {
            for verb in [Verb::Create, Verb::Update, Verb::Patch, Verb::Delete] {
                server.set_latency(RequestFilter::new().verb(verb), SLOW_WRITE_LATENCY);
            }
            server.set_write_rate(SLOW_WRITES_PER_SECOND);
            server.set_write_weight(RequestFilter::new().resource("events"), SLOW_EVENT_WEIGHT);
            server.set_watch_event_cost(
                env_duration_us("BENCH_SLOW_WATCH_EVENT_US").unwrap_or(SLOW_WATCH_EVENT_COST),
            );
        }
        Ok(Server {
            client: server.client(),
            test: Some(server),
            slow,
        })
    }

    /// On the slowed server, charges the CPU the process `pid` takes against the server's
    /// time, as it would be taken from kube-apiserver and etcd on one machine.
    fn share_cpu_with(&self, pid: Option<u32>) -> Option<tokio::task::JoinHandle<()>> {
        let (test, pid) = (self.test.clone().filter(|_| self.slow)?, pid?);
        let share = cpu_share();
        Some(tokio::spawn(async move {
            let mut last = manager::cpu_of(pid).unwrap_or_default();
            loop {
                tokio::time::sleep(Duration::from_millis(20)).await;
                let Some(now) = manager::cpu_of(pid) else {
                    return;
                };
                test.charge(now.saturating_sub(last).mul_f64(share));
                last = now;
            }
        }))
    }

    /// The kubeconfig the manager is started with (`None`: the current one).
    fn kubeconfig(&self) -> Option<std::path::PathBuf> {
        self.test
            .as_ref()
            .map(|s| s.kubeconfig_path().to_path_buf())
    }

    async fn create_namespace(&self, name: &str) -> anyhow::Result<()> {
        use k8s_openapi::api::core::v1::Namespace;
        let mut ns = Namespace::default();
        ns.metadata.name = Some(name.to_string());
        Api::<Namespace>::all(self.client.clone())
            .create(&PostParams::default(), &ns)
            .await?;
        Ok(())
    }

    /// Deleted, and waited for until it is gone: the cluster's namespace controller deletes
    /// every object in it, which on a real kube-apiserver takes minutes for a Fermat 10000 and
    /// as much of the API server as a measurement. Measured on a loopback kube-apiserver
    /// v1.24, the manager's run used to share the server with the deletion of the floor's
    /// 15 000 objects, and the next size with the deletion of the last one's.
    ///
    /// The math objects go first, children before parents ([`delete_children_first`]): left
    /// to the namespace controller, a parent can go before its children, and the cluster's
    /// garbage collector then checks each orphan at its own pace (~40 a second on
    /// kube-controller-manager's default client rate), minutes after the namespace is gone —
    /// under the next measurement.
    async fn delete_namespace(&self, name: &str) {
        use k8s_openapi::api::core::v1::Namespace;
        let api = Api::<Namespace>::all(self.client.clone());
        let start = Instant::now();
        if let Err(e) = delete_children_first(&self.client, name).await {
            eprintln!("could not delete the math objects of namespace {name}: {e}");
        }
        if let Err(e) = api.delete(name, &DeleteParams::background()).await {
            eprintln!("could not delete namespace {name}: {e}");
            return;
        }
        let limit = Duration::from_secs(900);
        loop {
            match api.get_opt(name).await {
                Ok(None) => break,
                Ok(Some(_)) if start.elapsed() < limit => {}
                Ok(Some(_)) => {
                    eprintln!(
                        "namespace {name} is still there after {} s; measuring on",
                        limit.as_secs()
                    );
                    return;
                }
                Err(e) => {
                    eprintln!("could not see whether namespace {name} is gone: {e}");
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        if start.elapsed() > Duration::from_secs(2) {
            println!(
                "  (namespace {name} deleted in {:.0} s before going on)",
                start.elapsed().as_secs_f64()
            );
        }
    }
}

/// Every Number, then every Tuple, then every Fermat of `ns`: when a parent goes, no child
/// of it is left for the cluster's garbage collector to find and check.
async fn delete_children_first(client: &Client, ns: &str) -> kube::Result<()> {
    use kube::api::ListParams;
    use math_controller::api::Tuple;
    let all = ListParams::default();
    let params = DeleteParams::background();
    Api::<Number>::namespaced(client.clone(), ns)
        .delete_collection(&params, &all)
        .await?;
    Api::<Tuple>::namespaced(client.clone(), ns)
        .delete_collection(&params, &all)
        .await?;
    Api::<Fermat>::namespaced(client.clone(), ns)
        .delete_collection(&params, &all)
        .await?;
    Ok(())
}

/// One size's results, for the summary table.
struct Row {
    n: i64,
    floor: Duration,
    owned: Duration,
    converge: Duration,
    fair: Option<Fair>,
    writes: Writes,
    minimum: u64,
    steady: u64,
    restart: u64,
    heal: (Duration, Duration),
    rss_mib: Option<f64>,
    outage: Option<Duration>,
    restart_apiserver: Option<Duration>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut cluster = std::env::var("BENCH_CLUSTER").is_ok_and(|v| !v.is_empty() && v != "0");
    let mut sizes = Vec::new();
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--cluster" => cluster = true,
            n => sizes
                .push(n.parse::<i64>().map_err(|_| {
                    anyhow::anyhow!("usage: bench [--cluster] [n ...] (got {n:?})")
                })?),
        }
    }
    if sizes.is_empty() {
        sizes = vec![1000, 10000];
    }
    let heal_samples: usize = std::env::var("HEAL_SAMPLES")
        .ok()
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(50);
    let slow = !cluster && std::env::var("BENCH_SERVER").is_ok_and(|s| s == "slow");
    // BENCH_MANAGER runs another build (or a wrapper: valgrind, perf) instead.
    let binary = match std::env::var_os("BENCH_MANAGER") {
        Some(path) => std::path::PathBuf::from(path),
        None => {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/math-controller")
        }
    };
    anyhow::ensure!(
        binary.exists(),
        "build the manager first: cargo build --release --locked"
    );
    let server = Server::new(cluster, slow).await?;
    let place = match (cluster, slow) {
        (true, _) => "the cluster of the current kubeconfig".to_string(),
        (false, true) => {
            format!(
                "the test API server, slowed like a loopback kube-apiserver v1.24 (25 ms per write, ≤ {SLOW_WRITES_PER_SECOND} writes/s, an Event {SLOW_EVENT_WEIGHT} of a write, {} µs per watch event, {} s per CPU second of the manager)",
                env_duration_us("BENCH_SLOW_WATCH_EVENT_US")
                    .unwrap_or(SLOW_WATCH_EVENT_COST)
                    .as_micros(),
                cpu_share()
            )
        }
        (false, false) => "the in-memory test API server on loopback".to_string(),
    };
    println!("math-controller benchmark against {place}\n");

    // BENCH_REPEAT=N measures each size N times (floor and manager, one after the other):
    // on a real server the ratio of one run moves a lot at n = 1000.
    let repeat: usize = std::env::var("BENCH_REPEAT")
        .ok()
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(1)
        .max(1);
    // BENCH_FAIR=only: the small-during-big scenario alone (its timelines, for a diagnosis),
    // without the floors and the big one's time alone.
    if std::env::var("BENCH_FAIR").is_ok_and(|v| v == "only") {
        for &n in &sizes {
            for _ in 0..repeat {
                small_during_big(&server, &binary, n, None).await?;
            }
        }
        return Ok(());
    }
    let mut rows = Vec::new();
    for &n in &sizes {
        for _ in 0..repeat {
            rows.push(measure(&server, &binary, n, heal_samples).await?);
        }
    }
    let medians: Vec<String> = sizes
        .iter()
        .filter(|_| repeat > 1)
        .map(|&n| {
            let of = |f: fn(&Row) -> f64| median(rows.iter().filter(|r| r.n == n).map(f));
            format!(
                "n = {n}, {repeat} runs: floor {:.2} s, manager {:.2} s, ratio {:.2}× (medians; ratios {})",
                of(|r| r.floor.as_secs_f64()),
                of(|r| r.converge.as_secs_f64()),
                of(|r| r.converge.as_secs_f64() / r.floor.as_secs_f64()),
                rows.iter()
                    .filter(|r| r.n == n)
                    .map(|r| format!("{:.2}", r.converge.as_secs_f64() / r.floor.as_secs_f64()))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
        .collect();
    println!(
        "\n| n | bare floor | owned floor | manager | ratio (owned / bare) | Fermat 13 alone / during / after restart | big alone / beside a Fermat 13 | object writes (minimum) | progress reports | Event writes | steady 3 s | after restart | heal p50 / p99 | peak RSS | outage → Ready | apiserver restart → Ready |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for r in rows {
        println!(
            "| {} | {:.2} s | {:.2} s | {:.2} s | {:.2}× / {:.2}× | {} | {} | {} ({}) | {} | {} | {} | {} | {:.0} / {:.0} ms | {} | {} | {} |",
            r.n,
            r.floor.as_secs_f64(),
            r.owned.as_secs_f64(),
            r.converge.as_secs_f64(),
            r.converge.as_secs_f64() / r.owned.as_secs_f64(),
            r.converge.as_secs_f64() / r.floor.as_secs_f64(),
            r.fair.as_ref().map_or("–".into(), |f| format!(
                "{:.2} / {:.2} / {:.2} s",
                f.small_alone.as_secs_f64(),
                f.small_during.as_secs_f64(),
                f.small_after_restart.as_secs_f64()
            )),
            r.fair.as_ref().map_or("–".into(), |f| format!(
                "{:.2} / {:.2} s",
                r.converge.as_secs_f64(),
                f.big_during.as_secs_f64()
            )),
            r.writes.objects(),
            r.minimum,
            r.writes.fermat_statuses.saturating_sub(1),
            r.writes.events,
            r.steady,
            r.restart,
            ms(r.heal.0),
            ms(r.heal.1),
            r.rss_mib.map_or("?".into(), |m| format!("{m:.1} MiB")),
            r.outage
                .map_or("–".into(), |d| format!("{:.2} s", d.as_secs_f64())),
            r.restart_apiserver
                .map_or("–".into(), |d| format!("{:.2} s", d.as_secs_f64())),
        );
    }
    for line in medians {
        println!("{line}");
    }
    if let Some(test) = server.test {
        test.shutdown().await;
    }
    Ok(())
}

async fn measure(
    server: &Server,
    binary: &std::path::Path,
    n: i64,
    heal_samples: usize,
) -> anyhow::Result<Row> {
    let tuples = (n / 2).max(0) as usize;
    let numbers = 2 * tuples;
    let tag = format!("{n}-{}", std::process::id());
    println!("Fermat n = {n}: {tuples} Tuples, {numbers} Numbers");

    let prefix = prefix();
    let floor_ns = format!("{prefix}-floor-{tag}");
    server.create_namespace(&floor_ns).await?;
    let pids = watched_pids();
    let cpu_before = cpu_times(&pids);
    let floor = floor::run(&server.client, &floor_ns, tuples).await?;
    let floor_cpu = cpu_spent(&pids, &cpu_before);
    println!(
        "  floor:    a tight client (32 requests in flight) writes {} objects and their statuses in {:.2} s",
        tuples + numbers,
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
        server.create_namespace(&watched_ns).await?;
        let cpu_before = cpu_times(&pids);
        let watched = floor::run_watched(&server.client, &watched_ns, tuples).await?;
        let spent = cpu_spent(&pids, &cpu_before);
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
        server.delete_namespace(&watched_ns).await;
    }

    let ns = format!("{prefix}-{tag}");
    server.create_namespace(&ns).await?;
    let kubeconfig = server.kubeconfig();
    let manager = Manager::start(binary, kubeconfig.as_deref(), Some(&ns)).await?;
    let sharing = server.share_cpu_with(manager.pid());
    let fermats: Api<Fermat> = Api::namespaced(server.client.clone(), &ns);
    let cpu_before = cpu_times(&pids);
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
    let run_cpu = cpu_spent(&pids, &cpu_before);
    let manager_cpu = manager
        .cpu()
        .zip(manager_cpu_before)
        .map(|(after, before)| after.saturating_sub(before));
    let writes = manager.writes().await?;
    let minimum = 2 * (tuples + numbers) as u64 + 1;
    println!(
        "  converge: {:.2} s from creating the Fermat to its Ready status ({:.2}× the owned floor, {:.2}× the bare floor)",
        converge.as_secs_f64(),
        converge.as_secs_f64() / owned.as_secs_f64(),
        converge.as_secs_f64() / floor.as_secs_f64()
    );
    if let Some(cpu) = manager_cpu {
        let others = |spent: &[(String, Duration)]| {
            spent
                .iter()
                .map(|(name, d)| format!(", {name} {:.2} s", d.as_secs_f64()))
                .collect::<String>()
        };
        println!(
            "  CPU:      floor run: {} ; manager run: manager {:.2} s{}",
            others(&floor_cpu).trim_start_matches(", "),
            cpu.as_secs_f64(),
            others(&run_cpu)
        );
    }
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
        tenths(&pace, converge)
    );
    if let Some(busy) = busy_tenths(&pace, converge) {
        println!("            cores busy (the whole machine) in each tenth: {busy}");
    }
    let [numbers_run, tuples_run, fermats_run] = writes.reconciles;
    println!(
        "            reconciles: {numbers_run} of Numbers, {tuples_run} of Tuples, {fermats_run} of the Fermat"
    );
    if let Some(test) = &server.test {
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

    tokio::time::sleep(Duration::from_secs(3)).await;
    let steady = manager.writes().await?.all() - writes.all();
    println!("  steady:   {steady} write requests in the 3 s after converging");
    let first_rss = manager.peak_rss_mib();

    if let Some(sharing) = sharing {
        sharing.abort();
    }
    manager.stop().await?;
    let manager = Manager::start(binary, kubeconfig.as_deref(), Some(&ns)).await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let restart = manager.writes().await?.all();
    println!(
        "  restart:  {restart} write requests in the 3 s after the restarted manager was ready"
    );

    let heal = heal(&server.client, &ns, n, heal_samples).await?;
    println!(
        "  heal:     a deleted Number is back and Ready after p50 {:.1} ms, p99 {:.1} ms ({heal_samples} samples)",
        ms(heal.0),
        ms(heal.1)
    );

    let outage = match &server.test {
        Some(test) => Some(outage(test, &server.client, &ns).await?),
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
            Some(restart_apiserver(&command, &server.client, &ns, &manager).await?)
        }
        _ => None,
    };
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
    server.delete_namespace(&ns).await;
    let fair = if std::env::var("BENCH_FAIR").is_ok_and(|v| v == "0") {
        None
    } else {
        small_during_big(server, binary, n, Some(converge)).await?
    };
    Ok(Row {
        n,
        floor,
        owned,
        converge,
        fair,
        writes,
        minimum,
        steady,
        restart,
        heal,
        rss_mib,
        outage,
        restart_apiserver,
    })
}

/// The namespaces' prefix (`BENCH_NS_PREFIX`, default `math-bench`), to keep to one's own
/// namespaces on a shared cluster.
fn prefix() -> String {
    std::env::var("BENCH_NS_PREFIX").unwrap_or_else(|_| "math-bench".to_string())
}

/// "Small during big" (issue 28): what a second user of the manager sees.
struct Fair {
    /// A Fermat 13's time to Ready on the idle manager.
    small_alone: Duration,
    /// Its time to Ready when applied (in another namespace) 3 s into a Fermat n's build.
    small_during: Duration,
    /// The Fermat n's convergence with the small one beside it.
    big_during: Duration,
    /// A Fermat 13's time to Ready once the manager was restarted over the Fermat n's objects.
    small_after_restart: Duration,
}

/// The manager on all namespaces (the scenario needs two), a Fermat 13 alone, then a Fermat
/// `n` and 3 s later a Fermat 13 in another namespace, then a restart over everything and a
/// new Fermat 13. On a shared cluster a manager of all namespaces would reconcile other
/// people's objects: the scenario is skipped when any Fermat or Tuple exists outside its
/// namespaces.
async fn small_during_big(
    server: &Server,
    binary: &std::path::Path,
    n: i64,
    big_alone: Option<Duration>,
) -> anyhow::Result<Option<Fair>> {
    let tag = format!("{n}-{}", std::process::id());
    let prefix = prefix();
    let (big_ns, small_ns) = (
        format!("{prefix}-big-{tag}"),
        format!("{prefix}-small-{tag}"),
    );
    let others = |list: Vec<String>| {
        list.into_iter()
            .filter(|ns| ns != &big_ns && ns != &small_ns)
            .collect::<Vec<_>>()
    };
    let fermat_namespaces = Api::<Fermat>::all(server.client.clone())
        .list(&Default::default())
        .await?
        .items
        .iter()
        .filter_map(|f| f.namespace())
        .collect();
    let tuple_namespaces = Api::<math_controller::api::Tuple>::all(server.client.clone())
        .list(&kube::api::ListParams::default().limit(1))
        .await?
        .items
        .iter()
        .filter_map(|t| t.namespace())
        .collect();
    let foreign = [others(fermat_namespaces), others(tuple_namespaces)].concat();
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
    let watched = Timeline::watch(&server.client, &small_ns);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let applied = Instant::now();
    let small_alone = apply_and_wait(&small, "alone", 13).await?;
    let alone_timeline = watched.report("alone", applied);
    drop(watched);
    let start = Instant::now();
    big.create(
        &PostParams::default(),
        &Fermat::new("f", FermatSpec { number: n }),
    )
    .await?;
    let watched = Timeline::watch(&server.client, &small_ns);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let applied = Instant::now();
    let small_during = apply_and_wait(&small, "during", 13).await?;
    let during_timeline = watched.report("during", applied);
    drop(watched);
    wait_ready(&big, "f", Duration::from_secs(1200), Duration::from_secs(1)).await?;
    let big_during = start.elapsed();
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
    println!("  the Fermat 13's children as a watch of the bench saw them, alone:");
    alone_timeline.iter().for_each(|line| println!("{line}"));
    println!("  and during the big one:");
    during_timeline.iter().for_each(|line| println!("{line}"));
    manager.stop().await?;
    let manager = Manager::start(binary, kubeconfig.as_deref(), None).await?;
    let small_after_restart = apply_and_wait(&small, "after-restart", 13).await?;
    println!(
        "  restart:  the manager restarted over the Fermat {n}'s {} objects; a new Fermat 13 is Ready {:.2} s after it is applied",
        1 + 3 * (n / 2),
        small_after_restart.as_secs_f64()
    );
    manager.stop().await?;
    server.delete_namespace(&small_ns).await;
    server.delete_namespace(&big_ns).await;
    Ok(Some(Fair {
        small_alone,
        small_during,
        big_during,
        small_after_restart,
    }))
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

/// `BENCH_PIDS="name=pid ..."`: the processes whose CPU time is reported.
/// The bench itself is one of them: it is the floor's client, and polls during the manager's run.
/// The median of some numbers (the mean of the middle two for an even count).
fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.collect();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The write rate in each tenth of `run`, from cumulative samples.
fn tenths(samples: &[manager::Sample], run: Duration) -> String {
    let slice = run / 10;
    (0..10u32)
        .map(|i| {
            let writes = at(samples, slice * (i + 1))
                .writes
                .saturating_sub(at(samples, slice * i).writes);
            format!("{:.0}", writes as f64 / slice.as_secs_f64())
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// How many of the machine's cores were busy in each tenth of `run` (whatever used them):
/// a slow tenth with idle cores was waiting, not computing.
fn busy_tenths(samples: &[manager::Sample], run: Duration) -> Option<String> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let slice = run / 10;
    (0..10u32)
        .map(|i| {
            let (busy_after, total_after) = at(samples, slice * (i + 1)).cpu?;
            let (busy_before, total_before) = at(samples, slice * i).cpu?;
            let total = total_after.saturating_sub(total_before).max(1) as f64;
            let busy = busy_after.saturating_sub(busy_before) as f64;
            Some(format!("{:.1}", cores * busy / total))
        })
        .collect::<Option<Vec<_>>>()
        .map(|tenths| tenths.join(" "))
}

/// The last sample at or before `t` (the first one if none).
fn at(samples: &[manager::Sample], t: Duration) -> manager::Sample {
    let first = manager::Sample {
        at: Duration::ZERO,
        writes: 0,
        cpu: None,
    };
    samples
        .iter()
        .take_while(|s| s.at <= t)
        .last()
        .or(samples.first())
        .copied()
        .unwrap_or(first)
}

/// [`SLOW_CPU_SHARE`], or `BENCH_SLOW_CPU_SHARE` (calibrating the slowed server).
fn cpu_share() -> f64 {
    std::env::var("BENCH_SLOW_CPU_SHARE")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(SLOW_CPU_SHARE)
}

/// A duration in microseconds from the environment (calibrating the slowed server).
fn env_duration_us(name: &str) -> Option<Duration> {
    let us = std::env::var(name).ok()?.parse::<u64>().ok()?;
    Some(Duration::from_micros(us))
}

fn watched_pids() -> Vec<(String, u32)> {
    let mut pids: Vec<(String, u32)> = std::env::var("BENCH_PIDS")
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|w| {
            let (name, pid) = w.split_once('=')?;
            Some((name.to_string(), pid.parse().ok()?))
        })
        .collect();
    pids.push(("bench".into(), std::process::id()));
    pids
}

fn cpu_times(pids: &[(String, u32)]) -> Vec<Option<Duration>> {
    pids.iter().map(|(_, pid)| manager::cpu_of(*pid)).collect()
}

/// CPU time each watched process used since `before`.
fn cpu_spent(pids: &[(String, u32)], before: &[Option<Duration>]) -> Vec<(String, Duration)> {
    pids.iter()
        .zip(before)
        .filter_map(|((name, pid), before)| {
            let spent = manager::cpu_of(*pid)?.saturating_sub((*before)?);
            Some((name.clone(), spent))
        })
        .collect()
}

/// Delete one Number at a time and time its return (a new UID, Ready): p50 and p99.
async fn heal(
    client: &Client,
    ns: &str,
    n: i64,
    samples: usize,
) -> anyhow::Result<(Duration, Duration)> {
    let api: Api<Number> = Api::namespaced(client.clone(), ns);
    let tuples = (n / 2).max(1);
    let mut ready_again = Vec::new();
    for i in 0..samples {
        let a = 1 + (i as i64 * 7919) % tuples;
        let name = format!("f-{a}-and-{}-{}", n - a, i % 2);
        let old_uid = api.get(&name).await?.uid();
        let t0 = Instant::now();
        api.delete(&name, &DeleteParams::default()).await?;
        loop {
            if let Some(number) = api.get_opt(&name).await?
                && number.uid() != old_uid
                && number_ready(&number)
            {
                ready_again.push(t0.elapsed());
                break;
            }
            anyhow::ensure!(
                t0.elapsed() < Duration::from_secs(60),
                "{name} did not come back"
            );
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
    Ok((
        percentile(&mut ready_again, 50),
        percentile(&mut ready_again, 99),
    ))
}

/// Issue 8's scenario: the API server goes away while a Fermat 1000 is being built (here
/// once its first Number exists) and is back 8 s later: how long after its return is the
/// Fermat Ready?
async fn outage(test: &TestServer, client: &Client, ns: &str) -> anyhow::Result<Duration> {
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
async fn restart_apiserver(
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
    let about = |l: &&String| {
        [
            "unreachable",
            "reachable again",
            "watching",
            "listing again",
            "relist",
        ]
        .iter()
        .any(|w| l.contains(w))
    };
    let waiting = during.iter().filter(|l| l.contains("waiting for")).count();
    println!(
        "  apiserver restart: a Fermat 1000 whose kube-apiserver was killed 1.5 s in is Ready {:.2} s after it answers again; {} object writes (minimum 3001), {} log lines ({} about the outage and watches, {} waiting statuses)",
        ready.as_secs_f64(),
        writes.objects() - before.objects(),
        during.len(),
        during.iter().filter(about).count(),
        waiting,
    );
    Ok(ready)
}

/// Wait until Fermat `name` is Ready for its generation: told by a watch of it, and looked at
/// every `poll` as well (a watch cut by an outage is noticed by the poll). A converging
/// manager is watched, not polled every 20 ms: 3000 GETs a minute cost the API server time
/// the floor does not spend.
async fn wait_ready(
    api: &Api<Fermat>,
    name: &str,
    limit: Duration,
    poll: Duration,
) -> anyhow::Result<()> {
    use futures::StreamExt;
    use kube::runtime::{WatchStreamExt, watcher};
    let ready = |f: &Fermat| {
        f.status.as_ref().is_some_and(|status| {
            status.observed_generation == f.metadata.generation
                && status
                    .conditions
                    .iter()
                    .any(|c| c.type_ == "Ready" && c.status == "True")
        })
    };
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let mut changes = watcher(api.clone(), config).applied_objects().boxed();
    let start = Instant::now();
    loop {
        // A failed poll (the server just back from an outage) is only a poll to repeat.
        if let Ok(Some(f)) = api.get_opt(name).await
            && ready(&f)
        {
            return Ok(());
        }
        let next_poll = tokio::time::sleep(poll);
        tokio::pin!(next_poll);
        loop {
            tokio::select! {
                _ = &mut next_poll => break,
                change = changes.next() => match change {
                    Some(Ok(f)) if ready(&f) => return Ok(()),
                    Some(_) => {}
                    None => break,
                },
            }
        }
        anyhow::ensure!(
            start.elapsed() < limit,
            "Fermat {name} not Ready after {limit:?}"
        );
    }
}

fn number_ready(number: &Number) -> bool {
    number.status.as_ref().is_some_and(|s| {
        s.observed_generation == number.metadata.generation
            && s.conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
    })
}

fn percentile(samples: &mut [Duration], p: usize) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    samples.sort();
    let index = ((samples.len() * p).div_ceil(100)).clamp(1, samples.len()) - 1;
    samples[index]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
