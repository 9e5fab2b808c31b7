//! Operations, against the test API server: leader election (one writer, takeover after a crash
//! within the lease duration, at once after a release), metrics and probes over HTTP, SIGTERM to
//! the real binary, the deploy/ manifests, and RBAC rules compared with the requests a full
//! manager run issues. Every test runs on one worker thread, as the manager does in production
//! (`src/main.rs`): what would only work with a second thread to run it fails here.

mod common;

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail, ensure};
use common::*;
use math_controller::metrics::Metrics;
use math_controller::ops::client;
use math_controller::ops::leader::{self, LeaderElectionConfig};
use math_controller::ops::manager::Options;
use serde_json::Value;
use serving::secure_metrics::SecureMetrics;
use test_apiserver::{RequestFilter, TestServer, Verb};

const LEASE: &str = "ops-test-lease";
const NS: &str = "default";

/// Short timings so the tests take seconds, in the same proportions as the defaults.
fn election(identity: &str, lease_duration: Duration) -> LeaderElectionConfig {
    let mut cfg = LeaderElectionConfig::new(LEASE, NS, identity);
    cfg.lease_duration = lease_duration;
    cfg.renew_deadline = lease_duration.mul_f64(0.66);
    cfg.retry_period = Duration::from_millis(200);
    cfg
}

fn with_election(cfg: LeaderElectionConfig) -> Options {
    Options {
        leader_election: Some(cfg),
        ..Options::default()
    }
}

fn holder(server: &TestServer) -> Option<String> {
    server
        .object("coordination.k8s.io", "leases", Some(NS), LEASE)?
        .pointer("/spec/holderIdentity")?
        .as_str()
        .map(str::to_string)
        .filter(|h| !h.is_empty())
}

fn number_status(server: &TestServer, name: &str) -> Option<Value> {
    server
        .object("math.example.com", "numbers", Some(NS), name)?
        .get("status")
        .cloned()
}

/// The Number's status describes its current spec.
fn number_converged(server: &TestServer, name: &str) -> bool {
    server
        .object("math.example.com", "numbers", Some(NS), name)
        .is_some_and(|n| {
            n.pointer("/status/observedGeneration") == n.pointer("/metadata/generation")
                && n.pointer("/status/fizzBuzz").is_some()
        })
}

fn number_yaml(name: &str, value: i64) -> String {
    format!(
        "apiVersion: math.example.com/v1beta1\nkind: Number\nmetadata:\n  name: {name}\n  namespace: {NS}\nspec:\n  value: {value}\n"
    )
}

/// A free port on 127.0.0.1 (another process could take it before we bind it again; on a test
/// machine that does not happen in practice).
fn free_port() -> Result<SocketAddr> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?)
}

async fn http_get(addr: SocketAddr, path: &str) -> Result<(u16, String)> {
    let path = path.to_string();
    tokio::task::spawn_blocking(move || -> Result<(u16, String)> {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
        s.set_read_timeout(Some(Duration::from_secs(5)))?;
        s.write_all(format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").as_bytes())?;
        let mut buf = String::new();
        s.read_to_string(&mut buf)?;
        let status = buf
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .context("no HTTP status line")?;
        let body = buf
            .split_once("\r\n\r\n")
            .map(|(_, b)| b)
            .unwrap_or_default();
        Ok((status, body.to_string()))
    })
    .await?
}

// ---------------------------------------------------------------------------------------------
// The leader module on its own

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn lease_is_exclusive_released_at_once_and_lost_when_taken() -> Result<()> {
    let server = server().await?;
    let client = server.client();
    let lease_duration = Duration::from_secs(6);

    let a = leader::acquire(
        client.clone(),
        election("a", lease_duration),
        std::future::pending::<()>(),
    )
    .await?
    .context("a acquires a free lease")?;
    assert_eq!(holder(&server).as_deref(), Some("a"));
    let lease = server
        .object("coordination.k8s.io", "leases", Some(NS), LEASE)
        .context("the lease exists")?;
    assert_eq!(lease.pointer("/spec/leaseDurationSeconds"), Some(&6.into()));
    assert!(lease.pointer("/spec/acquireTime").is_some());
    assert!(lease.pointer("/spec/renewTime").is_some());

    // b waits while a renews, well past a's lease duration.
    let b = tokio::spawn(leader::acquire(
        client.clone(),
        election("b", lease_duration),
        std::future::pending::<()>(),
    ));
    tokio::time::sleep(lease_duration + Duration::from_secs(1)).await;
    assert!(!b.is_finished(), "b must not lead while a renews");
    assert!(!a.is_lost());
    assert_eq!(holder(&server).as_deref(), Some("a"));

    // a releases: b takes over at its next retry, not after the lease duration.
    let released = Instant::now();
    a.release().await?;
    let b = tokio::time::timeout(Duration::from_secs(2), b)
        .await
        .context("b takes a released lease at once")???
        .context("b leads")?;
    assert!(released.elapsed() < Duration::from_secs(2));
    assert_eq!(holder(&server).as_deref(), Some("b"));
    let transitions = server
        .object("coordination.k8s.io", "leases", Some(NS), LEASE)
        .and_then(|l| l.pointer("/spec/leaseTransitions").cloned());
    assert_eq!(transitions, Some(1.into()), "a -> b is one transition");

    // Someone edits the lease to another holder: b notices within its renew deadline.
    let taken = Instant::now();
    try_kubectl(
        &server,
        &[
            "patch",
            "lease",
            LEASE,
            "-n",
            NS,
            "--type=merge",
            "-p",
            r#"{"spec":{"holderIdentity":"intruder"}}"#,
        ],
        None,
    )
    .await?;
    tokio::time::timeout(lease_duration, b.lost())
        .await
        .context("b notices it lost the lease")?;
    assert!(taken.elapsed() < lease_duration);
    assert!(b.is_lost());
    // Releasing a lease someone else holds leaves it alone.
    b.release().await?;
    assert_eq!(holder(&server).as_deref(), Some("intruder"));

    // A candidate told to stop while waiting gets None.
    let stopped = leader::acquire(
        client,
        election("c", lease_duration),
        tokio::time::sleep(Duration::from_millis(300)),
    )
    .await?;
    assert!(stopped.is_none());
    Ok(())
}

#[tokio::test]
async fn impossible_timings_are_an_error_not_a_hang() -> Result<()> {
    let server = server().await?;
    let mut cfg = election("a", Duration::from_secs(5));
    cfg.renew_deadline = Duration::from_secs(6);
    let result = leader::acquire(server.client(), cfg, std::future::pending::<()>()).await;
    assert!(matches!(result, Err(leader::Error::Config(_))));
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Two managers

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn two_managers_only_the_leader_writes_and_a_standby_takes_over_after_a_crash() -> Result<()>
{
    let server = server().await?;
    let lease_duration = Duration::from_secs(4);
    let a = Running::start(&server, with_election(election("a", lease_duration)));
    eventually_within(Duration::from_secs(5), "a to lead", || {
        a.leads().then_some(())
    })
    .await?;
    let b = Running::start(&server, with_election(election("b", lease_duration)));

    try_kubectl(&server, &["apply", "-f", "-"], Some(&number_yaml("n1", 15))).await?;
    eventually_within(Duration::from_secs(5), "n1 converged", || {
        number_converged(&server, "n1").then_some(())
    })
    .await?;
    // Give b every chance to misbehave.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(a.metrics.write_total() > 0, "the leader wrote n1's status");
    assert_eq!(b.metrics.write_total(), 0, "the standby never writes");
    assert!(!b.leads());
    assert_eq!(holder(&server).as_deref(), Some("a"));

    // a dies without releasing; b must converge a change within the lease duration (plus the
    // time to start its controllers and reconcile).
    a.crash();
    let crashed = Instant::now();
    try_kubectl(&server, &["apply", "-f", "-"], Some(&number_yaml("n2", 9))).await?;
    eventually_within(
        lease_duration + Duration::from_secs(3),
        "b to converge n2",
        || number_converged(&server, "n2").then_some(()),
    )
    .await?;
    let took = crashed.elapsed();
    assert!(
        took < lease_duration + Duration::from_secs(3),
        "takeover took {took:?}"
    );
    assert!(b.leads());
    assert_eq!(holder(&server).as_deref(), Some("b"));
    assert!(b.metrics.write_total() > 0);
    assert_eq!(
        number_status(&server, "n2").and_then(|s| s.get("isSquare").cloned()),
        Some(true.into())
    );
    b.shutdown().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_gracefully_stopped_leader_hands_over_at_once() -> Result<()> {
    let server = server().await?;
    // Long enough that "at once" cannot be an expiry.
    let lease_duration = Duration::from_secs(20);
    let a = Running::start(&server, with_election(election("a", lease_duration)));
    eventually_within(Duration::from_secs(5), "a to lead", || {
        a.leads().then_some(())
    })
    .await?;
    let b = Running::start(&server, with_election(election("b", lease_duration)));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!b.leads());

    let stopping = Instant::now();
    a.shutdown().await?;
    eventually_within(Duration::from_secs(3), "b to lead after a released", || {
        b.leads().then_some(())
    })
    .await?;
    assert!(stopping.elapsed() < Duration::from_secs(3));
    assert_eq!(holder(&server).as_deref(), Some("b"));

    try_kubectl(&server, &["apply", "-f", "-"], Some(&number_yaml("n3", 3))).await?;
    eventually_within(Duration::from_secs(5), "b to converge n3", || {
        number_converged(&server, "n3").then_some(())
    })
    .await?;
    b.shutdown().await?;
    assert_eq!(holder(&server), None, "b released the lease too");
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Stopping: a lost lease, a bounded drain

fn status_patches() -> RequestFilter {
    RequestFilter::new()
        .verb(Verb::Patch)
        .resource("numbers")
        .subresource("status")
}

/// Waits until the Number controller has a reconcile in flight (here: one whose status write
/// the server holds back).
async fn number_reconcile_in_flight(metrics: &Metrics) -> Result<()> {
    eventually_within(
        Duration::from_secs(10),
        "a Number reconcile in flight",
        || {
            (sample(
                &metrics.encode(),
                r#"controller_runtime_active_workers{controller="number"}"#,
            ) == Some(1.0))
            .then_some(())
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_leader_that_loses_the_lease_stops_at_once_without_waiting_for_its_writes() -> Result<()>
{
    let server = server().await?;
    // The status write of n1 takes 8 s: the old leader must not wait for it, nor land it.
    server.set_latency(status_patches(), Duration::from_secs(8));
    let lease_duration = Duration::from_secs(3);
    let a = Running::start(&server, with_election(election("a", lease_duration)));
    eventually_within(Duration::from_secs(5), "a to lead", || {
        a.leads().then_some(())
    })
    .await?;
    try_kubectl(&server, &["apply", "-f", "-"], Some(&number_yaml("n1", 15))).await?;
    number_reconcile_in_flight(&a.metrics).await?;

    // Another replica takes the lease (as if a's renewals had been lost in the network).
    let taken = Instant::now();
    try_kubectl(
        &server,
        &[
            "patch",
            "lease",
            LEASE,
            "-n",
            NS,
            "--type=merge",
            "-p",
            r#"{"spec":{"holderIdentity":"intruder"}}"#,
        ],
        None,
    )
    .await?;
    let result = tokio::time::timeout(lease_duration, a.task)
        .await
        .context("run() returns within the lease duration of losing the lease, not when the status write it waits for ends (8 s)")??;
    let error = result.err().context("losing the lease is an error exit")?;
    assert!(
        error.to_string().contains("lost"),
        "the error says leadership was lost: {error:#}"
    );
    assert!(taken.elapsed() < lease_duration);
    // The write that was in flight was abandoned with the connection: the new leader alone
    // writes from now on.
    tokio::time::sleep(Duration::from_secs(9).saturating_sub(taken.elapsed())).await;
    assert_eq!(
        number_status(&server, "n1"),
        None,
        "the old leader's status write landed after it lost the lease"
    );
    assert_eq!(holder(&server).as_deref(), Some("intruder"));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_shutdown_waits_for_the_reconciles_in_flight_at_most_the_shutdown_timeout() -> Result<()>
{
    let server = server().await?;
    // A status write that takes longer than any grace period.
    server.set_latency(status_patches(), Duration::from_secs(60));
    let m = Running::start(
        &server,
        Options {
            shutdown_timeout: Duration::from_secs(1),
            ..with_election(election("a", Duration::from_secs(10)))
        },
    );
    eventually_within(Duration::from_secs(5), "the manager to lead", || {
        m.leads().then_some(())
    })
    .await?;
    try_kubectl(&server, &["apply", "-f", "-"], Some(&number_yaml("n1", 15))).await?;
    number_reconcile_in_flight(&m.metrics).await?;

    let stopping = Instant::now();
    let result = m.shutdown().await;
    let took = stopping.elapsed();
    let error = result
        .err()
        .context("a drain cut short by the shutdown timeout is reported as an error exit")?;
    assert!(
        error.to_string().contains("shutdown timeout"),
        "the error names the timeout: {error:#}"
    );
    assert!(took < Duration::from_secs(5), "stopping took {took:?}");
    assert_eq!(
        holder(&server),
        None,
        "the lease is released even when the drain was cut short"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_hung_request_is_cut_by_the_read_timeout_and_watches_end_before_it() -> Result<()> {
    let server = server().await?;
    // Watches with nothing to say stay silent for longer than the read timeout.
    server.set_bookmark_interval(Duration::from_secs(60));
    let read_timeout = Duration::from_secs(2);
    let mut config = kube::Config::new(server.url().parse()?);
    config.default_namespace = NS.to_string();
    let client = kube::Client::try_from(client::with_read_timeout(config, read_timeout))?;
    let m = Running::with_client(
        client,
        Options {
            read_timeout: Some(read_timeout),
            ..Options::default()
        },
    );

    // n1's status write hangs: the server does not answer for an hour.
    let n1_status = status_patches().name("n1");
    server.set_latency(n1_status.clone(), Duration::from_secs(3600));
    try_kubectl(&server, &["apply", "-f", "-"], Some(&number_yaml("n1", 15))).await?;
    number_reconcile_in_flight(&m.metrics).await?;
    tokio::time::sleep(read_timeout + Duration::from_secs(1)).await;
    // The server answers again: the write that timed out is retried, and lands.
    server.set_latency(n1_status, Duration::ZERO);
    eventually_within(
        Duration::from_secs(10),
        "n1 converged after its hung write",
        || number_converged(&server, "n1").then_some(()),
    )
    .await?;

    // Quiet for several read timeouts: the watches still deliver a new Number.
    tokio::time::sleep(read_timeout * 3).await;
    try_kubectl(&server, &["apply", "-f", "-"], Some(&number_yaml("n2", 9))).await?;
    eventually_within(Duration::from_secs(10), "n2 converged", || {
        number_converged(&server, "n2").then_some(())
    })
    .await?;
    let watches: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.verb == Verb::Watch && !r.user_agent.starts_with("kubectl"))
        .collect();
    assert!(!watches.is_empty());
    for watch in &watches {
        let timeout = watch
            .query
            .split('&')
            .find_map(|p| p.strip_prefix("timeoutSeconds="))
            .and_then(|t| t.parse::<u64>().ok())
            .with_context(|| format!("watch without timeoutSeconds: {}", watch.query))?;
        assert!(
            Duration::from_secs(timeout) < read_timeout,
            "the server must end a watch ({timeout} s) before the client's read timeout ({read_timeout:?}) cuts it"
        );
    }
    m.shutdown().await?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Metrics and probes

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn metrics_and_probes_answer_over_http() -> Result<()> {
    let server = server().await?;
    let metrics_address = free_port()?;
    let probe_address = free_port()?;
    let m = Running::start(
        &server,
        Options {
            metrics_address: Some(metrics_address),
            probe_address: Some(probe_address),
            ..Options::default()
        },
    );
    eventually_within(Duration::from_secs(5), "/healthz", || {
        std::net::TcpStream::connect(probe_address).ok()
    })
    .await?;
    let (status, body) = http_get(probe_address, "/healthz").await?;
    assert_eq!((status, body.trim()), (200, "ok"));
    let deadline = Instant::now() + Duration::from_secs(5);
    while http_get(probe_address, "/readyz").await?.0 != 200 {
        ensure!(Instant::now() < deadline, "/readyz never became ready");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    try_kubectl(&server, &["apply", "-f", "-"], Some(&number_yaml("n1", 25))).await?;
    eventually_within(Duration::from_secs(5), "n1 converged", || {
        number_converged(&server, "n1").then_some(())
    })
    .await?;

    // The status is visible a moment before the reconcile that wrote it has returned and been
    // counted: scrape until it has.
    let success_series =
        r#"controller_runtime_reconcile_total{controller="number",result="success"}"#;
    let deadline = Instant::now() + Duration::from_secs(5);
    let text = loop {
        let (status, text) = http_get(metrics_address, "/metrics").await?;
        assert_eq!(status, 200);
        if sample(&text, success_series).is_some_and(|v| v >= 1.0) || Instant::now() > deadline {
            break text;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    for documented in [
        "# TYPE controller_runtime_reconcile_total counter",
        "# TYPE controller_runtime_reconcile_time_seconds histogram",
        "# TYPE controller_runtime_active_workers gauge",
        "# TYPE workqueue_depth gauge",
        "# TYPE math_controller_write_requests_total counter",
        "# TYPE math_controller_build_info gauge",
    ] {
        assert!(text.contains(documented), "{documented} missing in\n{text}");
    }
    assert!(
        sample(&text, success_series).is_some_and(|v| v >= 1.0),
        "{text}"
    );
    let status_writes = sample(
        &text,
        r#"math_controller_write_requests_total{controller="number",kind="Number",operation="patch_status"}"#,
    );
    assert_eq!(status_writes, Some(1.0), "one status write for one Number");
    let observed = sample(
        &text,
        r#"controller_runtime_reconcile_time_seconds_count{controller="number"}"#,
    );
    assert!(observed.is_some_and(|v| v >= 1.0));
    assert_eq!(http_get(metrics_address, "/nothing").await?.0, 404);

    m.shutdown().await?;
    assert!(
        std::net::TcpStream::connect(metrics_address).is_err(),
        "the metrics server stops with the manager"
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The real binary

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn sigterm_exits_zero_and_releases_the_lease() -> Result<()> {
    let server = server().await?;
    let probes = free_port()?;
    let mut child = Command::new(env!("CARGO_BIN_EXE_math-controller"))
        .arg("--kubeconfig")
        .arg(server.kubeconfig_path())
        .args([
            "--leader-elect",
            "--leader-election-namespace",
            NS,
            "--leader-election-id",
            LEASE,
            "--metrics-bind-address=0",
            "--log-format=json",
        ])
        .arg(format!("--health-probe-bind-address={probes}"))
        .env("POD_NAME", "sigterm-test")
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let started = eventually_within(
        Duration::from_secs(20),
        "the binary to take the lease",
        || (holder(&server).as_deref() == Some("sigterm-test")).then_some(()),
    )
    .await;
    if started.is_err() {
        let _ = child.kill();
        let out = child.wait_with_output()?;
        bail!(
            "the manager never led:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_eq!(http_get(probes, "/healthz").await?.0, 200);

    let kill = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()?;
    assert!(kill.success());
    let stopped = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if stopped.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            bail!("the manager did not exit within 10 s of SIGTERM");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let out = child.wait_with_output()?;
    let logs = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(status.success(), "exit status {status:?}\n{logs}");
    assert_eq!(holder(&server), None, "the lease was released\n{logs}");
    // --log-format=json: every log line is a JSON object.
    for line in logs.lines().filter(|l| l.starts_with('{')) {
        serde_json::from_str::<Value>(line).with_context(|| format!("not JSON: {line}"))?;
    }
    Ok(())
}

/// Connections that never finish a request: half a request line, nothing at all, and (on the
/// TLS port) half a request after the handshake and a handshake never started.
async fn stalled_clients(
    probes: SocketAddr,
    metrics: SocketAddr,
) -> Result<Vec<Box<dyn std::any::Any + Send>>> {
    use tokio::io::AsyncWriteExt;
    let mut held: Vec<Box<dyn std::any::Any + Send>> = Vec::new();
    for _ in 0..4 {
        let mut half = tokio::net::TcpStream::connect(probes).await?;
        half.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow:")
            .await?;
        held.push(Box::new(half));
        held.push(Box::new(tokio::net::TcpStream::connect(probes).await?));
        let mut tls = https::connect(metrics).await?;
        tls.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ")
            .await?;
        tls.flush().await?;
        held.push(Box::new(tls));
        held.push(Box::new(tokio::net::TcpStream::connect(metrics).await?));
    }
    Ok(held)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn sigterm_does_not_wait_for_clients_that_never_finish_a_request() -> Result<()> {
    let server = server().await?;
    let probes = free_port()?;
    let metrics = free_port()?;
    let mut child = Command::new(env!("CARGO_BIN_EXE_math-controller"))
        .arg("--kubeconfig")
        .arg(server.kubeconfig_path())
        .args(["--metrics-secure", "--log-format=json"])
        .arg(format!("--metrics-bind-address={metrics}"))
        .arg(format!("--health-probe-bind-address={probes}"))
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let outcome = async {
        let deadline = Instant::now() + Duration::from_secs(20);
        while http_get(probes, "/readyz").await.map(|(s, _)| s).unwrap_or(0) != 200 {
            ensure!(Instant::now() < deadline, "the manager never became ready");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let held = stalled_clients(probes, metrics).await?;
        signal(&child, "-TERM")?;
        // The header-read timeout is 32 s: a shutdown that waited for these clients would
        // still be waiting.
        let deadline = Instant::now() + Duration::from_secs(10);
        let status = loop {
            if let Some(status) = child.try_wait()? {
                break status;
            }
            ensure!(
                Instant::now() < deadline,
                "the manager did not exit within 10 s of SIGTERM while {} stalled clients were connected",
                held.len()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        drop(held);
        Ok(status)
    }
    .await;
    if outcome.is_err() {
        let _ = child.kill();
    }
    let out = child.wait_with_output()?;
    let logs = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let status = outcome.with_context(|| logs.clone())?;
    assert!(status.success(), "exit status {status:?}\n{logs}");
    Ok(())
}

/// The real binary with its probes on a free port, logging at `rust_log` to a pipe.
fn spawn_binary(
    server: &TestServer,
    probes: SocketAddr,
    metrics: &str,
    rust_log: &str,
) -> Result<std::process::Child> {
    Ok(Command::new(env!("CARGO_BIN_EXE_math-controller"))
        .arg("--kubeconfig")
        .arg(server.kubeconfig_path())
        .arg(format!("--metrics-bind-address={metrics}"))
        .arg(format!("--health-probe-bind-address={probes}"))
        .env("RUST_LOG", rust_log)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?)
}

async fn healthz_within(probes: SocketAddr, within: Duration) -> Result<()> {
    let deadline = Instant::now() + within;
    while http_get(probes, "/healthz")
        .await
        .map(|(s, _)| s)
        .unwrap_or(0)
        != 200
    {
        ensure!(Instant::now() < deadline, "/healthz never answered");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

/// A client that pipelines probes and never reads the answers; the task ends when the server
/// cuts the connection (the write fails).
async fn pipelining_client(addr: SocketAddr) -> Result<tokio::task::JoinHandle<std::io::Error>> {
    use tokio::io::AsyncWriteExt;
    // Small buffers, so that the client stalls after a few answers rather than after the
    // megabytes loopback would buffer.
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.set_recv_buffer_size(4096)?;
    socket.set_send_buffer_size(4096)?;
    let mut client = socket.connect(addr).await?;
    Ok(tokio::spawn(async move {
        let requests = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".repeat(256);
        loop {
            if let Err(error) = client.write_all(&requests).await {
                return error;
            }
        }
    }))
}

/// Whether the server closed `stream` (reading it ends or fails) within `within`.
async fn closed_within(stream: &mut tokio::net::TcpStream, within: Duration) -> bool {
    use tokio::io::AsyncReadExt;
    let mut buf = [0u8; 1024];
    let closed = async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    };
    tokio::time::timeout(within, closed).await.is_ok()
}

/// An attacker that holds 300 silent connections (the bound is 256) and re-opens each one the
/// server closes, and a client that pipelines requests and never reads the answers: the probe
/// is answered throughout, and the attackers' connections are the ones closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn the_probe_port_cannot_be_held_shut() -> Result<()> {
    let server = server().await?;
    let probes = free_port()?;
    let mut child = spawn_binary(&server, probes, "0", "info")?;
    let outcome = async {
        healthz_within(probes, Duration::from_secs(20)).await?;
        let pipeliner = pipelining_client(probes).await?;
        let mut idle = std::collections::VecDeque::new();
        let mut first_idle = None;
        let mut probes_answered = 0;
        // Bounded: a server that never closes the pipelining client fails after 60 s. It
        // stalls only once the kernel holds megabytes of its answers (several seconds of
        // answering in a debug build); from then on it is idle, soon longer than any of the
        // silent connections, and the next newcomer closes it.
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut opened = 0;
        while Instant::now() < deadline {
            opened += 1;
            tokio::time::sleep(Duration::from_millis(5)).await;
            let stream = tokio::net::TcpStream::connect(probes).await?;
            if first_idle.is_none() {
                first_idle = Some(stream);
            } else {
                idle.push_back(stream);
            }
            if idle.len() >= 300 {
                idle.pop_front();
            }
            if opened % 100 == 0 {
                // A probe as the kubelet sends it; `http_get` gives up after 5 s (the
                // header-read timeout, which used to free a slot, is 32 s).
                let (status, _) = http_get(probes, "/healthz")
                    .await
                    .with_context(|| format!("/healthz after {opened} connections"))?;
                ensure!(
                    status == 200,
                    "/healthz answered {status} after {opened} connections"
                );
                probes_answered += 1;
            }
            if opened >= 300 && pipeliner.is_finished() {
                break;
            }
        }
        ensure!(
            probes_answered >= 3,
            "only {probes_answered} probes were sent"
        );
        ensure!(
            pipeliner.is_finished(),
            "a client that pipelines and never reads is still connected after {opened} others came"
        );
        let mut first_idle = first_idle.context("no idle connection")?;
        ensure!(
            closed_within(&mut first_idle, Duration::from_secs(20)).await,
            "the oldest idle connection is still open"
        );
        Ok(())
    }
    .await;
    let _ = child.kill();
    let out = child.wait_with_output()?;
    outcome.with_context(|| String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The Fermat's status says Ready for its current generation.
fn fermat_converged(server: &TestServer, name: &str) -> bool {
    server
        .object("math.example.com", "fermats", Some(NS), name)
        .is_some_and(|f| {
            f.pointer("/status/observedGeneration") == f.pointer("/metadata/generation")
                && f.pointer("/status/conditions")
                    .and_then(Value::as_array)
                    .is_some_and(|conditions| {
                        conditions
                            .iter()
                            .any(|c| c["type"] == "Ready" && c["status"] == "True")
                    })
        })
}

fn renew_time(server: &TestServer, lease: &str) -> Option<Value> {
    server
        .object("coordination.k8s.io", "leases", Some(NS), lease)?
        .pointer("/spec/renewTime")
        .cloned()
}

/// The manager's one worker thread writes no log line itself: with its stderr a pipe nobody
/// reads (a stuck log shipper), at debug level, it still answers its probes, converges a
/// Fermat, renews its lease and counts the lines it had to drop. (A Fermat 1000 logs some
/// 15 000 lines at debug, more than the writer queues: some must be dropped.)
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_log_pipe_nobody_reads_stalls_neither_probes_nor_work_nor_the_lease() -> Result<()> {
    const LOG_LEASE: &str = "stalled-log-lease";
    let server = server().await?;
    let probes = free_port()?;
    let metrics = free_port()?;
    let mut child = Command::new(env!("CARGO_BIN_EXE_math-controller"))
        .arg("--kubeconfig")
        .arg(server.kubeconfig_path())
        .args([
            "--leader-elect",
            "--leader-election-namespace",
            NS,
            "--leader-election-id",
            LOG_LEASE,
        ])
        .arg(format!("--metrics-bind-address={metrics}"))
        .arg(format!("--health-probe-bind-address={probes}"))
        .env("POD_NAME", "stalled-log")
        .env("RUST_LOG", "debug")
        .stdout(Stdio::null())
        // Piped and never read until the end: the pipe's 64 KiB fill within moments.
        .stderr(Stdio::piped())
        .spawn()?;
    let outcome = async {
        healthz_within(probes, Duration::from_secs(20)).await?;
        let fermat = "apiVersion: math.example.com/v1beta1\nkind: Fermat\nmetadata:\n  name: logged\n  namespace: default\nspec:\n  number: 1000\n";
        try_kubectl(&server, &["apply", "-f", "-"], Some(fermat)).await?;
        let deadline = Instant::now() + Duration::from_secs(60);
        while !fermat_converged(&server, "logged") {
            let (status, _) = http_get(probes, "/healthz")
                .await
                .context("/healthz while the manager converges with its log pipe full")?;
            ensure!(status == 200, "/healthz answered {status}");
            ensure!(Instant::now() < deadline, "the Fermat never became Ready");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let before = renew_time(&server, LOG_LEASE).context("no lease")?;
        let deadline = Instant::now() + Duration::from_secs(30);
        while renew_time(&server, LOG_LEASE).as_ref() == Some(&before) {
            ensure!(Instant::now() < deadline, "the lease was not renewed");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let (status, text) = http_get(metrics, "/metrics").await?;
        ensure!(status == 200, "/metrics answered {status}");
        let dropped: u64 = text
            .lines()
            .find_map(|l| l.strip_prefix("math_controller_log_lines_dropped_total "))
            .and_then(|v| v.trim().parse().ok())
            .context("no math_controller_log_lines_dropped_total")?;
        ensure!(dropped > 0, "no log line was dropped: the pipe never filled?");
        Ok(())
    }
    .await;
    let _ = child.kill();
    let out = child.wait_with_output()?;
    outcome.with_context(|| {
        let logs = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<_> = logs.lines().rev().take(20).collect();
        format!("the last log lines, newest first:\n{}", tail.join("\n"))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn leader_election_outside_a_cluster_needs_the_lease_namespace() -> Result<()> {
    let server = server().await?;
    // `cargo run -- --leader-elect` on a laptop: no pod namespace to default to, and the
    // kubeconfig's namespace would put the Lease where the Deployment's replicas do not look.
    let mut child = Command::new(env!("CARGO_BIN_EXE_math-controller"))
        .arg("--kubeconfig")
        .arg(server.kubeconfig_path())
        .args([
            "--leader-elect",
            "--leader-election-id",
            LEASE,
            "--metrics-bind-address=0",
            "--health-probe-bind-address=0",
        ])
        .env_remove("POD_NAMESPACE")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            break None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let out = child.wait_with_output()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    let status = status.with_context(|| {
        format!(
            "the manager ran (lease holder: {:?}) instead of refusing to start\n{stderr}",
            holder(&server)
        )
    })?;
    assert!(!status.success(), "{status:?}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line:\n{stderr}");
    assert!(
        lines[0].contains("--leader-election-namespace"),
        "the error names the flag: {stderr}"
    );
    assert!(
        server
            .objects("coordination.k8s.io", "leases", None)
            .is_empty(),
        "no Lease was taken"
    );
    Ok(())
}

/// Polls the binary's /metrics until the Number controller has a reconcile in flight.
async fn binary_reconcile_in_flight(metrics: SocketAddr) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok((200, text)) = http_get(metrics, "/metrics").await
            && sample(
                &text,
                r#"controller_runtime_active_workers{controller="number"}"#,
            ) == Some(1.0)
        {
            return Ok(());
        }
        ensure!(
            Instant::now() < deadline,
            "no Number reconcile in flight within 20 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn signal(child: &std::process::Child, signal: &str) -> Result<()> {
    let kill = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()?;
    ensure!(kill.success(), "kill {signal} failed");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_second_ctrl_c_stops_at_once() -> Result<()> {
    let server = server().await?;
    // A reconcile that would hold a graceful shutdown for a minute.
    server.set_latency(status_patches(), Duration::from_secs(60));
    let metrics = free_port()?;
    let mut child = Command::new(env!("CARGO_BIN_EXE_math-controller"))
        .arg("--kubeconfig")
        .arg(server.kubeconfig_path())
        .args(["--health-probe-bind-address=0", "--shutdown-timeout=60s"])
        .arg(format!("--metrics-bind-address={metrics}"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let outcome = async {
        try_kubectl(&server, &["apply", "-f", "-"], Some(&number_yaml("n1", 15))).await?;
        binary_reconcile_in_flight(metrics).await?;
        // The first Ctrl-C drains: the manager waits for the reconcile in flight.
        signal(&child, "-INT")?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        ensure!(
            child.try_wait()?.is_none(),
            "the first Ctrl-C must wait for the reconcile in flight"
        );
        // The second one does not wait.
        signal(&child, "-INT")?;
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            if let Some(status) = child.try_wait()? {
                return Ok(status);
            }
            ensure!(
                Instant::now() < deadline,
                "the manager did not exit within 5 s of the second Ctrl-C"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    .await;
    if outcome.is_err() {
        let _ = child.kill();
    }
    let out = child.wait_with_output()?;
    let logs = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let status = outcome.with_context(|| logs.clone())?;
    assert_eq!(
        status.code(),
        Some(130),
        "a forced exit is not a clean one: {status:?}\n{logs}"
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// deploy/

fn deploy_files() -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo().join("deploy"))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        // The kustomization lists these files; it is no object (tests/deploy.rs renders it).
        .filter(|p| !p.ends_with("kustomization.yaml"))
        .collect();
    files.sort();
    Ok(files)
}

fn deploy_documents() -> Result<Vec<Value>> {
    use serde::Deserialize;
    let mut docs = Vec::new();
    for file in deploy_files()? {
        let text = std::fs::read_to_string(&file)?;
        for doc in serde_yaml::Deserializer::from_str(&text) {
            let v = Value::deserialize(doc).with_context(|| file.display().to_string())?;
            if !v.is_null() {
                docs.push(v);
            }
        }
    }
    Ok(docs)
}

fn of_kind<'a>(docs: &'a [Value], kind: &str) -> Vec<&'a Value> {
    docs.iter()
        .filter(|d| d.get("kind").and_then(Value::as_str) == Some(kind))
        .collect()
}

/// Deserializing into the typed API and back must give the same document: a misspelled or
/// misplaced field (which kubectl would drop or reject) shows up as a difference.
fn round_trips<K: serde::de::DeserializeOwned + serde::Serialize>(doc: &Value) -> Result<()> {
    let typed: K = serde_json::from_value(doc.clone())?;
    let back = serde_json::to_value(&typed)?;
    ensure!(
        back == *doc,
        "unknown or misplaced fields in\n{}\nthe API reads it as\n{}",
        serde_yaml::to_string(doc)?,
        serde_yaml::to_string(&back)?
    );
    Ok(())
}

#[test]
fn deploy_manifests_are_well_formed_and_match_the_cli() -> Result<()> {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{Namespace, Service, ServiceAccount};
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
    let docs = deploy_documents()?;
    for doc in &docs {
        let kind = doc.get("kind").and_then(Value::as_str).unwrap_or_default();
        match kind {
            "Namespace" => round_trips::<Namespace>(doc),
            "ServiceAccount" => round_trips::<ServiceAccount>(doc),
            "ClusterRole" => round_trips::<ClusterRole>(doc),
            "ClusterRoleBinding" => round_trips::<ClusterRoleBinding>(doc),
            "Role" => round_trips::<Role>(doc),
            "RoleBinding" => round_trips::<RoleBinding>(doc),
            "Deployment" => round_trips::<Deployment>(doc),
            "Service" => round_trips::<Service>(doc),
            other => bail!("unexpected kind {other} in deploy/"),
        }
        .with_context(|| format!("{kind} in deploy/"))?;
        if kind != "Namespace" && !kind.starts_with("Cluster") {
            assert_eq!(
                doc.pointer("/metadata/namespace"),
                Some(&"math-system".into())
            );
        }
    }

    let deployments = of_kind(&docs, "Deployment");
    assert_eq!(deployments.len(), 1);
    let d: Deployment = serde_json::from_value(deployments[0].clone())?;
    let pod = d.spec.and_then(|s| s.template.spec).context("pod spec")?;
    assert_eq!(pod.service_account_name.as_deref(), Some("math-controller"));
    let pod_security = pod.security_context.context("pod securityContext")?;
    assert_eq!(pod_security.run_as_non_root, Some(true));
    assert_eq!(
        pod_security.seccomp_profile.map(|p| p.type_),
        Some("RuntimeDefault".to_string())
    );
    let [c] = pod.containers.as_slice() else {
        bail!("one container")
    };
    let args = c.args.clone().unwrap_or_default();
    for expected in [
        "--leader-elect",
        "--metrics-secure",
        "--metrics-bind-address=:8443",
        "--health-probe-bind-address=:8081",
        "--log-format=json",
    ] {
        assert!(args.iter().any(|a| a == expected), "{expected} in {args:?}");
    }
    // The args must be ones the binary accepts.
    use clap::Parser;
    let cli = math_controller::cli::Cli::try_parse_from(
        std::iter::once("math-controller".to_string()).chain(args),
    )?;
    assert!(cli.run.leader_elect);
    // SIGTERM: the drain and the lease release end before the kubelet's SIGKILL.
    let grace = pod
        .termination_grace_period_seconds
        .context("terminationGracePeriodSeconds")?;
    let shutdown = cli.run.shutdown_timeout + math_controller::ops::shutdown::RELEASE_TIMEOUT;
    assert!(
        shutdown < Duration::from_secs(u64::try_from(grace)?),
        "--shutdown-timeout plus the lease release ({shutdown:?}) must end within terminationGracePeriodSeconds ({grace} s)"
    );
    let sc = c
        .security_context
        .clone()
        .context("container securityContext")?;
    assert_eq!(sc.read_only_root_filesystem, Some(true));
    assert_eq!(sc.allow_privilege_escalation, Some(false));
    assert_eq!(
        sc.capabilities.and_then(|c| c.drop),
        Some(vec!["ALL".to_string()])
    );
    let probe_path = |p: Option<&k8s_openapi::api::core::v1::Probe>| {
        p.and_then(|p| p.http_get.as_ref())
            .and_then(|h| h.path.clone())
    };
    assert_eq!(
        probe_path(c.liveness_probe.as_ref()).as_deref(),
        Some("/healthz")
    );
    assert_eq!(
        probe_path(c.readiness_probe.as_ref()).as_deref(),
        Some("/readyz")
    );
    let resources = c.resources.clone().context("resources")?;
    assert!(resources.requests.is_some() && resources.limits.is_some());
    let env: Vec<(String, String)> = c
        .env
        .clone()
        .unwrap_or_default()
        .into_iter()
        .filter_map(|e| Some((e.name, e.value_from?.field_ref?.field_path)))
        .collect();
    assert!(env.contains(&("POD_NAME".into(), "metadata.name".into())));
    assert!(env.contains(&("POD_NAMESPACE".into(), "metadata.namespace".into())));
    Ok(())
}

/// The ports the Dockerfile's `EXPOSE` documents are the ones the Deployment's container
/// serves (the image says what the manifests use).
#[test]
fn the_dockerfile_exposes_the_ports_deploy_uses() -> Result<()> {
    use k8s_openapi::api::apps::v1::Deployment;
    let dockerfile = std::fs::read_to_string(repo().join("Dockerfile"))?;
    let mut exposed = BTreeSet::new();
    for line in dockerfile.lines() {
        let mut words = line.split_whitespace();
        if words
            .next()
            .is_some_and(|w| w.eq_ignore_ascii_case("EXPOSE"))
        {
            for port in words {
                let port = port.strip_suffix("/tcp").unwrap_or(port);
                exposed.insert(
                    port.parse::<i32>()
                        .with_context(|| format!("EXPOSE {port}"))?,
                );
            }
        }
    }
    let docs = deploy_documents()?;
    let deployments = of_kind(&docs, "Deployment");
    let d: Deployment = serde_json::from_value(deployments[0].clone())?;
    let pod = d.spec.and_then(|s| s.template.spec).context("pod spec")?;
    let used: BTreeSet<i32> = (pod.containers.iter())
        .flat_map(|c| c.ports.iter().flatten())
        .map(|p| p.container_port)
        .collect();
    assert_eq!(
        exposed, used,
        "Dockerfile EXPOSE vs deploy/'s container ports"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn deploy_manifests_pass_a_server_dry_run() -> Result<()> {
    let server = server().await?;
    // A dry run creates nothing, so the namespaced objects need the namespace for real.
    let ns = repo().join("deploy/00-namespace.yaml");
    try_kubectl(&server, &["apply", "-f", &ns.to_string_lossy()], None).await?;
    let deploy = repo().join("deploy");
    let out = try_kubectl(
        &server,
        &["apply", "--dry-run=server", "-k", &deploy.to_string_lossy()],
        None,
    )
    .await?;
    let docs = deploy_documents()?;
    for doc in &docs {
        let name = doc
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        assert!(
            out.lines()
                .any(|l| l.contains(&format!("/{name} ")) && l.contains("(server dry run)")),
            "{name} missing in\n{out}"
        );
    }
    // Nothing but the namespace was created (a new cluster's own ClusterRoles, cluster-admin,
    // admin, edit and view, were there before).
    assert!(server.objects("apps", "deployments", None).is_empty());
    let cluster_roles: Vec<String> = server
        .objects("rbac.authorization.k8s.io", "clusterroles", None)
        .iter()
        .filter_map(|r| r.pointer("/metadata/name").and_then(Value::as_str))
        .map(str::to_string)
        .collect();
    for doc in &docs {
        if doc.get("kind").and_then(Value::as_str) == Some("ClusterRole") {
            let name = doc.pointer("/metadata/name").and_then(Value::as_str);
            assert!(
                !cluster_roles.iter().any(|r| Some(r.as_str()) == name),
                "{name:?} was created by a dry run"
            );
        }
    }
    assert!(cluster_roles.iter().any(|r| r == "cluster-admin"));
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// RBAC: exactly what the manager uses

/// (apiGroup, resource or resource/subresource, verb)
type Grant = (String, String, String);

fn granted(docs: &[Value]) -> Result<BTreeSet<Grant>> {
    // Only roles bound to the manager's ServiceAccount: deploy/ also holds the metrics-reader
    // ClusterRole, which is for scrapers to bind.
    let bound: BTreeSet<(String, String)> = of_kind(docs, "ClusterRoleBinding")
        .into_iter()
        .chain(of_kind(docs, "RoleBinding"))
        .filter(|b| {
            b.get("subjects")
                .and_then(Value::as_array)
                .is_some_and(|s| {
                    s.iter().any(|s| {
                        s.get("kind") == Some(&"ServiceAccount".into())
                            && s.get("name") == Some(&"math-controller".into())
                    })
                })
        })
        .filter_map(|b| {
            Some((
                b.pointer("/roleRef/kind")?.as_str()?.to_string(),
                b.pointer("/roleRef/name")?.as_str()?.to_string(),
            ))
        })
        .collect();
    let mut grants = BTreeSet::new();
    for role in of_kind(docs, "ClusterRole")
        .into_iter()
        .chain(of_kind(docs, "Role"))
        .filter(|r| {
            let kind = r.get("kind").and_then(Value::as_str).unwrap_or_default();
            let name = r
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            bound.contains(&(kind.to_string(), name.to_string()))
        })
    {
        for rule in role
            .get("rules")
            .and_then(Value::as_array)
            .context("rules")?
        {
            let list = |key: &str| -> Vec<String> {
                rule.get(key)
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(|v| v.as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default()
            };
            ensure!(
                list("resourceNames").is_empty() && list("nonResourceURLs").is_empty(),
                "unexpected rule form {rule}"
            );
            for group in list("apiGroups") {
                for resource in list("resources") {
                    for verb in list("verbs") {
                        ensure!(
                            group != "*" && resource != "*" && verb != "*",
                            "wildcard in {rule}"
                        );
                        grants.insert((group.clone(), resource.clone(), verb));
                    }
                }
            }
        }
    }
    Ok(grants)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn cluster_role_grants_exactly_the_requests_of_a_full_manager_run() -> Result<()> {
    let server = server().await?;
    // As on OpenShift and hardened clusters: blockOwnerDeletion on a child's ownerReference
    // needs `update` on the owner's finalizers, checked against deploy/'s rules.
    let rules: Vec<Value> = of_kind(&deploy_documents()?, "ClusterRole")
        .into_iter()
        .chain(of_kind(&deploy_documents()?, "Role"))
        .filter_map(|role| role.get("rules").and_then(Value::as_array).cloned())
        .flatten()
        .collect();
    server.enforce_owner_references(&rules)?;
    let metrics_address = free_port()?;
    let m = Running::start(
        &server,
        Options {
            metrics_address: Some(metrics_address),
            metrics_secure: Some(SecureMetrics::default()),
            ..with_election(election("rbac", Duration::from_secs(10)))
        },
    );
    eventually_within(Duration::from_secs(5), "the manager to lead", || {
        m.leads().then_some(())
    })
    .await?;
    // --metrics-secure: a scrape with a token bound to metrics-reader (TokenReview and
    // SubjectAccessReview).
    let reader = repo().join("deploy/24-metrics-reader-cluster-role.yaml");
    try_kubectl(&server, &["apply", "-f", &reader.to_string_lossy()], None).await?;
    try_kubectl(
        &server,
        &[
            "create",
            "clusterrolebinding",
            "scraper",
            "--clusterrole=math-controller-metrics-reader",
            "--serviceaccount=monitoring:prometheus",
        ],
        None,
    )
    .await?;
    server.add_service_account_token("scraper-token", "monitoring", "prometheus");
    let scrape = https::get(metrics_address, "/metrics", Some("scraper-token")).await?;
    assert_eq!(scrape.status, 200, "{}", scrape.text);
    let apply = |yaml: String| {
        let server = server.clone();
        async move { try_kubectl(&server, &["apply", "-f", "-"], Some(&yaml)).await }
    };
    let ready = |resource: &'static str, name: &'static str| {
        let server = server.clone();
        move || {
            server
                .object("math.example.com", resource, Some(NS), name)
                .filter(|o| {
                    o.pointer("/status/observedGeneration") == o.pointer("/metadata/generation")
                        && o.pointer("/status/conditions")
                            .and_then(Value::as_array)
                            .is_some_and(|c| {
                                c.iter().any(|c| {
                                    c.get("type") == Some(&"Ready".into())
                                        && c.get("status") == Some(&"True".into())
                                })
                            })
                })
                .map(|_| ())
        }
    };
    let t = Duration::from_secs(10);

    // A Fermat with Tuples with Numbers: list, watch, create, status patches, Events.
    apply(format!(
        "apiVersion: math.example.com/v1beta1\nkind: Fermat\nmetadata:\n  name: f\n  namespace: {NS}\nspec:\n  number: 5\n"
    ))
    .await?;
    eventually_within(t, "Fermat f ready", ready("fermats", "f")).await?;
    // A Tuple on its own, to shrink later.
    apply(format!(
        "apiVersion: math.example.com/v1beta1\nkind: Tuple\nmetadata:\n  name: t\n  namespace: {NS}\nspec:\n  numbers: [1, 4, 9]\n"
    ))
    .await?;
    eventually_within(t, "Tuple t ready", ready("tuples", "t")).await?;

    // A child owned by someone else is a conflict, reported for two generations of the Tuple
    // (one Warning: it says the same both times).
    apply(format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: someone\n  namespace: {NS}\n"
    ))
    .await?;
    let owner_uid = server
        .object("", "configmaps", Some(NS), "someone")
        .and_then(|c| {
            c.pointer("/metadata/uid")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .ok_or_else(|| anyhow::anyhow!("the ConfigMap has no uid"))?;
    apply(format!(
        "apiVersion: math.example.com/v1beta1\nkind: Number\nmetadata:\n  name: c-0\n  namespace: {NS}\n  ownerReferences:\n  - apiVersion: v1\n    kind: ConfigMap\n    name: someone\n    uid: {owner_uid}\n    controller: true\nspec:\n  value: 3\n"
    ))
    .await?;
    for numbers in ["[1]", "[1, 2]"] {
        apply(format!(
            "apiVersion: math.example.com/v1beta1\nkind: Tuple\nmetadata:\n  name: c\n  namespace: {NS}\nspec:\n  numbers: {numbers}\n"
        ))
        .await?;
        let generation = if numbers == "[1]" { 1 } else { 2 };
        eventually_within(t, "Tuple c reports the conflict", || {
            server
                .object("math.example.com", "tuples", Some(NS), "c")
                .filter(|o| {
                    o.pointer("/status/observedGeneration") == Some(&generation.into())
                        && o.pointer("/status/conditions/0/reason") == Some(&"ChildConflict".into())
                })
                .map(|_| ())
        })
        .await?;
    }

    // A deleted child comes back (create).
    try_kubectl(&server, &["delete", "number", "t-0", "-n", NS], None).await?;
    eventually_within(t, "t-0 back", || {
        server
            .object("math.example.com", "numbers", Some(NS), "t-0")
            .map(|_| ())
    })
    .await?;
    eventually_within(t, "t ready", ready("tuples", "t")).await?;
    // A child edited by hand is corrected (patch).
    try_kubectl(
        &server,
        &[
            "patch",
            "number",
            "t-1",
            "-n",
            NS,
            "--type=merge",
            "-p",
            r#"{"spec":{"value":5}}"#,
        ],
        None,
    )
    .await?;
    eventually_within(t, "t-1 corrected", || {
        server
            .object("math.example.com", "numbers", Some(NS), "t-1")
            .filter(|n| n.pointer("/spec/value") == Some(&4.into()))
            .map(|_| ())
    })
    .await?;
    try_kubectl(
        &server,
        &[
            "patch",
            "tuple",
            "f-1-and-4",
            "-n",
            NS,
            "--type=merge",
            "-p",
            r#"{"spec":{"numbers":[7]}}"#,
        ],
        None,
    )
    .await?;
    eventually_within(t, "f-1-and-4 corrected", || {
        server
            .object("math.example.com", "tuples", Some(NS), "f-1-and-4")
            .filter(|n| n.pointer("/spec/numbers") == Some(&serde_json::json!([1, 4])))
            .map(|_| ())
    })
    .await?;
    // Unwanted children are deleted: a Tuple shrinks, a Fermat changes its number.
    apply(format!(
        "apiVersion: math.example.com/v1beta1\nkind: Tuple\nmetadata:\n  name: t\n  namespace: {NS}\nspec:\n  numbers: [1]\n"
    ))
    .await?;
    eventually_within(t, "t-1 and t-2 deleted", || {
        server
            .object("math.example.com", "numbers", Some(NS), "t-2")
            .is_none()
            .then_some(())
    })
    .await?;
    apply(format!(
        "apiVersion: math.example.com/v1beta1\nkind: Fermat\nmetadata:\n  name: f\n  namespace: {NS}\nspec:\n  number: 4\n"
    ))
    .await?;
    eventually_within(t, "f-1-and-4 deleted", || {
        server
            .object("math.example.com", "tuples", Some(NS), "f-1-and-4")
            .is_none()
            .then_some(())
    })
    .await?;
    eventually_within(t, "Fermat f ready again", ready("fermats", "f")).await?;
    // Graceful shutdown releases the lease (update).
    m.shutdown().await?;

    let mut used = BTreeSet::new();
    for r in server.requests() {
        if r.user_agent.starts_with("kubectl") || r.verb == Verb::NonResource {
            continue;
        }
        if r.resource == "leases" {
            assert_eq!(
                r.namespace.as_deref(),
                Some(NS),
                "leases only in the lease's namespace"
            );
        }
        let resource = match &r.subresource {
            Some(sub) => format!("{}/{sub}", r.resource),
            None => r.resource.clone(),
        };
        used.insert((r.group.clone(), resource, r.verb.as_str().to_string()));
    }
    // What the admission check needed the manager's account to be allowed (kubectl's own
    // writes, the ConfigMap-owned Number, set no blockOwnerDeletion).
    for check in server.authorization_checks() {
        if check.allowed {
            used.insert((check.group.clone(), check.combined_resource(), check.verb));
        }
    }
    let granted = granted(&deploy_documents()?)?;
    let missing: Vec<_> = used.difference(&granted).collect();
    let unused: Vec<_> = granted.difference(&used).collect();
    assert!(
        missing.is_empty() && unused.is_empty(),
        "deploy/ RBAC differs from the manager's requests\nused but not granted: {missing:?}\ngranted but not used: {unused:?}"
    );
    Ok(())
}
