//! What RBAC grants a user: the rules of every role bound to them, each with the binding that
//! grants it, as kube-apiserver's rule resolver visits them (`VisitRulesFor`: the
//! ClusterRoleBindings, then the RoleBindings of the namespace asked about). One walk answers
//! both an access check ([`super::allowed_by`], a SubjectAccessReview, every request while
//! RBAC is enforced) and a SelfSubjectRulesReview (`kubectl auth can-i --list`), so the two
//! never disagree.
//!
//! kube-apiserver also stores the bindings of its bootstrap policy, which every authenticated
//! user has (`system:basic-user`, `system:discovery`, `system:public-info-viewer`) and which
//! make `system:masters` `cluster-admin`. The test server does not store them (a `kubectl get
//! clusterrolebindings` here lists only what a test created); they are [`bootstrap`] here,
//! with v1.36's rules.

use serde_json::{Map, Value, json};

use super::{UserInfo, string_at, strings, subject_matches};
use crate::status::{ApiError, ApiResult};
use crate::store::State;

/// One rule RBAC grants, and the binding that grants it in kube-apiserver's words
/// (`ClusterRoleBinding "x" of ClusterRole "y" to Group "z"`), the words of an allowed
/// review's `reason`.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Granted {
    pub(super) source: String,
    pub(super) rule: Value,
}

/// A built-in ClusterRoleBinding of kube-apiserver's bootstrap policy: its name (also its
/// ClusterRole's), the groups it binds and the role's rules.
struct Bootstrap {
    name: &'static str,
    groups: &'static [&'static str],
    rules: Value,
}

/// The bootstrap bindings of kube-apiserver v1.36 (`bootstrappolicy.ClusterRoleBindings`)
/// that the test server does not store.
fn bootstrap() -> Vec<Bootstrap> {
    let health = ["/healthz", "/livez", "/readyz", "/version", "/version/"];
    let mut discovery: Vec<&str> = vec!["/api", "/api/*", "/apis", "/apis/*"];
    discovery.extend(["/openapi", "/openapi/*"]);
    discovery.extend(health);
    vec![
        Bootstrap {
            name: "cluster-admin",
            groups: &["system:masters"],
            rules: json!([
                {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
                {"verbs": ["*"], "nonResourceURLs": ["*"]},
            ]),
        },
        Bootstrap {
            name: "system:basic-user",
            groups: &["system:authenticated"],
            rules: json!([
                {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
                 "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]},
                {"verbs": ["create"], "apiGroups": ["authentication.k8s.io"],
                 "resources": ["selfsubjectreviews"]},
            ]),
        },
        Bootstrap {
            name: "system:discovery",
            groups: &["system:authenticated"],
            rules: json!([{"verbs": ["get"], "nonResourceURLs": discovery}]),
        },
        Bootstrap {
            name: "system:public-info-viewer",
            groups: &["system:authenticated", "system:unauthenticated"],
            rules: json!([{"verbs": ["get"], "nonResourceURLs": health}]),
        },
    ]
}

/// The rules of the bootstrap bindings one of `groups` is bound by.
fn bootstrap_rules(groups: &[String]) -> Vec<Granted> {
    let mut out = vec![];
    for binding in bootstrap() {
        let Some(group) = binding
            .groups
            .iter()
            .find(|g| groups.iter().any(|mine| mine.as_str() == **g))
        else {
            continue;
        };
        let source = format!(
            "ClusterRoleBinding {:?} of ClusterRole {:?} to Group {group:?}",
            binding.name, binding.name
        );
        for rule in binding.rules.as_array().into_iter().flatten() {
            out.push(Granted {
                source: source.clone(),
                rule: rule.clone(),
            });
        }
    }
    out
}

/// kube-apiserver's `describeSubject`: a ServiceAccount as `name/namespace` (the binding's
/// namespace when the subject names none), anyone else by name.
fn describe_subject(subject: &Value, binding_namespace: &str) -> String {
    let kind = string_at(subject, "/kind");
    let name = string_at(subject, "/name");
    if kind == "ServiceAccount" {
        let namespace = Some(string_at(subject, "/namespace"))
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| binding_namespace.to_string());
        return format!("{kind} {:?}", format!("{name}/{namespace}"));
    }
    format!("{kind} {name:?}")
}

/// Every stored object of an RBAC kind, in one namespace or all.
fn stored(state: &State, plural: &str, namespace: Option<&str>) -> Vec<Value> {
    state
        .rt_of("rbac.authorization.k8s.io", plural)
        .map(|rt| state.scan(&rt, namespace).map(|(_, v)| v.clone()).collect())
        .unwrap_or_default()
}

/// The rules of the role a binding refers to (a Role in the binding's namespace, or a
/// ClusterRole), or kube-apiserver's words for why there are none
/// (`DefaultRuleResolver.GetRoleReferenceRules`: its listers' NotFound,
/// `role.rbac.authorization.k8s.io "x" not found`).
fn role_rules(
    state: &State,
    binding: &Value,
    namespace: Option<&str>,
) -> Result<Vec<Value>, String> {
    let name = string_at(binding, "/roleRef/name");
    let kind = string_at(binding, "/roleRef/kind");
    let role = match (kind.as_str(), namespace) {
        ("ClusterRole", _) => stored(state, "clusterroles", None),
        ("Role", Some(ns)) => stored(state, "roles", Some(ns)),
        // A ClusterRoleBinding's Role is looked up in no namespace: never found.
        ("Role", None) => vec![],
        _ => return Err(format!("unsupported role reference kind: {kind:?}")),
    };
    let role = role
        .into_iter()
        .find(|r| string_at(r, "/metadata/name") == name);
    let Some(role) = role else {
        let resource = kind.to_lowercase();
        return Err(format!(
            "{resource}.rbac.authorization.k8s.io {name:?} not found"
        ));
    };
    Ok(role
        .get("rules")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default())
}

/// The rules a stored binding grants the user, if one of its subjects is them (none if
/// not), or why its role gives none.
fn binding_rules(
    state: &State,
    binding: &Value,
    user: &str,
    groups: &[String],
) -> Result<Vec<Granted>, String> {
    let namespace = Some(string_at(binding, "/metadata/namespace")).filter(|n| !n.is_empty());
    let subjects = binding.get("subjects").and_then(Value::as_array);
    let Some(subject) = subjects
        .into_iter()
        .flatten()
        .find(|s| subject_matches(s, user, groups))
    else {
        return Ok(vec![]);
    };
    let name = string_at(binding, "/metadata/name");
    let source = match &namespace {
        Some(ns) => format!("RoleBinding {:?}", format!("{name}/{ns}")),
        None => format!("ClusterRoleBinding {name:?}"),
    };
    let source = format!(
        "{source} of {} {:?} to {}",
        string_at(binding, "/roleRef/kind"),
        string_at(binding, "/roleRef/name"),
        describe_subject(subject, namespace.as_deref().unwrap_or_default())
    );
    let rules = role_rules(state, binding, namespace.as_deref())?;
    Ok(rules
        .into_iter()
        .map(|rule| Granted {
            source: source.clone(),
            rule,
        })
        .collect())
}

/// What RBAC grants a user: the rules, and the errors met on the way (a binding to a role
/// that does not exist), as kube-apiserver's rule resolver visits both.
#[derive(Debug, Default)]
pub(super) struct Grants {
    pub(super) rules: Vec<Granted>,
    pub(super) errors: Vec<String>,
}

impl Grants {
    fn add(&mut self, found: Result<Vec<Granted>, String>) {
        match found {
            Ok(rules) => self.rules.extend(rules),
            Err(error) => self.errors.push(error),
        }
    }

    /// The errors in kube-apiserver's words (`utilerrors.NewAggregate(...).Error()`): one
    /// alone as it is, several (each once) as `[a, b]`; `None` without any.
    pub(super) fn error(&self) -> Option<String> {
        let mut unique: Vec<&str> = vec![];
        for e in &self.errors {
            if !unique.contains(&e.as_str()) {
                unique.push(e);
            }
        }
        match unique.as_slice() {
            [] => None,
            [one] => Some(one.to_string()),
            many => Some(format!("[{}]", many.join(", "))),
        }
    }
}

/// Every rule RBAC grants `user` (with `groups`) for a request in `namespace` (`None`: at the
/// cluster scope): the bootstrap's, every ClusterRoleBinding's, then the namespace's
/// RoleBindings', in kube-apiserver's order (`VisitRulesFor`), with the errors met.
pub(super) fn granted(
    state: &State,
    user: &str,
    groups: &[String],
    namespace: Option<&str>,
) -> Grants {
    let mut out = Grants {
        rules: bootstrap_rules(groups),
        errors: vec![],
    };
    for binding in stored(state, "clusterrolebindings", None) {
        out.add(binding_rules(state, &binding, user, groups));
    }
    if let Some(namespace) = namespace.filter(|n| !n.is_empty()) {
        for binding in stored(state, "rolebindings", Some(namespace)) {
            out.add(binding_rules(state, &binding, user, groups));
        }
    }
    out
}

/// A list field of a rule, if it has any entries.
fn list_of(rule: &Value, key: &str) -> Option<Value> {
    let items = strings(rule.get(key));
    (!items.is_empty()).then(|| json!(items))
}

/// A SubjectRulesReviewStatus (kube-apiserver's `RBACAuthorizer.RulesFor`): every rule with
/// resources becomes a resource rule, every rule with non-resource URLs a non-resource rule
/// (a rule with both, both); RBAC enumerates everything, so the list is complete. The
/// errors met become its `evaluationError` (the SelfSubjectRulesReview REST handler's).
fn rules_status(grants: &Grants) -> Value {
    let mut status = rules_of(&grants.rules);
    if let Some(error) = grants.error() {
        status["evaluationError"] = json!(error);
    }
    status
}

/// The resource and non-resource rules of a SubjectRulesReviewStatus.
fn rules_of(granted: &[Granted]) -> Value {
    let mut resource_rules = vec![];
    let mut non_resource_rules = vec![];
    for Granted { rule, .. } in granted {
        let verbs = json!(strings(rule.get("verbs")));
        if list_of(rule, "resources").is_some() {
            let mut r = Map::new();
            r.insert("verbs".into(), verbs.clone());
            for key in ["apiGroups", "resources", "resourceNames"] {
                if let Some(list) = list_of(rule, key) {
                    r.insert(key.into(), list);
                }
            }
            resource_rules.push(Value::Object(r));
        }
        if let Some(urls) = list_of(rule, "nonResourceURLs") {
            non_resource_rules.push(json!({"verbs": verbs, "nonResourceURLs": urls}));
        }
    }
    json!({
        "resourceRules": resource_rules,
        "nonResourceRules": non_resource_rules,
        "incomplete": false,
    })
}

/// A SelfSubjectRulesReview (`kubectl auth can-i --list`): what the requester may do in
/// `spec.namespace`. The administrator (`None`, also everyone while RBAC is not enforced) is
/// in `system:masters`. kube-apiserver answers a new review that carries the status only,
/// and refuses one without a namespace (400 `no namespace on request`).
pub(super) fn self_subject_rules_review(
    state: &State,
    body: &Value,
    requester: Option<&UserInfo>,
) -> ApiResult<Value> {
    let namespace = string_at(body, "/spec/namespace");
    if namespace.is_empty() {
        return Err(ApiError::bad_request("no namespace on request"));
    }
    let admin_groups = ["system:masters", "system:authenticated"].map(String::from);
    let (user, groups) = match requester {
        Some(user) => (user.username.as_str(), user.groups.as_slice()),
        None => ("", admin_groups.as_slice()),
    };
    Ok(rules_status(&granted(
        state,
        user,
        groups,
        Some(&namespace),
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn granted_rule(rule: Value) -> Granted {
        Granted {
            source: String::new(),
            rule,
        }
    }

    #[test]
    fn rules_are_split_into_resource_and_non_resource_rules() {
        let status = rules_of(&[
            granted_rule(
                json!({"apiGroups": ["math.example.com"], "resources": ["numbers"],
                                "verbs": ["get", "list"]}),
            ),
            granted_rule(json!({"apiGroups": [""], "resources": ["configmaps"],
                                "resourceNames": ["a"], "verbs": ["get"]})),
            granted_rule(json!({"nonResourceURLs": ["/metrics"], "verbs": ["get"]})),
        ]);
        assert_eq!(
            status,
            json!({
                "resourceRules": [
                    {"verbs": ["get", "list"], "apiGroups": ["math.example.com"], "resources": ["numbers"]},
                    {"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["a"]},
                ],
                "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/metrics"]}],
                "incomplete": false,
            })
        );
    }

    /// `utilerrors.NewAggregate(errs).Error()`: one error alone, duplicates once, several in
    /// brackets.
    #[test]
    fn errors_read_as_kube_apiserver_aggregates_them() {
        let grants = |errors: &[&str]| Grants {
            rules: vec![],
            errors: errors.iter().map(|e| e.to_string()).collect(),
        };
        assert_eq!(grants(&[]).error(), None);
        assert_eq!(grants(&["a"]).error().as_deref(), Some("a"));
        assert_eq!(grants(&["a", "a"]).error().as_deref(), Some("a"));
        assert_eq!(grants(&["a", "b", "a"]).error().as_deref(), Some("[a, b]"));
    }

    #[test]
    fn the_bootstrap_binds_authenticated_users_and_masters_only() {
        let authenticated = bootstrap_rules(&["system:authenticated".to_string()]);
        assert!(authenticated.iter().any(|g| g.source
            == "ClusterRoleBinding \"system:basic-user\" of ClusterRole \"system:basic-user\" to Group \"system:authenticated\""));
        assert!(
            !authenticated
                .iter()
                .any(|g| g.source.contains("cluster-admin"))
        );
        assert!(bootstrap_rules(&[]).is_empty(), "a user without groups");
        let masters = bootstrap_rules(&["system:masters".to_string()]);
        assert_eq!(masters.len(), 2, "{masters:?}");
    }

    #[test]
    fn subjects_are_described_as_kube_apiserver_describes_them() {
        let sa = json!({"kind": "ServiceAccount", "name": "alice"});
        assert_eq!(
            describe_subject(&sa, "alice"),
            "ServiceAccount \"alice/alice\""
        );
        let sa = json!({"kind": "ServiceAccount", "name": "alice", "namespace": "room"});
        assert_eq!(
            describe_subject(&sa, "other"),
            "ServiceAccount \"alice/room\""
        );
        let group = json!({"kind": "Group", "name": "system:serviceaccounts"});
        assert_eq!(
            describe_subject(&group, ""),
            "Group \"system:serviceaccounts\""
        );
    }
}
