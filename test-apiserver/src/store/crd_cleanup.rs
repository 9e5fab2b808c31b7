//! A CRD's deletion, as apiextensions-apiserver does it:
//!
//! - **The CRD registry**: the first DELETE adds the `customresourcecleanup.apiextensions.k8s.io`
//!   finalizer and the condition `Terminating` True `InstanceDeletionPending`, sets the
//!   `deletionTimestamp` and answers 200 with the CRD, which stays.
//! - **Custom resource creation** is refused meanwhile: 403 Forbidden `<plural>.<group>
//!   "<name>" is forbidden: create not allowed while custom resource definition is
//!   terminating` (kube-apiserver v1.36.2; v1.24 answered 405 MethodNotAllowed).
//! - **The finalizer controller**, run by the background loop: the condition becomes
//!   `InstanceDeletionInProgress`, every instance is deleted (Background), instances held by
//!   their own finalizers are waited for, and once none is left the finalizer is removed,
//!   which deletes the CRD (and its discovery entry).
//!
//! Seen on kube-apiserver v1.24: a watch of the instances gets DELETED for each before the
//! CRD goes; until then the resource is served, lists included.

use super::{Key, State};
use crate::registry::ResourceType;
use crate::status::{ApiError, ApiResult};
use crate::util::{self, now};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

pub(super) const CRD_STORAGE: &str = "apiextensions.k8s.io/customresourcedefinitions";
const FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";
/// How often a CRD whose instances are held by finalizers is looked at again.
const RECHECK: Duration = Duration::from_millis(100);
/// How long after a CRD starts terminating the finalizer controller first acts on it. In
/// kube-apiserver the controller learns of the DELETE through its informer and workqueue and
/// then writes the CRD's status, deletes the instances, lists them and writes the CRD again,
/// each a round trip through etcd: tens of milliseconds in all, so a client's next request
/// (kube-rs's `crd_derive_schema` example watches the CRD from resourceVersion 0 right after
/// its DELETE) still finds the CRD. Acting within the DELETE's own wake-up of the background
/// loop, the test server deleted it first and that watch waited in vain.
const INFORMER_DELAY: Duration = Duration::from_millis(50);

/// The finalizer controller's queue: terminating CRDs → when to look again.
#[derive(Default)]
pub struct CrdCleanup {
    work: BTreeMap<String, Instant>,
}

/// The CRD with its `Terminating` condition set to `reason` (and message), replacing the
/// previous one; its `lastTransitionTime` changes only with the status.
fn with_terminating(crd: &Value, reason: &str, message: &str) -> Value {
    let mut new = crd.clone();
    let mut conditions: Vec<Value> = crd["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let old = conditions.iter().position(|c| c["type"] == "Terminating");
    let since = old
        .and_then(|i| conditions[i].get("lastTransitionTime").cloned())
        .filter(|_| old.is_some_and(|i| conditions[i]["status"] == "True"))
        .unwrap_or_else(|| json!(now()));
    let condition = json!({"type": "Terminating", "status": "True",
        "lastTransitionTime": since, "reason": reason, "message": message});
    match old {
        Some(i) => conditions[i] = condition,
        None => conditions.push(condition),
    }
    new["status"]["conditions"] = Value::Array(conditions);
    new
}

impl State {
    /// The CRD registry's part of a DELETE: what the CRD looks like once marked (the generic
    /// delete then sets its `deletionTimestamp`, and the finalizer keeps it).
    pub(super) fn crd_mark_terminating(rt: &ResourceType, old: Value) -> Value {
        if rt.storage != CRD_STORAGE || util::is_deleting(&old) {
            return old;
        }
        let mut new = with_terminating(
            &old,
            "InstanceDeletionPending",
            "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
        );
        let mut fins = util::finalizers_of(&new);
        if !fins.iter().any(|f| f == FINALIZER) {
            fins.push(FINALIZER.into());
        }
        util::set_finalizers(&mut new, fins);
        new
    }

    /// Refuses a create of a custom resource whose CRD is terminating, as kube-apiserver
    /// v1.36.2 answers it (403 Forbidden, `<plural>.<group> "<name>" is forbidden: create not
    /// allowed while custom resource definition is terminating`; v1.24 answered 405).
    pub(super) fn crd_admit_create(&self, rt: &ResourceType, name: &str) -> ApiResult<()> {
        let Some(crd) = &rt.crd else { return Ok(()) };
        let key = Key {
            storage: CRD_STORAGE.into(),
            ns: String::new(),
            name: crd.clone(),
        };
        if self.objects.get(&key).is_some_and(util::is_deleting) {
            return Err(ApiError::forbidden(
                &rt.plural,
                &rt.group,
                name,
                "create not allowed while custom resource definition is terminating",
            ));
        }
        Ok(())
    }

    /// Called by storage for every write: a CRD that starts terminating is queued.
    pub(super) fn crd_track(&mut self, key: &Key, old: Option<&Value>, new: &Value) {
        if key.storage == CRD_STORAGE
            && util::is_deleting(new)
            && !old.is_some_and(util::is_deleting)
        {
            self.crd_cleanup
                .work
                .insert(key.name.clone(), Instant::now() + INFORMER_DELAY);
        }
    }

    /// When the finalizer controller next has work (for the background loop's sleep).
    pub fn crd_cleanup_next_due(&self) -> Option<Instant> {
        self.crd_cleanup.work.values().min().copied()
    }

    /// One pass of the finalizer controller over the terminating CRDs that are due.
    /// Returns whether it wrote.
    pub fn crd_cleanup_sync(&mut self) -> bool {
        let now = Instant::now();
        let due: Vec<String> = self
            .crd_cleanup
            .work
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(name, _)| name.clone())
            .collect();
        let mut wrote = false;
        for name in due {
            wrote |= self.crd_cleanup_step(&name);
        }
        wrote
    }

    /// One step of the finalizer controller for the terminating CRD `name`: mark it
    /// InstanceDeletionInProgress, delete its instances, and once none is left release its
    /// finalizer (it goes when none is left). Returns whether it wrote.
    fn crd_cleanup_step(&mut self, name: &str) -> bool {
        let key = Key {
            storage: CRD_STORAGE.into(),
            ns: String::new(),
            name: name.into(),
        };
        let (Some(crd), Some(crd_rt)) = (
            self.objects.get(&key).cloned(),
            self.rt_of("apiextensions.k8s.io", "customresourcedefinitions"),
        ) else {
            self.crd_cleanup.work.remove(name);
            return false;
        };
        if !util::is_deleting(&crd) || !util::finalizers_of(&crd).iter().any(|f| f == FINALIZER) {
            self.crd_cleanup.work.remove(name);
            return false;
        }
        let marked = with_terminating(
            &crd,
            "InstanceDeletionInProgress",
            "CustomResource deletion is in progress",
        );
        let wrote_mark = marked != crd;
        let crd = if wrote_mark {
            self.put(&crd_rt, marked)
        } else {
            crd
        };
        let (deleted, left) = self.delete_crd_instances(name);
        if left {
            self.crd_cleanup
                .work
                .insert(name.into(), Instant::now() + RECHECK);
            return wrote_mark || deleted;
        }
        self.crd_cleanup.work.remove(name);
        let fins: Vec<String> = util::finalizers_of(&crd)
            .into_iter()
            .filter(|f| f != FINALIZER)
            .collect();
        if fins.is_empty() {
            self.remove_key(&key);
        } else {
            let mut released = crd;
            util::set_finalizers(&mut released, fins);
            self.put(&crd_rt, released);
        }
        true
    }

    /// Deletes (Background) the instances of the CRD `name` not being deleted yet. Returns
    /// (whether it deleted any, whether any instance is left).
    fn delete_crd_instances(&mut self, name: &str) -> (bool, bool) {
        let instances = self
            .registry
            .types
            .iter()
            .find(|t| t.crd.as_deref() == Some(name))
            .cloned();
        let Some(rt) = instances else {
            return (false, false);
        };
        let items: Vec<Value> = self
            .scan(&rt, None)
            .filter(|(_, v)| !util::is_deleting(v))
            .map(|(_, v)| v.clone())
            .collect();
        let deleted = !items.is_empty();
        for it in items {
            self.delete_internal(&rt, it, "Background");
        }
        (deleted, self.scan(&rt, None).next().is_some())
    }
}
