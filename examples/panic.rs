//! What one panicking reconcile costs, on any cluster: the manager of `cargo run`, except that
//! the reconcile of the Tuple named by `--panic-on` panics every time. Nothing else notices:
//! every other object converges, the panic is logged once with its place, counted in
//! `controller_runtime_reconcile_panics_total{controller="tuple"}` and retried with backoff,
//! as controller-runtime recovers a reconcile's panic.
//!
//! ```text
//! make install
//! cargo run --release --example panic -- --namespace demo --panic-on bad
//! kubectl create namespace demo
//! kubectl -n demo apply -f samples/fermat-13.yaml
//! kubectl -n demo create -f - <<<'{"apiVersion":"math.example.com/v1beta1","kind":"Tuple","metadata":{"name":"bad"},"spec":{"numbers":[4,9]}}'
//! kubectl -n demo wait --for=condition=Ready fermat/fermat-13
//! curl -s localhost:8080/metrics | grep -E 'reconcile_panics_total|result="error"'
//! ```
//!
//! It is the library's test hook ([`ReconcileHook`]) in a binary of its own: the manager's
//! binary has no way to make itself panic.

use std::sync::Arc;

use clap::Parser;
use math_controller::metrics::Metrics;
use math_controller::ops::manager::{self, Options};
use math_controller::ops::{client, telemetry};
use math_controller::reconcile::controller_loop::ReconcileHook;

#[derive(Parser)]
struct Args {
    /// The Tuple whose reconcile panics.
    #[arg(long)]
    panic_on: String,
    /// The namespace watched (default: all).
    #[arg(long)]
    namespace: Option<String>,
    /// Where /metrics is served.
    #[arg(long, default_value = "127.0.0.1:8080")]
    metrics_bind_address: std::net::SocketAddr,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let _logging = telemetry::init(telemetry::LogFormat::Text);
    let metrics = Metrics::new();
    let config = kube::Config::infer().await?;
    let client = client::build(config, &metrics)?;
    let bad = args.panic_on;
    let hook = ReconcileHook(Arc::new(move |controller, _namespace, name| {
        if controller == "tuple" && name == bad {
            panic!("a panic for the example, in the reconcile of Tuple {name}");
        }
    }));
    let options = Options {
        namespace: args.namespace,
        metrics_address: Some(args.metrics_bind_address),
        reconcile_hook: Some(hook),
        ..Options::default()
    };
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    manager::run(client, options, metrics, shutdown).await
}
