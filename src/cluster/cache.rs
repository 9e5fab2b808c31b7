//! One kind's cache: its store (the objects the reconciles read, found by name and by the UID
//! of their controller, [`crate::cluster::store`]) and the objects of the kind that do not
//! decode, kept together by the kind's one watch ([`crate::cluster::watches`]). A parent's
//! reconcile is handed the cache of its child kind, found by type among the manager's
//! [`Caches`], so the compiler, not a lookup by kind name, says which cache goes with which
//! kind.
//!
//! Finding children by their controller's UID is what controller-runtime users build with a
//! field indexer on the owner. Without it a parent scans the whole cache for its children on
//! every reconcile, and a Fermat of 10000 (15000 children, thousands of reconciles) spent most
//! of its CPU comparing ownerReferences. The store keeps that index beside its objects, under
//! the same lock: an object leaves its old controller's filing the moment the store holds it
//! orphaned, re-parented or deleted.

use std::any::Any;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::cluster::store::Store;
use crate::cluster::undecodable::Undecodable;
use crate::error::{Error, Result};
use crate::kind::Kind;

/// One kind's cache: its objects as the watch last saw them, and those it could not decode.
pub struct Cache<K: Kind> {
    /// The objects, as the watch last saw them.
    pub store: Store<K>,
    /// The objects the watch could not decode: not in the store, named for their parents.
    pub undecodable: Arc<Undecodable<K>>,
}

impl<K: Kind> Clone for Cache<K> {
    fn clone(&self) -> Self {
        Cache {
            store: self.store.clone(),
            undecodable: self.undecodable.clone(),
        }
    }
}

impl<K: Kind> Cache<K> {
    /// The cache behind `store`, with no undecodable object.
    pub fn new(store: Store<K>) -> Self {
        Cache {
            store,
            undecodable: Arc::default(),
        }
    }

    /// The cached objects in `namespace` whose controller is `uid`.
    pub fn owned(&self, uid: &str, namespace: &str) -> Vec<Arc<K>> {
        self.store.owned(uid, namespace)
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
        Box::pin(self.store.wait_until_ready())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Number;
    use crate::cluster::store::Writer;

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
