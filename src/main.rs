//! The manager binary: parse flags, connect, run until SIGINT/SIGTERM.

use std::process::ExitCode;

use clap::Parser;
use kube::config::{KubeConfigOptions, Kubeconfig};
use math_controller::cli::{Cli, Command, RunArgs};
use math_controller::leader::LeaderElectionConfig;
use math_controller::manager::{self, Options};
use math_controller::metrics::Metrics;
use math_controller::{api, telemetry};
use tokio::signal::unix::{SignalKind, signal};

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::Crds { dir }) => print_crds(dir),
        None => run(cli.run).await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn print_crds(dir: Option<std::path::PathBuf>) -> anyhow::Result<()> {
    match dir {
        None => print!("{}", api::crds_yaml()?),
        Some(dir) => {
            std::fs::create_dir_all(&dir)?;
            for (file, yaml) in api::crd_files()? {
                std::fs::write(dir.join(&file), yaml)?;
                eprintln!("wrote {}", dir.join(file).display());
            }
        }
    }
    Ok(())
}

async fn client(kubeconfig: Option<&std::path::Path>) -> anyhow::Result<kube::Client> {
    let config = match kubeconfig {
        Some(path) => {
            let kubeconfig = Kubeconfig::read_from(path)
                .map_err(|e| anyhow::anyhow!("cannot read kubeconfig {}: {e}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?
        }
        None => kube::Config::infer().await.map_err(|e| {
            anyhow::anyhow!(
                "no Kubernetes configuration found ({e}); start minikube or kind, or set KUBECONFIG"
            )
        })?,
    };
    Ok(kube::Client::try_from(config)?)
}

async fn run(args: RunArgs) -> anyhow::Result<()> {
    telemetry::init(args.log_format);
    let client = client(args.kubeconfig.as_deref()).await?;
    manager::preflight(&client, &args.namespace).await?;
    let leader_election = args.leader_elect.then(|| {
        let mut config = LeaderElectionConfig::from_env(&client);
        config.lease_name = args.leader_election_id.clone();
        if let Some(namespace) = &args.leader_election_namespace {
            config.namespace = namespace.clone();
        }
        config
    });
    let options = Options {
        metrics_address: args.metrics_address(),
        metrics_secure: args.metrics_security(),
        namespace: args.namespace,
        concurrency: args.concurrency,
        probe_address: args.health_probe_bind_address.0,
        leader_election,
    };
    let mut terminate = signal(SignalKind::terminate())?;
    let shutdown = async move {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = terminate.recv() => {}
        }
        tracing::info!("shutting down: finishing the reconciles in flight");
    };
    manager::run(client, options, Metrics::new(), shutdown).await
}
