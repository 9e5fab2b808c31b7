//! The manager binary: parse flags, connect, run until SIGINT/SIGTERM.

use std::process::ExitCode;

use clap::Parser;
use kube::config::{KubeConfigOptions, Kubeconfig};
use math_controller::api;
use math_controller::cli::{Cli, Command, RunArgs};
use math_controller::metrics::Metrics;
use math_controller::ops::leader::LeaderElectionConfig;
use math_controller::ops::manager::{self, Options};
use math_controller::ops::{client, startup, telemetry};
use tokio::signal::unix::{SignalKind, signal};

/// jemalloc (`tikv-jemallocator`) instead of glibc's malloc: the caches' objects are allocated
/// on one runtime thread and freed on another, and glibc's per-thread arenas kept what was
/// freed (mimalloc, also tried, kept more still). See the README ("Dependencies") for the
/// numbers.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read before `main`: one arena, not four per core. The manager runs its
/// reconciles and watches on one runtime worker; the other threads (the log writer, the
/// runtime's blocking pool) each got an arena of their own, which kept what they freed:
/// 5 MB of a restarted Fermat 10000's peak (in-memory bench, 51.9 -> 46.5 MiB), for no CPU
/// measured. `_RJEM_MALLOC_CONF` still overrides it at run time.
#[unsafe(export_name = "_rjem_malloc_conf")]
static MALLOC_CONF: &u8 = &b"narenas:1\0"[0];

/// One worker thread. The controllers, the watches and the caches are one task
/// ([`manager::run`]); more threads only hand each answer from the thread that read it to the
/// thread that runs that task. On a real kube-apiserver sharing 2 cores with the manager, a
/// Fermat 10000 took 4.9 s of the manager's CPU with one worker and 6.4–6.7 s with two
/// (docs/benchmark.md), and every CPU second the manager saves goes to the API server.
#[tokio::main(flavor = "multi_thread", worker_threads = 1)]
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

async fn client(
    kubeconfig: Option<&std::path::Path>,
    read_timeout: std::time::Duration,
    metrics: &Metrics,
) -> anyhow::Result<kube::Client> {
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
    Ok(client::build(
        client::with_read_timeout(config, read_timeout),
        metrics,
    )?)
}

async fn run(args: RunArgs) -> anyhow::Result<()> {
    // Kept until `run` returns, so that the queued log lines are written before the exit.
    let logging = telemetry::init(args.log_format);
    let metrics = Metrics::new();
    metrics.count_dropped_log_lines(logging.dropped_counter());
    // Checked before connecting: a missing Lease namespace is a mistake on the command line.
    let leader_election = if args.leader_elect {
        Some(LeaderElectionConfig::from_env(
            &args.leader_election_id,
            args.leader_election_namespace.as_deref(),
        )?)
    } else {
        None
    };
    let client = client(args.kubeconfig.as_deref(), args.api_read_timeout, &metrics).await?;
    startup::wait_for_api_server(&client, &args.namespace, args.startup_timeout).await?;
    let options = Options {
        metrics_address: args.metrics_address(),
        metrics_secure: args.metrics_security(),
        namespace: args.namespace,
        concurrency: args.concurrency,
        requests_in_flight: args.requests_in_flight,
        flow_shares: args.flow_shares,
        probe_address: args.health_probe_bind_address.0,
        leader_election,
        sync_period: args.sync_period,
        shutdown_timeout: args.shutdown_timeout,
        read_timeout: Some(args.api_read_timeout),
        ..Options::default()
    };
    let shutdown = first_signal_then_force_on_second(args.shutdown_timeout)?;
    // Spawned onto the runtime's worker rather than awaited here: `#[tokio::main]` polls its
    // own future on the main thread, apart from the worker that reads the sockets, so every
    // answer and watch event woke it from another thread. On a real kube-apiserver (v1.24,
    // same 2 cores) a Fermat 10000 took 8.2–8.6 s of the manager's CPU that way, 6.4–6.6 s
    // spawned on two workers, 4.9 s on one (docs/benchmark.md).
    tokio::spawn(manager::run(client, options, metrics, shutdown)).await?
}

/// Resolves on the first SIGINT or SIGTERM: the manager then drains (for at most
/// `--shutdown-timeout`). A second signal ends the process at once with status 130, as a
/// learner pressing Ctrl-C twice expects.
fn first_signal_then_force_on_second(
    shutdown_timeout: std::time::Duration,
) -> anyhow::Result<impl std::future::Future<Output = ()> + Send + 'static> {
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
        tracing::info!(
            "stopping: finishing the reconciles in flight (at most {shutdown_timeout:?}); press Ctrl-C again to stop at once"
        );
        tokio::spawn(async move {
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
            }
            tracing::warn!("second signal: exiting at once, abandoning the reconciles in flight");
            std::process::exit(130);
        });
    })
}
