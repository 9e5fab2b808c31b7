//! The bearer tokens the server recognises: those a test registered
//! ([`crate::TestServer::add_token`]) and those a TokenRequest issued, which are bound to their
//! ServiceAccount and a lifetime as kube-apiserver binds them.

use std::collections::HashMap;
use std::sync::Mutex;

use super::UserInfo;
use crate::store::State;

/// The tokens the server recognises.
#[derive(Debug, Default)]
pub(crate) struct Tokens {
    users: Mutex<HashMap<String, UserInfo>>,
    /// The tokens a TokenRequest issued: bound to their ServiceAccount and a lifetime.
    bound: Mutex<HashMap<String, Bound>>,
}

/// What a TokenRequest's token is bound to, as kube-apiserver checks it on every request: the
/// ServiceAccount (deleting it, or replacing it by one of another UID, revokes the token) and
/// the expiry.
#[derive(Debug, Clone)]
pub(crate) struct Bound {
    pub(crate) namespace: String,
    pub(crate) name: String,
    pub(crate) uid: String,
    pub(crate) expires: std::time::SystemTime,
}

impl Tokens {
    pub(crate) fn add(&self, token: &str, user: UserInfo) {
        self.users
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(token.to_string(), user);
    }

    /// A TokenRequest's token: recognised as `user` while `bound` holds ([`Tokens::revoked`]).
    pub(crate) fn issue(&self, token: &str, user: UserInfo, bound: Bound) {
        self.add(token, user);
        self.bound
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(token.to_string(), bound);
    }

    /// The username a token stands for (a request's flow, for priority and fairness).
    pub(crate) fn user(&self, token: &str) -> Option<String> {
        self.get(token).map(|u| u.username)
    }

    /// Who a token stands for, if the server knows it.
    pub(crate) fn info(&self, token: &str) -> Option<UserInfo> {
        self.get(token)
    }

    /// Whether a TokenRequest's token no longer authenticates anyone: it expired, or its
    /// ServiceAccount is gone or is another one now (kube-apiserver answers 401 `Unauthorized`
    /// to both). A token a test registered ([`Tokens::add`]) is never revoked this way.
    pub(crate) fn revoked(&self, token: &str, state: &State) -> bool {
        let bound = self
            .bound
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(token)
            .cloned();
        let Some(bound) = bound else {
            return false;
        };
        if std::time::SystemTime::now() >= bound.expires {
            return true;
        }
        let account = state
            .rt_of("", "serviceaccounts")
            .and_then(|rt| state.get(&rt, Some(&bound.namespace), &bound.name).ok());
        account.is_none_or(|account| crate::util::uid_of(&account) != bound.uid)
    }

    fn get(&self, token: &str) -> Option<UserInfo> {
        self.users
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(token)
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    fn bound(expires: SystemTime) -> Bound {
        Bound {
            namespace: "alice".into(),
            name: "alice".into(),
            uid: "uid-1".into(),
            expires,
        }
    }

    fn user() -> UserInfo {
        super::super::service_account_user("alice", "alice")
    }

    #[test]
    fn an_issued_token_ends_with_its_lifetime_or_its_service_account() {
        let tokens = Tokens::default();
        let state = State::default();
        let later = SystemTime::now() + Duration::from_secs(3600);
        tokens.issue(
            "expired",
            user(),
            bound(SystemTime::now() - Duration::from_secs(1)),
        );
        assert!(tokens.revoked("expired", &state));
        // Within its lifetime, but no ServiceAccount alice/alice is stored.
        tokens.issue("orphan", user(), bound(later));
        assert!(tokens.revoked("orphan", &state));
        // A registered token is the test's word, never revoked.
        tokens.add("registered", user());
        assert!(!tokens.revoked("registered", &state));
        assert_eq!(tokens.info("orphan"), Some(user()));
    }
}
