//! `math-workshop run` (`make workshop-run`): the learner's controllers, on a test API server of
//! their own or in their namespace of a cluster, until Ctrl-C. On a cluster they stop rather
//! than fight another controller that works in the same namespace.

use std::sync::Arc;
use std::time::Duration;

use test_apiserver::TestServer;
use tokio::signal::unix::{Signal, SignalKind, signal};

use super::where_line;
use crate::context::Context;
use crate::messages as m;
use crate::runner::{self, Controllers};
use crate::track::Track;
use crate::{cluster, crds, organiser, room, room_status, t};

/// Which namespaces `run` looks after.
pub(super) enum Scope {
    /// The current kubeconfig context's namespace (where `kubectl apply` puts things).
    Context,
    Namespace(String),
    All,
}

impl Scope {
    /// From `--namespace` and `--all-namespaces` (clap lets one of them through at most).
    pub(super) fn of(namespace: Option<String>, all_namespaces: bool) -> Scope {
        match (namespace, all_namespaces) {
            (_, true) => Scope::All,
            (Some(namespace), false) => Scope::Namespace(namespace),
            (None, false) => Scope::Context,
        }
    }
}

/// The API server the controllers talk to.
struct Connected {
    client: kube::Client,
    /// kubectl's namespace there (the current context's, `default` when it names none).
    kubectls: String,
    /// The namespace the current context names, if it names one.
    context_namespace: Option<String>,
    /// Which cluster: the context and its server, or the test API server of its own.
    on: String,
}

/// How many 500 ms ticks of the runner pass between two looks for another controller in its
/// namespace (5 s: a LIST per kind, thirty runners on one cluster are 18 LISTs a second).
const LOOKOUT_TICKS: u32 = 10;

/// How many 500 ms ticks pass between two heartbeats ([`room_status::RENEW_EVERY`]).
const HEARTBEAT_TICKS: u32 = 10;

/// Runs the controllers until Ctrl-C (or until every one of them stopped, or another
/// controller turns out to work in the same namespace).
pub(super) async fn run(
    track: &Track,
    stage: u8,
    test_server: bool,
    scope: Scope,
    participant: &str,
) -> anyhow::Result<()> {
    let server = if test_server {
        Some(start_test_server(track, &scope, participant).await?)
    } else {
        None
    };
    let connected = match &server {
        Some(server) => Connected {
            client: server.client(),
            kubectls: "default".to_string(),
            context_namespace: None,
            on: server.url(),
        },
        None => connect(participant).await?,
    };
    let namespace = watched_namespace(
        scope,
        server.is_some(),
        &connected.kubectls,
        connected.context_namespace.as_deref(),
    );
    if server.is_none() {
        prepare_cluster(&connected, track, stage, namespace.as_deref(), participant).await?;
    }
    let beat = heartbeat_namespace(server.is_some(), &namespace, &connected.kubectls);
    first_heartbeat(&connected.client, beat.as_deref(), participant).await;
    let ctx = runner::context(connected.client, namespace.clone(), track);
    let mut controllers = Controllers::start(track, stage, &ctx);
    let watching = match &namespace {
        Some(namespace) => t!(m::SCOPE_NAMESPACE, namespace = namespace),
        None => m::SCOPE_ALL.text(),
    };
    tracing::info!(
        target: "math_workshop",
        stage,
        code = track.dir,
        "{}",
        t!(m::RUNNING, scope = watching)
    );
    // Another controller that starts in this namespace after us (both found it empty) shows
    // in the statuses it writes: then ours stop, rather than fight over the same objects.
    let lookout = namespace.as_deref().filter(|_| server.is_none());
    let places = (lookout, beat.as_deref());
    let others = supervise(&ctx, &mut controllers, (track, stage), places, participant).await;
    if let Some(namespace) = beat.as_deref() {
        // Stopped: the finished manager, started next, need not wait for the lease to run out.
        if let Err(e) = room_status::release(&ctx.client, namespace).await {
            tracing::debug!(target: "math_workshop", error = %room::said(&e), "heartbeat release");
        }
    }
    finish(controllers, server, others).await
}

/// The first heartbeat, before the controllers write anything: a finished manager started a
/// moment later must find it beside the statuses they write (the reference solutions answer
/// the samples in less than the half second before the first tick).
async fn first_heartbeat(client: &kube::Client, beat: Option<&str>, participant: &str) {
    if let Some(namespace) = beat {
        beat_once(client, namespace, participant).await;
    }
}

/// One heartbeat in `namespace`: the organiser's table (make workshop-room-status) and the
/// finished manager read it.
async fn beat_once(client: &kube::Client, namespace: &str, participant: &str) {
    if let Err(e) = room_status::heartbeat(client, namespace, participant).await {
        tracing::debug!(target: "math_workshop", error = %room::said(&e), "heartbeat");
    }
}

/// Where the runner's heartbeat goes: on a cluster, the namespace it looks after (kubectl's
/// when it looks after every one). The organiser's table and the finished manager read it.
fn heartbeat_namespace(
    on_test_server: bool,
    namespace: &Option<String>,
    kubectls: &str,
) -> Option<String> {
    match namespace {
        _ if on_test_server => None,
        Some(namespace) => Some(namespace.clone()),
        None => Some(kubectls.to_string()),
    }
}

/// When the run ends: the controllers stop and the test server goes; the run fails with what
/// ended it, unless that was Ctrl-C.
async fn finish(
    mut controllers: Controllers,
    server: Option<TestServer>,
    others: Option<String>,
) -> anyhow::Result<()> {
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

/// `--test-server`: says who and where first, as on a cluster (nothing is printed after the
/// KUBECONFIG line, which a script may stop reading at), then starts a test API server with the
/// track's CRDs and says where it is.
async fn start_test_server(
    track: &Track,
    scope: &Scope,
    participant: &str,
) -> anyhow::Result<TestServer> {
    let namespace = match scope {
        Scope::All => None,
        Scope::Namespace(namespace) => Some(namespace.as_str()),
        Scope::Context => Some("default"),
    };
    println!(
        "{}",
        where_line(participant, namespace, "default", &m::ON_TEST_SERVER.text())
    );
    let server = crds::on_a_test_server(track).await?;
    println!(
        "{}",
        t!(
            m::TEST_SERVER_STARTED,
            url = server.url(),
            kubeconfig = server.kubeconfig_path().display()
        )
    );
    Ok(server)
}

/// The cluster of the current kubeconfig, every request signed as `participant`'s.
async fn connect(participant: &str) -> anyhow::Result<Connected> {
    let instead = m::RUN_WITHOUT_CLUSTER.text();
    let cluster = cluster::connect_as(&instead, Some(participant)).await?;
    Ok(Connected {
        client: cluster.client,
        kubectls: cluster.namespace,
        context_namespace: cluster.context_namespace,
        on: cluster.on,
    })
}

/// The namespace the controllers look after (`None`: every one). The context's is kubectl's
/// on a test server of our own, and on a cluster the one [`room::your_namespace`] gives.
fn watched_namespace(
    scope: Scope,
    on_test_server: bool,
    kubectls: &str,
    context_namespace: Option<&str>,
) -> Option<String> {
    match scope {
        Scope::Context if on_test_server => Some(kubectls.to_string()),
        Scope::Context => Some(room::your_namespace(None, context_namespace)),
        Scope::Namespace(namespace) => Some(namespace),
        Scope::All => None,
    }
}

/// On a cluster, before anything runs: never every namespace of a room; who and where; the
/// CRDs the stages need; the namespace, and no other controller already in it.
async fn prepare_cluster(
    connected: &Connected,
    track: &Track,
    stage: u8,
    namespace: Option<&str>,
    participant: &str,
) -> anyhow::Result<()> {
    let client = &connected.client;
    let in_a_room = organiser::is_a_room(client).await;
    if namespace.is_none() && in_a_room {
        anyhow::bail!("{}", m::ROOM_NOT_ALL_NAMESPACES.text());
    }
    println!(
        "{}",
        where_line(participant, namespace, &connected.kubectls, &connected.on)
    );
    crds_installed(client, track, stage, in_a_room).await?;
    let Some(namespace) = namespace else {
        return Ok(());
    };
    room::ensure_namespace(client, namespace, participant)
        .await
        .map_err(|why| anyhow::anyhow!(why))?;
    if let Some(foreign) = others_in(client, track, stage, namespace, participant).await? {
        anyhow::bail!(
            "{}",
            t!(
                m::RUN_LEAVES_ALONE,
                namespace = namespace,
                foreign = foreign
            )
        );
    }
    Ok(())
}

/// Every 500 ms: whether a controller still runs; on a cluster the runner's heartbeat (in
/// `beat`) and a look for another controller (in `lookout`, the namespace looked after). Returns at Ctrl-C (or SIGTERM: a
/// terminal closed, a test's stop) or when none runs (`None`), or with what says that another
/// controller showed up.
async fn supervise(
    ctx: &Arc<Context>,
    controllers: &mut Controllers,
    (track, stage): (&Track, u8),
    (lookout, beat): (Option<&str>, Option<&str>),
    participant: &str,
) -> Option<String> {
    let mut ticks: u32 = 0;
    // Listeners made once, for the whole run: a Ctrl-C that comes while a heartbeat or a
    // lookout request is on its way is kept for the next wait (a `ctrl_c()` made per wait
    // missed it, and the runner went on until a second Ctrl-C).
    let mut stops =
        [SignalKind::interrupt(), SignalKind::terminate()].map(|kind| signal(kind).ok());
    loop {
        if stop_asked(&mut stops).await {
            return None;
        }
        if !controllers.any_running() {
            tracing::error!(target: "math_workshop", "{}", m::EVERY_CONTROLLER_STOPPED.text());
            return None;
        }
        ticks = ticks.wrapping_add(1);
        if let Some(namespace) = beat.filter(|_| ticks.is_multiple_of(HEARTBEAT_TICKS)) {
            beat_once(&ctx.client, namespace, participant).await;
        }
        let Some(namespace) = lookout.filter(|_| ticks.is_multiple_of(LOOKOUT_TICKS)) else {
            continue;
        };
        match others_in(&ctx.client, track, stage, namespace, participant).await {
            Ok(None) => {}
            Ok(Some(foreign)) => {
                return Some(t!(
                    m::RUN_STOPS_FOR_OTHERS,
                    namespace = namespace,
                    foreign = foreign
                ));
            }
            Err(e) => tracing::warn!(target: "math_workshop", "{e}"),
        }
    }
}

/// Waits 500 ms; whether Ctrl-C or SIGTERM (a terminal closed, a test's stop) came meanwhile
/// or since the last wait.
async fn stop_asked([interrupt, terminate]: &mut [Option<Signal>; 2]) -> bool {
    tokio::select! {
        _ = received(interrupt) => true,
        _ = received(terminate) => true,
        _ = tokio::time::sleep(Duration::from_millis(500)) => false,
    }
}

/// The next delivery of `signal` (never, without a listener).
async fn received(signal: &mut Option<Signal>) {
    match signal {
        Some(signal) => {
            signal.recv().await;
        }
        None => std::future::pending().await,
    }
}

/// Fails with what to do when a CRD the stages need is not installed in the cluster (the
/// controllers would otherwise only log watch errors), and warns when an installed one is not
/// what the types generate now (they changed since `make workshop-install`; `in_a_room`, they
/// differ from the organiser's, which `make workshop-install` does not change).
async fn crds_installed(
    client: &kube::Client,
    track: &Track,
    stage: u8,
    in_a_room: bool,
) -> anyhow::Result<()> {
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
            let outdated = if in_a_room {
                m::ROOM_CRD_DIFFERS
            } else {
                m::CRD_OUTDATED
            };
            tracing::warn!(
                target: "math_workshop",
                "{}",
                t!(outdated, name = name, track = track.called())
            );
        }
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runner_watches_the_namespace_kubectl_uses() {
        let context = || Scope::of(None, false);
        // Its own test server: kubectl's there.
        assert_eq!(
            watched_namespace(context(), true, "default", None).as_deref(),
            Some("default")
        );
        // kind's kubeconfig names no namespace: default, as kubectl; a room's names the
        // participant's.
        assert_eq!(
            watched_namespace(context(), false, "default", None).as_deref(),
            Some("default")
        );
        assert_eq!(
            watched_namespace(context(), false, "alice", Some("alice")).as_deref(),
            Some("alice")
        );
        let asked = Scope::of(Some("mine".to_string()), false);
        assert_eq!(
            watched_namespace(asked, false, "default", Some("alice")).as_deref(),
            Some("mine")
        );
        assert_eq!(
            watched_namespace(Scope::of(None, true), false, "default", None),
            None
        );
    }
}
