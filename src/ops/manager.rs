//! The manager: one process, one `kube::Client`, three controllers sharing three watches;
//! [`run`] serves the probes and metrics, waits for leadership, runs the controllers and
//! stops them, and `run_controllers` wires them (what kubebuilder's `SetupWithManager`
//! does, for the three kinds at once).
//!
//! Each kind is watched exactly once. The watch feeds a shared store (the cache the
//! reconcilers read) and fans its changes out to every controller that cares: Numbers to the
//! Number controller and, as owned children, to the Tuple controller; Tuples to the Tuple
//! controller and to the Fermat controller; Fermats to the Fermat controller.
//!
//! Why not `Controller::new(..).owns(..)`, as controller-rs does: `owns` starts a watch and a
//! cache of its own for the child kind, so the Numbers a Tuple owns would be watched and held
//! in memory twice (by the Number controller and by the Tuple controller's `owns`), and the
//! design brief asks for each kind to be watched once and shared, memory growing with the
//! objects cached. The shared form (`owns_shared_stream`, behind kube-runtime 5's
//! `unstable-runtime`) rests on the shared-store dispatcher, which does not forward deletions:
//! `kubectl delete number t-1` would never wake the Tuple that must put it back; and its
//! bounded buffer makes a watch wait for the slowest controller. `owns` also maps a child to
//! its parents only through ownerReferences, while a conflicting object that is deleted frees
//! a name whose parent it does not name ([`crate::kind::Parent::parent_of`]). So each watch
//! is `watch_and_fan_out` (`cluster/watches.rs`), which tells the controllers' loops directly;
//! and the controllers are no kube-runtime `Controller` either: each is a loop
//! (`reconcile/controller_loop.rs`)
//! over the scheduler (`crate::scheduler`), one fair queue and its runner, so that there is no
//! second queue behind the fair one.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::Api;

use kube::runtime::watcher;
use kube::{Client, Resource};
use serving::HttpLimits;
use serving::exposition::Encoder;
use serving::health::{self, ReadyFlag};
use serving::secure_metrics::{self, SecureMetrics};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use crate::api::{Fermat, Number, Tuple};
use crate::cluster::cache::{Cache, Caches};
use crate::cluster::store;
use crate::cluster::watches::{Cause, no_parents, resync, tell_parents, watch_and_fan_out};
use crate::controller::{fermat, number, tuple};
use crate::kind::{Kind, Parent};
use crate::metrics::Metrics;
use crate::ops::client;
use crate::ops::leader::{self, LeaderElectionConfig};
use crate::ops::shutdown::{self, Stopped};
use crate::reconcile::Outcome;
use crate::reconcile::context::Context;
use crate::reconcile::controller_loop::{ControllerLoop, Key, ReconcileHook};
use crate::scheduler::runner::Runner;

/// How often every object is reconciled again, regardless of watch events (controller-runtime's
/// SyncPeriod, which defaults to 10 hours; ours is shorter since a resync costs no request).
pub const DEFAULT_SYNC_PERIOD: Duration = Duration::from_secs(600);
/// The default bound on a graceful shutdown's wait for the reconciles in flight: below
/// `deploy/`'s `terminationGracePeriodSeconds` (15 s) with room to release the lease.
pub const DEFAULT_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(10);

/// Reconciles of each kind at once, by default. The API server does the work; what the
/// manager must do is keep enough writes in flight for it. On a loopback kube-apiserver v1.24
/// (2 cores) a Fermat 1000 converged in 1.39–1.90× its floor with 16 and 1.25–1.39× with 64
/// (docs/benchmark.md). kube-apiserver answers a burst over its
/// `--max-mutating-requests-inflight` (200) with 429 and Retry-After, which the client
/// honours ([`crate::ops::client`]).
pub const CONCURRENCY: u16 = 64;

/// Write and Event requests open at once across all reconciles, by default (see
/// [`Context::requests`]): as many as the reconciles of one kind, a third of
/// kube-apiserver's `--max-mutating-requests-inflight`, and twice what the bench's floor
/// needs to keep a real kube-apiserver busy.
pub const REQUESTS_IN_FLIGHT: u16 = 64;

/// How the manager runs; built from the command line in `main.rs`, or by tests.
#[derive(Clone, Debug)]
pub struct Options {
    /// Watch and reconcile only this namespace; `None` means all namespaces.
    pub namespace: Option<String>,
    /// Reconciles each controller runs at once (0 means unbounded).
    pub concurrency: u16,
    /// Write and Event requests open at once across all reconciles (0 means unbounded).
    pub requests_in_flight: u16,
    /// While several namespaces are busy at once, each holds at most its share of
    /// `requests_in_flight` and of `concurrency` (see [`crate::scheduler`]); `false` lets
    /// one hold them all.
    pub flow_shares: bool,
    /// Where `/metrics` is served; `None` disables it.
    pub metrics_address: Option<SocketAddr>,
    /// Serve `/metrics` over HTTPS to bearers the cluster authorizes (`--metrics-secure`);
    /// `None` serves plain HTTP to anyone.
    pub metrics_secure: Option<SecureMetrics>,
    /// Where `/healthz` and `/readyz` are served; `None` disables them.
    pub probe_address: Option<SocketAddr>,
    /// Timeouts and bounds of the probe and metrics servers (see [`serving::server`]); tests
    /// shorten them.
    pub http: HttpLimits,
    /// Lease-based leader election; `None` runs as the only replica.
    pub leader_election: Option<LeaderElectionConfig>,
    /// Every object is reconciled again about this often (±10 %, see [`resync`]).
    pub sync_period: Duration,
    /// How long a shutdown waits for the reconciles in flight before it stops them; keep it
    /// below the pod's `terminationGracePeriodSeconds`.
    pub shutdown_timeout: Duration,
    /// The read timeout the client was built with ([`crate::ops::client::with_read_timeout`]), if
    /// any: watches ask the API server to end them before it, so that a quiet watch is never cut.
    pub read_timeout: Option<Duration>,
    /// How long a write may go unseen by the watch before the cache is believed again
    /// (see [`Expectations::expect`](crate::reconcile::memory::expectations::Expectations::expect)); tests shorten it.
    pub in_flight_timeout: Duration,
    /// Called at the start of every reconcile (see [`ReconcileHook`]): the in-process tests
    /// make one object's reconcile panic through it. The binary sets none.
    pub reconcile_hook: Option<ReconcileHook>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            namespace: None,
            concurrency: CONCURRENCY,
            requests_in_flight: REQUESTS_IN_FLIGHT,
            flow_shares: true,
            metrics_address: None,
            metrics_secure: None,
            probe_address: None,
            http: HttpLimits::default(),
            leader_election: None,
            sync_period: DEFAULT_SYNC_PERIOD,
            shutdown_timeout: DEFAULT_SHUTDOWN_TIMEOUT,
            read_timeout: None,
            in_flight_timeout: crate::reconcile::memory::expectations::IN_FLIGHT_TIMEOUT,
            reconcile_hook: None,
        }
    }
}

pub(crate) fn api<K>(client: &Client, namespace: &Option<String>) -> Api<K>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
{
    match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    }
}

/// Run the manager until `shutdown` resolves (or, with leader election, leadership is lost).
///
/// On shutdown the controllers stop taking work, in-flight reconciles finish (for at most
/// `options.shutdown_timeout`), and the lease is released so that a standby takes over at once.
/// A lost lease stops everything at once and is an error ([`Stopped`]), as is a cut-short drain.
pub async fn run(
    client: Client,
    options: Options,
    metrics: Metrics,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let stop = CancellationToken::new();
    tokio::spawn({
        let stop = stop.clone();
        async move {
            shutdown.await;
            stop.cancel();
        }
    });
    let readiness = ReadyFlag::default();
    let servers = serve(&client, &options, &metrics, &readiness, &stop).await?;
    let Some(leadership) = lead(&client, &options, &metrics, &readiness, &stop).await? else {
        info!("stopped while waiting for leadership");
        for server in servers {
            let _ = server.await;
        }
        return Ok(());
    };
    readiness.set_ready(false);

    let controllers = run_controllers(
        client,
        &options,
        metrics.clone(),
        readiness.clone(),
        stop.clone(),
    );
    let lost = async {
        match &leadership {
            Some(leadership) => leadership.lost().await,
            None => std::future::pending().await,
        }
    };
    let outcome = shutdown::drive(controllers, &stop, lost, options.shutdown_timeout).await;
    if let Err(stopped) = &outcome {
        warn!("{stopped}");
    }
    stop.cancel();
    if let (Some(leadership), Some(config)) = (leadership, &options.leader_election) {
        metrics.set_leader(&config.lease_name, false);
        if !matches!(outcome, Err(Stopped::LeadershipLost)) {
            release(leadership).await;
        }
    }
    for server in servers {
        let _ = server.await;
    }
    Ok(outcome?)
}

/// The probe and metrics servers the options ask for, serving until `stop`.
async fn serve(
    client: &Client,
    options: &Options,
    metrics: &Metrics,
    readiness: &ReadyFlag,
    stop: &CancellationToken,
) -> anyhow::Result<Vec<tokio::task::JoinHandle<std::io::Result<()>>>> {
    let mut servers = Vec::new();
    if let Some(address) = options.probe_address {
        let listener = health::bind(address).await?;
        let router = health::probe_router(readiness.clone());
        servers.push(tokio::spawn(health::serve_on(
            listener,
            "health probes",
            router,
            options.http.clone(),
            stop.clone().cancelled_owned(),
        )));
    }
    if let Some(address) = options.metrics_address {
        let listener = health::bind(address).await?;
        let shutdown = stop.clone().cancelled_owned();
        let encoder = {
            let metrics = metrics.clone();
            Encoder::new(move || metrics.encode())
        };
        servers.push(match &options.metrics_secure {
            None => {
                let router = health::metrics_router(encoder);
                tokio::spawn(health::serve_on(
                    listener,
                    "metrics",
                    router,
                    options.http.clone(),
                    shutdown,
                ))
            }
            Some(secure) => tokio::spawn(secure_metrics::serve(
                listener,
                encoder,
                client.clone(),
                count_certificate_reads(secure, metrics),
                options.http.clone(),
                shutdown,
            )?),
        });
    }
    Ok(servers)
}

/// `secure`, its certificate's reads counted in `certwatcher_*`.
fn count_certificate_reads(secure: &SecureMetrics, metrics: &Metrics) -> SecureMetrics {
    let reads = metrics.certificate_reads();
    SecureMetrics {
        on_certificate_read: secure_metrics::tls::OnCertificateRead::new(move |ok| reads.read(ok)),
        ..secure.clone()
    }
}

/// Leadership, with leader election: `Some(Some(..))` once this replica leads, `None` when
/// `stop` came first; `Some(None)` without leader election (the only replica leads).
async fn lead(
    client: &Client,
    options: &Options,
    metrics: &Metrics,
    readiness: &ReadyFlag,
    stop: &CancellationToken,
) -> anyhow::Result<Option<Option<leader::Leadership>>> {
    let Some(config) = &options.leader_election else {
        // Without leader election there is no lease, and no leader series (as in
        // controller-runtime).
        return Ok(Some(None));
    };
    // A standby is healthy and ready: it is doing exactly what it should.
    readiness.set_ready(true);
    info!(lease = %config.lease_name, namespace = %config.namespace, identity = %config.identity, "waiting to become the leader");
    metrics.set_leader(&config.lease_name, false);
    let acquired = leader::acquire(
        client.clone(),
        config.clone(),
        stop.clone().cancelled_owned(),
    )
    .await?;
    Ok(acquired.map(|leadership| {
        info!(identity = %config.identity, "became the leader; starting the controllers");
        metrics.set_leader(&config.lease_name, true);
        Some(leadership)
    }))
}

/// The lease released, so that a standby takes over at once (or when it expires, if the
/// release fails or takes too long).
async fn release(leadership: leader::Leadership) {
    match tokio::time::timeout(shutdown::RELEASE_TIMEOUT, leadership.release()).await {
        // The leader module logs the release itself, only when it did release.
        Ok(Ok(())) => {}
        Ok(Err(error)) => {
            warn!(%error, "could not release the lease; a standby takes over when it expires")
        }
        Err(_) => warn!(
            "releasing the lease took longer than {:?}; a standby takes over when it expires",
            shutdown::RELEASE_TIMEOUT
        ),
    }
}

/// Build the three watches and three controllers, and drive them until `stop` is cancelled
/// and every in-flight reconcile has finished.
async fn run_controllers(
    client: Client,
    options: &Options,
    metrics: Metrics,
    readiness: ReadyFlag,
    stop: CancellationToken,
) {
    let (numbers, number_writer) = Wired::<Number>::new(options, &metrics);
    let (tuples, tuple_writer) = Wired::<Tuple>::new(options, &metrics);
    let (fermats, fermat_writer) = Wired::<Fermat>::new(options, &metrics);
    let caches = Caches::default()
        .with(numbers.cache.clone())
        .with(tuples.cache.clone())
        .with(fermats.cache.clone());
    let ctx = Arc::new(
        Context::new(client.clone(), caches, metrics)
            .with_in_flight_timeout(options.in_flight_timeout)
            .with_requests_in_flight(options.requests_in_flight, options.flow_shares),
    );
    let loops = [&numbers.control, &tuples.control, &fermats.control].map(ControllerLoop::clone);
    let watch = Watch::new(&client, options, &ctx);
    let watches = futures::stream::select_all([
        watch.kind(
            number_writer,
            &numbers.cache,
            &numbers.control,
            tuples.told(),
        ),
        watch.kind(tuple_writer, &tuples.cache, &tuples.control, fermats.told()),
        watch.kind(fermat_writer, &fermats.cache, &fermats.control, no_parents),
    ])
    .take_until(stop.clone().cancelled_owned())
    .for_each(|()| futures::future::ready(()));
    let period = options.sync_period;
    let controllers = futures::future::join3(
        numbers.controller(number::reconcile, &ctx, period, &stop),
        tuples.controller(tuple::reconcile, &ctx, period, &stop),
        fermats.controller(fermat::reconcile, &ctx, period, &stop),
    );
    let namespace = options.namespace.as_deref();
    let controllers = once_synced(&ctx, readiness, namespace, &stop, controllers);
    // On a shutdown the reconciles queued in the loops are turned away, not run (also before
    // the controllers started).
    let close_loops = async {
        stop.cancelled().await;
        loops.iter().for_each(ControllerLoop::close);
    };
    // The watches run until `stop`; the controllers until their graceful shutdown completes.
    tokio::join!(controllers, sweeps(&ctx, &stop), close_loops, async {
        watches.await;
        debug!("watches stopped");
    });
}

/// `controllers`, started only once every cache holds a complete list: a reconcile that read
/// a half-filled cache would create children that exist. (The watches tell the loops
/// meanwhile: each object waits there once.) Waiting here, once, also keeps each store's
/// readiness to a single waiter: kube-runtime 5's `wait_until_ready` wakes only the last of
/// several concurrent waiters, and the others would sleep forever.
async fn once_synced(
    ctx: &Context,
    readiness: ReadyFlag,
    namespace: Option<&str>,
    stop: &CancellationToken,
    controllers: impl Future,
) {
    tokio::select! {
        _ = ctx.caches.ready() => {}
        _ = stop.cancelled() => return,
    }
    readiness.set_ready(true);
    info!(
        numbers = cached::<Number>(ctx),
        tuples = cached::<Tuple>(ctx),
        fermats = cached::<Fermat>(ctx),
        namespace = namespace.unwrap_or("all namespaces"),
        "caches synced; starting the Number, Tuple and Fermat controllers"
    );
    controllers.await;
    debug!("controllers stopped");
}

/// How many objects of kind `K` the cache holds.
fn cached<K: Kind>(ctx: &Context) -> usize {
    (ctx.caches.of::<K>()).map_or(0, |cache| cache.store.len())
}

/// What the context remembers expires, so that its memory stays bounded.
async fn sweeps(ctx: &Context, stop: &CancellationToken) {
    let mut ticks = tokio::time::interval(ctx.sweep_period());
    loop {
        tokio::select! {
            _ = ticks.tick() => ctx.sweep(),
            _ = stop.cancelled() => return,
        }
    }
}

/// One kind's cache and controller: the store its watch fills, and its loop with the runner
/// that reconciles what the loop lets in.
struct Wired<K: Kind> {
    cache: Cache<K>,
    control: ControllerLoop,
    runner: Runner<Key>,
}

impl<K: Kind> Wired<K> {
    /// A cache (and the writer its watch fills it through) and a loop of `--concurrency`.
    fn new(options: &Options, metrics: &Metrics) -> (Wired<K>, store::Writer<K>) {
        let (store, writer) = store::store::<K>();
        let (control, runner) = ControllerLoop::new(
            K::CONTROLLER,
            options.concurrency,
            options.flow_shares,
            metrics,
        );
        let control = control.with_hook(options.reconcile_hook.clone());
        let wired = Wired {
            cache: Cache::new(store),
            control,
            runner,
        };
        (wired, writer)
    }

    /// What a child's watch tells this kind's loop: the parents cached (a parent not cached
    /// has nothing to reconcile, or is not listed yet: its own list tells its loop), with the
    /// child's cause: a child's change is urgent to its parent, settled or not.
    fn told(&self) -> impl Fn(&ObjectMeta, Cause) + Send + 'static + use<K>
    where
        K: Parent,
    {
        let (parents, control) = (self.cache.store.clone(), self.control.clone());
        tell_parents::<K>(move |parent, cause| {
            if let Some(parent) = parents.get(&parent) {
                control.news(parent.as_ref(), cause);
            }
        })
    }

    /// The controller: the runner reconciling with `reconcile` what the loop lets in, and
    /// every cached object told to the loop again every `period` or so (the resync). It ends
    /// once `stop` and the graceful shutdown of the reconciles in flight are done.
    fn controller<Fut>(
        self,
        reconcile: fn(Arc<K>, Arc<Context>) -> Fut,
        ctx: &Arc<Context>,
        period: Duration,
        stop: &CancellationToken,
    ) -> impl Future<Output = ()> + use<K, Fut>
    where
        Fut: Future<Output = crate::error::Result<Outcome>>,
    {
        let Wired {
            cache,
            control,
            runner,
        } = self;
        let store = cache.store;
        let (stop, ctx) = (stop.clone(), ctx.clone());
        async move {
            let resyncs = resync(period).for_each(|()| {
                for obj in store.state() {
                    control.news(obj.as_ref(), Cause::Recheck);
                }
                futures::future::ready(())
            });
            let resyncs = async {
                tokio::select! {
                    _ = resyncs => {}
                    _ = stop.cancelled() => {}
                }
            };
            let run = control.run(runner, store.clone(), reconcile, ctx, stop.cancelled());
            tokio::join!(run, resyncs);
        }
    }
}

/// What every watch of the manager shares.
struct Watch<'a> {
    client: &'a Client,
    namespace: &'a Option<String>,
    config: watcher::Config,
    ctx: &'a Arc<Context>,
}

impl<'a> Watch<'a> {
    /// Watches of `options.namespace`. The server ends each watch before the client's read
    /// timeout could cut a quiet one. Every list, the first and each relist after a 410, is a
    /// consistent read from etcd (`resourceVersion` unset), never from the apiserver's watch
    /// cache (`any_semantic`, `resourceVersion=0`): a lagging cache hands back a list without
    /// the children just created (the parent creates them again, 409) at a resourceVersion
    /// that the next watch may answer 410 again. Paged lists (500 a page, the watcher's
    /// default) were already sent without `resourceVersion=0`, which kube-core drops when a
    /// limit is set; this says so instead of relying on it. See docs/refusals.md.
    fn new(client: &'a Client, options: &'a Options, ctx: &'a Arc<Context>) -> Watch<'a> {
        let timeout = client::watch_timeout_seconds(options.read_timeout);
        Watch {
            client,
            namespace: &options.namespace,
            config: watcher::Config::default().timeout(timeout),
            ctx,
        }
    }

    /// The watch of kind `K`: it fills `cache` through `writer`, and tells `control` (the kind's
    /// own controller) and `parents` (the parents' controller) of each change.
    fn kind<K: Kind>(
        &self,
        writer: store::Writer<K>,
        cache: &Cache<K>,
        control: &ControllerLoop,
        parents: impl Fn(&ObjectMeta, Cause) + Send + 'static,
    ) -> futures::stream::BoxStream<'static, ()> {
        let control = control.clone();
        watch_and_fan_out(
            api(self.client, self.namespace),
            self.config.clone(),
            writer,
            cache.clone(),
            move |obj: &K, cause| control.news(obj, cause),
            parents,
            self.ctx.clone(),
        )
        .boxed()
    }
}
