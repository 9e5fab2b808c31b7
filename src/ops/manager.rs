//! The manager: one process, one `kube::Client`, three controllers sharing three watches;
//! [`run`] serves the probes and metrics, waits for leadership, runs the controllers and
//! stops them, and `run_controllers` wires them (what kubebuilder's `SetupWithManager`
//! does, for the three kinds at once).
//!
//! Each kind is watched exactly once. The watch feeds a shared reflector store (the cache the
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
//! is `watch_and_fan_out` (`runtime/watches.rs`), with plain unbounded channels. What comes
//! through them is news for the gate in front of each controller (`runtime/gate.rs`), and
//! each controller is built on kube-runtime's `for_shared_stream` over the shared store,
//! triggered (`reconcile_on`) by the objects its gate lets in.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures::channel::mpsc;
use futures::{Stream, StreamExt};
use kube::api::Api;
use kube::runtime::controller::{
    Action, Config as ControllerConfig, Controller, Error as ControllerError,
};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::watcher;
use kube::{Client, Resource};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use crate::api::{Fermat, Number, Tuple};
use crate::controller::{fermat, number, tuple};
use crate::kind::Kind;
use crate::metrics::Metrics;
use crate::ops::client;
use crate::ops::health::{self, ReadyFlag};
use crate::ops::leader::{self, LeaderElectionConfig};
use crate::ops::secure_metrics::{self, SecureMetrics};
use crate::ops::serving::HttpLimits;
use crate::ops::shutdown::{self, Stopped};
use crate::runtime::context::Context;
use crate::runtime::gate::{Gate, Key, object_ref};
use crate::runtime::retry::{error_policy, with_retry_policy};
use crate::runtime::watches::{no_parents, resync, tell_parents, watch_and_fan_out};

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
/// [`Context::in_slot`]): as many as the reconciles of one kind, a third of
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
    /// `requests_in_flight` and of `concurrency` (see [`crate::runtime::fair`]); `false` lets
    /// one hold them all.
    pub flow_shares: bool,
    /// Where `/metrics` is served; `None` disables it.
    pub metrics_address: Option<SocketAddr>,
    /// Serve `/metrics` over HTTPS to bearers the cluster authorizes (`--metrics-secure`);
    /// `None` serves plain HTTP to anyone.
    pub metrics_secure: Option<SecureMetrics>,
    /// Where `/healthz` and `/readyz` are served; `None` disables them.
    pub probe_address: Option<SocketAddr>,
    /// Timeouts and bounds of the probe and metrics servers (see [`crate::ops::serving`]); tests
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
    /// (see [`Expectations::expect`](crate::runtime::expectations::Expectations::expect)); tests shorten it.
    pub in_flight_timeout: Duration,
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
            in_flight_timeout: crate::runtime::expectations::IN_FLIGHT_TIMEOUT,
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
        servers.push(match &options.metrics_secure {
            None => {
                let router = health::metrics_router(metrics.clone());
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
                metrics.clone(),
                client.clone(),
                secure.clone(),
                options.http.clone(),
                shutdown,
            )?),
        });
    }

    let leadership = match &options.leader_election {
        Some(config) => {
            // A standby is healthy and ready: it is doing exactly what it should.
            readiness.set_ready(true);
            info!(lease = %config.lease_name, namespace = %config.namespace, identity = %config.identity, "waiting to become the leader");
            metrics.set_leader(&config.lease_name, false);
            match leader::acquire(
                client.clone(),
                config.clone(),
                stop.clone().cancelled_owned(),
            )
            .await?
            {
                Some(leadership) => {
                    info!(identity = %config.identity, "became the leader; starting the controllers");
                    metrics.set_leader(&config.lease_name, true);
                    Some(leadership)
                }
                None => {
                    info!("stopped while waiting for leadership");
                    for server in servers {
                        let _ = server.await;
                    }
                    return Ok(());
                }
            }
        }
        // Without leader election there is no lease, and no leader series (as in
        // controller-runtime).
        None => None,
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
    if let Some(leadership) = leadership {
        if let Some(config) = &options.leader_election {
            metrics.set_leader(&config.lease_name, false);
        }
        if !matches!(outcome, Err(Stopped::LeadershipLost)) {
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
    }
    for server in servers {
        let _ = server.await;
    }
    Ok(outcome?)
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
    let (numbers, number_writer) = reflector::store::<Number>();
    let (tuples, tuple_writer) = reflector::store::<Tuple>();
    let (fermats, fermat_writer) = reflector::store::<Fermat>();
    let (number_changes_tx, number_changes) = mpsc::unbounded::<Arc<Number>>();
    let (tuple_changes_tx, tuple_changes) = mpsc::unbounded::<Arc<Tuple>>();
    let (fermat_changes_tx, fermat_changes) = mpsc::unbounded::<Arc<Fermat>>();
    let (tuples_with_news_tx, tuples_with_news) = mpsc::unbounded::<ObjectRef<Tuple>>();
    let (fermats_with_news_tx, fermats_with_news) = mpsc::unbounded::<ObjectRef<Fermat>>();

    let caches = (numbers.clone(), tuples.clone(), fermats.clone());
    let ctx = Arc::new(
        Context::new(client.clone(), caches, metrics)
            .with_in_flight_timeout(options.in_flight_timeout)
            .with_requests_in_flight(options.requests_in_flight, options.flow_shares),
    );
    let ns = &options.namespace;
    // The server ends each watch before the client's read timeout could cut a quiet one.
    let watch_timeout = client::watch_timeout_seconds(options.read_timeout);
    // Every list, the first and each relist after a 410, is a consistent read from etcd
    // (`resourceVersion` unset), never from the apiserver's watch cache (`any_semantic`,
    // `resourceVersion=0`): a lagging cache hands back a list without the children just
    // created (the parent creates them again, 409) at a resourceVersion that the next watch
    // may answer 410 again. Paged lists (500 a page, the watcher's default) were already
    // sent without `resourceVersion=0`, which kube-core drops when a limit is set; this
    // says so instead of relying on it. See docs/refusals.md.
    let watch_config = watcher::Config::default().timeout(watch_timeout);
    let watches = futures::stream::select_all([
        watch_and_fan_out(
            api(&client, ns),
            watch_config.clone(),
            number_writer,
            ctx.numbers.clone(),
            number_changes_tx,
            tell_parents::<Tuple>(tuples_with_news_tx),
            ctx.clone(),
        )
        .boxed(),
        watch_and_fan_out(
            api(&client, ns),
            watch_config.clone(),
            tuple_writer,
            ctx.tuples.clone(),
            tuple_changes_tx,
            tell_parents::<Fermat>(fermats_with_news_tx),
            ctx.clone(),
        )
        .boxed(),
        watch_and_fan_out(
            api(&client, ns),
            watch_config.clone(),
            fermat_writer,
            ctx.fermats.clone(),
            fermat_changes_tx,
            no_parents,
            ctx.clone(),
        )
        .boxed(),
    ])
    .take_until(stop.clone().cancelled_owned())
    .for_each(|()| futures::future::ready(()));

    // The objects wait at the gates, which hand each Controller an object with a turn of its
    // concurrency, fairly across namespaces (`runtime/gate.rs`); the Controllers run what
    // they are handed at once.
    let (gates, let_in) = Gates::new(options.concurrency, options.flow_shares, &ctx.metrics);
    let (number_gate, tuple_gate, fermat_gate) = (
        gates.number.clone(),
        gates.tuple.clone(),
        gates.fermat.clone(),
    );
    // What the watches and the resyncs tell the gates (run once the caches are complete).
    let news = futures::future::join4(
        own_news(number_gate.clone(), number_changes),
        own_news(tuple_gate.clone(), tuple_changes),
        own_news(fermat_gate.clone(), fermat_changes),
        futures::future::join(
            children_news(tuple_gate.clone(), tuples.clone(), tuples_with_news),
            children_news(fermat_gate.clone(), fermats.clone(), fermats_with_news),
        ),
    );
    let resyncs = futures::future::join3(
        resync_news(number_gate.clone(), numbers.clone(), options.sync_period),
        resync_news(tuple_gate.clone(), tuples.clone(), options.sync_period),
        resync_news(fermat_gate.clone(), fermats.clone(), options.sync_period),
    );
    let stopped = || stop.clone().cancelled_owned();
    let number_controller = controller(
        number_gate,
        let_in.number,
        numbers.clone(),
        number::reconcile,
        &ctx,
        stopped(),
    );
    let tuple_controller = controller(
        tuple_gate,
        let_in.tuple,
        tuples.clone(),
        tuple::reconcile,
        &ctx,
        stopped(),
    );
    let fermat_controller = controller(
        fermat_gate,
        let_in.fermat,
        fermats.clone(),
        fermat::reconcile,
        &ctx,
        stopped(),
    );

    // The controllers start only once every cache holds a complete list: a reconcile that
    // read a half-filled cache would create children that exist. Waiting here, once, also
    // keeps each store's readiness to a single waiter: kube-runtime 5's `wait_until_ready`
    // wakes only the last of several concurrent waiters, and the others would sleep forever.
    let controllers = {
        let ctx = ctx.clone();
        let stop = stop.clone();
        async move {
            tokio::select! {
                _ = ctx.caches_ready() => {}
                _ = stop.cancelled() => return,
            }
            readiness.set_ready(true);
            info!(
                numbers = ctx.numbers.store.state().len(),
                tuples = ctx.tuples.store.state().len(),
                fermats = ctx.fermats.store.state().len(),
                namespace = ns.as_deref().unwrap_or("all namespaces"),
                "caches synced; starting the Number, Tuple and Fermat controllers"
            );
            // The news and the resyncs end with the watches and `stop`; the controllers once
            // their graceful shutdown completes.
            let told = async {
                tokio::select! {
                    _ = futures::future::join(news, resyncs) => {}
                    _ = stop.cancelled() => {}
                }
            };
            tokio::join!(number_controller, tuple_controller, fermat_controller, told);
            debug!("controllers stopped");
        }
    };
    // What the context remembers expires, so that its memory stays bounded.
    let sweeps = async {
        let mut ticks = tokio::time::interval(ctx.sweep_period());
        loop {
            tokio::select! {
                _ = ticks.tick() => ctx.sweep(),
                _ = stop.cancelled() => return,
            }
        }
    };
    // On a shutdown the reconciles queued at the gates are turned away, not run.
    let close_gates = async {
        stop.cancelled().await;
        gates.close();
    };
    // The watches run until `stop`; the controllers until their graceful shutdown completes.
    tokio::join!(controllers, sweeps, close_gates, async {
        watches.await;
        debug!("watches stopped");
    });
}

/// One gate per controller.
struct Gates {
    number: Gate,
    tuple: Gate,
    fermat: Gate,
}

/// The objects each gate lets in, for its Controller.
struct LetIn {
    number: mpsc::UnboundedReceiver<Key>,
    tuple: mpsc::UnboundedReceiver<Key>,
    fermat: mpsc::UnboundedReceiver<Key>,
}

impl Gates {
    fn new(concurrency: u16, shares: bool, metrics: &Metrics) -> (Gates, LetIn) {
        let (number, number_in) = Gate::new(Number::CONTROLLER, concurrency, shares, metrics);
        let (tuple, tuple_in) = Gate::new(Tuple::CONTROLLER, concurrency, shares, metrics);
        let (fermat, fermat_in) = Gate::new(Fermat::CONTROLLER, concurrency, shares, metrics);
        let gates = Gates {
            number,
            tuple,
            fermat,
        };
        let let_in = LetIn {
            number: number_in,
            tuple: tuple_in,
            fermat: fermat_in,
        };
        (gates, let_in)
    }

    fn close(&self) {
        self.number.close();
        self.tuple.close();
        self.fermat.close();
    }
}

/// The controller of kind `K`: kube-runtime's `Controller` over the shared `store`, running
/// `reconcile` (within the retry policy) on each object its `gate` lets in, and at once: the
/// gate bounds and orders them, so the `Controller` sets no bound of its own. It ends once
/// `stop` and the graceful shutdown of the reconciles in flight are done.
fn controller<K, Fut>(
    gate: Gate,
    let_in: mpsc::UnboundedReceiver<Key>,
    store: Store<K>,
    reconcile: fn(Arc<K>, Arc<Context>) -> Fut,
    ctx: &Arc<Context>,
    stop: impl Future<Output = ()> + Send + Sync + 'static,
) -> impl Future<Output = ()>
where
    K: Kind + Resource<DynamicType = ()> + Clone + std::fmt::Debug + Send + Sync + 'static,
    Fut: Future<Output = crate::error::Result<crate::runtime::retry::Outcome>> + Send + 'static,
{
    let reconciler = {
        let (gate, store) = (gate.clone(), store.clone());
        move |obj: Arc<K>, ctx: Arc<Context>| {
            gated(gate.clone(), store.clone(), obj, move |obj| {
                with_retry_policy(K::CONTROLLER, obj.clone(), ctx.clone(), reconcile(obj, ctx))
            })
        }
    };
    Controller::for_shared_stream(futures::stream::pending(), store)
        .reconcile_on(let_in.map(object_ref::<K>))
        .with_config(ControllerConfig::default().concurrency(0))
        .graceful_shutdown_on(stop)
        .run(reconciler, error_policy, ctx.clone())
        .for_each(log_result(K::CONTROLLER, gate))
}

/// `reconcile(latest)` once `obj` passes `gate`, with the object as `store` holds it then; a
/// reconcile turned away by a shutdown, or of an object deleted while it waited, did nothing
/// and waits for nothing.
async fn gated<K, F, Fut>(
    gate: Gate,
    store: Store<K>,
    obj: Arc<K>,
    reconcile: F,
) -> crate::error::Result<Action>
where
    K: Kind,
    F: FnOnce(Arc<K>) -> Fut,
    Fut: Future<Output = crate::error::Result<Action>>,
{
    gate.pass(obj.as_ref(), &store, reconcile)
        .await
        .unwrap_or_else(|| Ok(Action::await_change()))
}

/// An object's own changes, told to its gate.
async fn own_news<K: Kind>(gate: Gate, changes: impl Stream<Item = Arc<K>>) {
    changes
        .for_each(|obj| {
            gate.news(obj.as_ref());
            futures::future::ready(())
        })
        .await
}

/// Parents with news of their children, told to their gate (a parent no longer cached has
/// nothing left to reconcile).
async fn children_news<K: Kind>(
    gate: Gate,
    parents: Store<K>,
    news: impl Stream<Item = ObjectRef<K>>,
) {
    news.for_each(|parent| {
        if let Some(parent) = parents.get(&parent) {
            gate.news(parent.as_ref());
        }
        futures::future::ready(())
    })
    .await
}

/// Every cached object, told to its gate every `period` or so (see [`resync`]).
async fn resync_news<K: Kind>(gate: Gate, objects: Store<K>, period: Duration) {
    resync(period)
        .for_each(|()| {
            for obj in objects.state() {
                gate.news(obj.as_ref());
            }
            futures::future::ready(())
        })
        .await
}

/// What a controller's output stream is drained with: errors were already logged by the
/// error policy, so they only appear again at debug level; an object the Controller no longer
/// found in its cache gives back the turn its gate handed it.
fn log_result<T, E: std::error::Error, Q: std::error::Error>(
    controller: &'static str,
    gate: Gate,
) -> impl FnMut(Result<T, ControllerError<E, Q>>) -> futures::future::Ready<()> {
    move |result| {
        if let Err(error) = result {
            if let ControllerError::ObjectNotFound(obj) = &error {
                gate.not_found(obj.namespace.as_deref(), &obj.name);
            }
            debug!(controller, %error, "reconcile ended with an error");
        }
        futures::future::ready(())
    }
}
