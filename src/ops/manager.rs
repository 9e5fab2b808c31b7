//! The manager: one process, one `kube::Client`, three controllers sharing three watches.
//!
//! Each kind is watched exactly once. The watch feeds a shared reflector store (the cache the
//! reconcilers read) and fans its changes out to every controller that cares: Numbers to the
//! Number controller and, as owned children, to the Tuple controller; Tuples to the Tuple
//! controller and to the Fermat controller; Fermats to the Fermat controller.

use std::fmt::Debug;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::channel::mpsc;
use kube::api::Api;
use kube::runtime::controller::{Action, Config as ControllerConfig, Controller};
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::watcher;
use kube::{Client, Resource};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use crate::api::{Fermat, Number, Tuple};
use crate::ops::client;
use crate::runtime::context::{Context, object_key};
use crate::error::{Error, Result};
use crate::ops::health::{self, Readiness};
use crate::ops::leader::{self, LeaderElectionConfig};
use crate::metrics::{Metrics, ReconcileResult};
use crate::ops::secure_metrics::{self, SecureMetrics};
use crate::runtime::outage;
use crate::ops::serving::HttpLimits;
use crate::ops::shutdown::{self, Stopped};
use crate::reconcile::status::{Outcome, Progress};
use crate::runtime::watches::{resync, watch_and_fan_out};
use crate::controller::{fermat, number, tuple};

/// Exponential backoff of the error policy: 100 ms, 200 ms, ... capped at 5 minutes.
const BACKOFF_BASE: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(300);
/// How often every object is reconciled again, regardless of watch events (controller-runtime's
/// SyncPeriod, which defaults to 10 hours; ours is shorter since a resync costs no request).
pub const DEFAULT_SYNC_PERIOD: Duration = Duration::from_secs(600);
/// A 409 is retried sooner (it usually only means the cache was a step behind), but through
/// the same per-object count: 50 ms, 100 ms, ... so that a child whose watch is down is not
/// hammered 20 times a second.
const CONFLICT_BACKOFF_BASE: Duration = Duration::from_millis(50);
/// The default bound on a graceful shutdown's wait for the reconciles in flight: below
/// `deploy/`'s `terminationGracePeriodSeconds` (15 s) with room to release the lease.
pub const DEFAULT_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(10);

/// How the manager runs; built from the command line in `main.rs`, or by tests.
#[derive(Clone, Debug)]
pub struct Options {
    /// Watch and reconcile only this namespace; `None` means all namespaces.
    pub namespace: Option<String>,
    /// Reconciles each controller runs at once (0 means unbounded).
    pub concurrency: u16,
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
    /// (see [`Context::expect_change`]); tests shorten it.
    pub in_flight_timeout: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            namespace: None,
            concurrency: 16,
            metrics_address: None,
            metrics_secure: None,
            probe_address: None,
            http: HttpLimits::default(),
            leader_election: None,
            sync_period: DEFAULT_SYNC_PERIOD,
            shutdown_timeout: DEFAULT_SHUTDOWN_TIMEOUT,
            read_timeout: None,
            in_flight_timeout: crate::runtime::context::IN_FLIGHT_TIMEOUT,
        }
    }
}

/// The delay before the `attempt`-th retry (1-based): doubling from 100 ms, capped at 5 min.
pub fn backoff(attempt: u32) -> Duration {
    backoff_from(BACKOFF_BASE, attempt)
}

/// The delay before the `attempt`-th retry after a 409 Conflict: doubling from 50 ms.
pub fn conflict_backoff(attempt: u32) -> Duration {
    backoff_from(CONFLICT_BACKOFF_BASE, attempt)
}

fn backoff_from(base: Duration, attempt: u32) -> Duration {
    let factor = 2u32.saturating_pow(attempt.saturating_sub(1).min(16));
    base.saturating_mul(factor).min(BACKOFF_MAX)
}

/// Runs a reconcile with metrics, and turns a 409 Conflict into a quiet retry with its own
/// short backoff: it only means the cache was a step behind another writer.
///
/// A reconcile that ends with its object's status not final (waiting for children) counts
/// as a `requeue`, one that ends final as a `success`.
async fn observed<K>(
    controller: &'static str,
    obj: Arc<K>,
    ctx: Arc<Context>,
    reconcile: impl Future<Output = Result<Outcome>>,
) -> Result<Action>
where
    K: Resource<DynamicType = ()>,
{
    let key = object_key(obj.as_ref());
    if ctx.outage.is_down() {
        // Every request would fail, and the outage's probe tells when to try again: wait
        // without knocking (or logging the plan again), and run within a second of its return.
        let attempt = ctx.outage.waiting(&key);
        return Ok(Action::requeue(outage::retry_delay(
            attempt,
            outage::random(),
        )));
    }
    let timer = ctx.metrics.reconcile_started(controller);
    tracing::trace!("{key}: reconcile starts");
    let result = reconcile.await;
    tracing::trace!("{key}: reconcile ends");
    match result {
        Ok(outcome) => {
            ctx.note_success(&key);
            ctx.outage.reconciled(&key);
            if outcome.progress != Progress::Pending {
                ctx.note_settled(K::kind(&()));
            }
            timer.finish(match outcome.progress {
                Progress::Settled | Progress::Blocked => ReconcileResult::Success,
                Progress::Pending => ReconcileResult::Requeue,
            });
            Ok(match outcome.requeue_after {
                Some(after) => Action::requeue(after),
                None => Action::await_change(),
            })
        }
        Err(error) if error.is_conflict() => {
            let delay = conflict_backoff(ctx.note_failure(&key));
            debug!(%error, "{key}: conflict, looking again in {delay:?}");
            timer.finish(ReconcileResult::Requeue);
            Ok(Action::requeue(delay))
        }
        Err(error) => {
            timer.finish(ReconcileResult::Error(error.kind_label()));
            Err(error)
        }
    }
}

/// Back off exponentially per object, and say so in words; an unreachable API server is
/// retried fast instead (see [`crate::runtime::outage`]).
fn error_policy<K: Resource<DynamicType = ()>>(
    obj: Arc<K>,
    error: &Error,
    ctx: Arc<Context>,
) -> Action {
    let key = object_key(obj.as_ref());
    if error.is_unreachable() {
        // An outage: retry within a second of the server's return, and let the outage
        // say it once instead of a line per object per attempt. Its retries are counted by
        // the outage, not as failures of the object.
        let attempt = ctx.outage.unreachable(Some(&key), error);
        let delay = outage::retry_delay(attempt, outage::random());
        debug!(%error, attempt, "{key}: API server unreachable; retrying in {delay:?}");
        return Action::requeue(delay);
    }
    let attempt = ctx.note_failure(&key);
    let delay = backoff(attempt);
    warn!(%error, attempt, "{key}: reconcile failed; retrying in {delay:?}");
    Action::requeue(delay)
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
    let readiness = Readiness::default();
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
            match leader::acquire(
                client.clone(),
                config.clone(),
                stop.clone().cancelled_owned(),
            )
            .await?
            {
                Some(leadership) => {
                    info!(identity = %config.identity, "became the leader; starting the controllers");
                    metrics.set_leader(true);
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
        None => {
            // The only replica is the leader, as far as the metric is concerned.
            metrics.set_leader(true);
            None
        }
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
        metrics.set_leader(false);
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
    readiness: Readiness,
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
            .with_in_flight_timeout(options.in_flight_timeout),
    );
    let ns = &options.namespace;
    // The server ends each watch before the client's read timeout could cut a quiet one.
    let watch_timeout = client::watch_timeout_seconds(options.read_timeout);
    let watch_config = watcher::Config::default()
        .any_semantic()
        .timeout(watch_timeout);
    let watches = futures::stream::select_all([
        watch_and_fan_out(
            api(&client, ns),
            watch_config.clone(),
            number_writer,
            numbers.clone(),
            number_changes_tx,
            Some(tuples_with_news_tx),
            ctx.clone(),
        )
        .boxed(),
        watch_and_fan_out(
            api(&client, ns),
            watch_config.clone(),
            tuple_writer,
            tuples.clone(),
            tuple_changes_tx,
            Some(fermats_with_news_tx),
            ctx.clone(),
        )
        .boxed(),
        watch_and_fan_out::<Fermat, Fermat>(
            api(&client, ns),
            watch_config.clone(),
            fermat_writer,
            fermats.clone(),
            fermat_changes_tx,
            None,
            ctx.clone(),
        )
        .boxed(),
    ])
    .take_until(stop.clone().cancelled_owned())
    .for_each(|()| futures::future::ready(()));

    let config = ControllerConfig::default().concurrency(options.concurrency);
    let number_controller = Controller::for_shared_stream(number_changes, numbers.clone())
        .reconcile_all_on(resync(options.sync_period))
        .with_config(config.clone())
        .graceful_shutdown_on(stop.clone().cancelled_owned())
        .run(
            |n, ctx| observed("number", n.clone(), ctx.clone(), number::reconcile(n, ctx)),
            error_policy,
            ctx.clone(),
        )
        .for_each(log_result("number"));
    let tuple_controller = Controller::for_shared_stream(tuple_changes, tuples.clone())
        .reconcile_all_on(resync(options.sync_period))
        .reconcile_on(tuples_with_news)
        .with_config(config.clone())
        .graceful_shutdown_on(stop.clone().cancelled_owned())
        .run(
            |t, ctx| observed("tuple", t.clone(), ctx.clone(), tuple::reconcile(t, ctx)),
            error_policy,
            ctx.clone(),
        )
        .for_each(log_result("tuple"));
    let fermat_controller = Controller::for_shared_stream(fermat_changes, fermats.clone())
        .reconcile_all_on(resync(options.sync_period))
        .reconcile_on(fermats_with_news)
        .with_config(config)
        .graceful_shutdown_on(stop.clone().cancelled_owned())
        .run(
            |f, ctx| observed("fermat", f.clone(), ctx.clone(), fermat::reconcile(f, ctx)),
            error_policy,
            ctx.clone(),
        )
        .for_each(log_result("fermat"));

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
                numbers = ctx.numbers.state().len(),
                tuples = ctx.tuples.state().len(),
                fermats = ctx.fermats.state().len(),
                namespace = ns.as_deref().unwrap_or("all namespaces"),
                "caches synced; starting the Number, Tuple and Fermat controllers"
            );
            tokio::join!(number_controller, tuple_controller, fermat_controller);
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
    // The watches run until `stop`; the controllers until their graceful shutdown completes.
    tokio::join!(controllers, sweeps, async {
        watches.await;
        debug!("watches stopped");
    });
}

/// What a controller's output stream is drained with: errors were already logged by the
/// error policy, so they only appear again at debug level.
fn log_result<T, E: std::fmt::Display>(
    controller: &'static str,
) -> impl FnMut(Result<T, E>) -> futures::future::Ready<()> {
    move |result| {
        if let Err(error) = result {
            debug!(controller, %error, "reconcile ended with an error");
        }
        futures::future::ready(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_is_capped() {
        assert_eq!(backoff(1), Duration::from_millis(100));
        assert_eq!(backoff(2), Duration::from_millis(200));
        assert_eq!(backoff(5), Duration::from_millis(1600));
        assert_eq!(backoff(40), BACKOFF_MAX);
        assert_eq!(conflict_backoff(1), Duration::from_millis(50));
        assert_eq!(conflict_backoff(3), Duration::from_millis(200));
        assert_eq!(conflict_backoff(u32::MAX), BACKOFF_MAX);
    }
}
