//! `math-workshop`: generate your CRDs, run your controllers, check a stage. The binary is the
//! learner's crate's (`workshop/src/main.rs`), which hands its exercises to [`command`].

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use crate::check::{self, Target};
use crate::cli;
use crate::context::Context;
use crate::messages as m;
use crate::runner::Controllers;
use crate::track::Track;
use crate::{cluster, crds, organiser, panics, room, room_status, t};
use clap::{Parser, Subcommand};

// The help texts are in the catalogue (both languages), set by HELP below.
#[derive(Parser, Debug)]
#[command(name = "math-workshop", version)]
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
        participant: Option<String>,
        #[arg(long)]
        namespace: Option<String>,
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
        participant: Option<String>,
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
    Room {
        #[arg(required = true)]
        participants: Vec<String>,
    },
    RoomStatus,
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
    ("install", "participant", m::CLI_RUN_PARTICIPANT),
    ("install", "namespace", m::CLI_INSTALL_NAMESPACE),
    ("run", "", m::CLI_RUN),
    ("run", "stage", m::CLI_RUN_STAGE),
    ("run", "test_server", m::CLI_RUN_TEST_SERVER),
    ("run", "namespace", m::CLI_RUN_NAMESPACE),
    ("run", "all_namespaces", m::CLI_RUN_ALL_NAMESPACES),
    ("run", "participant", m::CLI_RUN_PARTICIPANT),
    ("check", "", m::CLI_CHECK),
    ("check", "stage", m::CLI_CHECK_STAGE),
    ("check", "cluster", m::CLI_CHECK_CLUSTER),
    ("check", "participant", m::CLI_PARTICIPANT),
    ("check", "force", m::CLI_CHECK_FORCE),
    ("check", "timeout", m::CLI_CHECK_TIMEOUT),
    ("room", "", m::CLI_ROOM),
    ("room", "participants", m::CLI_ROOM_PARTICIPANTS),
    ("room-status", "", m::CLI_ROOM_STATUS),
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

/// The `math-workshop` command, with the learner's `exercises` as the default track.
#[tokio::main]
pub async fn command(exercises: fn() -> Track) -> ExitCode {
    let cli: Cli = cli::parse(HELP);
    m::choose(cli.lang.as_deref());
    let result = match cli.command {
        Command::Crds { dir, solution } => print_crds(&Track::select(solution, exercises), dir),
        Command::Install {
            force,
            participant,
            namespace,
            solution,
        } => {
            let who = room::participant(participant.as_deref());
            install(
                &Track::select(solution, exercises),
                force,
                &who,
                namespace.as_deref(),
            )
            .await
        }
        Command::Run {
            stage,
            test_server,
            namespace,
            all_namespaces,
            participant,
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
            let who = room::participant(participant.as_deref());
            run(
                &Track::select(solution, exercises),
                stage,
                test_server,
                scope,
                &who,
            )
            .await
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
            match check::check(&Track::select(solution, exercises), &opts).await {
                Ok(outcome) if outcome.failed() == 0 => Ok(()),
                Ok(_) => return ExitCode::FAILURE,
                Err(e) => Err(e),
            }
        }
        Command::Room { participants } => room_set_up(&participants).await,
        Command::RoomStatus => {
            let instead = m::ROOM_NEEDS_A_CLUSTER.text();
            match cluster::connect(&instead).await {
                Ok(cluster) => room_status::live(&cluster.client).await,
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

/// `make workshop-room`: the reference solution's CRDs and every participant's namespace,
/// rights and kubeconfig ([`organiser`]), on the cluster of the organiser's kubeconfig.
async fn room_set_up(participants: &[String]) -> anyhow::Result<()> {
    let names: Vec<String> = participants
        .iter()
        .map(|name| room::participant(Some(name)))
        .collect();
    let instead = m::ROOM_NEEDS_A_CLUSTER.text();
    let cluster = cluster::connect(&instead).await?;
    let kubeconfig = kube::config::Kubeconfig::read()?;
    let entry = organiser::current_cluster(&kubeconfig)?;
    let crds = crds::generate(&crate::solutions::track());
    let repository = check::repository();
    for path in organiser::set_up(&cluster.client, &crds, &entry, &names, &repository).await? {
        let shown = path.strip_prefix(&repository).unwrap_or(&path);
        println!("{}", t!(m::WROTE, path = shown.display()));
    }
    println!(
        "{}",
        t!(
            m::ROOM_READY,
            count = names.len(),
            described = cluster.described
        )
    );
    Ok(())
}

/// Which namespaces `run` looks after.
enum Scope {
    /// The current kubeconfig context's namespace (where `kubectl apply` puts things).
    Context,
    Namespace(String),
    All,
}

/// Runs the controllers until Ctrl-C (or until every one of them stopped, or another
/// controller turns out to work in the same namespace).
async fn run(
    track: &Track,
    stage: u8,
    test_server: bool,
    scope: Scope,
    participant: &str,
) -> anyhow::Result<()> {
    let server = if test_server {
        // First, as on a cluster; nothing is printed after the KUBECONFIG line, which a
        // script may stop reading at.
        let namespace = match &scope {
            Scope::All => None,
            Scope::Namespace(namespace) => Some(namespace.as_str()),
            Scope::Context => Some("default"),
        };
        println!("{}", where_line(participant, namespace, "default"));
        let server = crds::on_a_test_server(track).await?;
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
    let (client, kubectls, context_namespace) = match &server {
        Some(server) => (server.client(), "default".to_string(), None),
        None => {
            let instead = m::RUN_WITHOUT_CLUSTER.text();
            let cluster = cluster::connect_as(&instead, Some(participant)).await?;
            (cluster.client, cluster.namespace, cluster.context_namespace)
        }
    };
    let namespace = match scope {
        Scope::Context if server.is_some() => Some(kubectls.clone()),
        Scope::Context => Some(room::your_namespace(None, context_namespace.as_deref())),
        Scope::Namespace(namespace) => Some(namespace),
        Scope::All => None,
    };
    if server.is_none() && namespace.is_none() && organiser::is_a_room(&client).await {
        anyhow::bail!("{}", m::ROOM_NOT_ALL_NAMESPACES.text());
    }
    if server.is_none() {
        println!(
            "{}",
            where_line(participant, namespace.as_deref(), &kubectls)
        );
        crds_installed(&client, track, stage).await?;
    }
    if let (None, Some(namespace)) = (&server, &namespace) {
        room::ensure_namespace(&client, namespace, participant)
            .await
            .map_err(|why| anyhow::anyhow!(why))?;
        let found = others_in(&client, track, stage, namespace, participant).await?;
        if let Some(foreign) = found {
            anyhow::bail!(
                "{}",
                t!(
                    m::RUN_LEAVES_ALONE,
                    namespace = namespace,
                    foreign = foreign
                )
            );
        }
    }
    let watching = match &namespace {
        Some(namespace) => t!(m::SCOPE_NAMESPACE, namespace = namespace),
        None => m::SCOPE_ALL.text(),
    };
    let ctx = Context::new(client, namespace.clone());
    let mut controllers = Controllers::start(track, stage, &ctx);
    tracing::info!(
        target: "math_workshop",
        stage,
        code = track.dir,
        "{}",
        t!(m::RUNNING, scope = watching)
    );
    // Another controller that starts in this namespace after us (both found it empty) shows
    // in the statuses it writes: then ours stop, rather than fight over the same objects.
    let lookout = match (&server, &namespace) {
        (None, Some(namespace)) => Some(namespace.clone()),
        _ => None,
    };
    let mut ticks: u32 = 0;
    let mut others = None;
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => break,
            _ = tokio::time::sleep(Duration::from_millis(500)) => {
                if !controllers.any_running() {
                    tracing::error!(
        target: "math_workshop","{}", m::EVERY_CONTROLLER_STOPPED.text());
                    break;
                }
                ticks = ticks.wrapping_add(1);
                if let Some(namespace) = lookout.as_deref().filter(|_| ticks % HEARTBEAT_TICKS == 1) {
                    // The organiser's table (make workshop-room-status) shows this runner up.
                    if let Err(e) = room_status::heartbeat(&ctx.client, namespace, participant).await {
                        tracing::debug!(target: "math_workshop", error = %room::said(&e), "heartbeat");
                    }
                }
                let Some(namespace) = lookout.as_deref().filter(|_| ticks.is_multiple_of(LOOKOUT_TICKS)) else {
                    continue;
                };
                match others_in(&ctx.client, track, stage, namespace, participant).await {
                    Ok(None) => {}
                    Ok(Some(foreign)) => {
                        others = Some(t!(
                            m::RUN_STOPS_FOR_OTHERS,
                            namespace = namespace,
                            foreign = foreign
                        ));
                        break;
                    }
                    Err(e) => tracing::warn!(
        target: "math_workshop","{e}"),
                }
            }
        }
    }
    let stopped = controllers.all_stopped();
    controllers.stop();
    if let Some(server) = server {
        server.shutdown().await;
    }
    if let Some(others) = others {
        anyhow::bail!("{others}");
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
async fn install(
    track: &Track,
    force: bool,
    participant: &str,
    namespace: Option<&str>,
) -> anyhow::Result<()> {
    let repository = check::repository();
    let dir = "workshop/crds";
    let instead = m::INSTALL_WITHOUT_CLUSTER.text();
    let cluster = cluster::connect_as(&instead, Some(participant)).await;
    // Without a cluster the files are still written: then the error.
    let namespace = cluster
        .as_ref()
        .ok()
        .map(|cluster| room::your_namespace(namespace, cluster.context_namespace.as_deref()));
    if let (Ok(cluster), Some(namespace)) = (&cluster, &namespace) {
        println!(
            "{}",
            where_line(participant, Some(namespace), &cluster.namespace)
        );
    }
    for name in crds::write(track, &repository.join(dir))? {
        println!("{}", t!(m::WROTE, path = format!("{dir}/{name}")));
    }
    let cluster = cluster?;
    if organiser::is_a_room(&cluster.client).await {
        println!("{}", m::ROOM_INSTALLS_NOTHING.text());
        return Ok(());
    }
    let namespace = namespace.unwrap_or_else(|| cluster.namespace.clone());
    let me = room::Signature::new(participant);
    let install = room::may_install(
        &cluster.client,
        &crds::generate(track),
        &namespace,
        &me,
        force,
    )
    .await
    .map_err(|why| anyhow::anyhow!(why))?;
    room::ensure_namespace(&cluster.client, &namespace, participant)
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
            target: "math_workshop",
                    "{}",
                    t!(m::CRD_OUTDATED, name = name, track = track.called())
                );
        }
    }
    Ok(())
}

/// How many 500 ms ticks of the runner pass between two looks for another controller in its
/// namespace (5 s: a LIST per kind, thirty runners on one cluster are 18 LISTs a second).
const LOOKOUT_TICKS: u32 = 10;

/// How many 500 ms ticks pass between two heartbeats ([`room_status::RENEW_EVERY`]).
const HEARTBEAT_TICKS: u32 = 10;

/// The first line of `run` and `install`: who, and which namespace, with the command that
/// makes kubectl's namespace the same when it is not.
fn where_line(participant: &str, namespace: Option<&str>, kubectls: &str) -> String {
    match namespace {
        None => t!(m::WHERE_ALL, participant = participant),
        Some(namespace) if namespace == kubectls => {
            t!(m::WHERE, participant = participant, namespace = namespace)
        }
        Some(namespace) => t!(
            m::WHERE_NOT_KUBECTLS,
            participant = participant,
            namespace = namespace,
            context = kubectls
        ),
    }
}

/// What says that a controller other than the participant's looks after objects of the
/// stages' kinds in `namespace` ([`room::describe_foreign`]), if one does.
async fn others_in(
    client: &kube::Client,
    track: &Track,
    stage: u8,
    namespace: &str,
    participant: &str,
) -> anyhow::Result<Option<String>> {
    let crds: Vec<_> = crds::generate(track)
        .into_iter()
        .take(usize::from(stage))
        .collect();
    let found =
        room::others_controllers(client, &crds, namespace, &room::Signature::new(participant))
            .await
            .map_err(|said| {
                anyhow::anyhow!(
                    "{}",
                    t!(
                        m::CANNOT_LOOK_FOR_OTHERS,
                        namespace = namespace,
                        said = said
                    )
                )
            })?;
    Ok((!found.is_empty()).then(|| room::describe_foreign(&found)))
}
