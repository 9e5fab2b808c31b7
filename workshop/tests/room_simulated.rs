//! The room, simulated (issue 29): N participants on one API server, each with the reference
//! solutions, each running `math-workshop run` and `math-workshop check 3 --cluster` at once,
//! each deleting children and editing their specs in their own namespace and waiting for their
//! own runner to put them back. Then, from the API server's request log, that nobody wrote
//! outside their own namespaces, and that every heal was written by the participant's own
//! runner: the runner and the checks sign every request `math-workshop-<participant>` (field
//! manager and User-Agent), the participant's own hands here `hands-<participant>`.
//!
//! The room is set up first as `make workshop-room` sets it up: each participant's runner,
//! check and hands use only their own kubeconfig, whose ServiceAccount may act in their own
//! namespaces alone (on the test API server, RBAC enforced).
//!
//! N = 5 on a fresh test API server in `cargo test`. `ROOM=30 KUBECONFIG=<file> cargo test -p
//! math-workshop --test room_simulated -- --nocapture` runs the same room against that cluster
//! (the kubeconfig must be the cluster's administrator's: the test sets the room up with it);
//! without a request log, the objects' managedFields stand in for it. `ROOM_APISERVER_PID=<pid>` adds the CPU time
//! that process spent during the room. It prints each participant's check result, heal p50 and
//! p99 and the runners' RSS.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime};

use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams,
};
use math_workshop::{crds, organiser, solutions};
use serde_json::{Value, json};
use test_apiserver::{RequestRecord, TestServer, Verb};
use tokio::io::AsyncBufReadExt;

/// How many participants: `ROOM`, else 5.
fn size() -> usize {
    std::env::var("ROOM")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(5)
}

/// The room's cluster: a fresh test API server, or the one of `KUBECONFIG` when `ROOM` is set.
enum Cluster {
    Test {
        server: TestServer,
        /// The server's kubeconfig without a namespace, as a room's shared one usually is.
        kubeconfig: PathBuf,
        _dir: tempfile::TempDir,
    },
    Given(PathBuf),
}

impl Cluster {
    async fn open() -> Cluster {
        let given = std::env::var_os("KUBECONFIG").filter(|k| !k.is_empty());
        if let (Ok(_), Some(kubeconfig)) = (std::env::var("ROOM"), given) {
            return Cluster::Given(PathBuf::from(kubeconfig));
        }
        // The organiser installed the workshop's CRDs once.
        let server = crds::on_a_test_server(&solutions::track())
            .await
            .expect("a test API server with the workshop's CRDs");
        let dir = tempfile::tempdir().expect("a temporary directory");
        let text = std::fs::read_to_string(server.kubeconfig_path()).expect("the kubeconfig");
        let kept: Vec<&str> = text
            .lines()
            .filter(|line| line.trim() != "namespace: default")
            .collect();
        let kubeconfig = dir.path().join("room.kubeconfig");
        std::fs::write(&kubeconfig, kept.join("\n")).expect("write the kubeconfig");
        Cluster::Test {
            server,
            kubeconfig,
            _dir: dir,
        }
    }

    fn kubeconfig(&self) -> &Path {
        match self {
            Cluster::Test { kubeconfig, .. } => kubeconfig,
            Cluster::Given(kubeconfig) => kubeconfig,
        }
    }

    /// A client of the organiser's kubeconfig that signs its requests as `agent`.
    async fn client(&self, agent: &str) -> kube::Client {
        client_of(self.kubeconfig(), agent).await
    }

    /// The room set up as `make workshop-room` does, with the organiser's kubeconfig; on the
    /// test API server, RBAC enforced from then on. Each participant's kubeconfig is in `dir`.
    async fn set_up_room(&self, names: &[String], dir: &Path) {
        let kubeconfig =
            kube::config::Kubeconfig::read_from(self.kubeconfig()).expect("the kubeconfig reads");
        let (_, entry) = organiser::current_cluster(&kubeconfig).expect("a current cluster");
        let server: http::Uri = entry
            .server
            .as_deref()
            .unwrap_or_default()
            .parse()
            .expect("the server's address");
        let cluster =
            organiser::files::portable_cluster(&entry, &server).expect("the authority is readable");
        let crds = crds::generate(&solutions::track());
        let client = self.client("organiser").await;
        let room = organiser::Room {
            crds: &crds,
            cluster: &cluster,
            participants: names,
            dir,
            token_hours: organiser::TOKEN_HOURS,
        };
        organiser::set_up(&client, &room)
            .await
            .expect("the organiser sets the room up");
        if let Cluster::Test { server, .. } = self {
            server.enforce_rbac();
        }
    }
}

/// A client of `kubeconfig` that signs its requests as `agent` (a participant's hands).
async fn client_of(kubeconfig: &Path, agent: &str) -> kube::Client {
    let kubeconfig = kube::config::Kubeconfig::read_from(kubeconfig).expect("the kubeconfig reads");
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .expect("the kubeconfig is usable");
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_str(&format!("{agent}/0")).expect("a header value"),
    ));
    kube::Client::try_from(config).expect("a client")
}

fn resource(kind: &str) -> ApiResource {
    let gvk = GroupVersionKind::gvk("math.example.com", "v1beta1", kind);
    ApiResource::from_gvk_with_plural(&gvk, &format!("{}s", kind.to_lowercase()))
}

/// One heal: what the participant did, to what, when, and how long until it was back.
#[derive(Debug, Clone)]
struct Heal {
    what: String,
    namespace: String,
    plural: String,
    name: String,
    at: SystemTime,
    took: Duration,
}

/// What one participant saw.
#[derive(Debug)]
struct Seen {
    name: String,
    first_line: String,
    check_code: Option<i32>,
    check_summary: String,
    check_failures: Vec<String>,
    heals: Vec<Heal>,
    unhealed: Vec<String>,
    runner_rss_kib: u64,
}

/// The participant's own namespace and their checks' one.
fn namespaces(name: &str) -> (String, String) {
    (
        format!("math-workshop-{name}"),
        format!("math-workshop-check-{name}"),
    )
}

/// `math-workshop ARGS` against the room's kubeconfig.
fn workshop(kubeconfig: &Path, args: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_math-workshop"));
    cmd.env("LC_ALL", "C.UTF-8")
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    cmd
}

/// The resident set of a process, from /proc (0 where there is none).
fn rss_kib(pid: Option<u32>) -> u64 {
    let Some(pid) = pid else { return 0 };
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|kb| kb.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// The CPU time (user + system) a process has used, from /proc/<pid>/stat.
fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

/// Polls `probe` every 20 ms until it holds (60 s at most); how long that took.
async fn until(mut probe: impl AsyncFnMut() -> bool) -> Option<Duration> {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(60) {
        if probe().await {
            return Some(started.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    None
}

/// What a participant does to one child: (what, its API, its plural, its name, the edit of its
/// spec, or `None` to delete it).
type Step<'a> = (
    &'a str,
    &'a Api<DynamicObject>,
    &'a str,
    &'a str,
    Option<Value>,
);

/// One participant's session: runner and check at once, objects of their own, two deletions
/// and two spec edits, each healed by their runner.
async fn participant(kubeconfig: PathBuf, hands: kube::Client, name: String) -> Seen {
    let (own, _) = namespaces(&name);
    let mut runner = workshop(
        &kubeconfig,
        &["run", "--stage", "3", "--solution", "--participant", &name],
    )
    .spawn()
    .expect("the runner starts");
    let stdout = runner.stdout.take().expect("stdout is piped");
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let first_line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
        .await
        .ok()
        .and_then(|line| line.ok().flatten())
        .unwrap_or_default();
    let check = workshop(
        &kubeconfig,
        &[
            "check",
            "3",
            "--cluster",
            "--solution",
            "--participant",
            &name,
        ],
    )
    .output();
    let work = async {
        let numbers =
            Api::<DynamicObject>::namespaced_with(hands.clone(), &own, &resource("Number"));
        let tuples = Api::<DynamicObject>::namespaced_with(hands.clone(), &own, &resource("Tuple"));
        let fermats =
            Api::<DynamicObject>::namespaced_with(hands.clone(), &own, &resource("Fermat"));
        // The runner creates the namespace after its first line.
        let tuple: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "math.example.com/v1beta1", "kind": "Tuple",
            "metadata": {"name": "tuple-sample"}, "spec": {"numbers": [0, 1, 2]}
        }))
        .expect("a Tuple");
        let fermat: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "math.example.com/v1beta1", "kind": "Fermat",
            "metadata": {"name": "fermat-sample"}, "spec": {"number": 5}
        }))
        .expect("a Fermat");
        until(async || tuples.create(&PostParams::default(), &tuple).await.is_ok()).await;
        until(async || {
            fermats
                .create(&PostParams::default(), &fermat)
                .await
                .is_ok()
        })
        .await;
        let mut heals = Vec::new();
        let mut unhealed = Vec::new();
        let plan: [Step; 4] = [
            ("delete", &numbers, "numbers", "tuple-sample-0", None),
            (
                "edit",
                &numbers,
                "numbers",
                "tuple-sample-1",
                Some(json!({"spec": {"value": 99}})),
            ),
            ("delete", &tuples, "tuples", "fermat-sample-1-and-4", None),
            (
                "edit",
                &tuples,
                "tuples",
                "fermat-sample-2-and-3",
                Some(json!({"spec": {"numbers": [7, 7]}})),
            ),
        ];
        for (what, api, plural, child, edit) in plan {
            let there = async || api.get_opt(child).await.ok().flatten();
            if until(async || there().await.is_some()).await.is_none() {
                unhealed.push(format!("{plural}/{child} never appeared"));
                continue;
            }
            let before = there()
                .await
                .map(|o| (o.metadata.uid.clone(), o.data["spec"].clone()));
            let at = SystemTime::now();
            let done = match &edit {
                None => api
                    .delete(child, &DeleteParams::default())
                    .await
                    .map(|_| ()),
                Some(patch) => api
                    .patch(child, &PatchParams::default(), &Patch::Merge(patch))
                    .await
                    .map(|_| ()),
            };
            if let Err(e) = done {
                unhealed.push(format!("{what} {plural}/{child}: {e}"));
                continue;
            }
            let healed = until(async || match (there().await, &before) {
                (Some(now), Some((uid, spec))) => match edit {
                    None => now.metadata.uid != *uid,
                    Some(_) => now.data["spec"] == *spec,
                },
                _ => false,
            })
            .await;
            match healed {
                Some(took) => heals.push(Heal {
                    what: format!("{what} {plural}/{child}"),
                    namespace: own.clone(),
                    plural: plural.to_string(),
                    name: child.to_string(),
                    at,
                    took,
                }),
                None => unhealed.push(format!("{what} {plural}/{child}: not put back in 60 s")),
            }
        }
        (heals, unhealed)
    };
    let (check, (heals, unhealed)) = tokio::join!(check, work);
    let runner_rss_kib = rss_kib(runner.id());
    let _ = runner.kill().await;
    let check = check.expect("the check runs");
    let text = String::from_utf8_lossy(&check.stdout).into_owned();
    Seen {
        name,
        first_line,
        check_code: check.status.code(),
        check_summary: text.lines().last().unwrap_or_default().to_string(),
        check_failures: text
            .lines()
            .filter(|l| l.starts_with('✗'))
            .map(str::to_string)
            .chain(
                String::from_utf8_lossy(&check.stderr)
                    .lines()
                    .map(str::to_string),
            )
            .collect(),
        heals,
        unhealed,
        runner_rss_kib,
    }
}

/// Who sent a request: the participant whose runner or check (`math-workshop-<p>/…`) or hands
/// (`hands-<p>/…`) it was, or `None` for kubectl (the checks drive kubectl, unsigned).
fn sender(record: &RequestRecord) -> Option<(&str, &str)> {
    let agent = record.user_agent.split('/').next().unwrap_or_default();
    if let Some(who) = agent.strip_prefix("math-workshop-") {
        return Some(("controller", who));
    }
    agent.strip_prefix("hands-").map(|who| ("hands", who))
}

/// The namespace a write went to (a namespace's own, for namespaces).
fn namespace_of(record: &RequestRecord) -> Option<&str> {
    match (record.resource.as_str(), record.namespace.as_deref()) {
        (_, Some(ns)) => Some(ns),
        ("namespaces", None) => record.name.as_deref(),
        _ => None,
    }
}

/// From the request log: writes outside the writer's namespaces, and heals that the
/// participant's own runner did not write.
fn misdeeds(log: &[RequestRecord], seen: &[Seen]) -> Vec<String> {
    let writes: Vec<&RequestRecord> = log
        .iter()
        .filter(|r| r.verb.is_write() && r.status < 400 && !r.dry_run)
        .collect();
    let checks: Vec<String> = seen.iter().map(|s| namespaces(&s.name).1).collect();
    let mut wrong = Vec::new();
    for r in &writes {
        // A namespace's create names it in the body only: they are counted below.
        if r.resource == "namespaces" && r.verb == Verb::Create {
            continue;
        }
        let ns = namespace_of(r).unwrap_or("(cluster)");
        let allowed = match sender(r) {
            Some(("hands", who)) => ns == namespaces(who).0,
            Some((_, who)) => {
                let (own, check) = namespaces(who);
                ns == own || ns == check
            }
            None => checks.iter().any(|c| c == ns),
        };
        if !allowed {
            wrong.push(format!(
                "{} {} by {:?} outside its namespaces",
                r.method, r.path, r.user_agent
            ));
        }
    }
    let created = writes
        .iter()
        .filter(|r| r.resource == "namespaces" && r.verb == Verb::Create)
        .count();
    // The organiser made every participant's two namespaces; with their rights, nobody in the
    // room creates one.
    if created != 0 {
        wrong.push(format!(
            "{created} namespaces created during the room, where the organiser made them all"
        ));
    }
    for s in seen {
        for heal in &s.heals {
            // The first write to the object after the participant's own, by someone else.
            let put_back = writes.iter().find(|r| {
                r.time > heal.at
                    && r.namespace.as_deref() == Some(heal.namespace.as_str())
                    && r.resource == heal.plural
                    && r.subresource.is_none()
                    && (r.name.as_deref() == Some(heal.name.as_str()) || r.verb == Verb::Create)
                    && sender(r).is_none_or(|(role, _)| role != "hands")
            });
            match put_back.map(|r| sender(r)) {
                Some(Some(("controller", who))) if who == s.name => {}
                other => wrong.push(format!(
                    "{}: {} was put back by {other:?}, not by {}'s runner",
                    s.name, heal.what, s.name
                )),
            }
        }
    }
    wrong
}

/// On a cluster without a request log: no object in a participant's namespace carries another
/// participant's field manager.
async fn foreign_managers(hands: &kube::Client, seen: &[Seen]) -> Vec<String> {
    let mut wrong = Vec::new();
    for s in seen {
        let (own, _) = namespaces(&s.name);
        for kind in ["Number", "Tuple", "Fermat"] {
            let api = Api::<DynamicObject>::namespaced_with(hands.clone(), &own, &resource(kind));
            let Ok(list) = api.list_metadata(&ListParams::default()).await else {
                wrong.push(format!("{own}: cannot list {kind}s"));
                continue;
            };
            for object in list.items {
                for entry in object.metadata.managed_fields.iter().flatten() {
                    let manager = entry.manager.clone().unwrap_or_default();
                    let theirs = manager.starts_with("math-workshop-")
                        && manager != format!("math-workshop-{}", s.name);
                    if theirs {
                        wrong.push(format!(
                            "{own}: {kind}/{} written by {manager}",
                            object.metadata.name.clone().unwrap_or_default()
                        ));
                    }
                }
            }
        }
    }
    wrong
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at.min(sorted.len() - 1)]
}

#[tokio::test(flavor = "multi_thread")]
async fn a_room_of_participants_each_heals_only_their_own() {
    let n = size();
    let cluster = Cluster::open().await;
    let names: Vec<String> = (1..=n).map(|i| format!("room-{i}")).collect();
    // Each participant with only their own namespace's rights and their own kubeconfig.
    let room = tempfile::tempdir().expect("a temporary directory");
    cluster.set_up_room(&names, room.path()).await;
    if let Cluster::Test { server, .. } = &cluster {
        server.reset_requests();
    }
    let apiserver = std::env::var("ROOM_APISERVER_PID")
        .ok()
        .and_then(|pid| pid.parse::<u32>().ok());
    let cpu_before = apiserver.and_then(cpu_seconds);
    let started = Instant::now();
    let mut sessions = Vec::new();
    for name in &names {
        let kubeconfig = organiser::kubeconfig_path(room.path(), name);
        let hands = client_of(&kubeconfig, &format!("hands-{name}")).await;
        sessions.push(participant(kubeconfig, hands, name.clone()));
    }
    // One task: the runners and checks are processes of their own; this only polls.
    let seen = futures::future::join_all(sessions).await;
    let elapsed = started.elapsed();
    let cpu = match (apiserver.and_then(cpu_seconds), cpu_before) {
        (Some(after), Some(before)) => format!("{:.1} s", after - before),
        _ => "not measured (ROOM_APISERVER_PID)".to_string(),
    };

    let mut took: Vec<Duration> = seen
        .iter()
        .flat_map(|s| s.heals.iter().map(|h| h.took))
        .collect();
    took.sort();
    let mut rss: Vec<u64> = seen.iter().map(|s| s.runner_rss_kib).collect();
    rss.sort();
    println!("room of {n}, {:.1} s:", elapsed.as_secs_f64());
    for s in &seen {
        println!(
            "  {}: check exit {:?} ({}), {} heals, runner {} MiB",
            s.name,
            s.check_code,
            s.check_summary,
            s.heals.len(),
            s.runner_rss_kib / 1024
        );
        // Why a check failed, in its own words (the first three ✗ lines and stderr), so that a
        // measured room says what its control plane answered, not only how often.
        for line in s.check_failures.iter().take(3) {
            println!("      {}", line.chars().take(300).collect::<String>());
        }
    }
    println!(
        "heal p50 {} ms, p99 {} ms over {} heals; runners' RSS median {} MiB, max {} MiB; API server CPU {cpu}",
        percentile(&took, 0.5).as_millis(),
        percentile(&took, 0.99).as_millis(),
        took.len(),
        rss.get(rss.len() / 2).copied().unwrap_or(0) / 1024,
        rss.last().copied().unwrap_or(0) / 1024,
    );

    let wrong = match &cluster {
        Cluster::Test { server, .. } => misdeeds(&server.requests(), &seen),
        Cluster::Given(_) => {
            foreign_managers(&cluster.client("hands-organiser").await, &seen).await
        }
    };
    // What the request log says first: it names who did what.
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    for s in &seen {
        let (own, _) = namespaces(&s.name);
        assert!(
            s.first_line
                .starts_with(&format!("participant {}, namespace {own}", s.name)),
            "{}'s runner said first: {:?}",
            s.name,
            s.first_line
        );
        assert_eq!(
            s.check_code,
            Some(0),
            "{}'s check: {}\n{}",
            s.name,
            s.check_summary,
            s.check_failures.join("\n")
        );
        assert!(s.unhealed.is_empty(), "{}: {:?}", s.name, s.unhealed);
        assert_eq!(s.heals.len(), 4, "{}: {:?}", s.name, s.heals);
    }
    if let Cluster::Test { server, .. } = cluster {
        server.shutdown().await;
    }
}
