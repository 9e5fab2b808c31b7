//! `kubectl auth whoami`: a SelfSubjectReview (`POST /apis/authentication.k8s.io/v1/
//! selfsubjectreviews`, sent by kubectl v1.32 as protobuf) is answered with who the request's
//! credentials say the caller is, as kube-apiserver's `selfsubjectreview` REST handler answers:
//! a new object with a `creationTimestamp` and `status.userInfo` (username, uid, groups; the
//! test server's users carry no `extra`). Authentication is not authorization: a token's user
//! is named whether or not RBAC is enforced.

use serde_json::{Value, json};

use super::UserInfo;

/// Who a request without a bearer token is: the administrator of the server's own
/// kubeconfig, in `system:masters` (as the reviews of one's own access treat them), named as
/// kubeadm and kind name their administrator.
pub(crate) fn administrator() -> UserInfo {
    UserInfo {
        username: "kubernetes-admin".to_string(),
        uid: String::new(),
        groups: vec![
            "system:masters".to_string(),
            "system:authenticated".to_string(),
        ],
    }
}

/// The SelfSubjectReview kube-apiserver answers `user`: `uid` and `groups` only when they
/// have a value (Go's `omitempty`).
pub(super) fn self_subject_review(user: &UserInfo) -> Value {
    let mut info = json!({"username": user.username});
    if !user.uid.is_empty() {
        info["uid"] = json!(user.uid);
    }
    if !user.groups.is_empty() {
        info["groups"] = json!(user.groups);
    }
    json!({
        "kind": "SelfSubjectReview",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"creationTimestamp": crate::util::now()},
        "status": {"userInfo": info},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_uid_is_left_out_as_go_omits_it() {
        let review = self_subject_review(&administrator());
        assert_eq!(
            review["status"],
            json!({"userInfo": {"username": "kubernetes-admin",
                "groups": ["system:masters", "system:authenticated"]}})
        );
        assert!(review["metadata"]["creationTimestamp"].is_string());
    }
}
