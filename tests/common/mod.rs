//! What the integration tests share: a test API server with the CRDs installed, and the
//! real manager running against it in-process, stoppable and restartable.
#![allow(dead_code)]

pub mod binary;
pub mod https;

use std::fmt::Debug;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

use kube::api::{Api, PostParams};
use kube::{Client, Resource};
use math_controller::api::{Fermat, FermatSpec, Number, NumberSpec, Tuple, TupleSpec};
use math_controller::metrics::Metrics;
use math_controller::ops::manager::{self, Options};
use serde::de::DeserializeOwned;
use test_apiserver::{RequestFilter, TestServer, Verb};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// How long a test waits for the cluster to converge before it fails. Generous: CI runs on
/// two cores with every test binary in parallel; a healthy run converges in well under a second.
pub const CONVERGE: Duration = Duration::from_secs(60);

pub struct Harness {
    pub server: TestServer,
    pub client: Client,
    manager: Option<(oneshot::Sender<()>, JoinHandle<anyhow::Result<()>>)>,
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
        let server = TestServer::start()
            .await
            .expect("the test API server starts");
        for file in crd_files() {
            let yaml = std::fs::read_to_string(&file).expect("crds/ is readable");
            server.apply_crd_yaml(&yaml).expect("the CRDs install");
        }
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
        let (stop, stopped) = oneshot::channel::<()>();
        let client = self.server.client();
        let metrics = Metrics::new();
        let observed = metrics.clone();
        let task = tokio::spawn(async move {
            manager::run(client, options, observed, async move {
                let _ = stopped.await;
            })
            .await
        });
        self.manager = Some((stop, task));
        metrics
    }

    /// Stop the manager gracefully and wait for it to exit.
    pub async fn stop_manager(&mut self) {
        if let Some((stop, task)) = self.manager.take() {
            let _ = stop.send(());
            let result = tokio::time::timeout(Duration::from_secs(30), task)
                .await
                .expect("the manager stops within 30 s");
            result
                .expect("the manager task did not panic")
                .expect("the manager exits cleanly");
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

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
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

/// Run the real kubectl against the test server. A missing kubectl fails the test: the
/// workshop is about kubectl, and skipping would hide that nothing was tested.
pub async fn kubectl(kubeconfig: &Path, args: &[&str]) -> Output {
    let mut command = tokio::process::Command::new("kubectl");
    command
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .current_dir(repo())
        .kill_on_drop(true);
    match tokio::time::timeout(Duration::from_secs(120), command.output()).await {
        Ok(Ok(output)) => output,
        Ok(Err(e)) => panic!(
            "kubectl could not be run ({e}): install kubectl v1.32 to run the workshop tests"
        ),
        Err(_) => panic!("kubectl {args:?} did not finish within 120 s"),
    }
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
