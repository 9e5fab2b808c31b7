//! A namespace's life and death, in the three places a real cluster keeps it:
//!
//! - **NamespaceLifecycle admission** (kube-apiserver, always on), before a create is
//!   named or validated: a create in a namespace that does not exist is 404 `namespaces "x"
//!   not found`; in a namespace being deleted it is 403 `tuples.math.example.com "t9" is
//!   forbidden: unable to create new content in namespace n because it is being
//!   terminated` with the cause `NamespaceTerminating` on `metadata.namespace`. Updates,
//!   patches, status writes and deletes are not checked. `default`, `kube-system` and
//!   `kube-public` may not be deleted (403 `this namespace may not be deleted`).
//! - **The namespace registry** (kube-apiserver): the first DELETE of a namespace sets its
//!   `deletionTimestamp` and `status.phase: Terminating` and answers 200 with it; it stays
//!   while `spec.finalizers` (`["kubernetes"]`) is not empty.
//! - **The namespace controller** (kube-controller-manager), run by the background loop:
//!   after a grace period ([`NamespaceController::deletion_delay`]; the real one waits 5 s)
//!   it deletes the namespace's content one resource type per pass, as its deletecollection
//!   calls do, writes the `NamespaceContentRemaining` / `NamespaceFinalizersRemaining` ...
//!   conditions, and once nothing is left removes its `kubernetes` finalizer, which
//!   deletes the namespace.

use super::{Key, State};
use crate::registry::ResourceType;
use crate::status::{ApiError, ApiResult};
use crate::util::{self, meta_mut, name_of, now};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Namespaces the NamespaceLifecycle plugin never lets go.
const IMMORTAL: &[&str] = &["default", "kube-system", "kube-public"];
/// The finalizer the namespace controller owns.
const FINALIZER: &str = "kubernetes";
/// Pause between two resource types' deletions (the real controller makes a
/// deletecollection and a list request per type).
const STEP: Duration = Duration::from_millis(10);
/// How often a namespace whose content is held by finalizers is looked at again.
const RECHECK: Duration = Duration::from_millis(100);

/// The namespace controller's queue.
#[derive(Default)]
pub struct NamespaceController {
    /// How long a deleted namespace's content stays before the controller starts
    /// (kube-controller-manager's `namespaceDeletionGracePeriod` is 5 s; default here 0).
    pub deletion_delay: Duration,
    /// Terminating namespaces → when to look again, and the next resource type to sweep.
    work: BTreeMap<String, (Instant, usize)>,
}

/// The conditions the namespace controller maintains, in its order, with the reason and
/// message of their `False` (all is well) form.
const CONDITIONS: &[(&str, &str, &str)] = &[
    (
        "NamespaceDeletionDiscoveryFailure",
        "ResourcesDiscovered",
        "All resources successfully discovered",
    ),
    (
        "NamespaceDeletionGroupVersionParsingFailure",
        "ParsedGroupVersions",
        "All legacy kube types successfully parsed",
    ),
    (
        "NamespaceDeletionContentFailure",
        "ContentDeleted",
        "All content successfully deleted, may be waiting on finalization",
    ),
    (
        "NamespaceContentRemaining",
        "ContentRemoved",
        "All content successfully removed",
    ),
    (
        "NamespaceFinalizersRemaining",
        "ContentHasNoFinalizers",
        "All content-preserving finalizers finished",
    ),
];

fn spec_finalizers(ns: &Value) -> Vec<String> {
    ns.pointer("/spec/finalizers")
        .and_then(Value::as_array)
        .map(|f| {
            f.iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether an object whose metadata finalizers are all gone may leave the store: a
/// namespace also waits for its `spec.finalizers` (the registry's
/// `ShouldDeleteNamespaceDuringUpdate`).
pub(super) fn may_vanish(rt_storage: &str, obj: &Value) -> bool {
    rt_storage != "/namespaces" || spec_finalizers(obj).is_empty()
}

impl State {
    fn namespace(&self, ns: &str) -> Option<&Value> {
        self.objects.get(&Key {
            storage: "/namespaces".into(),
            ns: String::new(),
            name: ns.into(),
        })
    }

    /// NamespaceLifecycle for a create of `obj` (not yet named: a generateName is what the
    /// refusal names) in `ns`.
    pub(super) fn namespace_admit(
        &self,
        rt: &ResourceType,
        ns: &str,
        obj: &Value,
    ) -> ApiResult<()> {
        let Some(namespace) = self.namespace(ns) else {
            return Err(ApiError::not_found("namespaces", "", ns));
        };
        if namespace.pointer("/status/phase").and_then(Value::as_str) != Some("Terminating") {
            return Ok(());
        }
        let name = [
            name_of(obj),
            util::meta_str(obj, "generateName").unwrap_or(""),
        ]
        .into_iter()
        .find(|n| !n.is_empty())
        .unwrap_or("Unknown");
        let mut e = ApiError::forbidden(
            &rt.plural,
            &rt.group,
            name,
            &format!(
                "unable to create new content in namespace {ns} because it is being terminated"
            ),
        );
        if let Some(d) = e.details.as_mut() {
            d["causes"] = json!([{
                "reason": "NamespaceTerminating",
                "message": format!("namespace {ns} is being terminated"),
                "field": "metadata.namespace",
            }]);
        }
        Err(e)
    }

    /// DELETE of a namespace (the namespace registry's `Delete`). `old` passed the
    /// preconditions. Answers 200 with the namespace, gone or terminating.
    pub(super) fn delete_namespace(
        &mut self,
        rt: &ResourceType,
        old: Value,
        policy: Option<&str>,
        dry_run: bool,
    ) -> (Value, u16) {
        if util::is_deleting(&old) {
            if !spec_finalizers(&old).is_empty() || dry_run {
                return (old, 200);
            }
            let (v, _) = self.delete_internal(rt, old, policy.unwrap_or("Background"));
            return (v, 200);
        }
        let mut new = old.clone();
        {
            let m = meta_mut(&mut new);
            m.insert("deletionTimestamp".into(), json!(now()));
        }
        new["status"]["phase"] = json!("Terminating");
        let mut fins = util::finalizers_of(&new);
        let mut want = |f: &str, on: bool| {
            fins.retain(|x| x != f);
            if on {
                fins.push(f.to_string());
            }
        };
        match policy {
            Some("Orphan") => want("orphan", true),
            Some("Foreground") => want("foregroundDeletion", true),
            Some(_) => {
                want("orphan", false);
                want("foregroundDeletion", false);
            }
            None => {}
        }
        if fins != util::finalizers_of(&old) {
            util::set_finalizers(&mut new, fins);
        }
        if dry_run {
            return (new, 200);
        }
        (self.put(rt, new), 200)
    }

    /// Called by storage for every write: a namespace that starts terminating is queued
    /// for the namespace controller, after the grace period.
    pub(super) fn namespace_track(&mut self, key: &Key, old: Option<&Value>, new: &Value) {
        if key.storage == "/namespaces"
            && util::is_deleting(new)
            && !old.is_some_and(util::is_deleting)
        {
            let at = Instant::now() + self.namespaces.deletion_delay;
            self.namespaces.work.insert(key.name.clone(), (at, 0));
        }
    }

    /// The immortal namespaces' refusal, if `name` is one.
    pub(super) fn namespace_delete_admit(name: &str) -> ApiResult<()> {
        if IMMORTAL.contains(&name) {
            return Err(ApiError::forbidden(
                "namespaces",
                "",
                name,
                "this namespace may not be deleted",
            ));
        }
        Ok(())
    }

    /// When the namespace controller next has work (for the background loop's sleep).
    pub fn namespaces_next_due(&self) -> Option<Instant> {
        self.namespaces.work.values().map(|(at, _)| *at).min()
    }

    /// One pass of the namespace controller over the terminating namespaces that are due.
    /// Returns whether it wrote.
    pub fn namespace_sync(&mut self) -> bool {
        let now = Instant::now();
        let due: Vec<(String, usize)> = self
            .namespaces
            .work
            .iter()
            .filter(|(_, (at, _))| *at <= now)
            .map(|(ns, (_, next))| (ns.clone(), *next))
            .collect();
        let mut wrote = false;
        for (ns, next) in due {
            wrote |= self.namespace_step(&ns, next);
        }
        wrote
    }

    /// The namespaced resource types, one per storage, in registry order.
    fn content_types(&self) -> Vec<ResourceType> {
        let mut out: Vec<ResourceType> = vec![];
        for rt in &self.registry.types {
            if rt.namespaced && !out.iter().any(|o| o.storage == rt.storage) {
                out.push(rt.clone());
            }
        }
        out
    }

    /// One step of the namespace controller for the terminating namespace `ns`: sweep the
    /// next resource type with content (from type `next`), else report what is left in its
    /// conditions, else drop its finalizer. Returns whether it wrote.
    fn namespace_step(&mut self, ns: &str, next: usize) -> bool {
        let Some(namespace) = self.namespace(ns).cloned() else {
            self.namespaces.work.remove(ns);
            return false;
        };
        if !util::is_deleting(&namespace)
            || !spec_finalizers(&namespace).iter().any(|f| f == FINALIZER)
        {
            self.namespaces.work.remove(ns);
            return false;
        }
        let types = self.content_types();
        if let Some(next) = self.sweep_next_type(ns, &types, next) {
            self.namespaces
                .work
                .insert(ns.into(), (Instant::now() + STEP, next));
            return true;
        }
        let (remaining, finalizers) = self.namespace_leftovers(ns, &types);
        let wrote = self.namespace_conditions(&namespace, &remaining, &finalizers);
        if !remaining.is_empty() {
            self.namespaces
                .work
                .insert(ns.into(), (Instant::now() + RECHECK, 0));
            return wrote;
        }
        self.namespaces.work.remove(ns);
        self.release_namespace(ns) || wrote
    }

    /// Sweeps the first of `types` from `next` on that has content in `ns` (deletecollection,
    /// Background). Returns the type to go on from next time, or `None` when every type is
    /// swept.
    fn sweep_next_type(
        &mut self,
        ns: &str,
        types: &[ResourceType],
        mut next: usize,
    ) -> Option<usize> {
        while let Some(rt) = types.get(next) {
            next += 1;
            let items: Vec<Value> = self
                .scan(rt, Some(ns))
                .filter(|(_, v)| !util::is_deleting(v))
                .map(|(_, v)| super::storage::to_view(rt, v))
                .collect();
            if items.is_empty() {
                continue;
            }
            for it in items {
                self.delete_internal(rt, it, "Background");
            }
            return Some(next);
        }
        None
    }

    /// Every type swept: what is left in `ns` (per type, as the conditions word it), and the
    /// finalizers that hold it (with their counts).
    fn namespace_leftovers(
        &self,
        ns: &str,
        types: &[ResourceType],
    ) -> (BTreeMap<String, usize>, BTreeMap<String, usize>) {
        let mut remaining: BTreeMap<String, usize> = BTreeMap::new();
        let mut finalizers: BTreeMap<String, usize> = BTreeMap::new();
        for rt in types {
            let mut n = 0;
            for (_, v) in self.scan(rt, Some(ns)) {
                n += 1;
                for f in util::finalizers_of(v) {
                    *finalizers.entry(f).or_default() += 1;
                }
            }
            if n > 0 {
                remaining.insert(
                    format!("{}.{} has {n} resource instances", rt.plural, rt.group),
                    n,
                );
            }
        }
        (remaining, finalizers)
    }

    /// Finalize: drop our finalizer; with none left the namespace goes. Whether it wrote.
    fn release_namespace(&mut self, ns: &str) -> bool {
        let Some(rt) = self.rt_of("", "namespaces") else {
            return false;
        };
        let Some(mut n) = self.namespace(ns).cloned() else {
            return false;
        };
        let fins: Vec<String> = spec_finalizers(&n)
            .into_iter()
            .filter(|f| f != FINALIZER)
            .collect();
        n["spec"]["finalizers"] = json!(fins);
        let key = State::key(&rt, None, ns);
        if fins.is_empty() && util::finalizers_of(&n).is_empty() {
            self.remove_key(&key);
        } else {
            self.put(&rt, n);
        }
        true
    }

    /// Writes the namespace controller's conditions if they changed.
    fn namespace_conditions(
        &mut self,
        namespace: &Value,
        remaining: &BTreeMap<String, usize>,
        finalizers: &BTreeMap<String, usize>,
    ) -> bool {
        let old: Vec<Value> = namespace
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let ts = now();
        let conditions: Vec<Value> = CONDITIONS
            .iter()
            .map(|(ty, ok_reason, ok_message)| {
                let (status, reason, message) = match *ty {
                    "NamespaceContentRemaining" if !remaining.is_empty() => (
                        "True",
                        "SomeResourcesRemain",
                        format!(
                            "Some resources are remaining: {}",
                            remaining.keys().cloned().collect::<Vec<_>>().join(", ")
                        ),
                    ),
                    "NamespaceFinalizersRemaining" if !finalizers.is_empty() => (
                        "True",
                        "SomeFinalizersRemain",
                        format!(
                            "Some content in the namespace has finalizers remaining: {}",
                            finalizers
                                .iter()
                                .map(|(f, n)| format!("{f} in {n} resource instances"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    ),
                    _ => ("False", *ok_reason, ok_message.to_string()),
                };
                let before = old.iter().find(|c| c["type"] == *ty);
                let since = before
                    .filter(|c| c["status"] == status)
                    .and_then(|c| c.get("lastTransitionTime").cloned())
                    .unwrap_or_else(|| json!(ts));
                json!({"type": ty, "status": status, "lastTransitionTime": since,
                       "reason": reason, "message": message})
            })
            .collect();
        if conditions == old {
            return false;
        }
        let Some(rt) = self.rt_of("", "namespaces") else {
            return false;
        };
        let mut n = namespace.clone();
        n["status"]["conditions"] = json!(conditions);
        self.put(&rt, n);
        true
    }

    /// Sets the namespace controller's grace period before it deletes content.
    pub fn set_namespace_deletion_delay(&mut self, delay: Duration) {
        self.namespaces.deletion_delay = delay;
    }
}
