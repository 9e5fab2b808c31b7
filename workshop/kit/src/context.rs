//! What every reconcile gets: a [`Context`] with the Kubernetes client, the typed [`Error`],
//! and the error policy and logging the controllers share.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::NamespaceResourceScope;
use kube::runtime::controller::{self, Action};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Api, Resource};

/// The field manager of every write: with server-side apply, the API server remembers which
/// fields this controller set, so re-applying the same object is a no-op and a hand edit of
/// one of those fields is taken back (with `force`).
pub const MANAGER: &str = "math-workshop";

/// What a reconcile can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Any call to the API server (not found, conflict, invalid, connection lost, ...).
    #[error("the API server said: {}", crate::room::said(.0))]
    Kube(#[from] kube::Error),
    /// An object the API server sent lacks something every stored object has.
    #[error("the object has no {0}")]
    Missing(&'static str),
}

/// `Result` with the workshop's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Shared by every reconcile of every controller (kube-rs passes it as `Arc<Context>`).
pub struct Context {
    /// The client of the current kubeconfig (or of the test API server).
    pub client: kube::Client,
    /// The one namespace the controllers look after, or `None` for every namespace.
    pub namespace: Option<String>,
    /// The last reconcile error per kind, for the checker's hints.
    errors: Mutex<BTreeMap<String, String>>,
}

impl Context {
    /// A context around a client, for controllers that look after one namespace (`Some`) or
    /// every namespace (`None`).
    pub fn new(client: kube::Client, namespace: Option<String>) -> Arc<Context> {
        Arc::new(Context {
            client,
            namespace,
            errors: Mutex::new(BTreeMap::new()),
        })
    }

    /// The objects of kind `K` the controllers watch: those of [`Context::namespace`], or of
    /// every namespace. In a room that shares one cluster, each participant's controllers must
    /// see only their own namespace: with `Api::all` they would reconcile, and overwrite,
    /// everyone's objects. (controller-runtime: the cache's `DefaultNamespaces`.)
    pub fn watched<K>(&self) -> Api<K>
    where
        K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>,
    {
        match &self.namespace {
            Some(namespace) => Api::namespaced(self.client.clone(), namespace),
            None => Api::all(self.client.clone()),
        }
    }

    /// The last error a reconcile of `kind` returned, if any.
    pub fn last_error(&self, kind: &str) -> Option<String> {
        self.errors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(kind)
            .cloned()
    }
}

/// What a controller does when a reconcile returns an error: log it, remember it for the
/// checker, and try that object again in a second (the finished manager backs off
/// exponentially instead).
pub fn error_policy<K>(object: Arc<K>, error: &Error, ctx: Arc<Context>) -> Action
where
    K: Resource<DynamicType = ()>,
{
    let kind = K::kind(&()).to_string();
    let name = object.meta().name.clone().unwrap_or_default();
    tracing::warn!(target: "math_workshop::context", %kind, %name, %error, "{}", crate::messages::RECONCILE_FAILED.text());
    ctx.errors
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(kind, format!("{name}: {error}"));
    Action::requeue(Duration::from_secs(1))
}

/// Logs what one reconcile did, for `Controller::run(..).for_each(log)`.
pub async fn log<K>(
    result: Result<(ObjectRef<K>, Action), controller::Error<Error, watcher::Error>>,
) where
    K: Resource<DynamicType = ()>,
{
    match result {
        Ok((object, _)) => tracing::info!(target: "math_workshop::context",
            kind = %K::kind(&()),
            name = %object.name,
            "{}",
            crate::messages::RECONCILED.text()
        ),
        // Reconcile errors were logged by error_policy already.
        Err(controller::Error::ReconcilerFailed(..)) => {}
        // A change of a child woke a parent that is gone (it was deleted, its children went
        // after it): kube-runtime never calls reconcile for an object that is not in its cache.
        Err(controller::Error::ObjectNotFound(object)) => {
            tracing::debug!(target: "math_workshop::context", %object, "not reconciled: no longer exists")
        }
        Err(error) => {
            tracing::warn!(target: "math_workshop::context", kind = %K::kind(&()), %error, "controller")
        }
    }
}
