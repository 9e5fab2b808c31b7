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
//!
//! The files, one question each: `server.rs` (where it runs, its namespaces), `measure.rs`
//! (one size), `floor.rs` (the tight client), `manager.rs` (the binary, its `/metrics`),
//! `ready.rs` (waiting for a Ready Fermat), `heal.rs`, `outage.rs` (the outage and the API
//! server restart), `fair.rs` (the small Fermat beside a big one), `timeline.rs` (its
//! children as a watch saw them), `pace.rs` (where the time went), `summary.rs` (the table).

mod fair;
mod floor;
mod heal;
mod manager;
mod measure;
mod outage;
mod pace;
mod ready;
mod server;
mod summary;
mod timeline;

use std::path::{Path, PathBuf};

use measure::measure;
use server::{SLOW_EVENT_WEIGHT, SLOW_WRITES_PER_SECOND, Server};

/// What the command line and the environment ask for, read before the server starts.
struct Options {
    cluster: bool,
    sizes: Vec<i64>,
    heal_samples: usize,
    slow: bool,
    /// The manager binary measured.
    binary: PathBuf,
}

impl Options {
    /// `[--cluster] [n ...]`, `BENCH_CLUSTER`, `HEAL_SAMPLES`, `BENCH_SERVER`, `BENCH_MANAGER`.
    fn read() -> anyhow::Result<Options> {
        let mut cluster = std::env::var("BENCH_CLUSTER").is_ok_and(|v| !v.is_empty() && v != "0");
        let mut sizes = Vec::new();
        for arg in std::env::args().skip(1) {
            match arg.as_str() {
                "--cluster" => cluster = true,
                n => sizes.push(n.parse::<i64>().map_err(|_| {
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
            Some(path) => PathBuf::from(path),
            None => Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/math-controller"),
        };
        anyhow::ensure!(
            binary.exists(),
            "build the manager first: cargo build --release --locked"
        );
        Ok(Options {
            cluster,
            sizes,
            heal_samples,
            slow,
            binary,
        })
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let options = Options::read()?;
    let server = Server::new(options.cluster, options.slow).await?;
    let place = place(options.cluster, options.slow);
    println!("math-controller benchmark against {place}\n");
    let repeat = repeat()?;
    let (sizes, binary) = (&options.sizes, options.binary.as_path());
    // BENCH_FAIR=only: the small-during-big scenario alone (its timelines, for a diagnosis),
    // without the floors and the big one's time alone.
    if std::env::var("BENCH_FAIR").is_ok_and(|v| v == "only") {
        for &n in sizes {
            for _ in 0..repeat {
                fair::small_during_big(&server, binary, n, None).await?;
            }
        }
        return Ok(());
    }
    let mut rows = Vec::new();
    for &n in sizes {
        for _ in 0..repeat {
            rows.push(measure(&server, binary, n, options.heal_samples).await?);
        }
    }
    summary::print(sizes, repeat, &rows);
    if let Some(test) = server.test {
        test.shutdown().await;
    }
    Ok(())
}

/// The server the header names: a cluster, or the test server as it is or slowed.
fn place(cluster: bool, slow: bool) -> String {
    match (cluster, slow) {
        (true, _) => "the cluster of the current kubeconfig".to_string(),
        (false, true) => {
            format!(
                "the test API server, slowed like a loopback kube-apiserver v1.24 (25 ms per write, ≤ {SLOW_WRITES_PER_SECOND} writes/s, an Event {SLOW_EVENT_WEIGHT} of a write, {} µs per watch event, {} s per CPU second of the manager)",
                server::watch_event_cost().as_micros(),
                server::cpu_share()
            )
        }
        (false, false) => "the in-memory test API server on loopback".to_string(),
    }
}

/// BENCH_REPEAT=N measures each size N times (floor and manager, one after the other):
/// on a real server the ratio of one run moves a lot at n = 1000.
fn repeat() -> anyhow::Result<usize> {
    Ok(std::env::var("BENCH_REPEAT")
        .ok()
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(1)
        .max(1))
}
