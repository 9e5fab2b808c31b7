//! managedFields bookkeeping and server-side apply, after structured-merge-diff: ownership is
//! tracked per leaf field, per item of `x-kubernetes-list-type: map` lists (by their
//! `x-kubernetes-list-map-keys`) and per value of `set` lists; other lists are atomic.

use crate::util::now;
use serde_json::{Map, Value, json};
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

fn field(name: &str) -> Elem {
    Elem::Field(name.to_string())
}

/// How a list merges: structured-merge-diff's element relationship.
#[derive(Debug, Clone, PartialEq)]
enum ListKind {
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
}

/// The lists of the built-in types kube-apiserver merges item by item (`+listType=map|set`,
/// or `+patchStrategy=merge` with a `patchMergeKey`, which its schema converter reads the
/// same way); every other built-in list is atomic.
fn built_in_list(name: &str) -> BuiltInList {
    match name {
        "finalizers" => BuiltInList::Set,
        _ => match crate::store::merge_key(name) {
            Some(key) => BuiltInList::Map(key),
            None => BuiltInList::Atomic,
        },
    }
}

impl<'a> Shape<'a> {
    /// The shape of a whole object of a kind with this schema (`None`: a built-in kind).
    pub fn root(schema: Option<&'a Value>) -> Shape<'a> {
        schema.map_or(Shape::BuiltIn(BuiltInList::Atomic), Shape::Schema)
    }

    /// The shape of a top-level field: `metadata` is ObjectMeta for every kind.
    fn top(self, name: &str) -> Shape<'a> {
        if name == "metadata" {
            Shape::BuiltIn(BuiltInList::Atomic)
        } else {
            self.field(name)
        }
    }

    fn field(self, name: &str) -> Shape<'a> {
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

    fn items(self) -> Shape<'a> {
        match self {
            Shape::Schema(s) => s.get("items").map_or(Shape::Untyped, Shape::Schema),
            Shape::Untyped => Shape::Untyped,
            Shape::BuiltIn(_) => Shape::BuiltIn(BuiltInList::Atomic),
        }
    }

    fn list_kind(self) -> ListKind {
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
            Shape::BuiltIn(BuiltInList::Map(k)) => ListKind::Map(vec![k.to_string()]),
            Shape::BuiltIn(BuiltInList::Atomic) => ListKind::Atomic,
        }
    }
}

/// The identity of a list item: `k:` of its key fields, `v:` of its value; `None` for an
/// atomic list, or an item without its keys (structured-merge-diff refuses those; here the
/// list is then treated as atomic).
fn item_elem(item: &Value, kind: &ListKind) -> Option<Elem> {
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
fn keyed(list: &[Value], kind: &ListKind) -> bool {
    *kind != ListKind::Atomic && list.iter().all(|i| item_elem(i, kind).is_some())
}

fn item_matches(item: &Value, elem: &Elem) -> bool {
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

const META_SKIP: &[&str] = &[
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
fn collect(v: &Value, shape: Shape, prefix: &mut Path, out: &mut BTreeSet<Path>) {
    match v {
        Value::Object(m) if !m.is_empty() => {
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

/// An item path stands for the item's presence; its value is its fields' business.
fn is_membership(p: &Path) -> bool {
    matches!(p.last(), Some(Elem::Key(_)))
}

fn step<'a>(v: &'a Value, e: &Elem) -> Option<&'a Value> {
    match e {
        Elem::Field(f) => v.get(f),
        _ => v.as_array()?.iter().find(|i| item_matches(i, e)),
    }
}

fn get<'a>(v: &'a Value, p: &Path) -> Option<&'a Value> {
    p.iter().try_fold(v, step)
}

/// Removes the field or item at `p`, and the objects and lists it leaves empty (but not
/// `metadata`).
fn remove(v: &mut Value, p: &[Elem]) {
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

fn is_empty_container(v: &Value) -> bool {
    v.as_object().is_some_and(Map::is_empty) || v.as_array().is_some_and(Vec::is_empty)
}

/// Deep merge for apply: objects merge, merged lists merge item by item, everything else
/// replaces, null removes.
pub fn merge(target: &mut Value, patch: &Value, shape: Shape) {
    merge_at(target, patch, shape, true)
}

fn merge_at(target: &mut Value, patch: &Value, shape: Shape, top: bool) {
    match (target.as_object_mut(), patch.as_object()) {
        (Some(t), Some(p)) => {
            for (k, v) in p {
                let child = if top { shape.top(k) } else { shape.field(k) };
                if v.is_null() {
                    t.remove(k);
                    continue;
                }
                match t.get_mut(k) {
                    Some(tv) if tv.is_object() && v.is_object() => merge_at(tv, v, child, false),
                    Some(Value::Array(lhs)) if v.is_array() => merge_list(lhs, v, child),
                    _ => {
                        t.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        _ => *target = patch.clone(),
    }
}

/// structured-merge-diff's list merge: the live items in their order, each item the
/// configuration also holds merged in its place, preceded by the configuration's new
/// items that come before it there; the configuration's remaining items last.
fn merge_list(lhs: &mut Vec<Value>, patch: &Value, shape: Shape) {
    let kind = shape.list_kind();
    let rhs = patch.as_array().map(Vec::as_slice).unwrap_or_default();
    if !keyed(lhs, &kind) || !keyed(rhs, &kind) {
        *lhs = rhs.to_vec();
        return;
    }
    let live = std::mem::take(lhs);
    let ids: Vec<Option<Elem>> = rhs.iter().map(|i| item_elem(i, &kind)).collect();
    let merged_with_live = |j: usize| {
        let mut base = live
            .iter()
            .find(|l| item_elem(l, &kind) == ids[j])
            .cloned()
            .unwrap_or_else(|| json!({}));
        merge_at(&mut base, &rhs[j], shape.items(), false);
        if kind == ListKind::Set {
            rhs[j].clone()
        } else {
            base
        }
    };
    let mut taken = vec![false; rhs.len()];
    let mut out = Vec::with_capacity(live.len() + rhs.len());
    for item in &live {
        let id = item_elem(item, &kind);
        let Some(at) = ids.iter().position(|r| *r == id) else {
            out.push(item.clone());
            continue;
        };
        for (j, done) in taken.iter_mut().enumerate().take(at + 1) {
            if !*done {
                *done = true;
                out.push(merged_with_live(j));
            }
        }
    }
    for (j, done) in taken.iter().enumerate() {
        if !done {
            out.push(merged_with_live(j));
        }
    }
    *lhs = out;
}

#[derive(Debug, Clone)]
struct Entry {
    manager: String,
    operation: String,
    subresource: String,
    api_version: String,
    time: String,
    fields: BTreeSet<Path>,
}

impl Entry {
    fn is(&self, manager: &str, operation: &str, subresource: &str) -> bool {
        self.manager == manager && self.operation == operation && self.subresource == subresource
    }

    /// How kube-apiserver names the manager in a conflict.
    fn describe(&self) -> String {
        let mut s = format!("\"{}\"", self.manager);
        if !self.subresource.is_empty() {
            s.push_str(&format!(" with subresource \"{}\"", self.subresource));
        }
        if self.operation == "Update" {
            s.push_str(&format!(" using {}", self.api_version));
        }
        s
    }
}

/// A FieldsV1 key as an element, in canonical form (`k:` and `v:` JSON re-rendered).
fn parse_elem(k: &str) -> Option<Elem> {
    if let Some(f) = k.strip_prefix("f:") {
        return Some(field(f));
    }
    if let Some(v) = k.strip_prefix("v:") {
        let v: Value = serde_json::from_str(v).ok()?;
        return Some(Elem::Value(v.to_string()));
    }
    let key: Map<String, Value> = serde_json::from_str(k.strip_prefix("k:")?).ok()?;
    let names: Vec<String> = key.keys().cloned().collect();
    item_elem(&Value::Object(key), &ListKind::Map(names))
}

fn parse_fields(v: &Value, prefix: &mut Path, out: &mut BTreeSet<Path>) {
    let Some(m) = v.as_object() else { return };
    if m.is_empty() && !prefix.is_empty() {
        out.insert(prefix.clone());
        return;
    }
    for (k, child) in m {
        if k == "." {
            out.insert(prefix.clone());
            continue;
        }
        // Unknown forms (`i:` indexes of lists without keys) own nothing here.
        let Some(elem) = parse_elem(k) else { continue };
        prefix.push(elem);
        parse_fields(child, prefix, out);
        prefix.pop();
    }
}

fn elem_key(e: &Elem) -> String {
    match e {
        Elem::Field(f) => format!("f:{f}"),
        Elem::Key(k) => format!("k:{k}"),
        Elem::Value(v) => format!("v:{v}"),
    }
}

/// FieldsV1: nested `f:`/`k:`/`v:` keys; a path owned for itself that also has owned
/// paths below it says so with `".": {}`.
fn render_fields(set: &BTreeSet<Path>) -> Value {
    let mut root = Value::Object(Map::new());
    for p in set {
        let mut cur = &mut root;
        for e in p {
            let Some(m) = cur.as_object_mut() else { break };
            cur = m.entry(elem_key(e)).or_insert_with(|| json!({}));
        }
    }
    for p in set {
        let has_children = set.iter().any(|q| q.len() > p.len() && q.starts_with(p));
        if !has_children || p.is_empty() {
            continue;
        }
        let node = p
            .iter()
            .try_fold(&mut root, |cur, e| cur.get_mut(elem_key(e)));
        if let Some(m) = node.and_then(Value::as_object_mut) {
            m.insert(".".into(), json!({}));
        }
    }
    root
}

fn parse_entries(obj: &Value) -> Vec<Entry> {
    let Some(arr) = obj
        .get("metadata")
        .and_then(|m| m.get("managedFields"))
        .and_then(Value::as_array)
    else {
        return vec![];
    };
    arr.iter()
        .map(|e| {
            let s = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            let mut fields = BTreeSet::new();
            if let Some(f) = e.get("fieldsV1") {
                parse_fields(f, &mut vec![], &mut fields);
            }
            Entry {
                manager: s("manager"),
                operation: s("operation"),
                subresource: s("subresource"),
                api_version: s("apiVersion"),
                time: s("time"),
                fields,
            }
        })
        .collect()
}

fn write_entries(obj: &mut Value, entries: Vec<Entry>) {
    let arr: Vec<Value> = entries
        .into_iter()
        .filter(|e| !e.fields.is_empty())
        .map(|e| {
            let mut v = json!({
                "manager": e.manager,
                "operation": e.operation,
                "apiVersion": e.api_version,
                "time": e.time,
                "fieldsType": "FieldsV1",
                "fieldsV1": render_fields(&e.fields),
            });
            if !e.subresource.is_empty() {
                v["subresource"] = json!(e.subresource);
            }
            v
        })
        .collect();
    let meta = crate::util::meta_mut(obj);
    if arr.is_empty() {
        meta.remove("managedFields");
    } else {
        meta.insert("managedFields".into(), Value::Array(arr));
    }
}

fn subresource_name(scope: Scope) -> String {
    match scope {
        Scope::Status => "status".into(),
        Scope::Main { .. } => String::new(),
    }
}

const WHOLE: Scope = Scope::Main {
    exclude_status: false,
};

/// Whether the write changed what `p` names: an item's presence, or a leaf's value.
fn differs(old: Option<&Value>, new: &Value, p: &Path) -> bool {
    let before = old.and_then(|o| get(o, p));
    if is_membership(p) {
        before.is_some() != get(new, p).is_some()
    } else {
        before != get(new, p)
    }
}

/// The paths whose value or presence differs between two versions of an object.
fn changed_paths(old: Option<&Value>, new: &Value, shape: Shape) -> BTreeSet<Path> {
    let mut all = leaf_paths(new, WHOLE, shape);
    if let Some(o) = old {
        all.extend(leaf_paths(o, WHOLE, shape));
    }
    all.into_iter().filter(|p| differs(old, new, p)).collect()
}

/// Whether a change at `c` takes `q` from its owner: the same path, a subtree replaced
/// above it, or a value set below what was a leaf (never below an item, whose fields have
/// their own owners).
fn takes(c: &Path, q: &Path) -> bool {
    c == q || q.starts_with(c) || (c.starts_with(q) && !is_membership(q))
}

/// Drops owned paths that no longer exist in `obj` (an owned ancestor of something that
/// exists stays).
fn retain_existing(entries: &mut [Entry], obj: &Value, shape: Shape) {
    let all = leaf_paths(obj, WHOLE, shape);
    for e in entries.iter_mut() {
        let before = e.fields.len();
        e.fields
            .retain(|q| all.contains(q) || all.iter().any(|p| p.starts_with(q)));
        if e.fields.len() != before {
            e.time = now();
        }
    }
}

/// Records an `Update` operation (create, PUT, non-apply PATCH) by `manager` into
/// `new.metadata.managedFields`, based on the fields that changed since `old`.
pub fn record_update(
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    scope: Scope,
    api_version: &str,
    shape: Shape,
) {
    let mut entries = match old {
        Some(o) => parse_entries(o),
        None => vec![],
    };
    // A client that sets managedFields explicitly replaces them (kubectl's
    // client-side-apply upgrade does); an explicit empty list resets tracking.
    let incoming = new.get("metadata").and_then(|m| m.get("managedFields"));
    let current = old
        .and_then(|o| o.get("metadata"))
        .and_then(|m| m.get("managedFields"));
    if incoming.is_some_and(|i| !i.as_array().is_some_and(Vec::is_empty)) && incoming != current {
        entries = parse_entries(new);
    }
    if incoming
        .and_then(Value::as_array)
        .is_some_and(Vec::is_empty)
    {
        entries.clear();
    }
    let changed: Vec<Path> = leaf_paths(new, scope, shape)
        .into_iter()
        .filter(|p| differs(old, new, p))
        .collect();
    let all_changed = changed_paths(old, new, shape);
    let sub = subresource_name(scope);
    retain_existing(&mut entries, new, shape);
    for e in entries.iter_mut() {
        if e.is(manager, "Update", &sub) {
            continue;
        }
        let before = e.fields.len();
        e.fields
            .retain(|q| !all_changed.iter().any(|c| takes(c, q)));
        if e.fields.len() != before {
            e.time = now();
        }
    }
    if !changed.is_empty() {
        if let Some(e) = entries.iter_mut().find(|e| e.is(manager, "Update", &sub)) {
            e.fields.extend(changed);
            e.time = now();
            e.api_version = api_version.into();
        } else {
            entries.push(Entry {
                manager: manager.into(),
                operation: "Update".into(),
                subresource: sub,
                api_version: api_version.into(),
                time: now(),
                fields: changed.into_iter().collect(),
            });
        }
    }
    write_entries(new, entries);
}

/// A field owned by another manager whose value the apply would change.
#[derive(Debug, Clone)]
pub struct Conflict {
    /// The owner as kube-apiserver names it: `"a"`, `"a" with subresource "status"`,
    /// `"c" using v1` (an Update).
    pub manager: String,
    pub path: String,
}

/// The configuration as it applies to the scope: without apiVersion, kind, the metadata
/// the server owns, and the part of the object the scope does not reach.
fn scoped_config(cfg: &Value, scope: Scope) -> Value {
    let mut cfg_scoped = cfg.clone();
    let Some(m) = cfg_scoped.as_object_mut() else {
        return cfg_scoped;
    };
    m.remove("apiVersion");
    m.remove("kind");
    if let Some(meta) = m.get_mut("metadata").and_then(Value::as_object_mut) {
        for k in META_SKIP {
            if *k != "name" && *k != "namespace" {
                meta.remove(*k);
            }
        }
    }
    match scope {
        Scope::Status => m.retain(|k, _| k == "status" || k == "metadata"),
        Scope::Main {
            exclude_status: true,
        } => {
            m.remove("status");
        }
        _ => {}
    }
    if scope == Scope::Status
        && let Some(meta) = m.get_mut("metadata").and_then(Value::as_object_mut)
    {
        meta.retain(|k, _| k == "name" || k == "namespace");
    }
    cfg_scoped
}

/// Server-side apply of `cfg` by `manager` onto `live` (None: create).
pub fn apply(
    live: Option<&Value>,
    cfg: &Value,
    manager: &str,
    force: bool,
    scope: Scope,
    api_version: &str,
    shape: Shape,
) -> Result<Value, Vec<Conflict>> {
    let empty = json!({});
    let base = live.unwrap_or(&empty);
    let mut entries = parse_entries(base);
    let applied = leaf_paths(cfg, scope, shape);
    let sub = subresource_name(scope);
    let mut obj = base.clone();
    merge(&mut obj, &scoped_config(cfg, scope), shape);
    if let Some(m) = obj.as_object_mut() {
        for k in ["apiVersion", "kind"] {
            if let Some(v) = cfg.get(k) {
                m.insert(k.into(), v.clone());
            }
        }
    }
    let changed = changed_paths(live, &obj, shape);
    let mut conflicts = vec![];
    for e in entries.iter_mut().filter(|e| e.manager != manager) {
        let taken: Vec<Path> = e
            .fields
            .iter()
            .filter(|q| changed.iter().any(|c| takes(c, q)))
            .cloned()
            .collect();
        if force {
            for q in &taken {
                e.fields.remove(q);
                e.time = now();
            }
            continue;
        }
        let owner = e.describe();
        conflicts.extend(taken.iter().map(|q| Conflict {
            manager: owner.clone(),
            path: render_path(q),
        }));
    }
    if !conflicts.is_empty() {
        return Err(conflicts);
    }
    prune(&mut obj, &entries, &applied, manager, &sub);
    retain_existing(&mut entries, &obj, shape);
    if let Some(e) = entries.iter_mut().find(|e| e.is(manager, "Apply", &sub)) {
        if e.fields != applied {
            e.time = now();
        }
        e.fields = applied;
        e.api_version = api_version.into();
    } else {
        entries.push(Entry {
            manager: manager.into(),
            operation: "Apply".into(),
            subresource: sub,
            api_version: api_version.into(),
            time: now(),
            fields: applied,
        });
    }
    write_entries(&mut obj, entries);
    Ok(obj)
}

/// Removes what `manager` applied last time and no longer applies, unless another manager
/// owns it or something below it (structured-merge-diff keeps such items for their owners).
fn prune(obj: &mut Value, entries: &[Entry], applied: &BTreeSet<Path>, manager: &str, sub: &str) {
    let Some(prev) = entries.iter().find(|e| e.is(manager, "Apply", sub)) else {
        return;
    };
    for p in prev.fields.difference(applied) {
        let kept = applied.iter().any(|a| a.starts_with(p))
            || entries
                .iter()
                .filter(|e| !e.is(manager, "Apply", sub))
                .any(|e| e.fields.iter().any(|q| q.starts_with(p)));
        if !kept {
            remove(obj, p);
        }
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    const MAIN: Scope = Scope::Main {
        exclude_status: false,
    };
    const BUILT_IN: Shape = Shape::BuiltIn(BuiltInList::Atomic);

    #[test]
    fn apply_conflict_and_force() {
        let a = json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "l"}, "spec": {"holder": "a", "d": 1}});
        let obj = apply(None, &a, "a", false, MAIN, "v1", BUILT_IN).unwrap();
        let b = json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "l"}, "spec": {"holder": "b"}});
        let err = apply(Some(&obj), &b, "b", false, MAIN, "v1", BUILT_IN).unwrap_err();
        assert_eq!(err[0].manager, "\"a\"");
        assert_eq!(err[0].path, ".spec.holder");
        let same = json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "l"}, "spec": {"holder": "a"}});
        assert!(apply(Some(&obj), &same, "b", false, MAIN, "v1", BUILT_IN).is_ok());
        let forced = apply(Some(&obj), &b, "b", true, MAIN, "v1", BUILT_IN).unwrap();
        assert_eq!(forced["spec"]["holder"], "b");
        assert_eq!(forced["spec"]["d"], 1);
        // a re-applies without d: d is removed
        let a2 = json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "l"}, "spec": {}});
        let o = apply(Some(&forced), &a2, "a", false, MAIN, "v1", BUILT_IN).unwrap();
        assert!(o["spec"].get("d").is_none());
        assert_eq!(o["spec"]["holder"], "b");
    }

    #[test]
    fn update_takes_ownership() {
        let a = json!({"metadata": {"name": "l"}, "spec": {"holder": "a"}});
        let obj = apply(None, &a, "a", false, MAIN, "v1", BUILT_IN).unwrap();
        let mut new = obj.clone();
        new["spec"]["holder"] = json!("c");
        record_update(Some(&obj), &mut new, "c", MAIN, "v1", BUILT_IN);
        let b = json!({"metadata": {"name": "l"}, "spec": {"holder": "b"}});
        let err = apply(Some(&new), &b, "b", false, MAIN, "v1", BUILT_IN).unwrap_err();
        assert_eq!(err[0].manager, "\"c\" using v1");
    }
    fn ports_schema() -> Value {
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "ports": {"type": "array", "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["port", "protocol"],
                "items": {"type": "object"}}
        }}}})
    }

    /// The order kube-apiserver v1.24 answered: live items first, each shared item preceded
    /// by the configuration's new items before it.
    #[test]
    fn merged_lists_keep_structured_merge_diffs_order() {
        let schema = ports_schema();
        let shape = Shape::root(Some(&schema));
        let mut live = json!({"spec": {"tags": ["x", "y"],
            "ports": [{"port": 80, "protocol": "TCP", "name": "http"}]}});
        merge(
            &mut live,
            &json!({"spec": {"tags": ["z", "y"],
                "ports": [{"port": 443, "protocol": "TCP"}, {"port": 80, "protocol": "TCP"}]}}),
            shape,
        );
        assert_eq!(live["spec"]["tags"], json!(["x", "z", "y"]));
        assert_eq!(
            live["spec"]["ports"],
            json!([{"port": 443, "protocol": "TCP"}, {"port": 80, "protocol": "TCP", "name": "http"}])
        );
    }

    #[test]
    fn item_paths_render_as_kube_apiserver_names_them() {
        let schema = ports_schema();
        let obj = json!({"spec": {"tags": ["x"], "ports": [{"port": 80, "protocol": "TCP"}]}});
        let paths = leaf_paths(&obj, MAIN, Shape::root(Some(&schema)));
        let names: Vec<String> = paths.iter().map(render_path).collect();
        assert_eq!(
            names,
            [
                ".spec.ports[port=80,protocol=\"TCP\"]",
                ".spec.ports[port=80,protocol=\"TCP\"].port",
                ".spec.ports[port=80,protocol=\"TCP\"].protocol",
                ".spec.tags[=\"x\"]",
            ]
        );
        let fields = render_fields(&paths);
        assert_eq!(
            fields,
            json!({"f:spec": {
                "f:ports": {"k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:port": {}, "f:protocol": {}}},
                "f:tags": {"v:\"x\"": {}}
            }})
        );
        let mut parsed = BTreeSet::new();
        parse_fields(&fields, &mut vec![], &mut parsed);
        assert_eq!(parsed, paths);
    }

    /// A list whose items lack their keys cannot merge by key; it is replaced whole.
    #[test]
    fn a_map_list_without_keys_is_atomic() {
        let schema = ports_schema();
        let mut live = json!({"spec": {"ports": [{"name": "a"}]}});
        merge(
            &mut live,
            &json!({"spec": {"ports": [{"name": "b"}]}}),
            Shape::root(Some(&schema)),
        );
        assert_eq!(live["spec"]["ports"], json!([{"name": "b"}]));
    }
}
