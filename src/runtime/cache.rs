//! One kind's cache: the reflector store the reconciles read, and the index of its objects by
//! their controller's UID, kept together by the kind's one watch. A parent's reconcile is
//! handed the cache of its child kind (`&ctx.numbers` for a Tuple), so the compiler, not a
//! lookup by kind name, says which index goes with which store.

use std::sync::Arc;

use kube::runtime::reflector::Store;

use crate::kind::Kind;
use crate::runtime::owner_index::OwnerIndex;

pub struct Cache<K: Kind> {
    /// The objects, as the watch last saw them.
    pub store: Store<K>,
    /// Their names by the UID of their controller (empty for a kind nobody controls).
    pub owners: Arc<OwnerIndex>,
}

impl<K: Kind> Clone for Cache<K> {
    fn clone(&self) -> Self {
        Cache {
            store: self.store.clone(),
            owners: self.owners.clone(),
        }
    }
}

impl<K: Kind> Cache<K> {
    /// The cache behind `store`, with an empty owner index.
    pub fn new(store: Store<K>) -> Self {
        Cache {
            store,
            owners: OwnerIndex::new(),
        }
    }

    /// The cached objects in `namespace` whose controller is `uid`.
    pub fn owned(&self, uid: &str, namespace: &str) -> Vec<Arc<K>> {
        self.owners.owned(&self.store, uid, namespace)
    }
}
