//! Every PromQL query of the Grafana dashboards in deploy/grafana/ against the series and labels
//! a running manager exports.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use anyhow::{Context as _, Result, ensure};
use common::exposition::Scrape;
use common::*;
use math_controller::ops::leader::LeaderElectionConfig;
use math_controller::ops::manager::Options;
use serde_json::Value;

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

/// A manager with leader election that has reconciled a Number: its scrape, by sample name,
/// the label names each carries.
async fn scraped() -> Result<BTreeMap<String, BTreeSet<String>>> {
    let server = server().await?;
    let mut election = LeaderElectionConfig::new("math-controller", "default", "a");
    election.retry_period = Duration::from_millis(200);
    let options = Options {
        leader_election: Some(election),
        ..Options::default()
    };
    let m = Running::with_the_binarys_client(&server, options).await?;
    let number = "apiVersion: math.example.com/v1beta1\nkind: Number\nmetadata:\n  name: nine\n  namespace: default\nspec:\n  value: 9\n";
    try_kubectl(&server, &["apply", "-f", "-"], Some(number)).await?;
    let done = r#"controller_runtime_reconcile_total{controller="number",result="success"}"#;
    let text = eventually(
        "a Number reconciled",
        || async { Some(serving::exposition::to_prometheus_text(&m.metrics.encode())) },
        |t| sample(t, done).is_some_and(|v| v >= 1.0),
    )
    .await;
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for s in Scrape::parse(&text).samples {
        out.entry(s.name).or_default().extend(s.labels.into_keys());
    }
    std::mem::forget(m);
    std::mem::forget(server);
    Ok(out)
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
    let samples = scraped().await?;
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
                let Some(have) = samples.get(metric) else {
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
            let have = samples
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
