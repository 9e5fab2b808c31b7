//! The learner track (`workshop/`) in the cluster the manager starts on. After the workshop a
//! learner runs `make install && cargo run` on their own cluster, where their objects are still
//! there, written by their own controllers: the manager takes them over (their children are
//! already controlled by their parents, which are the same objects; every status is rewritten
//! whole by the manager's controllers). Two cases stop it instead, each in one line:
//!
//! - a workshop controller is still running (`make workshop-run`): both would write the same
//!   statuses and children. Its runner renews a heartbeat Lease, [`RUNNER_HEARTBEAT`], in the
//!   namespace it looks after (`workshop/kit/src/room_status.rs`), and releases it when it
//!   stops (its `holderIdentity` cleared); one that vanished without stopping is taken for
//!   running until its lease runs out (15 s).
//! - the cluster is a room's, shared by participants: `make workshop-room` marks the CRDs it
//!   installs with [`ROOM_MARK`] (the mark stays when `make install` applies the manager's CRDs
//!   over them), and there the manager watching every namespace would take over everyone's
//!   objects. It runs in a namespace of its own there (`--namespace`), as the organiser's demo
//!   does.
//!
//! Both looks are best effort: a manager whose RBAC may not list Leases or read CRDs (deploy/'s
//! does not) is deployed on purpose, not started by a learner after the workshop.

use std::collections::BTreeMap;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;

/// The name of the workshop runner's heartbeat Lease (`room_status::HEARTBEAT` in the kit).
pub const RUNNER_HEARTBEAT: &str = "math-workshop-runner";

/// The annotation `make workshop-room` puts on the CRDs it installs (`organiser::ROOM_CRD` in
/// the kit): this cluster is a room's.
pub const ROOM_MARK: &str = "math.example.com/workshop-room";

/// The field manager of the learner track's controllers (`math-workshop`, and
/// `math-workshop-<participant>` as its runner signs on a cluster).
const WORKSHOP_MANAGER: &str = "math-workshop";

/// A workshop runner whose heartbeat is fresh.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Runner {
    pub namespace: String,
    pub participant: String,
    /// Seconds since its last renewal.
    pub age: i64,
}

/// The runners among `leases` (heartbeats, [`RUNNER_HEARTBEAT`]) still running at `now`: held
/// (a stopped runner clears its holder) and renewed within their duration.
pub fn running(leases: &[Lease], now: Timestamp) -> Vec<Runner> {
    leases
        .iter()
        .filter(|lease| lease.metadata.name.as_deref() == Some(RUNNER_HEARTBEAT))
        .filter_map(|lease| {
            let spec = lease.spec.as_ref()?;
            let participant = spec.holder_identity.clone().filter(|h| !h.is_empty())?;
            let renewed = spec.renew_time.as_ref()?.0;
            let age = now.duration_since(renewed).as_secs();
            let lasts = i64::from(spec.lease_duration_seconds.unwrap_or(0));
            (age <= lasts).then(|| Runner {
                namespace: lease.metadata.namespace.clone().unwrap_or_default(),
                participant,
                age: age.max(0),
            })
        })
        .collect()
}

/// The line that stops the manager while workshop controllers run: which, where, and how to
/// stop them.
pub fn runners_line(runners: &[Runner]) -> String {
    let each: Vec<String> = runners
        .iter()
        .take(5)
        .map(|r| {
            format!(
                "{WORKSHOP_MANAGER}-{}'s runner in namespace {} (its heartbeat {} s ago)",
                r.participant, r.namespace, r.age
            )
        })
        .collect();
    let more = if runners.len() > 5 { ", …" } else { "" };
    let (running, them) = match runners.len() {
        1 => ("a workshop controller is running".to_string(), "it"),
        n => (format!("{n} workshop controllers are running"), "them"),
    };
    format!(
        "{running}: {}{more}. Stop {them} (Ctrl-C in the terminal of `make workshop-run`), then start \
         the manager again: both would write the same statuses and children",
        each.join(", ")
    )
}

/// Whether a CRD was installed by `make workshop-room` ([`ROOM_MARK`]).
pub fn marks_a_room(crd: &CustomResourceDefinition) -> bool {
    crd.metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(ROOM_MARK))
}

/// Whether a workshop controller writes this object's status (its managedFields say so).
pub fn workshop_controlled(meta: &ObjectMeta) -> bool {
    meta.managed_fields.iter().flatten().any(|entry| {
        entry.subresource.as_deref() == Some("status")
            && entry.manager.as_deref().is_some_and(|m| {
                m == WORKSHOP_MANAGER || m.starts_with(&format!("{WORKSHOP_MANAGER}-"))
            })
    })
}

/// "2 namespaces (math-workshop-alice: 3, math-workshop-bob: 1)", or `None` for none.
pub fn describe_namespaces(counts: &BTreeMap<String, usize>) -> Option<String> {
    if counts.is_empty() {
        return None;
    }
    let listed: Vec<String> = counts
        .iter()
        .take(5)
        .map(|(ns, n)| format!("{ns}: {n}"))
        .collect();
    let more = if counts.len() > 5 { ", …" } else { "" };
    let count = match counts.len() {
        1 => "1 namespace".to_string(),
        n => format!("{n} namespaces"),
    };
    Some(format!("{count} ({}{more})", listed.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::coordination::v1::LeaseSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ManagedFieldsEntry, MicroTime};

    fn lease(namespace: &str, holder: Option<&str>, renewed: Timestamp) -> Lease {
        Lease {
            metadata: ObjectMeta {
                name: Some(RUNNER_HEARTBEAT.to_string()),
                namespace: Some(namespace.to_string()),
                ..Default::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: holder.map(str::to_string),
                lease_duration_seconds: Some(15),
                renew_time: Some(MicroTime(renewed)),
                ..Default::default()
            }),
        }
    }

    #[test]
    fn a_runner_runs_while_it_holds_a_fresh_heartbeat() {
        let now = Timestamp::from_second(1_000_000).unwrap_or(Timestamp::UNIX_EPOCH);
        let ago = |s: i64| Timestamp::from_second(1_000_000 - s).unwrap_or(Timestamp::UNIX_EPOCH);
        let leases = [
            lease("default", Some("alice"), ago(2)),
            // Stopped: released; vanished: its lease ran out.
            lease("stopped", None, ago(1)),
            lease("vanished", Some("bob"), ago(16)),
        ];
        assert_eq!(
            running(&leases, now),
            [Runner {
                namespace: "default".to_string(),
                participant: "alice".to_string(),
                age: 2
            }]
        );
        assert_eq!(
            runners_line(&running(&leases, now)),
            "a workshop controller is running: math-workshop-alice's runner in namespace default \
             (its heartbeat 2 s ago). Stop it (Ctrl-C in the terminal of `make workshop-run`), then \
             start the manager again: both would write the same statuses and children"
        );
    }

    fn meta(entries: &[(&str, Option<&str>)]) -> ObjectMeta {
        ObjectMeta {
            managed_fields: Some(
                entries
                    .iter()
                    .map(|(manager, sub)| ManagedFieldsEntry {
                        manager: Some(manager.to_string()),
                        subresource: sub.map(str::to_string),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        }
    }

    #[test]
    fn a_workshop_controller_is_known_by_the_status_it_writes() {
        assert!(workshop_controlled(&meta(&[(
            "math-workshop-alice",
            Some("status")
        )])));
        assert!(workshop_controlled(&meta(&[(
            "math-workshop",
            Some("status")
        )])));
        // Its spec writes are a parent's, which may be the manager's own Tuple; a status the
        // manager writes is not the workshop's; nor is a look-alike's.
        assert!(!workshop_controlled(&meta(&[(
            "math-workshop-alice",
            None
        )])));
        assert!(!workshop_controlled(&meta(&[("", Some("status"))])));
        assert!(!workshop_controlled(&meta(&[(
            "math-workshopper",
            Some("status")
        )])));
    }

    #[test]
    fn the_namespaces_are_named_with_their_counts() {
        assert_eq!(describe_namespaces(&Default::default()), None);
        let counts = [
            ("math-workshop-alice".to_string(), 3),
            ("default".to_string(), 1),
        ];
        assert_eq!(
            describe_namespaces(&counts.into_iter().collect()).as_deref(),
            Some("2 namespaces (default: 1, math-workshop-alice: 3)")
        );
    }
}
