//! TokenReview, SubjectAccessReview and SelfSubjectReview (`kubectl auth whoami`), so that a component which delegates authentication and
//! authorization to the API server (as math-controller's `--metrics-secure` does) can be tested
//! end to end.
//!
//! Tokens are whatever the test registered ([`crate::TestServer::add_token`]); there is no
//! token issuer and no signature. Access decisions evaluate the RBAC objects the server stores
//! (ClusterRoles, ClusterRoleBindings, Roles, RoleBindings) the way kube-apiserver's RBAC
//! authorizer does: allow if any rule of any role bound to the user, one of its groups or its
//! ServiceAccount matches (resource rules are matched by `admission::rule_allows`, shared with
//! the admission plugin); members of `system:masters` may do anything. Which rules a user has
//! is [`rules`]'s walk of the bindings, shared with SelfSubjectRulesReviews. Requests to the
//! server itself are not authorized unless a test enforces RBAC ([`crate::rbac`]).

mod rules;
mod tokens;
mod whoami;

pub(crate) use tokens::{Bound, Tokens};
pub(crate) use whoami::administrator;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::admission::{self, AuthorizationCheck, PolicyRule};

use crate::registry::ResourceType;
use crate::status::{ApiError, ApiResult};
use crate::store::State;

/// Who presents a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserInfo {
    /// The user's name, e.g. `system:serviceaccount:default:default`.
    pub username: String,
    /// The user's UID.
    pub uid: String,
    /// The user's groups (`system:authenticated` is added when a TokenReview answers).
    pub groups: Vec<String>,
}

/// The user a ServiceAccount token stands for, as kube-apiserver names it.
pub fn service_account_user(namespace: &str, name: &str) -> UserInfo {
    UserInfo {
        username: format!("system:serviceaccount:{namespace}:{name}"),
        uid: format!("serviceaccount-{namespace}-{name}"),
        groups: vec![
            "system:serviceaccounts".to_string(),
            format!("system:serviceaccounts:{namespace}"),
        ],
    }
}

/// Is this one of the review kinds this module answers? Reviews are never stored: a create
/// returns the object with its `status` filled in.
pub(crate) fn is_review(rt: &ResourceType) -> bool {
    matches!(
        (rt.group.as_str(), rt.plural.as_str()),
        (
            "authentication.k8s.io",
            "tokenreviews" | "selfsubjectreviews"
        ) | ("authorization.k8s.io", "subjectaccessreviews")
            | ("authorization.k8s.io", "selfsubjectaccessreviews")
            | ("authorization.k8s.io", "selfsubjectrulesreviews")
    )
}

/// Answers the create of a review (`body`) by `requester` (`None`: the administrator, or
/// anyone while RBAC is not enforced), who authenticated as `identity`, or `None` when `rt`
/// is no review kind.
pub(crate) fn review(
    tokens: &Tokens,
    state: &State,
    rt: &ResourceType,
    body: &Value,
    requester: Option<&UserInfo>,
    identity: &UserInfo,
) -> Option<ApiResult<Value>> {
    if !is_review(rt) {
        return None;
    }
    let Some(fields) = body.as_object() else {
        return Some(Err(ApiError::bad_request("a review must be an object")));
    };
    if rt.plural == "selfsubjectreviews" {
        return Some(Ok(whoami::self_subject_review(identity)));
    }
    let mut out = fields.clone();
    out.insert("apiVersion".into(), json!(rt.api_version()));
    out.insert("kind".into(), json!(rt.kind));
    out.entry("metadata").or_insert_with(|| json!({}));
    let status = match rt.plural.as_str() {
        "tokenreviews" => token_review(tokens, state, body),
        "selfsubjectaccessreviews" => self_subject_access_review(state, body, requester),
        "selfsubjectrulesreviews" => {
            // kube-apiserver answers a new review, which carries no spec.
            out.insert("spec".into(), json!({}));
            rules::self_subject_rules_review(state, body, requester)
        }
        _ => subject_access_review(state, body),
    };
    Some(status.map(|status| {
        out.insert("status".into(), status);
        Value::Object(out)
    }))
}

fn token_review(tokens: &Tokens, state: &State, body: &Value) -> ApiResult<Value> {
    let token = body
        .pointer("/spec/token")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            ApiError::new(
                422,
                "Invalid",
                "TokenReview.authentication.k8s.io \"\" is invalid: spec.token: Required value",
            )
        })?;
    let known = tokens.info(token).filter(|_| !tokens.revoked(token, state));
    Ok(match known {
        Some(user) => {
            let mut groups = user.groups.clone();
            groups.push("system:authenticated".to_string());
            json!({
                "authenticated": true,
                "user": {"username": user.username, "uid": user.uid, "groups": groups},
                "audiences": body.pointer("/spec/audiences").cloned().unwrap_or(json!([])),
            })
        }
        None => json!({"user": {}, "error": "invalid bearer token"}),
    })
}

/// What a SubjectAccessReview asks about.
#[derive(Debug, PartialEq)]
enum Attributes {
    NonResource {
        path: String,
        verb: String,
    },
    Resource {
        namespace: String,
        group: String,
        /// `resource` or `resource/subresource`.
        resource: String,
        name: String,
        verb: String,
    },
}

fn string_at(v: &Value, pointer: &str) -> String {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn subject_access_review(state: &State, body: &Value) -> ApiResult<Value> {
    let user = string_at(body, "/spec/user");
    let groups = strings(body.pointer("/spec/groups"));
    let attributes = if let Some(n) = body.pointer("/spec/nonResourceAttributes") {
        Attributes::NonResource {
            path: string_at(n, "/path"),
            verb: string_at(n, "/verb"),
        }
    } else if let Some(r) = body.pointer("/spec/resourceAttributes") {
        let resource = string_at(r, "/resource");
        let sub = string_at(r, "/subresource");
        Attributes::Resource {
            namespace: string_at(r, "/namespace"),
            group: string_at(r, "/group"),
            resource: if sub.is_empty() {
                resource
            } else {
                format!("{resource}/{sub}")
            },
            name: string_at(r, "/name"),
            verb: string_at(r, "/verb"),
        }
    } else {
        return Err(ApiError::new(
            422,
            "Invalid",
            "SubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.resourceAttributes: \
             Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes \
             must be specified",
        ));
    };
    if user.is_empty() && groups.is_empty() {
        return Err(ApiError::new(
            422,
            "Invalid",
            "SubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.user: Invalid value: \
             \"\": at least one of user or group must be specified",
        ));
    }
    let decision = allowed_by(state, &user, &groups, &attributes);
    let mut status = json!({"allowed": decision.allowed});
    if !decision.reason.is_empty() {
        status["reason"] = json!(decision.reason);
    }
    Ok(status)
}

/// A SelfSubjectAccessReview (`kubectl auth can-i`): the SubjectAccessReview of the user who
/// asks. The administrator, and everyone while RBAC is not enforced, may do anything
/// (v1.36.2 answers its administrator `status: {allowed: true}`).
fn self_subject_access_review(
    state: &State,
    body: &Value,
    requester: Option<&UserInfo>,
) -> ApiResult<Value> {
    let spec = body.get("spec").cloned().unwrap_or_else(|| json!({}));
    let Some(user) = requester else {
        let asks =
            spec.get("resourceAttributes").is_some() || spec.get("nonResourceAttributes").is_some();
        if !asks {
            return Err(ApiError::new(
                422,
                "Invalid",
                "SelfSubjectAccessReview.authorization.k8s.io \"\" is invalid: \
                 spec.resourceAttributes: Invalid value: \"null\": exactly one of \
                 nonResourceAttributes or resourceAttributes must be specified",
            ));
        }
        return Ok(json!({"allowed": true}));
    };
    let mut spec = spec;
    spec["user"] = json!(user.username);
    spec["groups"] = json!(user.groups);
    subject_access_review(state, &json!({ "spec": spec }))
}

/// Does RBAC allow `user` the resource request (see [`crate::rbac`])? With the reason.
pub(crate) fn allows(state: &State, user: &UserInfo, request: &crate::rbac::Request) -> Decision {
    let attributes = Attributes::Resource {
        namespace: request.namespace.unwrap_or_default().to_string(),
        group: request.group.to_string(),
        resource: request.resource_path(),
        name: request.name.to_string(),
        verb: request.verb.to_string(),
    };
    allowed_by(state, &user.username, &user.groups, &attributes)
}

/// Does a binding's subject name this user?
fn subject_matches(subject: &Value, user: &str, groups: &[String]) -> bool {
    let name = string_at(subject, "/name");
    match subject.get("kind").and_then(Value::as_str) {
        Some("User") => name == user,
        Some("Group") => groups.contains(&name),
        Some("ServiceAccount") => {
            user == format!(
                "system:serviceaccount:{}:{name}",
                string_at(subject, "/namespace")
            )
        }
        _ => false,
    }
}

fn matches(allowed: &[String], wanted: &str) -> bool {
    allowed.iter().any(|a| a == "*" || a == wanted)
}

/// Does one PolicyRule allow the request?
fn rule_allows(rule: &Value, attributes: &Attributes) -> bool {
    let list = |key: &str| strings(rule.get(key));
    match attributes {
        Attributes::NonResource { path, verb } => {
            matches(&list("verbs"), verb)
                && list("nonResourceURLs").iter().any(|url| {
                    url == path
                        || url
                            .strip_suffix('*')
                            .is_some_and(|prefix| path.starts_with(prefix))
                })
        }
        Attributes::Resource {
            group,
            resource,
            name,
            verb,
            namespace,
        } => {
            let Ok(rule) = PolicyRule::deserialize(rule) else {
                return false;
            };
            let (resource, subresource) = match resource.split_once('/') {
                Some((resource, sub)) => (resource, Some(sub.to_string())),
                None => (resource.as_str(), None),
            };
            admission::rule_allows(
                &rule,
                &AuthorizationCheck {
                    verb: verb.clone(),
                    group: group.clone(),
                    resource: resource.to_string(),
                    subresource,
                    namespace: Some(namespace.clone()).filter(|n| !n.is_empty()),
                    name: name.clone(),
                    allowed: false,
                },
            )
        }
    }
}

/// An authorizer's answer, as kube-apiserver's RBAC authorizer gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decision {
    pub(crate) allowed: bool,
    /// Allowed: `RBAC: allowed by <binding>` (empty for `system:masters`). Denied: empty, or
    /// `RBAC: <errors>` when a binding's role could not be found (`RBACAuthorizer.Authorize`).
    pub(crate) reason: String,
}

/// Whether the user may, and why (`system:masters` is allowed by kube-apiserver's
/// privileged group authorizer before RBAC is asked, with no reason).
fn allowed_by(state: &State, user: &str, groups: &[String], attributes: &Attributes) -> Decision {
    if groups.iter().any(|g| g == "system:masters") {
        return Decision {
            allowed: true,
            reason: String::new(),
        };
    }
    let namespace = match attributes {
        Attributes::Resource { namespace, .. } => Some(namespace.as_str()),
        Attributes::NonResource { .. } => None,
    };
    let grants = rules::granted(state, user, groups, namespace);
    match grants
        .rules
        .iter()
        .find(|g| rule_allows(&g.rule, attributes))
    {
        Some(granted) => Decision {
            allowed: true,
            reason: format!("RBAC: allowed by {}", granted.source),
        },
        None => Decision {
            allowed: false,
            reason: grants
                .error()
                .map(|e| format!("RBAC: {e}"))
                .unwrap_or_default(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::authentication::v1::{
        TokenReview, TokenReviewSpec, TokenReviewStatus, UserInfo,
    };
    use k8s_openapi::api::authorization::v1::{
        NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
    };
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
    use kube::api::{Api, PostParams};

    fn non_resource(path: &str, verb: &str) -> Attributes {
        Attributes::NonResource {
            path: path.into(),
            verb: verb.into(),
        }
    }

    #[test]
    fn non_resource_rules_match_exact_paths_and_prefixes() {
        let rule = json!({"nonResourceURLs": ["/metrics"], "verbs": ["get"]});
        assert!(rule_allows(&rule, &non_resource("/metrics", "get")));
        assert!(!rule_allows(&rule, &non_resource("/metrics", "post")));
        assert!(!rule_allows(&rule, &non_resource("/metricsz", "get")));
        let prefix = json!({"nonResourceURLs": ["/debug/*"], "verbs": ["*"]});
        assert!(rule_allows(&prefix, &non_resource("/debug/pprof", "get")));
        assert!(!rule_allows(&prefix, &non_resource("/metrics", "get")));
        let resource_rule = json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]});
        assert!(!rule_allows(
            &resource_rule,
            &non_resource("/metrics", "get")
        ));
    }

    #[test]
    fn resource_rules_match_group_resource_verb_and_name() {
        let attrs = |resource: &str, name: &str| Attributes::Resource {
            namespace: "ns".into(),
            group: "math.example.com".into(),
            resource: resource.into(),
            name: name.into(),
            verb: "patch".into(),
        };
        let rule = json!({"apiGroups": ["math.example.com"], "resources": ["numbers/status"], "verbs": ["patch"]});
        assert!(rule_allows(&rule, &attrs("numbers/status", "")));
        assert!(!rule_allows(&rule, &attrs("numbers", "")));
        let named = json!({"apiGroups": ["*"], "resources": ["numbers"], "verbs": ["*"], "resourceNames": ["a"]});
        assert!(rule_allows(&named, &attrs("numbers", "a")));
        assert!(!rule_allows(&named, &attrs("numbers", "b")));
    }

    #[test]
    fn subjects_match_users_groups_and_service_accounts() {
        let sa = service_account_user("monitoring", "prometheus");
        let subject =
            json!({"kind": "ServiceAccount", "name": "prometheus", "namespace": "monitoring"});
        assert!(subject_matches(&subject, &sa.username, &sa.groups));
        assert!(!subject_matches(
            &subject,
            "system:serviceaccount:other:prometheus",
            &[]
        ));
        let group = json!({"kind": "Group", "name": "system:serviceaccounts:monitoring", "apiGroup": "rbac.authorization.k8s.io"});
        assert!(subject_matches(&group, &sa.username, &sa.groups));
        let user = json!({"kind": "User", "name": "jane"});
        assert!(subject_matches(&user, "jane", &[]));
        assert!(!subject_matches(&user, "john", &[]));
    }

    /// Through HTTP and kube's typed client, as the manager asks.
    #[tokio::test]
    async fn reviews_answer_for_registered_tokens_and_stored_rbac() {
        let server = crate::TestServer::start().await.unwrap();
        server.add_service_account_token("t0k3n", "monitoring", "prometheus");
        let client = server.client();
        let known = token_review(&client, "t0k3n").await;
        assert_eq!(known.authenticated, Some(true));
        let user = known.user.unwrap();
        assert_eq!(
            user.username.as_deref(),
            Some("system:serviceaccount:monitoring:prometheus")
        );
        assert!(
            user.groups
                .as_ref()
                .unwrap()
                .contains(&"system:authenticated".to_string())
        );
        assert_ne!(
            token_review(&client, "other").await.authenticated,
            Some(true)
        );
        assert!(!may_get_metrics(&client, &user).await);
        let (role, binding) = metrics_reader();
        Api::<ClusterRole>::all(client.clone())
            .create(&PostParams::default(), &role)
            .await
            .unwrap();
        assert!(
            !may_get_metrics(&client, &user).await,
            "a role alone grants nothing"
        );
        Api::<ClusterRoleBinding>::all(client.clone())
            .create(&PostParams::default(), &binding)
            .await
            .unwrap();
        assert!(may_get_metrics(&client, &user).await);
        // Reviews are answers, not objects.
        assert!(
            server
                .objects("authentication.k8s.io", "tokenreviews", None)
                .is_empty()
        );
        server.shutdown().await;
    }

    /// What a TokenReview of `token` answers.
    async fn token_review(client: &kube::Client, token: &str) -> TokenReviewStatus {
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: token.to_string(),
                audiences: None,
            },
            ..Default::default()
        };
        Api::<TokenReview>::all(client.clone())
            .create(&PostParams::default(), &review)
            .await
            .unwrap()
            .status
            .unwrap()
    }

    /// Whether a SubjectAccessReview allows `user` to get `/metrics`.
    async fn may_get_metrics(client: &kube::Client, user: &UserInfo) -> bool {
        let access = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: user.username.clone(),
                groups: user.groups.clone(),
                non_resource_attributes: Some(NonResourceAttributes {
                    path: Some("/metrics".into()),
                    verb: Some("get".into()),
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        Api::<SubjectAccessReview>::all(client.clone())
            .create(&PostParams::default(), &access)
            .await
            .unwrap()
            .status
            .unwrap()
            .allowed
    }

    /// A ClusterRole that may get `/metrics`, and its binding to the service account.
    fn metrics_reader() -> (ClusterRole, ClusterRoleBinding) {
        let role = serde_json::from_value(json!({
            "metadata": {"name": "metrics-reader"},
            "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
        }))
        .unwrap();
        let binding = serde_json::from_value(json!({
            "metadata": {"name": "prometheus-metrics"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "metrics-reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "prometheus", "namespace": "monitoring"}],
        }))
        .unwrap();
        (role, binding)
    }
}
