//! One kind's cache: the reflector store the reconciles read, and the index of its objects by
//! their controller's UID, kept together by the kind's one watch
//! ([`crate::cluster::watches`]). A parent's reconcile is handed the cache of its child kind,
//! found by type among the manager's [`Caches`], so the compiler, not a lookup by kind name,
//! says which index goes with which store.
//!
//! The owner index is what controller-runtime users build with a field indexer on the owner.
//! Without it a parent scans the whole cache for its children on every reconcile, and a
//! Fermat of 10000 (15000 children, thousands of reconciles) spent most of its CPU comparing
//! ownerReferences. The watch keeps it: an object is filed under its controller's UID when it
//! arrives, leaves its old controller's filing when the watch shows it orphaned or re-parented
//! ([`Cache::moved`]), is removed when it is deleted, and the whole index is rebuilt after a
//! relist. A lookup still checks every name against the cache and drops the ones that no
//! longer belong (a change the index heard of before the cache shows it).

use std::any::Any;
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, RwLock};

use kube::Resource;
use kube::runtime::reflector::{ObjectRef, Store};

use crate::cluster::undecodable::Undecodable;
use crate::error::{Error, Result};
use crate::kind::{Kind, controller_uid};

/// One kind's cache: its objects as the watch last saw them, and their names by the UID of
/// their controller (empty for a kind nobody controls).
pub struct Cache<K: Kind> {
    /// The objects, as the watch last saw them.
    pub store: Store<K>,
    index: Arc<OwnerIndex>,
    /// The objects the watch could not decode: not in the store, named for their parents.
    pub undecodable: Arc<Undecodable<K>>,
}

impl<K: Kind> Clone for Cache<K> {
    fn clone(&self) -> Self {
        Cache {
            store: self.store.clone(),
            index: self.index.clone(),
            undecodable: self.undecodable.clone(),
        }
    }
}

impl<K: Kind> Cache<K> {
    /// The cache behind `store`, with an empty owner index.
    pub fn new(store: Store<K>) -> Self {
        Cache {
            store,
            index: Arc::default(),
            undecodable: Arc::default(),
        }
    }

    /// The cached objects in `namespace` whose controller is `uid`.
    pub fn owned(&self, uid: &str, namespace: &str) -> Vec<Arc<K>> {
        self.index.owned(&self.store, uid, namespace)
    }

    /// The watch brought `obj`, created or changed: filed under its controller.
    pub fn apply(&self, obj: &K) {
        self.index.apply(obj);
    }

    /// The watch shows `now`, which the cache held as `previous`: if its controller changed
    /// (orphaned, re-parented), it leaves the old one's filing. Otherwise a deleted parent's
    /// entry, never looked up again, would stay until the next relist.
    pub fn moved(&self, previous: &K, now: &K) {
        self.index.moved(previous, now);
    }

    /// The watch saw `obj` deleted.
    pub fn delete(&self, obj: &K) {
        self.index.delete(obj);
    }

    /// The cache was relisted and holds `objects`: each is filed anew.
    pub fn rebuild(&self, objects: &[Arc<K>]) {
        self.index.rebuild(objects);
    }
}

/// What the manager asks of every cache, whatever its kind: whether it holds its first list,
/// and how many objects it holds (for the log line once all are synced).
trait AnyCache: Send + Sync {
    fn as_any(&self) -> &dyn Any;
    fn kind(&self) -> &'static str;
    fn len(&self) -> usize;
    fn ready(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>>;
}

impl<K: Kind> AnyCache for Cache<K> {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn kind(&self) -> &'static str {
        K::KIND
    }

    fn len(&self) -> usize {
        self.store.state().len()
    }

    fn ready(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            let _ = self.store.wait_until_ready().await;
        })
    }
}

/// Every kind's cache, found by type ([`Caches::of`]): the generic layer names no kind, and
/// the wiring (`ops/manager.rs`) says which kinds there are.
#[derive(Default)]
pub struct Caches {
    kinds: Vec<Box<dyn AnyCache>>,
}

impl Caches {
    /// These caches and `cache` (a kind's second cache replaces its first).
    pub fn with<K: Kind>(mut self, cache: Cache<K>) -> Self {
        self.kinds.retain(|c| c.kind() != K::KIND);
        self.kinds.push(Box::new(cache));
        self
    }

    /// The cache of kind `K`: a parent's reconcile reads its children there. Every kind the
    /// manager reconciles is wired in; a kind that is not is a bug of the wiring, said as an
    /// error of the reconcile that asked.
    pub fn of<K: Kind>(&self) -> Result<&Cache<K>> {
        (self.kinds.iter())
            .find_map(|c| c.as_any().downcast_ref::<Cache<K>>())
            .ok_or(Error::NotWired { kind: K::KIND })
    }

    /// Each kind and how many objects its cache holds, in the order they were wired in.
    pub fn sizes(&self) -> Vec<(&'static str, usize)> {
        self.kinds.iter().map(|c| (c.kind(), c.len())).collect()
    }

    /// Whether every cache holds its first complete list. Awaited once, before the
    /// controllers start, never from reconciles.
    pub async fn ready(&self) {
        for cache in &self.kinds {
            cache.ready().await;
        }
    }
}

/// Names of objects by the UID of their controller.
#[derive(Default)]
struct OwnerIndex {
    by_owner: RwLock<HashMap<String, HashSet<String>>>,
}

impl OwnerIndex {
    /// An object was created or changed.
    fn apply<K: Resource>(&self, obj: &K) {
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
    fn moved<K: Resource>(&self, previous: &K, now: &K) {
        let (Some(old), Some(name)) = (controller_uid(previous), previous.meta().name.as_ref())
        else {
            return;
        };
        if controller_uid(now) != Some(old) {
            self.forget(old, std::slice::from_ref(name));
        }
    }

    /// An object was deleted.
    fn delete<K: Resource>(&self, obj: &K) {
        let (Some(uid), Some(name)) = (controller_uid(obj), obj.meta().name.as_ref()) else {
            return;
        };
        self.forget(uid, std::slice::from_ref(name));
    }

    /// The cache was relisted: file every object anew.
    fn rebuild<K: Resource>(&self, objects: &[Arc<K>]) {
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
    fn owned<K>(&self, store: &Store<K>, uid: &str, namespace: &str) -> Vec<Arc<K>>
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
        let cache = Cache::new(writer.as_reader());
        for n in [
            number("a", "ns", Some("t1")),
            number("b", "ns", Some("t1")),
            number("c", "ns", Some("t2")),
            number("a", "other", Some("t1")),
            number("free", "ns", None),
        ] {
            writer.apply_watcher_event(&Event::Apply(n.clone()));
            cache.apply(&n);
        }
        assert_eq!(names(&cache.owned("t1", "ns")), ["a", "b"]);
        assert_eq!(names(&cache.owned("t2", "ns")), ["c"]);
        assert!(cache.owned("t3", "ns").is_empty());

        // Adopted by another controller: no longer t1's, and forgotten there.
        let moved = number("b", "ns", Some("t2"));
        writer.apply_watcher_event(&Event::Apply(moved.clone()));
        cache.apply(&moved);
        assert_eq!(names(&cache.owned("t1", "ns")), ["a"]);
        assert_eq!(names(&cache.owned("t2", "ns")), ["b", "c"]);

        let gone = number("c", "ns", Some("t2"));
        writer.apply_watcher_event(&Event::Delete(gone.clone()));
        cache.delete(&gone);
        assert_eq!(names(&cache.owned("t2", "ns")), ["b"]);

        // A relist files everything anew.
        cache.rebuild(&cache.store.state());
        assert_eq!(cache.index.owners(), 2);
        assert_eq!(names(&cache.owned("t1", "other")), ["a"]);
    }

    /// F3 (issue 39): a child orphaned (`kubectl delete --cascade=orphan` of its parent) or
    /// re-parented leaves its old parent's filing when the watch shows it, not at the next
    /// relist: a deleted parent's UID is never looked up again, so its entry would stay.
    #[test]
    fn an_orphaned_child_leaves_its_old_parents_filing() {
        let cache = Cache::new(Writer::<Number>::default().as_reader());
        let under_a = number("a-0", "ns", Some("a"));
        cache.apply(&under_a);
        let orphaned = number("a-0", "ns", None);
        cache.moved(&under_a, &orphaned);
        cache.apply(&orphaned);
        assert_eq!(
            cache.index.owners(),
            0,
            "still filed under the deleted parent"
        );
    }

    /// Each kind's cache is found by its type, and a kind never wired in is not.
    #[test]
    fn a_cache_is_found_by_its_kind() {
        use crate::api::Tuple;
        let numbers = Cache::new(Writer::<Number>::default().as_reader());
        let caches = Caches::default().with(numbers);
        assert!(caches.of::<Number>().is_ok());
        assert!(matches!(
            caches.of::<Tuple>(),
            Err(Error::NotWired { kind: "Tuple" })
        ));
        assert_eq!(caches.sizes(), [("Number", 0)]);
    }
}
