//! The writes that close the gap between the children a parent wants and the ones it has:
//! one reconcile of a parent (compute the [`Plan`], carry out its writes, write the status),
//! and the creates, corrections, adoptions and deletions themselves.
//!
//! This layer sits above [`crate::children`], which decides *what* to do without knowing the
//! [`Context`] that does it: the controllers call down into here, and this module calls down
//! into the pure diff, never the other way round.

use std::collections::HashMap;
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
use serde::de::DeserializeOwned;
use serde_json::json;
use tracing::info;

use crate::children::{Child, Desired, MAX_NAME_LEN, Plan, plan};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::metrics::WriteKind;
use crate::status::{Outcome, ParentStatus, Progress, name_list};

/// How many create requests one reconcile keeps in flight.
const WRITES_IN_FLIGHT: usize = 32;

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
    S: ParentStatus,
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
    // How the children come along matters only to a status that waits for them.
    let pace = (progress == Progress::Pending).then(|| {
        let shown = known.as_ref().and_then(|s| s.ready_children()).unwrap_or(0);
        let shown = usize::try_from(shown).unwrap_or(0);
        ctx.pace::<P, C>(parent, plan.ready.len(), shown, now)
    });
    let requeue_after = ctx
        .write_status(parent, known.as_ref(), &desired_status, pace.as_ref())
        .await?;
    let outcome = Outcome {
        requeue_after,
        progress,
    };
    Ok(outcome.requeue_within(cached.recheck_in))
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
        // Expected before the request: the watch may deliver the child (and even its
        // deletion by someone else) before the answer comes back.
        ctx.expect_change::<C>(&namespace, &name, None);
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
            Ok(_) => created.push(name),
            // The cache was behind, or the answer to an earlier create was lost: the
            // object exists, and the watch will show it.
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => {
                ctx.forget_change::<C>(&namespace, &name);
                failure = failure.or(Some(kube_err("creating", &name)(e)))
            }
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
        ctx.expect_change::<C>(&namespace, &name, child.resource_version());
        let namespace = namespace.clone();
        async move {
            let result = api
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await;
            if result.is_err() {
                ctx.forget_change::<C>(&namespace, &name);
            }
            match result {
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
        ctx.expect_change::<C>(&namespace, &name, child.resource_version());
        match api.delete(&name, &params).await {
            Ok(_) => deleted.push(name),
            Err(kube::Error::Api(s)) if s.code == 404 => ctx.forget_change::<C>(&namespace, &name),
            Err(e) => {
                ctx.forget_change::<C>(&namespace, &name);
                return Err(kube_err("deleting", &name)(e));
            }
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
