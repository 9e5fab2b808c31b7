//! The Events (`kubectl describe`) and log lines that tell what a reconcile's writes did and
//! what they could not, and how an Event is written so that kube-apiserver accepts it: one
//! line and one Event per kind of write, a Warning per child somebody else controls, per name
//! Kubernetes would refuse, and per refusal of the API server (said once while it lasts).
//! Beside [`super::writes`], whose steps they tell of; an Event that cannot be written never
//! fails the reconcile. The reconcile is the only writer of Events, so what it says and how
//! it is written are one room.
//!
//! Why not kube-runtime's `Recorder`: it names an Event `<object>.<hex nanoseconds>`, which
//! kube-apiserver refuses for an object name over 236 characters (`metadata.name: Invalid
//! value: "…": must be no more than 253 characters`, seen for a Tuple of 240 characters on
//! v1.24: it never got an Event), it sends notes over kube-apiserver's 1024-byte limit as
//! they are, and it folds every Event of an object, reason and action into one series that
//! keeps the *first* note, while rewriting that series on every repeat. client-go's
//! recorder has the same name problem; its EventCorrelator suppresses repeats. Here
//! ([`Publisher`]): names shortened to fit, notes cut at 1024 bytes on a character
//! boundary, a Normal Event for each action that is news ([`announces_created`]), and a
//! Warning with the same note about the same object published at most once per
//! [`REPEAT_AFTER`].

use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ObjectMeta, PostParams};
use kube::runtime::events::EventType;
use kube::{Client, ResourceExt};
use tracing::{info, warn};

use crate::cluster::expiring::Expiring;
use crate::cluster::undecodable::Undecoded;
use crate::error::is_unreachable;
use crate::kind::{Child, Kind, controller_uid};
use crate::metrics::{Metrics, WriteKind};
use crate::reconcile::context::Context;
use crate::reconcile::memory::refusals::{Refusal, Step};
use crate::reconcile::plan::{MAX_NAME_LEN, Plan};
use crate::reconcile::status::name_list;
use crate::reconcile::writes::Done;
/// Say once, in the log and as a Warning Event on the parent, what the API server refused
/// and when it is tried again. The Event is the same while the refusal is: it is published
/// once (see [`publish`]).
pub(crate) async fn report_refusals<P: Kind>(
    ctx: &Context,
    parent: &P,
    refused: &[Refusal],
    retry_in: Duration,
) {
    let Some(first) = refused.first() else { return };
    let who = format!(
        "{} {}/{}",
        P::kind(&()),
        parent.namespace().unwrap_or_default(),
        parent.name_any()
    );
    for r in refused {
        warn!(
            "{who}: {} {} was refused; trying again in {retry_in:.0?}: {}",
            r.step.verb(),
            r.name,
            r.message
        );
    }
    let note = refused
        .iter()
        .map(|r| format!("{} {} was refused: {}", r.step.verb(), r.name, r.message))
        .collect::<Vec<_>>()
        .join("; ");
    let reason = first.step.refused_reason();
    let action = match first.step {
        Step::Create => "Create",
        Step::Correct | Step::Adopt => "Update",
        Step::Delete => "Delete",
    };
    publish(ctx, parent, EventType::Warning, reason, action, note, None).await;
}

/// Tell what the steps did and what they could not: one log line and one Event per kind of
/// write (the first children of a controller's object are not announced:
/// [`announces_created`]), a Warning per child owned by somebody else, and one for
/// names Kubernetes would refuse.
pub(crate) async fn announce<P: Kind, C: Child>(
    ctx: &Context,
    parent: &P,
    plan: &Plan<C>,
    done: Done,
) {
    let has_controller = controller_uid(parent).is_some();
    let uid = parent.uid().unwrap_or_default();
    let created_before = ctx.events.created_children_of(&uid);
    let announce_created = announces_created(has_controller, parent.has_status(), created_before);
    if !done.created.is_empty() && !announce_created {
        ctx.events.note_children_created(uid);
    }
    let reports = [
        ("Created", "Create", &done.created, "created"),
        ("Corrected", "Correct", &done.corrected, "corrected"),
        ("Adopted", "Adopt", &done.adopted, "adopted"),
        ("Deleted", "Delete", &done.deleted, "deleted the unwanted"),
    ];
    for (reason, action, names, verb) in reports {
        if names.is_empty() {
            continue;
        }
        let note = format!(
            "{verb} {} {}: {}",
            names.len(),
            plural::<C>(names.len()),
            name_list(names)
        );
        info!(kind = %P::kind(&()), parent = %parent_name(parent), "{note}");
        if reason != "Created" || announce_created {
            publish(ctx, parent, EventType::Normal, reason, action, note, None).await;
        }
    }
    announce_conflicts(ctx, parent, plan).await;
    announce_invalid_names(ctx, parent, plan).await;
}

/// "Number" or "Numbers".
fn plural<C: Child>(n: usize) -> String {
    if n == 1 {
        C::KIND.to_string()
    } else {
        format!("{}s", C::KIND)
    }
}

/// "namespace/name", for the log.
fn parent_name<P: Kind>(parent: &P) -> String {
    format!(
        "{}/{}",
        parent.namespace().unwrap_or_default(),
        parent.name_any()
    )
}

/// A Warning for each child of a desired name that somebody else controls: left alone.
async fn announce_conflicts<P: Kind, C: Child>(ctx: &Context, parent: &P, plan: &Plan<C>) {
    let namespace = parent.namespace().unwrap_or_default();
    for conflict in &plan.conflicts {
        let note = format!(
            "{} {namespace}/{} exists and is controlled by {}; leaving it alone",
            C::KIND,
            conflict.name,
            conflict.owner
        );
        info!(kind = %P::kind(&()), parent = %parent_name(parent), "{note}");
        // The child as the Event's related object: each conflicting child is a series of its
        // own, so a second conflict is not folded into the first one's message.
        let related = ObjectReference {
            api_version: Some(C::api_version(&()).to_string()),
            kind: Some(C::KIND.to_string()),
            name: Some(conflict.name.clone()),
            namespace: Some(namespace.clone()),
            ..Default::default()
        };
        let (warning, reason) = (EventType::Warning, "ChildConflict");
        publish(ctx, parent, warning, reason, "Adopt", note, Some(related)).await;
    }
}

/// A Warning when some desired children's names would be longer than Kubernetes accepts.
async fn announce_invalid_names<P: Kind, C: Child>(ctx: &Context, parent: &P, plan: &Plan<C>) {
    if plan.invalid_names.is_empty() {
        return;
    }
    let note = format!(
        "cannot create {} {}: the name would exceed {MAX_NAME_LEN} characters (shorten the parent's name)",
        plan.invalid_names.len(),
        plural::<C>(plan.invalid_names.len()),
    );
    info!(kind = %P::kind(&()), parent = %parent_name(parent), "{note}");
    let (warning, reason) = (EventType::Warning, "ChildNameTooLong");
    publish(ctx, parent, warning, reason, "Create", note, None).await;
}

/// Publish an Event on `regarding` (see [`Publisher::publish`]: a Warning that stays the same is
/// published once). An Event that cannot be written is logged, never a reason to fail the
/// reconcile that did the work it reports.
pub async fn publish<P: Kind>(
    ctx: &Context,
    regarding: &P,
    type_: EventType,
    reason: &str,
    action: &str,
    note: String,
    related: Option<ObjectReference>,
) {
    let note = Note {
        type_,
        reason: reason.to_string(),
        action: action.to_string(),
        text: note,
        related,
    };
    let published = ctx
        .requests
        .run(ctx.events.publish(&regarding.object_ref(&()), note))
        .await;
    match published {
        Ok(true) => ctx.metrics.write(P::CONTROLLER, "Event", WriteKind::Event),
        Ok(false) => {}
        Err(error) if is_unreachable(&error) => {
            // Reported once, as an outage.
            ctx.outage.unreachable(None, &error);
        }
        Err(error) => {
            ctx.metrics.write(P::CONTROLLER, "Event", WriteKind::Event);
            warn!(%error, reason, "could not publish an Event on {} {}", P::kind(&()), regarding.name_any())
        }
    }
}

/// Say once, as a Warning Event on it, that a stored object of kind `K` cannot be decoded
/// (the watch has logged it and set it aside, `cluster/undecodable.rs`): its owner finds the
/// field to fix with `kubectl describe`.
pub async fn undecodable<K: Kind>(ctx: &Context, object: &Undecoded) {
    let meta = &object.metadata;
    let regarding = ObjectReference {
        api_version: Some(K::api_version(&()).into_owned()),
        kind: Some(K::KIND.to_string()),
        name: meta.name.clone(),
        namespace: meta.namespace.clone(),
        uid: meta.uid.clone(),
        resource_version: meta.resource_version.clone(),
        ..ObjectReference::default()
    };
    let note = Note {
        type_: EventType::Warning,
        reason: "Undecodable".to_string(),
        action: "Decode".to_string(),
        text: format!(
            "cannot be decoded (stored under another schema?), so it is left alone until it changes: {}",
            object.error
        ),
        related: None,
    };
    match ctx.requests.run(ctx.events.publish(&regarding, note)).await {
        Ok(true) => ctx.metrics.write(K::CONTROLLER, "Event", WriteKind::Event),
        Ok(false) => {}
        Err(error) if is_unreachable(&error) => {
            ctx.outage.unreachable(None, &error);
        }
        Err(error) => {
            ctx.metrics.write(K::CONTROLLER, "Event", WriteKind::Event);
            let name = meta.name.as_deref().unwrap_or_default();
            warn!(%error, "could not publish an Event on {} {name}", K::KIND)
        }
    }
}

/// kube-apiserver's longest object name (a DNS subdomain).
const MAX_NAME: usize = 253;
/// kube-apiserver's longest Event note, in bytes.
pub const MAX_NOTE: usize = 1024;
/// How long an unchanged Warning stays said (client-go's EventCorrelator aggregates over 10
/// minutes too).
pub const REPEAT_AFTER: Duration = Duration::from_secs(600);

/// Who reports the Events: the `From` column of `kubectl describe`.
#[derive(Clone, Debug)]
pub struct Reporter {
    pub controller: String,
    /// The pod (`POD_NAME`), when running in one.
    pub instance: Option<String>,
}

/// What happened, as one Event.
#[derive(Clone, Debug)]
pub struct Note {
    pub type_: EventType,
    /// CamelCase: `Created`, `ChildConflict`.
    pub reason: String,
    /// What the reporter did or tried: `Create`, `Delete`.
    pub action: String,
    pub text: String,
    /// Another object involved (the conflicting child).
    pub related: Option<ObjectReference>,
}

/// Whether creating children is news worth a Normal `Created` Event on their parent.
///
/// The first children of a parent that another controller made are not: that controller
/// said so already ("created 500 Tuples" on the Fermat), and the parent's status shows its
/// children once they are ready. A Fermat 1000 used to publish 500 "created 2 Numbers"
/// Events besides, one write for every six object writes; on a real kube-apiserver (v1.24,
/// loopback, 2 cores) they took ~12 % of its CPU while the Fermat converged, and the Fermat
/// took ~8 % longer (three alternating runs each way). Everything else stays an Event: the
/// first children of an object a person made (`kubectl describe tuple` on one's own Tuple),
/// a deleted child re-created, children for a changed spec, corrections, adoptions,
/// deletions, conflicts and refusals.
///
/// First children are the ones created before the parent has a status (`parent_has_status`,
/// as the cache shows it) *and* before this manager created any for it
/// (`created_before`, [`Publisher::created_children_of`]): a Number deleted and put back
/// before its Tuple's first status is a repair, though the cache shows no status yet.
pub fn announces_created(
    parent_has_controller: bool,
    parent_has_status: bool,
    created_before: bool,
) -> bool {
    !parent_has_controller || parent_has_status || created_before
}

/// Writes Events; see the module documentation.
pub struct Publisher {
    client: Client,
    reporter: Reporter,
    /// Warnings published lately, by object UID, reason and note.
    said: Expiring<()>,
    /// Parents (by UID) whose first children this manager created, unannounced, lately.
    first_created: Expiring<()>,
}

impl Publisher {
    pub fn new(client: Client, reporter: Reporter, metrics: Metrics) -> Publisher {
        Publisher {
            client,
            reporter,
            said: Expiring::new("warnings_said", metrics.clone(), REPEAT_AFTER),
            first_created: Expiring::new("first_children_created", metrics, REPEAT_AFTER),
        }
    }

    /// Whether this manager created the first children of the parent `uid` lately: any more
    /// it creates are news (a repair, a change), whatever the parent's status says.
    pub fn created_children_of(&self, uid: &str) -> bool {
        self.first_created.get(uid).is_some()
    }

    /// The first children of the parent `uid` were created, unannounced.
    pub fn note_children_created(&self, uid: String) {
        self.first_created.insert(uid, ());
    }

    /// Publish `note` about `regarding`. Answers `Ok(false)` for a Warning that was said
    /// lately and is not written again.
    pub async fn publish(
        &self,
        regarding: &ObjectReference,
        note: Note,
    ) -> Result<bool, kube::Error> {
        let repeat_key = (note.type_ == EventType::Warning).then(|| {
            format!(
                "{}/{}/{}",
                regarding.uid.as_deref().unwrap_or_default(),
                note.reason,
                note.text
            )
        });
        if let Some(key) = &repeat_key
            && self.said.get(key).is_some()
        {
            return Ok(false);
        }
        let event = self.event(regarding, note);
        let namespace = event.metadata.namespace.clone().unwrap_or_default();
        Api::<Event>::namespaced(self.client.clone(), &namespace)
            .create(&PostParams::default(), &event)
            .await?;
        if let Some(key) = repeat_key {
            self.said.insert(key, ());
        }
        Ok(true)
    }

    /// The Event that says `note` about `regarding`, reported by this manager now.
    fn event(&self, regarding: &ObjectReference, note: Note) -> Event {
        let now = Timestamp::now();
        let namespace = regarding
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into());
        let object = regarding
            .name
            .as_deref()
            .unwrap_or(&self.reporter.controller);
        Event {
            metadata: ObjectMeta {
                name: Some(event_name(object, now.as_nanosecond())),
                namespace: Some(namespace.clone()),
                ..ObjectMeta::default()
            },
            event_time: Some(MicroTime(now)),
            type_: Some(
                match note.type_ {
                    EventType::Normal => "Normal",
                    EventType::Warning => "Warning",
                }
                .into(),
            ),
            reason: Some(note.reason),
            action: Some(note.action),
            note: Some(fit_note(note.text)),
            regarding: Some(regarding.clone()),
            related: note.related,
            reporting_controller: Some(self.reporter.controller.clone()),
            reporting_instance: Some(
                (self.reporter.instance.clone())
                    .unwrap_or_else(|| self.reporter.controller.clone()),
            ),
            ..Event::default()
        }
    }

    /// Forget Warnings said longer ago than [`REPEAT_AFTER`].
    pub fn expire(&self) {
        self.said.expire();
        self.first_created.expire();
    }
}

/// `<object>.<hex>`, as client-go and kube-runtime name Events, with the object's part
/// shortened so that the whole stays within 253 characters and still ends in an
/// alphanumeric before the dot (a DNS subdomain's labels may not end in `-` or `.`).
pub fn event_name(object: &str, nanos: i128) -> String {
    let suffix = format!("{:x}", nanos.max(0));
    let room = MAX_NAME - 1 - suffix.len();
    // Object names are ASCII (DNS subdomains); `get` keeps this safe for anything else.
    let mut end = object.len().min(room);
    while end > 0 && !object.is_char_boundary(end) {
        end -= 1;
    }
    let head = object[..end].trim_end_matches(|c: char| !c.is_ascii_alphanumeric());
    let head = if head.is_empty() { "event" } else { head };
    format!("{head}.{suffix}")
}

/// `text`, cut to at most [`MAX_NOTE`] bytes on a character boundary, with `…` to show
/// the cut.
pub fn fit_note(text: String) -> String {
    if text.len() <= MAX_NOTE {
        return text;
    }
    const MORE: &str = "…";
    let mut end = MAX_NOTE - MORE.len();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{MORE}", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_first_children_of_a_controllers_object_go_unannounced() {
        // (has a controller, has a status, created some before) → announced
        assert!(
            announces_created(false, false, false),
            "a person's new object"
        );
        assert!(
            announces_created(false, true, false),
            "a person's object repaired"
        );
        assert!(
            !announces_created(true, false, false),
            "a Fermat's new Tuple"
        );
        assert!(
            announces_created(true, true, false),
            "a Fermat's Tuple repaired"
        );
        assert!(
            announces_created(true, false, true),
            "a Fermat's Tuple repaired before its first status"
        );
    }

    #[test]
    fn event_names_fit_for_any_valid_object_name() {
        let nanos = Timestamp::now().as_nanosecond();
        assert_eq!(event_name("t", 255), "t.ff");
        for len in [1, 200, 236, 237, 240, 253] {
            let object = "t".repeat(len);
            let name = event_name(&object, nanos);
            assert!(name.len() <= MAX_NAME, "{len}: {}", name.len());
            assert!(name.starts_with(&object[..len.min(200)]));
        }
        // Cut where the object's name has a dash or a dot: the label still ends alphanumeric.
        let object = format!("{}-and-{}", "a".repeat(230), "b".repeat(20));
        let name = event_name(&object, nanos);
        assert!(name.len() <= MAX_NAME);
        let head = name.rsplit_once('.').map(|(h, _)| h).unwrap_or_default();
        assert!(
            head.ends_with(|c: char| c.is_ascii_alphanumeric()),
            "{name}"
        );
        assert_eq!(event_name("---", 1), "event.1");
    }

    #[test]
    fn notes_are_cut_at_1024_bytes_on_a_character_boundary() {
        assert_eq!(fit_note("short".into()), "short");
        let exact = "a".repeat(MAX_NOTE);
        assert_eq!(fit_note(exact.clone()), exact);
        let squares = "²".repeat(700); // 2 bytes each
        let cut = fit_note(squares);
        assert!(cut.len() <= MAX_NOTE, "{}", cut.len());
        assert!(cut.ends_with('…'));
    }
}
