//! One kind's store: its objects as the watch last saw them, found by namespace and name, and
//! by the UID of their controller. The reconciles read it; only the kind's watch writes it,
//! through its [`Writer`].
//!
//! It does what kube-runtime's reflector store does (`reflector::store()`) and what a
//! controller-runtime field indexer on the owner adds, for less memory, which is what a
//! manager's memory grows with (issue 48, item 7):
//! - **No key beside the object.** kube-runtime files each object under an `ObjectRef` that
//!   copies its name, namespace, UID and resourceVersion: 96 B inline and four strings, in a
//!   hash table of 104-byte slots, about 350 B per object beside the object itself (a cached
//!   Number is about 900 B). Here a table holds only the `Arc` of each object (a slot of
//!   9 B), hashed and compared by the namespace and name the object itself carries (a
//!   hashbrown `HashTable`, which takes the hash and the comparison from the caller).
//! - **The owner index is the same `Arc`s.** A parent finds the children it controls in a
//!   second table of the same objects, hashed by their namespace and their controller's UID
//!   (a parent's children share one hash: a lookup walks them, and filing or dropping one of
//!   a Fermat 10000's Tuples compares its siblings' pointers, a few microseconds; a table of
//!   tables per parent would cost a table per Tuple for its two Numbers). It changes under the same
//!   lock as the first, so it never names an object the store no longer holds, and costs a
//!   slot per object instead of a copy of every child's name and parent's UID (about 140 B
//!   per object in the map of names it replaces).
//! - **A relist keeps one copy of what did not change.** kube-runtime fills a second table on
//!   the side while a relist runs (readers keep seeing the old one until the list is
//!   complete, as here) and holds two copies of every object until it swaps. Here an object
//!   the list brings as the store already holds it (the same UID and resourceVersion) is
//!   filed on the side as the copy already held, so after an API server restart the manager
//!   holds its objects once, not twice.
//!
//! Readers see one consistent pair of tables at a time, and [`Store::wait_until_ready`]
//! answers once the first complete list is in, as kube-runtime's does.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::{Arc, RwLock};

use hashbrown::HashTable;
use hashbrown::hash_table::Entry;
use kube::Resource;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use tokio::sync::watch;

use crate::kind::controller_uid;

/// A new, empty store of kind `K`, and the writer its watch fills it through.
pub fn store<K: Resource + Clone>() -> (Store<K>, Writer<K>) {
    let writer = Writer::default();
    (writer.as_reader(), writer)
}

/// The objects of one kind, as the watch last saw them (cheap to clone: every clone reads the
/// same objects).
pub struct Store<K> {
    shared: Arc<Shared<K>>,
}

impl<K> Clone for Store<K> {
    fn clone(&self) -> Self {
        Store {
            shared: self.shared.clone(),
        }
    }
}

struct Shared<K> {
    tables: RwLock<Tables<K>>,
    hasher: RandomState,
    /// True once the first complete list is in.
    ready: watch::Sender<bool>,
}

/// The same objects twice: by namespace and name, and (those that have a controller) by
/// namespace and controller UID.
struct Tables<K> {
    by_name: HashTable<Arc<K>>,
    by_owner: HashTable<Arc<K>>,
}

impl<K> Tables<K> {
    fn with_capacity(capacity: usize) -> Tables<K> {
        Tables {
            by_name: HashTable::with_capacity(capacity),
            by_owner: HashTable::with_capacity(capacity),
        }
    }
}

impl<K: Resource> Store<K> {
    /// The object `key` names (its namespace and name), if the store holds it.
    pub fn get(&self, key: &ObjectRef<K>) -> Option<Arc<K>> {
        self.find(key.namespace.as_deref().unwrap_or_default(), &key.name)
    }

    /// The object `name` in `namespace` (empty for a cluster-scoped object), if held.
    fn find(&self, namespace: &str, name: &str) -> Option<Arc<K>> {
        let hash = self.shared.hash(namespace, name);
        let tables = self.shared.read();
        let found = (tables.by_name).find(hash, |obj| name_of(obj.as_ref()) == (namespace, name));
        found.cloned()
    }

    /// The objects in `namespace` whose controller is `uid`.
    pub fn owned(&self, uid: &str, namespace: &str) -> Vec<Arc<K>> {
        let hash = self.shared.hash(namespace, uid);
        let tables = self.shared.read();
        (tables.by_owner.iter_hash(hash))
            .filter(|obj| owner_of(obj.as_ref()) == Some((namespace, uid)))
            .cloned()
            .collect()
    }

    /// Every object the store holds, in no particular order.
    pub fn state(&self) -> Vec<Arc<K>> {
        self.shared.read().by_name.iter().cloned().collect()
    }

    /// How many objects the store holds.
    pub fn len(&self) -> usize {
        self.shared.read().by_name.len()
    }

    /// Whether the store holds no object.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Once the store holds its first complete list.
    pub async fn wait_until_ready(&self) {
        let mut ready = self.shared.ready.subscribe();
        // The sender lives as long as this store: waiting cannot fail.
        let _ = ready.wait_for(|ready| *ready).await;
    }
}

impl<K: Resource> Shared<K> {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Tables<K>> {
        self.tables.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Tables<K>> {
        self.tables.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The hash of a namespace and a name, or of a namespace and a controller's UID.
    fn hash(&self, namespace: &str, name: &str) -> u64 {
        self.hasher.hash_one((namespace, name))
    }

    fn by_name(&self, obj: &K) -> u64 {
        let (namespace, name) = name_of(obj);
        self.hash(namespace, name)
    }

    fn by_owner(&self, obj: &K) -> Option<u64> {
        owner_of(obj).map(|(namespace, uid)| self.hash(namespace, uid))
    }

    /// `obj` filed in `tables`, in place of what they held under its name.
    fn file(&self, tables: &mut Tables<K>, obj: Arc<K>) {
        if let Some(hash) = self.by_owner(obj.as_ref()) {
            (tables.by_owner).insert_unique(hash, obj.clone(), |held| {
                self.by_owner(held.as_ref()).unwrap_or_default()
            });
        }
        let (namespace, name) = name_of(obj.as_ref());
        let entry = tables.by_name.entry(
            self.by_name(obj.as_ref()),
            |held| name_of(held.as_ref()) == (namespace, name),
            |held| self.by_name(held.as_ref()),
        );
        let replaced = match entry {
            Entry::Occupied(mut held) => Some(std::mem::replace(held.get_mut(), obj)),
            Entry::Vacant(place) => {
                place.insert(obj);
                None
            }
        };
        if let Some(replaced) = replaced {
            self.unfile_owner(tables, &replaced);
        }
    }

    /// The object named as `obj` is no longer in `tables`.
    fn remove(&self, tables: &mut Tables<K>, obj: &K) {
        let (namespace, name) = name_of(obj);
        let found = (tables.by_name).find_entry(self.by_name(obj), |held| {
            name_of(held.as_ref()) == (namespace, name)
        });
        if let Ok(entry) = found {
            let (held, _) = entry.remove();
            self.unfile_owner(tables, &held);
        }
    }

    /// `held`, just replaced or removed, leaves the owner index.
    fn unfile_owner(&self, tables: &mut Tables<K>, held: &Arc<K>) {
        let Some(hash) = self.by_owner(held.as_ref()) else {
            return;
        };
        if let Ok(entry) = tables.by_owner.find_entry(hash, |o| Arc::ptr_eq(o, held)) {
            entry.remove();
        }
    }
}

/// The namespace (empty for a cluster-scoped object) and the name of `obj`.
fn name_of<K: Resource>(obj: &K) -> (&str, &str) {
    let meta = obj.meta();
    let namespace = meta.namespace.as_deref().unwrap_or_default();
    (namespace, meta.name.as_deref().unwrap_or_default())
}

/// The namespace of `obj` and the UID of its controller, if it has one.
fn owner_of<K: Resource>(obj: &K) -> Option<(&str, &str)> {
    let namespace = obj.meta().namespace.as_deref().unwrap_or_default();
    controller_uid(obj).map(|uid| (namespace, uid))
}

/// Whether `held` is `obj` as it was: the same object (UID) at the same resourceVersion.
fn unchanged<K: Resource>(held: &K, obj: &K) -> bool {
    let (held, obj) = (held.meta(), obj.meta());
    held.uid == obj.uid
        && held.resource_version.is_some()
        && held.resource_version == obj.resource_version
}

/// What a kind's watch fills its store through: each event of kube-runtime's watcher applied
/// as kube-runtime's reflector applies it.
pub struct Writer<K> {
    store: Store<K>,
    /// The tables a relist in progress fills; swapped in once the list is complete.
    relist: Tables<K>,
}

impl<K> Default for Writer<K> {
    fn default() -> Self {
        let shared = Shared {
            tables: RwLock::new(Tables::with_capacity(0)),
            hasher: RandomState::new(),
            ready: watch::Sender::new(false),
        };
        Writer {
            store: Store {
                shared: Arc::new(shared),
            },
            relist: Tables::with_capacity(0),
        }
    }
}

impl<K: Resource + Clone> Writer<K> {
    /// The store this writer fills.
    pub fn as_reader(&self) -> Store<K> {
        self.store.clone()
    }

    /// The watch brought `event`.
    pub fn apply_watcher_event(&mut self, event: &watcher::Event<K>) {
        let shared = &self.store.shared;
        match event {
            watcher::Event::Apply(obj) => shared.file(&mut shared.write(), Arc::new(obj.clone())),
            watcher::Event::Delete(obj) => shared.remove(&mut shared.write(), obj),
            // A relist begins (again, for each attempt of a failing list): its tables start
            // empty, with room for what the store holds now.
            watcher::Event::Init => self.relist = Tables::with_capacity(self.store.len()),
            watcher::Event::InitApply(obj) => {
                let (namespace, name) = name_of(obj);
                let held =
                    (self.store.find(namespace, name)).filter(|held| unchanged(held.as_ref(), obj));
                let obj = held.unwrap_or_else(|| Arc::new(obj.clone()));
                shared.file(&mut self.relist, obj);
            }
            watcher::Event::InitDone => {
                let relisted = std::mem::replace(&mut self.relist, Tables::with_capacity(0));
                *shared.write() = relisted;
                shared.ready.send_replace(true);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{Number, NumberSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
    use watcher::Event::{Apply, Delete, Init, InitApply, InitDone};

    fn number(ns: &str, name: &str, version: &str) -> Number {
        let mut n = Number::new(name, NumberSpec { value: 1 });
        n.metadata.namespace = Some(ns.into());
        n.metadata.uid = Some(format!("uid-{name}"));
        n.metadata.resource_version = Some(version.into());
        n
    }

    fn key(ns: &str, name: &str) -> ObjectRef<Number> {
        ObjectRef::new(name).within(ns)
    }

    fn version(store: &Store<Number>, ns: &str, name: &str) -> Option<String> {
        store.get(&key(ns, name))?.metadata.resource_version.clone()
    }

    #[test]
    fn objects_are_found_by_namespace_and_name() {
        let (store, mut writer) = store::<Number>();
        for n in [
            number("a", "x", "1"),
            number("b", "x", "2"),
            number("a", "y", "3"),
        ] {
            writer.apply_watcher_event(&Apply(n));
        }
        assert_eq!(version(&store, "a", "x").as_deref(), Some("1"));
        assert_eq!(version(&store, "b", "x").as_deref(), Some("2"));
        assert_eq!(version(&store, "b", "y"), None);
        writer.apply_watcher_event(&Apply(number("a", "x", "4")));
        assert_eq!(version(&store, "a", "x").as_deref(), Some("4"));
        assert_eq!(store.len(), 3);
        writer.apply_watcher_event(&Delete(number("a", "x", "4")));
        assert_eq!(version(&store, "a", "x"), None);
        assert_eq!(store.len(), 2);
    }

    /// While a relist runs the store shows what it held; once complete, exactly what the list
    /// brought (an object it did not bring was deleted meanwhile).
    #[test]
    fn a_relist_replaces_the_store_once_complete() {
        let (store, mut writer) = store::<Number>();
        writer.apply_watcher_event(&Apply(number("a", "gone", "1")));
        writer.apply_watcher_event(&Init);
        writer.apply_watcher_event(&InitApply(number("a", "new", "2")));
        assert_eq!(version(&store, "a", "gone").as_deref(), Some("1"));
        assert_eq!(version(&store, "a", "new"), None);
        writer.apply_watcher_event(&InitDone);
        assert_eq!(version(&store, "a", "gone"), None);
        assert_eq!(version(&store, "a", "new").as_deref(), Some("2"));
    }

    /// What a relist brings unchanged is kept once: the copy the store held, not a second one.
    #[test]
    fn a_relist_keeps_the_copy_held_of_what_did_not_change() {
        let (store, mut writer) = store::<Number>();
        writer.apply_watcher_event(&Apply(number("a", "same", "1")));
        writer.apply_watcher_event(&Apply(number("a", "changed", "1")));
        let (same, changed) = (
            store.get(&key("a", "same")),
            store.get(&key("a", "changed")),
        );
        writer.apply_watcher_event(&Init);
        writer.apply_watcher_event(&InitApply(number("a", "same", "1")));
        writer.apply_watcher_event(&InitApply(number("a", "changed", "2")));
        writer.apply_watcher_event(&InitDone);
        let now = |name| store.get(&key("a", name));
        assert!(Arc::ptr_eq(
            &now("same").expect("kept"),
            &same.expect("held")
        ));
        assert!(!Arc::ptr_eq(
            &now("changed").expect("relisted"),
            &changed.expect("held")
        ));
        assert_eq!(version(&store, "a", "changed").as_deref(), Some("2"));
    }

    fn controlled(ns: &str, name: &str, version: &str, controller: Option<&str>) -> Number {
        let mut n = number(ns, name, version);
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

    fn owned(store: &Store<Number>, uid: &str, ns: &str) -> Vec<String> {
        let mut names: Vec<_> = (store.owned(uid, ns).iter())
            .filter_map(|o| o.metadata.name.clone())
            .collect();
        names.sort();
        names
    }

    /// A parent's children are found by its UID in its namespace, as the store holds them
    /// now: re-parented, orphaned or deleted, a child leaves its old parent's filing at once.
    #[test]
    fn children_are_found_by_their_controller_and_namespace() {
        let (store, mut writer) = store::<Number>();
        for n in [
            controlled("ns", "a", "1", Some("t1")),
            controlled("ns", "b", "1", Some("t1")),
            controlled("ns", "c", "1", Some("t2")),
            controlled("other", "a", "1", Some("t1")),
            controlled("ns", "free", "1", None),
        ] {
            writer.apply_watcher_event(&Apply(n));
        }
        assert_eq!(owned(&store, "t1", "ns"), ["a", "b"]);
        assert_eq!(owned(&store, "t2", "ns"), ["c"]);
        assert!(owned(&store, "t3", "ns").is_empty());
        assert_eq!(owned(&store, "t1", "other"), ["a"]);

        // Adopted by another controller, orphaned, changed, deleted.
        writer.apply_watcher_event(&Apply(controlled("ns", "b", "2", Some("t2"))));
        assert_eq!(owned(&store, "t1", "ns"), ["a"]);
        assert_eq!(owned(&store, "t2", "ns"), ["b", "c"]);
        writer.apply_watcher_event(&Apply(controlled("ns", "a", "2", None)));
        assert!(owned(&store, "t1", "ns").is_empty());
        writer.apply_watcher_event(&Apply(controlled("ns", "c", "2", Some("t2"))));
        let c = store.owned("t2", "ns");
        assert!(
            c.iter()
                .any(|c| c.metadata.resource_version.as_deref() == Some("2"))
        );
        assert_eq!(c.len(), 2, "one copy of c, the one held now");
        writer.apply_watcher_event(&Delete(controlled("ns", "c", "2", Some("t2"))));
        assert_eq!(owned(&store, "t2", "ns"), ["b"]);

        // A relist files everything anew.
        writer.apply_watcher_event(&Init);
        writer.apply_watcher_event(&InitApply(controlled("ns", "b", "2", Some("t2"))));
        writer.apply_watcher_event(&InitApply(controlled("ns", "d", "3", Some("t1"))));
        writer.apply_watcher_event(&InitDone);
        assert_eq!(owned(&store, "t2", "ns"), ["b"]);
        assert_eq!(owned(&store, "t1", "ns"), ["d"]);
        assert!(owned(&store, "t1", "other").is_empty());
    }

    #[tokio::test]
    async fn the_store_is_ready_once_its_first_list_is_in() {
        let (store, mut writer) = store::<Number>();
        let waiting = tokio::spawn({
            let store = store.clone();
            async move { store.wait_until_ready().await }
        });
        writer.apply_watcher_event(&Init);
        writer.apply_watcher_event(&InitApply(number("a", "x", "1")));
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "ready before the list was complete");
        writer.apply_watcher_event(&InitDone);
        tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
            .await
            .expect("ready after InitDone")
            .expect("the waiting task ends");
        assert_eq!(store.len(), 1);
    }
}
