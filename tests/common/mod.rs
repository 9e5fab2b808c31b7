//! What the integration tests share, the one harness every file in `tests/` uses: a test
//! API server with the CRDs installed ([`server`], [`Harness`]), the real manager running
//! against it in-process, stoppable, restartable and crashable ([`Running`]), polling
//! ([`eventually`], [`eventually_within`], [`poll`]), the real kubectl ([`kubectl`],
//! [`try_kubectl`]) and the metrics as `/metrics` shows them ([`sample`]). `binary.rs` runs
//! the manager binary with its stderr collected; `https.rs` is a `curl -k` for
//! `--metrics-secure`.
#![allow(dead_code)]

pub mod binary;
pub mod exposition;
pub mod flows;
pub mod https;

use std::fmt::Debug;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow, bail, ensure};
use kube::api::{Api, PostParams};
use kube::{Client, Resource};
use math_controller::api::{Fermat, FermatSpec, Number, NumberSpec, Tuple, TupleSpec};
use math_controller::metrics::Metrics;
use math_controller::ops::manager::{self, Options};
use serde::de::DeserializeOwned;
use test_apiserver::{RequestFilter, TestServer, Verb};
use tokio::io::AsyncWriteExt;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// How long a test waits for the cluster to converge before it fails. Generous: CI runs on
/// two cores with every test binary in parallel; a healthy run converges in well under a second.
pub const CONVERGE: Duration = Duration::from_secs(60);

/// A fresh test API server with the CRDs of `crds/` installed, as `make install` leaves a
/// cluster.
pub async fn server() -> anyhow::Result<TestServer> {
    let server = TestServer::start().await?;
    for file in crd_files() {
        let yaml = std::fs::read_to_string(&file).context("crds/ is readable")?;
        server.apply_crd_yaml(&yaml).context("the CRDs install")?;
    }
    Ok(server)
}

/// A manager running in this process, against a server of the test's choosing; as many at
/// once as a test wants (two replicas racing for a lease).
pub struct Running {
    pub metrics: Metrics,
    stop: Option<oneshot::Sender<()>>,
    /// What `manager::run` returned, for a test that waits for it to end by itself.
    pub task: JoinHandle<anyhow::Result<()>>,
}

impl Running {
    pub fn start(server: &TestServer, options: Options) -> Running {
        Running::with_client(server.client(), options)
    }

    /// On a client of the test's own making (a read timeout, a proxy).
    pub fn with_client(client: Client, options: Options) -> Running {
        Running::spawn(client, options, Metrics::new())
    }

    /// On the client the binary builds (`ops::client::build`: its retry, its requests
    /// counted in this manager's metrics), for the server's kubeconfig.
    pub async fn with_the_binarys_client(
        server: &TestServer,
        options: Options,
    ) -> anyhow::Result<Running> {
        let metrics = Metrics::new();
        let kubeconfig = kube::config::Kubeconfig::read_from(server.kubeconfig_path())?;
        let kubeconfig_options = kube::config::KubeConfigOptions::default();
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &kubeconfig_options).await?;
        let client = math_controller::ops::client::build(config, &metrics)?;
        Ok(Running::spawn(client, options, metrics))
    }

    fn spawn(client: Client, options: Options, metrics: Metrics) -> Running {
        let (tx, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(manager::run(client, options, metrics.clone(), async {
            let _ = rx.await;
        }));
        Running {
            metrics,
            stop: Some(tx),
            task,
        }
    }

    /// SIGTERM, as the manager sees it: stop, finish, release, return.
    pub async fn shutdown(self) -> anyhow::Result<()> {
        self.stop_within(Duration::from_secs(10)).await
    }

    /// [`Running::shutdown`], waiting at most `timeout` for the manager to return.
    pub async fn stop_within(mut self, timeout: Duration) -> anyhow::Result<()> {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        tokio::time::timeout(timeout, self.task)
            .await
            .with_context(|| format!("the manager did not stop within {timeout:?}"))?
            .context("the manager task panicked")?
    }

    /// A crash: the process is gone, nothing is released.
    pub fn crash(self) {
        self.task.abort();
    }

    /// Whether this manager holds the lease, as its `leader_election_master_status` says.
    pub fn leads(&self) -> bool {
        let text = self.metrics.encode();
        text.lines()
            .filter_map(|l| l.strip_prefix("leader_election_master_status{name="))
            .any(|rest| rest.ends_with("} 1"))
    }
}

pub struct Harness {
    pub server: TestServer,
    pub client: Client,
    manager: Option<Running>,
}

impl Harness {
    /// A fresh server with the CRDs of `crds/` installed, and a running manager.
    pub async fn start() -> Harness {
        let mut harness = Harness::without_manager().await;
        harness.start_manager();
        harness
    }

    /// A fresh server with the CRDs installed, no manager yet.
    pub async fn without_manager() -> Harness {
        let server = server()
            .await
            .expect("the test API server starts with the CRDs");
        let client = server.client();
        Harness {
            server,
            client,
            manager: None,
        }
    }

    /// A fresh, empty server: no CRDs, no manager. For tests where installing the CRDs
    /// (`kubectl apply -f crds/`) is itself under test.
    pub async fn without_crds() -> Harness {
        let server = TestServer::start()
            .await
            .expect("the test API server starts");
        let client = server.client();
        Harness {
            server,
            client,
            manager: None,
        }
    }

    pub fn start_manager(&mut self) {
        self.start_manager_with(Options::default());
    }

    pub fn start_manager_with(&mut self, options: Options) {
        self.start_manager_observed(options);
    }

    /// Start the manager and hand back its metrics, to read them as `/metrics` would show.
    pub fn start_manager_observed(&mut self, options: Options) -> Metrics {
        assert!(self.manager.is_none(), "one manager at a time in a harness");
        let running = Running::start(&self.server, options);
        let metrics = running.metrics.clone();
        self.manager = Some(running);
        metrics
    }

    /// Stop the manager gracefully and wait for it to exit.
    pub async fn stop_manager(&mut self) {
        if let Some(running) = self.manager.take() {
            let stopped = running.stop_within(Duration::from_secs(30)).await;
            stopped.expect("the manager stops within 30 s and exits cleanly");
        }
    }

    pub fn numbers(&self) -> Api<Number> {
        Api::default_namespaced(self.client.clone())
    }

    pub fn tuples(&self) -> Api<Tuple> {
        Api::default_namespaced(self.client.clone())
    }

    pub fn fermats(&self) -> Api<Fermat> {
        Api::default_namespaced(self.client.clone())
    }

    pub async fn create_number(&self, name: &str, value: i64) -> Number {
        self.numbers()
            .create(
                &PostParams::default(),
                &Number::new(name, NumberSpec { value }),
            )
            .await
            .expect("create Number")
    }

    pub async fn create_tuple(&self, name: &str, numbers: Vec<i64>) -> Tuple {
        self.tuples()
            .create(
                &PostParams::default(),
                &Tuple::new(name, TupleSpec { numbers }),
            )
            .await
            .expect("create Tuple")
    }

    /// A Number controlled by something that is not ours (a ConfigMap named `someone`), as a
    /// child name taken by another controller.
    pub async fn create_foreign_number(&self, name: &str, value: i64) -> Number {
        use k8s_openapi::api::core::v1::ConfigMap;
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
        use kube::ResourceExt;
        let owner = Api::<ConfigMap>::default_namespaced(self.client.clone())
            .create(
                &PostParams::default(),
                &ConfigMap {
                    metadata: kube::api::ObjectMeta {
                        name: Some("someone".into()),
                        ..Default::default()
                    },
                    ..Default::default()
                },
            )
            .await
            .expect("owner");
        let mut foreign = Number::new(name, NumberSpec { value });
        foreign.metadata.owner_references = Some(vec![OwnerReference {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: "someone".into(),
            uid: owner.uid().expect("uid"),
            controller: Some(true),
            block_owner_deletion: None,
        }]);
        self.numbers()
            .create(&PostParams::default(), &foreign)
            .await
            .expect("foreign number")
    }

    pub async fn create_fermat(&self, name: &str, number: i64) -> Fermat {
        self.fermats()
            .create(
                &PostParams::default(),
                &Fermat::new(name, FermatSpec { number }),
            )
            .await
            .expect("create Fermat")
    }

    /// Write requests to math.example.com objects (Events and Leases not counted).
    pub fn object_writes(&self) -> usize {
        let ours = ["numbers", "tuples", "fermats"];
        self.server
            .requests()
            .iter()
            .filter(|r| r.verb.is_write() && ours.contains(&r.resource.as_str()))
            .count()
    }

    pub fn writes(&self, verb: Verb, resource: &str) -> usize {
        self.server
            .count(&RequestFilter::new().verb(verb).resource(resource))
    }
}

/// The value of the sample whose series (name and labels) is exactly `series` in the
/// OpenMetrics text of [`Metrics::encode`].
pub fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

/// Poll `get` until `done` holds, or fail the test with the last value seen.
pub async fn eventually<T, G, F>(what: &str, mut get: G, done: impl Fn(&T) -> bool) -> T
where
    T: Debug,
    G: FnMut() -> F,
    F: Future<Output = Option<T>>,
{
    let start = Instant::now();
    loop {
        let value = get().await;
        if let Some(v) = &value
            && done(v)
        {
            return value.expect("checked above");
        }
        if start.elapsed() > CONVERGE {
            panic!("timed out after {CONVERGE:?} waiting for {what}; last seen: {value:#?}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Poll `f` until it gives a value, for at most `timeout`: for tests that return a `Result`
/// and poll what needs no request (the server's own view, a metric).
pub async fn eventually_within<T>(
    timeout: Duration,
    what: &str,
    mut f: impl FnMut() -> Option<T>,
) -> anyhow::Result<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return Ok(v);
        }
        if Instant::now() > deadline {
            bail!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Poll with kubectl until `done` holds. Each kubectl run costs a process start, so the polls
/// are spaced out more than [`eventually`]'s own.
pub async fn poll<T, G, F>(what: &str, mut get: G, done: impl Fn(&T) -> bool) -> T
where
    T: Debug,
    G: FnMut() -> F,
    F: Future<Output = Option<T>>,
{
    eventually(
        what,
        || {
            let next = get();
            async move {
                tokio::time::sleep(Duration::from_millis(100)).await;
                next.await
            }
        },
        done,
    )
    .await
}

/// Poll one object until `done` holds.
pub async fn wait_for<K>(api: &Api<K>, name: &str, done: impl Fn(&K) -> bool) -> K
where
    K: Resource + Clone + Debug + DeserializeOwned,
{
    eventually(
        &format!("{} {name}", std::any::type_name::<K>()),
        || async { api.get_opt(name).await.ok().flatten() },
        done,
    )
    .await
}

/// Poll until the object is gone.
pub async fn wait_gone<K>(api: &Api<K>, name: &str)
where
    K: Resource + Clone + Debug + DeserializeOwned,
{
    eventually(
        &format!("{name} to be deleted"),
        || async { Some(api.get_opt(name).await.ok().flatten().is_none()) },
        |gone| *gone,
    )
    .await;
}

/// Whether an object's Ready condition is True for its current generation.
pub fn ready<K: Resource>(
    obj: &K,
    conditions: Option<(
        &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition],
        Option<i64>,
    )>,
) -> bool {
    conditions.is_some_and(|(conditions, observed)| {
        observed.is_some()
            && observed == obj.meta().generation
            && conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
    })
}

pub fn number_ready(n: &Number) -> bool {
    ready(
        n,
        n.status
            .as_ref()
            .map(|s| (s.conditions.as_slice(), s.observed_generation)),
    )
}

pub fn tuple_ready(t: &Tuple) -> bool {
    ready(
        t,
        t.status
            .as_ref()
            .map(|s| (s.conditions.as_slice(), s.observed_generation)),
    )
}

pub fn fermat_ready(f: &Fermat) -> bool {
    ready(
        f,
        f.status
            .as_ref()
            .map(|s| (s.conditions.as_slice(), s.observed_generation)),
    )
}

/// The repository's root: the manager's crate, or above a workspace member that includes this
/// harness (`crates/kubectl-math/tests/`): the nearest directory holding `Cargo.lock`.
pub fn repo() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    (manifest.ancestors())
        .find(|dir| dir.join("Cargo.lock").is_file())
        .unwrap_or(manifest)
        .to_path_buf()
}

pub fn crd_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo().join("crds"))
        .expect("crds/ exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    files
}

/// Run the real kubectl against the test server, with `stdin` as its input (`apply -f -`).
/// A missing kubectl is an error, never a skip: the workshop is about kubectl, and skipping
/// would hide that nothing was tested.
async fn run_kubectl(
    kubeconfig: &Path,
    args: &[&str],
    stdin: Option<&str>,
) -> anyhow::Result<Output> {
    let mut command = tokio::process::Command::new("kubectl");
    command
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .current_dir(repo())
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let run = async {
        let mut child = command.spawn().map_err(|e| {
            anyhow!(
                "kubectl could not be run ({e}): install kubectl v1.32 to run the workshop tests"
            )
        })?;
        if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
            pipe.write_all(input.as_bytes()).await?;
        }
        Ok(child.wait_with_output().await?)
    };
    match tokio::time::timeout(Duration::from_secs(120), run).await {
        Ok(output) => output,
        Err(_) => bail!("kubectl {args:?} did not finish within 120 s"),
    }
}

/// Run the real kubectl against the test server; a kubectl that cannot run fails the test.
pub async fn kubectl(kubeconfig: &Path, args: &[&str]) -> Output {
    run_kubectl(kubeconfig, args, None)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// kubectl that must succeed, with `stdin` as its input, for tests that return a `Result`:
/// its stdout, or an error with what it printed.
pub async fn try_kubectl(
    server: &TestServer,
    args: &[&str],
    stdin: Option<&str>,
) -> anyhow::Result<String> {
    let out = run_kubectl(&server.kubeconfig_path(), args, stdin).await?;
    ensure!(
        out.status.success(),
        "kubectl {}: {}{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// kubectl that must succeed; returns its stdout.
pub async fn kubectl_ok(kubeconfig: &Path, args: &[&str]) -> String {
    let output = kubectl(kubeconfig, args).await;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "kubectl {} failed: {stderr}\n{stdout}",
        args.join(" ")
    );
    stdout
}
