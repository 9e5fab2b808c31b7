//! What one live frame can reuse from the one before: a Fermat of 20000 has 30000 objects,
//! and between two frames only a few of them change. Rebuilding every node (names, plans,
//! summaries: a dozen allocations each) made a frame cost hundreds of milliseconds.
//!
//! The caches hand out `Arc`s, and the reflector keeps an unchanged object's `Arc` from one
//! snapshot to the next, so "unchanged" is pointer equality: no resourceVersion to trust,
//! no comparison of specs. Entries hold the `Arc`s they were built from, so an address
//! cannot be reused by another object while it is compared. A memo never changes what
//! [`super::build`] returns, only how much it recomputes (see the tests).

use std::sync::Arc;

use math_controller::kind::Desired;

use super::Node;

/// A map for the per-frame lookups by name and UID. The standard hasher (SipHash, built to
/// resist crafted keys) was a fifth of a frame; here the keys are a namespace's object names,
/// which a person able to create objects there could slow down their own view with at most.
/// FxHash (rustc's hash, from the `rustc-hash` crate) is a few instructions per 8 bytes.
pub(super) type Map<K, V> = rustc_hash::FxHashMap<K, V>;

/// The subtrees of the last build, keyed by UID.
#[derive(Default)]
pub struct Memo {
    build: u64,
    /// Per kind of parent, and for Tuples whether their Numbers were descended into.
    pub(super) fermats: Entries<
        math_controller::api::Fermat,
        math_controller::api::TupleSpec,
        math_controller::api::Tuple,
    >,
    pub(super) tuples: [Entries<
        math_controller::api::Tuple,
        math_controller::api::NumberSpec,
        math_controller::api::Number,
    >; 2],
}

pub(super) type Entries<P, S, C> = Map<String, Entry<P, S, C>>;

/// The children a node was built from; see [`inputs`].
pub(super) type Inputs<C> = Vec<Option<Arc<C>>>;

/// One parent: what it wants (fixed while the parent object is the same), the nodes of its
/// missing children (which depend on nothing else), and its last node with the children
/// it was built from.
pub(super) struct Entry<P, S, C> {
    parent: Arc<P>,
    pub desired: Arc<[Desired<S>]>,
    pub missing: Vec<Option<Arc<Node>>>,
    built: Option<(Inputs<C>, Arc<Node>)>,
    used: u64,
}

impl Memo {
    pub fn new() -> Memo {
        Memo::default()
    }

    /// A new build starts: entries not used by it are dropped at [`Memo::end`].
    pub(super) fn begin(&mut self) -> u64 {
        self.build += 1;
        self.build
    }

    pub(super) fn end(&mut self) {
        let build = self.build;
        self.fermats.retain(|_, e| e.used == build);
        for tuples in &mut self.tuples {
            tuples.retain(|_, e| e.used == build);
        }
    }

    /// How many parents are remembered; for tests.
    pub fn len(&self) -> usize {
        self.fermats.len() + self.tuples.iter().map(Map::len).sum::<usize>()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The parent's entry, started afresh when the parent object changed.
pub(super) fn entry<'m, P, S, C>(
    entries: &'m mut Entries<P, S, C>,
    build: u64,
    uid: &str,
    parent: &Arc<P>,
    desired: impl FnOnce(&P) -> Vec<Desired<S>>,
) -> &'m mut Entry<P, S, C> {
    let fresh = match entries.get(uid) {
        Some(entry) => !Arc::ptr_eq(&entry.parent, parent),
        None => true,
    };
    if fresh {
        entries.insert(uid.to_string(), Entry::new(parent, desired(parent)));
    }
    let entry = entries.get_mut(uid).expect("inserted above");
    entry.used = build;
    entry
}

impl<P, S, C> Entry<P, S, C> {
    fn new(parent: &Arc<P>, desired: Vec<Desired<S>>) -> Entry<P, S, C> {
        Entry {
            parent: parent.clone(),
            missing: vec![None; desired.len()],
            desired: desired.into(),
            built: None,
            used: 0,
        }
    }

    /// The last node, if it was built from these very children.
    pub fn reuse(&self, children: &[Option<Arc<C>>]) -> Option<Arc<Node>> {
        let (from, node) = self.built.as_ref()?;
        let same = |a: &Option<Arc<C>>, b: &Option<Arc<C>>| match (a, b) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        let unchanged =
            from.len() == children.len() && from.iter().zip(children).all(|(a, b)| same(a, b));
        unchanged.then(|| node.clone())
    }

    pub fn keep(&mut self, children: Inputs<C>, node: Arc<Node>) {
        self.built = Some((children, node));
    }
}

/// The inputs of a parent's node, comparable from one build to the next: the children found
/// by the desired names (in that order), then the owned ones in a stable order (the
/// reflector's snapshot order is not).
pub(super) fn inputs<C>(found: &[Option<Arc<C>>], owned: &[Arc<C>]) -> Inputs<C> {
    let mut owned: Vec<&Arc<C>> = owned.iter().collect();
    owned.sort_unstable_by_key(|c| Arc::as_ptr(c) as *const () as usize);
    let mut all = found.to_vec();
    all.extend(owned.into_iter().map(|c| Some(c.clone())));
    all
}
