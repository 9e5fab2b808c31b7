//! Whose objects these are: those of a namespace whose status another controller writes (another
//! participant's runner, the finished manager), which a runner leaves alone.

use super::{Signature, said};
use crate::messages as m;
use crate::t;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, ObjectMeta};

/// An object of the workshop's kinds whose status another controller writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Foreign {
    /// `Tuple/tuple-sample`.
    pub object: String,
    /// The field manager of its status: `math-workshop-bob`, or the name the finished manager's
    /// requests go by (empty when it sends none).
    pub controller: String,
}

/// The controllers that wrote an object's status most recently, from its managedFields: the
/// managers of the status subresource's entries that are not a person's (`kubectl …`) whose
/// `time` is the newest, each once, in the list's order.
///
/// By time, not by place in the list: kube-apiserver lists the `Apply` entries before the
/// `Update` ones whatever their times (`sortEncodedManagedFields`; the test API server does
/// the same), so a controller that applies its status (kube-rs's `Patch::Apply` on `/status`,
/// as the reference solutions do) sits before one that merge-patched it earlier and still
/// owns a field of it. The times are to the second: controllers that wrote in the same second
/// are all newest, since nothing tells which came last. An entry without a time (an apply
/// that changed no value) is older than any with one: that manager wrote nothing.
pub fn status_writers(meta: &ObjectMeta) -> Vec<String> {
    let controllers: Vec<&ManagedFieldsEntry> = meta
        .managed_fields
        .iter()
        .flatten()
        .filter(|entry| entry.subresource.as_deref() == Some("status"))
        .filter(|entry| {
            !entry
                .manager
                .as_deref()
                .is_some_and(|manager| manager.starts_with("kubectl"))
        })
        .collect();
    let Some(newest) = controllers.iter().map(|entry| entry.time.as_ref()).max() else {
        return Vec::new();
    };
    let mut writers: Vec<String> = Vec::new();
    for entry in controllers
        .iter()
        .filter(|entry| entry.time.as_ref() == newest)
    {
        let manager = entry.manager.clone().unwrap_or_default();
        if !writers.contains(&manager) {
            writers.push(manager);
        }
    }
    writers
}

/// Among `objects` (kind, metadata), those whose status a controller other than `me` writes:
/// one of its newest writers ([`status_writers`]) is not `me`. When `me` and another
/// controller wrote in the same second, which came last cannot be told, but two controllers
/// are then at work on one status, the very thing a runner must not join: the other one is
/// named.
pub fn foreign<'a>(
    objects: impl IntoIterator<Item = (&'a str, &'a ObjectMeta)>,
    me: &Signature,
) -> Vec<Foreign> {
    objects
        .into_iter()
        .filter_map(|(kind, meta)| {
            let controller = status_writers(meta)
                .into_iter()
                .find(|writer| writer != me.field_manager())?;
            Some(Foreign {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn foreign_objects_are_those_whose_status_another_controller_writes() {
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

    /// `(manager, operation, time)` as status entries of an object's managedFields, in the
    /// order given (the server's: `Apply` entries first, whatever their times).
    fn status_entries(entries: &[(&str, &str, Option<&str>)]) -> ObjectMeta {
        let entries = entries
            .iter()
            .map(|(manager, operation, time)| {
                serde_json::from_value(serde_json::json!({
                    "manager": manager,
                    "operation": operation,
                    "subresource": "status",
                    "time": time,
                }))
                .expect("a managedFields entry")
            })
            .collect();
        ObjectMeta {
            name: Some("n".to_string()),
            managed_fields: Some(entries),
            ..Default::default()
        }
    }

    const EARLIER: Option<&str> = Some("2026-11-28T03:00:01Z");
    const LATER: Option<&str> = Some("2026-11-28T03:00:02Z");

    #[test]
    fn the_status_writer_is_the_newest_by_time_not_the_last_listed() {
        let alice = Signature::new("alice");
        let whose = |entries: &[(&str, &str, Option<&str>)]| {
            let meta = status_entries(entries);
            let found = foreign([("Number", &meta)], &alice);
            (
                status_writers(&meta),
                found.first().map(|f| f.controller.clone()),
            )
        };
        let (bob, carol) = ("math-workshop-bob", "math-workshop-carol");
        let alices = "math-workshop-alice";
        // bob merge-patched it, then carol applied a newer status: carol's is at work.
        assert_eq!(
            whose(&[(carol, "Apply", LATER), (bob, "Update", EARLIER)]),
            (vec![carol.to_string()], Some(carol.to_string()))
        );
        // alice merge-patched it once, bob applied since: bob's is at work beside alice's.
        assert_eq!(
            whose(&[(bob, "Apply", LATER), (alices, "Update", EARLIER)]),
            (vec![bob.to_string()], Some(bob.to_string()))
        );
        // alice's apply is newer than bob's old merge patch: nobody else is at work.
        assert_eq!(
            whose(&[(alices, "Apply", LATER), (bob, "Update", EARLIER)]),
            (vec![alices.to_string()], None)
        );
        // A person's newer edit is nobody's controller.
        assert_eq!(
            whose(&[
                (alices, "Apply", EARLIER),
                ("kubectl-patch", "Update", LATER)
            ]),
            (vec![alices.to_string()], None)
        );
        // An apply that changed no value has no time: older than any write.
        assert_eq!(
            whose(&[(bob, "Apply", None), (alices, "Update", EARLIER)]),
            (vec![alices.to_string()], None)
        );
    }

    #[test]
    fn in_the_same_second_the_other_controller_is_named() {
        let alice = Signature::new("alice");
        let (bob, alices) = ("math-workshop-bob", "math-workshop-alice");
        for entries in [
            [(alices, "Apply", LATER), (bob, "Update", LATER)],
            [(bob, "Apply", LATER), (alices, "Update", LATER)],
        ] {
            let meta = status_entries(&entries);
            assert_eq!(status_writers(&meta).len(), 2, "{entries:?}");
            assert_eq!(
                foreign([("Number", &meta)], &alice),
                vec![Foreign {
                    object: "Number/n".into(),
                    controller: bob.into()
                }],
                "{entries:?}"
            );
        }
        // One manager with both an Apply and an Update entry is one writer.
        let both = status_entries(&[(alices, "Apply", LATER), (alices, "Update", LATER)]);
        assert_eq!(status_writers(&both), vec![alices.to_string()]);
        assert!(foreign([("Number", &both)], &alice).is_empty());
    }
}
