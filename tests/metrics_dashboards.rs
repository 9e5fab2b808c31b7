//! The Grafana dashboards of deploy/grafana/ show data: kubebuilder's two
//! (controller-runtime-metrics.json, controller-resources-metrics.json, written by
//! hack/grafana-dashboards.py as kubebuilder's grafana plugin writes them) and ours. Every
//! variable and every panel query is evaluated ([`promql`]) against two scrapes of a running
//! manager that worked in between, with the labels Prometheus adds to a target of the
//! ServiceMonitor; each must return a series, as Grafana would draw one. So do the usual alerts
//! of a kubebuilder operator, unedited but for their comparison.

mod common;
#[path = "common/promql.rs"]
mod promql;

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, Result, bail, ensure};
use common::exposition::Scrape;
use common::*;
use math_controller::ops::leader::LeaderElectionConfig;
use math_controller::ops::manager::Options;
use promql::{Labels, Snapshot, Value, evaluate};
use serde_json::Value as Json;

/// The labels Prometheus adds to every series of the manager's pod, scraped through
/// deploy/optional/prometheus's ServiceMonitor (Kubernetes service discovery).
const TARGET: [(&str, &str); 7] = [
    ("job", "math-controller-metrics"),
    ("namespace", "math-system"),
    ("pod", "math-controller-6f7c9d8b5-x2x4k"),
    ("instance", "10.244.0.7:8443"),
    ("container", "manager"),
    ("endpoint", "https"),
    ("service", "math-controller-metrics"),
];

const BOARDS: [&str; 3] = [
    "controller-runtime-metrics.json",
    "controller-resources-metrics.json",
    "math-controller-metrics.json",
];

/// A scrape of `metrics` now, as Prometheus stores it: the text format's samples, each with
/// its name and the target's labels.
fn snapshot(metrics: &math_controller::metrics::Metrics) -> Result<Snapshot> {
    let text = serving::exposition::to_prometheus_text(&metrics.encode());
    let mut samples = Vec::new();
    for s in Scrape::parse(&text).samples {
        let mut labels: Labels = s.labels;
        labels.insert("__name__".into(), s.name);
        for (k, v) in TARGET {
            labels.insert(k.into(), v.into());
        }
        samples.push((labels, s.value));
    }
    let time = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs_f64();
    Ok(Snapshot { time, samples })
}

const NUMBER: &str = "apiVersion: math.example.com/v1beta1\nkind: Number\nmetadata:\n  name: nine\n  namespace: default\nspec:\n  value: 9\n";
const FERMAT: &str = "apiVersion: math.example.com/v1beta1\nkind: Fermat\nmetadata:\n  name: thirteen\n  namespace: default\nspec:\n  number: 13\n";

/// A manager with leader election on the binary's client: a scrape once it reconciled a
/// Number, and another after it built a Fermat 13 (six Tuples, twelve Numbers).
async fn two_scrapes() -> Result<(Snapshot, Snapshot)> {
    let server = server().await?;
    let mut election = LeaderElectionConfig::new("math-controller", "default", "a");
    election.retry_period = Duration::from_millis(200);
    let options = Options {
        leader_election: Some(election),
        ..Options::default()
    };
    let m = Running::with_the_binarys_client(&server, options).await?;
    try_kubectl(&server, &["apply", "-f", "-"], Some(NUMBER)).await?;
    let done = r#"controller_runtime_reconcile_total{controller="number",result="success"}"#;
    eventually(
        "a Number reconciled",
        || async { Some(m.metrics.encode()) },
        |t| sample(t, done).is_some_and(|v| v >= 1.0),
    )
    .await;
    let before = snapshot(&m.metrics)?;
    try_kubectl(&server, &["apply", "-f", "-"], Some(FERMAT)).await?;
    eventually(
        "the Fermat 13 to be Ready",
        || async {
            let object =
                server.object("math.example.com", "fermats", Some("default"), "thirteen")?;
            serde_json::from_value::<math_controller::api::Fermat>(object).ok()
        },
        fermat_ready,
    )
    .await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let now = snapshot(&m.metrics)?;
    m.shutdown().await?;
    Ok((before, now))
}

/// Whether a query's answer draws something: a scalar, or a series with a number.
fn shows_data(value: &Value) -> bool {
    match value {
        Value::Scalar(v) => !v.is_nan(),
        Value::Vector(series) => series.iter().any(|(_, v)| !v.is_nan()),
    }
}

/// `expr` with the dashboard's variables (`$job`, …) replaced by their values.
fn substitute(expr: &str, vars: &BTreeMap<String, String>) -> String {
    let mut out = expr.to_string();
    // Longest names first, so that `$namespace` is not read as `$name` + "space".
    let mut names: Vec<&String> = vars.keys().collect();
    names.sort_by_key(|n| std::cmp::Reverse(n.len()));
    for name in names {
        out = out.replace(&format!("${name}"), &vars[name]);
    }
    out
}

/// The dashboard's variables, each `label_values(query, label)` evaluated in turn (a variable
/// may use those before it, as Grafana resolves them): the first value of each.
fn variables(board: &Json, before: &Snapshot, now: &Snapshot) -> Result<BTreeMap<String, String>> {
    let list = board["templating"]["list"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut queries: Vec<(String, String, String)> = Vec::new();
    for var in list.iter().filter(|v| v["type"] == "query") {
        let query = var["query"]["query"]
            .as_str()
            .context("a variable's query")?;
        let inner = query
            .strip_prefix("label_values(")
            .and_then(|q| q.strip_suffix(')'));
        let (q, label) = inner
            .and_then(|q| q.rsplit_once(','))
            .context("label_values")?;
        let name = var["name"].as_str().context("a name")?.to_string();
        queries.push((name, q.trim().to_string(), label.trim().to_string()));
    }
    let mut vars = BTreeMap::new();
    // Resolve what can be resolved, until nothing changes (kubebuilder's job uses $namespace).
    for _ in 0..queries.len() {
        for (name, q, label) in &queries {
            if vars.contains_key(name) || q.contains('$') && substitute(q, &vars).contains('$') {
                continue;
            }
            let Value::Vector(series) = evaluate(&substitute(q, &vars), before, now)? else {
                bail!("{q} is no vector");
            };
            let value = series.iter().find_map(|(l, _)| l.get(label)).cloned();
            vars.insert(
                name.clone(),
                value.with_context(|| format!("{name}: {q} has no {label}"))?,
            );
        }
    }
    ensure!(
        vars.len() == queries.len(),
        "unresolved variables: {queries:?} / {vars:?}"
    );
    Ok(vars)
}

/// Every panel query of a dashboard.
fn panel_queries(board: &Json) -> Vec<String> {
    let panels = board["panels"].as_array().cloned().unwrap_or_default();
    panels
        .iter()
        .flat_map(|p| p["targets"].as_array().cloned().unwrap_or_default())
        .filter_map(|t| t["expr"].as_str().map(str::to_string))
        .collect()
}

/// The usual alerts of a kubebuilder operator, their comparison left out: what they compute
/// must exist (an fd-exhaustion alert divides by process_max_fds).
const ALERTS: [&str; 5] = [
    "sum(rate(controller_runtime_reconcile_errors_total[5m])) by (controller)",
    r#"sum(rate(controller_runtime_reconcile_total{result="error"}[5m])) by (namespace, controller) / sum(rate(controller_runtime_reconcile_total[5m])) by (namespace, controller)"#,
    "max(workqueue_depth) by (name)",
    "max(leader_election_master_status) by (name)",
    "process_open_fds / process_max_fds",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_dashboard_query_shows_data_from_a_running_manager() -> Result<()> {
    let (before, now) = two_scrapes().await?;
    let dir = repo().join("deploy/grafana");
    let mut checked = 0;
    for board in BOARDS {
        let json: Json = serde_json::from_str(&std::fs::read_to_string(dir.join(board))?)?;
        let vars = variables(&json, &before, &now).with_context(|| board.to_string())?;
        let queries = panel_queries(&json);
        ensure!(!queries.is_empty(), "{board} has no queries");
        for expr in queries {
            let expr = substitute(&expr, &vars);
            let value = evaluate(&expr, &before, &now)?;
            ensure!(
                shows_data(&value),
                "{board}: {expr} shows no data: {value:?}"
            );
            checked += 1;
        }
    }
    for alert in ALERTS {
        let value = evaluate(alert, &before, &now)?;
        ensure!(shows_data(&value), "{alert}: {value:?}");
    }
    // kubebuilder's 15 queries, ours 13.
    ensure!(checked >= 28, "only {checked} queries");
    Ok(())
}

/// deploy/grafana/ is what hack/grafana-dashboards.py writes: kubebuilder's two cannot drift
/// from the generator that rebuilds them from kubebuilder's panels.
#[test]
fn the_dashboards_are_the_generators() -> Result<()> {
    let out = tempfile::tempdir()?;
    let status = std::process::Command::new("python3")
        .arg(repo().join("hack/grafana-dashboards.py"))
        .arg("--out")
        .arg(out.path())
        .status()?;
    ensure!(status.success(), "hack/grafana-dashboards.py failed");
    for board in BOARDS {
        let written = std::fs::read_to_string(out.path().join(board))?;
        let committed = std::fs::read_to_string(repo().join("deploy/grafana").join(board))?;
        ensure!(
            written == committed,
            "deploy/grafana/{board}: run hack/grafana-dashboards.py"
        );
    }
    Ok(())
}

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The evaluator on samples made by hand: a rate, an aggregation by a label, a quantile, a
/// ratio of two vectors, arithmetic with a scalar; and a function it does not know is an error.
#[test]
fn the_evaluator_reads_rates_aggregations_quantiles_and_ratios() -> Result<()> {
    let at = |time: f64, n: f64| Snapshot {
        time,
        samples: vec![
            (
                labels(&[("__name__", "c_total"), ("k", "a"), ("x", "1")]),
                n,
            ),
            (
                labels(&[("__name__", "c_total"), ("k", "a"), ("x", "2")]),
                n * 2.0,
            ),
            (labels(&[("__name__", "h_bucket"), ("le", "1")]), n),
            (labels(&[("__name__", "h_bucket"), ("le", "2")]), n * 2.0),
            (labels(&[("__name__", "h_bucket"), ("le", "+Inf")]), n * 2.0),
            (labels(&[("__name__", "open")]), 10.0),
            (labels(&[("__name__", "limit")]), 40.0),
        ],
    };
    let (before, now) = (at(100.0, 10.0), at(110.0, 30.0));
    let scalar = |expr: &str| -> Result<Vec<f64>> {
        match evaluate(expr, &before, &now)? {
            Value::Vector(v) => Ok(v.into_iter().map(|(_, x)| x).collect()),
            Value::Scalar(x) => Ok(vec![x]),
        }
    };
    ensure!(scalar(r#"sum(rate(c_total{k="a"}[5m])) by (k)"#)? == [6.0]);
    ensure!(scalar(r#"sum by (x) (rate(c_total{k=~"a"}[1m])) * 100"#)? == [200.0, 400.0]);
    ensure!(scalar("histogram_quantile(0.75, sum(rate(h_bucket[5m])) by (le))")? == [1.5]);
    ensure!(scalar("open / limit")? == [0.25]);
    ensure!(scalar("time() - 10")? == [100.0]);
    ensure!(scalar(r#"c_total{k!="a"}"#)?.is_empty());
    ensure!(evaluate("absent(c_total)", &before, &now).is_err());
    ensure!(evaluate(r#"c_total{k=~"a|b"}"#, &before, &now).is_err());
    Ok(())
}
