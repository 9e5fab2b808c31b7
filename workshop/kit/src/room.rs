//! How a room of participants stays safe on one shared cluster (not how the workshop is meant
//! to run, see the guide's first screen, but it must not hurt anyone when it happens):
//!
//! - each participant's `--cluster` checks work in a namespace of their own, named after the
//!   participant, marked as theirs when created ([`marked_namespace`]), and deleted only by
//!   them (`check::namespace`; in a room, the organiser's, emptied instead);
//! - the controllers of a check, and of `workshop-run`, watch one namespace, not the cluster
//!   ([`crate::context::Context::watched`]);
//! - CRDs are cluster-scoped: installing yours over different ones that objects in other
//!   namespaces use, or objects of your namespace that another controller looks after, is
//!   refused unless forced ([`may_install`]);
//! - `workshop-run` and `workshop-install` work in the participant's namespace
//!   ([`your_namespace`]), and every request they and the checks send is signed with the
//!   participant's name ([`Signature`]): a runner that finds objects another controller looks
//!   after (another participant's runner, the finished manager) leaves them alone
//!   ([`others_controllers`]).

use crate::messages as m;
use crate::t;
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, ObjectMeta, PostParams,
};
use serde_json::Value;

/// The label every namespace and CRD the workshop tools create carries.
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "math-workshop");
/// On a check's namespace: the participant it belongs to.
pub const PARTICIPANT: &str = "math.example.com/workshop-participant";
/// On a CRD written by the workshop: a digest of its spec, so that two participants can tell
/// "the same CRD" (nothing changes when either installs it) from "another one".
pub const DIGEST: &str = "math.example.com/workshop-crd-digest";

/// Who is checking: `--participant`, or the user and host names (`alice-laptop`), lower-case
/// letters, digits and dashes. Two laptops rarely share both; a room that has identical
/// machines sets `PARTICIPANT=` per person.
pub fn participant(explicit: Option<&str>) -> String {
    let raw = match explicit {
        Some(name) => name.to_string(),
        None => {
            let user = ["USER", "USERNAME", "LOGNAME"]
                .iter()
                .find_map(|var| std::env::var(var).ok().filter(|v| !v.is_empty()))
                .unwrap_or_else(|| "learner".to_string());
            match hostname() {
                Some(host) => format!("{user}-{}", host.split('.').next().unwrap_or(&host)),
                None => user,
            }
        }
    };
    let name = dns_label(&raw, 40);
    if name.is_empty() {
        "learner".to_string()
    } else {
        name
    }
}

/// The namespace of a participant's `--cluster` checks.
pub fn check_namespace(participant: &str) -> String {
    dns_label(&format!("math-workshop-check-{participant}"), 63)
}

/// The participant's own namespace on a shared cluster, beside the checks' throwaway one
/// ([`check_namespace`]): a check deletes its namespace when it starts and ends, so it cannot
/// be the one that holds the participant's work.
pub fn participant_namespace(participant: &str) -> String {
    dns_label(&format!("math-workshop-{participant}"), 63)
}

/// Where `workshop-run` and `workshop-install` work, by kubectl's rule: `NAMESPACE=` if given;
/// else the namespace the kubeconfig's context names; else `default`, as kubectl. So a plain
/// `kubectl apply -f samples/…` lands where the runner looks, on kind's kubeconfig (its context
/// names no namespace) as on minikube's (it names `default`); a room's kubeconfig
/// (`make workshop-room`) names the participant's own namespace, so there it is theirs.
pub fn your_namespace(explicit: Option<&str>, context: Option<&str>) -> String {
    explicit.or(context).unwrap_or("default").to_string()
}

/// Creates `name` for `participant` (marked as theirs, as a check's) when it does not exist;
/// one that exists is used as it is, and never deleted: it holds the participant's work.
pub async fn ensure_namespace(
    client: &kube::Client,
    name: &str,
    participant: &str,
) -> Result<(), String> {
    let api = Api::<Namespace>::all(client.clone());
    let existing = api
        .get_opt(name)
        .await
        .map_err(|e| t!(m::CANNOT_READ_NAMESPACE, name = name, said = said(&e)))?;
    if existing.is_some() {
        return Ok(());
    }
    match api
        .create(&PostParams::default(), &marked_namespace(name, participant))
        .await
    {
        Ok(_) => Ok(()),
        // Created at the same moment by the participant's other tool.
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
        Err(e) => Err(t!(m::CANNOT_CREATE_NAMESPACE, name = name, said = said(&e))),
    }
}

/// Namespace `name` as the tools create it: labelled as the workshop's ([`MANAGED_BY`]) and
/// marked as `participant`'s ([`PARTICIPANT`]), so that no one else's tool claims it.
pub(crate) fn marked_namespace(name: &str, participant: &str) -> Namespace {
    Namespace {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some([(MANAGED_BY.0.to_string(), MANAGED_BY.1.to_string())].into()),
            annotations: Some([(PARTICIPANT.to_string(), participant.to_string())].into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Whose controllers wrote: the participant's name on every request of the runner and of a
/// `--cluster` check. The field manager `math-workshop` of the exercises' server-side applies
/// becomes `math-workshop-<participant>` (and the User-Agent says the same), so that the
/// objects' managedFields and the API server's audit or request log tell two participants'
/// controllers apart, and a runner can tell its own objects from someone else's.
#[derive(Debug, Clone)]
pub struct Signature {
    manager: String,
}

impl Signature {
    pub fn new(participant: &str) -> Signature {
        Signature {
            manager: format!("{}-{participant}", crate::context::MANAGER),
        }
    }

    /// `math-workshop-<participant>`.
    pub fn field_manager(&self) -> &str {
        &self.manager
    }

    /// `math-workshop-<participant>/<version>`: an API server that derives a field manager
    /// from the User-Agent (a write without `fieldManager`) derives the same one.
    pub fn user_agent(&self) -> String {
        format!("{}/{}", self.manager, env!("CARGO_PKG_VERSION"))
    }

    /// The query of a request, with the exercises' field manager replaced by the
    /// participant's; every other parameter as it was.
    pub fn sign_query(&self, query: &str) -> String {
        let plain = format!("fieldManager={}", crate::context::MANAGER);
        query
            .split('&')
            .map(|pair| {
                if pair == plain {
                    format!("fieldManager={}", self.manager)
                } else {
                    pair.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("&")
    }

    /// A client of `config` whose every request carries the signature.
    pub fn client(&self, mut config: kube::Config) -> kube::Result<kube::Client> {
        if let Ok(agent) = http::HeaderValue::from_str(&self.user_agent()) {
            config.headers.push((http::header::USER_AGENT, agent));
        }
        let signature = self.clone();
        let sign = tower::util::MapRequestLayer::new(
            move |mut request: http::Request<kube::client::Body>| {
                signature.sign(&mut request);
                request
            },
        );
        Ok(kube::client::ClientBuilder::try_from(config)?
            .with_layer(&sign)
            .build())
    }

    fn sign<B>(&self, request: &mut http::Request<B>) {
        let Some(query) = request.uri().query() else {
            return;
        };
        let signed = self.sign_query(query);
        if signed == query {
            return;
        }
        let path_and_query = format!("{}?{signed}", request.uri().path());
        let mut parts = request.uri().clone().into_parts();
        parts.path_and_query = path_and_query.parse().ok().or(parts.path_and_query);
        if let Ok(uri) = http::Uri::from_parts(parts) {
            *request.uri_mut() = uri;
        }
    }
}

/// An object of the workshop's kinds whose status another controller writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Foreign {
    /// `Tuple/tuple-sample`.
    pub object: String,
    /// The field manager of its status: `math-workshop-bob`, or the name the finished manager's
    /// requests go by (empty when it sends none).
    pub controller: String,
}

/// The controller that writes an object's status, from its managedFields: the manager of the
/// newest entry of the status subresource that is not a person's (`kubectl …`).
pub fn status_writer(meta: &ObjectMeta) -> Option<String> {
    meta.managed_fields
        .iter()
        .flatten()
        .filter(|entry| entry.subresource.as_deref() == Some("status"))
        .map(|entry| entry.manager.clone().unwrap_or_default())
        .rfind(|manager| !manager.starts_with("kubectl"))
}

/// Among `objects` (kind, metadata), those whose status a controller other than `me` writes.
pub fn foreign<'a>(
    objects: impl IntoIterator<Item = (&'a str, &'a ObjectMeta)>,
    me: &Signature,
) -> Vec<Foreign> {
    objects
        .into_iter()
        .filter_map(|(kind, meta)| {
            let controller = status_writer(meta)?;
            (controller != me.field_manager()).then(|| Foreign {
                object: format!("{kind}/{}", meta.name.clone().unwrap_or_default()),
                controller,
            })
        })
        .collect()
}

/// The objects of `kinds` (the track's CRDs) in `namespace` that another controller looks
/// after (see [`foreign`]); a kind that is not installed has none.
pub async fn others_controllers(
    client: &kube::Client,
    crds: &[CustomResourceDefinition],
    namespace: &str,
    me: &Signature,
) -> Result<Vec<Foreign>, String> {
    let mut found = Vec::new();
    for crd in crds {
        let resource = resource_of(crd);
        let api = Api::<DynamicObject>::namespaced_with(client.clone(), namespace, &resource);
        let list = match api.list_metadata(&ListParams::default()).await {
            Ok(list) => list,
            Err(kube::Error::Api(status)) if status.code == 404 => continue,
            Err(e) => return Err(said(&e)),
        };
        let kind = crd.spec.names.kind.as_str();
        found.extend(foreign(
            list.items.iter().map(|object| (kind, &object.metadata)),
            me,
        ));
    }
    Ok(found)
}

/// One line about what [`others_controllers`] found: how many, the first few, and whose.
pub fn describe_foreign(found: &[Foreign]) -> String {
    let mut controllers: Vec<String> = found
        .iter()
        .map(|f| match f.controller.as_str() {
            "" => m::UNNAMED_CONTROLLER.text(),
            name => name.to_string(),
        })
        .collect();
    controllers.sort();
    controllers.dedup();
    let mut objects: Vec<&str> = found.iter().take(3).map(|f| f.object.as_str()).collect();
    if found.len() > 3 {
        objects.push("…");
    }
    t!(
        m::FOREIGN_OBJECTS,
        count = found.len(),
        objects = objects.join(", "),
        controllers = controllers.join(", ")
    )
}

/// The dynamic API resource of a CRD's first served version.
pub(crate) fn resource_of(crd: &CustomResourceDefinition) -> ApiResource {
    let version = crd
        .spec
        .versions
        .iter()
        .find(|v| v.served)
        .map(|v| v.name.clone())
        .unwrap_or_default();
    let gvk = GroupVersionKind::gvk(&crd.spec.group, &version, &crd.spec.names.kind);
    ApiResource::from_gvk_with_plural(&gvk, &crd.spec.names.plural)
}

/// This machine's name, if it has one.
fn hostname() -> Option<String> {
    let from_file = std::fs::read_to_string("/etc/hostname").ok();
    let from_command = || {
        std::process::Command::new("hostname")
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
    };
    from_file
        .or_else(from_command)
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
}

/// `text` as a DNS label (RFC 1123): lower-case alphanumerics and single dashes, at most
/// `max` characters, starting and ending with an alphanumeric.
fn dns_label(text: &str, max: usize) -> String {
    let mut label = String::new();
    for c in text.to_lowercase().chars() {
        if c.is_ascii_alphanumeric() {
            label.push(c);
        } else if !label.is_empty() && !label.ends_with('-') {
            label.push('-');
        }
    }
    label.truncate(max);
    label.trim_end_matches('-').to_string()
}

/// The digest of a CRD's spec ([`DIGEST`]): FNV-1a over its canonical JSON (keys sorted), so
/// that the same Rust types give the same digest on every machine.
pub fn digest(crd: &CustomResourceDefinition) -> String {
    let spec = serde_json::to_value(&crd.spec).unwrap_or_default();
    let mut canonical = String::new();
    canonical_json(&spec, &mut canonical);
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in canonical.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("fnv1a64-{hash:016x}")
}

fn canonical_json(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let sorted: BTreeMap<&String, &Value> = map.iter().collect();
            out.push('{');
            for (i, (key, value)) in sorted.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                canonical_json(value, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical_json(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// What installing a set of CRDs would do.
#[derive(Debug, Default)]
pub struct Install {
    /// The names of the CRDs to write (missing, or different and free to replace).
    pub writes: Vec<String>,
    /// What to tell the learner about replaced CRDs.
    pub notes: Vec<String>,
}

/// Whether `crds` may be installed into the cluster, where the participant works in
/// `own_namespace`: `Ok` with the CRDs to write, or `Err` with why not. A CRD that is
/// missing may always be installed, one that is the same as ours needs no write; a different
/// one may be replaced only when no object of its kind exists outside `own_namespace`, and
/// none in it is looked after by another controller (two participants who both work in
/// `default`): nobody else uses it. Or with `force`.
pub async fn may_install(
    client: &kube::Client,
    crds: &[CustomResourceDefinition],
    own_namespace: &str,
    me: &Signature,
    force: bool,
) -> Result<Install, String> {
    let api = Api::<CustomResourceDefinition>::all(client.clone());
    let mut install = Install::default();
    for crd in crds {
        let name = crd.metadata.name.clone().unwrap_or_default();
        let existing = api
            .get_opt(&name)
            .await
            .map_err(|e| t!(m::CANNOT_READ_CRD, name = name, said = said(&e)))?;
        let Some(existing) = existing else {
            install.writes.push(name);
            continue;
        };
        let theirs = existing
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(DIGEST));
        if theirs == Some(&digest(crd)) {
            continue;
        }
        let whose = match theirs {
            Some(_) => m::CRD_OTHER_TYPES.text(),
            None => m::CRD_NOT_OURS.text(),
        };
        let kind = &crd.spec.names.kind;
        // Who else uses this CRD: in other namespaces, and other controllers in one's own.
        let looked = async {
            let users = users_elsewhere(client, &existing, own_namespace).await?;
            let here =
                others_controllers(client, std::slice::from_ref(&existing), own_namespace, me)
                    .await?;
            Ok::<_, String>((users, here))
        };
        let (users, here) = match looked.await {
            Ok(found) => found,
            Err(e) => {
                let why = t!(
                    m::CRD_USERS_UNKNOWN,
                    name = name,
                    whose = whose,
                    kind = kind,
                    error = e
                );
                if force {
                    install.notes.push(t!(m::REPLACING_FORCED, why = why));
                    install.writes.push(name);
                    continue;
                }
                return Err(t!(m::NOT_REPLACING, why = why));
            }
        };
        if users.is_empty() && !here.is_empty() {
            let why = t!(
                m::CRD_USED_HERE,
                name = name,
                whose = whose,
                namespace = own_namespace,
                foreign = describe_foreign(&here)
            );
            refuse_or_force(why, force, &name, &mut install)?;
            continue;
        }
        let notes = &mut install.notes;
        if users.is_empty() {
            notes.push(t!(
                m::REPLACING_UNUSED,
                name = name,
                whose = whose,
                kind = kind,
                namespace = own_namespace
            ));
            install.writes.push(name);
            continue;
        }
        let count: usize = users.values().sum();
        let listed: Vec<String> = users
            .iter()
            .take(5)
            .map(|(ns, n)| format!("{ns}: {n}"))
            .collect();
        let more = if users.len() > 5 { ", …" } else { "" };
        let listed = format!("{}{more}", listed.join(", "));
        let used = match (count, users.len()) {
            (1, _) => m::CRD_USED_ONE,
            (_, 1) => m::CRD_USED_IN_ONE,
            _ => m::CRD_USED,
        };
        let why = t!(
            used,
            name = name,
            whose = whose,
            count = count,
            kind = kind,
            namespaces = users.len(),
            listed = listed
        );
        if force {
            notes.push(t!(m::REPLACING_FORCED, why = why));
            install.writes.push(name);
            continue;
        }
        return Err(t!(m::REFUSING_INSTALL, why = why));
    }
    Ok(install)
}

/// With `force`, notes that the CRD `name` is replaced all the same (and writes it); without,
/// the refusal.
fn refuse_or_force(
    why: String,
    force: bool,
    name: &str,
    install: &mut Install,
) -> Result<(), String> {
    if !force {
        return Err(t!(m::REFUSING_INSTALL, why = why));
    }
    install.notes.push(t!(m::REPLACING_FORCED, why = why));
    install.writes.push(name.to_string());
    Ok(())
}

/// How many objects of the CRD's kind each namespace other than `own` holds.
async fn users_elsewhere(
    client: &kube::Client,
    crd: &CustomResourceDefinition,
    own: &str,
) -> Result<BTreeMap<String, usize>, String> {
    let Some(version) = crd.spec.versions.iter().find(|v| v.served) else {
        return Ok(BTreeMap::new());
    };
    let gvk = GroupVersionKind::gvk(&crd.spec.group, &version.name, &crd.spec.names.kind);
    let resource = ApiResource::from_gvk_with_plural(&gvk, &crd.spec.names.plural);
    let api = Api::<DynamicObject>::all_with(client.clone(), &resource);
    let mut users = BTreeMap::new();
    let mut params = ListParams::default().limit(500);
    loop {
        let page = api.list_metadata(&params).await.map_err(|e| said(&e))?;
        for object in &page.items {
            let ns = object.metadata.namespace.clone().unwrap_or_default();
            if ns != own {
                *users.entry(ns).or_insert(0) += 1;
            }
        }
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => break,
        }
    }
    Ok(users)
}

/// The API server's message for an API error (`numbers.math.example.com "x" not found
/// (NotFound, 404)`), the root cause otherwise: kube's own text of a `Status` prints every
/// field of it twice.
pub fn said(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(status) if status.reason.is_empty() => {
            format!("{} ({})", status.message, status.code)
        }
        kube::Error::Api(status) => {
            format!("{} ({}, {})", status.message, status.reason, status.code)
        }
        other => crate::cluster::root_cause(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn participants_are_dns_labels() {
        assert_eq!(participant(Some("Alice Smith")), "alice-smith");
        assert_eq!(participant(Some("ユーザー")), "learner");
        assert_eq!(participant(Some("--bob--")), "bob");
        let long = "x".repeat(100);
        assert_eq!(participant(Some(&long)).len(), 40);
        assert_eq!(check_namespace("alice"), "math-workshop-check-alice");
        assert!(check_namespace(&participant(None)).len() <= 63);
    }

    #[test]
    fn your_namespace_is_the_one_asked_for_else_the_contexts_else_kubectls_default() {
        assert_eq!(your_namespace(Some("x"), Some("y")), "x");
        assert_eq!(your_namespace(None, Some("y")), "y");
        assert_eq!(your_namespace(None, None), "default");
        assert_eq!(participant_namespace("Alice"), "math-workshop-alice");
    }

    #[test]
    fn only_the_exercises_field_manager_is_signed() {
        let alice = Signature::new("alice");
        assert_eq!(
            alice.sign_query("fieldManager=math-workshop&force=true"),
            "fieldManager=math-workshop-alice&force=true"
        );
        assert_eq!(
            alice.sign_query("force=true&fieldManager=math-workshop"),
            "force=true&fieldManager=math-workshop-alice"
        );
        // Somebody else's manager, or one that merely starts alike, is theirs.
        assert_eq!(
            alice.sign_query("fieldManager=math-workshop-bob"),
            "fieldManager=math-workshop-bob"
        );
        assert_eq!(alice.sign_query("watch=true"), "watch=true");
        assert_eq!(
            alice.user_agent().split('/').next(),
            Some("math-workshop-alice")
        );
    }

    #[test]
    fn foreign_objects_are_those_whose_status_another_controller_writes() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
        let entry = |manager: &str, sub: Option<&str>| ManagedFieldsEntry {
            manager: Some(manager.to_string()),
            subresource: sub.map(str::to_string),
            operation: Some("Apply".to_string()),
            ..Default::default()
        };
        let meta = |name: &str, entries: Vec<ManagedFieldsEntry>| ObjectMeta {
            name: Some(name.to_string()),
            managed_fields: Some(entries),
            ..Default::default()
        };
        let alice = Signature::new("alice");
        let mine = meta(
            "a",
            vec![
                entry("kubectl-client-side-apply", None),
                entry("math-workshop-alice", Some("status")),
            ],
        );
        // bob's spec edit is not bob's controller; a person's status edit is nobody's.
        let edited = meta(
            "b",
            vec![
                entry("math-workshop-bob", None),
                entry("math-workshop-alice", Some("status")),
                entry("kubectl-patch", Some("status")),
            ],
        );
        let bobs = meta("c", vec![entry("math-workshop-bob", Some("status"))]);
        let managers = meta("d", vec![entry("", Some("status"))]);
        let fresh = meta("e", vec![entry("kubectl-client-side-apply", None)]);
        let found = foreign(
            [&mine, &edited, &bobs, &managers, &fresh]
                .into_iter()
                .map(|m| ("Number", m)),
            &alice,
        );
        assert_eq!(
            found,
            vec![
                Foreign {
                    object: "Number/c".into(),
                    controller: "math-workshop-bob".into()
                },
                Foreign {
                    object: "Number/d".into(),
                    controller: String::new()
                },
            ]
        );
        assert_eq!(
            describe_foreign(&found),
            "another controller (a controller that gives no name (the finished manager?), \
             math-workshop-bob) looks after 2 of its objects: Number/c, Number/d"
        );
    }

    #[test]
    fn the_digest_is_the_same_for_the_same_types_and_differs_otherwise() {
        use kube::CustomResourceExt;
        let number = crate::solutions::number::Number::crd();
        assert_eq!(digest(&number), digest(&number.clone()));
        let mut edited = number.clone();
        edited.spec.versions[0].additional_printer_columns = None;
        assert_ne!(digest(&number), digest(&edited));
        assert_ne!(
            digest(&number),
            digest(&crate::solutions::tuple::Tuple::crd())
        );
    }
}
