//! Field paths as FieldsV1 names them, and the shape of a type that decides how its lists
//! merge: the vocabulary both the managedFields bookkeeping and apply speak.

use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// One step of a field path, as FieldsV1 spells them (`f:`, `k:`, `v:`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Elem {
    Field(String),
    /// An item of a map list: its key fields as canonical JSON (names sorted).
    Key(String),
    /// An item of a set list: its value as JSON.
    Value(String),
}

pub type Path = Vec<Elem>;

pub(super) fn field(name: &str) -> Elem {
    Elem::Field(name.to_string())
}

/// How a list merges: structured-merge-diff's element relationship.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum ListKind {
    Atomic,
    Set,
    Map(Vec<String>),
}

/// Where in a type a value sits, which decides how its lists merge: a CRD's structural
/// schema, nothing known (lists atomic, as for `x-kubernetes-preserve-unknown-fields`), or
/// a built-in kind (and every object's `metadata`), whose Go tags k8s-openapi's schemas do
/// not carry; those lists are named by field below.
#[derive(Debug, Clone, Copy)]
pub enum Shape<'a> {
    Schema(&'a Value),
    Untyped,
    BuiltIn(BuiltInList),
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BuiltInList {
    Atomic,
    Set,
    Map(&'static str),
    /// A map list whose items are atomic structs, each one leaf keyed by its key field:
    /// `ownerReferences` by `uid` (OwnerReference is `+structType=atomic`; kube-apiserver
    /// v1.36.2 records `"k:{\"uid\":\"…\"}": {}` with nothing below it).
    MapOfAtomic(&'static str),
    /// Not a list: an atomic struct or map (`+structType=atomic`, `+mapType=atomic`), owned
    /// and replaced whole, as one leaf.
    AtomicMap,
}

/// The lists of the built-in types kube-apiserver merges item by item (`+listType=map|set`,
/// or `+patchStrategy=merge` with a `patchMergeKey`, which its schema converter reads the
/// same way); every other built-in list is atomic.
pub(super) fn built_in_list(name: &str) -> BuiltInList {
    match name {
        "finalizers" => BuiltInList::Set,
        "ownerReferences" => BuiltInList::MapOfAtomic("uid"),
        n if ATOMIC_STRUCTS.contains(&n) => BuiltInList::AtomicMap,
        _ => match crate::store::merge_key(name) {
            Some(key) => BuiltInList::Map(key),
            None => BuiltInList::Atomic,
        },
    }
}

/// Fields of the built-in kinds whose type is an atomic struct or map in v1.36's schema,
/// by the field's name (as lists are named above): ObjectReference (an Event's `regarding`,
/// `related`, `involvedObject`), LabelSelector (`selector` of the workloads; a Service's
/// `selector` is an atomic map), a PodSpec's `nodeSelector`, and the key and field
/// selectors of an environment variable's `valueFrom`. (OwnerReference, atomic too, is only
/// ever an item of `ownerReferences`: [`BuiltInList::MapOfAtomic`].)
const ATOMIC_STRUCTS: &[&str] = &[
    "regarding",
    "related",
    "involvedObject",
    "selector",
    "nodeSelector",
    "fieldRef",
    "resourceFieldRef",
    "configMapKeyRef",
    "secretKeyRef",
];

impl<'a> Shape<'a> {
    /// Whether a map here is one leaf: an atomic struct or map (a CRD's
    /// `x-kubernetes-map-type: atomic`).
    pub(super) fn is_atomic_map(self) -> bool {
        match self {
            Shape::Schema(s) => {
                s.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic")
            }
            Shape::Untyped => false,
            Shape::BuiltIn(b) => b == BuiltInList::AtomicMap,
        }
    }

    /// The shape of a whole object of a kind with this schema (`None`: a built-in kind).
    pub fn root(schema: Option<&'a Value>) -> Shape<'a> {
        schema.map_or(Shape::BuiltIn(BuiltInList::Atomic), Shape::Schema)
    }

    /// The shape of a top-level field: `metadata` is ObjectMeta for every kind.
    pub(super) fn top(self, name: &str) -> Shape<'a> {
        if name == "metadata" {
            Shape::BuiltIn(BuiltInList::Atomic)
        } else {
            self.field(name)
        }
    }

    pub(super) fn field(self, name: &str) -> Shape<'a> {
        match self {
            Shape::Schema(s) => s
                .get("properties")
                .and_then(|p| p.get(name))
                .or_else(|| s.get("additionalProperties").filter(|a| a.is_object()))
                .map_or(Shape::Untyped, Shape::Schema),
            Shape::Untyped => Shape::Untyped,
            Shape::BuiltIn(_) => Shape::BuiltIn(built_in_list(name)),
        }
    }

    pub(super) fn items(self) -> Shape<'a> {
        match self {
            Shape::Schema(s) => s.get("items").map_or(Shape::Untyped, Shape::Schema),
            Shape::Untyped => Shape::Untyped,
            Shape::BuiltIn(BuiltInList::MapOfAtomic(_)) => Shape::BuiltIn(BuiltInList::AtomicMap),
            Shape::BuiltIn(_) => Shape::BuiltIn(BuiltInList::Atomic),
        }
    }

    pub(super) fn list_kind(self) -> ListKind {
        match self {
            Shape::Schema(s) => match s.get("x-kubernetes-list-type").and_then(Value::as_str) {
                Some("set") => ListKind::Set,
                Some("map") => ListKind::Map(
                    s.get("x-kubernetes-list-map-keys")
                        .and_then(Value::as_array)
                        .map(|ks| ks.iter().filter_map(Value::as_str).map(String::from))
                        .into_iter()
                        .flatten()
                        .collect(),
                ),
                _ => ListKind::Atomic,
            },
            Shape::Untyped => ListKind::Atomic,
            Shape::BuiltIn(BuiltInList::Set) => ListKind::Set,
            Shape::BuiltIn(BuiltInList::Map(k) | BuiltInList::MapOfAtomic(k)) => {
                ListKind::Map(vec![k.to_string()])
            }
            Shape::BuiltIn(BuiltInList::Atomic | BuiltInList::AtomicMap) => ListKind::Atomic,
        }
    }
}

/// The identity of a list item: `k:` of its key fields, `v:` of its value; `None` for an
/// atomic list, or an item without its keys (structured-merge-diff refuses those; here the
/// list is then treated as atomic).
pub(super) fn item_elem(item: &Value, kind: &ListKind) -> Option<Elem> {
    match kind {
        ListKind::Atomic => None,
        ListKind::Set => Some(Elem::Value(item.to_string())),
        ListKind::Map(keys) if keys.is_empty() => None,
        ListKind::Map(keys) => {
            let mut sorted: Vec<&String> = keys.iter().collect();
            sorted.sort();
            let parts: Option<Vec<String>> = sorted
                .iter()
                .map(|k| {
                    item.get(k.as_str())
                        .map(|v| format!("{}:{}", Value::String(k.to_string()), v))
                })
                .collect();
            Some(Elem::Key(format!("{{{}}}", parts?.join(","))))
        }
    }
}

/// Whether every item of `list` has an identity, so that the list merges item by item.
pub(super) fn keyed(list: &[Value], kind: &ListKind) -> bool {
    *kind != ListKind::Atomic && list.iter().all(|i| item_elem(i, kind).is_some())
}

pub(super) fn item_matches(item: &Value, elem: &Elem) -> bool {
    match elem {
        Elem::Field(_) => false,
        Elem::Value(v) => serde_json::from_str::<Value>(v).is_ok_and(|v| v == *item),
        Elem::Key(k) => serde_json::from_str::<Map<String, Value>>(k)
            .is_ok_and(|key| key.iter().all(|(name, v)| item.get(name) == Some(v))),
    }
}

/// A path as kube-apiserver names it in a conflict: `.spec.ports[port=80,protocol="TCP"].name`.
pub fn render_path(p: &Path) -> String {
    p.iter()
        .map(|e| match e {
            Elem::Field(f) => format!(".{f}"),
            Elem::Value(v) => format!("[={v}]"),
            Elem::Key(k) => {
                let key: Map<String, Value> = serde_json::from_str(k).unwrap_or_default();
                let parts: Vec<String> = key.iter().map(|(n, v)| format!("{n}={v}")).collect();
                format!("[{}]", parts.join(","))
            }
        })
        .collect()
}

/// Which part of an object a write may touch.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scope {
    /// The main resource; `exclude_status` when a status subresource exists.
    Main {
        exclude_status: bool,
    },
    Status,
}

pub(super) const META_SKIP: &[&str] = &[
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "managedFields",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "selfLink",
    "generateName",
];

/// The owned paths under `v`: leaves, and each item of a merged list (its membership)
/// besides the fields inside it. An empty merged list owns nothing.
pub(super) fn collect(v: &Value, shape: Shape, prefix: &mut Path, out: &mut BTreeSet<Path>) {
    match v {
        Value::Object(m) if !m.is_empty() && !shape.is_atomic_map() => {
            for (k, child) in m {
                prefix.push(field(k));
                collect(child, shape.field(k), prefix, out);
                prefix.pop();
            }
        }
        Value::Array(items) if keyed(items, &shape.list_kind()) => {
            let kind = shape.list_kind();
            for item in items {
                let Some(elem) = item_elem(item, &kind) else {
                    continue;
                };
                prefix.push(elem);
                out.insert(prefix.clone());
                if matches!(kind, ListKind::Map(_)) {
                    collect(item, shape.items(), prefix, out);
                }
                prefix.pop();
            }
        }
        Value::Null => {}
        _ => {
            out.insert(prefix.clone());
        }
    }
}

/// The owned paths of an object, restricted to the scope.
pub fn leaf_paths(obj: &Value, scope: Scope, shape: Shape) -> BTreeSet<Path> {
    let mut out = BTreeSet::new();
    let Some(m) = obj.as_object() else {
        return out;
    };
    for (k, v) in m {
        let keep = match scope {
            Scope::Status => k == "status",
            Scope::Main { exclude_status } => {
                k != "apiVersion" && k != "kind" && !(exclude_status && k == "status")
            }
        };
        if !keep {
            continue;
        }
        if k == "metadata" {
            if let Some(mm) = v.as_object() {
                for (mk, mv) in mm {
                    if META_SKIP.contains(&mk.as_str()) {
                        continue;
                    }
                    let mut prefix = vec![field(k), field(mk)];
                    collect(mv, shape.top(k).field(mk), &mut prefix, &mut out);
                }
            }
            continue;
        }
        let mut prefix = vec![field(k)];
        collect(v, shape.top(k), &mut prefix, &mut out);
    }
    out
}

/// Removes the field or item at `p`, and the objects and lists it leaves empty (but not
/// `metadata`).
pub(super) fn remove(v: &mut Value, p: &[Elem]) {
    let Some((first, rest)) = p.split_first() else {
        return;
    };
    if rest.is_empty() {
        match (first, v) {
            (Elem::Field(f), Value::Object(m)) => {
                m.remove(f);
            }
            (e, Value::Array(items)) => items.retain(|i| !item_matches(i, e)),
            _ => {}
        }
        return;
    }
    match (first, v) {
        (Elem::Field(f), Value::Object(m)) => {
            if let Some(child) = m.get_mut(f) {
                remove(child, rest);
                if is_empty_container(child) && f != "metadata" {
                    m.remove(f);
                }
            }
        }
        (e, Value::Array(items)) => {
            if let Some(child) = items.iter_mut().find(|i| item_matches(i, e)) {
                remove(child, rest);
            }
        }
        _ => {}
    }
}

pub(super) fn is_empty_container(v: &Value) -> bool {
    v.as_object().is_some_and(Map::is_empty) || v.as_array().is_some_and(Vec::is_empty)
}
