//! `math-workshop`: generate your CRDs, run your controllers, check a stage.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use math_workshop::check::{self, Target};
use math_workshop::context::Context;
use math_workshop::runner::Controllers;
use math_workshop::track::Track;
use math_workshop::{crds, panics};
use test_apiserver::TestServer;

/// The kubebuilder hands-on, written by you: stage 1 Number, stage 2 Tuple owns Numbers,
/// stage 3 Fermat owns Tuples.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print the CRDs generated from your types (or write one file per CRD with --dir).
    Crds {
        /// Write `<name>.yaml` files into this directory instead of printing.
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Use the reference solutions instead of your exercises.
        #[arg(long)]
        solution: bool,
    },
    /// Run your controllers of stages 1..=N against the current kubeconfig.
    Run {
        /// The last stage to run (1 Number, 2 +Tuple, 3 +Fermat).
        #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u8).range(1..=3))]
        stage: u8,
        /// Start an in-memory test API server with your CRDs installed, and run against it.
        #[arg(long)]
        test_server: bool,
        /// Run the reference solutions instead of your exercises.
        #[arg(long)]
        solution: bool,
    },
    /// Check stage N: ✓ or ✗ per expectation, with hints; exits non-zero on any ✗.
    Check {
        /// The stage to check (1 Number, 2 Tuple, 3 Fermat).
        #[arg(value_parser = clap::value_parser!(u8).range(1..=3))]
        stage: u8,
        /// Use the cluster of the current kubeconfig instead of a fresh test API server.
        #[arg(long)]
        cluster: bool,
        /// Check the reference solutions instead of your exercises.
        #[arg(long)]
        solution: bool,
        /// Seconds each expectation may take (default: 10 on the test server, 30 on a cluster).
        #[arg(long)]
        timeout: Option<u64>,
    },
}

fn logging(default: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Crds { dir, solution } => print_crds(&Track::select(solution), dir),
        Command::Run {
            stage,
            test_server,
            solution,
        } => {
            logging("info,kube=warn");
            panics::install_hook(false);
            run(&Track::select(solution), stage, test_server).await
        }
        Command::Check {
            stage,
            cluster,
            solution,
            timeout,
        } => {
            // Your controllers' logs would drown the ✓/✗ lines; RUST_LOG=info shows them.
            logging("off");
            panics::install_hook(true);
            let target = if cluster {
                Target::Cluster
            } else {
                Target::TestServer
            };
            let mut opts = check::Options::new(stage, target);
            if let Some(seconds) = timeout {
                opts.timeout = Duration::from_secs(seconds);
            }
            match check::check(&Track::select(solution), &opts).await {
                Ok(outcome) if outcome.failed() == 0 => Ok(()),
                Ok(_) => return ExitCode::FAILURE,
                Err(e) => Err(e),
            }
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn print_crds(track: &Track, dir: Option<PathBuf>) -> anyhow::Result<()> {
    match dir {
        Some(dir) => {
            for name in crds::write(track, &dir)? {
                println!("wrote {}", dir.join(name).display());
            }
        }
        None => print!("{}", crds::yaml(track)?),
    }
    Ok(())
}

/// Runs the controllers until Ctrl-C (or until every one of them stopped).
async fn run(track: &Track, stage: u8, test_server: bool) -> anyhow::Result<()> {
    let server = if test_server {
        let server = TestServer::start().await?;
        server.apply_crd_yaml(&crds::yaml(track)?)?;
        println!(
            "test API server on {} with your CRDs installed; in another terminal:\n  export KUBECONFIG={}",
            server.url(),
            server.kubeconfig_path().display()
        );
        Some(server)
    } else {
        None
    };
    let client = match &server {
        Some(server) => server.client(),
        None => kube::Client::try_default().await.context(
            "no cluster in your kubeconfig: start minikube or kind, or use --test-server",
        )?,
    };
    if server.is_none() {
        crds_installed(&client, track, stage).await?;
    }
    let mut controllers = Controllers::start(track, stage, &Context::new(client));
    tracing::info!(
        stage,
        code = track.dir,
        "controllers running; Ctrl-C stops them"
    );
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => break,
            _ = tokio::time::sleep(Duration::from_millis(500)) => {
                if !controllers.any_running() {
                    tracing::error!("every controller stopped: fix the code and run again");
                    break;
                }
            }
        }
    }
    let stopped = controllers.all_stopped();
    controllers.stop();
    if let Some(server) = server {
        server.shutdown().await;
    }
    anyhow::ensure!(
        stopped.is_empty(),
        "{} controller(s) stopped",
        stopped.len()
    );
    Ok(())
}

/// Fails with what to do when a CRD the stages need is not installed in the cluster (the
/// controllers would otherwise only log watch errors).
async fn crds_installed(client: &kube::Client, track: &Track, stage: u8) -> anyhow::Result<()> {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let api = kube::Api::<CustomResourceDefinition>::all(client.clone());
    for crd in (track.crds)().into_iter().take(usize::from(stage)) {
        let name = crd.metadata.name.unwrap_or_default();
        if api.get_opt(&name).await?.is_none() {
            anyhow::bail!(
                "the CRD {name} is not installed in the cluster of your kubeconfig: run `make workshop-install` \
                 (or use --test-server)"
            );
        }
    }
    Ok(())
}
