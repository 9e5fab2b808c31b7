//! `make workshop-room PARTICIPANTS="alice bob …"`: the organiser sets a shared cluster up once,
//! as its administrator, so that no participant can break another's work. The CRDs (the
//! reference solution's), and per participant a namespace, a ServiceAccount, a Role that allows
//! only what the stages, the checks and the runner's heartbeat need in that namespace, its
//! RoleBinding, a ClusterRoleBinding to read the CRDs (cluster-scoped: a Role cannot grant
//! them), and `workshop/room/<name>.kubeconfig`: a file that works on the participant's laptop
//! ([`files`]: the room's address, the authority inline, a token of the ServiceAccount that
//! outlives the evening before, a context that names the namespace). With that file a
//! participant can neither read a neighbour's namespace nor change a CRD: the API server answers
//! 403. Before anything is written, the names are checked ([`names`]) and the address the files
//! carry is tried ([`reach`]); at the end a table says who has which file until when
//! ([`table`]). `make workshop-room-down` takes it all away again ([`down`]).
//!
//! Every object is applied server-side, so the command can run again (a participant who joins
//! late, a token that ends) without touching what is there.

pub mod down;
pub mod files;
pub mod names;
pub mod reach;
pub mod table;

pub use down::ROOM_LABEL;
pub use files::{current_cluster, kubeconfig_path, participant_kubeconfig, room_dir};
pub use table::Handed;

use std::path::Path;

use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::room::{MANAGED_BY, PARTICIPANT, check_namespace, participant_namespace};

/// The field manager of the organiser's applies.
const MANAGER: &str = "math-workshop-room";
/// The name of each participant's Role and RoleBinding, and of the ClusterRole to read CRDs.
pub const ROLE: &str = "math-workshop-participant";
/// On a CRD the organiser installed: the cluster is a room's, shared. A participant's
/// `workshop-install` then installs nothing, and a runner refuses to watch every namespace.
pub const ROOM_CRD: &str = "math.example.com/workshop-room";
/// How long a participant's token lasts by default: the evening before and the day (36 hours;
/// `TOKEN_HOURS=` to choose). Files made the evening before still work at the end of the day.
pub const TOKEN_HOURS: i64 = 36;

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
    let labels = json!({MANAGED_BY.0: MANAGED_BY.1, ROOM_LABEL.0: ROOM_LABEL.1});
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
        "metadata": {"name": ROLE, "labels": {MANAGED_BY.0: MANAGED_BY.1, ROOM_LABEL.0: ROOM_LABEL.1}},
        "rules": [{"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"],
                   "verbs": ["get", "list", "watch"]}],
    })
}

/// What the organiser sets up: the CRDs, the cluster entry the files carry
/// ([`files::portable_cluster`]), who takes part, where their files go, and how long their
/// tokens last.
pub struct Room<'a> {
    pub crds: &'a [CustomResourceDefinition],
    pub cluster: &'a Value,
    pub participants: &'a [String],
    pub dir: &'a Path,
    pub token_hours: i64,
}

/// Applies the CRDs and every participant's objects, asks a token per participant and writes
/// their kubeconfigs; what each was handed.
pub async fn set_up(client: &kube::Client, room: &Room<'_>) -> anyhow::Result<Vec<Handed>> {
    let apply = PatchParams::apply(MANAGER).force();
    let crd_api = Api::<CustomResourceDefinition>::all(client.clone());
    for crd in room.crds {
        let name = crd.metadata.name.clone().unwrap_or_default();
        crd_api
            .patch(&name, &apply, &Patch::Apply(&of_the_room(crd)))
            .await?;
    }
    apply_object(client, "ClusterRole", None, cluster_role()).await?;
    std::fs::create_dir_all(room.dir)?;
    let mut handed = Vec::new();
    for participant in room.participants {
        for (kind, namespace, object) in participant_objects(participant) {
            apply_object(client, kind, namespace.as_deref(), object).await?;
        }
        let (token, expires) = token(client, participant, room.token_hours).await?;
        let namespace = participant_namespace(participant);
        let config = participant_kubeconfig(room.cluster, participant, &token);
        let shown = expires.map_or_else(|| "?".to_string(), |at| at.to_string());
        let path = kubeconfig_path(room.dir, participant);
        write_private(&path, &files::file_text(&config, participant, &shown)?)?;
        handed.push(Handed {
            participant: participant.clone(),
            file: path,
            namespace,
            expires,
        });
    }
    Ok(handed)
}

/// A token of the participant's ServiceAccount for `hours` (TokenRequest), and when the API
/// server says it ends (it may end sooner: `--service-account-max-token-expiration`).
async fn token(
    client: &kube::Client,
    participant: &str,
    hours: i64,
) -> anyhow::Result<(String, Option<k8s_openapi::jiff::Timestamp>)> {
    let request = TokenRequest {
        spec: Some(TokenRequestSpec {
            audiences: None,
            expiration_seconds: Some(hours * 60 * 60),
            ..Default::default()
        }),
        ..Default::default()
    };
    let namespace = participant_namespace(participant);
    let status = Api::<ServiceAccount>::namespaced(client.clone(), &namespace)
        .create_token_request(participant, &PostParams::default(), &request)
        .await?
        .status;
    let expires = status
        .as_ref()
        .and_then(|s| s.expiration_timestamp.as_ref())
        .map(|time| time.0);
    let token = status
        .and_then(|s| s.token)
        .ok_or_else(|| anyhow::anyhow!("the TokenRequest for {participant} has no token"))?;
    Ok((token, expires))
}

/// A CRD as the organiser installs it: marked as the room's ([`ROOM_CRD`], [`ROOM_LABEL`]),
/// typed for apply.
pub fn of_the_room(crd: &CustomResourceDefinition) -> CustomResourceDefinition {
    let mut crd = crd.clone();
    crd.metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert(ROOM_LABEL.0.to_string(), ROOM_LABEL.1.to_string());
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
