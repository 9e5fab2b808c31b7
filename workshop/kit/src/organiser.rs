//! `make workshop-room PARTICIPANTS="alice bob …"`: the organiser sets a shared cluster up once,
//! as its administrator, so that no participant can break another's work. The CRDs (the
//! reference solution's), and per participant a namespace, a ServiceAccount, a Role that allows
//! only what the stages, the checks and the runner's heartbeat need in that namespace, its
//! RoleBinding, a ClusterRoleBinding to read the CRDs (cluster-scoped: a Role cannot grant
//! them), and `workshop/room/<name>.kubeconfig`: the cluster of the organiser's kubeconfig, a
//! token of the ServiceAccount (TokenRequest, the day's lifetime), a context that names the
//! namespace. With that file a participant can neither read a neighbour's namespace nor change
//! a CRD: the API server answers 403.
//!
//! Every object is applied server-side, so the command can run again (a participant who joins
//! late, a token that expired) without touching what is there.

use std::path::{Path, PathBuf};

use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::config::Kubeconfig;
use serde_json::{Value, json};

use crate::room::{MANAGED_BY, PARTICIPANT, check_namespace, participant_namespace};

/// The field manager of the organiser's applies.
const MANAGER: &str = "math-workshop-room";
/// The name of each participant's Role and RoleBinding, and of the ClusterRole to read CRDs.
pub const ROLE: &str = "math-workshop-participant";
/// On a CRD the organiser installed: the cluster is a room's, shared. A participant's
/// `workshop-install` then installs nothing, and a runner refuses to watch every namespace.
pub const ROOM_CRD: &str = "math.example.com/workshop-room";
/// How long a participant's token lasts: the day (12 hours).
pub const TOKEN_SECONDS: i64 = 12 * 60 * 60;

/// Where a participant's kubeconfig is written, under the repository.
pub fn kubeconfig_path(repository: &Path, participant: &str) -> PathBuf {
    repository
        .join("workshop/room")
        .join(format!("{participant}.kubeconfig"))
}

/// What a participant may do in their namespace, and nothing outside it: the math kinds and
/// their status (the stages), Events (what the controllers and `kubectl describe` say), Leases
/// (the runner's heartbeat that `make workshop-room-status` reads), and `get` of the namespace
/// itself (a Role in a namespace grants that one, as kube-apiserver's RequestInfo names the
/// namespace of `GET /api/v1/namespaces/<it>`).
pub fn role_rules() -> Value {
    json!([
        {"apiGroups": ["math.example.com"],
         "resources": ["numbers", "tuples", "fermats", "numbers/status", "tuples/status", "fermats/status"],
         "verbs": ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"]},
        {"apiGroups": ["", "events.k8s.io"], "resources": ["events"],
         "verbs": ["get", "list", "watch", "create", "update", "patch"]},
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
         "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
        {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get"]},
    ])
}

/// The objects of one participant, in the order they are applied (kind, namespace, object):
/// their namespace, where their runner works, and their checks' (`CLUSTER=1` empties it at
/// start instead of creating it), each with the Role and its RoleBinding; the ServiceAccount in
/// the first; the binding to read CRDs.
pub fn participant_objects(participant: &str) -> Vec<(&'static str, Option<String>, Value)> {
    let own = participant_namespace(participant);
    let labels = json!({MANAGED_BY.0: MANAGED_BY.1});
    let meta = |name: &str, namespace: Option<&str>| {
        let mut meta = json!({"name": name, "labels": labels});
        if let Some(namespace) = namespace {
            meta["namespace"] = json!(namespace);
        }
        meta
    };
    let subject = json!([{"kind": "ServiceAccount", "name": participant, "namespace": own}]);
    let mut objects = Vec::new();
    for ns in [own.clone(), check_namespace(participant)] {
        let mut namespace = meta(&ns, None);
        namespace["annotations"] = json!({PARTICIPANT: participant});
        objects.push(("Namespace", None, json!({"metadata": namespace})));
        if ns == own {
            let account = json!({"metadata": meta(participant, Some(&ns))});
            objects.push(("ServiceAccount", Some(ns.clone()), account));
        }
        let role = json!({"metadata": meta(ROLE, Some(&ns)), "rules": role_rules()});
        objects.push(("Role", Some(ns.clone()), role));
        objects.push((
            "RoleBinding",
            Some(ns.clone()),
            json!({
                "metadata": meta(ROLE, Some(&ns)),
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": ROLE},
                "subjects": subject,
            }),
        ));
    }
    objects.push(("ClusterRoleBinding", None, json!({
        "metadata": meta(&format!("{ROLE}-{participant}"), None),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": ROLE},
        "subjects": subject,
    })));
    objects
}

/// The ClusterRole every participant is bound to: reading the CRDs (the tools compare the
/// installed ones with theirs), never changing them.
pub fn cluster_role() -> Value {
    json!({
        "metadata": {"name": ROLE, "labels": {MANAGED_BY.0: MANAGED_BY.1}},
        "rules": [{"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"],
                   "verbs": ["get", "list", "watch"]}],
    })
}

/// A participant's kubeconfig: the organiser's cluster entry as it is (server, certificate
/// authority), the token, and a context that names the participant's namespace, so that
/// `kubectl` and the tools work there without `-n`.
pub fn participant_kubeconfig(cluster: &Value, participant: &str, token: &str) -> Value {
    let context = format!("math-workshop-{participant}");
    json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "math-workshop", "cluster": cluster}],
        "users": [{"name": participant, "user": {"token": token}}],
        "contexts": [{"name": context, "context": {
            "cluster": "math-workshop", "user": participant,
            "namespace": participant_namespace(participant),
        }}],
        "current-context": context,
    })
}

/// The current context's cluster entry of the organiser's kubeconfig.
pub fn current_cluster(kubeconfig: &Kubeconfig) -> anyhow::Result<Value> {
    let context = kubeconfig
        .current_context
        .as_ref()
        .and_then(|name| kubeconfig.contexts.iter().find(|c| &c.name == name))
        .and_then(|c| c.context.as_ref())
        .ok_or_else(|| anyhow::anyhow!("the kubeconfig has no current context"))?;
    let cluster = kubeconfig
        .clusters
        .iter()
        .find(|c| c.name == context.cluster)
        .and_then(|c| c.cluster.as_ref())
        .ok_or_else(|| anyhow::anyhow!("the kubeconfig has no cluster {}", context.cluster))?;
    Ok(serde_json::to_value(cluster)?)
}

/// Applies the CRDs and every participant's objects, asks a token per participant and writes
/// their kubeconfigs; returns the files written.
pub async fn set_up(
    client: &kube::Client,
    crds: &[CustomResourceDefinition],
    cluster: &Value,
    participants: &[String],
    repository: &Path,
) -> anyhow::Result<Vec<PathBuf>> {
    let apply = PatchParams::apply(MANAGER).force();
    let crd_api = Api::<CustomResourceDefinition>::all(client.clone());
    for crd in crds {
        let name = crd.metadata.name.clone().unwrap_or_default();
        crd_api
            .patch(&name, &apply, &Patch::Apply(&of_the_room(crd)))
            .await?;
    }
    apply_object(client, "ClusterRole", None, cluster_role()).await?;
    let mut written = Vec::new();
    for participant in participants {
        for (kind, namespace, object) in participant_objects(participant) {
            apply_object(client, kind, namespace.as_deref(), object).await?;
        }
        let namespace = participant_namespace(participant);
        let request = TokenRequest {
            spec: Some(TokenRequestSpec {
                audiences: None,
                expiration_seconds: Some(TOKEN_SECONDS),
                ..Default::default()
            }),
            ..Default::default()
        };
        let token = Api::<ServiceAccount>::namespaced(client.clone(), &namespace)
            .create_token_request(participant, &PostParams::default(), &request)
            .await?
            .status
            .and_then(|s| s.token)
            .ok_or_else(|| anyhow::anyhow!("the TokenRequest for {participant} has no status"))?;
        let path = kubeconfig_path(repository, participant);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let yaml = serde_yaml::to_string(&participant_kubeconfig(cluster, participant, &token))?;
        write_private(&path, &yaml)?;
        written.push(path);
    }
    Ok(written)
}

/// A CRD as the organiser installs it: marked as the room's ([`ROOM_CRD`]), typed for apply.
pub fn of_the_room(crd: &CustomResourceDefinition) -> CustomResourceDefinition {
    let mut crd = crd.clone();
    crd.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(ROOM_CRD.to_string(), "true".to_string());
    crd
}

/// Whether the cluster is a room's: the organiser installed the Number CRD there. A CRD the
/// user may not read (a cluster that is not a room, with narrow rights) is no room either.
pub async fn is_a_room(client: &kube::Client) -> bool {
    Api::<CustomResourceDefinition>::all(client.clone())
        .get_opt("numbers.math.example.com")
        .await
        .ok()
        .flatten()
        .and_then(|crd| crd.metadata.annotations)
        .is_some_and(|a| a.contains_key(ROOM_CRD))
}

/// Writes a file only its owner can read (it holds a token).
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    std::fs::write(path, text)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(())
}

/// Server-side apply of one object of the kinds [`participant_objects`] names.
async fn apply_object(
    client: &kube::Client,
    kind: &str,
    namespace: Option<&str>,
    object: Value,
) -> anyhow::Result<()> {
    let name = object["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let ns = namespace.unwrap_or_default();
    let c = client.clone();
    let p = PatchParams::apply(MANAGER).force();
    macro_rules! apply {
        ($api:expr, $api_version:expr) => {{
            let mut object = object;
            object["apiVersion"] = json!($api_version);
            object["kind"] = json!(kind);
            $api.patch(&name, &p, &Patch::Apply(&object))
                .await
                .map(|_| ())
        }};
    }
    let rbac = "rbac.authorization.k8s.io/v1";
    match kind {
        "Namespace" => apply!(Api::<Namespace>::all(c), "v1"),
        "ServiceAccount" => apply!(Api::<ServiceAccount>::namespaced(c, ns), "v1"),
        "Role" => apply!(Api::<Role>::namespaced(c, ns), rbac),
        "RoleBinding" => apply!(Api::<RoleBinding>::namespaced(c, ns), rbac),
        "ClusterRole" => apply!(Api::<ClusterRole>::all(c), rbac),
        "ClusterRoleBinding" => apply!(Api::<ClusterRoleBinding>::all(c), rbac),
        other => anyhow::bail!("no kind {other} in a room"),
    }
    .map_err(|e| anyhow::anyhow!("{kind} {name}: {}", crate::room::said(&e)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_participants_rights_stop_at_their_namespace() {
        let objects = participant_objects("alice");
        let placed: Vec<(&str, Option<&str>)> = objects
            .iter()
            .map(|(kind, ns, _)| (*kind, ns.as_deref()))
            .collect();
        let own = Some("math-workshop-alice");
        let checks = Some("math-workshop-check-alice");
        assert_eq!(
            placed,
            [
                ("Namespace", None),
                ("ServiceAccount", own),
                ("Role", own),
                ("RoleBinding", own),
                ("Namespace", None),
                ("Role", checks),
                ("RoleBinding", checks),
                ("ClusterRoleBinding", None),
            ]
        );
        // Cluster-wide, only reading CRDs.
        let verbs = &cluster_role()["rules"][0]["verbs"];
        assert_eq!(verbs, &json!(["get", "list", "watch"]));
        let config = participant_kubeconfig(&json!({"server": "https://k:6443"}), "alice", "t");
        assert_eq!(
            config["contexts"][0]["context"]["namespace"],
            "math-workshop-alice"
        );
        assert_eq!(config["current-context"], "math-workshop-alice");
    }
}
