//! RBAC enforced on requests, when a test asks for it ([`TestServer::enforce_rbac`]): a request
//! whose bearer token the server issued (a TokenRequest, `serviceaccounts/<sa>/token`) or a
//! test registered ([`TestServer::add_token`]) is authorized as kube-apiserver's RBAC
//! authorizer does, against the Roles, ClusterRoles and their bindings the server stores
//! (the evaluation is [`crate::auth`]'s, shared with SubjectAccessReviews); a refusal is
//! kube-apiserver's 403 with its words:
//!
//! `numbers.math.example.com is forbidden: User "system:serviceaccount:bob:bob" cannot list
//! resource "numbers" in API group "math.example.com" in the namespace "alice"`.
//!
//! Where it differs from kube-apiserver: a request without a bearer token is the cluster's
//! administrator (the server's own kubeconfig has none, and the tests that set a room up act
//! as the organiser); an unknown token is 401, and so is a TokenRequest's token once it expired
//! or its ServiceAccount was deleted (kube-apiserver checks both on every request); discovery and other non-resource paths are open
//! to every authenticated user (kube-apiserver's default `system:discovery` and
//! `system:public-info-viewer` bindings); everyone may create `selfsubjectaccessreviews`,
//! `selfsubjectrulesreviews` and `selfsubjectreviews` (`system:basic-user`: the bootstrap bindings are built into
//! [`crate::auth`]'s rules, not stored). Off by default, so that every other test keeps its
//! superuser.

use std::sync::atomic::{AtomicBool, Ordering};

use axum::http::HeaderMap;

use crate::auth::UserInfo;
use crate::misbehave::bearer;
use crate::status::{ApiError, qualified};
use crate::{RequestRecord, Shared, TestServer, Verb};

/// Whether the server authorizes requests.
#[derive(Debug, Default)]
pub(crate) struct Rbac {
    enforced: AtomicBool,
}

/// The refusal of a resource request, if RBAC is on and does not allow it: 401 for a token
/// the server does not know, kube-apiserver's 403 ([`forbidden`]) for what no binding allows.
pub(crate) fn refuse(
    shared: &Shared,
    headers: &HeaderMap,
    record: &RequestRecord,
) -> Option<ApiError> {
    if !shared.rbac.enforced.load(Ordering::SeqCst) {
        return None;
    }
    // No token: the administrator of the server's own kubeconfig.
    let token = bearer(headers)?;
    let known = shared
        .tokens
        .info(token)
        .filter(|_| !shared.tokens.revoked(token, &shared.state()));
    let Some(user) = known else {
        // Authentication comes first, for every path: `/version` too answers 401.
        return Some(ApiError::injected(401));
    };
    if record.verb == Verb::NonResource {
        return None;
    }
    let user = authenticated(user);
    let request = Request::of(record);
    let decision = crate::auth::allows(&shared.state(), &user, &request);
    if decision.allowed {
        return None;
    }
    Some(forbidden_because(
        &user.username,
        &request,
        &decision.reason,
    ))
}

/// [`forbidden`] with the authorizer's reason after its words, as `ForbiddenStatusError`
/// adds it (`...in the namespace "alice": RBAC: role.rbac.authorization.k8s.io "x" not
/// found`); none when the reason is empty.
fn forbidden_because(user: &str, request: &Request, reason: &str) -> ApiError {
    let mut error = forbidden(user, request);
    if !reason.is_empty() {
        error.message = format!("{}: {reason}", error.message);
    }
    error
}

/// Who makes a request, as a review of one's own access needs it: the user of a known
/// bearer token (with `system:authenticated`) while RBAC is enforced; `None` for the
/// administrator (no token) and for everyone while it is not (every request is allowed).
pub(crate) fn requester(shared: &Shared, headers: &HeaderMap) -> Option<UserInfo> {
    if !shared.rbac.enforced.load(Ordering::SeqCst) {
        return None;
    }
    shared.tokens.info(bearer(headers)?).map(authenticated)
}

/// Who a request's credentials say it is, whether or not RBAC is enforced (kube-apiserver
/// authenticates before it authorizes): the user of a known bearer token, with
/// `system:authenticated`; otherwise the administrator (no token; an unknown token is
/// refused with 401 before this while RBAC is enforced, and is anyone's while it is not).
pub(crate) fn identity(shared: &Shared, headers: &HeaderMap) -> UserInfo {
    bearer(headers)
        .and_then(|token| shared.tokens.info(token))
        .map(authenticated)
        .unwrap_or_else(crate::auth::administrator)
}

impl TestServer {
    /// From now on, requests bearing a token are authorized by the RBAC objects the server
    /// stores, as kube-apiserver's RBAC authorizer does; requests without one stay the
    /// administrator's (see the module's documentation).
    pub fn enforce_rbac(&self) {
        self.inner
            .shared
            .rbac
            .enforced
            .store(true, Ordering::SeqCst);
    }
}

/// What kube-apiserver's authorizer is asked about a resource request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Request<'a> {
    pub verb: &'a str,
    pub group: &'a str,
    pub resource: &'a str,
    pub subresource: Option<&'a str>,
    /// For a namespace itself (`GET /api/v1/namespaces/alice`), its name, as kube-apiserver's
    /// RequestInfo has it: a Role in `alice` may grant `get namespaces`.
    pub namespace: Option<&'a str>,
    pub name: &'a str,
}

impl<'a> Request<'a> {
    /// The authorizer's view of a request the server routed.
    pub(crate) fn of(record: &'a RequestRecord) -> Request<'a> {
        let name = record.name.as_deref().unwrap_or("");
        let namespace = match record.namespace.as_deref() {
            None if record.group.is_empty()
                && record.resource == "namespaces"
                && !name.is_empty() =>
            {
                Some(name)
            }
            namespace => namespace,
        };
        Request {
            verb: record.verb.as_str(),
            group: &record.group,
            resource: &record.resource,
            subresource: record.subresource.as_deref(),
            namespace,
            name,
        }
    }

    /// `numbers` or `numbers/status`.
    pub(crate) fn resource_path(&self) -> String {
        match self.subresource {
            Some(sub) => format!("{}/{sub}", self.resource),
            None => self.resource.to_string(),
        }
    }
}

/// kube-apiserver's 403 for a request RBAC does not allow (`responsewriters.Forbidden`):
/// `<resource>.<group> ["<name>" ]is forbidden: User "<user>" cannot <verb> resource
/// "<resource>[/<sub>]" in API group "<group>" in the namespace "<ns>"` (or `at the cluster
/// scope`), reason Forbidden, details naming the group and resource.
pub(crate) fn forbidden(user: &str, request: &Request) -> ApiError {
    let why = match request.namespace {
        Some(namespace) => format!(
            "User {user:?} cannot {} resource {:?} in API group {:?} in the namespace {namespace:?}",
            request.verb,
            request.resource_path(),
            request.group
        ),
        None => format!(
            "User {user:?} cannot {} resource {:?} in API group {:?} at the cluster scope",
            request.verb,
            request.resource_path(),
            request.group
        ),
    };
    let mut error = ApiError::forbidden(request.resource, request.group, request.name, &why);
    if request.name.is_empty() {
        error.message = format!(
            "{} is forbidden: {why}",
            qualified(request.resource, request.group)
        );
    }
    error
}

/// The user of a token, with the groups kube-apiserver adds to every authenticated one.
fn authenticated(user: UserInfo) -> UserInfo {
    let mut user = user;
    user.groups.push("system:authenticated".to_string());
    user
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request<'a>(verb: &'a str, namespace: Option<&'a str>, name: &'a str) -> Request<'a> {
        Request {
            verb,
            group: "math.example.com",
            resource: "numbers",
            subresource: None,
            namespace,
            name,
        }
    }

    #[test]
    fn a_refusal_says_what_kube_apiserver_says() {
        let user = "system:serviceaccount:alice:alice";
        let list = forbidden(user, &request("list", Some("bob"), ""));
        assert_eq!(list.code, 403);
        assert_eq!(list.reason, "Forbidden");
        assert_eq!(
            list.message,
            "numbers.math.example.com is forbidden: User \"system:serviceaccount:alice:alice\" \
             cannot list resource \"numbers\" in API group \"math.example.com\" in the namespace \"bob\""
        );
        let get = forbidden(user, &request("get", Some("bob"), "seven"));
        assert!(
            get.message
                .starts_with("numbers.math.example.com \"seven\" is forbidden: User"),
            "{}",
            get.message
        );
        let crd = Request {
            verb: "patch",
            group: "apiextensions.k8s.io",
            resource: "customresourcedefinitions",
            subresource: None,
            namespace: None,
            name: "numbers.math.example.com",
        };
        assert_eq!(
            forbidden(user, &crd).message,
            "customresourcedefinitions.apiextensions.k8s.io \"numbers.math.example.com\" is \
             forbidden: User \"system:serviceaccount:alice:alice\" cannot patch resource \
             \"customresourcedefinitions\" in API group \"apiextensions.k8s.io\" at the cluster scope"
        );
        let status = Request {
            subresource: Some("status"),
            ..request("patch", Some("bob"), "seven")
        };
        assert!(
            forbidden(user, &status)
                .message
                .contains("cannot patch resource \"numbers/status\""),
        );
    }
}
