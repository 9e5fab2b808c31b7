//! The operator dialect: a running manager's `/metrics` against the series a controller-runtime
//! v0.24 manager exports (names, types, label sets, histogram buckets, help texts), served in
//! both text formats by content negotiation; `result` as controller-runtime sets it;
//! `rest_client_requests_total` equal to what the API server answered the manager's client; no
//! controller series on a standby replica; the metrics certificate's reads counted. The
//! dashboards' queries are `tests/metrics_dashboards.rs`.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context as _, Result, ensure};
use common::exposition::Scrape;
use common::*;
use math_controller::ops::leader::LeaderElectionConfig;
use math_controller::ops::manager::Options;
use test_apiserver::{RequestFilter, TestServer, Verb};

/// How a family's histogram is bucketed.
#[derive(Clone, Copy, Debug)]
enum Buckets {
    None,
    /// `controller_runtime_reconcile_time_seconds`' list.
    ReconcileTime,
    /// client-go's `ExponentialBuckets(10e-9, 10, 12)`.
    Workqueue,
}

/// A family as controller-runtime's text format shows it.
struct Series {
    name: &'static str,
    kind: &'static str,
    labels: &'static [&'static str],
    buckets: Buckets,
    help: &'static str,
}

const fn series(
    name: &'static str,
    kind: &'static str,
    labels: &'static [&'static str],
    help: &'static str,
) -> Series {
    Series {
        name,
        kind,
        labels,
        buckets: Buckets::None,
        help,
    }
}

const fn histogram(
    name: &'static str,
    labels: &'static [&'static str],
    buckets: Buckets,
    help: &'static str,
) -> Series {
    Series {
        name,
        kind: "histogram",
        labels,
        buckets,
        help,
    }
}

const C: &[&str] = &["controller"];
const Q: &[&str] = &["controller", "name"];

/// Every series a kubebuilder manager of controller-runtime v0.24.1 exports on Linux without
/// webhooks, but Go's runtime series (`go_*`). Sources, in kubernetes-sigs/controller-runtime:
/// `pkg/internal/controller/metrics/metrics.go` (the reconcile series, `reconcile_timeouts`
/// since v0.23), `pkg/internal/metrics/workqueue.go` (client-go's workqueue series with the
/// `controller` label and the depth's `priority`), `pkg/metrics/leaderelection.go` (which
/// declares `leader_election_slowpath_total` but registers only the gauge),
/// `pkg/metrics/client_go_adapter.go`, `pkg/certwatcher/metrics/metrics.go`; and
/// prometheus/client_golang v1.23.2's `prometheus/process_collector.go` and
/// `process_collector_procfsenabled.go`, which controller-runtime registers.
#[rustfmt::skip]
const CONTROLLER_RUNTIME: &[Series] = &[
    series("controller_runtime_reconcile_total", "counter", &["controller", "result"], "Total number of reconciliations per controller"),
    series("controller_runtime_reconcile_errors_total", "counter", C, "Total number of reconciliation errors per controller"),
    series("controller_runtime_terminal_reconcile_errors_total", "counter", C, "Total number of terminal reconciliation errors per controller"),
    series("controller_runtime_reconcile_panics_total", "counter", C, "Total number of reconciliation panics per controller"),
    series("controller_runtime_reconcile_timeouts_total", "counter", C, "Total number of reconciliation timeouts per controller"),
    histogram("controller_runtime_reconcile_time_seconds", C, Buckets::ReconcileTime, "Length of time per reconciliation per controller"),
    series("controller_runtime_max_concurrent_reconciles", "gauge", C, "Maximum number of concurrent reconciles per controller"),
    series("controller_runtime_active_workers", "gauge", C, "Number of currently used workers per controller"),
    series("workqueue_depth", "gauge", &["controller", "name", "priority"], "Current depth of workqueue by workqueue and priority"),
    series("workqueue_adds_total", "counter", Q, "Total number of adds handled by workqueue"),
    histogram("workqueue_queue_duration_seconds", Q, Buckets::Workqueue, "How long in seconds an item stays in workqueue before being requested"),
    histogram("workqueue_work_duration_seconds", Q, Buckets::Workqueue, "How long in seconds processing an item from workqueue takes."),
    series("workqueue_unfinished_work_seconds", "gauge", Q, "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases."),
    series("workqueue_longest_running_processor_seconds", "gauge", Q, "How many seconds has the longest running processor for workqueue been running."),
    series("workqueue_retries_total", "counter", Q, "Total number of items added to the workqueue with a non-zero delay (rate-limited requeues, explicit RequeueAfter or AddAfter calls)"),
    series("leader_election_master_status", "gauge", &["name"], "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name."),
    series("rest_client_requests_total", "counter", &["code", "host", "method"], "Number of HTTP requests, partitioned by status code, method, and host."),
    series("certwatcher_read_certificate_total", "counter", &[], "Total number of certificate reads"),
    series("certwatcher_read_certificate_errors_total", "counter", &[], "Total number of certificate read errors"),
    series("process_cpu_seconds_total", "counter", &[], "Total user and system CPU time spent in seconds."),
    series("process_open_fds", "gauge", &[], "Number of open file descriptors."),
    series("process_max_fds", "gauge", &[], "Maximum number of open file descriptors."),
    series("process_virtual_memory_bytes", "gauge", &[], "Virtual memory size in bytes."),
    series("process_virtual_memory_max_bytes", "gauge", &[], "Maximum amount of virtual memory available in bytes."),
    series("process_resident_memory_bytes", "gauge", &[], "Resident memory size in bytes."),
    series("process_start_time_seconds", "gauge", &[], "Start time of the process since unix epoch in seconds."),
    series("process_network_receive_bytes_total", "counter", &[], "Number of bytes received by the process over the network."),
    series("process_network_transmit_bytes_total", "counter", &[], "Number of bytes sent by the process over the network."),
];

const RECONCILE_TIME: [f64; 40] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
    1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0,
    25.0, 30.0, 40.0, 50.0, 60.0,
];

/// The upper bounds a family must have, +Inf included.
fn bounds(buckets: Buckets) -> Vec<f64> {
    let mut b = match buckets {
        Buckets::None => return Vec::new(),
        Buckets::ReconcileTime => RECONCILE_TIME.to_vec(),
        Buckets::Workqueue => (0..12).map(|i| 10e-9 * 10f64.powi(i)).collect(),
    };
    b.push(f64::INFINITY);
    b
}

fn same_bounds(have: &[f64], want: &[f64]) -> bool {
    have.len() == want.len()
        && have
            .iter()
            .zip(want)
            .all(|(a, b)| a == b || ((a - b) / b).abs() < 1e-9)
}

const LEASE: &str = "math-controller";

fn free_port() -> Result<SocketAddr> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?)
}

/// GET /metrics with `accept` (if any): the Content-Type and the body.
async fn get_metrics(addr: SocketAddr, accept: Option<&str>) -> Result<(String, String)> {
    let accept = accept
        .map(|a| format!("Accept: {a}\r\n"))
        .unwrap_or_default();
    tokio::task::spawn_blocking(move || -> Result<(String, String)> {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
        s.set_read_timeout(Some(Duration::from_secs(5)))?;
        s.write_all(
            format!("GET /metrics HTTP/1.0\r\nHost: localhost\r\n{accept}\r\n").as_bytes(),
        )?;
        let mut buf = String::new();
        s.read_to_string(&mut buf)?;
        let (head, body) = buf.split_once("\r\n\r\n").context("no HTTP head")?;
        ensure!(
            head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"),
            "{head}"
        );
        let content_type = head
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("content-type: ")
                    .map(str::to_string)
            })
            .context("no Content-Type")?;
        Ok((content_type, body.to_string()))
    })
    .await?
}

const NUMBER: &str = "apiVersion: math.example.com/v1beta1\nkind: Number\nmetadata:\n  name: nine\n  namespace: default\nspec:\n  value: 9\n";

/// A manager on the binary's client, with leader election (lease [`LEASE`]) and plain /metrics
/// on a port of its own, as `cargo run -- --leader-elect …` runs.
async fn manager(server: &TestServer, identity: &str) -> Result<(Running, SocketAddr)> {
    let metrics = free_port()?;
    let mut election = LeaderElectionConfig::new(LEASE, "default", identity);
    election.retry_period = Duration::from_millis(200);
    let options = Options {
        metrics_address: Some(metrics),
        leader_election: Some(election),
        ..Options::default()
    };
    Ok((
        Running::with_the_binarys_client(server, options).await?,
        metrics,
    ))
}

/// A manager that has reconciled a Number; what it serves to curl (the Prometheus text
/// format, as controller-runtime serves it).
async fn running_manager() -> Result<(TestServer, Running, SocketAddr, String)> {
    let server = server().await?;
    let (m, address) = manager(&server, "a").await?;
    try_kubectl(&server, &["apply", "-f", "-"], Some(NUMBER)).await?;
    let done = r#"controller_runtime_reconcile_total{controller="number",result="success"}"#;
    // The lease's first renewal (a PUT) comes one retry period after it was taken, which may
    // be after the Number's reconcile.
    let renewed = |t: &str| {
        t.lines()
            .any(|l| l.starts_with("rest_client_requests_total{") && l.contains(r#"method="PUT""#))
    };
    let text = eventually(
        "a Number reconciled and the lease renewed",
        || async { get_metrics(address, None).await.ok() },
        |(_, t)| sample(t, done).is_some_and(|v| v >= 1.0) && renewed(t),
    )
    .await
    .1;
    Ok((server, m, address, text))
}

/// The API server's `host:port`, as client-go's `host` label names it.
fn host_of(server: &TestServer) -> String {
    let url = server.url();
    let authority = url.split_once("://").map_or(url.as_str(), |(_, rest)| rest);
    authority.trim_end_matches('/').to_string()
}

/// One family of the scrape against controller-runtime's: type, label names, buckets, help.
fn check_family(scrape: &Scrape, s: &Series) -> Result<()> {
    let name = s.name;
    let got = scrape.types.get(name);
    ensure!(
        got.map(String::as_str) == Some(s.kind),
        "{name}: type {got:?}, want {}",
        s.kind
    );
    ensure!(scrape.of_family(name).next().is_some(), "{name}: no sample");
    let want: BTreeSet<String> = s.labels.iter().map(|l| l.to_string()).collect();
    let have = scrape.label_names(name);
    ensure!(have == want, "{name}: labels {have:?}, want {want:?}");
    let mut have: Vec<f64> = (scrape.of_family(name))
        .filter(|x| x.name.ends_with("_bucket"))
        .filter_map(|x| match x.labels.get("le")?.as_str() {
            "+Inf" => Some(f64::INFINITY),
            le => le.parse::<f64>().ok(),
        })
        .collect();
    have.sort_by(f64::total_cmp);
    have.dedup();
    let want = bounds(s.buckets);
    ensure!(
        same_bounds(&have, &want),
        "{name}: buckets {have:?}, want {want:?}"
    );
    let help = scrape.help.get(name).map(String::as_str);
    ensure!(
        help == Some(s.help),
        "{name}: help {help:?}, want {:?}",
        s.help
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scrape_has_controller_runtimes_series_names_types_labels_buckets_and_help() -> Result<()>
{
    let (server, _m, address, text) = running_manager().await?;
    let scrape = Scrape::parse(&text);
    for s in CONTROLLER_RUNTIME {
        check_family(&scrape, s).with_context(|| format!("in\n{text}"))?;
    }
    // Every other family is ours, under our prefix.
    for name in scrape.types.keys() {
        let known = CONTROLLER_RUNTIME.iter().any(|s| s.name == name);
        ensure!(
            known || name.starts_with("math_controller_"),
            "{name}: neither controller-runtime's nor ours"
        );
    }
    // Help texts as written: none doubled its full stop.
    for (name, help) in &scrape.help {
        ensure!(!help.ends_with(".."), "{name}: {help:?}");
    }
    // An idle queue's unfinished work is 0, not -0.
    let negative_zero: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#') && (l.ends_with(" -0") || l.ends_with(" -0.0")))
        .collect();
    ensure!(negative_zero.is_empty(), "{negative_zero:?}");
    // The series the test names are live: the lease's holder, each controller's queue, the
    // client's lists and watches, its status patches and the lease's updates, by the API
    // server's host.
    let leader = scrape.value("leader_election_master_status", &[("name", LEASE)]);
    ensure!(leader == Some(1.0), "leader: {leader:?}");
    let adds = scrape.value("workqueue_adds_total", &[("name", "number")]);
    ensure!(adds.is_some_and(|v| v >= 1.0), "adds: {adds:?}");
    // The depth by the priorities of controller-runtime v0.24's default queue (its priority
    // queue): 0, and -100 (handler.LowPriority) for the initial list's and resyncs' objects.
    let priorities: BTreeSet<&str> = (scrape.samples.iter())
        .filter(|s| s.name == "workqueue_depth" && s.labels["name"] == "number")
        .map(|s| s.labels["priority"].as_str())
        .collect();
    ensure!(
        priorities == BTreeSet::from(["0", "-100"]),
        "{priorities:?}"
    );
    let host = host_of(&server);
    for (code, method) in [("200", "GET"), ("200", "PATCH"), ("200", "PUT")] {
        let labels = [("code", code), ("method", method), ("host", host.as_str())];
        let n = scrape.value("rest_client_requests_total", &labels);
        ensure!(n.is_some_and(|v| v >= 1.0), "{labels:?}: {n:?}\n{text}");
    }
    content_negotiation(address, &text).await
}

/// What Prometheus asks for gets OpenMetrics; curl, the text format; both the same samples.
async fn content_negotiation(address: SocketAddr, text: &str) -> Result<()> {
    let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
    let (om_type, om) = get_metrics(address, Some(prometheus)).await?;
    ensure!(
        om_type == "application/openmetrics-text; version=1.0.0; charset=utf-8",
        "{om_type}"
    );
    ensure!(
        om.ends_with("# EOF\n") && om.contains("# TYPE controller_runtime_reconcile counter\n")
    );
    let (text_type, _) = get_metrics(address, Some("text/plain;version=0.0.4")).await?;
    ensure!(
        text_type == "text/plain; version=0.0.4; charset=utf-8",
        "{text_type}"
    );
    ensure!(
        !text.contains("# EOF")
            && text.contains("# TYPE controller_runtime_reconcile_total counter\n")
    );
    let names = |t: &str| -> BTreeSet<String> {
        Scrape::parse(t)
            .samples
            .into_iter()
            .map(|s| s.name)
            .collect()
    };
    ensure!(names(&om) == names(text), "the two formats' samples differ");
    Ok(())
}

#[test]
fn a_scrape_is_read_with_escaped_labels_and_special_values() {
    let text = "# HELP a_total Things.\n# TYPE a_total counter\n\
                a_total{code=\"<error>\",host=\"h:1\",msg=\"x\\\"y,z\"} 3\n\
                # TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum NaN\nh_count 2\nup 1\n";
    let s = Scrape::parse(text);
    assert_eq!(s.help["a_total"], "Things.");
    let a = s.value("a_total", &[("msg", "x\"y,z"), ("code", "<error>")]);
    assert_eq!(a, Some(3.0));
    assert_eq!(s.value("h_bucket", &[("le", "+Inf")]), Some(2.0));
    assert!(s.value("h_sum", &[]).is_some_and(f64::is_nan));
    assert_eq!(s.value("up", &[]), Some(1.0));
    assert_eq!(s.of_family("h").count(), 3);
    assert_eq!(s.label_names("a_total").len(), 3);
}

const TUPLE: &str = "apiVersion: math.example.com/v1beta1\nkind: Tuple\nmetadata:\n  name: t\n  namespace: default\nspec:\n  numbers: [4, 9]\n";

/// Until the Tuple `t` is Ready, read from the server's storage: a GET of the test's own would
/// count with the manager's (both are kube-rs clients).
async fn tuple_t_ready(server: &TestServer) {
    let group = "math.example.com";
    eventually(
        "the Tuple t to be Ready",
        || async {
            let object = server.object(group, "tuples", Some("default"), "t")?;
            serde_json::from_value::<math_controller::api::Tuple>(object).ok()
        },
        tuple_ready,
    )
    .await;
}

const FERMAT: &str = "apiVersion: math.example.com/v1beta1\nkind: Fermat\nmetadata:\n  name: thirteen\n  namespace: default\nspec:\n  number: 13\n";

/// Until the Fermat `thirteen` is Ready, read from the server's storage.
async fn fermat_ready_on(server: &TestServer) {
    let group = "math.example.com";
    eventually(
        "the Fermat 13 to be Ready",
        || async {
            let object = server.object(group, "fermats", Some("default"), "thirteen")?;
            serde_json::from_value::<math_controller::api::Fermat>(object).ok()
        },
        fermat_ready,
    )
    .await;
}

/// The requests the manager's client sent (the test's own go through kubectl): by status code
/// and HTTP method, as the API server answered them.
fn answered_to_the_manager(server: &TestServer) -> BTreeMap<(String, String), f64> {
    let mut out = BTreeMap::new();
    for r in server.requests() {
        if !r.user_agent.starts_with("kubectl") {
            *out.entry((r.status.to_string(), r.method.clone()))
                .or_default() += 1.0;
        }
    }
    out
}

/// `rest_client_requests_total` of a scrape, by code and method, for `host`.
fn counted_by_the_client(scrape: &Scrape, host: &str) -> BTreeMap<(String, String), f64> {
    let mut out = BTreeMap::new();
    for s in scrape
        .samples
        .iter()
        .filter(|s| s.name == "rest_client_requests_total")
    {
        if s.labels.get("host").map(String::as_str) == Some(host) {
            let (code, method) = (&s.labels["code"], &s.labels["method"]);
            *out.entry((code.clone(), method.clone())).or_default() += s.value;
        }
    }
    out
}

/// controller-runtime's `reconcileHandler`: `result` says what a reconcile asked of the queue.
/// A Tuple whose first reconcile creates its Numbers and waits for them asks for nothing (their
/// watch events bring it back): `success`, its status not final yet counted apart
/// (`math_controller_reconcile_progress_total{progress="waiting"}`); a refused create, tried
/// again after a delay of the manager's choosing: `requeue_after`; a 409 retried through the
/// per-object backoff: `requeue`, at most once per 409 the API server answered the manager.
/// Before, every waiting reconcile was a `requeue` and `requeue_after` never moved.
/// `rest_client_requests_total` counts each of the client's requests by the code it got.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_are_what_a_reconcile_asked_of_the_queue() -> Result<()> {
    let server = server().await?;
    let number_creates = RequestFilter::new().verb(Verb::Create).resource("numbers");
    server.fail_next(number_creates, 1, 403);
    let tuple_statuses = RequestFilter::new()
        .verb(Verb::Patch)
        .resource("tuples")
        .subresource("status");
    server.fail_next(tuple_statuses, 1, 409);
    let (m, _) = manager(&server, "a").await?;
    try_kubectl(&server, &["apply", "-f", "-"], Some(TUPLE)).await?;
    tuple_t_ready(&server).await;
    // The reconcile that wrote the Ready status is counted as it returns, a moment later.
    let last = r#"math_controller_reconcile_progress_total{controller="tuple",progress="final"}"#;
    let text = eventually(
        "the final reconcile counted",
        || async { Some(m.metrics.encode()) },
        |t| sample(t, last).is_some_and(|n| n >= 1.0),
    )
    .await;
    let scrape = Scrape::parse(&text);
    let result = |r: &str| {
        let labels = [("controller", "tuple"), ("result", r)];
        scrape
            .value("controller_runtime_reconcile_total", &labels)
            .unwrap_or(0.0)
    };
    let progress = |p: &str| {
        let labels = [("controller", "tuple"), ("progress", p)];
        scrape
            .value("math_controller_reconcile_progress_total", &labels)
            .unwrap_or(0.0)
    };
    let answered = answered_to_the_manager(&server);
    let conflicts = answered
        .get(&("409".into(), "PATCH".into()))
        .copied()
        .unwrap_or(0.0);
    let text = m.metrics.encode();
    ensure!(result("success") >= 1.0, "{text}");
    ensure!(
        result("requeue_after") >= 1.0,
        "the refusal's retry: {text}"
    );
    ensure!(
        result("requeue") >= 1.0 && result("requeue") <= conflicts,
        "requeue {} for {conflicts} conflicts: {text}",
        result("requeue")
    );
    for p in ["waiting", "blocked", "final"] {
        ensure!(progress(p) >= 1.0, "progress {p}: {text}");
    }
    let host = host_of(&server);
    let counted = counted_by_the_client(&scrape, &host);
    ensure!(
        counted.get(&("403".into(), "POST".into())) == Some(&1.0),
        "{counted:?}"
    );
    ensure!(
        counted.get(&("409".into(), "PATCH".into())) == Some(&conflicts),
        "{counted:?}"
    );
    // Each reconcile that asked for a delay is a retry, as client-go counts every AddAfter
    // with one (the error policy's too), also when news brought the object back first: a
    // Fermat's waiting reconciles are overtaken by its Tuples' news all the time.
    try_kubectl(&server, &["apply", "-f", "-"], Some(FERMAT)).await?;
    fermat_ready_on(&server).await;
    let scrape = Scrape::parse(&m.metrics.encode());
    for c in ["tuple", "fermat"] {
        let result = |r: &str| {
            let labels = [("controller", c), ("result", r)];
            scrape
                .value("controller_runtime_reconcile_total", &labels)
                .unwrap_or(0.0)
        };
        let retries = scrape.value("workqueue_retries_total", &[("name", c)]);
        let delayed = result("requeue") + result("requeue_after") + result("error");
        ensure!(
            retries.is_some_and(|r| r >= delayed),
            "{c}: {retries:?} retries, {delayed} delays"
        );
    }
    let host = host_of(&server);
    let counted = counted_by_the_client(&scrape, &host);
    ensure!(
        counted.get(&("403".into(), "POST".into())) == Some(&1.0),
        "{counted:?}"
    );
    ensure!(
        counted.get(&("409".into(), "PATCH".into())) == Some(&conflicts),
        "{counted:?}"
    );
    Ok(())
}

/// Every request of the manager's client, every verb, is counted by the code the API server
/// answered: once the cluster is quiet, the counts by code and method are the server's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_client_requests_are_what_the_api_server_answered_the_client() -> Result<()> {
    let (server, m, _, _) = running_manager().await?;
    try_kubectl(&server, &["apply", "-f", "-"], Some(TUPLE)).await?;
    tuple_t_ready(&server).await;
    // A child the Tuple no longer wants is deleted: a DELETE.
    let shrunk = TUPLE.replace("[4, 9]", "[4]");
    try_kubectl(&server, &["apply", "-f", "-"], Some(&shrunk)).await?;
    let host = host_of(&server);
    // Quiet once the server has answered that DELETE: the counts matched a moment before the
    // manager read the shrunk Tuple too (one CI run from a fresh clone compared them then).
    let deleted = |answered: &BTreeMap<(String, String), f64>| {
        answered
            .keys()
            .any(|(code, method)| code == "200" && method == "DELETE")
    };
    let (counted, answered) = eventually(
        "the server to answer the DELETE and the client's counts to match its answers",
        || async {
            let counted = counted_by_the_client(&Scrape::parse(&m.metrics.encode()), &host);
            Some((counted, answered_to_the_manager(&server)))
        },
        |(counted, answered)| deleted(answered) && counted == answered,
    )
    .await;
    for method in ["GET", "POST", "PATCH", "PUT", "DELETE"] {
        ensure!(
            counted.keys().any(|(_, m)| m == method),
            "no {method} in {counted:?} (the server: {answered:?})"
        );
    }
    Ok(())
}

/// A standby replica exports no controller's series (controller-runtime starts a controller,
/// and creates its series, once it leads): the leader gauge at 0, the process and the client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standby_exports_no_controller_series() -> Result<()> {
    let (server, leader, _, _) = running_manager().await?;
    let (standby, _) = manager(&server, "b").await?;
    let text = eventually(
        "the standby to wait for the Lease",
        || async { Some(standby.metrics.encode()) },
        |t| {
            let status = format!("leader_election_master_status{{name=\"{LEASE}\"}}");
            // It has read the Lease (its first request) and found it held.
            sample(t, &status) == Some(0.0) && t.contains("\nrest_client_requests_total{")
        },
    )
    .await;
    let scrape = Scrape::parse(&text);
    let controllers: Vec<&str> = (scrape.samples.iter())
        .filter(|s| {
            s.labels.contains_key("controller")
                || s.name.starts_with("controller_runtime_")
                || s.name.starts_with("workqueue_")
        })
        .map(|s| s.name.as_str())
        .collect();
    ensure!(
        controllers.is_empty(),
        "on the standby: {controllers:?}\n{text}"
    );
    for name in ["process_cpu_seconds_total", "rest_client_requests_total"] {
        ensure!(
            scrape.samples.iter().any(|s| s.name == name),
            "{name}\n{text}"
        );
    }
    // The leader has them.
    let leading = Scrape::parse(&leader.metrics.encode());
    let labels = [("controller", "tuple"), ("result", "success")];
    ensure!(
        leading
            .value("controller_runtime_reconcile_total", &labels)
            .is_some()
    );
    Ok(())
}

/// A certificate and key for `name`, written as tls.crt and tls.key; its fingerprint.
fn write_certificate(dir: &std::path::Path, name: &str) -> Result<Vec<u8>> {
    let generated = rcgen::generate_simple_self_signed(vec![name.to_string()])?;
    std::fs::write(dir.join("tls.crt"), generated.cert.pem())?;
    std::fs::write(dir.join("tls.key"), generated.signing_key.serialize_pem())?;
    Ok(https::fingerprint(generated.cert.der()))
}

/// `certwatcher_*`: each read of the metrics certificate's files, and each that failed (a key
/// that does not match, as a half-done rotation leaves it), while the previous certificate
/// is still served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_metrics_certificates_reads_and_failed_reads_are_counted() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let first = write_certificate(dir.path(), "first.example")?;
    let server = server().await?;
    let address = free_port()?;
    let m = Running::start(
        &server,
        Options {
            metrics_address: Some(address),
            metrics_secure: Some(serving::secure_metrics::SecureMetrics {
                cert_dir: Some(dir.path().to_path_buf()),
                ..Default::default()
            }),
            ..Options::default()
        },
    );
    let reads = |m: &Running| {
        let scrape = Scrape::parse(&m.metrics.encode());
        let total = scrape.value("certwatcher_read_certificate_total", &[]);
        let errors = scrape.value("certwatcher_read_certificate_errors_total", &[]);
        (total.unwrap_or(0.0), errors.unwrap_or(0.0))
    };
    let answer = eventually(
        "the metrics port to answer",
        || async { https::get(address, "/metrics", None).await.ok() },
        |_| true,
    )
    .await;
    ensure!(answer.fingerprint == first);
    let (total, errors) = reads(&m);
    ensure!(
        total >= 1.0 && errors == 0.0,
        "{total} reads, {errors} errors"
    );
    // A key that belongs to no certificate of the directory: read, refused, counted.
    let stray = rcgen::KeyPair::generate()?;
    std::fs::write(dir.path().join("tls.key"), stray.serialize_pem())?;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let answer = https::get(address, "/metrics", None).await?;
    ensure!(
        answer.fingerprint == first,
        "the previous certificate is served"
    );
    let (later, errors) = reads(&m);
    ensure!(
        later > total && errors == 1.0,
        "{later} reads, {errors} errors"
    );
    Ok(())
}

/// docs/operations.md names every family a manager exports, controller-runtime's and ours.
#[test]
fn the_operations_guide_names_every_family() -> Result<()> {
    let metrics = math_controller::metrics::Metrics::new();
    let _ = metrics.queue("tuple", 1);
    let text = serving::exposition::to_prometheus_text(&metrics.encode());
    let guide = std::fs::read_to_string(repo().join("docs/operations.md"))?;
    let families = Scrape::parse(&text).types.into_keys();
    let missing: Vec<String> = families
        .chain(CONTROLLER_RUNTIME.iter().map(|s| s.name.to_string()))
        .filter(|f| !guide.contains(&format!("`{f}")))
        .collect();
    ensure!(missing.is_empty(), "not in docs/operations.md: {missing:?}");
    Ok(())
}
