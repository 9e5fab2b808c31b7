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
use crate::ops::manager::api;
use crate::runtime::outage;

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
