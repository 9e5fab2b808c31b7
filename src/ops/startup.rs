//! Before the controllers start: the API server answers, and serves the three kinds. A
//! learner who forgot `make install` reads that in one line; a manager started during a
//! control-plane restart waits for it (for at most `--startup-timeout`). Then the learner track
//! ([`workshop`]): after the workshop the manager takes the learner's objects over, unless a
//! workshop controller still runs, or the cluster is a room's.

use std::fmt::Debug;
use std::time::Duration;

use std::collections::BTreeMap;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ListParams};
use kube::{Client, Resource};
use serde::de::DeserializeOwned;
use tracing::{debug, info, warn};

use crate::api::{Fermat, Number, Tuple};
use crate::cluster::outage;
use crate::ops::manager::api;
use crate::ops::workshop;

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
    #[error(
        "not watching every namespace: the workshop's controllers look after objects in {0}. This cluster is a room's (make workshop-room installed its CRDs): run the manager in a namespace of its own (`--namespace <name>`), or on a cluster of its own"
    )]
    WorkshopRoom(String),
    /// A workshop runner still runs ([`workshop::runners_line`]).
    #[error("{0}")]
    WorkshopRunning(String),
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
    workshop_guard(client, namespace).await
}

/// The learner track in the cluster ([`workshop`]): on a room's cluster, not every namespace;
/// never beside a workshop runner that is still running; otherwise the learner's objects are
/// taken over, and the log says so once.
async fn workshop_guard(client: &Client, namespace: &Option<String>) -> Result<(), StartError> {
    let runners = running_runners(client, namespace).await;
    let mut objects = BTreeMap::new();
    workshop_objects::<Number>(client, namespace, &mut objects).await?;
    workshop_objects::<Tuple>(client, namespace, &mut objects).await?;
    workshop_objects::<Fermat>(client, namespace, &mut objects).await?;
    let busy = !objects.is_empty() || !runners.is_empty();
    if namespace.is_none() && busy && is_a_room(client).await {
        let mut places = objects.clone();
        for runner in &runners {
            places.entry(runner.namespace.clone()).or_insert(0);
        }
        let places = workshop::describe_namespaces(&places).unwrap_or_default();
        return Err(StartError::WorkshopRoom(places));
    }
    if !runners.is_empty() {
        return Err(StartError::WorkshopRunning(workshop::runners_line(
            &runners,
        )));
    }
    if let Some(found) = workshop::describe_namespaces(&objects) {
        info!(
            "taking over what the workshop's controllers left in {found}: their children are \
             their parents' already, and every status is rewritten whole"
        );
    }
    Ok(())
}

/// The workshop runners whose heartbeat is fresh, in `namespace` or all of them; none when the
/// Leases cannot be listed (RBAC: a deployed manager, see [`workshop`]).
async fn running_runners(client: &Client, namespace: &Option<String>) -> Vec<workshop::Runner> {
    let params =
        ListParams::default().fields(&format!("metadata.name={}", workshop::RUNNER_HEARTBEAT));
    match api::<Lease>(client, namespace).list(&params).await {
        Ok(leases) => workshop::running(&leases.items, Timestamp::now()),
        Err(error) => {
            debug!(%error, "cannot list the workshop runners' heartbeats");
            Vec::new()
        }
    }
}

/// Whether `make workshop-room` installed the CRDs ([`workshop::ROOM_MARK`]); `false` when
/// they cannot be read.
async fn is_a_room(client: &Client) -> bool {
    match Api::<CustomResourceDefinition>::all(client.clone())
        .get_opt("numbers.math.example.com")
        .await
    {
        Ok(crd) => crd.as_ref().is_some_and(workshop::marks_a_room),
        Err(error) => {
            debug!(%error, "cannot read the Number CRD to tell a room's cluster");
            false
        }
    }
}

/// Counts, per namespace, the objects of kind `K` whose status a workshop controller writes.
async fn workshop_objects<K>(
    client: &Client,
    namespace: &Option<String>,
    counts: &mut BTreeMap<String, usize>,
) -> Result<(), StartError>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + Debug,
{
    let mut params = ListParams::default().limit(500);
    loop {
        let page = api::<K>(client, namespace)
            .list_metadata(&params)
            .await
            .map_err(|e| StartError::Unreachable(e.to_string()))?;
        for object in &page.items {
            if workshop::workshop_controlled(&object.metadata) {
                let ns = object.metadata.namespace.clone().unwrap_or_default();
                *counts.entry(ns).or_insert(0) += 1;
            }
        }
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(()),
        }
    }
}

/// How long a manager started while the API server is unreachable waits for it: long enough
/// for a control-plane restart (a pod restarted during an upgrade).
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// [`preflight`], retried while the API server is unreachable (connection refused: a
/// control plane restarting, a minikube still starting), for at most `timeout`. Says so in
/// one line, then a line per [`outage::REPORT_EVERY`] at most. Any other answer (CRDs
/// missing, forbidden) is final at once.
pub async fn wait_for_api_server(
    client: &Client,
    namespace: &Option<String>,
    timeout: Duration,
) -> Result<(), StartError> {
    let started = std::time::Instant::now();
    let mut reported: Option<std::time::Instant> = None;
    let mut attempt = 0;
    loop {
        match preflight(client, namespace).await {
            Err(StartError::Unreachable(error)) => {
                let waited = started.elapsed();
                if waited >= timeout {
                    return Err(StartError::Unreachable(format!(
                        "{error} (waited {:.0?})",
                        timeout
                    )));
                }
                if reported.is_none_or(|t| t.elapsed() >= outage::REPORT_EVERY) {
                    warn!(
                        %error,
                        "waiting for the API server ({:.0?} so far, giving up after {timeout:?})",
                        waited
                    );
                    reported = Some(std::time::Instant::now());
                }
                let delay = outage::retry_delay(attempt, outage::random());
                attempt += 1;
                tokio::time::sleep(delay.min(timeout.saturating_sub(waited))).await;
            }
            Ok(()) if reported.is_some() => {
                info!(
                    "API server reachable after {:.1?}; starting",
                    started.elapsed()
                );
                return Ok(());
            }
            other => return other,
        }
    }
}
