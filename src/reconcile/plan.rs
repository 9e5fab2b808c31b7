//! Owning children, for any parent kind: the diff between the children a parent wants and
//! the ones the cache holds. Pure: it decides *what* to do and knows nothing of the client or
//! the `Context`; the writes that carry a [`Plan`] out live one layer up, in `writes.rs`.
//!
//! Children are recognised by the UID in their *controller* ownerReference and looked for
//! only in the parent's namespace, never by the owner's name: two Fermats called alike in
//! two namespaces do not see each other's Tuples.

use std::collections::{HashMap, HashSet};
use std::fmt::Debug;
use std::sync::Arc;

use kube::{Resource, ResourceExt};

use crate::kind::{Child, Desired, controller_ref, controller_uid};
use crate::reconcile::Progress;
use crate::reconcile::memory::refusals::{Refusal, Step};
use crate::reconcile::status::{Readiness, name_list};

/// Longest object name Kubernetes accepts (a DNS subdomain).
pub const MAX_NAME_LEN: usize = 253;

/// An existing object of a desired name that belongs to somebody else.
#[derive(Clone, Debug, PartialEq)]
pub struct Conflict {
    pub name: String,
    /// "Tuple other (uid 1234)"
    pub owner: String,
}

impl Step {
    /// The `Ready` reason of a parent whose step was refused.
    pub fn refused_reason(self) -> &'static str {
        match self {
            Step::Create => "ChildCreateRefused",
            Step::Correct | Step::Adopt => "ChildUpdateRefused",
            Step::Delete => "ChildDeleteRefused",
        }
    }

    /// "creating", for messages.
    pub fn verb(self) -> &'static str {
        match self {
            Step::Create => "creating",
            Step::Correct => "correcting",
            Step::Adopt => "adopting",
            Step::Delete => "deleting",
        }
    }
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
    /// Desired children that exist but cannot be decoded (stored under another schema),
    /// with why: left alone, reported.
    pub undecodable: Vec<(String, String)>,
    /// How many children the spec asks for.
    pub desired: usize,
    /// What the API server refused when the plan was carried out (filled in by the writes,
    /// empty in a fresh plan).
    pub refused: Vec<Refusal>,
}

impl<C: Child> Plan<C> {
    /// Whether this plan writes to any child.
    pub fn has_writes(&self) -> bool {
        !(self.create.is_empty()
            && self.correct.is_empty()
            && self.adopt.is_empty()
            && self.delete.is_empty())
    }

    /// The steps this plan has work for: the only ones a remembered refusal may still hold
    /// back (a refused delete whose child is gone blocks nothing).
    pub fn steps(&self) -> HashSet<Step> {
        [
            (Step::Create, self.create.is_empty()),
            (Step::Correct, self.correct.is_empty()),
            (Step::Adopt, self.adopt.is_empty()),
            (Step::Delete, self.delete.is_empty()),
        ]
        .into_iter()
        .filter(|(_, empty)| !empty)
        .map(|(step, _)| step)
        .collect()
    }

    /// Every desired child is done: the parent may give its final answer.
    pub fn all_ready(&self) -> bool {
        self.ready.len() == self.desired
    }

    /// The parent cannot finish without somebody else acting.
    pub fn blocked(&self) -> bool {
        !self.conflicts.is_empty()
            || !self.invalid_names.is_empty()
            || !self.refused.is_empty()
            || !self.undecodable.is_empty()
    }

    /// Set aside the children to create that exist after all but cannot be decoded (`why`
    /// answers why, by name): creating them would only be answered 409 AlreadyExists, again
    /// and again. Their parent says so instead, until they are fixed or deleted.
    pub fn set_aside_undecodable(&mut self, why: impl Fn(&str) -> Option<String>) {
        let create = std::mem::take(&mut self.create);
        for want in create {
            match why(&want.name) {
                Some(error) => self.undecodable.push((want.name, error)),
                None => self.create.push(want),
            }
        }
    }
}

/// Why a parent is not Ready, if it is not: a write the API server refused, a child name
/// Kubernetes would refuse or a child owned by someone else (all need someone to act:
/// [`Progress::Blocked`]), or children still on their way ([`Progress::Pending`]). `None`:
/// every desired child is done, and the parent may give its answer.
///
/// A blocked message names what blocks, without counts (those are in the status's fields):
/// the status is rewritten when the message changes, not when other children settle.
pub fn unfinished<C: Child>(plan: &Plan<C>) -> Option<(Readiness, Progress)> {
    let kinds = format!("{}s", C::KIND);
    let not_ready = |reason, message| Readiness {
        ready: false,
        reason,
        message,
    };
    if let Some(first) = plan.refused.first() {
        let message = plan
            .refused
            .iter()
            .map(|r| {
                format!(
                    "{} {} {} was refused: {}",
                    r.step.verb(),
                    C::KIND,
                    r.name,
                    r.message
                )
            })
            .collect::<Vec<_>>()
            .join("; ");
        Some((
            not_ready(first.step.refused_reason(), message),
            Progress::Blocked,
        ))
    } else if !plan.invalid_names.is_empty() {
        let names = name_list(&plan.invalid_names);
        let message =
            format!("cannot create {kinds} {names}: names longer than {MAX_NAME_LEN} characters");
        Some((not_ready("ChildNameTooLong", message), Progress::Blocked))
    } else if !plan.conflicts.is_empty() {
        let names: Vec<_> = plan
            .conflicts
            .iter()
            .map(|c| format!("{} (controlled by {})", c.name, c.owner))
            .collect();
        let message = format!("{kinds} owned by someone else: {}", name_list(&names));
        Some((not_ready("ChildConflict", message), Progress::Blocked))
    } else if !plan.undecodable.is_empty() {
        let message = (plan.undecodable.iter())
            .map(|(name, why)| format!("{} {name} cannot be decoded: {why}", C::KIND))
            .collect::<Vec<_>>()
            .join("; ");
        let message = format!("{message} (fix or delete it; it is left alone until then)");
        Some((not_ready("ChildUndecodable", message), Progress::Blocked))
    } else if !plan.all_ready() || plan.has_writes() {
        let counts = format!("{}/{} {kinds} ready", plan.ready.len(), plan.desired);
        let waiting = awaited(plan);
        let message = format!("{counts}; waiting for {}", name_list(&waiting));
        Some((not_ready(C::WAITING_REASON, message), Progress::Pending))
    } else {
        None
    }
}

/// The children a pending parent waits for: those to create, correct, adopt, those still
/// computing, and those to delete.
fn awaited<C: Child>(plan: &Plan<C>) -> Vec<String> {
    (plan.create.iter().map(|d| d.name.clone()))
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
        .collect()
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
        undecodable: Vec::new(),
        desired: desired.len(),
        refused: Vec::new(),
    };
    let wanted: HashSet<&str> = desired.iter().map(|d| d.name.as_str()).collect();
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
    controller_ref(obj)
        .map(|r| format!("{} {} (uid {})", r.kind, r.name, r.uid))
        .unwrap_or_else(|| "nobody".to_string())
}
