//! Whose objects these are: those of a namespace whose status another controller writes (another
//! participant's runner, the finished manager), which a runner leaves alone.

use super::{Signature, said};
use crate::messages as m;
use crate::t;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
