//! The operator dialect: a running manager's `/metrics` against the series controller-runtime
//! v0.24 exports (names, types, label sets, histogram buckets), served in both text formats by
//! content negotiation; and every PromQL query of the Grafana dashboards in deploy/grafana/
//! against the series and labels a running manager exports.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context as _, Result, ensure};
use common::*;
use math_controller::ops::leader::LeaderElectionConfig;
use math_controller::ops::manager::Options;
use serde_json::Value;

/// How a family's histogram is bucketed.
#[derive(Clone, Copy, Debug)]
enum Buckets {
    None,
    /// `controller_runtime_reconcile_time_seconds`' list.
    ReconcileTime,
    /// client-go's `ExponentialBuckets(10e-9, 10, 12)`.
    Workqueue,
}

/// controller-runtime v0.24's series that this manager has an equivalent of, as its Prometheus
/// text format names them: (name, type, labels, buckets). Sources, all in the repository
/// kubernetes-sigs/controller-runtime: `pkg/internal/controller/metrics/metrics.go` (the
/// reconcile series), `pkg/metrics/workqueue.go` (client-go's workqueue series with the
/// `controller` label and the depth's `priority`), `pkg/metrics/leaderelection.go`; and
/// prometheus/client_golang's `prometheus/process_collector.go`, which controller-runtime
/// registers (the series kubebuilder's resources dashboard reads).
const CONTROLLER_RUNTIME: &[(&str, &str, &[&str], Buckets)] = &[
    (
        "controller_runtime_reconcile_total",
        "counter",
        &["controller", "result"],
        Buckets::None,
    ),
    (
        "controller_runtime_reconcile_errors_total",
        "counter",
        &["controller"],
        Buckets::None,
    ),
    (
        "controller_runtime_terminal_reconcile_errors_total",
        "counter",
        &["controller"],
        Buckets::None,
    ),
    (
        "controller_runtime_reconcile_panics_total",
        "counter",
        &["controller"],
        Buckets::None,
    ),
    (
        "controller_runtime_reconcile_time_seconds",
        "histogram",
        &["controller"],
        Buckets::ReconcileTime,
    ),
    (
        "controller_runtime_max_concurrent_reconciles",
        "gauge",
        &["controller"],
        Buckets::None,
    ),
    (
        "controller_runtime_active_workers",
        "gauge",
        &["controller"],
        Buckets::None,
    ),
    (
        "workqueue_depth",
        "gauge",
        &["controller", "name", "priority"],
        Buckets::None,
    ),
    (
        "workqueue_adds_total",
        "counter",
        &["controller", "name"],
        Buckets::None,
    ),
    (
        "workqueue_queue_duration_seconds",
        "histogram",
        &["controller", "name"],
        Buckets::Workqueue,
    ),
    (
        "workqueue_work_duration_seconds",
        "histogram",
        &["controller", "name"],
        Buckets::Workqueue,
    ),
    (
        "workqueue_unfinished_work_seconds",
        "gauge",
        &["controller", "name"],
        Buckets::None,
    ),
    (
        "workqueue_longest_running_processor_seconds",
        "gauge",
        &["controller", "name"],
        Buckets::None,
    ),
    (
        "workqueue_retries_total",
        "counter",
        &["controller", "name"],
        Buckets::None,
    ),
    (
        "leader_election_master_status",
        "gauge",
        &["name"],
        Buckets::None,
    ),
    ("process_cpu_seconds_total", "counter", &[], Buckets::None),
    ("process_resident_memory_bytes", "gauge", &[], Buckets::None),
    ("process_virtual_memory_bytes", "gauge", &[], Buckets::None),
    ("process_start_time_seconds", "gauge", &[], Buckets::None),
    ("process_open_fds", "gauge", &[], Buckets::None),
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

/// Labels Prometheus adds to every series of a target (Kubernetes service discovery and the
/// ServiceMonitor), which dashboards filter by; never in the exposition itself.
const TARGET_LABELS: [&str; 7] = [
    "job",
    "namespace",
    "instance",
    "pod",
    "container",
    "service",
    "endpoint",
];

/// A scrape in the Prometheus text format, by family: type, label names, bucket bounds; and by
/// sample name: the label names its samples carry.
#[derive(Default, Debug)]
struct Scrape {
    types: BTreeMap<String, String>,
    labels: BTreeMap<String, BTreeSet<String>>,
    buckets: BTreeMap<String, BTreeSet<String>>,
    samples: BTreeMap<String, BTreeSet<String>>,
}

/// `name{a="x",b="y"} 1` → (name, [(a, x), (b, y)]). Label values here never hold `,` or `"`.
fn parse_sample(line: &str) -> Option<(&str, Vec<(&str, &str)>)> {
    let (series, _value) = line.rsplit_once(' ')?;
    let Some((name, labels)) = series.split_once('{') else {
        return Some((series, Vec::new()));
    };
    let labels = labels.strip_suffix('}')?;
    let pairs = labels
        .split(',')
        .filter(|p| !p.is_empty())
        .filter_map(|p| {
            let (k, v) = p.split_once('=')?;
            Some((k, v.trim_matches('"')))
        })
        .collect();
    Some((name, pairs))
}

fn family_of(scrape: &Scrape, sample: &str) -> Option<String> {
    if scrape.types.contains_key(sample) {
        return Some(sample.to_string());
    }
    ["_bucket", "_sum", "_count"]
        .iter()
        .filter_map(|s| sample.strip_suffix(s))
        .find(|f| scrape.types.get(*f).is_some_and(|t| t == "histogram"))
        .map(str::to_string)
}

fn parse_text(text: &str) -> Scrape {
    let mut scrape = Scrape::default();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            if let Some((name, kind)) = rest.split_once(' ') {
                scrape.types.insert(name.to_string(), kind.to_string());
            }
            continue;
        }
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let Some((name, pairs)) = parse_sample(line) else {
            continue;
        };
        let names: BTreeSet<String> = pairs.iter().map(|(k, _)| k.to_string()).collect();
        scrape
            .samples
            .entry(name.to_string())
            .or_default()
            .extend(names.clone());
        let Some(family) = family_of(&scrape, name) else {
            continue;
        };
        let labels: BTreeSet<String> = names.into_iter().filter(|k| k != "le").collect();
        scrape
            .labels
            .entry(family.clone())
            .or_default()
            .extend(labels);
        if let Some((_, le)) = pairs.iter().find(|(k, _)| *k == "le") {
            scrape
                .buckets
                .entry(family)
                .or_default()
                .insert(le.to_string());
        }
    }
    scrape
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

/// A manager with leader election and plain /metrics, which has reconciled a Number; what it
/// serves to curl (the Prometheus text format, as controller-runtime serves it).
async fn running_manager() -> Result<(Running, SocketAddr, String)> {
    let server = server().await?;
    let metrics = free_port()?;
    let mut election = LeaderElectionConfig::new(LEASE, "default", "a");
    election.retry_period = Duration::from_millis(200);
    let m = Running::start(
        &server,
        Options {
            metrics_address: Some(metrics),
            leader_election: Some(election),
            ..Options::default()
        },
    );
    let number = "apiVersion: math.example.com/v1beta1\nkind: Number\nmetadata:\n  name: nine\n  namespace: default\nspec:\n  value: 9\n";
    try_kubectl(&server, &["apply", "-f", "-"], Some(number)).await?;
    let done = r#"controller_runtime_reconcile_total{controller="number",result="success"}"#;
    let text = eventually(
        "a Number reconciled",
        || async { get_metrics(metrics, None).await.ok() },
        |(_, t)| sample(t, done).is_some_and(|v| v >= 1.0),
    )
    .await
    .1;
    // The server must outlive the manager's requests: leak it for the test's lifetime.
    std::mem::forget(server);
    Ok((m, metrics, text))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_match_controller_runtimes_names_types_labels_and_buckets() -> Result<()> {
    let (_m, address, text) = running_manager().await?;
    let scrape = parse_text(&text);
    for (name, kind, labels, buckets) in CONTROLLER_RUNTIME {
        let got = scrape.types.get(*name);
        ensure!(
            got.map(String::as_str) == Some(*kind),
            "{name}: type {got:?}, want {kind}\n{text}"
        );
        let want: BTreeSet<String> = labels.iter().map(|l| l.to_string()).collect();
        let have = scrape.labels.get(*name).cloned().unwrap_or_default();
        ensure!(have == want, "{name}: labels {have:?}, want {want:?}");
        let want = bounds(*buckets);
        let mut have: Vec<f64> = scrape
            .buckets
            .get(*name)
            .into_iter()
            .flatten()
            .map(|le| {
                if le == "+Inf" {
                    f64::INFINITY
                } else {
                    le.parse().unwrap_or(f64::NAN)
                }
            })
            .collect();
        have.sort_by(f64::total_cmp);
        let same = have.len() == want.len()
            && have
                .iter()
                .zip(&want)
                .all(|(a, b)| a == b || ((a - b) / b).abs() < 1e-9);
        ensure!(same, "{name}: buckets {have:?}, want {want:?}");
    }
    // The series the test names are live: the lease's holder, each controller's queue.
    ensure!(
        sample(
            &text,
            &format!("leader_election_master_status{{name=\"{LEASE}\"}}")
        ) == Some(1.0)
    );
    let adds = r#"workqueue_adds_total{name="number",controller="number"}"#;
    ensure!(
        sample(&text, adds).is_some_and(|v| v >= 1.0),
        "{adds} in\n{text}"
    );
    // Every other family is ours, under our prefix.
    for name in scrape.types.keys() {
        let known = CONTROLLER_RUNTIME.iter().any(|(n, ..)| n == name);
        ensure!(
            known || name.starts_with("math_controller_"),
            "{name}: neither controller-runtime's nor ours"
        );
    }

    // Content negotiation: what Prometheus asks for, OpenMetrics; curl, the text format.
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
    // Both formats carry the same samples.
    let names = |t: &str| -> BTreeSet<String> {
        t.lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| Some(parse_sample(l)?.0.to_string()))
            .collect()
    };
    ensure!(
        names(&om) == names(&text),
        "the two formats' samples differ"
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The dashboards' queries

/// What a PromQL expression reads: each metric with the labels it is filtered by, and the
/// labels the expression groups by.
#[derive(Debug, Default, PartialEq)]
struct Reads {
    metrics: Vec<(String, BTreeSet<String>)>,
    grouped_by: BTreeSet<String>,
}

const KEYWORDS: [&str; 12] = [
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "and",
    "or",
    "unless",
    "bool",
    "offset",
    "inf",
];

fn ident_end(s: &[u8], mut i: usize) -> usize {
    while i < s.len() && (s[i].is_ascii_alphanumeric() || s[i] == b'_' || s[i] == b':') {
        i += 1;
    }
    i
}

/// The label names in `(a, b)` or `{a="x", b=~"y"}` starting at `open`, and the index after it.
fn label_list(expr: &str, open: usize, close: u8) -> (BTreeSet<String>, usize) {
    let s = expr.as_bytes();
    let (mut labels, mut i, mut in_string) = (BTreeSet::new(), open + 1, false);
    while i < s.len() && (in_string || s[i] != close) {
        if s[i] == b'"' {
            in_string = !in_string;
            i += 1;
        } else if !in_string && (s[i].is_ascii_alphabetic() || s[i] == b'_') {
            let end = ident_end(s, i);
            labels.insert(expr[i..end].to_string());
            i = end;
        } else {
            i += 1;
        }
    }
    (labels, i + 1)
}

/// A small PromQL reader: enough for dashboards (selectors, functions, aggregations with
/// `by`, ranges, numbers, strings).
fn reads(expr: &str) -> Reads {
    let s = expr.as_bytes();
    let (mut out, mut i) = (Reads::default(), 0);
    while i < s.len() {
        let c = s[i];
        if c == b'[' {
            i += expr[i..].find(']').map_or(s.len() - i, |e| e + 1);
        } else if c == b'"' {
            i += 1 + expr[i + 1..].find('"').map_or(s.len() - i - 1, |e| e + 1);
        } else if c.is_ascii_digit() || c == b'.' {
            while i < s.len() && (s[i].is_ascii_alphanumeric() || s[i] == b'.') {
                i += 1;
            }
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let end = ident_end(s, i);
            let word = &expr[i..end];
            let next = expr[end..].trim_start();
            let at = end + (expr[end..].len() - next.len());
            if word == "by" || word == "without" {
                let (labels, after) = label_list(expr, at, b')');
                out.grouped_by.extend(labels);
                i = after;
            } else if next.starts_with('(') || KEYWORDS.contains(&word) {
                i = end;
            } else if next.starts_with('{') {
                let (labels, after) = label_list(expr, at, b'}');
                out.metrics.push((word.to_string(), labels));
                i = after;
            } else {
                out.metrics.push((word.to_string(), BTreeSet::new()));
                i = end;
            }
        } else {
            i += 1;
        }
    }
    out
}

#[test]
fn the_promql_reader_finds_metrics_filters_and_groupings() {
    let r = reads(
        r#"histogram_quantile(0.99, sum(rate(workqueue_queue_duration_seconds_bucket{job="$job", namespace=~"a,b"}[5m])) by (instance, name, le)) * 100"#,
    );
    let filters: BTreeSet<String> = ["job", "namespace"].map(String::from).into();
    assert_eq!(
        r.metrics,
        vec![(
            "workqueue_queue_duration_seconds_bucket".to_string(),
            filters
        )]
    );
    assert_eq!(
        r.grouped_by,
        ["instance", "le", "name"].map(String::from).into()
    );
    let r = reads("time() - process_start_time_seconds");
    assert_eq!(
        r.metrics,
        vec![("process_start_time_seconds".to_string(), BTreeSet::new())]
    );
}

/// Every PromQL string of a dashboard: panel targets and variable queries (`label_values(q,
/// label)` gives `q` and the label it reads).
fn queries(board: &Value) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    let panels = board["panels"].as_array().cloned().unwrap_or_default();
    for target in panels
        .iter()
        .flat_map(|p| p["targets"].as_array().cloned().unwrap_or_default())
    {
        if let Some(expr) = target["expr"].as_str() {
            out.push((expr.to_string(), None));
        }
    }
    let vars = board["templating"]["list"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for query in vars.iter().filter_map(|v| v["query"]["query"].as_str()) {
        let inner = query
            .strip_prefix("label_values(")
            .and_then(|q| q.strip_suffix(')'));
        if let Some((q, label)) = inner.and_then(|q| q.rsplit_once(',')) {
            out.push((q.trim().to_string(), Some(label.trim().to_string())));
        }
    }
    out
}

/// Alert expressions written for controller-runtime managers.
const ALERTS: [&str; 4] = [
    "sum(rate(controller_runtime_reconcile_errors_total[5m])) by (controller) > 0",
    r#"sum(rate(controller_runtime_reconcile_total{result="error"}[5m])) by (namespace, controller) / sum(rate(controller_runtime_reconcile_total[5m])) by (namespace, controller) > 0.1"#,
    "max(workqueue_depth) by (name) > 100",
    "max(leader_election_master_status) by (name) < 1",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_dashboard_query_reads_series_and_labels_the_manager_exports() -> Result<()> {
    let (_m, _, text) = running_manager().await?;
    let scrape = parse_text(&text);
    let dir = repo().join("deploy/grafana");
    let mut checked = 0;
    for board in [
        "controller-runtime-metrics.json",
        "controller-resources-metrics.json",
        "math-controller-metrics.json",
    ] {
        let json: Value = serde_json::from_str(&std::fs::read_to_string(dir.join(board))?)?;
        let all = queries(&json);
        ensure!(!all.is_empty(), "{board} has no queries");
        for (expr, label) in all {
            let r = reads(&expr);
            ensure!(!r.metrics.is_empty(), "{board}: {expr} reads no metric");
            for (metric, filters) in &r.metrics {
                let Some(have) = scrape.samples.get(metric) else {
                    anyhow::bail!("{board}: {expr}: {metric} is not exported");
                };
                let wanted = filters.iter().chain(&r.grouped_by).chain(label.as_ref());
                for l in wanted.filter(|l| !TARGET_LABELS.contains(&l.as_str())) {
                    ensure!(
                        have.contains(l),
                        "{board}: {expr}: {metric} has no label {l} ({have:?})"
                    );
                }
                checked += 1;
            }
        }
    }
    // Alerts a kubebuilder user keeps (the kind the Prometheus Operator's runbooks and
    // kubebuilder's docs suggest), unedited.
    for alert in ALERTS {
        for (metric, filters) in reads(alert).metrics {
            let have = scrape
                .samples
                .get(&metric)
                .with_context(|| format!("{alert}: {metric}"))?;
            let grouped = reads(alert).grouped_by;
            for l in filters
                .iter()
                .chain(&grouped)
                .filter(|l| !TARGET_LABELS.contains(&l.as_str()))
            {
                ensure!(have.contains(l), "{alert}: {metric} has no label {l}");
            }
            checked += 1;
        }
    }
    ensure!(checked >= 30, "only {checked} metric reads checked");
    Ok(())
}
