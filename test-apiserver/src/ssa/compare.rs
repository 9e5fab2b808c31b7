//! structured-merge-diff's comparison of two versions of an object (`typed.Compare`): the
//! paths a write added, removed or modified. A map, struct or merged list that was absent
//! and is there now is *added* itself, besides what it holds; that is why an Update's
//! managedFields name it with `".": {}`. Atomic values (scalars, atomic lists, atomic
//! structs and maps, lists whose items lack their keys) are one leaf: *modified* when their
//! value changes.

use super::paths::*;
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// What a write changed, as structured-merge-diff's `Comparison` names it.
#[derive(Debug, Default)]
pub(super) struct Comparison {
    pub(super) added: BTreeSet<Path>,
    pub(super) removed: BTreeSet<Path>,
    pub(super) modified: BTreeSet<Path>,
}

impl Comparison {
    /// Whether the write set `p` (added it or changed its value): what takes a field from
    /// its other owners.
    pub(super) fn set(&self, p: &Path) -> bool {
        self.added.contains(p) || self.modified.contains(p)
    }

    /// The paths the write set, restricted to what `scope` reaches: what the writer owns.
    pub(super) fn set_in(&self, scope: Scope) -> impl Iterator<Item = &Path> {
        self.added
            .iter()
            .chain(&self.modified)
            .filter(move |p| in_scope(p, scope))
    }
}

/// Whether `p` lies in the part of the object `scope` reaches.
fn in_scope(p: &Path, scope: Scope) -> bool {
    let status = p.first() == Some(&field("status"));
    match scope {
        Scope::Status => status,
        Scope::Main { exclude_status } => !(exclude_status && status),
    }
}

/// A value as the comparison sees it.
enum Node<'a> {
    Absent,
    Leaf(&'a Value),
    Fields(&'a Map<String, Value>),
    Items(&'a [Value]),
}

fn node<'a>(v: Option<&'a Value>, shape: Shape) -> Node<'a> {
    match v {
        None => Node::Absent,
        Some(Value::Object(m)) if !shape.is_atomic_map() => Node::Fields(m),
        Some(Value::Array(items)) if keyed(items, &shape.list_kind()) => Node::Items(items),
        Some(v) => Node::Leaf(v),
    }
}

/// Compares two versions of an object: `old` is `None` for nothing at all. `apiVersion`,
/// `kind` and the metadata the server owns (`META_SKIP`) are nobody's.
pub(super) fn compare(old: Option<&Value>, new: &Value, shape: Shape) -> Comparison {
    let mut c = Comparison::default();
    let empty = Map::new();
    let fields = |v| object_or(v, &empty);
    let (o, n) = (fields(old), fields(Some(new)));
    for k in keys(o, n) {
        if k == "apiVersion" || k == "kind" {
            continue;
        }
        if k == "metadata" {
            let (om, nm) = (fields(o.get(k)), fields(n.get(k)));
            for mk in keys(om, nm).filter(|mk| !META_SKIP.contains(&mk.as_str())) {
                let mut path = vec![field(k), field(mk)];
                let child = shape.top(k).field(mk);
                walk(om.get(mk), nm.get(mk), child, &mut path, &mut c);
            }
            continue;
        }
        walk(
            o.get(k),
            n.get(k),
            shape.top(k),
            &mut vec![field(k)],
            &mut c,
        );
    }
    c
}

fn object_or<'a>(v: Option<&'a Value>, empty: &'a Map<String, Value>) -> &'a Map<String, Value> {
    v.and_then(Value::as_object).unwrap_or(empty)
}

/// The keys of two maps, each once, in order.
fn keys<'a>(
    a: &'a Map<String, Value>,
    b: &'a Map<String, Value>,
) -> impl Iterator<Item = &'a String> {
    let all: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    all.into_iter()
}

fn walk(
    old: Option<&Value>,
    new: Option<&Value>,
    shape: Shape,
    path: &mut Path,
    c: &mut Comparison,
) {
    let (o, n) = (node(old, shape), node(new, shape));
    match (&o, &n) {
        (Node::Absent, Node::Absent) => return,
        (Node::Leaf(a), Node::Leaf(b)) => {
            if a != b {
                c.modified.insert(path.clone());
            }
            return;
        }
        (Node::Absent, _) => {
            c.added.insert(path.clone());
        }
        (_, Node::Absent) => {
            c.removed.insert(path.clone());
        }
        (Node::Fields(_), Node::Fields(_)) | (Node::Items(_), Node::Items(_)) => {}
        // A value of another kind (a map where a scalar was): the path itself changed.
        _ => {
            c.modified.insert(path.clone());
        }
    }
    let empty = Map::new();
    let (of, nf) = (fields_of(&o), fields_of(&n));
    if of.is_some() || nf.is_some() {
        for k in keys(of.unwrap_or(&empty), nf.unwrap_or(&empty)) {
            path.push(field(k));
            let (ov, nv) = (of.and_then(|m| m.get(k)), nf.and_then(|m| m.get(k)));
            walk(ov, nv, shape.field(k), path, c);
            path.pop();
        }
    }
    walk_items(items_of(&o), items_of(&n), shape, path, c);
}

fn fields_of<'a>(n: &Node<'a>) -> Option<&'a Map<String, Value>> {
    match n {
        Node::Fields(m) => Some(m),
        _ => None,
    }
}

fn items_of<'a>(n: &Node<'a>) -> &'a [Value] {
    match n {
        Node::Items(items) => items,
        _ => &[],
    }
}

/// The items of a merged list, matched by their identity (`k:` keys, `v:` values).
fn walk_items(old: &[Value], new: &[Value], shape: Shape, path: &mut Path, c: &mut Comparison) {
    let kind = shape.list_kind();
    let find = |items: &'_ [Value], id: &Elem| -> Option<usize> {
        items
            .iter()
            .position(|i| item_elem(i, &kind).as_ref() == Some(id))
    };
    let ids: BTreeSet<Elem> = old
        .iter()
        .chain(new)
        .filter_map(|i| item_elem(i, &kind))
        .collect();
    for id in ids {
        let ov = find(old, &id).map(|i| &old[i]);
        let nv = find(new, &id).map(|i| &new[i]);
        path.push(id);
        walk(ov, nv, shape.items(), path, c);
        path.pop();
    }
}

/// What a create is compared with: the kind's zero value, as kube-apiserver's field manager
/// compares a new object with `scope.Creater.New(kind)`. A custom resource's is empty, so
/// its `spec` is added (`"f:spec": {".": {}, …}`). A built-in kind's is its Go struct with
/// nothing set, which holds the structs that are no pointers (`spec`, `status`, a pod
/// template and its `metadata` and `spec`, a Deployment's `strategy`) and, as `null`, the
/// lists without `omitempty` (a PodSpec's `containers`): a create adds what is below them,
/// not them.
pub(super) fn zero(shape: Shape) -> Value {
    if !matches!(shape, Shape::BuiltIn(_)) {
        return Value::Object(Map::new());
    }
    let template = serde_json::json!({"metadata": {}, "spec": {"containers": null}});
    serde_json::json!({
        "spec": {
            "containers": null,
            "template": template,
            "strategy": {},
            "updateStrategy": {},
            "jobTemplate": {"metadata": {}, "spec": {"template": template}},
        },
        "status": {},
    })
}
