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
//!   refused unless forced ([`may_install`], `install`);
//! - `workshop-run` and `workshop-install` work in the participant's namespace
//!   ([`your_namespace`]), and every request they and the checks send is signed with the
//!   participant's name ([`Signature`], `signature`): a runner that finds objects another controller looks
//!   after (another participant's runner, the finished manager) leaves them alone
//!   ([`others_controllers`], `foreign`).

mod foreign;
mod install;
mod signature;

pub(crate) use foreign::resource_of;
pub use foreign::{Foreign, describe_foreign, foreign, others_controllers, status_writers};
pub use install::{Install, digest, may_install};
pub use signature::Signature;

use crate::messages as m;
use crate::t;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ObjectMeta, PostParams};

/// The label every namespace and CRD the workshop tools create carries.
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "math-workshop");
/// On a check's namespace: the participant it belongs to.
pub const PARTICIPANT: &str = "math.example.com/workshop-participant";
/// On a CRD written by the workshop: a digest of its spec, so that two participants can tell
/// "the same CRD" (nothing changes when either installs it) from "another one".
pub const DIGEST: &str = "math.example.com/workshop-crd-digest";

/// Who is checking: `--participant` (`PARTICIPANT=`) as given, which must be a name as the
/// room's files are named ([`crate::organiser::names::is_valid`]: `Taro` is refused with
/// `taro`, rather than looking for one file and using another); else this machine's
/// ([`this_machines_participant`]).
pub fn participant(explicit: Option<&str>) -> Result<String, String> {
    use crate::organiser::names;
    match explicit {
        None => Ok(this_machines_participant()),
        Some(name) if names::is_valid(name) => Ok(name.to_string()),
        Some(name) => Err(t!(
            m::PARTICIPANT_REFUSED,
            name = name,
            suggested = names::suggested(name, 1)
        )),
    }
}

/// The user and host names (`alice-laptop`) as lower-case letters, digits and dashes. Two
/// laptops rarely share both; a room that has identical machines sets `PARTICIPANT=` per
/// person.
pub fn this_machines_participant() -> String {
    let user = ["USER", "USERNAME", "LOGNAME"]
        .iter()
        .find_map(|var| std::env::var(var).ok().filter(|v| !v.is_empty()))
        .unwrap_or_else(|| "learner".to_string());
    let raw = match hostname() {
        Some(host) => format!("{user}-{}", host.split('.').next().unwrap_or(&host)),
        None => user,
    };
    let name = dns_label(&raw, crate::organiser::names::LONGEST);
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
/// one that exists is used as it is, and never deleted: it holds the participant's work. A
/// kubeconfig that may not read or create it gets one line saying what to do
/// ([`namespace_refused`]).
pub async fn ensure_namespace(
    client: &kube::Client,
    name: &str,
    participant: &str,
) -> Result<(), String> {
    let api = Api::<Namespace>::all(client.clone());
    let refused = |failure, e: kube::Error| {
        namespace_refused(code(&e), failure, &said(&e), name, participant)
    };
    let existing = api
        .get_opt(name)
        .await
        .map_err(|e| refused(m::CANNOT_READ_NAMESPACE, e))?;
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
        Err(e) => Err(refused(m::CANNOT_CREATE_NAMESPACE, e)),
    }
}

/// Why reading or creating namespace `name` failed with `code` (the server's words `said`,
/// put in the `failure` message): a 403 is a kubeconfig without the right, and the line says
/// what to do about it, as a `CLUSTER=1` check's does: the bare error leaves a participant with
/// the wrong kubeconfig, or a name the room was not set up for, nowhere to go.
pub(crate) fn namespace_refused(
    code: Option<u16>,
    failure: m::Msg,
    said: &str,
    name: &str,
    participant: &str,
) -> String {
    match code {
        Some(403) => t!(
            m::NO_RIGHTS_FOR_YOUR_NAMESPACE,
            name = name,
            participant = participant
        ),
        _ => t!(failure, name = name, said = said),
    }
}

/// The HTTP status of an API error, if the server answered.
fn code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
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
pub(crate) fn dns_label(text: &str, max: usize) -> String {
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
    fn participants_are_names_as_the_files_are_named() {
        assert_eq!(participant(Some("alice")), Ok("alice".to_string()));
        assert_eq!(
            participant(Some("Taro")),
            Err(
                "PARTICIPANT=Taro: a participant's name is lowercase ASCII letters, digits and \
                 hyphens, as the room's files are named: use PARTICIPANT=taro"
                    .to_string()
            )
        );
        assert!(
            participant(Some("ユーザー")).is_err_and(|e| e.ends_with("PARTICIPANT=participant-1"))
        );
        let derived = this_machines_participant();
        assert!(crate::organiser::names::is_valid(&derived), "{derived}");
        assert_eq!(check_namespace("alice"), "math-workshop-check-alice");
        assert!(check_namespace(&derived).len() <= 63);
    }

    #[test]
    fn without_the_right_to_its_namespace_one_line_says_what_to_do() {
        let no_rights = "your kubeconfig has no rights to create namespace math-workshop-lead \
                         on this cluster (403): the organiser runs `make workshop-room \
                         PARTICIPANTS=lead` first (then PARTICIPANT=lead uses \
                         workshop/room/lead.kubeconfig), or use the kubeconfig the organiser \
                         gave you (export PARTICIPANT=<your name>)";
        let ns = "math-workshop-lead";
        for failure in [m::CANNOT_READ_NAMESPACE, m::CANNOT_CREATE_NAMESPACE] {
            assert_eq!(
                namespace_refused(Some(403), failure, "forbidden", ns, "lead"),
                no_rights
            );
        }
        assert_eq!(
            namespace_refused(Some(422), m::CANNOT_CREATE_NAMESPACE, "invalid", ns, "lead"),
            "cannot create namespace math-workshop-lead: invalid"
        );
        assert_eq!(
            namespace_refused(None, m::CANNOT_READ_NAMESPACE, "timed out", ns, "lead"),
            "cannot read namespace math-workshop-lead: timed out"
        );
    }

    #[test]
    fn your_namespace_is_the_one_asked_for_else_the_contexts_else_kubectls_default() {
        assert_eq!(your_namespace(Some("x"), Some("y")), "x");
        assert_eq!(your_namespace(None, Some("y")), "y");
        assert_eq!(your_namespace(None, None), "default");
        assert_eq!(participant_namespace("Alice"), "math-workshop-alice");
    }
}
