//! Before the controllers start: the API server answers, and serves the three kinds. A
//! learner who forgot `make install` reads that in one line; a manager started during a
//! control-plane restart waits for it (for at most `--startup-timeout`).

use std::fmt::Debug;
use std::time::Duration;

use kube::api::ListParams;
use kube::{Client, Resource};
use serde::de::DeserializeOwned;
use tracing::{info, warn};

use crate::api::{Fermat, Number, Tuple};
use crate::cluster::outage;
use crate::ops::manager::api;

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
        "not watching every namespace: the workshop's controllers look after objects in {0}. This cluster is a room's: run the manager in a namespace of its own (`--namespace <name>`), or on a cluster of its own"
    )]
    WorkshopRoom(String),
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
    if namespace.is_none() {
        room_guard(client).await?;
    }
    Ok(())
}

/// The field manager of the learner track's controllers (`math-workshop`, and
/// `math-workshop-<participant>` as its runner signs on a shared cluster).
const WORKSHOP_MANAGER: &str = "math-workshop";

/// Watching every namespace of a cluster where the workshop's participants run their own
/// controllers would adopt and rewrite their objects while their controllers fight back (the
/// organiser's demo on a room's cluster): refused, with the namespaces in question.
async fn room_guard(client: &Client) -> Result<(), StartError> {
    let mut rooms = std::collections::BTreeMap::new();
    workshop_namespaces::<Number>(client, &mut rooms).await?;
    workshop_namespaces::<Tuple>(client, &mut rooms).await?;
    workshop_namespaces::<Fermat>(client, &mut rooms).await?;
    match describe_rooms(&rooms) {
        Some(rooms) => Err(StartError::WorkshopRoom(rooms)),
        None => Ok(()),
    }
}

/// Counts, per namespace, the objects of kind `K` whose status a workshop controller writes.
async fn workshop_namespaces<K>(
    client: &Client,
    rooms: &mut std::collections::BTreeMap<String, usize>,
) -> Result<(), StartError>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + Debug,
{
    let mut params = ListParams::default().limit(500);
    loop {
        let page = api::<K>(client, &None)
            .list_metadata(&params)
            .await
            .map_err(|e| StartError::Unreachable(e.to_string()))?;
        for object in &page.items {
            if workshop_controlled(&object.metadata) {
                let ns = object.metadata.namespace.clone().unwrap_or_default();
                *rooms.entry(ns).or_insert(0) += 1;
            }
        }
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(()),
        }
    }
}

/// Whether a workshop controller writes this object's status (its managedFields say so).
fn workshop_controlled(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> bool {
    meta.managed_fields.iter().flatten().any(|entry| {
        entry.subresource.as_deref() == Some("status")
            && entry
                .manager
                .as_deref()
                .is_some_and(|m| m == WORKSHOP_MANAGER || m.starts_with("math-workshop-"))
    })
}

/// "2 namespaces (math-workshop-alice: 3, math-workshop-bob: 1)", or `None` for none.
fn describe_rooms(rooms: &std::collections::BTreeMap<String, usize>) -> Option<String> {
    if rooms.is_empty() {
        return None;
    }
    let listed: Vec<String> = rooms
        .iter()
        .take(5)
        .map(|(ns, n)| format!("{ns}: {n}"))
        .collect();
    let more = if rooms.len() > 5 { ", …" } else { "" };
    let count = match rooms.len() {
        1 => "1 namespace".to_string(),
        n => format!("{n} namespaces"),
    };
    Some(format!("{count} ({}{more})", listed.join(", ")))
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

#[cfg(test)]
mod room_tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ManagedFieldsEntry, ObjectMeta};

    fn meta(entries: &[(&str, Option<&str>)]) -> ObjectMeta {
        ObjectMeta {
            managed_fields: Some(
                entries
                    .iter()
                    .map(|(manager, sub)| ManagedFieldsEntry {
                        manager: Some(manager.to_string()),
                        subresource: sub.map(str::to_string),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        }
    }

    #[test]
    fn a_workshop_controller_is_known_by_the_status_it_writes() {
        assert!(workshop_controlled(&meta(&[(
            "math-workshop-alice",
            Some("status")
        )])));
        assert!(workshop_controlled(&meta(&[(
            "math-workshop",
            Some("status")
        )])));
        // Its spec writes are a parent's, which may be the manager's own Tuple; a status the
        // manager writes is not the workshop's; nor is a look-alike's.
        assert!(!workshop_controlled(&meta(&[(
            "math-workshop-alice",
            None
        )])));
        assert!(!workshop_controlled(&meta(&[("", Some("status"))])));
        assert!(!workshop_controlled(&meta(&[(
            "math-workshopper",
            Some("status")
        )])));
    }

    #[test]
    fn the_rooms_are_named_with_their_counts() {
        assert_eq!(describe_rooms(&Default::default()), None);
        let rooms = [
            ("math-workshop-alice".to_string(), 3),
            ("default".to_string(), 1),
        ];
        assert_eq!(
            describe_rooms(&rooms.into_iter().collect()).as_deref(),
            Some("2 namespaces (default: 1, math-workshop-alice: 3)")
        );
    }
}
