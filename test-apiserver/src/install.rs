//! Installing typed CRDs and waiting until they can be used, as envtest's `InstallCRDs`
//! does: a test that creates objects right after a CRD was created would otherwise race
//! the API server's discovery (kube-apiserver serves a new CRD a moment after it is
//! Established; kube-rs's `Discovery` and `kubectl` read discovery).

use crate::TestServer;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams};
use std::time::{Duration, Instant};

/// How long [`TestServer::apply_crds`] waits for each CRD (envtest's default is 10 s).
pub const CRD_READY_TIMEOUT: Duration = Duration::from_secs(10);

/// Why [`TestServer::apply_crds`] failed.
#[derive(Debug, thiserror::Error)]
pub enum ApplyCrdsError {
    /// The server refused the CRD (its answer, e.g. a 422 naming the invalid field).
    #[error("the CRD {name} was refused: {source}")]
    Refused {
        /// The CRD's name (`<plural>.<group>`).
        name: String,
        /// The API server's answer.
        source: kube::Error,
    },
    /// The CRD was accepted but was not Established and served within the timeout.
    #[error("the CRD {name} was not established and served within {timeout:?}: {waiting_for}")]
    NotReady {
        /// The CRD's name.
        name: String,
        /// How long it was waited for.
        timeout: Duration,
        /// What was still missing.
        waiting_for: String,
    },
}

impl TestServer {
    /// Applies the CRDs (server-side apply, field manager `test-apiserver`, forced) and
    /// returns once each is `Established` and each of its served versions lists the
    /// resource in discovery, so that the next request can use it. Takes kube's typed
    /// CRDs, e.g. from `CustomResourceExt::crd()`. Applying the same CRDs again is a no-op.
    pub async fn apply_crds(
        &self,
        crds: impl IntoIterator<Item = CustomResourceDefinition>,
    ) -> Result<(), ApplyCrdsError> {
        let api: Api<CustomResourceDefinition> = Api::all(self.client());
        let params = PatchParams::apply("test-apiserver").force();
        let mut applied = vec![];
        for mut crd in crds {
            let name = crd.metadata.name.clone().unwrap_or_default();
            // Server-side apply refuses a body that carries these.
            crd.metadata.managed_fields = None;
            crd.metadata.resource_version = None;
            crd.status = None;
            api.patch(&name, &params, &Patch::Apply(&crd))
                .await
                .map_err(|source| ApplyCrdsError::Refused {
                    name: name.clone(),
                    source,
                })?;
            applied.push(crd);
        }
        for crd in &applied {
            self.wait_until_served(&api, crd, CRD_READY_TIMEOUT).await?;
        }
        Ok(())
    }

    async fn wait_until_served(
        &self,
        api: &Api<CustomResourceDefinition>,
        crd: &CustomResourceDefinition,
        timeout: Duration,
    ) -> Result<(), ApplyCrdsError> {
        let name = crd.metadata.name.clone().unwrap_or_default();
        let deadline = Instant::now() + timeout;
        loop {
            let waiting_for = match api.get(&name).await {
                Ok(stored) if !established(&stored) => "the Established condition".to_string(),
                Ok(_) => match self.unserved_version(crd).await {
                    None => return Ok(()),
                    Some(v) => format!("{v} in discovery"),
                },
                Err(e) => format!("the CRD to be readable ({e})"),
            };
            if Instant::now() >= deadline {
                return Err(ApplyCrdsError::NotReady {
                    name,
                    timeout,
                    waiting_for,
                });
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// The first served `group/version` whose discovery does not list the CRD's resource.
    async fn unserved_version(&self, crd: &CustomResourceDefinition) -> Option<String> {
        let client = self.client();
        let plural = &crd.spec.names.plural;
        for v in crd.spec.versions.iter().filter(|v| v.served) {
            let gv = format!("{}/{}", crd.spec.group, v.name);
            let listed = client
                .list_api_group_resources(&gv)
                .await
                .is_ok_and(|list| list.resources.iter().any(|r| &r.name == plural));
            if !listed {
                return Some(gv);
            }
        }
        None
    }
}

/// Whether the CRD's `Established` condition is `True`.
fn established(crd: &CustomResourceDefinition) -> bool {
    crd.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
        })
}
