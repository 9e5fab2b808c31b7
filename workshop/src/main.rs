//! `math-workshop`: generate your CRDs, run your controllers, check a stage.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use math_workshop::check::{self, Target};
use math_workshop::cli;
use math_workshop::context::Context;
use math_workshop::messages as m;
use math_workshop::runner::Controllers;
use math_workshop::track::Track;
use math_workshop::{cluster, crds, panics, room, t};
use test_apiserver::TestServer;

// The help texts are in the catalogue (both languages), set by HELP below.
#[derive(Parser, Debug)]
#[command(version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    #[arg(long, global = true, value_parser = ["en", "ja"])]
    lang: Option<String>,
}

#[derive(Subcommand, Debug)]
enum Command {
    Crds {
        #[arg(long)]
        dir: Option<PathBuf>,
        #[arg(long)]
        solution: bool,
    },
    Install {
        #[arg(long)]
        force: bool,
        #[arg(long)]
        solution: bool,
    },
    Run {
        #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u8).range(1..=3))]
        stage: u8,
        #[arg(long)]
        test_server: bool,
        #[arg(long, conflicts_with = "all_namespaces")]
        namespace: Option<String>,
        #[arg(long, short = 'A')]
        all_namespaces: bool,
        #[arg(long)]
        solution: bool,
    },
    Check {
        #[arg(value_parser = clap::value_parser!(u8).range(1..=3))]
        stage: u8,
        #[arg(long)]
        cluster: bool,
        #[arg(long)]
        participant: Option<String>,
        #[arg(long)]
        force: bool,
        #[arg(long)]
        solution: bool,
        #[arg(long)]
        timeout: Option<u64>,
    },
}

/// Every about and argument help of `math-workshop`, from the catalogue (see [`cli::Help`]).
const HELP: &cli::Help = &[
    ("", "", m::CLI_WORKSHOP),
    ("*", "lang", m::CLI_LANG),
    ("*", "help", m::CLI_HELP),
    ("*", "version", m::CLI_VERSION),
    ("*", "solution", m::CLI_SOLUTION),
    ("help", "", m::CLI_HELP_COMMAND),
    ("crds", "", m::CLI_CRDS),
    ("crds", "dir", m::CLI_CRDS_DIR),
    ("install", "", m::CLI_INSTALL),
    ("install", "force", m::CLI_INSTALL_FORCE),
    ("run", "", m::CLI_RUN),
    ("run", "stage", m::CLI_RUN_STAGE),
    ("run", "test_server", m::CLI_RUN_TEST_SERVER),
    ("run", "namespace", m::CLI_RUN_NAMESPACE),
    ("run", "all_namespaces", m::CLI_RUN_ALL_NAMESPACES),
    ("check", "", m::CLI_CHECK),
    ("check", "stage", m::CLI_CHECK_STAGE),
    ("check", "cluster", m::CLI_CHECK_CLUSTER),
    ("check", "participant", m::CLI_PARTICIPANT),
    ("check", "force", m::CLI_CHECK_FORCE),
    ("check", "timeout", m::CLI_CHECK_TIMEOUT),
];

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
    let cli: Cli = cli::parse(HELP);
    m::choose(cli.lang.as_deref());
    let result = match cli.command {
        Command::Crds { dir, solution } => print_crds(&Track::select(solution), dir),
        Command::Install { force, solution } => install(&Track::select(solution), force).await,
        Command::Run {
            stage,
            test_server,
            namespace,
            all_namespaces,
            solution,
        } => {
            // kube-client logs every failed request at ERROR; the runner says it in one line.
            logging("info,kube=warn,kube_client=off");
            // The runner reports a controller's panic once, with where it is.
            panics::install_hook(true);
            let scope = match (namespace, all_namespaces) {
                (_, true) => Scope::All,
                (Some(namespace), false) => Scope::Namespace(namespace),
                (None, false) => Scope::Context,
            };
            run(&Track::select(solution), stage, test_server, scope).await
        }
        Command::Check {
            stage,
            cluster,
            participant,
            force,
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
            let mut opts = check::Options::for_participant(
                stage,
                target,
                &room::participant(participant.as_deref()),
            );
            opts.force = force;
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
            eprintln!("{}", t!(m::ERROR, message = format!("{e:#}")));
            ExitCode::FAILURE
        }
    }
}

fn print_crds(track: &Track, dir: Option<PathBuf>) -> anyhow::Result<()> {
    match dir {
        Some(dir) => {
            for name in crds::write(track, &dir)? {
                println!("{}", t!(m::WROTE, path = dir.join(name).display()));
            }
        }
        None => print!("{}", crds::yaml(track)?),
    }
    Ok(())
}

/// Which namespaces `run` looks after.
enum Scope {
    /// The current kubeconfig context's namespace (where `kubectl apply` puts things).
    Context,
    Namespace(String),
    All,
}

/// Runs the controllers until Ctrl-C (or until every one of them stopped).
async fn run(track: &Track, stage: u8, test_server: bool, scope: Scope) -> anyhow::Result<()> {
    let server = if test_server {
        let server = TestServer::start().await?;
        server.apply_crd_yaml(&crds::yaml(track)?)?;
        println!(
            "{}",
            t!(
                m::TEST_SERVER_STARTED,
                url = server.url(),
                kubeconfig = server.kubeconfig_path().display()
            )
        );
        Some(server)
    } else {
        None
    };
    let (client, context_namespace) = match &server {
        Some(server) => (server.client(), "default".to_string()),
        None => {
            let cluster = cluster::connect(&m::RUN_WITHOUT_CLUSTER.text()).await?;
            (cluster.client, cluster.namespace)
        }
    };
    if server.is_none() {
        crds_installed(&client, track, stage).await?;
    }
    let namespace = match scope {
        Scope::Context => Some(context_namespace),
        Scope::Namespace(namespace) => Some(namespace),
        Scope::All => None,
    };
    let watching = match &namespace {
        Some(namespace) => t!(m::SCOPE_NAMESPACE, namespace = namespace),
        None => m::SCOPE_ALL.text(),
    };
    let mut controllers = Controllers::start(track, stage, &Context::new(client, namespace));
    tracing::info!(
        stage,
        code = track.dir,
        "{}",
        t!(m::RUNNING, scope = watching)
    );
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => break,
            _ = tokio::time::sleep(Duration::from_millis(500)) => {
                if !controllers.any_running() {
                    tracing::error!("{}", m::EVERY_CONTROLLER_STOPPED.text());
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
    let names: Vec<&str> = stopped.keys().map(|kind| kind.name()).collect();
    anyhow::ensure!(
        stopped.is_empty(),
        "{}",
        t!(m::STOPPED, kinds = names.join(&m::AND.text()))
    );
    Ok(())
}

/// `make workshop-install`: writes workshop/crds/, asks the room's question (would this
/// replace CRDs that others use?), then `kubectl apply -f workshop/crds/`.
async fn install(track: &Track, force: bool) -> anyhow::Result<()> {
    let repository = check::repository();
    let dir = "workshop/crds";
    for name in crds::write(track, &repository.join(dir))? {
        println!("{}", t!(m::WROTE, path = format!("{dir}/{name}")));
    }
    let cluster = cluster::connect(&m::INSTALL_WITHOUT_CLUSTER.text()).await?;
    let install = room::may_install(
        &cluster.client,
        &crds::generate(track),
        &cluster.namespace,
        force,
    )
    .await
    .map_err(|why| anyhow::anyhow!(why))?;
    for note in install.notes {
        println!("({note})");
    }
    let kubectl = std::env::var("KUBECTL").unwrap_or_else(|_| "kubectl".to_string());
    println!("{kubectl} apply -f {dir}/");
    let status = std::process::Command::new(&kubectl)
        .args(["apply", "-f", &format!("{dir}/")])
        .current_dir(&repository)
        .status()
        .map_err(|e| anyhow::anyhow!("{}", t!(m::COULD_NOT_RUN, program = kubectl, error = e)))?;
    anyhow::ensure!(status.success(), "{}", m::KUBECTL_APPLY_FAILED.text());
    Ok(())
}

/// Fails with what to do when a CRD the stages need is not installed in the cluster (the
/// controllers would otherwise only log watch errors), and warns when an installed one is not
/// what the types generate now (they changed since `make workshop-install`).
async fn crds_installed(client: &kube::Client, track: &Track, stage: u8) -> anyhow::Result<()> {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let api = kube::Api::<CustomResourceDefinition>::all(client.clone());
    for crd in crds::generate(track).into_iter().take(usize::from(stage)) {
        let name = crd.metadata.name.clone().unwrap_or_default();
        let Some(installed) = api
            .get_opt(&name)
            .await
            .map_err(|e| anyhow::anyhow!(room::said(&e)))?
        else {
            anyhow::bail!("{}", t!(m::CRD_NOT_INSTALLED, name = name));
        };
        let digest = |crd: &CustomResourceDefinition| {
            crd.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(room::DIGEST))
                .cloned()
        };
        if digest(&installed) != digest(&crd) {
            tracing::warn!(
                "{}",
                t!(m::CRD_OUTDATED, name = name, track = track.called())
            );
        }
    }
    Ok(())
}
