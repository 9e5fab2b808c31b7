//! `kubectl math tree`: the ownership tree of Fermats, Tuples and Numbers with their statuses,
//! and what is wrong in it.
//!
//! This module is pure: [`build`] turns listed objects into [`Node`]s. What a parent wants
//! and how its children compare with that are the manager's own decisions
//! ([`fermat::desired_tuples`], [`tuple::desired_numbers`], [`children::plan`]), so the tree
//! marks exactly what the controllers would act on. Drawing is in [`render`], the cluster
//! at the edges in [`load`] and [`watch`].

pub mod cli;
pub mod live;
pub mod load;
pub mod render;
pub mod watch;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
use kube::Resource;

use crate::api::{Fermat, Number, NumberSpec, READY, Tuple, TupleSpec};
use crate::children::{self, Child, Desired};
use crate::{fermat, tuple};

/// The three kinds, in the order a tree nests them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Fermat,
    Tuple,
    Number,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Fermat => "Fermat",
            Kind::Tuple => "Tuple",
            Kind::Number => "Number",
        }
    }

    /// What kubectl accepts for the kind: singular, plural, short name, any case.
    pub fn parse(word: &str) -> Option<Kind> {
        let word = word.to_ascii_lowercase();
        let word = word.strip_suffix(".math.example.com").unwrap_or(&word);
        match word {
            "fermat" | "fermats" | "fer" => Some(Kind::Fermat),
            "tuple" | "tuples" | "tup" => Some(Kind::Tuple),
            "number" | "numbers" | "num" => Some(Kind::Number),
            _ => None,
        }
    }
}

/// Which trees to show.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// Every Fermat, and every Tuple and Number whose controller is not among the listed
    /// parents (standalone ones, or ones whose owner is gone).
    All,
    /// One object and what it owns.
    One { kind: Kind, name: String },
}

/// Everything listed from the cluster, in one namespace or all of them.
#[derive(Clone, Debug, Default)]
pub struct Objects {
    pub fermats: Vec<Arc<Fermat>>,
    pub tuples: Vec<Arc<Tuple>>,
    pub numbers: Vec<Arc<Number>>,
}

impl Objects {
    pub fn len(&self) -> usize {
        self.fermats.len() + self.tuples.len() + self.numbers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One listed object.
#[derive(Clone, Debug)]
pub enum Object {
    Fermat(Arc<Fermat>),
    Tuple(Arc<Tuple>),
    Number(Arc<Number>),
}

impl Object {
    pub fn meta(&self) -> &ObjectMeta {
        match self {
            Object::Fermat(o) => o.meta(),
            Object::Tuple(o) => o.meta(),
            Object::Number(o) => o.meta(),
        }
    }

    pub fn uid(&self) -> Option<&str> {
        self.meta().uid.as_deref()
    }
}

/// The object's `Ready` condition as it stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ready {
    True,
    False {
        reason: String,
        message: String,
    },
    /// No status, or no Ready condition yet.
    Unknown,
}

impl Ready {
    fn from_conditions(conditions: &[Condition]) -> Ready {
        match conditions.iter().find(|c| c.type_ == READY) {
            Some(c) if c.status == "True" => Ready::True,
            Some(c) => Ready::False {
                reason: c.reason.clone(),
                message: c.message.clone(),
            },
            None => Ready::Unknown,
        }
    }

    pub fn as_str(&self) -> &'static str {
        match self {
            Ready::True => "True",
            Ready::False { .. } => "False",
            Ready::Unknown => "-",
        }
    }
}

/// Something the controllers would act on, or that a person must.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    /// The parent wants this child and it does not exist.
    Missing,
    /// An object of the desired name is controlled by another owner; the parent leaves it
    /// alone and is stuck until someone removes it.
    ControlledByOther { owner: String },
    /// An object of the desired name has no controller: the parent will adopt it.
    NoController,
    /// The child's spec is not what the parent wants: the parent will put it back.
    SpecDiffers { found: String, wanted: String },
    /// Controlled by this parent, but no longer wanted: the parent will delete it.
    Unwanted,
    /// `<parent>-<suffix>` is longer than Kubernetes allows: it can never be created.
    NameTooLong,
    /// The status describes an older generation of the spec than the current one.
    StaleStatus {
        observed: Option<i64>,
        generation: Option<i64>,
    },
    /// Being deleted (deletionTimestamp set).
    Deleting,
}

impl Problem {
    /// A stable name for scripts (`-o json`).
    pub fn code(&self) -> &'static str {
        match self {
            Problem::Missing => "Missing",
            Problem::ControlledByOther { .. } => "ControlledByOther",
            Problem::NoController => "NoController",
            Problem::SpecDiffers { .. } => "SpecDiffers",
            Problem::Unwanted => "Unwanted",
            Problem::NameTooLong => "NameTooLong",
            Problem::StaleStatus { .. } => "StaleStatus",
            Problem::Deleting => "Deleting",
        }
    }

    /// What a learner reads next to the object.
    pub fn message(&self) -> String {
        let generation = |g: &Option<i64>| g.map_or("none".to_string(), |g| g.to_string());
        match self {
            Problem::Missing => "missing".to_string(),
            Problem::ControlledByOther { owner } => {
                format!("controlled by {owner}, not by this parent")
            }
            Problem::NoController => "no controller: the parent will adopt it".to_string(),
            Problem::SpecDiffers { found, wanted } => {
                format!("spec {found}, the parent wants {wanted}")
            }
            Problem::Unwanted => "not wanted by its parent: will be deleted".to_string(),
            Problem::NameTooLong => "name longer than 253 characters: cannot exist".to_string(),
            Problem::StaleStatus {
                observed,
                generation: current,
            } => format!(
                "status is for generation {}, spec is generation {}",
                generation(observed),
                generation(current)
            ),
            Problem::Deleting => "being deleted".to_string(),
        }
    }
}

/// One object of the tree (or one that should be there and is not).
#[derive(Clone, Debug)]
pub struct Node {
    pub kind: Kind,
    pub namespace: String,
    pub name: String,
    /// `None`: the object does not exist (see [`Problem::Missing`]).
    pub object: Option<Object>,
    pub ready: Ready,
    /// The status that matters, in a few words (for a missing child: what is wanted).
    pub summary: String,
    pub problems: Vec<Problem>,
    pub children: Vec<Node>,
    /// This node and everything below it are Ready, with nothing wrong.
    pub healthy: bool,
}

impl Node {
    pub fn uid(&self) -> Option<&str> {
        self.object.as_ref().and_then(Object::uid)
    }

    fn new(kind: Kind, object: Option<Object>, namespace: &str, name: &str) -> Node {
        Node {
            kind,
            namespace: namespace.to_string(),
            name: name.to_string(),
            object,
            ready: Ready::Unknown,
            summary: String::new(),
            problems: Vec::new(),
            children: Vec::new(),
            healthy: false,
        }
    }

    fn finish(mut self) -> Node {
        self.healthy = self.ready == Ready::True
            && self.problems.is_empty()
            && self.children.iter().all(|c| c.healthy);
        self
    }

    /// How many nodes this tree holds, itself included.
    pub fn count(&self) -> usize {
        1 + self.children.iter().map(Node::count).sum::<usize>()
    }
}

/// The objects of a tree looked up by name and by controller, within one namespace.
struct Index<'a> {
    tuples: HashMap<(&'a str, &'a str), &'a Arc<Tuple>>,
    numbers: HashMap<(&'a str, &'a str), &'a Arc<Number>>,
    tuples_by_owner: HashMap<&'a str, Vec<Arc<Tuple>>>,
    numbers_by_owner: HashMap<&'a str, Vec<Arc<Number>>>,
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
fn by_owner<K: Resource>(objects: &[Arc<K>]) -> HashMap<&str, Vec<Arc<K>>> {
    let mut map: HashMap<&str, Vec<Arc<K>>> = HashMap::new();
    for obj in objects {
        if let Some(uid) = children::controller_uid(obj.as_ref()) {
            map.entry(uid).or_default().push(obj.clone());
        }
    }
    map
}

impl<'a> Index<'a> {
    fn new(objects: &'a Objects) -> Index<'a> {
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
        }
    }

    fn fermat(&self, f: &Arc<Fermat>) -> Node {
        let (ns, name) = key(f.as_ref());
        let mut node = Node::new(Kind::Fermat, Some(Object::Fermat(f.clone())), ns, name);
        let status = f.status.as_ref();
        node.summary = fermat_summary(f);
        node.ready = Ready::from_conditions(status.map(|s| s.conditions.as_slice()).unwrap_or(&[]));
        node.problems = own_problems(f.meta(), status.and_then(|s| s.observed_generation));
        node.children = diagnose(
            f.meta(),
            fermat::desired_tuples(f),
            |name| self.tuples.get(&(ns, name)).copied(),
            self.owned(&self.tuples_by_owner, f.meta()),
            |t, descend| self.tuple(t, descend),
            tuple_wanted,
        );
        node.finish()
    }

    fn tuple(&self, t: &Arc<Tuple>, descend: bool) -> Node {
        let (ns, name) = key(t.as_ref());
        let mut node = Node::new(Kind::Tuple, Some(Object::Tuple(t.clone())), ns, name);
        let status = t.status.as_ref();
        node.summary = tuple_summary(t);
        node.ready = Ready::from_conditions(status.map(|s| s.conditions.as_slice()).unwrap_or(&[]));
        node.problems = own_problems(t.meta(), status.and_then(|s| s.observed_generation));
        if descend {
            node.children = diagnose(
                t.meta(),
                tuple::desired_numbers(t),
                |name| self.numbers.get(&(ns, name)).copied(),
                self.owned(&self.numbers_by_owner, t.meta()),
                |n, _| number_node(n),
                number_wanted,
            );
        }
        node.finish()
    }

    fn owned<K: Resource>(
        &self,
        by_owner: &HashMap<&str, Vec<Arc<K>>>,
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
/// no longer wants: each marked with what [`children::plan`] (the manager's own comparison)
/// finds wrong with it. A child controlled by someone else is shown without its own
/// children: they belong to its real owner's tree.
fn diagnose<'a, C: Child>(
    parent: &ObjectMeta,
    desired: Vec<Desired<C::Spec>>,
    find: impl Fn(&str) -> Option<&'a Arc<C>>,
    owned: Vec<Arc<C>>,
    node: impl Fn(&Arc<C>, bool) -> Node,
    wanted: impl Fn(&C::Spec) -> String,
) -> Vec<Node> {
    let uid = parent.uid.as_deref().unwrap_or_default();
    let ns = parent.namespace.as_deref().unwrap_or_default();
    let found: HashMap<String, Arc<C>> = desired
        .iter()
        .filter_map(|d| find(&d.name).map(|c| (d.name.clone(), c.clone())))
        .collect();
    let plan = children::plan(uid, desired.clone(), &found, &owned, &HashSet::new());

    let mut problems: HashMap<&str, Problem> = HashMap::new();
    for d in &plan.create {
        problems.insert(&d.name, Problem::Missing);
    }
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

    let mut nodes = Vec::with_capacity(desired.len() + plan.delete.len());
    for want in &desired {
        let problem = problems.get(want.name.as_str()).cloned();
        let node = match (found.get(&want.name), problem) {
            (Some(child), problem) => {
                let foreign = matches!(problem, Some(Problem::ControlledByOther { .. }));
                let mut n = node(child, !foreign);
                n.problems.splice(0..0, problem);
                n.finish()
            }
            (None, problem) => {
                let mut n = Node::new(child_kind::<C>(), None, ns, &want.name);
                n.summary = format!("wanted: {}", wanted(&want.spec));
                n.problems.extend(problem.or(Some(Problem::Missing)));
                n.finish()
            }
        };
        nodes.push(node);
    }
    let mut unwanted: Vec<&Arc<C>> = plan.delete.iter().collect();
    unwanted.sort_by(|a, b| key(a.as_ref()).1.cmp(key(b.as_ref()).1));
    for child in unwanted {
        let mut n = node(child, true);
        n.problems.insert(0, Problem::Unwanted);
        nodes.push(n.finish());
    }
    nodes
}

fn child_kind<C: Child>() -> Kind {
    Kind::parse(C::KIND).unwrap_or(Kind::Number)
}

fn compact_json<S: serde::Serialize>(spec: &S) -> String {
    serde_json::to_string(spec).unwrap_or_else(|_| "?".to_string())
}

fn tuple_wanted(spec: &TupleSpec) -> String {
    list(&spec.numbers)
}

fn number_wanted(spec: &NumberSpec) -> String {
    format!("value {}", spec.value)
}

/// `[1, 4]`, shortened for long Tuples.
fn list(numbers: &[i64]) -> String {
    const SHOWN: usize = 8;
    let mut items: Vec<String> = numbers.iter().take(SHOWN).map(i64::to_string).collect();
    if numbers.len() > SHOWN {
        items.push(format!("… {} items", numbers.len()));
    }
    format!("[{}]", items.join(", "))
}

/// `15 → FizzBuzz`, `16 → 16, square`, `2 → 2, prime`; the value alone before the status.
pub fn number_summary(n: &Number) -> String {
    let value = n.spec.value;
    let Some(s) = n.status.as_ref().filter(|s| s.fizz_buzz.is_some()) else {
        return value.to_string();
    };
    let mut text = format!("{value} → {}", s.fizz_buzz.as_deref().unwrap_or("?"));
    if s.is_square == Some(true) {
        text.push_str(", square");
    }
    if s.is_prime == Some(true) {
        text.push_str(", prime");
    }
    text
}

/// `[1, 4] → all squares`, `[2, 3] → not all squares`, `[2, 3] (1/2 Numbers)` while waiting.
pub fn tuple_summary(t: &Tuple) -> String {
    let mut text = list(&t.spec.numbers);
    let Some(s) = t.status.as_ref() else {
        return text;
    };
    match s.all_squares {
        Some(true) => text.push_str(" → all squares"),
        Some(false) => text.push_str(" → not all squares"),
        None => {
            if let (Some(ready), Some(desired)) = (s.ready_numbers, s.desired_numbers) {
                text.push_str(&format!(" ({ready}/{desired} Numbers)"));
            }
        }
    }
    text
}

/// `13 (prime, 1 mod 4) → 2²+3²`, `19 (prime) → no two squares`, `13 (3/6 Tuples)` while waiting.
pub fn fermat_summary(f: &Fermat) -> String {
    let mut text = f.spec.number.to_string();
    let Some(s) = f.status.as_ref() else {
        return text;
    };
    let mut facts = Vec::new();
    if s.is_prime == Some(true) {
        facts.push("prime".to_string());
    }
    if s.one_mod_four == Some(true) {
        facts.push("1 mod 4".to_string());
    }
    if s.decompositions.is_none()
        && let (Some(ready), Some(desired)) = (s.ready_tuples, s.desired_tuples)
    {
        facts.push(format!("{ready}/{desired} Tuples"));
    }
    if !facts.is_empty() {
        text.push_str(&format!(" ({})", facts.join(", ")));
    }
    match s.decompositions.as_deref() {
        Some([]) => text.push_str(" → no two squares"),
        Some(found) => text.push_str(&format!(" → {}", found.join(", "))),
        None => {}
    }
    text
}

/// Why a tree could not be built.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{} \"{name}\" not found in namespace \"{namespace}\"", kind.as_str().to_lowercase())]
pub struct NotFound {
    pub kind: Kind,
    pub name: String,
    pub namespace: String,
}

/// The trees to show: for [`Target::One`], that object's (looked for in `namespace`); for
/// [`Target::All`], every root, sorted by namespace, kind and name.
pub fn build(objects: &Objects, target: &Target, namespace: &str) -> Result<Vec<Node>, NotFound> {
    let index = Index::new(objects);
    match target {
        Target::One { kind, name } => {
            let wanted = |meta: &ObjectMeta| {
                meta.name.as_deref() == Some(name) && meta.namespace.as_deref() == Some(namespace)
            };
            let node = match kind {
                Kind::Fermat => (objects.fermats.iter())
                    .find(|f| wanted(f.meta()))
                    .map(|f| index.fermat(f)),
                Kind::Tuple => (objects.tuples.iter())
                    .find(|t| wanted(t.meta()))
                    .map(|t| index.tuple(t, true)),
                Kind::Number => (objects.numbers.iter())
                    .find(|n| wanted(n.meta()))
                    .map(number_node),
            };
            node.map(|n| vec![n]).ok_or_else(|| NotFound {
                kind: *kind,
                name: name.clone(),
                namespace: namespace.to_string(),
            })
        }
        Target::All => {
            let fermat_uids: HashSet<&str> = objects
                .fermats
                .iter()
                .filter_map(|f| f.meta().uid.as_deref())
                .collect();
            let tuple_uids: HashSet<&str> = objects
                .tuples
                .iter()
                .filter_map(|t| t.meta().uid.as_deref())
                .collect();
            let root = |controller: Option<&str>, parents: &HashSet<&str>| {
                controller.is_none_or(|uid| !parents.contains(uid))
            };
            let mut roots: Vec<Node> = objects.fermats.iter().map(|f| index.fermat(f)).collect();
            roots.extend(
                (objects.tuples.iter())
                    .filter(|t| root(children::controller_uid(t.as_ref()), &fermat_uids))
                    .map(|t| index.tuple(t, true)),
            );
            roots.extend(
                (objects.numbers.iter())
                    .filter(|n| root(children::controller_uid(n.as_ref()), &tuple_uids))
                    .map(number_node),
            );
            roots.sort_by(|a, b| {
                (&a.namespace, a.kind, &a.name).cmp(&(&b.namespace, b.kind, &b.name))
            });
            Ok(roots)
        }
    }
}

/// Whether the object's kind has a Ready condition that is True for its generation; what the
/// live view compares to notice a flip to Ready.
pub fn is_ready(object: &Object) -> bool {
    match object {
        Object::Fermat(f) => f.status.as_ref().is_some_and(|s| {
            crate::status::is_ready_for(&s.conditions, s.observed_generation, f.meta().generation)
        }),
        Object::Tuple(t) => t.is_ready(),
        Object::Number(n) => n.is_ready(),
    }
}

/// The name a person types: `fermat/fermat-13`.
pub fn display_name(kind: Kind, name: &str) -> String {
    format!("{}/{name}", kind.as_str())
}

#[cfg(test)]
mod tests;
