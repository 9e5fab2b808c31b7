//! The namespace of a `CLUSTER=1` check, `math-workshop-check-<participant>`: a fresh one for
//! every check, and never somebody else's.
//!
//! Who made it decides what the check does with it. On a cluster of one's own (minikube, kind,
//! an administrator's kubeconfig) the check creates it, marked as the participant's, and
//! deletes it at its end; a leftover of the participant's earlier check is deleted first. In a
//! room ([`crate::organiser`]) the organiser made it, and a participant, who may not create or
//! delete namespaces, empties it at the start and the end instead. An administrator in a room
//! checking as a name the room was not set up for finds none: kube-apiserver answers the read
//! 404, and the check creates it as on a cluster of one's own, marked as a check's
//! ([`MADE_BY_A_CHECK`]) so that what an interrupted check leaves is not taken for the
//! organiser's. A kubeconfig that may neither read nor create it (a participant's, for another
//! name) gets one line saying what to do.
//!
//! The decisions ([`step`], [`refused`]) are pure, beside their tests; [`claim`] sends the
//! requests.

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, PostParams};

use crate::messages as m;
use crate::room::{PARTICIPANT, marked_namespace, resource_of, said};
use crate::t;

/// How long a check waits for an earlier check's namespace, or its objects, to go.
const PATIENCE: Duration = Duration::from_secs(120);
/// On a namespace a check created (not the organiser): a later check may delete it, in a room
/// too, when an earlier one ended without doing so (Ctrl-C).
pub(crate) const MADE_BY_A_CHECK: &str = "math.example.com/workshop-check";

/// What reading the check's namespace answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Answer {
    /// 404: nobody made it.
    Missing,
    /// 403: this kubeconfig may not read it.
    Forbidden,
    /// Any other failure, in the server's words.
    Failed(String),
    /// It exists: whose it is (its [`PARTICIPANT`] annotation), whether a check made it
    /// ([`MADE_BY_A_CHECK`]), and whether it is being deleted.
    Found {
        owner: Option<String>,
        made_by_a_check: bool,
        terminating: bool,
    },
}

/// What the check does next about its namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// Create it (and delete it at the end).
    Create,
    /// The participant's, being deleted: read it again in a moment.
    Wait,
    /// The participant's earlier check's (any on a cluster of their own; in a room, one a
    /// check made): delete it, then wait.
    DeleteEarlier,
    /// The participant's, in a room: the organiser's; empty it, keep it.
    Empty,
    /// Stop: why, and what to do, in one line.
    Refuse(String),
}

/// Who made the namespace the check works in, so that its end undoes only what it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Claimed {
    /// The check created it: deleted at the end.
    Made,
    /// The organiser's: emptied at the end, kept.
    Organisers,
}

/// The next step for namespace `name` of `participant`'s check, from what reading it answered.
pub(crate) fn step(answer: Answer, in_a_room: bool, name: &str, participant: &str) -> Step {
    match answer {
        Answer::Missing => Step::Create,
        Answer::Forbidden => Step::Refuse(no_rights(participant)),
        Answer::Failed(said) => {
            Step::Refuse(t!(m::CANNOT_READ_NAMESPACE, name = name, said = said))
        }
        Answer::Found { owner, .. } if owner.as_deref() != Some(participant) => {
            Step::Refuse(match owner {
                Some(other) => t!(
                    m::NAMESPACE_OF_OTHER,
                    name = name,
                    other = other,
                    participant = participant
                ),
                None => t!(m::NAMESPACE_NOT_A_CHECKS, name = name),
            })
        }
        Answer::Found {
            terminating: true, ..
        } => Step::Wait,
        Answer::Found {
            made_by_a_check: false,
            ..
        } if in_a_room => Step::Empty,
        Answer::Found { .. } => Step::DeleteEarlier,
    }
}

/// Why a create of namespace `name` failed with `code` (the server's words `said`): a 403 is
/// a kubeconfig without the right, and the line says what to do about it.
pub(crate) fn refused(code: Option<u16>, said: &str, name: &str, participant: &str) -> String {
    match code {
        Some(403) => no_rights(participant),
        _ => t!(m::CANNOT_CREATE_NAMESPACE, name = name, said = said),
    }
}

fn no_rights(participant: &str) -> String {
    t!(m::NO_RIGHTS_FOR_CHECK_NAMESPACE, participant = participant)
}

/// Makes `name` the participant's check's namespace, fresh ([`step`]); waits two minutes at
/// most for an earlier check's to go. Why not, in one line.
pub(crate) async fn claim(
    client: &kube::Client,
    crds: &[CustomResourceDefinition],
    name: &str,
    participant: &str,
    in_a_room: bool,
) -> Result<Claimed, String> {
    let api = Api::<Namespace>::all(client.clone());
    let deadline = Instant::now() + PATIENCE;
    loop {
        match step(read(&api, name).await, in_a_room, name, participant) {
            Step::Create => match api
                .create(&PostParams::default(), &made(name, participant))
                .await
            {
                Ok(_) => return Ok(Claimed::Made),
                // Made at the same moment by the participant's other tool: read it again.
                Err(kube::Error::Api(status)) if status.code == 409 => {}
                Err(e) => return Err(refused(code_of(&e), &said(&e), name, participant)),
            },
            Step::Empty => {
                empty(client, crds, name).await?;
                return Ok(Claimed::Organisers);
            }
            // A check ends without waiting for its namespace to go: gone first, for a fresh start.
            Step::DeleteEarlier => {
                api.delete(name, &DeleteParams::default())
                    .await
                    .map_err(|e| t!(m::CANNOT_DELETE_EARLIER, name = name, said = said(&e)))?;
            }
            Step::Wait => {}
            Step::Refuse(why) => return Err(why),
        }
        if Instant::now() > deadline {
            return Err(t!(m::EARLIER_STILL_DELETING, name = name));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Undoes what [`claim`] did, at the check's end: deletes a namespace it made (without
/// waiting for it to go), empties the organiser's. A failure is logged: the check is over.
pub(crate) async fn release(
    client: &kube::Client,
    crds: &[CustomResourceDefinition],
    name: &str,
    claimed: Claimed,
) {
    let why = match claimed {
        Claimed::Made => Api::<Namespace>::all(client.clone())
            .delete(name, &DeleteParams::default())
            .await
            .err()
            .map(|e| said(&e)),
        Claimed::Organisers => empty(client, crds, name).await.err(),
    };
    if let Some(why) = why {
        tracing::warn!(target: "math_workshop::room", namespace = %name, %why, "{}", m::NAMESPACE_NOT_DELETED.text());
    }
}

/// What reading namespace `name` answered.
async fn read(api: &Api<Namespace>, name: &str) -> Answer {
    match api.get_opt(name).await {
        Ok(None) => Answer::Missing,
        Ok(Some(namespace)) => {
            let annotations = namespace.metadata.annotations.unwrap_or_default();
            Answer::Found {
                owner: annotations.get(PARTICIPANT).cloned(),
                made_by_a_check: annotations.contains_key(MADE_BY_A_CHECK),
                terminating: namespace.metadata.deletion_timestamp.is_some(),
            }
        }
        Err(kube::Error::Api(status)) if status.code == 403 => Answer::Forbidden,
        Err(e) => Answer::Failed(said(&e)),
    }
}

/// The namespace a check creates: the participant's ([`marked_namespace`]), made by a check.
fn made(name: &str, participant: &str) -> Namespace {
    let mut namespace = marked_namespace(name, participant);
    namespace
        .metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(MADE_BY_A_CHECK.to_string(), "true".to_string());
    namespace
}

fn code_of(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

/// Empties the organiser's namespace of every object of the track's kinds, the parents first
/// (the garbage collector takes their children), waiting (two minutes at most) until they are
/// gone.
async fn empty(
    client: &kube::Client,
    crds: &[CustomResourceDefinition],
    namespace: &str,
) -> Result<(), String> {
    let apis: Vec<_> = crds
        .iter()
        .rev()
        .map(|crd| {
            Api::<DynamicObject>::namespaced_with(client.clone(), namespace, &resource_of(crd))
        })
        .collect();
    let deadline = Instant::now() + PATIENCE;
    loop {
        let mut left = 0;
        for api in &apis {
            match api.list_metadata(&ListParams::default()).await {
                Ok(list) => left += list.items.len(),
                Err(kube::Error::Api(status)) if status.code == 404 => continue,
                Err(e) => return Err(said(&e)),
            }
            match api
                .delete_collection(&DeleteParams::default(), &ListParams::default())
                .await
            {
                Ok(_) => {}
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(e) => return Err(said(&e)),
            }
        }
        if left == 0 {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(t!(m::EARLIER_STILL_DELETING, name = namespace));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NS: &str = "math-workshop-check-lead";

    fn found(owner: Option<&str>, terminating: bool) -> Answer {
        Answer::Found {
            owner: owner.map(str::to_string),
            made_by_a_check: false,
            terminating,
        }
    }

    #[test]
    fn a_missing_namespace_is_created_in_a_room_as_on_a_cluster_of_ones_own() {
        // kube-apiserver v1.36.2 answered an administrator's read 404 in a room that had no
        // namespace for `lead`: the check stopped there.
        for in_a_room in [true, false] {
            assert_eq!(step(Answer::Missing, in_a_room, NS, "lead"), Step::Create);
        }
    }

    #[test]
    fn the_participants_own_is_emptied_in_a_room_and_replaced_elsewhere() {
        let mine = || found(Some("lead"), false);
        assert_eq!(step(mine(), true, NS, "lead"), Step::Empty);
        assert_eq!(step(mine(), false, NS, "lead"), Step::DeleteEarlier);
        // In a room, one an earlier check made and did not delete (Ctrl-C) is not the
        // organiser's: deleted, as on a cluster of one's own.
        let left_over = Answer::Found {
            owner: Some("lead".into()),
            made_by_a_check: true,
            terminating: false,
        };
        assert_eq!(step(left_over, true, NS, "lead"), Step::DeleteEarlier);
        for in_a_room in [true, false] {
            let going = found(Some("lead"), true);
            assert_eq!(step(going, in_a_room, NS, "lead"), Step::Wait);
        }
    }

    #[test]
    fn somebody_elses_namespace_is_left_alone() {
        for in_a_room in [true, false] {
            let Step::Refuse(why) = step(found(Some("bob"), false), in_a_room, NS, "lead") else {
                panic!("not refused");
            };
            assert!(why.contains("participant bob, not lead"), "{why}");
            let Step::Refuse(why) = step(found(None, true), in_a_room, NS, "lead") else {
                panic!("not refused");
            };
            assert!(why.contains("was not created by a check"), "{why}");
        }
    }

    #[test]
    fn without_the_rights_one_line_says_what_to_do() {
        let expected = "your kubeconfig has no rights to create it on this cluster (403): \
                        the organiser runs `make workshop-room PARTICIPANTS=lead` first (then \
                        PARTICIPANT=lead uses workshop/room/lead.kubeconfig), or check with the \
                        kubeconfig the organiser gave you (export PARTICIPANT=<your name>)";
        // A read refused (a participant's kubeconfig for another name) …
        assert_eq!(
            step(Answer::Forbidden, true, NS, "lead"),
            Step::Refuse(expected.to_string())
        );
        // … or a create refused (a user who may read namespaces, not create them).
        assert_eq!(refused(Some(403), "forbidden", NS, "lead"), expected);
        assert_eq!(
            refused(Some(422), "invalid", NS, "lead"),
            "cannot create namespace math-workshop-check-lead: invalid"
        );
        let Step::Refuse(why) = step(Answer::Failed("timed out".into()), false, NS, "lead") else {
            panic!("not refused");
        };
        assert_eq!(
            why,
            "cannot read namespace math-workshop-check-lead: timed out"
        );
    }
}
