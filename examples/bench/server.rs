//! Where the benchmark runs: the cluster of the current kubeconfig, or the in-memory test API
//! server (as it is, or slowed like a real kube-apiserver), and the namespaces each
//! measurement is made in and deleted after.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use math_controller::api::{Fermat, Number, Tuple};
use test_apiserver::{RequestFilter, TestServer, Verb};

use crate::manager;

/// The slowed test server (`BENCH_SERVER=slow`): a model of the loopback kube-apiserver v1.24 +
/// etcd docs/benchmark.md's real-control-plane rows come from (2 cores, the manager on the same
/// machine), calibrated there. The server is one queue of busy time:
///
/// - each write takes a slot of 1 ms (the floor wrote ~1000 objects/s with 32 in flight) and
///   answers 25 ms after it arrived at the earliest;
/// - an Event takes half a slot ([`SLOW_EVENT_WEIGHT`]: 5001 Events cost the control plane
///   ~5 s of CPU, 30 001 object writes ~56 s);
/// - each watch event delivered takes [`SLOW_WATCH_EVENT_COST`] (the floor with the manager's
///   three watches open: +1.2 s of kube-apiserver CPU for 30 001 events, 3–6 % longer);
/// - each CPU second the manager takes is [`SLOW_CPU_SHARE`] of a second less for the server:
///   at the floor the control plane keeps both cores busy (~1.9 ms of CPU per write), so a
///   core second of the manager costs half a second of its throughput.
const SLOW_WRITE_LATENCY: Duration = Duration::from_millis(25);
pub const SLOW_WRITES_PER_SECOND: u32 = 1000;
pub const SLOW_EVENT_WEIGHT: f64 = 0.5;
const SLOW_WATCH_EVENT_COST: Duration = Duration::from_micros(40);
const SLOW_CPU_SHARE: f64 = 0.5;

/// Where the benchmark runs.
pub struct Server {
    pub client: Client,
    /// The in-memory server, when it is one: it can be slowed and stopped.
    pub test: Option<TestServer>,
    /// Slowed like a real kube-apiserver (see [`SLOW_CPU_SHARE`]).
    slow: bool,
}

impl Server {
    /// The cluster of the current kubeconfig when `cluster`, else a new in-memory test API
    /// server, slowed when `slow`.
    pub async fn new(cluster: bool, slow: bool) -> anyhow::Result<Server> {
        if cluster {
            Server::of_kubeconfig().await
        } else {
            Server::in_memory(slow).await
        }
    }

    /// The cluster of the current kubeconfig, once its CRDs are seen installed.
    async fn of_kubeconfig() -> anyhow::Result<Server> {
        let mut config = kube::Config::infer().await.map_err(|e| {
            anyhow::anyhow!(
                "no cluster in the current kubeconfig ({e}); try `kubectl cluster-info`"
            )
        })?;
        // No retries hidden in the client: the bench polls on its own, every 20 ms, and
        // a `Retry-After: 5` answered right after an API server restart would otherwise
        // hold a poll for 5 s and add it to what is measured.
        config.default_retry = false;
        let client = Client::try_from(config)?;
        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        if crds.get_opt("fermats.math.example.com").await?.is_none() {
            anyhow::bail!("the CRDs are not installed in this cluster: run `make install` first");
        }
        Ok(Server {
            client,
            test: None,
            slow: false,
        })
    }

    /// A test API server in this process with the CRDs applied; when `slow`, with a real
    /// kube-apiserver's costs (the `SLOW_…` constants).
    async fn in_memory(slow: bool) -> anyhow::Result<Server> {
        let server = TestServer::start().await?;
        server.apply_crd_yaml(&math_controller::api::crds_yaml()?)?;
        if slow {
            for verb in [Verb::Create, Verb::Update, Verb::Patch, Verb::Delete] {
                server.set_latency(RequestFilter::new().verb(verb), SLOW_WRITE_LATENCY);
            }
            server.set_write_rate(SLOW_WRITES_PER_SECOND);
            server.set_write_weight(RequestFilter::new().resource("events"), SLOW_EVENT_WEIGHT);
            server.set_watch_event_cost(watch_event_cost());
        }
        Ok(Server {
            client: server.client(),
            test: Some(server),
            slow,
        })
    }

    /// On the slowed server, charges the CPU the process `pid` takes against the server's
    /// time, as it would be taken from kube-apiserver and etcd on one machine.
    pub fn share_cpu_with(&self, pid: Option<u32>) -> Option<tokio::task::JoinHandle<()>> {
        let (test, pid) = (self.test.clone().filter(|_| self.slow)?, pid?);
        let share = cpu_share();
        Some(tokio::spawn(async move {
            let mut last = manager::cpu_of(pid).unwrap_or_default();
            loop {
                tokio::time::sleep(Duration::from_millis(20)).await;
                let Some(now) = manager::cpu_of(pid) else {
                    return;
                };
                test.charge(now.saturating_sub(last).mul_f64(share));
                last = now;
            }
        }))
    }

    /// The kubeconfig the manager is started with (`None`: the current one).
    pub fn kubeconfig(&self) -> Option<std::path::PathBuf> {
        self.test
            .as_ref()
            .map(|s| s.kubeconfig_path().to_path_buf())
    }

    pub async fn create_namespace(&self, name: &str) -> anyhow::Result<()> {
        let mut ns = Namespace::default();
        ns.metadata.name = Some(name.to_string());
        Api::<Namespace>::all(self.client.clone())
            .create(&PostParams::default(), &ns)
            .await?;
        Ok(())
    }

    /// Deleted, and waited for until it is gone: the cluster's namespace controller deletes
    /// every object in it, which on a real kube-apiserver takes minutes for a Fermat 10000 and
    /// as much of the API server as a measurement. Measured on a loopback kube-apiserver
    /// v1.24, the manager's run used to share the server with the deletion of the floor's
    /// 15 000 objects, and the next size with the deletion of the last one's.
    ///
    /// The math objects go first, children before parents ([`delete_children_first`]): left
    /// to the namespace controller, a parent can go before its children, and the cluster's
    /// garbage collector then checks each orphan at its own pace (~40 a second on
    /// kube-controller-manager's default client rate), minutes after the namespace is gone —
    /// under the next measurement.
    pub async fn delete_namespace(&self, name: &str) {
        let api = Api::<Namespace>::all(self.client.clone());
        let start = Instant::now();
        if let Err(e) = delete_children_first(&self.client, name).await {
            eprintln!("could not delete the math objects of namespace {name}: {e}");
        }
        if let Err(e) = api.delete(name, &DeleteParams::background()).await {
            eprintln!("could not delete namespace {name}: {e}");
            return;
        }
        let limit = Duration::from_secs(900);
        loop {
            match api.get_opt(name).await {
                Ok(None) => break,
                Ok(Some(_)) if start.elapsed() < limit => {}
                Ok(Some(_)) => {
                    eprintln!(
                        "namespace {name} is still there after {} s; measuring on",
                        limit.as_secs()
                    );
                    return;
                }
                Err(e) => {
                    eprintln!("could not see whether namespace {name} is gone: {e}");
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        if start.elapsed() > Duration::from_secs(2) {
            println!(
                "  (namespace {name} deleted in {:.0} s before going on)",
                start.elapsed().as_secs_f64()
            );
        }
    }
}

/// Every Number, then every Tuple, then every Fermat of `ns`: when a parent goes, no child
/// of it is left for the cluster's garbage collector to find and check.
async fn delete_children_first(client: &Client, ns: &str) -> kube::Result<()> {
    let all = ListParams::default();
    let params = DeleteParams::background();
    Api::<Number>::namespaced(client.clone(), ns)
        .delete_collection(&params, &all)
        .await?;
    Api::<Tuple>::namespaced(client.clone(), ns)
        .delete_collection(&params, &all)
        .await?;
    Api::<Fermat>::namespaced(client.clone(), ns)
        .delete_collection(&params, &all)
        .await?;
    Ok(())
}

/// The namespaces' prefix (`BENCH_NS_PREFIX`, default `math-bench`), to keep to one's own
/// namespaces on a shared cluster.
pub fn prefix() -> String {
    std::env::var("BENCH_NS_PREFIX").unwrap_or_else(|_| "math-bench".to_string())
}

/// [`SLOW_WATCH_EVENT_COST`], or `BENCH_SLOW_WATCH_EVENT_US` in microseconds (calibrating the
/// slowed server).
pub fn watch_event_cost() -> Duration {
    env_duration_us("BENCH_SLOW_WATCH_EVENT_US").unwrap_or(SLOW_WATCH_EVENT_COST)
}

/// [`SLOW_CPU_SHARE`], or `BENCH_SLOW_CPU_SHARE` (calibrating the slowed server).
pub fn cpu_share() -> f64 {
    std::env::var("BENCH_SLOW_CPU_SHARE")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(SLOW_CPU_SHARE)
}

/// A duration in microseconds from the environment (calibrating the slowed server).
fn env_duration_us(name: &str) -> Option<Duration> {
    let us = std::env::var(name).ok()?.parse::<u64>().ok()?;
    Some(Duration::from_micros(us))
}
