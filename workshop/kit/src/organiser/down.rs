//! `make workshop-room-down`: everything `make workshop-room` made goes, and is named as it
//! goes. Every object the room made carries the label [`ROOM_LABEL`], so that what the
//! organiser's own cluster held before is never touched. The ServiceAccounts go first (their
//! tokens answer 401 from that moment, where deleting their namespace would leave them
//! working until the namespace controller comes to them), then the cluster-wide RBAC, the
//! namespaces (their Roles, RoleBindings and objects with them), the room's CRDs (every Number,
//! Tuple and Fermat of the cluster with them), and at last the files.

use std::path::Path;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::ResourceExt;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams};

use crate::messages as m;
use crate::t;

/// The label of every object `make workshop-room` makes, which `make workshop-room-down`
/// deletes.
pub const ROOM_LABEL: (&str, &str) = ("math.example.com/workshop-room", "true");

/// How long the namespaces and CRDs are waited for: the namespace controller deletes what is
/// in them first.
const WAIT: Duration = Duration::from_secs(120);

/// Takes the room down: deletes what carries [`ROOM_LABEL`] and the kubeconfigs in `dir`,
/// `say`ing each step as it is done. `Ok(false)`: there was no room.
pub async fn take_down(
    client: &kube::Client,
    dir: &Path,
    say: &mut impl FnMut(String),
) -> anyhow::Result<bool> {
    let accounts = remove(client, &ApiResource::erase::<ServiceAccount>(&())).await?;
    let bindings = remove(client, &ApiResource::erase::<ClusterRoleBinding>(&())).await?;
    let roles = remove(client, &ApiResource::erase::<ClusterRole>(&())).await?;
    let namespaces = remove(client, &ApiResource::erase::<Namespace>(&())).await?;
    let crds = remove(client, &ApiResource::erase::<CustomResourceDefinition>(&())).await?;
    let found = [&accounts, &bindings, &roles, &namespaces, &crds]
        .iter()
        .any(|names| !names.is_empty());
    if !accounts.is_empty() {
        say(t!(m::DOWN_ACCOUNTS, names = accounts.join(", ")));
    }
    if !roles.is_empty() || !bindings.is_empty() {
        say(t!(
            m::DOWN_CLUSTER_RBAC,
            role = roles.join(", "),
            names = bindings.join(", ")
        ));
    }
    if !namespaces.is_empty() {
        say(t!(m::DOWN_NAMESPACES, names = namespaces.join(", ")));
    }
    if !crds.is_empty() {
        say(t!(m::DOWN_CRDS, names = crds.join(", ")));
    }
    let files = remove_files(dir)?;
    if !files.is_empty() {
        say(t!(
            m::DOWN_FILES,
            dir = dir.display(),
            names = files.join(", ")
        ));
    }
    if found {
        say(wait_until_gone(client).await?);
    }
    Ok(found || !files.is_empty())
}

/// The label selector of [`ROOM_LABEL`].
fn selector() -> String {
    format!("{}={}", ROOM_LABEL.0, ROOM_LABEL.1)
}

/// Deletes every object of `resource` that carries [`ROOM_LABEL`]; their names (one already
/// gone counts as deleted).
async fn remove(client: &kube::Client, resource: &ApiResource) -> anyhow::Result<Vec<String>> {
    let all = Api::<DynamicObject>::all_with(client.clone(), resource);
    let found = all
        .list_metadata(&ListParams::default().labels(&selector()))
        .await
        .map_err(|e| anyhow::anyhow!("{}: {}", resource.plural, crate::room::said(&e)))?;
    let mut names = Vec::new();
    for object in found.items {
        let name = object.name_any();
        let api = match object.namespace() {
            Some(ns) => Api::<DynamicObject>::namespaced_with(client.clone(), &ns, resource),
            None => Api::<DynamicObject>::all_with(client.clone(), resource),
        };
        match api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(e) => anyhow::bail!("{} {name}: {}", resource.kind, crate::room::said(&e)),
        }
        names.push(name);
    }
    Ok(names)
}

/// Waits (up to [`WAIT`]) until no ServiceAccount, namespace or CRD of the room is left; the
/// line that says so, or what is still there.
async fn wait_until_gone(client: &kube::Client) -> anyhow::Result<String> {
    let started = Instant::now();
    let kinds = [
        ApiResource::erase::<ServiceAccount>(&()),
        ApiResource::erase::<Namespace>(&()),
        ApiResource::erase::<CustomResourceDefinition>(&()),
    ];
    loop {
        let mut left = Vec::new();
        for resource in &kinds {
            let api = Api::<DynamicObject>::all_with(client.clone(), resource);
            let found = api
                .list_metadata(&ListParams::default().labels(&selector()))
                .await
                .map_err(|e| anyhow::anyhow!("{}: {}", resource.plural, crate::room::said(&e)))?;
            left.extend(
                found
                    .items
                    .iter()
                    .map(|o| format!("{} {}", resource.kind, o.name_any())),
            );
        }
        let seconds = started.elapsed().as_secs();
        if left.is_empty() {
            return Ok(t!(m::DOWN_GONE, seconds = seconds));
        }
        if started.elapsed() >= WAIT {
            return Ok(t!(m::DOWN_LEFT, seconds = seconds, left = left.join(", ")));
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Removes the participants' kubeconfigs (`*.kubeconfig`) from `dir`, and `dir` when nothing
/// else is in it; their names, sorted.
fn remove_files(dir: &Path) -> anyhow::Result<Vec<String>> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(Vec::new());
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".kubeconfig") {
            std::fs::remove_file(entry.path())?;
            removed.push(name);
        }
    }
    removed.sort();
    // Only when empty: anything else in it is not the room's.
    let _ = std::fs::remove_dir(dir);
    Ok(removed)
}
