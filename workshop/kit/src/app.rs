//! `math-workshop`: generate your CRDs, run your controllers, check a stage. The binary is the
//! learner's crate's (`workshop/src/main.rs`), which hands its exercises to [`command`].

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use crate::check::{self, Target};
use crate::cli;
use crate::messages as m;
use crate::track::Track;
use crate::{cluster, crds, organiser, panics, room, room_status, t};
use clap::{Parser, Subcommand};

mod organising;
mod run;

use run::Scope;

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
        #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u8).range(0..=3))]
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
        #[arg(value_parser = clap::value_parser!(u8).range(0..=3))]
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
    Room(organising::Asked),
    RoomDown {
        #[arg(long)]
        dir: Option<PathBuf>,
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
    ("room", "server", m::CLI_ROOM_SERVER),
    ("room", "token_hours", m::CLI_ROOM_TOKEN_HOURS),
    ("room", "dir", m::CLI_ROOM_DIR),
    ("room-down", "", m::CLI_ROOM_DOWN),
    ("room-down", "dir", m::CLI_ROOM_DIR),
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
    match execute(cli.command, exercises).await {
        Ok(code) => code,
        Err(e) => {
            eprintln!("{}", t!(m::ERROR, message = format!("{e:#}")));
            ExitCode::FAILURE
        }
    }
}

/// Does what `command` asks. A check that ran and found a ✗ is `Ok(FAILURE)`: its lines said
/// what is wrong, there is no error to add.
async fn execute(command: Command, exercises: fn() -> Track) -> anyhow::Result<ExitCode> {
    match command {
        // Stage 0 (the guide's "define the API", exercise 1a) is the first half of stage 1.
        Command::Check { stage: 0, .. } => anyhow::bail!(
            "{}",
            t!(
                m::STAGE_ZERO_CHECK,
                file = "workshop/src/exercises/number.rs"
            )
        ),
        Command::Run { stage: 0, .. } => anyhow::bail!("{}", m::STAGE_ZERO_RUN.text()),
        Command::Crds { dir, solution } => print_crds(&Track::select(solution, exercises), dir)?,
        Command::Install {
            force,
            participant,
            namespace,
            solution,
        } => {
            let who = room::participant(participant.as_deref()).map_err(anyhow::Error::msg)?;
            let track = Track::select(solution, exercises);
            install(&track, force, &who, namespace.as_deref()).await?
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
            let scope = Scope::of(namespace, all_namespaces);
            let who = room::participant(participant.as_deref()).map_err(anyhow::Error::msg)?;
            let track = Track::select(solution, exercises);
            run::run(&track, stage, test_server, scope, &who).await?
        }
        Command::Check {
            stage,
            cluster,
            participant,
            force,
            solution,
            timeout,
        } => {
            let who = room::participant(participant.as_deref()).map_err(anyhow::Error::msg)?;
            let opts = check_options(stage, cluster, &who, force, timeout);
            return check_stage(&Track::select(solution, exercises), &opts).await;
        }
        Command::Room(asked) => organising::set_up(asked).await?,
        Command::RoomDown { dir } => organising::take_down(dir).await?,
        Command::RoomStatus => room_status().await?,
    }
    Ok(ExitCode::SUCCESS)
}

/// `make workshop-room-status`: the room's table, live, on the current context's cluster.
async fn room_status() -> anyhow::Result<()> {
    let instead = m::ROOM_NEEDS_A_CLUSTER.text();
    let cluster = cluster::connect(&instead).await?;
    room_status::live(&cluster.client).await
}

/// The options of `math-workshop check`, from its flags.
fn check_options(
    stage: u8,
    cluster: bool,
    participant: &str,
    force: bool,
    timeout: Option<u64>,
) -> check::Options {
    let target = if cluster {
        Target::Cluster
    } else {
        Target::TestServer
    };
    let mut opts = check::Options::for_participant(stage, target, participant);
    opts.force = force;
    if let Some(seconds) = timeout {
        opts.timeout = Duration::from_secs(seconds);
    }
    opts
}

/// `make workshop-check`: the ✓/✗ lines, and a failing exit code when one is ✗.
async fn check_stage(track: &Track, opts: &check::Options) -> anyhow::Result<ExitCode> {
    // Your controllers' logs would drown the ✓/✗ lines; RUST_LOG=info shows them.
    logging("off");
    panics::install_hook(true);
    let outcome = check::check(track, opts).await?;
    Ok(match outcome.failed() {
        0 => ExitCode::SUCCESS,
        _ => ExitCode::FAILURE,
    })
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
            where_line(
                participant,
                Some(namespace),
                &cluster.namespace,
                &cluster.on
            )
        );
    }
    for name in crds::write(track, &repository.join(dir))? {
        println!("{}", t!(m::WROTE, path = format!("{dir}/{name}")));
    }
    let cluster = cluster?;
    if organiser::is_a_room(&cluster.client).await {
        println!("{}", room_installs_nothing(&cluster.client, track).await);
        return Ok(());
    }
    anyhow::ensure!(
        cluster.familiar || force,
        "{}",
        t!(m::INSTALL_UNFAMILIAR, on = cluster.on)
    );
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
    kubectl_apply(&repository, dir)
}

/// `kubectl apply -f <dir>/` in the repository, said first.
fn kubectl_apply(repository: &std::path::Path, dir: &str) -> anyhow::Result<()> {
    let kubectl = std::env::var("KUBECTL").unwrap_or_else(|_| "kubectl".to_string());
    println!("{kubectl} apply -f {dir}/");
    let status = std::process::Command::new(&kubectl)
        .args(["apply", "-f", &format!("{dir}/")])
        .current_dir(repository)
        .status()
        .map_err(|e| anyhow::anyhow!("{}", t!(m::COULD_NOT_RUN, program = kubectl, error = e)))?;
    anyhow::ensure!(status.success(), "{}", m::KUBECTL_APPLY_FAILED.text());
    Ok(())
}

/// What `install` says on a room's cluster, where the organiser's CRDs are the reference
/// solution's: that they are the same as the participant's (the digests of their structural
/// schemas agree, [`crate::room::digest`]), or which differ and where to look.
async fn room_installs_nothing(client: &kube::Client, track: &Track) -> String {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let api = kube::Api::<CustomResourceDefinition>::all(client.clone());
    let mut differing = Vec::new();
    for crd in crds::generate(track) {
        let name = crd.metadata.name.clone().unwrap_or_default();
        let digest = |crd: &CustomResourceDefinition| {
            crd.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(room::DIGEST))
                .cloned()
        };
        let installed = api.get_opt(&name).await.ok().flatten();
        if installed.is_some_and(|installed| digest(&installed) != digest(&crd)) {
            differing.push(name);
        }
    }
    if differing.is_empty() {
        m::ROOM_INSTALLS_NOTHING.text()
    } else {
        t!(m::ROOM_SCHEMA_DIFFERS, names = differing.join(", "))
    }
}

/// The first line of `run` and `install`: who, which namespace, and `on` which cluster
/// (context and server, before anything is written), with the command that makes kubectl's
/// namespace the same when it is not.
fn where_line(participant: &str, namespace: Option<&str>, kubectls: &str, on: &str) -> String {
    match namespace {
        None => t!(m::WHERE_ALL, participant = participant, on = on),
        Some(namespace) if namespace == kubectls => t!(
            m::WHERE,
            participant = participant,
            namespace = namespace,
            on = on
        ),
        Some(namespace) => t!(
            m::WHERE_NOT_KUBECTLS,
            participant = participant,
            namespace = namespace,
            on = on,
            context = kubectls
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_on_a_cluster_uses_the_participants_check_namespace_and_the_flags() {
        let on_a_cluster = check_options(2, true, "alice", true, Some(5));
        assert_eq!(on_a_cluster.namespace, room::check_namespace("alice"));
        assert_eq!(on_a_cluster.timeout, Duration::from_secs(5));
        assert!(on_a_cluster.force);
        let private = check_options(2, false, "alice", false, None);
        assert_eq!(private.namespace, "math-workshop-check");
        assert_eq!(private.timeout, Duration::from_secs(10));
        assert!(!private.force);
    }
}
