//! `cargo run -p test-apiserver -- --port 8001 --kubeconfig /tmp/kubeconfig`
//! starts the in-memory API server and prints the kubeconfig path.

use clap::Parser;
use std::path::PathBuf;
use test_apiserver::{RequestFilter, ServerOptions, TestServer, Verb};

/// An in-memory Kubernetes API server for tests and workshops.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// TCP port on 127.0.0.1 (0 = a free port).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Where to write the kubeconfig (default: a temporary directory).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// CustomResourceDefinition YAML files (or directories of them) to install at start.
    #[arg(long = "crds")]
    crds: Vec<PathBuf>,
    /// Seconds between BOOKMARK events on watches that allow them.
    #[arg(long, default_value_t = 5)]
    bookmark_interval: u64,
    /// Cap writes at this many per second, queued (0 = no cap), like a loaded apiserver.
    #[arg(long, default_value_t = 0)]
    write_rate: u32,
    /// Delay every write by this many milliseconds (a real apiserver's write latency).
    #[arg(long, default_value_t = 0)]
    write_latency_ms: u64,
    /// Authorize requests that bear a token by RBAC, as kube-apiserver does (a room's shared
    /// cluster: `make workshop-room`'s kubeconfigs); without a token, the administrator.
    #[arg(long)]
    rbac: bool,
    /// Serve HTTPS with a certificate authority of its own, named in the kubeconfig by file
    /// path as minikube writes it (kubectl sends a kubeconfig's token only over TLS).
    #[arg(long)]
    https: bool,
}

fn yaml_files(p: &PathBuf) -> anyhow::Result<Vec<PathBuf>> {
    if p.is_dir() {
        let mut v: Vec<PathBuf> = std::fs::read_dir(p)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
            .collect();
        v.sort();
        Ok(v)
    } else {
        Ok(vec![p.clone()])
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let server = TestServer::start_with(ServerOptions {
        port: args.port,
        kubeconfig: args.kubeconfig,
        bookmark_interval: std::time::Duration::from_secs(args.bookmark_interval.max(1)),
        https: args.https,
        ..Default::default()
    })
    .await?;
    server.set_write_rate(args.write_rate);
    if args.rbac {
        server.enforce_rbac();
    }
    for verb in [Verb::Create, Verb::Update, Verb::Patch, Verb::Delete] {
        server.set_latency(
            RequestFilter::new().verb(verb),
            std::time::Duration::from_millis(args.write_latency_ms),
        );
    }
    for p in &args.crds {
        for f in yaml_files(p)? {
            server.apply_crd_yaml(&std::fs::read_to_string(&f)?)?;
        }
    }
    println!("{}", server.kubeconfig_path().display());
    eprintln!(
        "test-apiserver listening on {}; try: KUBECONFIG={} kubectl get namespaces",
        server.url(),
        server.kubeconfig_path().display()
    );
    tokio::signal::ctrl_c().await?;
    server.shutdown().await;
    Ok(())
}
