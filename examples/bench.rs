//! Benchmark: the numbers of DESIGN.md's "what the original got wrong" table, measured
//! against the in-memory test API server with the real (release) manager binary.
//!
//! ```text
//! cargo build --release --locked && cargo run --release --locked --example bench -- [n] [heal-samples]
//! ```
//! (`make bench` does both.) It prints numbers; it asserts nothing.
//!
//! `BENCH_SERVER=slow` gives both test API servers (the floor's and the manager's) a real
//! kube-apiserver's write cost: 25 ms per write and at most 1000 writes/s, queued (the
//! loopback kube-apiserver + etcd of issue 8 wrote about 1000 objects/s with 32 in flight).

use std::process::Stdio;
use std::time::{Duration, Instant};

use futures::{FutureExt, StreamExt, TryStreamExt, stream};
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use math_controller::api::{Fermat, FermatSpec, Number, NumberSpec, Tuple, TupleSpec};
use serde_json::{Value, json};
use test_apiserver::{RequestFilter, TestServer, Verb};

const GROUP: &str = "math.example.com";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let n: i64 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(1000);
    let heal_samples: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(100);
    let binary =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/math-controller");
    anyhow::ensure!(
        binary.exists(),
        "build the manager first: cargo build --release --locked"
    );
    let tuples = n / 2;
    let numbers = 2 * tuples;
    println!(
        "math-controller benchmark: Fermat n = {n} ({tuples} Tuples, {numbers} Numbers), test API server on loopback\n"
    );

    let slow = std::env::var("BENCH_SERVER").is_ok_and(|s| s == "slow");
    if slow {
        println!("server: slowed like a real kube-apiserver (25 ms per write, ≤ 1000 writes/s)\n");
    }
    let baseline = tight_client(tuples as usize, slow).await?;
    println!(
        "baseline: a tight client (64 requests in flight) writes {} objects and {} statuses in {:.2} s",
        tuples + numbers,
        tuples + numbers,
        baseline.as_secs_f64()
    );

    let server = TestServer::start().await?;
    install_crds(&server)?;
    if slow {
        slow_down(&server);
    }
    let mut manager = spawn_manager(&binary, &server).await?;
    server.reset_requests();

    let start = Instant::now();
    Api::<Fermat>::default_namespaced(server.client())
        .create(
            &PostParams::default(),
            &Fermat::new("f", FermatSpec { number: n }),
        )
        .await?;
    server
        .wait_for(GROUP, "fermats", Duration::from_secs(600), |fs| {
            fs.iter().any(ready)
        })
        .await?;
    let converged = start.elapsed();
    let count = |verb, resource: &str, sub: Option<&str>| {
        let mut filter = RequestFilter::new().verb(verb).resource(resource);
        filter = match sub {
            Some(s) => filter.subresource(s),
            None => filter.main_resource(),
        };
        server.count(&filter)
    };
    let creates = count(Verb::Create, "tuples", None) + count(Verb::Create, "numbers", None);
    let statuses = count(Verb::Patch, "numbers", Some("status"))
        + count(Verb::Patch, "tuples", Some("status"))
        + count(Verb::Patch, "fermats", Some("status"));
    let other = count(Verb::Patch, "numbers", None)
        + count(Verb::Patch, "tuples", None)
        + count(Verb::Delete, "numbers", None)
        + count(Verb::Delete, "tuples", None);
    let events = server.count(&RequestFilter::new().resource("events").verb(Verb::Create))
        + server.count(&RequestFilter::new().resource("events").verb(Verb::Patch));
    let failed = server
        .requests()
        .iter()
        .filter(|r| r.verb.is_write() && r.status >= 400)
        .count();
    println!(
        "converge: {:.2} s from creating the Fermat to its Ready status ({:.2}× the baseline)",
        converged.as_secs_f64(),
        converged.as_secs_f64() / baseline.as_secs_f64()
    );
    println!(
        "writes:   {creates} creates + {statuses} status writes + {other} other object writes = {} (minimum {}); \
         {failed} refused; plus {events} Event writes",
        creates + statuses + other,
        2 * (tuples + numbers) + 1
    );

    // Restart on a converged cluster.
    stop(&mut manager, &server).await?;
    server.reset_requests();
    let mut manager = spawn_manager(&binary, &server).await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    println!(
        "restart:  {} write requests in the 3 s after the restarted manager started watching",
        server.write_count()
    );

    // Healing: delete one Number at a time and time its return.
    let api: Api<Number> = Api::default_namespaced(server.client());
    let mut back = Vec::new();
    let mut ready_again = Vec::new();
    for i in 0..heal_samples {
        let a = 1 + (i as i64 * 7919) % tuples.max(1);
        let name = format!("f-{a}-and-{}-{}", n - a, i % 2);
        let old_uid = uid(&server.object(GROUP, "numbers", Some("default"), &name));
        let t0 = Instant::now();
        api.delete(&name, &DeleteParams::default()).await?;
        let mut seen = None;
        loop {
            let obj = server.object(GROUP, "numbers", Some("default"), &name);
            let fresh = obj.is_some() && uid(&obj) != old_uid;
            if fresh && seen.is_none() {
                seen = Some(t0.elapsed());
            }
            if fresh && obj.as_ref().is_some_and(ready) {
                ready_again.push(t0.elapsed());
                break;
            }
            anyhow::ensure!(
                t0.elapsed() < Duration::from_secs(30),
                "{name} did not come back"
            );
            tokio::time::sleep(Duration::from_micros(500)).await;
        }
        back.extend(seen);
    }
    println!(
        "heal:     a deleted Number exists again after p50 {:.1} ms, p99 {:.1} ms; Ready after p50 {:.1} ms, p99 {:.1} ms ({heal_samples} samples)",
        ms(percentile(&mut back, 50)),
        ms(percentile(&mut back, 99)),
        ms(percentile(&mut ready_again, 50)),
        ms(percentile(&mut ready_again, 99)),
    );
    // An outage: the API server goes away 0.3 s into a Fermat 200 and is back 3 s later.
    Api::<Fermat>::default_namespaced(server.client())
        .create(
            &PostParams::default(),
            &Fermat::new("g", FermatSpec { number: 200 }),
        )
        .await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.stop();
    tokio::time::sleep(Duration::from_secs(3)).await;
    server.resume();
    let back = Instant::now();
    server
        .wait_for(GROUP, "fermats", Duration::from_secs(120), |fs| {
            fs.iter().any(|f| f["metadata"]["name"] == "g" && ready(f))
        })
        .await?;
    println!(
        "outage:   a Fermat 200 cut 0.3 s in by a 3 s outage is Ready {:.2} s after the server returned",
        back.elapsed().as_secs_f64()
    );
    let peak = peak_memory_kib(manager.id());
    stop(&mut manager, &server).await?;
    match peak {
        Some(kib) => println!("memory:   manager peak RSS {:.1} MiB", kib as f64 / 1024.0),
        None => println!("memory:   unavailable (no /proc)"),
    }
    server.shutdown().await;
    Ok(())
}

/// What a client needs that writes the same objects as fast as it can: every create and
/// every status write, 64 requests in flight.
async fn tight_client(tuples: usize, slow: bool) -> anyhow::Result<Duration> {
    let server = TestServer::start().await?;
    install_crds(&server)?;
    if slow {
        slow_down(&server);
    }
    let client: Client = server.client();
    let tuple_api: Api<Tuple> = Api::default_namespaced(client.clone());
    let number_api: Api<Number> = Api::default_namespaced(client.clone());
    let start = Instant::now();
    let tuple_writes = (0..tuples).map(|a| {
        let api = tuple_api.clone();
        async move {
            let name = format!("t-{a}");
            api.create(
                &PostParams::default(),
                &Tuple::new(
                    &name,
                    TupleSpec {
                        numbers: vec![a as i64, 1],
                    },
                ),
            )
            .await?;
            let status =
                json!({"status": {"allSquares": false, "readyNumbers": 2, "desiredNumbers": 2}});
            api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
                .await?;
            Ok::<_, kube::Error>(())
        }
        .boxed()
    });
    let number_writes = (0..2 * tuples).map(|i| {
        let api = number_api.clone();
        async move {
            let name = format!("n-{i}");
            api.create(
                &PostParams::default(),
                &Number::new(&name, NumberSpec { value: i as i64 }),
            )
            .await?;
            let status = json!({"status": {"fizzBuzz": "1", "isSquare": false, "isPrime": false}});
            api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
                .await?;
            Ok::<_, kube::Error>(())
        }
        .boxed()
    });
    stream::iter(tuple_writes.chain(number_writes))
        .buffer_unordered(64)
        .try_collect::<Vec<_>>()
        .await?;
    let elapsed = start.elapsed();
    server.shutdown().await;
    Ok(elapsed)
}

/// A real kube-apiserver's write cost (see the module comment).
fn slow_down(server: &TestServer) {
    for verb in [Verb::Create, Verb::Update, Verb::Patch, Verb::Delete] {
        server.set_latency(RequestFilter::new().verb(verb), Duration::from_millis(25));
    }
    server.set_write_rate(1000);
}

fn install_crds(server: &TestServer) -> anyhow::Result<()> {
    server.apply_crd_yaml(&math_controller::api::crds_yaml()?)
}

async fn spawn_manager(
    binary: &std::path::Path,
    server: &TestServer,
) -> anyhow::Result<tokio::process::Child> {
    let watches_before = server.count(&RequestFilter::new().verb(Verb::Watch));
    // The manager's default; BENCH_CONCURRENCY tries others.
    let concurrency = std::env::var("BENCH_CONCURRENCY").unwrap_or_else(|_| "16".into());
    let child = tokio::process::Command::new(binary)
        .args([
            "--metrics-bind-address",
            "0",
            "--health-probe-bind-address",
            "0",
            "--concurrency",
            &concurrency,
        ])
        .env("KUBECONFIG", server.kubeconfig_path())
        .env(
            "RUST_LOG",
            std::env::var("MANAGER_LOG").unwrap_or_else(|_| "warn".into()),
        )
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let start = Instant::now();
    while server.count(&RequestFilter::new().verb(Verb::Watch)) < watches_before + 3 {
        anyhow::ensure!(
            start.elapsed() < Duration::from_secs(30),
            "the manager did not start watching"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(child)
}

async fn stop(child: &mut tokio::process::Child, server: &TestServer) -> anyhow::Result<()> {
    if let Some(pid) = child.id() {
        std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()?;
    }
    let status = match tokio::time::timeout(Duration::from_secs(30), child.wait()).await {
        Ok(status) => status?,
        Err(_) => {
            for r in server.requests().iter().rev().take(15) {
                eprintln!(
                    "{:?} {} {} {:?} {}",
                    r.verb, r.method, r.path, r.query, r.status
                );
            }
            dump_threads(child.id());
            let alive = Api::<Fermat>::default_namespaced(server.client())
                .get("f")
                .await
                .is_ok();
            anyhow::bail!(
                "the manager did not stop within 30 s of SIGTERM (server answers: {alive})"
            );
        }
    };
    anyhow::ensure!(status.success(), "the manager exited with {status}");
    Ok(())
}

fn ready(obj: &Value) -> bool {
    let generation = obj.pointer("/metadata/generation");
    obj.pointer("/status/observedGeneration") == generation
        && obj
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True")
            })
}

fn uid(obj: &Option<Value>) -> Option<String> {
    obj.as_ref()?
        .pointer("/metadata/uid")?
        .as_str()
        .map(str::to_string)
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

fn peak_memory_kib(pid: Option<u32>) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{}/status", pid?)).ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Where the manager is stuck, for the rare run that hangs: every thread's stack (needs gdb).
fn dump_threads(pid: Option<u32>) {
    if let (Some(pid), Ok(gdb)) = (pid, std::env::var("BENCH_GDB")) {
        let _ = std::process::Command::new(gdb)
            .args([
                "-p",
                &pid.to_string(),
                "-batch",
                "-ex",
                "thread apply all bt",
            ])
            .status();
    }
}
