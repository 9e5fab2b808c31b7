//! `kubectl math tree`: the ownership tree of Fermats, Tuples and Numbers with their statuses,
//! and what is wrong in it.
//!
//! What is here is pure: [`build`] turns listed objects into [`Node`]s. What a parent wants
//! and how its children compare with that are the manager's own decisions
//! ([`Parent::desired_children`], [`plan::plan`]), so the tree marks exactly what the
//! controllers would act on. Drawing is in [`render`], the cluster at the edges in [`load`]
//! and [`watch`]. The plugin uses only the manager crate's `api`, `kind` and `reconcile::plan`
//! (and, in its tests, the controllers' status decisions); `main.rs` is its thin `main`. It is
//! a crate of its own so that the manager links no terminal code (crossterm).
//!
//! - `node.rs`: the tree's vocabulary: kinds, targets, Ready, problems, nodes.
//! - `summary.rs`: each status in a few words.
//! - `render.rs`: aligned lines, folding, colours, JSON (pure).
//! - `live.rs`: what the live view remembers: UIDs, Ready flips, highlights (pure).
//! - `memo.rs`: what a live frame reuses from the last one: unchanged Tuples' subtrees.
//! - `pace.rs`: when the next live frame is due: max(100 ms, 3 × the last frame's cost) (pure).
//! - `load.rs`: kubeconfig, lists, one-line errors.
//! - `watch.rs`: `--watch`: watches, caches, frames, the terminal.
//! - `cli.rs`: the plugin's command line.
//! - `tests.rs`, `tests/`: the tree, the live view and the memo against hand-made objects.

pub mod cli;
pub mod live;
pub mod load;
pub mod memo;
mod node;
pub mod pace;
pub mod render;
pub mod summary;
pub mod watch;

pub use node::{Kind, Node, NotFound, Object, Objects, Problem, Ready, Target, display_name};

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;

use math_controller::api::{Fermat, Number, Tuple};
use math_controller::kind::{Child, Desired, Kind as _, Parent};
use math_controller::reconcile::plan;
use memo::{Map, Memo};
use node::InTree;
use summary::{fermat_summary, number_summary, number_wanted, tuple_summary, tuple_wanted};

/// The objects of a tree looked up by name and by controller, within one namespace.
struct Index<'a, 'm> {
    tuples: Map<(&'a str, &'a str), &'a Arc<Tuple>>,
    numbers: Map<(&'a str, &'a str), &'a Arc<Number>>,
    tuples_by_owner: Map<&'a str, Vec<Arc<Tuple>>>,
    numbers_by_owner: Map<&'a str, Vec<Arc<Number>>>,
    /// Borrowed one step at a time: a Fermat's entry is let go before its Tuples' are taken.
    memo: RefCell<&'m mut Memo>,
    build: u64,
}

fn key<K: Resource>(obj: &K) -> (&str, &str) {
    let meta = obj.meta();
    (
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default(),
    )
}

/// Children by the UID of their controller, kept only within the controller's namespace
/// (the manager's rule: owner UID, in the parent's namespace).
fn by_owner<K: Resource>(objects: &[Arc<K>]) -> Map<&str, Vec<Arc<K>>> {
    let mut map: Map<&str, Vec<Arc<K>>> = Map::default();
    for obj in objects {
        if let Some(uid) = math_controller::kind::controller_uid(obj.as_ref()) {
            map.entry(uid).or_default().push(obj.clone());
        }
    }
    map
}

/// What [`diagnose`] needs from a parent's memo entry, taken out of it for the time of one
/// parent (the memo is needed again for the children).
struct Wants<S> {
    desired: Arc<[Desired<S>]>,
    missing: Vec<Option<Arc<Node>>>,
}

impl<S> Wants<S> {
    fn take<P, C>(entry: &mut memo::Entry<P, S, C>) -> Wants<S> {
        let desired = entry.desired.clone();
        let mut missing = std::mem::take(&mut entry.missing);
        // Only if the same parent were being built twice at once (it is not): start afresh.
        if missing.len() != desired.len() {
            missing = vec![None; desired.len()];
        }
        Wants { desired, missing }
    }
}

impl<'a, 'm> Index<'a, 'm> {
    fn new(objects: &'a Objects, memo: &'m mut Memo) -> Index<'a, 'm> {
        let build = memo.begin();
        Index {
            tuples: objects
                .tuples
                .iter()
                .map(|t| (key(t.as_ref()), t))
                .collect(),
            numbers: objects
                .numbers
                .iter()
                .map(|n| (key(n.as_ref()), n))
                .collect(),
            tuples_by_owner: by_owner(&objects.tuples),
            numbers_by_owner: by_owner(&objects.numbers),
            memo: RefCell::new(memo),
            build,
        }
    }

    fn fermat(&self, f: &Arc<Fermat>) -> Node {
        let (ns, name) = key(f.as_ref());
        let mut node = Node::new(Kind::Fermat, Some(Object::Fermat(f.clone())), ns, name);
        let status = f.status.as_ref();
        node.summary = fermat_summary(f);
        node.ready = Ready::from_conditions(status.map(|s| s.conditions.as_slice()).unwrap_or(&[]));
        node.problems = own_problems(f.meta(), status.and_then(|s| s.observed_generation));
        let uid = f.meta().uid.as_deref().unwrap_or_default();
        let mut wants = {
            let mut memo = self.memo.borrow_mut();
            let entry = memo::entry(&mut memo.fermats, self.build, uid, f, |f| {
                f.desired_children()
            });
            Wants::take(entry)
        };
        let found: Vec<Option<Arc<Tuple>>> = (wants.desired.iter())
            .map(|d| {
                self.tuples
                    .get(&(ns, d.name.as_str()))
                    .map(|t| (*t).clone())
            })
            .collect();
        node.children = diagnose(
            f.meta(),
            &mut wants,
            &found,
            self.owned(&self.tuples_by_owner, f.meta()),
            |t, descend| self.tuple(t, descend),
            tuple_wanted,
        );
        let mut memo = self.memo.borrow_mut();
        if let Some(entry) = memo.fermats.get_mut(uid) {
            entry.missing = wants.missing;
        }
        node.finish()
    }

    /// A Tuple's node, reused from the last build when neither it nor its Numbers changed.
    fn tuple(&self, t: &Arc<Tuple>, descend: bool) -> Arc<Node> {
        let (ns, name) = key(t.as_ref());
        let uid = t.meta().uid.as_deref().unwrap_or_default();
        let owned = match descend {
            true => self.owned(&self.numbers_by_owner, t.meta()),
            false => Vec::new(),
        };
        let (mut wants, found, inputs) = {
            let mut memo = self.memo.borrow_mut();
            let entries = &mut memo.tuples[descend as usize];
            let entry = memo::entry(entries, self.build, uid, t, Tuple::desired_children);
            let found: Vec<Option<Arc<Number>>> = (entry.desired.iter())
                .map(|d| {
                    self.numbers
                        .get(&(ns, d.name.as_str()))
                        .map(|n| (*n).clone())
                })
                .collect();
            let inputs = memo::inputs(&found, &owned);
            if let Some(node) = entry.reuse(&inputs) {
                return node;
            }
            (Wants::take(entry), found, inputs)
        };
        let mut node = Node::new(Kind::Tuple, Some(Object::Tuple(t.clone())), ns, name);
        let status = t.status.as_ref();
        node.summary = tuple_summary(t);
        node.ready = Ready::from_conditions(status.map(|s| s.conditions.as_slice()).unwrap_or(&[]));
        node.problems = own_problems(t.meta(), status.and_then(|s| s.observed_generation));
        if descend {
            node.children = diagnose(
                t.meta(),
                &mut wants,
                &found,
                owned,
                |n, _| Arc::new(number_node(n)),
                number_wanted,
            );
        }
        let node = Arc::new(node.finish());
        let mut memo = self.memo.borrow_mut();
        if let Some(entry) = memo.tuples[descend as usize].get_mut(uid) {
            entry.missing = wants.missing;
            entry.keep(inputs, node.clone());
        }
        node
    }

    fn owned<K: Resource>(
        &self,
        by_owner: &Map<&str, Vec<Arc<K>>>,
        parent: &ObjectMeta,
    ) -> Vec<Arc<K>> {
        let uid = parent.uid.as_deref().unwrap_or_default();
        let ns = parent.namespace.as_deref();
        by_owner
            .get(uid)
            .map(|list| {
                let same_ns = |c: &&Arc<K>| c.meta().namespace.as_deref() == ns;
                list.iter().filter(same_ns).cloned().collect()
            })
            .unwrap_or_default()
    }
}

fn number_node(n: &Arc<Number>) -> Node {
    let (ns, name) = key(n.as_ref());
    let mut node = Node::new(Kind::Number, Some(Object::Number(n.clone())), ns, name);
    let status = n.status.as_ref();
    node.summary = number_summary(n);
    node.ready = Ready::from_conditions(status.map(|s| s.conditions.as_slice()).unwrap_or(&[]));
    node.problems = own_problems(n.meta(), status.and_then(|s| s.observed_generation));
    node.finish()
}

/// What is wrong with an object by itself, whoever its parent.
fn own_problems(meta: &ObjectMeta, observed: Option<i64>) -> Vec<Problem> {
    let mut problems = Vec::new();
    if meta.deletion_timestamp.is_some() {
        problems.push(Problem::Deleting);
    }
    if observed.is_some() && observed != meta.generation {
        problems.push(Problem::StaleStatus {
            observed,
            generation: meta.generation,
        });
    }
    problems
}

/// The children of one parent, in the order the parent wants them, then those it owns and
/// no longer wants: each marked with what [`plan::plan`] (the manager's own comparison)
/// finds wrong with it. A child controlled by someone else is shown without its own
/// children: they belong to its real owner's tree. `found` is what exists under each
/// desired name; a missing child's node depends on its desired entry alone, so it is kept
/// in `wants` for the next build.
fn diagnose<C: Child + InTree>(
    parent: &ObjectMeta,
    wants: &mut Wants<C::Spec>,
    found: &[Option<Arc<C>>],
    owned: Vec<Arc<C>>,
    node: impl Fn(&Arc<C>, bool) -> Arc<Node>,
    wanted: impl Fn(&C::Spec) -> String,
) -> Vec<Arc<Node>> {
    let uid = parent.uid.as_deref().unwrap_or_default();
    let ns = parent.namespace.as_deref().unwrap_or_default();
    let plan = plan_children(uid, &wants.desired, found, &owned);
    let problems = problems_by_name(&plan);
    let mut nodes = Vec::with_capacity(wants.desired.len() + plan.delete.len());
    for (i, want) in wants.desired.iter().enumerate() {
        let problem = problems.get(want.name.as_str()).cloned();
        nodes.push(match &found[i] {
            Some(child) => found_node(child, problem, &node),
            // Missing, or a name too long to ever exist: neither depends on the cluster.
            None => wants.missing[i]
                .get_or_insert_with(|| missing_node::<C>(ns, want, problem, &wanted))
                .clone(),
        });
    }
    nodes.extend(unwanted_nodes(&plan.delete, &node));
    nodes
}

/// The manager's own plan for these children, so the tree marks exactly what the
/// controller would act on; with nothing in flight (the plugin writes nothing).
fn plan_children<C: Child>(
    uid: &str,
    desired: &[Desired<C::Spec>],
    found: &[Option<Arc<C>>],
    owned: &[Arc<C>],
) -> plan::Plan<C> {
    let by_name: HashMap<String, Arc<C>> = (desired.iter().zip(found))
        .filter_map(|(d, c)| c.as_ref().map(|c| (d.name.clone(), c.clone())))
        .collect();
    plan::plan(uid, desired.to_vec(), &by_name, owned, &HashSet::new())
}

/// What the plan finds wrong, by child name: the plan lists children by what is to be done
/// with them, the tree marks each child where it is drawn.
fn problems_by_name<C: Child>(plan: &plan::Plan<C>) -> Map<&str, Problem> {
    let mut problems: Map<&str, Problem> = Map::default();
    for name in &plan.invalid_names {
        problems.insert(name, Problem::NameTooLong);
    }
    for c in &plan.conflicts {
        let owner = c.owner.clone();
        problems.insert(&c.name, Problem::ControlledByOther { owner });
    }
    for (child, spec) in &plan.correct {
        let found = compact_json(child.child_spec());
        let wanted = compact_json(spec);
        problems.insert(
            key(child.as_ref()).1,
            Problem::SpecDiffers { found, wanted },
        );
    }
    for (child, _) in &plan.adopt {
        problems.insert(key(child.as_ref()).1, Problem::NoController);
    }
    problems
}

/// A desired child that exists, with the problem its parent finds. One controlled by someone
/// else is drawn without its children: they belong to its real owner's tree.
fn found_node<C>(
    child: &Arc<C>,
    problem: Option<Problem>,
    node: impl Fn(&Arc<C>, bool) -> Arc<Node>,
) -> Arc<Node> {
    let foreign = matches!(problem, Some(Problem::ControlledByOther { .. }));
    let mut n = node(child, !foreign);
    if let Some(problem) = problem {
        Arc::make_mut(&mut n).add_problem(problem);
    }
    n
}

/// A desired child that does not exist: what its parent wants of it, and why it is not there
/// (missing, or a name Kubernetes would refuse).
fn missing_node<C: Child + InTree>(
    ns: &str,
    want: &Desired<C::Spec>,
    problem: Option<Problem>,
    wanted: impl Fn(&C::Spec) -> String,
) -> Arc<Node> {
    let mut n = Node::new(C::NODE, None, ns, &want.name);
    n.summary = format!("wanted: {}", wanted(&want.spec));
    n.problems.extend(problem.or(Some(Problem::Missing)));
    Arc::new(n.finish())
}

/// The children the parent owns and no longer wants, by name, after the wanted ones.
fn unwanted_nodes<C: Child>(
    delete: &[Arc<C>],
    node: impl Fn(&Arc<C>, bool) -> Arc<Node>,
) -> Vec<Arc<Node>> {
    let mut unwanted: Vec<&Arc<C>> = delete.iter().collect();
    unwanted.sort_by(|a, b| key(a.as_ref()).1.cmp(key(b.as_ref()).1));
    (unwanted.into_iter())
        .map(|child| {
            let mut n = node(child, true);
            Arc::make_mut(&mut n).add_problem(Problem::Unwanted);
            n
        })
        .collect()
}

fn compact_json<S: serde::Serialize>(spec: &S) -> String {
    serde_json::to_string(spec).unwrap_or_else(|_| "?".to_string())
}

/// The trees to show: for [`Target::One`], that object's (looked for in `namespace`); for
/// [`Target::All`], every root, sorted by namespace, kind and name.
pub fn build(objects: &Objects, target: &Target, namespace: &str) -> Result<Vec<Node>, NotFound> {
    build_with(objects, target, namespace, &mut Memo::new())
}

/// [`build`], reusing what did not change since the last build with the same `memo` (the
/// live view builds a tree per frame).
pub fn build_with(
    objects: &Objects,
    target: &Target,
    namespace: &str,
    memo: &mut Memo,
) -> Result<Vec<Node>, NotFound> {
    let roots = roots(&Index::new(objects, memo), objects, target, namespace);
    memo.end();
    roots
}

fn roots(
    index: &Index,
    objects: &Objects,
    target: &Target,
    namespace: &str,
) -> Result<Vec<Node>, NotFound> {
    match target {
        Target::One { kind, name } => (one_root(index, objects, *kind, name, namespace))
            .map(|n| vec![n])
            .ok_or_else(|| NotFound {
                kind: *kind,
                name: name.clone(),
                namespace: namespace.to_string(),
            }),
        Target::All => Ok(all_roots(index, objects)),
    }
}

/// The tree of the object of `kind` named `name` in `namespace`, if it was listed.
fn one_root(
    index: &Index,
    objects: &Objects,
    kind: Kind,
    name: &str,
    namespace: &str,
) -> Option<Node> {
    let wanted = |meta: &ObjectMeta| {
        meta.name.as_deref() == Some(name) && meta.namespace.as_deref() == Some(namespace)
    };
    match kind {
        Kind::Fermat => (objects.fermats.iter())
            .find(|f| wanted(f.meta()))
            .map(|f| index.fermat(f)),
        Kind::Tuple => (objects.tuples.iter())
            .find(|t| wanted(t.meta()))
            .map(|t| Arc::unwrap_or_clone(index.tuple(t, true))),
        Kind::Number => (objects.numbers.iter())
            .find(|n| wanted(n.meta()))
            .map(number_node),
    }
}

/// Every tree: each Fermat's, and each Tuple's and Number's that no listed parent controls
/// (an owner of another kind, one already gone, or none), sorted by namespace, kind and name.
fn all_roots(index: &Index, objects: &Objects) -> Vec<Node> {
    let fermat_uids = uids(&objects.fermats);
    let tuple_uids = uids(&objects.tuples);
    let mut roots: Vec<Node> = objects.fermats.iter().map(|f| index.fermat(f)).collect();
    roots.extend(
        (objects.tuples.iter())
            .filter(|t| is_root(t.as_ref(), &fermat_uids))
            .map(|t| Arc::unwrap_or_clone(index.tuple(t, true))),
    );
    roots.extend(
        (objects.numbers.iter())
            .filter(|n| is_root(n.as_ref(), &tuple_uids))
            .map(number_node),
    );
    roots.sort_by(|a, b| (&a.namespace, a.kind, &a.name).cmp(&(&b.namespace, b.kind, &b.name)));
    roots
}

/// The UIDs of the listed parents of one kind.
fn uids<K: Resource>(objects: &[Arc<K>]) -> HashSet<&str> {
    (objects.iter())
        .filter_map(|o| o.meta().uid.as_deref())
        .collect()
}

/// Whether an object heads a tree of its own: no controller among `parents`.
fn is_root<K: Resource>(obj: &K, parents: &HashSet<&str>) -> bool {
    math_controller::kind::controller_uid(obj).is_none_or(|uid| !parents.contains(uid))
}

/// Whether the object's kind has a Ready condition that is True for its generation; what the
/// live view compares to notice a flip to Ready.
pub fn is_ready(object: &Object) -> bool {
    match object {
        Object::Fermat(f) => f.is_ready(),
        Object::Tuple(t) => t.is_ready(),
        Object::Number(n) => n.is_ready(),
    }
}

#[cfg(test)]
mod tests;
