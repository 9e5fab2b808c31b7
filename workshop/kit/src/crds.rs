//! The CRDs generated from a track's Rust types, as `make manifests` did in kubebuilder.

use std::path::Path;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use test_apiserver::TestServer;

use crate::room;
use crate::track::Track;

/// The track's three CRDs, each marked as the workshop's, with the digest of its spec
/// ([`room::DIGEST`]): how another participant's install tells the same CRD from another.
pub fn generate(track: &Track) -> Vec<CustomResourceDefinition> {
    (track.crds)()
        .into_iter()
        .map(|mut crd| {
            let digest = room::digest(&crd);
            crd.metadata
                .labels
                .get_or_insert_default()
                .insert(room::MANAGED_BY.0.into(), room::MANAGED_BY.1.into());
            crd.metadata
                .annotations
                .get_or_insert_default()
                .insert(room::DIGEST.into(), digest);
            crd
        })
        .collect()
}

/// The track's three CRDs as one multi-document YAML stream (for `kubectl apply -f -`).
pub fn yaml(track: &Track) -> anyhow::Result<String> {
    let mut out = String::new();
    for crd in generate(track) {
        out.push_str("---\n");
        out.push_str(&serde_yaml::to_string(&crd)?);
    }
    Ok(out)
}

/// Writes one file per CRD into `dir` (`numbers.math.example.com.yaml`, ...); their names.
pub fn write(track: &Track, dir: &Path) -> anyhow::Result<Vec<String>> {
    std::fs::create_dir_all(dir)?;
    let mut names = Vec::new();
    for crd in generate(track) {
        let name = format!("{}.yaml", crd.metadata.name.clone().unwrap_or_default());
        std::fs::write(dir.join(&name), serde_yaml::to_string(&crd)?)?;
        names.push(name);
    }
    Ok(names)
}

/// A fresh test API server with the track's CRDs installed, as an organiser installs them once
/// on a room's cluster: what `run` works against without a cluster, and what the room's tests
/// start from.
pub async fn on_a_test_server(track: &Track) -> anyhow::Result<TestServer> {
    let server = TestServer::start().await?;
    server.apply_crd_yaml(&yaml(track)?)?;
    Ok(server)
}
