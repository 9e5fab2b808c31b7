//! The garbage collector, kube-controller-manager's, as a component of its own: it keeps
//! an owner-UID → dependents graph current on every write ([`State::gc_track`], called by
//! storage) and queues what a write touched; [`State::gc_pass`] (run by `background_loop` in
//! `lib.rs`) deletes dependents whose owners are gone (background / foreground
//! propagation), removes the `orphan` and `foregroundDeletion` finalizers when their work
//! is done, and drops references to owners that no longer exist.

use super::storage::to_view;
use super::{Key, State};
use crate::registry::ResourceType;
use crate::util::{self, meta_mut, uid_of};
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

/// What the garbage collector knows without scanning the store, maintained by `put` and
/// `remove_key` (the only places that change `State::objects`). kube-controller-manager's
/// GC works the same way: a graph of owner → dependents fed by watch events, and queues
/// (`attemptToDelete`, `attemptToOrphan`) of the nodes an event made worth a look.
///
/// Invariant (checked by the tests with [`State::gc_plan_everything`]): between passes,
/// every object for which a full scan would find something to do is queued.
#[derive(Default)]
pub(super) struct GcIndex {
    /// uid → key of the stored object with that uid.
    uids: HashMap<String, Key>,
    /// owner uid → the objects (any namespace) whose ownerReferences name that uid.
    dependents: HashMap<String, BTreeSet<Key>>,
    /// Objects whose ownerReferences need another look: they were created, their
    /// ownerReferences, deletionTimestamp or finalizers changed, or an owner they name
    /// appeared, disappeared or started a foreground/orphan deletion.
    dirty_dependents: BTreeSet<Key>,
    /// Owner uids whose `orphan`/`foregroundDeletion` finalizer needs another look: the
    /// owner entered such a deletion, or the set of references to it changed.
    dirty_owners: BTreeSet<String>,
    /// At most this many changes a second, when set ([`State::set_gc_rate`]).
    rate: Option<GcRate>,
}

/// kube-controller-manager's client limit, as the garbage collector feels it: each delete,
/// reference drop or finalizer removal is a request, and the requests of a second are
/// bounded (a token bucket of a second's worth).
struct GcRate {
    per_second: u32,
    tokens: f64,
    refilled: Instant,
}

impl GcRate {
    /// The changes allowed now.
    fn allowed(&mut self, now: Instant) -> usize {
        let per_second = f64::from(self.per_second);
        let elapsed = now.saturating_duration_since(self.refilled).as_secs_f64();
        self.tokens = (self.tokens + elapsed * per_second).min(per_second);
        self.refilled = now;
        self.tokens.floor() as usize
    }

    /// When the next change is allowed.
    fn next_due(&self) -> Instant {
        let missing = (1.0 - self.tokens).max(0.0) / f64::from(self.per_second);
        self.refilled + Duration::from_secs_f64(missing)
    }
}

/// What the garbage collector does to one dependent.
#[derive(Debug)]
enum GcAction {
    /// Delete it with this propagation policy (its owners are all gone).
    Delete(Key, &'static str),
    /// Remove the ownerReferences with these uids.
    DropRefs(Key, Vec<String>),
}

/// An owner's deletion state as its dependents see it: (foreground, orphan).
fn owner_state(o: &Value) -> (bool, bool) {
    if !util::is_deleting(o) {
        return (false, false);
    }
    let fins = util::finalizers_of(o);
    (
        fins.iter().any(|f| f == "foregroundDeletion"),
        fins.iter().any(|f| f == "orphan"),
    )
}

fn owner_refs_value(obj: &Value) -> Option<&Value> {
    obj.get("metadata").and_then(|m| m.get("ownerReferences"))
}

/// The owner uids an object's ownerReferences name ("" for a reference without one).
fn ref_uids(obj: &Value) -> Vec<String> {
    owner_refs_value(obj)
        .and_then(Value::as_array)
        .map(|refs| {
            refs.iter()
                .map(|r| {
                    r.get("uid")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string()
                })
                .collect()
        })
        .unwrap_or_default()
}
fn owner_refs(obj: &Value) -> Vec<Value> {
    obj.get("metadata")
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

impl GcIndex {
    /// The object at `key` as an owner: its uid's entry, and the look its dependents (and
    /// its own finalizers) need when it appeared, went, or began a foreground or orphan
    /// deletion.
    fn track_owner(&mut self, key: &Key, old: Option<&Value>, new: Option<&Value>) {
        let old_uid = old.map(uid_of);
        let new_uid = new.map(uid_of);
        let mut owner_changed: Vec<&str> = vec![];
        if old_uid != new_uid {
            if let Some(u) = old_uid {
                if self.uids.get(u) == Some(key) {
                    self.uids.remove(u);
                }
                owner_changed.push(u);
            }
            if let Some(u) = new_uid {
                self.uids.insert(u.to_string(), key.clone());
                owner_changed.push(u);
            }
        } else if let Some(u) = new_uid
            && old.map(owner_state) != new.map(owner_state)
        {
            owner_changed.push(u);
        }
        for u in owner_changed {
            if let Some(ds) = self.dependents.get(u) {
                self.dirty_dependents.extend(ds.iter().cloned());
            }
            self.dirty_owners.insert(u.to_string());
        }
        if let (Some(n), Some(u)) = (new, new_uid)
            && owner_state(n) != (false, false)
        {
            self.dirty_owners.insert(u.to_string());
        }
    }

    /// The object at `key` as a dependent: the owners' entries its references are under, and
    /// a look at it when they, its deletion or its finalizers changed.
    fn track_dependent(&mut self, key: &Key, old: Option<&Value>, new: Option<&Value>) {
        let old_refs = old.and_then(owner_refs_value);
        let new_refs = new.and_then(owner_refs_value);
        let refs_changed = old_refs != new_refs;
        if refs_changed {
            for u in old.map(ref_uids).unwrap_or_default() {
                if let Some(ds) = self.dependents.get_mut(&u) {
                    ds.remove(key);
                    if ds.is_empty() {
                        self.dependents.remove(&u);
                    }
                }
                self.dirty_owners.insert(u);
            }
            for u in new.map(ref_uids).unwrap_or_default() {
                self.dependents
                    .entry(u.clone())
                    .or_default()
                    .insert(key.clone());
                self.dirty_owners.insert(u);
            }
        }
        if let Some(n) = new
            && new_refs.is_some()
            && (refs_changed
                || old.is_none_or(|o| {
                    util::is_deleting(o) != util::is_deleting(n)
                        || util::finalizers_of(o) != util::finalizers_of(n)
                }))
        {
            self.dirty_dependents.insert(key.clone());
        }
    }
}

/// The propagation policy the collector deletes an unowned dependent with: the one its
/// finalizers already name (`orphan`, `foregroundDeletion`), else background.
fn deletion_policy(finalizers: &[String]) -> &'static str {
    if finalizers.iter().any(|f| f == "orphan") {
        "Orphan"
    } else if finalizers.iter().any(|f| f == "foregroundDeletion") {
        "Foreground"
    } else {
        "Background"
    }
}

impl State {
    /// Keeps the garbage collector's indexes current and queues what a write made worth
    /// its attention. `old`/`new` are the stored object before/after (None: absent).
    pub(super) fn gc_track(&mut self, key: &Key, old: Option<&Value>, new: Option<&Value>) {
        self.gc.track_owner(key, old, new);
        self.gc.track_dependent(key, old, new);
    }

    /// What the garbage collector would do for these dependents and owners, computed from
    /// the current state (nothing changes while planning): actions on dependents, then
    /// finalizers to remove from owners.
    fn gc_plan(
        &self,
        dependents: &BTreeSet<Key>,
        owners: &BTreeSet<String>,
    ) -> (Vec<GcAction>, Vec<(Key, &'static str)>) {
        let mut actions: Vec<GcAction> = dependents
            .iter()
            .filter_map(|k| self.dependent_action(k))
            .collect();
        let mut finalize = vec![];
        for uid in owners {
            self.owner_plan(uid, &mut actions, &mut finalize);
        }
        (actions, finalize)
    }

    /// The stored owner with this uid: (its key, deleting in foreground, being orphaned).
    fn gc_owner(&self, uid: &str) -> Option<(&Key, bool, bool)> {
        let k = self.gc.uids.get(uid)?;
        let (fg, orphan) = owner_state(self.objects.get(k)?);
        Some((k, fg, orphan))
    }

    /// What the collector does to dependent `k`: while an owner stands (one in its
    /// namespace, or cluster-scoped), it drops the references to owners that are gone or
    /// deleted in the foreground; when none stands and it is not being deleted, it deletes
    /// it, in the foreground when a foreground owner waits on it (blockOwnerDeletion).
    fn dependent_action(&self, k: &Key) -> Option<GcAction> {
        let o = self.objects.get(k)?;
        let refs = owner_refs(o);
        if refs.is_empty() {
            return None;
        }
        let mut solid = 0;
        let mut dangling = vec![];
        let mut waiting = vec![];
        let mut waiting_block = false;
        for r in &refs {
            let uid = r.get("uid").and_then(Value::as_str).unwrap_or("");
            match self.gc_owner(uid) {
                Some((ok, fg, orphan)) if ok.ns.is_empty() || ok.ns == k.ns => {
                    if orphan {
                        // handled by the owner's plan: the reference is removed
                        solid += 1;
                    } else if fg {
                        waiting.push(uid.to_string());
                        if r.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true) {
                            waiting_block = true;
                        }
                    } else {
                        solid += 1;
                    }
                }
                _ => dangling.push(uid.to_string()),
            }
        }
        if solid > 0 {
            let mut drop = dangling;
            drop.extend(waiting);
            return (!drop.is_empty()).then(|| GcAction::DropRefs(k.clone(), drop));
        }
        if util::is_deleting(o) {
            return None;
        }
        if !waiting.is_empty() && waiting_block {
            return Some(GcAction::Delete(k.clone(), "Foreground"));
        }
        let policy = deletion_policy(&util::finalizers_of(o));
        Some(GcAction::Delete(k.clone(), policy))
    }

    /// For owner `uid` being orphaned: every dependent's reference to it dropped, then its
    /// `orphan` finalizer; deleted in the foreground: its `foregroundDeletion` finalizer once
    /// no dependent blocks it any more.
    fn owner_plan(
        &self,
        uid: &str,
        actions: &mut Vec<GcAction>,
        finalize: &mut Vec<(Key, &'static str)>,
    ) {
        let Some((k, fg, orphan)) = self.gc_owner(uid) else {
            return;
        };
        let none = BTreeSet::new();
        let deps = self.gc.dependents.get(uid).unwrap_or(&none);
        if orphan {
            for dk in deps {
                actions.push(GcAction::DropRefs(dk.clone(), vec![uid.to_string()]));
            }
            finalize.push((k.clone(), "orphan"));
        } else if fg {
            let blocked = deps.iter().filter_map(|dk| self.objects.get(dk)).any(|d| {
                owner_refs(d).iter().any(|r| {
                    r.get("uid").and_then(Value::as_str) == Some(uid)
                        && r.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true)
                })
            });
            if !blocked {
                finalize.push((k.clone(), "foregroundDeletion"));
            }
        }
    }

    /// What a garbage-collector pass over every stored object would do (the tests check
    /// that it is nothing once the queued work is done).
    #[cfg(test)]
    fn gc_plan_everything(&self) -> (Vec<GcAction>, Vec<(Key, &'static str)>) {
        let keys: BTreeSet<Key> = self.objects.keys().cloned().collect();
        let uids: BTreeSet<String> = self
            .objects
            .values()
            .map(|o| uid_of(o).to_string())
            .collect();
        self.gc_plan(&keys, &uids)
    }

    /// Whether the garbage collector has queued work.
    pub fn gc_pending(&self) -> bool {
        !self.gc.dirty_dependents.is_empty() || !self.gc.dirty_owners.is_empty()
    }

    /// Bounds the garbage collector to `per_second` changes a second (0: no bound), as
    /// kube-controller-manager's client limit does ([`crate::TestServer::set_gc_rate`]).
    pub fn set_gc_rate(&mut self, per_second: u32) {
        self.gc.rate = (per_second > 0).then(|| GcRate {
            per_second,
            tokens: f64::from(per_second),
            refilled: Instant::now(),
        });
    }

    /// When the garbage collector, held back by its rate, may go on with what it has queued.
    pub fn gc_next_due(&self) -> Option<Instant> {
        let rate = self.gc.rate.as_ref()?;
        self.gc_pending().then(|| rate.next_due())
    }

    /// Deletes whatever is pending: the garbage collector of kube-controller-manager,
    /// approximated. Looks only at what writes since the last pass queued (see
    /// [`GcIndex`]); what it changes queues the next pass's work. Returns true if it
    /// changed anything.
    pub fn gc_pass(&mut self) -> bool {
        if !self.gc_pending() {
            return false;
        }
        let dependents = std::mem::take(&mut self.gc.dirty_dependents);
        let owners = std::mem::take(&mut self.gc.dirty_owners);
        let (mut actions, mut finalize) = self.gc_plan(&dependents, &owners);
        self.gc_defer_over_rate(&mut actions, &mut finalize);
        let mut changed = false;
        for a in actions {
            changed |= match a {
                GcAction::Delete(k, policy) => self.gc_delete(&k, policy),
                GcAction::DropRefs(k, uids) => self.gc_drop_refs(&k, &uids),
            };
        }
        for (k, fin) in finalize {
            changed |= self.gc_finalize(&k, fin);
        }
        changed
    }

    /// Keeps of the plan what the rate allows now (finalizers first); what it does not waits,
    /// queued again, for the next pass.
    fn gc_defer_over_rate(
        &mut self,
        actions: &mut Vec<GcAction>,
        finalize: &mut Vec<(Key, &'static str)>,
    ) {
        let Some(rate) = &mut self.gc.rate else {
            return;
        };
        let allowed = rate.allowed(Instant::now());
        let later_finalize = finalize.split_off(allowed.min(finalize.len()));
        let later_actions =
            actions.split_off(allowed.saturating_sub(finalize.len()).min(actions.len()));
        rate.tokens -= (finalize.len() + actions.len()) as f64;
        for action in later_actions {
            let (GcAction::Delete(key, _) | GcAction::DropRefs(key, _)) = action;
            self.gc.dirty_dependents.insert(key);
        }
        for (key, _) in later_finalize {
            if let Some(owner) = self.objects.get(&key) {
                self.gc.dirty_owners.insert(uid_of(owner).to_string());
            }
        }
    }

    /// The stored object at `k` as its kind shows it, with its kind; none when it is gone.
    fn gc_object(&self, k: &Key) -> Option<(Value, ResourceType)> {
        let o = self.objects.get(k)?;
        let rt = self.registry.find_storage(&k.storage)?.clone();
        Some((to_view(&rt, o), rt))
    }

    /// Deletes the dependent at `k` with `policy`. Whether it was there.
    fn gc_delete(&mut self, k: &Key, policy: &'static str) -> bool {
        let Some((o, rt)) = self.gc_object(k) else {
            return false;
        };
        self.delete_internal(&rt, o, policy);
        true
    }

    /// Drops the dependent's references to the owners `uids`. Whether it was there.
    fn gc_drop_refs(&mut self, k: &Key, uids: &[String]) -> bool {
        let Some((mut n, rt)) = self.gc_object(k) else {
            return false;
        };
        let refs: Vec<Value> = owner_refs(&n)
            .into_iter()
            .filter(|r| {
                !uids
                    .iter()
                    .any(|u| r.get("uid").and_then(Value::as_str) == Some(u.as_str()))
            })
            .collect();
        let m = meta_mut(&mut n);
        if refs.is_empty() {
            m.remove("ownerReferences");
        } else {
            m.insert("ownerReferences".into(), Value::Array(refs));
        }
        self.put(&rt, n);
        true
    }

    /// Removes the owner's finalizer `fin` (its work is done); an owner with none left that
    /// may vanish is removed. Whether it was there.
    fn gc_finalize(&mut self, k: &Key, fin: &str) -> bool {
        let Some((mut n, rt)) = self.gc_object(k) else {
            return false;
        };
        let fins: Vec<String> = util::finalizers_of(&n)
            .into_iter()
            .filter(|f| f != fin)
            .collect();
        let empty = fins.is_empty() && super::namespaces::may_vanish(&k.storage, &n);
        util::set_finalizers(&mut n, fins);
        if empty {
            self.remove_key(k);
        } else {
            self.put(&rt, n);
        }
        true
    }
}

#[cfg(test)]
mod gc_tests {
    use super::super::{DeleteOpts, PatchType, WriteOpts};
    use super::*;
    use serde_json::json;

    /// A small deterministic generator (xorshift64*), so failures reproduce.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    fn opts() -> WriteOpts {
        WriteOpts {
            manager: "test".into(),
            ..Default::default()
        }
    }

    /// Runs passes until the queues are empty, then checks that a pass over every object
    /// (what the collector did before it kept indexes) would find nothing either.
    fn settle(st: &mut State) {
        for _ in 0..1000 {
            if !st.gc_pass() {
                break;
            }
        }
        assert!(!st.gc_pending(), "queued work left after the passes");
        let (actions, finalize) = st.gc_plan_everything();
        assert!(
            actions.is_empty() && finalize.is_empty(),
            "a full pass would still act: {actions:?} {finalize:?}"
        );
    }

    fn uids(st: &State) -> Vec<String> {
        st.objects.values().map(|o| uid_of(o).to_string()).collect()
    }

    #[test]
    fn an_unowned_dependent_is_deleted_by_the_policy_its_finalizers_name() {
        let fins = |f: &[&str]| f.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(deletion_policy(&fins(&["a", "orphan"])), "Orphan");
        assert_eq!(
            deletion_policy(&fins(&["foregroundDeletion"])),
            "Foreground"
        );
        assert_eq!(deletion_policy(&fins(&["a"])), "Background");
    }

    /// kube-controller-manager's garbage collector keeps a graph of owners and dependents
    /// up to date from watch events and only processes the nodes an event touched; the
    /// store's incremental collector must reach the same result as a pass over every
    /// object after any mix of creates, ownerReference and finalizer changes, and
    /// background / foreground / orphan deletions (namespaced and cluster-scoped owners,
    /// owners in other namespaces, owner UIDs that never existed or no longer exist).
    #[test]
    fn incremental_gc_matches_a_full_scan() {
        for seed in 1..=40u64 {
            let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
            let mut st = State::default();
            let ns_rt = st.rt_of("", "namespaces").unwrap();
            st.create(
                &ns_rt,
                None,
                json!({"metadata": {"name": "other"}}),
                &opts(),
            )
            .unwrap();
            settle(&mut st);
            let kinds = [
                st.rt_of("", "configmaps").unwrap(),
                st.rt_of("rbac.authorization.k8s.io", "clusterroles")
                    .unwrap(),
            ];
            let mut gone_uids: Vec<String> = vec!["never-existed".into()];
            for _ in 0..300 {
                random_write(&mut st, &mut rng, &mut gone_uids, &kinds);
                // Sometimes let several writes pile up before the collector runs.
                if rng.below(3) == 0 {
                    settle(&mut st);
                }
            }
            settle(&mut st);
        }
    }

    /// One write the generator picks: a create (with up to two ownerReferences to present
    /// or gone uids, sometimes a finalizer), a change of the ownerReferences, the removal of
    /// the finalizers, or a delete with one of the three propagation policies. `kinds` is a
    /// namespaced kind and a cluster-scoped one; `gone_uids` collects the deleted objects'.
    fn random_write(
        st: &mut State,
        rng: &mut Rng,
        gone_uids: &mut Vec<String>,
        kinds: &[ResourceType; 2],
    ) {
        let all = uids(st);
        let nrefs = rng.below(3);
        let refs: Vec<Value> = (0..nrefs)
            .map(|i| {
                let uid = if rng.below(5) == 0 {
                    gone_uids[rng.below(gone_uids.len())].clone()
                } else {
                    all[rng.below(all.len())].clone()
                };
                json!({"apiVersion": "v1", "kind": "ConfigMap", "name": format!("o{i}"),
                       "uid": uid, "blockOwnerDeletion": rng.below(2) == 0})
            })
            .collect();
        let (rt, ns) = if rng.below(4) == 0 {
            (&kinds[1], None)
        } else {
            (&kinds[0], Some(["default", "other"][rng.below(2)]))
        };
        let name = format!("o-{}", rng.below(12));
        match rng.below(6) {
            0 | 1 => {
                let mut meta = json!({"name": name});
                if nrefs > 0 {
                    meta["ownerReferences"] = json!(refs);
                }
                if rng.below(4) == 0 {
                    meta["finalizers"] = json!(["test/hold"]);
                }
                let _ = st.create(rt, ns, json!({"metadata": meta}), &opts());
            }
            2 => {
                let refs = if nrefs == 0 { json!(null) } else { json!(refs) };
                merge_patch(
                    st,
                    rt,
                    ns,
                    &name,
                    json!({"metadata": {"ownerReferences": refs}}),
                );
            }
            3 => merge_patch(st, rt, ns, &name, json!({"metadata": {"finalizers": null}})),
            _ => {
                let policy = ["Background", "Foreground", "Orphan"][rng.below(3)];
                if let Ok(o) = st.get(rt, ns, &name) {
                    gone_uids.push(uid_of(&o).to_string());
                }
                let delete = DeleteOpts {
                    propagation: Some(policy.into()),
                    ..Default::default()
                };
                let _ = st.delete(rt, ns, &name, &delete);
            }
        }
    }

    /// A merge patch whose outcome the collector's invariant alone judges.
    fn merge_patch(st: &mut State, rt: &ResourceType, ns: Option<&str>, name: &str, patch: Value) {
        let body = patch.to_string();
        let merge = PatchType::Merge;
        let _ = st.patch(rt, ns, name, None, merge, body.as_bytes(), false, &opts());
    }
}
