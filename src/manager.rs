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

use futures::channel::mpsc;
use futures::{Stream, StreamExt};
use kube::api::{Api, ListParams};
use kube::runtime::controller::{Action, Config as ControllerConfig, Controller};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use crate::api::{Fermat, Number, Tuple};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::health::{self, Readiness};
use crate::leader::{self, LeaderElectionConfig};
use crate::metrics::{Metrics, ReconcileResult};
use crate::metrics_auth::{self, SecureMetrics};
use crate::{fermat, number, tuple};

/// Kept by `kubectl apply` on every object; the manager never reads it.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
/// Exponential backoff of the error policy: 100 ms, 200 ms, ... capped at 5 minutes.
const BACKOFF_BASE: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(300);

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
    /// Lease-based leader election; `None` runs as the only replica.
    pub leader_election: Option<LeaderElectionConfig>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            namespace: None,
            concurrency: 16,
            metrics_address: None,
            metrics_secure: None,
            probe_address: None,
            leader_election: None,
        }
    }
}

/// The delay before the `attempt`-th retry (1-based): doubling from 100 ms, capped at 5 min.
pub fn backoff(attempt: u32) -> Duration {
    let factor = 2u32.saturating_pow(attempt.saturating_sub(1).min(16));
    BACKOFF_BASE.saturating_mul(factor).min(BACKOFF_MAX)
}

fn object_key<K: Resource<DynamicType = ()>>(obj: &K) -> String {
    format!(
        "{}/{}/{}",
        K::kind(&()),
        obj.namespace().unwrap_or_default(),
        obj.name_any()
    )
}

/// Runs a reconcile with metrics, and turns a 409 Conflict into a quiet, immediate retry:
/// it only means the cache was a step behind another writer.
async fn observed<K>(
    controller: &'static str,
    obj: Arc<K>,
    ctx: Arc<Context>,
    reconcile: impl Future<Output = Result<Action>>,
) -> Result<Action>
where
    K: Resource<DynamicType = ()>,
{
    let timer = ctx.metrics.reconcile_started(controller);
    let key = object_key(obj.as_ref());
    tracing::trace!("{key}: reconcile starts");
    let result = reconcile.await;
    tracing::trace!("{key}: reconcile ends");
    match result {
        Ok(action) => {
            ctx.note_success(&key);
            timer.finish(ReconcileResult::Success);
            Ok(action)
        }
        Err(error) if error.is_conflict() => {
            debug!(%error, "{key}: conflict, looking again");
            timer.finish(ReconcileResult::Requeue);
            Ok(Action::requeue(Duration::from_millis(50)))
        }
        Err(error) => {
            timer.finish(ReconcileResult::Error(error.kind_label()));
            Err(error)
        }
    }
}

/// Back off exponentially per object, and say so in words.
fn error_policy<K: Resource<DynamicType = ()>>(
    obj: Arc<K>,
    error: &Error,
    ctx: Arc<Context>,
) -> Action {
    let key = object_key(obj.as_ref());
    let attempt = ctx.note_failure(&key);
    let delay = backoff(attempt);
    warn!(%error, attempt, "{key}: reconcile failed; retrying in {delay:?}");
    Action::requeue(delay)
}

/// Drop what the manager never reads before it reaches the cache: managedFields and the
/// last-applied annotation are often larger than the object itself.
fn slim<K: Resource>(obj: &mut K) {
    obj.managed_fields_mut().clear();
    obj.annotations_mut().remove(LAST_APPLIED);
}

fn api<K>(client: &Client, namespace: &Option<String>) -> Api<K>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
{
    match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    }
}

/// Why the manager cannot start, in one line that says what to do.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(
        "cannot reach the Kubernetes API server: {0}. Is the cluster running (`kubectl cluster-info`)?"
    )]
    Unreachable(String),
    #[error(
        "the CustomResourceDefinitions are not installed ({0} not found). Run `make install` (or `kubectl apply -f crds/`) first."
    )]
    CrdsMissing(&'static str),
    #[error(
        "the API server refused to list {0}: {1}. Check the RBAC rules of the manager's account (deploy/)."
    )]
    Forbidden(&'static str, String),
}

/// Check that the cluster answers and serves the three kinds, before any watch starts: a
/// learner who forgot `make install` should read that, not a stream of watch errors.
pub async fn preflight(client: &Client, namespace: &Option<String>) -> Result<(), StartError> {
    async fn check<K>(
        client: &Client,
        namespace: &Option<String>,
        plural: &'static str,
    ) -> Result<(), StartError>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
            + Clone
            + DeserializeOwned
            + Debug,
    {
        match api::<K>(client, namespace)
            .list_metadata(&ListParams::default().limit(1))
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => Err(StartError::CrdsMissing(plural)),
            Err(kube::Error::Api(s)) if s.code == 401 || s.code == 403 => {
                Err(StartError::Forbidden(plural, s.message.clone()))
            }
            Err(e) => Err(StartError::Unreachable(e.to_string())),
        }
    }
    check::<Number>(client, namespace, "numbers.math.example.com").await?;
    check::<Tuple>(client, namespace, "tuples.math.example.com").await?;
    check::<Fermat>(client, namespace, "fermats.math.example.com").await?;
    Ok(())
}

/// The owners of kind `P` named in a child's ownerReferences, as cache keys, and the parent
/// whose desired child carries this name: a deleted object that somebody else controlled
/// (a conflict) frees the name, and that parent must hear of it to create its own.
fn owners<P: Resource<DynamicType = ()>, C: Resource>(child: &C) -> Vec<ObjectRef<P>> {
    let namespace = child.namespace();
    let by_name = parent_name::<P>(&child.name_any())
        .map(|name| ObjectRef::new(&name).within(namespace.as_deref().unwrap_or_default()));
    child
        .owner_references()
        .iter()
        .filter_map(|r| ObjectRef::from_owner_ref(namespace.as_deref(), r, ()))
        .chain(by_name)
        .collect()
}

/// The name of the parent of kind `P` that wants a child of this name: `<tuple>-<index>`
/// for a Tuple, `<fermat>-<a>-and-<b>` for a Fermat.
fn parent_name<P: Resource<DynamicType = ()>>(child: &str) -> Option<String> {
    fn strip_number(name: &str) -> Option<&str> {
        let (rest, digits) = name.rsplit_once('-')?;
        (!rest.is_empty() && !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
            .then_some(rest)
    }
    match P::kind(&()).as_ref() {
        "Tuple" => strip_number(child).map(str::to_string),
        "Fermat" => strip_number(child)
            .and_then(|rest| rest.strip_suffix("-and"))
            .and_then(strip_number)
            .map(str::to_string),
        _ => None,
    }
}

/// One watch of kind `K`: it feeds the cache behind `reader`, and hands every change to the
/// controllers that care: the object itself to `K`'s own controller, and its owners of kind
/// `P` (for a child that appeared, changed or was deleted) to the parent's controller.
///
/// This is kube-runtime's "shared stream" idea with plain unbounded channels for the
/// fan-out: kube-runtime 5's shared-store dispatcher does not forward deletions (so a
/// `kubectl delete number t-1` would never wake the Tuple), and its bounded buffer makes a
/// watch wait for the slowest controller.
fn watch_and_fan_out<K, P>(
    api: Api<K>,
    writer: reflector::store::Writer<K>,
    reader: Store<K>,
    own: mpsc::UnboundedSender<Arc<K>>,
    parents: Option<mpsc::UnboundedSender<ObjectRef<P>>>,
) -> impl Stream<Item = ()> + Send
where
    K: Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
    P: Resource<DynamicType = ()> + 'static,
{
    let tell_parents = move |obj: &K| {
        if let Some(tx) = &parents {
            for owner in owners::<P, K>(obj) {
                let _ = tx.unbounded_send(owner);
            }
        }
    };
    watcher(api, watcher::Config::default().any_semantic())
        .default_backoff()
        .modify(slim)
        .reflect(writer)
        .map(move |event| match event {
            Ok(watcher::Event::Apply(obj)) => {
                tell_parents(&obj);
                let _ = own.unbounded_send(Arc::new(obj));
            }
            Ok(watcher::Event::Delete(obj)) => tell_parents(&obj),
            // A (re)list is complete and the cache swapped in: everything is news, including
            // what vanished while the watch was down, which the parents find out by looking.
            Ok(watcher::Event::InitDone) => {
                for obj in reader.state() {
                    tell_parents(&obj);
                    let _ = own.unbounded_send(obj);
                }
            }
            Ok(watcher::Event::Init | watcher::Event::InitApply(_)) => {}
            Err(error) => warn!(%error, "watching {}s failed; retrying with backoff", K::kind(&())),
        })
}

/// Run the manager until `shutdown` resolves (or, with leader election, leadership is lost).
///
/// On shutdown the controllers stop taking work, in-flight reconciles finish, and the lease
/// is released so that a standby takes over at once.
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
            stop.clone().cancelled_owned(),
        )));
    }
    if let Some(address) = options.metrics_address {
        let listener = health::bind(address).await?;
        let shutdown = stop.clone().cancelled_owned();
        servers.push(match &options.metrics_secure {
            None => {
                let router = health::metrics_router(metrics.clone());
                tokio::spawn(health::serve_on(listener, "metrics", router, shutdown))
            }
            Some(secure) => tokio::spawn(metrics_auth::serve(
                listener,
                metrics.clone(),
                client.clone(),
                secure.clone(),
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

    let lost = CancellationToken::new();
    let controllers = run_controllers(
        client,
        &options,
        metrics.clone(),
        readiness.clone(),
        stop.clone(),
    );
    let outcome = match &leadership {
        Some(leadership) => {
            let mut controllers = std::pin::pin!(controllers);
            tokio::select! {
                _ = &mut controllers => None,
                _ = leadership.lost() => {
                    warn!("lost the lease; stopping the controllers");
                    lost.cancel();
                    stop.cancel();
                    controllers.await;
                    Some(anyhow::anyhow!("leadership lost"))
                }
            }
        }
        None => {
            controllers.await;
            None
        }
    };
    stop.cancel();
    if let Some(leadership) = leadership {
        metrics.set_leader(false);
        if !lost.is_cancelled() {
            match leadership.release().await {
                Ok(()) => info!("released the lease"),
                Err(error) => {
                    warn!(%error, "could not release the lease; a standby takes over when it expires")
                }
            }
        }
    }
    for server in servers {
        let _ = server.await;
    }
    match outcome {
        Some(error) => Err(error),
        None => Ok(()),
    }
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

    let ns = &options.namespace;
    let watches = futures::stream::select_all([
        watch_and_fan_out(
            api(&client, ns),
            number_writer,
            numbers.clone(),
            number_changes_tx,
            Some(tuples_with_news_tx),
        )
        .boxed(),
        watch_and_fan_out(
            api(&client, ns),
            tuple_writer,
            tuples.clone(),
            tuple_changes_tx,
            Some(fermats_with_news_tx),
        )
        .boxed(),
        watch_and_fan_out::<Fermat, Fermat>(
            api(&client, ns),
            fermat_writer,
            fermats.clone(),
            fermat_changes_tx,
            None,
        )
        .boxed(),
    ])
    .take_until(stop.clone().cancelled_owned())
    .for_each(|()| futures::future::ready(()));

    let caches = (numbers.clone(), tuples.clone(), fermats.clone());
    let ctx = Arc::new(Context::new(client.clone(), caches, metrics));
    let config = ControllerConfig::default().concurrency(options.concurrency);
    let number_controller = Controller::for_shared_stream(number_changes, numbers.clone())
        .with_config(config.clone())
        .graceful_shutdown_on(stop.clone().cancelled_owned())
        .run(
            |n, ctx| observed("number", n.clone(), ctx.clone(), number::reconcile(n, ctx)),
            error_policy,
            ctx.clone(),
        )
        .for_each(log_result("number"));
    let tuple_controller = Controller::for_shared_stream(tuple_changes, tuples.clone())
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
    // The watches run until `stop`; the controllers until their graceful shutdown completes.
    tokio::join!(controllers, async {
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
    fn a_child_name_leads_to_the_parent_that_wants_it() {
        assert_eq!(parent_name::<Tuple>("t-0").as_deref(), Some("t"));
        assert_eq!(
            parent_name::<Tuple>("f-1-and-49-1").as_deref(),
            Some("f-1-and-49")
        );
        assert_eq!(parent_name::<Tuple>("number-sample"), None);
        assert_eq!(
            parent_name::<Fermat>("fermat-50-1-and-49").as_deref(),
            Some("fermat-50")
        );
        assert_eq!(parent_name::<Fermat>("t-1"), None);
        assert_eq!(parent_name::<Fermat>("-1-and-2"), None);
    }

    #[test]
    fn backoff_doubles_and_is_capped() {
        assert_eq!(backoff(1), Duration::from_millis(100));
        assert_eq!(backoff(2), Duration::from_millis(200));
        assert_eq!(backoff(5), Duration::from_millis(1600));
        assert_eq!(backoff(40), BACKOFF_MAX);
    }
}
