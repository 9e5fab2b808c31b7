//! Owning children, for any parent kind: the diff between the children a parent wants and
//! the ones the cache holds (a pure function), and the writes that close the gap.
//!
//! Children are recognised by the UID in their *controller* ownerReference and looked for
//! only in the parent's namespace, never by the owner's name: two Fermats called alike in
//! two namespaces do not see each other's Tuples.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt::Debug;
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use k8s_openapi::jiff::Timestamp;
use kube::api::{
    Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions, PropagationPolicy,
};
use kube::runtime::events::EventType;
use kube::runtime::reflector::Store;
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;
use tracing::info;

use crate::context::Context;
use crate::error::{Error, Result};
use crate::metrics::WriteKind;
use crate::status::{Outcome, Progress, Readiness, name_list};

/// How many create requests one reconcile keeps in flight.
const WRITES_IN_FLIGHT: usize = 32;

/// Longest object name Kubernetes accepts (a DNS subdomain).
pub const MAX_NAME_LEN: usize = 253;

/// A kind that a parent owns: what its desired spec is and when it counts as done.
pub trait Child:
    Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + Clone
    + Debug
    + Serialize
    + DeserializeOwned
    + Send
    + Sync
    + 'static
{
    type Spec: PartialEq + Clone + Debug + Serialize;
    /// For logs and Events: "Number", "Tuple".
    const KIND: &'static str;
    /// The parent's Ready reason while these children are on their way: "WaitingForNumbers".
    const WAITING_REASON: &'static str;
    /// A new object with this name and spec (the namespace and owner are added by the caller).
    fn build(name: &str, spec: Self::Spec) -> Self;
    fn child_spec(&self) -> &Self::Spec;
    /// The child's own controller has computed its status for its current generation.
    fn is_ready(&self) -> bool;
}

/// One child the parent's spec asks for.
#[derive(Clone, Debug, PartialEq)]
pub struct Desired<S> {
    pub name: String,
    pub spec: S,
}

/// An existing object of a desired name that belongs to somebody else.
#[derive(Clone, Debug, PartialEq)]
pub struct Conflict {
    pub name: String,
    /// "Tuple other (uid 1234)"
    pub owner: String,
}

/// Everything the parent must do, and what it found, for one reconcile.
#[derive(Debug)]
pub struct Plan<C: Child> {
    /// Desired children, in order, that are done: they exist, are ours, carry the desired
    /// spec and are Ready for their current generation.
    pub ready: Vec<Arc<C>>,
    /// Desired children that are ours and right but not computed yet, or are being deleted.
    pub pending: Vec<String>,
    pub create: Vec<Desired<C::Spec>>,
    /// Ours, but the spec was edited: put the desired spec back.
    pub correct: Vec<(Arc<C>, C::Spec)>,
    /// Nobody's controller: take ownership (and put the desired spec in place).
    pub adopt: Vec<(Arc<C>, C::Spec)>,
    /// Ours, but no longer desired.
    pub delete: Vec<Arc<C>>,
    /// Controlled by another owner: left alone, reported.
    pub conflicts: Vec<Conflict>,
    /// Desired names Kubernetes would refuse (longer than 253 characters).
    pub invalid_names: Vec<String>,
    /// How many children the spec asks for.
    pub desired: usize,
}

impl<C: Child> Plan<C> {
    /// Whether this plan writes to any child.
    pub fn has_writes(&self) -> bool {
        !(self.create.is_empty()
            && self.correct.is_empty()
            && self.adopt.is_empty()
            && self.delete.is_empty())
    }

    /// Every desired child is done: the parent may give its final answer.
    pub fn all_ready(&self) -> bool {
        self.ready.len() == self.desired
    }

    /// The parent cannot finish without somebody else acting.
    pub fn blocked(&self) -> bool {
        !self.conflicts.is_empty() || !self.invalid_names.is_empty()
    }
}

/// Why a parent is not Ready, if it is not: a child name Kubernetes would refuse or a child
/// owned by someone else (both need a person: [`Progress::Settled`]), or children still on
/// their way ([`Progress::Pending`]). `None`: every desired child is done, and the parent may
/// give its answer.
pub fn unfinished<C: Child>(plan: &Plan<C>) -> Option<(Readiness, Progress)> {
    let kinds = format!("{}s", C::KIND);
    let counts = format!("{}/{} {kinds} ready", plan.ready.len(), plan.desired);
    let not_ready = |reason, message| Readiness {
        ready: false,
        reason,
        message,
    };
    if !plan.invalid_names.is_empty() {
        let names = name_list(&plan.invalid_names);
        let message = format!(
            "{counts}; cannot create {kinds} {names}: names longer than {MAX_NAME_LEN} characters"
        );
        Some((not_ready("ChildNameTooLong", message), Progress::Settled))
    } else if !plan.conflicts.is_empty() {
        let names: Vec<_> = plan
            .conflicts
            .iter()
            .map(|c| format!("{} (controlled by {})", c.name, c.owner))
            .collect();
        let message = format!(
            "{counts}; {kinds} owned by someone else: {}",
            name_list(&names)
        );
        Some((not_ready("ChildConflict", message), Progress::Settled))
    } else if !plan.all_ready() || plan.has_writes() {
        let waiting: Vec<String> = (plan.create.iter().map(|d| d.name.clone()))
            .chain(
                plan.correct
                    .iter()
                    .chain(&plan.adopt)
                    .map(|(c, _)| c.name_any()),
            )
            .chain(plan.pending.iter().cloned())
            .chain(
                plan.delete
                    .iter()
                    .map(|c| format!("{} (to delete)", c.name_any())),
            )
            .collect();
        let message = format!("{counts}; waiting for {}", name_list(&waiting));
        Some((not_ready(C::WAITING_REASON, message), Progress::Pending))
    } else {
        None
    }
}

/// Reconcile a parent against the cache of its children: compute the plan, carry out its
/// writes, then write the status that `status` computes from the plan, if it changed.
pub async fn reconcile<P, C: Child, S>(
    ctx: &Context,
    parent: &P,
    children: &Store<C>,
    desired: Vec<Desired<C::Spec>>,
    current: Option<&S>,
    status: impl FnOnce(&Plan<C>, Option<&S>, Timestamp) -> (S, Progress),
) -> Result<Outcome>
where
    P: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + Debug
        + DeserializeOwned,
    S: Serialize + DeserializeOwned + Clone,
{
    if parent.meta().deletion_timestamp.is_some() {
        // Being deleted: the garbage collector takes the children; recreating them would
        // fight it.
        return Ok(Outcome::DONE);
    }
    let cached = ctx.children(children, parent, &desired);
    let owner_uid = parent.meta().uid.clone().unwrap_or_default();
    let plan = plan(
        &owner_uid,
        desired,
        &cached.found,
        &cached.owned,
        &cached.in_flight,
    );
    ctx.narrate(parent, &plan);
    apply(ctx, parent, &plan).await?;
    let now = Timestamp::now();
    let known = ctx.known_status(parent, current);
    let (desired_status, progress) = status(&plan, known.as_ref(), now);
    let requeue_after = ctx
        .write_status(parent, known.as_ref(), &desired_status, progress, now)
        .await?;
    let outcome = Outcome {
        requeue_after,
        progress,
    };
    Ok(outcome.requeue_within(cached.recheck_in))
}

/// The UID of the object's controller, if it has one.
pub fn controller_uid<K: Resource>(obj: &K) -> Option<&str> {
    obj.meta()
        .owner_references
        .as_deref()
        .unwrap_or_default()
        .iter()
        .find(|r| r.controller == Some(true))
        .map(|r| r.uid.as_str())
}

/// Compare what the parent wants with what the cache holds.
///
/// `found` maps names to the cached objects in the parent's namespace that carry a desired
/// name; `owned` lists the cached objects in that namespace controlled by `owner_uid`;
/// `in_flight` names the children this manager wrote to so recently that the cache does not
/// show the result yet: they are waited for, not written again.
pub fn plan<C: Child>(
    owner_uid: &str,
    desired: Vec<Desired<C::Spec>>,
    found: &HashMap<String, Arc<C>>,
    owned: &[Arc<C>],
    in_flight: &HashSet<String>,
) -> Plan<C> {
    let mut plan = Plan {
        ready: Vec::new(),
        pending: Vec::new(),
        create: Vec::new(),
        correct: Vec::new(),
        adopt: Vec::new(),
        delete: Vec::new(),
        conflicts: Vec::new(),
        invalid_names: Vec::new(),
        desired: desired.len(),
    };
    let wanted: BTreeSet<&str> = desired.iter().map(|d| d.name.as_str()).collect();
    for child in owned {
        let name = child.name_any();
        if !wanted.contains(name.as_str())
            && child.meta().deletion_timestamp.is_none()
            && !in_flight.contains(&name)
        {
            plan.delete.push(child.clone());
        }
    }
    for want in desired {
        if want.name.len() > MAX_NAME_LEN {
            plan.invalid_names.push(want.name);
            continue;
        }
        if in_flight.contains(&want.name) {
            plan.pending.push(want.name);
            continue;
        }
        let Some(existing) = found.get(&want.name) else {
            plan.create.push(want);
            continue;
        };
        match controller_uid(existing.as_ref()) {
            Some(uid) if uid != owner_uid => plan.conflicts.push(Conflict {
                name: want.name,
                owner: describe_controller(existing.as_ref()),
            }),
            // Going away (deleted by hand, or by a cascade): it is recreated once gone.
            _ if existing.meta().deletion_timestamp.is_some() => plan.pending.push(want.name),
            None => plan.adopt.push((existing.clone(), want.spec)),
            Some(_) if existing.child_spec() != &want.spec => {
                plan.correct.push((existing.clone(), want.spec))
            }
            Some(_) if existing.is_ready() => plan.ready.push(existing.clone()),
            Some(_) => plan.pending.push(want.name),
        }
    }
    plan
}

fn describe_controller<K: Resource>(obj: &K) -> String {
    obj.meta()
        .owner_references
        .as_deref()
        .unwrap_or_default()
        .iter()
        .find(|r| r.controller == Some(true))
        .map(|r| format!("{} {} (uid {})", r.kind, r.name, r.uid))
        .unwrap_or_else(|| "nobody".to_string())
}

/// The controller ownerReference a parent puts on its children. `blockOwnerDeletion` makes a
/// foreground deletion of the parent wait for them.
pub fn owner_reference<P: Resource<DynamicType = ()>>(parent: &P) -> Result<OwnerReference> {
    let mut reference = parent
        .controller_owner_ref(&())
        .ok_or(Error::MissingField {
            kind: "parent",
            field: "metadata.uid",
        })?;
    reference.block_owner_deletion = Some(true);
    Ok(reference)
}

/// The ownerReferences of an adopted child: its own non-controller references, plus ours.
fn adopted_references<C: Resource>(child: &C, ours: &OwnerReference) -> Vec<OwnerReference> {
    let mut references: Vec<OwnerReference> = child
        .meta()
        .owner_references
        .iter()
        .flatten()
        .filter(|r| r.uid != ours.uid)
        .cloned()
        .collect();
    references.push(ours.clone());
    references
}

/// Carry out a plan's writes against the API server: create, correct, adopt, delete. Each
/// kind of action becomes one Event on the parent and one log line. An object that vanished
/// meanwhile (404) or a create that lost a race (409) is not an error worth reporting: the
/// watch brings the news and the next reconcile starts from it.
pub async fn apply<P, C>(ctx: &Context, parent: &P, plan: &Plan<C>) -> Result<()>
where
    P: Resource<DynamicType = ()>,
    C: Child,
{
    let namespace = parent.namespace().unwrap_or_default();
    let api: Api<C> = Api::namespaced(ctx.client.clone(), &namespace);
    let owner = owner_reference(parent)?;
    let controller = ctx.controller_name::<P>();
    let kube_err = |action: &'static str, name: &str| {
        let namespace = namespace.clone();
        let name = name.to_string();
        move |source| Error::Kube {
            action,
            kind: C::KIND,
            namespace,
            name,
            source: Box::new(source),
        }
    };

    // Creates go out concurrently: a Fermat of 1000 creates 500 Tuples in one reconcile,
    // and one at a time that would be 500 round trips in a row.
    let mut new_children = Vec::new();
    for want in &plan.create {
        let mut child = C::build(&want.name, want.spec.clone());
        child.meta_mut().namespace = Some(namespace.clone());
        child.meta_mut().owner_references = Some(vec![owner.clone()]);
        ctx.metrics.write(controller, C::KIND, WriteKind::Create);
        new_children.push((want.name.clone(), child));
    }
    let creates = new_children.into_iter().map(|(name, child)| {
        let api = api.clone();
        async move {
            let result = api.create(&PostParams::default(), &child).await;
            (name, result)
        }
    });
    let results: Vec<(String, Result<C, kube::Error>)> = futures::stream::iter(creates)
        .buffer_unordered(WRITES_IN_FLIGHT)
        .collect()
        .await;
    let mut created = Vec::new();
    let mut failure = None;
    for (name, result) in results {
        match result {
            Ok(_) => {
                ctx.expect_change::<C>(&namespace, &name, None);
                created.push(name)
            }
            Err(kube::Error::Api(s)) if s.code == 409 => {
                // The cache was behind: the object exists. The watch will show it.
                ctx.expect_change::<C>(&namespace, &name, None);
            }
            Err(e) => failure = failure.or(Some(kube_err("creating", &name)(e))),
        }
    }
    // Created follows the desired order, whatever order the answers came in.
    let order: HashMap<&str, usize> = plan
        .create
        .iter()
        .enumerate()
        .map(|(i, d)| (d.name.as_str(), i))
        .collect();
    created.sort_by_key(|name| order.get(name.as_str()).copied());
    if let Some(error) = failure {
        // What was created is remembered above; the retry creates only the rest.
        return Err(error);
    }

    // Corrections and adoptions are conditional merge patches: the resourceVersion we read
    // makes the server answer 409 if the child changed since, and we look again rather than
    // overwrite blindly.
    let patch_child = |child: &Arc<C>, patch: serde_json::Value| {
        let api = api.clone();
        let name = child.name_any();
        ctx.metrics.write(controller, C::KIND, WriteKind::Patch);
        async move {
            match api
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => Ok(true),
                Err(kube::Error::Api(s)) if s.code == 404 => Ok(false),
                Err(e) => Err(e),
            }
        }
    };

    let mut corrected = Vec::new();
    for (child, spec) in &plan.correct {
        let name = child.name_any();
        let patch = json!({
            "metadata": { "resourceVersion": child.resource_version() },
            "spec": spec,
        });
        if patch_child(child, patch)
            .await
            .map_err(kube_err("correcting", &name))?
        {
            ctx.expect_change::<C>(&namespace, &name, child.resource_version());
            let was = serde_json::to_string(child.child_spec())?;
            let now = serde_json::to_string(spec)?;
            corrected.push(format!("{name} (spec {was} back to {now})"))
        }
    }

    let mut adopted = Vec::new();
    for (child, spec) in &plan.adopt {
        let name = child.name_any();
        let patch = json!({
            "metadata": {
                "resourceVersion": child.resource_version(),
                "ownerReferences": adopted_references(child.as_ref(), &owner),
            },
            "spec": spec,
        });
        if patch_child(child, patch)
            .await
            .map_err(kube_err("adopting", &name))?
        {
            ctx.expect_change::<C>(&namespace, &name, child.resource_version());
            adopted.push(name)
        }
    }

    let mut deleted = Vec::new();
    for child in &plan.delete {
        let name = child.name_any();
        // The uid precondition guarantees we delete the object we decided about, not a
        // namesake created since.
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: child.uid(),
                resource_version: None,
            }),
            propagation_policy: Some(PropagationPolicy::Background),
            ..DeleteParams::default()
        };
        ctx.metrics.write(controller, C::KIND, WriteKind::Delete);
        match api.delete(&name, &params).await {
            Ok(_) => {
                ctx.expect_change::<C>(&namespace, &name, child.resource_version());
                deleted.push(name)
            }
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => return Err(kube_err("deleting", &name)(e)),
        }
    }

    // The cache has no order; a sorted list reads better in `kubectl describe`.
    deleted.sort();
    let parent_name = format!("{namespace}/{}", parent.name_any());
    let kind = P::kind(&());
    let plural = |n: usize| {
        if n == 1 {
            C::KIND.to_string()
        } else {
            format!("{}s", C::KIND)
        }
    };
    let reports = [
        ("Created", "Create", &created, "created"),
        ("Corrected", "Correct", &corrected, "corrected"),
        ("Adopted", "Adopt", &adopted, "adopted"),
        ("Deleted", "Delete", &deleted, "deleted the unwanted"),
    ];
    for (reason, action, names, verb) in reports {
        if names.is_empty() {
            continue;
        }
        let note = format!(
            "{verb} {} {}: {}",
            names.len(),
            plural(names.len()),
            name_list(names)
        );
        info!(%kind, parent = %parent_name, "{note}");
        ctx.publish(parent, EventType::Normal, reason, action, note, None)
            .await;
    }
    for conflict in &plan.conflicts {
        let note = format!(
            "{} {namespace}/{} exists and is controlled by {}; leaving it alone",
            C::KIND,
            conflict.name,
            conflict.owner
        );
        info!(%kind, parent = %parent_name, "{note}");
        // The child as the Event's related object: each conflicting child is a series of its
        // own, so a second conflict is not folded into the first one's message.
        let related = k8s_openapi::api::core::v1::ObjectReference {
            api_version: Some(C::api_version(&()).to_string()),
            kind: Some(C::KIND.to_string()),
            name: Some(conflict.name.clone()),
            namespace: Some(namespace.clone()),
            ..Default::default()
        };
        let (warning, reason) = (EventType::Warning, "ChildConflict");
        ctx.publish(parent, warning, reason, "Adopt", note, Some(related))
            .await;
    }
    if !plan.invalid_names.is_empty() {
        let note = format!(
            "cannot create {} {}: the name would exceed {MAX_NAME_LEN} characters (shorten the parent's name)",
            plan.invalid_names.len(),
            plural(plan.invalid_names.len()),
        );
        info!(%kind, parent = %parent_name, "{note}");
        ctx.publish(
            parent,
            EventType::Warning,
            "ChildNameTooLong",
            "Create",
            note,
            None,
        )
        .await;
    }
    Ok(())
}
