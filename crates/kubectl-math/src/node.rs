//! The tree's vocabulary: kinds, targets, the listed objects, Ready, the problems a tree
//! marks, and the nodes themselves.

use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
use kube::Resource;

use math_controller::api::{Fermat, Number, READY, Tuple};

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

/// The tree's kind of each API type: a table the compiler checks (a kind's name parsed back
/// would need a fallback).
pub(crate) trait InTree {
    const NODE: Kind;
}

impl InTree for Fermat {
    const NODE: Kind = Kind::Fermat;
}

impl InTree for Tuple {
    const NODE: Kind = Kind::Tuple;
}

impl InTree for Number {
    const NODE: Kind = Kind::Number;
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
    pub(crate) fn from_conditions(conditions: &[Condition]) -> Ready {
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
    /// Shared with the live view's memo, which reuses unchanged subtrees from frame to frame.
    pub children: Vec<Arc<Node>>,
    /// This node and everything below it are Ready, with nothing wrong.
    pub healthy: bool,
}

impl Node {
    pub fn uid(&self) -> Option<&str> {
        self.object.as_ref().and_then(Object::uid)
    }

    pub(crate) fn new(kind: Kind, object: Option<Object>, namespace: &str, name: &str) -> Node {
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

    /// Put a problem its parent found first, before the node's own.
    pub(crate) fn add_problem(&mut self, problem: Problem) {
        self.problems.insert(0, problem);
        self.healthy = false;
    }

    pub(crate) fn finish(mut self) -> Node {
        self.healthy = self.ready == Ready::True
            && self.problems.is_empty()
            && self.children.iter().all(|c| c.healthy);
        self
    }

    /// How many nodes this tree holds, itself included.
    pub fn count(&self) -> usize {
        1 + self.children.iter().map(|c| c.count()).sum::<usize>()
    }
}

/// Why a tree could not be built.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{} \"{name}\" not found in namespace \"{namespace}\"", kind.as_str().to_lowercase())]
pub struct NotFound {
    pub kind: Kind,
    pub name: String,
    pub namespace: String,
}

/// The name a person types: `fermat/fermat-13`.
pub fn display_name(kind: Kind, name: &str) -> String {
    format!("{}/{name}", kind.as_str())
}
