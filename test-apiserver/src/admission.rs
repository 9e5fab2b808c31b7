//! Admission checks that kube-apiserver runs after validation and before storage, off unless a
//! test turns them on (kube-apiserver's `--enable-admission-plugins`).
//!
//! One plugin so far: **OwnerReferencesPermissionEnforcement** (`plugin/pkg/admission/gc`),
//! on in OpenShift and in hardened clusters. It protects the garbage collector's graph:
//! - changing an object's `metadata.ownerReferences` on update or patch needs `delete` on the
//!   object itself (creating an object with them does not: its creator could have not created
//!   it);
//! - setting `blockOwnerDeletion: true` on a reference (new, or newly true) needs `update` on
//!   the owner's `finalizers` subresource, since it delays the owner's foreground deletion.
//!   Otherwise the write is refused with 403 Forbidden,
//!   `numbers.math.example.com "t-0" is forbidden: cannot set blockOwnerDeletion if an
//!   ownerReference refers to a resource you can't set finalizers on: , <nil>`.
//!
//! The server has no authentication: with the plugin on, every request is made by one user whose
//! permissions are the RBAC rules given to [`Admission::enforce_owner_references`], in every
//! namespace (as if bound by a ClusterRoleBinding). Each authorization question is logged
//! ([`AuthorizationCheck`]), so a test can tell which rules were needed.

use serde::Deserialize;
use serde_json::Value;

use crate::registry::{Registry, ResourceType};
use crate::status::{ApiError, ApiResult};
use crate::util::name_of;

/// One RBAC rule, as in a ClusterRole's or Role's `rules` (`nonResourceURLs` play no part here).
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", default)]
pub struct PolicyRule {
    /// `apiGroups` ("" for core, "*" for all).
    pub api_groups: Vec<String>,
    /// `resources`, with `plural/subresource` for subresources ("*" for all).
    pub resources: Vec<String>,
    /// `verbs` ("*" for all).
    pub verbs: Vec<String>,
    /// `resourceNames` (empty: every name).
    pub resource_names: Vec<String>,
}

/// A question the admission plugin asked the authorizer (the attributes of
/// kube-apiserver's `authorizer.AttributesRecord`), with the answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthorizationCheck {
    /// The verb asked about (`update` for a `finalizers` check, as the real plugin asks).
    pub verb: String,
    /// The API group of the owner's resource.
    pub group: String,
    /// The owner's resource (plural).
    pub resource: String,
    /// `finalizers` when the check is about blocking the owner's deletion.
    pub subresource: Option<String>,
    /// The namespace of the object being written.
    pub namespace: Option<String>,
    /// The owner's name.
    pub name: String,
    /// The authorizer's answer.
    pub allowed: bool,
}

impl AuthorizationCheck {
    /// `resource` or `resource/subresource`, as RBAC rules name it.
    pub fn combined_resource(&self) -> String {
        match &self.subresource {
            Some(sub) => format!("{}/{sub}", self.resource),
            None => self.resource.clone(),
        }
    }
}

/// The admission plugins' configuration and their authorization log.
#[derive(Debug, Default)]
pub struct Admission {
    /// `Some(the user's rules)` while OwnerReferencesPermissionEnforcement is on.
    owner_references: Option<Vec<PolicyRule>>,
    checks: Vec<AuthorizationCheck>,
}

/// Does one RBAC rule allow the request? (Also the SubjectAccessReviews of `auth.rs`.)
pub(crate) fn rule_allows(rule: &PolicyRule, c: &AuthorizationCheck) -> bool {
    let has = |list: &[String], x: &str| list.iter().any(|v| v == "*" || v == x);
    let combined = c.combined_resource();
    let resource_matches = rule.resources.iter().any(|r| {
        r == "*"
            || *r == combined
            || c.subresource
                .as_deref()
                .is_some_and(|sub| r.strip_prefix("*/") == Some(sub))
    });
    has(&rule.verbs, &c.verb)
        && has(&rule.api_groups, &c.group)
        && resource_matches
        && (rule.resource_names.is_empty() || rule.resource_names.contains(&c.name))
}

fn owner_references(obj: &Value) -> &[Value] {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn blocks(reference: &Value) -> bool {
    reference.get("blockOwnerDeletion") == Some(&Value::Bool(true))
}

/// kube-apiserver's `isChangingOwnerReference`.
fn changes_owner_references(old: Option<&Value>, new: &Value) -> bool {
    match old {
        None => !owner_references(new).is_empty(),
        Some(old) => owner_references(old) != owner_references(new),
    }
}

/// kube-apiserver's `newBlockingOwnerDeletionRefs`: references that block now and did not
/// before (by owner UID).
fn newly_blocking<'a>(old: Option<&Value>, new: &'a Value) -> Vec<&'a Value> {
    let blocked_before = |uid: Option<&Value>| {
        old.is_some_and(|old| {
            owner_references(old)
                .iter()
                .any(|r| r.get("uid") == uid && blocks(r))
        })
    };
    owner_references(new)
        .iter()
        .filter(|r| blocks(r) && !blocked_before(r.get("uid")))
        .collect()
}

fn forbidden(rt: &ResourceType, name: &str, why: String) -> ApiError {
    ApiError::forbidden(&rt.plural, &rt.group, name, &why)
}

impl Admission {
    /// Turns OwnerReferencesPermissionEnforcement on, with `rules` as the user's permissions.
    pub fn enforce_owner_references(&mut self, rules: Vec<PolicyRule>) {
        self.owner_references = Some(rules);
    }

    /// Every authorization question asked so far, in order.
    pub fn checks(&self) -> &[AuthorizationCheck] {
        &self.checks
    }

    fn authorize(&mut self, mut check: AuthorizationCheck) -> bool {
        check.allowed = self
            .owner_references
            .as_deref()
            .is_some_and(|rules| rules.iter().any(|r| rule_allows(r, &check)));
        let allowed = check.allowed;
        self.checks.push(check);
        allowed
    }

    /// Validating admission of a create (`old` is `None`) or an update of `rt`'s main resource
    /// or a subresource, on the object as it would be stored.
    pub fn validate(
        &mut self,
        registry: &Registry,
        rt: &ResourceType,
        old: Option<&Value>,
        new: &Value,
    ) -> ApiResult<()> {
        if self.owner_references.is_none() || !changes_owner_references(old, new) {
            return Ok(());
        }
        let name = name_of(new).to_string();
        let namespace = new.pointer("/metadata/namespace").and_then(Value::as_str);
        let delete = question("delete", &rt.group, &rt.plural, None, namespace, &name);
        if old.is_some() && !self.authorize(delete) {
            return Err(forbidden(
                rt,
                &name,
                "cannot set an ownerRef on a resource you can't delete: , <nil>".into(),
            ));
        }
        let blocking = newly_blocking(old, new);
        let any_finalizers = question("update", "*", "*", Some("finalizers"), namespace, "*");
        if blocking.is_empty() || self.authorize(any_finalizers) {
            return Ok(());
        }
        for reference in blocking {
            self.authorize_blocking(registry, rt, &name, namespace, reference)?;
        }
        Ok(())
    }

    /// `blockOwnerDeletion` on `reference` needs `update` on its owner's `finalizers` (the
    /// owner's kind must be known to ask that).
    fn authorize_blocking(
        &mut self,
        registry: &Registry,
        rt: &ResourceType,
        name: &str,
        namespace: Option<&str>,
        reference: &Value,
    ) -> ApiResult<()> {
        let field = |k: &str| reference.get(k).and_then(Value::as_str).unwrap_or_default();
        let (api_version, kind) = (field("apiVersion"), field("kind"));
        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        let Some(owner) = registry
            .types
            .iter()
            .find(|t| t.group == group && t.kind == kind)
        else {
            return Err(forbidden(
                rt,
                name,
                format!(
                    "cannot set blockOwnerDeletion in this case because cannot find RESTMapping for APIVersion {api_version} Kind {kind}: no matches for kind \"{kind}\" in version \"{api_version}\""
                ),
            ));
        };
        let sub = Some("finalizers");
        let owner_check = question(
            "update",
            &owner.group,
            &owner.plural,
            sub,
            namespace,
            field("name"),
        );
        if !self.authorize(owner_check) {
            return Err(forbidden(
                rt,
                name,
                "cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on: , <nil>".into(),
            ));
        }
        Ok(())
    }
}

/// An authorization question in the written object's `namespace`, not answered yet.
fn question(
    verb: &str,
    group: &str,
    resource: &str,
    sub: Option<&str>,
    namespace: Option<&str>,
    name: &str,
) -> AuthorizationCheck {
    AuthorizationCheck {
        verb: verb.into(),
        group: group.into(),
        resource: resource.into(),
        subresource: sub.map(str::to_string),
        namespace: namespace.map(str::to_string),
        name: name.into(),
        allowed: false,
    }
}

/// The switch and the log, for tests (here rather than in `lib.rs`, next to what they control).
impl crate::TestServer {
    /// Turns on kube-apiserver's OwnerReferencesPermissionEnforcement admission plugin for
    /// the rest of the server's life: setting `blockOwnerDeletion: true` on an ownerReference
    /// needs `update` on the owner's `finalizers`, changing ownerReferences on an update needs
    /// `delete` on the object, else 403. `rules` (RBAC PolicyRules as JSON, e.g. a ClusterRole's
    /// `rules`) are what the one user of this server may do, in every namespace.
    pub fn enforce_owner_references(&self, rules: &[Value]) -> anyhow::Result<()> {
        let rules = rules
            .iter()
            .map(|r| serde_json::from_value(r.clone()))
            .collect::<Result<Vec<PolicyRule>, _>>()?;
        self.inner
            .shared
            .state()
            .admission
            .enforce_owner_references(rules);
        Ok(())
    }

    /// The questions admission plugins asked the authorizer, with the answers, in order.
    pub fn authorization_checks(&self) -> Vec<AuthorizationCheck> {
        self.inner.shared.state().admission.checks().to_vec()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> PolicyRule {
        let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect();
        PolicyRule {
            api_groups: v(groups),
            resources: v(resources),
            verbs: v(verbs),
            resource_names: vec![],
        }
    }

    fn tuple_rt() -> ResourceType {
        ResourceType {
            group: "math.example.com".into(),
            version: "v1beta1".into(),
            plural: "tuples".into(),
            singular: "tuple".into(),
            kind: "Tuple".into(),
            namespaced: true,
            short_names: vec![],
            categories: vec![],
            status_subresource: true,
            generation: true,
            storage: "tuples.math.example.com".into(),
            schema: None,
            columns: vec![],
            crd: None,
            storage_version: None,
            subresources: vec![],
            verbs: vec![],
            scale: None,
            round_trip: None,
        }
    }

    fn registry() -> Registry {
        let mut registry = Registry::default();
        registry.types.push(tuple_rt());
        let mut numbers = tuple_rt();
        numbers.plural = "numbers".into();
        numbers.kind = "Number".into();
        registry.types.push(numbers);
        registry
    }

    fn number(owner_refs: Value) -> Value {
        json!({"apiVersion": "math.example.com/v1beta1", "kind": "Number",
            "metadata": {"name": "t-0", "namespace": "default", "ownerReferences": owner_refs}})
    }

    fn owned_by_t(block: Option<bool>) -> Value {
        let mut r = json!({"apiVersion": "math.example.com/v1beta1", "kind": "Tuple",
            "name": "t", "uid": "u1", "controller": true});
        if let Some(b) = block {
            r["blockOwnerDeletion"] = json!(b);
        }
        number(json!([r]))
    }

    fn numbers_rt(registry: &Registry) -> ResourceType {
        registry
            .types
            .iter()
            .find(|t| t.plural == "numbers")
            .cloned()
            .unwrap()
    }

    #[test]
    fn off_by_default() {
        let registry = registry();
        let mut admission = Admission::default();
        let rt = numbers_rt(&registry);
        admission
            .validate(&registry, &rt, None, &owned_by_t(Some(true)))
            .unwrap();
        assert!(admission.checks().is_empty());
    }

    #[test]
    fn blocking_an_owners_deletion_needs_update_on_its_finalizers() {
        let registry = registry();
        let rt = numbers_rt(&registry);
        let creates = rule(&["math.example.com"], &["numbers"], &["create", "delete"]);
        let mut admission = Admission::default();
        admission.enforce_owner_references(vec![creates.clone()]);
        let error = admission
            .validate(&registry, &rt, None, &owned_by_t(Some(true)))
            .unwrap_err();
        assert_eq!(error.code, 403);
        assert_eq!(
            error.message,
            "numbers.math.example.com \"t-0\" is forbidden: cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on: , <nil>"
        );
        let last = admission.checks().last().cloned().unwrap();
        assert_eq!(
            (
                last.verb.as_str(),
                last.combined_resource().as_str(),
                last.name.as_str(),
                last.allowed
            ),
            ("update", "tuples/finalizers", "t", false)
        );
        // Without blockOwnerDeletion, or with the rule, the create is admitted.
        admission
            .validate(&registry, &rt, None, &owned_by_t(None))
            .unwrap();
        admission
            .validate(&registry, &rt, None, &owned_by_t(Some(false)))
            .unwrap();
        let finalizers = rule(&["math.example.com"], &["tuples/finalizers"], &["update"]);
        admission.enforce_owner_references(vec![creates, finalizers]);
        admission
            .validate(&registry, &rt, None, &owned_by_t(Some(true)))
            .unwrap();
        assert!(admission.checks().last().unwrap().allowed);
        // A wildcard over every resource's finalizers is asked about first.
        let mut admission = Admission::default();
        admission.enforce_owner_references(vec![rule(&["*"], &["*/finalizers"], &["update"])]);
        admission
            .validate(&registry, &rt, None, &owned_by_t(Some(true)))
            .unwrap();
        assert_eq!(admission.checks().len(), 1);
    }

    #[test]
    fn changing_owner_references_needs_delete_on_the_object() {
        let registry = registry();
        let rt = numbers_rt(&registry);
        let mut admission = Admission::default();
        admission.enforce_owner_references(vec![rule(
            &["math.example.com"],
            &["numbers"],
            &["patch"],
        )]);
        let orphan = number(json!([]));
        let error = admission
            .validate(&registry, &rt, Some(&orphan), &owned_by_t(None))
            .unwrap_err();
        assert!(
            error.message.contains("you can't delete"),
            "{}",
            error.message
        );
        // Unchanged references need nothing.
        let adopted = owned_by_t(Some(true));
        admission
            .validate(&registry, &rt, Some(&adopted), &adopted)
            .unwrap();
        // An adoption with blockOwnerDeletion needs both.
        admission.enforce_owner_references(vec![
            rule(&["math.example.com"], &["numbers"], &["delete"]),
            rule(&["math.example.com"], &["tuples/finalizers"], &["update"]),
        ]);
        admission
            .validate(&registry, &rt, Some(&orphan), &adopted)
            .unwrap();
        // A reference that already blocked needs no finalizers permission again.
        admission.enforce_owner_references(vec![rule(
            &["math.example.com"],
            &["numbers"],
            &["delete"],
        )]);
        let mut relabelled = adopted.clone();
        relabelled["metadata"]["ownerReferences"][0]["controller"] = json!(false);
        admission
            .validate(&registry, &rt, Some(&adopted), &relabelled)
            .unwrap();
    }

    #[test]
    fn an_owner_of_an_unknown_kind_is_refused() {
        let registry = registry();
        let rt = numbers_rt(&registry);
        let mut admission = Admission::default();
        admission.enforce_owner_references(vec![]);
        let obj = number(json!([{"apiVersion": "example.com/v1", "kind": "Nothing",
            "name": "x", "uid": "u", "blockOwnerDeletion": true}]));
        let error = admission.validate(&registry, &rt, None, &obj).unwrap_err();
        assert!(
            error.message.contains("cannot find RESTMapping"),
            "{}",
            error.message
        );
    }
}
