//! Which cached children each parent controls: the index controller-runtime users build with
//! a field indexer on the owner. Without it a parent scans the whole cache for its children
//! on every reconcile, and a Fermat of 10000 (15000 children, thousands of reconciles) spent
//! most of its CPU comparing ownerReferences.
//!
//! The watch keeps it (see [`crate::runtime::watches`]): an object is filed under its controller's UID
//! when it arrives, leaves its old controller's filing when the watch shows it orphaned or
//! re-parented ([`OwnerIndex::moved`]), is removed when it is deleted, and the whole index is
//! rebuilt after a relist. A lookup still checks every name against the cache and drops the
//! ones that no longer belong (a change the index heard of before the cache shows it).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, RwLock};

use kube::Resource;
use kube::runtime::reflector::{ObjectRef, Store};

use crate::kind::controller_uid;

/// Names of objects by the UID of their controller.
#[derive(Default)]
pub struct OwnerIndex {
    by_owner: RwLock<HashMap<String, HashSet<String>>>,
}

impl OwnerIndex {
    pub fn new() -> Arc<OwnerIndex> {
        Arc::default()
    }

    /// An object was created or changed.
    pub fn apply<K: Resource>(&self, obj: &K) {
        let (Some(uid), Some(name)) = (controller_uid(obj), obj.meta().name.as_ref()) else {
            return;
        };
        let mut index = self.by_owner.write().unwrap_or_else(|e| e.into_inner());
        if let Some(names) = index.get_mut(uid) {
            if !names.contains(name) {
                names.insert(name.clone());
            }
        } else {
            index.insert(uid.to_string(), HashSet::from([name.clone()]));
        }
    }

    /// The watch shows `now`, which the cache held as `previous`: if its controller changed
    /// (orphaned, re-parented), it leaves the old one's filing. Otherwise a deleted parent's
    /// entry, never looked up again, would stay until the next relist.
    pub fn moved<K: Resource>(&self, previous: &K, now: &K) {
        let (Some(old), Some(name)) = (controller_uid(previous), previous.meta().name.as_ref())
        else {
            return;
        };
        if controller_uid(now) != Some(old) {
            self.forget(old, std::slice::from_ref(name));
        }
    }

    /// An object was deleted.
    pub fn delete<K: Resource>(&self, obj: &K) {
        let (Some(uid), Some(name)) = (controller_uid(obj), obj.meta().name.as_ref()) else {
            return;
        };
        self.forget(uid, std::slice::from_ref(name));
    }

    /// The cache was relisted: file every object anew.
    pub fn rebuild<K: Resource>(&self, objects: &[Arc<K>]) {
        let mut fresh: HashMap<String, HashSet<String>> = HashMap::new();
        for obj in objects {
            if let (Some(uid), Some(name)) = (controller_uid(obj.as_ref()), &obj.meta().name) {
                fresh
                    .entry(uid.to_string())
                    .or_default()
                    .insert(name.clone());
            }
        }
        *self.by_owner.write().unwrap_or_else(|e| e.into_inner()) = fresh;
    }

    /// The cached objects in `namespace` whose controller is `uid`.
    pub fn owned<K>(&self, store: &Store<K>, uid: &str, namespace: &str) -> Vec<Arc<K>>
    where
        K: Resource<DynamicType = ()> + Clone,
    {
        let names: Vec<String> = {
            let index = self.by_owner.read().unwrap_or_else(|e| e.into_inner());
            match index.get(uid) {
                Some(names) => names.iter().cloned().collect(),
                None => return Vec::new(),
            }
        };
        let mut owned = Vec::with_capacity(names.len());
        let mut moved = Vec::new();
        for name in names {
            let found = store.get(&ObjectRef::new(&name).within(namespace));
            match found {
                Some(obj) if controller_uid(obj.as_ref()) == Some(uid) => owned.push(obj),
                // Gone, or controlled by someone else now (a name in another namespace under
                // the same UID is simply not found here, and stays).
                Some(_) => moved.push(name),
                None => {}
            }
        }
        if !moved.is_empty() {
            self.forget(uid, &moved);
        }
        owned
    }

    fn forget(&self, uid: &str, names: &[String]) {
        let mut index = self.by_owner.write().unwrap_or_else(|e| e.into_inner());
        if let Some(set) = index.get_mut(uid) {
            for name in names {
                set.remove(name);
            }
            if set.is_empty() {
                index.remove(uid);
            }
        }
    }

    /// How many owners are filed.
    #[cfg(test)]
    fn owners(&self) -> usize {
        self.by_owner.read().map_or(0, |i| i.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{Number, NumberSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
    use kube::runtime::reflector::store::Writer;
    use kube::runtime::watcher::Event;

    fn number(name: &str, ns: &str, controller: Option<&str>) -> Number {
        let mut n = Number::new(name, NumberSpec { value: 1 });
        n.metadata.namespace = Some(ns.into());
        n.metadata.owner_references = controller.map(|uid| {
            vec![OwnerReference {
                api_version: "math.example.com/v1beta1".into(),
                kind: "Tuple".into(),
                name: "t".into(),
                uid: uid.into(),
                controller: Some(true),
                block_owner_deletion: None,
            }]
        });
        n
    }

    fn names(objects: &[Arc<Number>]) -> Vec<String> {
        let mut names: Vec<_> = objects
            .iter()
            .filter_map(|o| o.metadata.name.clone())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn children_are_found_by_their_controller_and_namespace() {
        let mut writer: Writer<Number> = Writer::default();
        let store = writer.as_reader();
        let index = OwnerIndex::new();
        for n in [
            number("a", "ns", Some("t1")),
            number("b", "ns", Some("t1")),
            number("c", "ns", Some("t2")),
            number("a", "other", Some("t1")),
            number("free", "ns", None),
        ] {
            writer.apply_watcher_event(&Event::Apply(n.clone()));
            index.apply(&n);
        }
        assert_eq!(names(&index.owned(&store, "t1", "ns")), ["a", "b"]);
        assert_eq!(names(&index.owned(&store, "t2", "ns")), ["c"]);
        assert!(index.owned(&store, "t3", "ns").is_empty());

        // Adopted by another controller: no longer t1's, and forgotten there.
        let moved = number("b", "ns", Some("t2"));
        writer.apply_watcher_event(&Event::Apply(moved.clone()));
        index.apply(&moved);
        assert_eq!(names(&index.owned(&store, "t1", "ns")), ["a"]);
        assert_eq!(names(&index.owned(&store, "t2", "ns")), ["b", "c"]);

        let gone = number("c", "ns", Some("t2"));
        writer.apply_watcher_event(&Event::Delete(gone.clone()));
        index.delete(&gone);
        assert_eq!(names(&index.owned(&store, "t2", "ns")), ["b"]);

        // A relist files everything anew.
        index.rebuild(&store.state());
        assert_eq!(index.owners(), 2);
        assert_eq!(names(&index.owned(&store, "t1", "other")), ["a"]);
    }

    /// F3 (issue 39): a child orphaned (`kubectl delete --cascade=orphan` of its parent) or
    /// re-parented leaves its old parent's filing when the watch shows it, not at the next
    /// relist: a deleted parent's UID is never looked up again, so its entry would stay.
    #[test]
    fn an_orphaned_child_leaves_its_old_parents_filing() {
        let index = OwnerIndex::new();
        let under_a = number("a-0", "ns", Some("a"));
        index.apply(&under_a);
        let orphaned = number("a-0", "ns", None);
        index.moved(&under_a, &orphaned);
        index.apply(&orphaned);
        assert_eq!(index.owners(), 0, "still filed under the deleted parent");
    }
}
