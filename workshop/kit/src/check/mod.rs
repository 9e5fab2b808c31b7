//! `math-workshop check N`: drives stage N with the real `kubectl` against the test API server
//! (or the current cluster), with your controllers of stages 1..=N running, and prints one
//! line per expectation, ✓ or ✗ with a hint.

mod answers;
mod evidence;
mod history;
mod kubectl;
mod namespace;
mod reader;
mod stages;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::Api;
use test_apiserver::TestServer;

use crate::context::Context;
use crate::messages as m;
use crate::runner::{self, Controllers};
use crate::t;
use crate::track::{Kind, Track};
use crate::{cluster, room};
use history::History;
pub use kubectl::{Kubectl, Ran};
pub(crate) use reader::Reader;

/// Where the checks run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// A fresh in-memory test API server, started for this check and gone after it.
    TestServer,
    /// The cluster of the current kubeconfig (minikube, kind), in a namespace of its own.
    Cluster,
}

/// How to check.
#[derive(Debug, Clone)]
pub struct Options {
    pub stage: u8,
    pub target: Target,
    /// How long each expectation may take to come true.
    pub timeout: Duration,
    /// Who checks: the owner of [`Options::namespace`] on a shared cluster.
    pub participant: String,
    /// The namespace the stage's objects are created in: the participant's own, fresh for
    /// every check (created and deleted, or in a room emptied: `namespace::claim`).
    pub namespace: String,
    /// Install the CRDs even over different ones that objects in other namespaces use.
    pub force: bool,
    /// Print each line as it is decided.
    pub print: bool,
    /// How often a probe looks again, and how long the foreground deletion's windows last
    /// ([`Pace::of`]).
    pub pace: Pace,
}

/// How fast a check may go on its target. A save waits for the check (`make workshop-watch`):
/// on the private test API server, in this process, a GET costs microseconds and a reconcile
/// a few milliseconds, so probes look again every 50 ms and the foreground deletion's grace and
/// counted windows last half a second each. A cluster is shared (thirty checks polling every
/// 50 ms would be 600 GETs a second) and slower (a real garbage collector and its watch lag), so
/// there a probe waits 200 ms and each window a second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pace {
    /// Between two looks of a probe that is not yet true.
    pub poll: Duration,
    /// After a foreground deletion begins: re-creations not counted (a correct controller's
    /// reconcile in flight may re-create once), then as long again counted.
    pub window: Duration,
}

/// How many timeouts a check waits in all for deletions that keep coming
/// ([`Session::wait_for_deletions`]): two minutes on a cluster.
pub const PATIENCE: u32 = 4;

/// Deletions that did not end within a check's patience.
#[derive(Debug)]
pub(crate) struct Deletions {
    /// Still there.
    pub left: Vec<String>,
    /// Gone while the check waited: the cluster was deleting, only slowly.
    pub gone: usize,
    pub waited: Duration,
    /// Whether the wait ran out (else it ended early: a controller stopped).
    pub ran_out: bool,
}

impl Pace {
    pub fn of(target: Target) -> Pace {
        match target {
            Target::TestServer => Pace {
                poll: Duration::from_millis(50),
                window: Duration::from_millis(500),
            },
            Target::Cluster => Pace {
                poll: Duration::from_millis(200),
                window: Duration::from_secs(1),
            },
        }
    }
}

impl Options {
    /// The options of a check of `stage` on `target`, by the participant this machine's user
    /// is ([`room::this_machines_participant`]).
    pub fn new(stage: u8, target: Target) -> Options {
        Options::for_participant(stage, target, &room::this_machines_participant())
    }

    /// The options of a check by `participant`: on a cluster, in
    /// `math-workshop-check-<participant>`; on the private test API server, in
    /// `math-workshop-check`.
    pub fn for_participant(stage: u8, target: Target, participant: &str) -> Options {
        let (timeout, namespace) = match target {
            Target::TestServer => (Duration::from_secs(10), "math-workshop-check".to_string()),
            Target::Cluster => (Duration::from_secs(30), room::check_namespace(participant)),
        };
        Options {
            stage,
            target,
            timeout,
            participant: participant.to_string(),
            namespace,
            force: false,
            print: true,
            pace: Pace::of(target),
        }
    }
}

/// One expectation's verdict.
#[derive(Debug, Clone)]
pub struct Line {
    pub ok: bool,
    pub text: String,
    /// For ✗: what to do about it.
    pub hint: Option<String>,
}

impl std::fmt::Display for Line {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.ok, &self.hint) {
            (true, _) => write!(f, "✓ {}", self.text),
            (false, Some(hint)) => write!(f, "✗ {} — {hint}", self.text),
            (false, None) => write!(f, "✗ {}", self.text),
        }
    }
}

/// Every verdict of one check.
#[derive(Debug, Default)]
pub struct Outcome {
    pub lines: Vec<Line>,
}

impl Outcome {
    pub fn passed(&self) -> usize {
        self.lines.iter().filter(|l| l.ok).count()
    }
    pub fn failed(&self) -> usize {
        self.lines.iter().filter(|l| !l.ok).count()
    }
    /// `N passed, M failed`.
    pub fn summary(&self) -> String {
        t!(m::SUMMARY, passed = self.passed(), failed = self.failed())
    }
    /// Whether some ✗ line contains `text` (its description or its hint).
    pub fn has_failure(&self, text: &str) -> bool {
        self.lines.iter().any(|l| {
            !l.ok && (l.text.contains(text) || l.hint.as_deref().is_some_and(|h| h.contains(text)))
        })
    }
}

/// The repository (this crate lives in `workshop/kit/`): kubectl runs there, so that the
/// commands it reports read `kubectl apply -f samples/number.yaml`.
pub fn repository() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    dir.canonicalize().unwrap_or(dir)
}

/// Runs the check of `opts.stage` on `track`'s code.
pub async fn check(track: &Track, opts: &Options) -> anyhow::Result<Outcome> {
    anyhow::ensure!(
        (1..=3).contains(&opts.stage),
        "{}",
        t!(m::NO_SUCH_STAGE, stage = opts.stage)
    );
    let server = match opts.target {
        Target::TestServer => Some(TestServer::start().await?),
        Target::Cluster => None,
    };
    let mut session = Session::open(track, opts, server.as_ref()).await?;
    if opts.print {
        println!("{}", header(track, opts, session.on.as_deref()));
    }
    let claimed = session.install().await;
    if claimed.is_some() {
        // What `kubectl get -w` shows from the stage's first apply on (answers.rs judges it).
        let kinds: Vec<Kind> = Kind::ALL
            .into_iter()
            .filter(|kind| kind.stage() <= opts.stage)
            .collect();
        session.history = Some(History::start(&session.reader, &kinds, opts.timeout).await);
        session.controllers = Some(Controllers::start(track, opts.stage, &session.ctx));
        match opts.stage {
            1 => stages::number(&mut session).await,
            2 => stages::tuple(&mut session).await,
            _ => stages::fermat(&mut session).await,
        }
    }
    if let Some(controllers) = session.controllers.take() {
        controllers.stop();
    }
    if let Some(history) = session.history.take() {
        history.stop();
    }
    if let Some(claimed) = claimed.filter(|_| opts.target == Target::Cluster) {
        let crds = crate::crds::generate(track);
        namespace::release(&session.reader.client, &crds, &opts.namespace, claimed).await;
    }
    if let Some(server) = server {
        server.shutdown().await;
    }
    if opts.print {
        println!("{}", session.outcome.summary());
    }
    Ok(session.outcome)
}

/// The check's first line: the stage, the code checked, and where (on a cluster, its context
/// and server: `cluster`).
fn header(track: &Track, opts: &Options, cluster: Option<&str>) -> String {
    let kind = Kind::ALL[usize::from(opts.stage - 1)];
    let on = match opts.target {
        Target::TestServer => m::ON_TEST_SERVER.text(),
        Target::Cluster => t!(
            m::ON_CLUSTER,
            cluster = cluster.unwrap_or_default(),
            namespace = opts.namespace,
            participant = opts.participant
        ),
    };
    t!(
        m::STAGE_HEADER,
        stage = opts.stage,
        kind = kind.name(),
        track = track.called(),
        file = track.file(kind),
        on = on
    )
}

/// One check in progress.
pub(crate) struct Session {
    kubectl: Kubectl,
    reader: Reader,
    ctx: Arc<Context>,
    track: Track,
    controllers: Option<Controllers>,
    opts: Options,
    outcome: Outcome,
    /// Objects the check deleted that did not come back, with the hint of that step: a later
    /// step that needs them names that cause, not "never appeared".
    not_back: BTreeMap<(String, String), String>,
    /// On a room's shared cluster ([`crate::organiser`]): the CRDs are the organiser's, and so
    /// is the check's namespace if the room was set up for the participant.
    in_a_room: bool,
    /// On a cluster: its context and server ([`cluster::Cluster::on`]).
    on: Option<String>,
    /// Every state of the stage's objects, as `kubectl get -w` shows them.
    history: Option<History>,
    /// Whether the stage's watch lines were given (from then on a loop is no longer evidence
    /// for other lines: the foreground deletion counts its re-creations itself).
    judged: bool,
    /// How long the last [`Session::wait`] took, and whether it ran out (else it ended early:
    /// a controller stopped).
    waited: (Duration, bool),
}

impl Session {
    /// A check's session on `server` (the private test API server), else on the cluster of
    /// the current kubeconfig: its client, kubectl, and whether the cluster is a room's.
    async fn open(
        track: &Track,
        opts: &Options,
        server: Option<&TestServer>,
    ) -> anyhow::Result<Session> {
        let (client, on) = match server {
            Some(server) => (server.client(), None),
            None => {
                let instead = m::CHECK_WITHOUT_CLUSTER.text();
                let cluster = cluster::connect_as(&instead, Some(&opts.participant)).await?;
                (cluster.client, Some(cluster.on))
            }
        };
        let kubeconfig = server.map(TestServer::kubeconfig_path);
        let mut kubectl = Kubectl::new(kubeconfig.as_deref(), &opts.namespace)?;
        if let Ok(version) = client.apiserver_version().await
            && kubectl::validates_by_download(&version.major, &version.minor)
        {
            kubectl.apply_unvalidated();
        }
        let in_a_room = server.is_none() && crate::organiser::is_a_room(&client).await;
        Ok(Session {
            kubectl,
            // The controllers look after the check's namespace only: on a shared cluster,
            // everyone else's objects are not theirs to reconcile.
            ctx: runner::context(client.clone(), Some(opts.namespace.clone()), track),
            reader: Reader {
                client,
                namespace: opts.namespace.clone(),
            },
            track: track.clone(),
            controllers: None,
            opts: opts.clone(),
            outcome: Outcome::default(),
            not_back: BTreeMap::new(),
            in_a_room,
            on,
            history: None,
            judged: false,
            waited: (opts.timeout, true),
        })
    }

    fn line(&mut self, line: Line) {
        if self.opts.print {
            println!("{line}");
        }
        self.outcome.lines.push(line);
    }

    fn pass(&mut self, text: impl Into<String>) {
        self.line(Line {
            ok: true,
            text: text.into(),
            hint: None,
        });
    }

    /// A ✗ line. When the evidence shows its cause (a controller of `kinds` stopped, children
    /// created over and over, an apply refused with 409: [`Session::evident`]), the hint leads
    /// with that; otherwise `hint`, with the last reconcile error of those kinds if any.
    fn fail(&mut self, kinds: &[Kind], text: impl Into<String>, hint: impl Into<String>) {
        let hint = match self.evident(kinds) {
            Some(evident) => evident,
            None => {
                let mut hint = hint.into();
                for kind in kinds {
                    if let Some(error) = self.ctx.last_error(kind.name()) {
                        hint.push_str(&t!(m::LAST_ERROR, kind = kind.name(), error = error));
                    }
                }
                hint
            }
        };
        self.line(Line {
            ok: false,
            text: text.into(),
            hint: Some(hint),
        });
    }

    /// `pass(text)` or `fail(kinds, text, hint)`.
    fn verdict(
        &mut self,
        ok: bool,
        kinds: &[Kind],
        text: impl Into<String>,
        hint: impl Into<String>,
    ) {
        if ok {
            self.pass(text);
        } else {
            self.fail(kinds, text, hint);
        }
    }

    /// Why one of these kinds' controllers stopped, as a hint.
    fn stopped(&mut self, kinds: &[Kind]) -> Option<String> {
        let controllers = self.controllers.as_mut()?;
        kinds.iter().find_map(|kind| {
            controllers.stopped(*kind).map(|why| {
                t!(
                    m::CONTROLLER_PANICKED,
                    kind = kind.name(),
                    why = why,
                    file = self.track.file(*kind)
                )
            })
        })
    }

    /// Polls `probe` until it answers `Ok`, the timeout passes, or a controller of `kinds`
    /// stops (then nothing will change). The last `Err` says what was seen instead.
    async fn wait<T, E>(
        &mut self,
        kinds: &[Kind],
        mut probe: impl AsyncFnMut() -> Result<T, E>,
    ) -> Result<T, E> {
        let start = Instant::now();
        let deadline = start + self.opts.timeout;
        loop {
            let seen = match probe().await {
                Ok(value) => return Ok(value),
                Err(seen) => seen,
            };
            let ran_out = Instant::now() >= deadline;
            if ran_out || self.stopped(kinds).is_some() {
                self.waited = (start.elapsed(), ran_out);
                return Err(seen);
            }
            tokio::time::sleep(self.opts.pace.poll).await;
        }
    }

    /// [`Session::wait`] for objects that a cluster deletes at its own pace (the garbage
    /// collector): `present` lists those still there, and the timeout counts from the last
    /// look that found fewer, up to [`PATIENCE`] timeouts in all. On a busy shared cluster
    /// kube-controller-manager deletes about 20 objects a second for the whole room.
    async fn wait_for_deletions(
        &mut self,
        kinds: &[Kind],
        mut present: impl AsyncFnMut() -> Vec<String>,
    ) -> Result<(), Deletions> {
        let start = Instant::now();
        let cap = start + self.opts.timeout * PATIENCE;
        let mut deadline = start + self.opts.timeout;
        let mut left = present().await;
        let (at_first, mut fewest) = (left.len(), left.len());
        while !left.is_empty() {
            let now = Instant::now();
            if left.len() < fewest {
                deadline = (now + self.opts.timeout).min(cap);
                fewest = left.len();
            }
            if now >= deadline || self.stopped(kinds).is_some() {
                return Err(Deletions {
                    gone: at_first - left.len(),
                    left,
                    waited: now - start,
                    ran_out: now >= deadline,
                });
            }
            tokio::time::sleep(self.opts.pace.poll).await;
            left = present().await;
        }
        Ok(())
    }

    /// The hint for deletions the cluster is making, slowly ([`Session::wait_for_deletions`]).
    fn slow_deletions(&self, gone: usize, left: usize, waited: Duration) -> String {
        t!(
            m::GC_SLOW,
            left = left,
            gone = gone,
            seconds = waited.as_secs()
        )
    }

    /// "after 10 s" (or "after 0.3 s" when the last wait ended early), for messages.
    fn after(&self) -> String {
        let (waited, ran_out) = self.waited;
        t!(m::AFTER, seconds = evidence::seconds(waited, ran_out))
    }

    /// `kubectl ARGS`, recorded as a ✓ when it succeeds, a ✗ (with its error) when not.
    async fn kubectl(&mut self, kinds: &[Kind], args: &[&str], hint: &str) -> bool {
        let ran = self.kubectl.run(args).await;
        let shown = self.kubectl.shown(args);
        if ran.ok {
            self.pass(shown);
        } else {
            let said = self.kubectl.said(&ran);
            self.fail(
                kinds,
                t!(m::COMMAND_FAILED, command = shown, said = said),
                hint.to_string(),
            );
        }
        ran.ok
    }

    /// Claims the check's namespace, then installs the CRDs generated from the track's types
    /// with `kubectl apply` (unless they would replace different ones that others use). Who
    /// made the namespace, or `None` (after a ✗) when either fails: nothing else can be checked.
    async fn install(&mut self) -> Option<namespace::Claimed> {
        let ns = self.opts.namespace.clone();
        let client = self.reader.client.clone();
        let crds = crate::crds::generate(&self.track);
        let who = &self.opts.participant;
        let claimed = match namespace::claim(&client, &crds, &ns, who, self.in_a_room).await {
            Ok(claimed) => claimed,
            Err(why) => {
                self.fail(&[], t!(m::CREATE_CHECK_NAMESPACE, namespace = ns), why);
                return None;
            }
        };
        if self.opts.stage == 1 {
            stages::number_crd(self);
        }
        if self.in_a_room {
            // The organiser's CRDs are the room's: a participant may not change them.
            self.pass(match claimed {
                namespace::Claimed::Organisers => t!(m::ROOM_CRDS, namespace = ns),
                namespace::Claimed::Made => t!(m::ROOM_CRDS_NAMESPACE_MADE, namespace = ns),
            });
            return Some(claimed);
        }
        self.install_crds(&crds).await.then_some(claimed)
    }

    /// Installs the CRDs generated from the track's types with `kubectl apply`, those missing
    /// or different (unless they would replace different ones that others use). False (after
    /// a ✗) when that fails.
    async fn install_crds(&mut self, crds: &[CustomResourceDefinition]) -> bool {
        let ns = self.opts.namespace.clone();
        let client = self.reader.client.clone();
        let me = room::Signature::new(&self.opts.participant);
        let install = match room::may_install(&client, crds, &ns, &me, self.opts.force).await {
            Ok(install) => install,
            Err(why) => {
                self.fail(&[], m::INSTALL_CRDS.text(), why);
                return false;
            }
        };
        for note in &install.notes {
            if self.opts.print {
                println!("  ({note})");
            }
        }
        let yaml = match to_write(crds, &install.writes) {
            Ok(yaml) => yaml,
            Err(e) => {
                self.fail(&[], m::GENERATE_CRDS.text(), e.to_string());
                return false;
            }
        };
        let ran = if yaml.is_empty() {
            None
        } else {
            Some(
                self.kubectl
                    .run_with(&["apply", "-f", "-"], Some(&yaml))
                    .await,
            )
        };
        if let Some(ran) = ran.as_ref().filter(|ran| !ran.ok) {
            self.fail(
                &[],
                t!(m::CRD_APPLY_FAILED, said = ran.said()),
                m::CRD_APPLY_HINT.text(),
            );
            return false;
        }
        let names: Vec<String> = crds
            .iter()
            .filter_map(|c| c.metadata.name.clone())
            .collect();
        if let Err(why) = established(&client, &names, self.opts.pace.poll).await {
            self.fail(&[], m::INSTALL_CRDS.text(), why);
            return false;
        }
        let track = self.track.called();
        self.pass(if ran.is_some() {
            t!(m::CRDS_INSTALLED, track = track, namespace = ns)
        } else {
            t!(m::CRDS_ALREADY, track = track, namespace = ns)
        });
        true
    }
}

/// The YAML documents of the CRDs named in `writes`. Only what is missing or different: on a
/// shared cluster, the same CRDs installed by someone else are left as they are.
fn to_write(crds: &[CustomResourceDefinition], writes: &[String]) -> serde_yaml::Result<String> {
    let mut yaml = String::new();
    for crd in crds {
        let name = crd.metadata.name.clone().unwrap_or_default();
        if writes.contains(&name) {
            yaml.push_str(&format!("---\n{}", serde_yaml::to_string(crd)?));
        }
    }
    Ok(yaml)
}

/// Waits (30 s at most) until every CRD of `names` is `Established`, so that the stage's first
/// `kubectl apply` finds its kind. Through the client the check already holds, not a `kubectl
/// wait`: that was one more kubectl process (0.2–0.5 s) on every save in `make workshop-watch`.
/// What it saw last, when not.
async fn established(
    client: &kube::Client,
    names: &[String],
    poll: Duration,
) -> Result<(), String> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut waiting = Vec::new();
        for name in names {
            match crds.get_opt(name).await {
                Ok(Some(crd)) if is_established(&crd) => {}
                Ok(_) => waiting.push(t!(m::CRD_NOT_ESTABLISHED, name = name)),
                Err(e) => waiting.push(format!("crd/{name}: {e}")),
            }
        }
        if waiting.is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(waiting.join("; "));
        }
        tokio::time::sleep(poll).await;
    }
}

/// Whether the API server serves the CRD's kind: its `Established` condition is `True`.
fn is_established(crd: &CustomResourceDefinition) -> bool {
    crd.status
        .as_ref()
        .and_then(|status| status.conditions.as_ref())
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
        })
}
