//! managedFields as stored on an object: entries per manager and operation, read from and
//! written back to FieldsV1.

use super::paths::*;
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

#[derive(Debug, Clone)]
pub(super) struct Entry {
    pub(super) manager: String,
    pub(super) operation: String,
    pub(super) subresource: String,
    pub(super) api_version: String,
    pub(super) time: String,
    pub(super) fields: BTreeSet<Path>,
}

impl Entry {
    pub(super) fn is(&self, manager: &str, operation: &str, subresource: &str) -> bool {
        self.manager == manager && self.operation == operation && self.subresource == subresource
    }

    /// How kube-apiserver names the manager in a conflict.
    pub(super) fn describe(&self) -> String {
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
pub(super) fn parse_elem(k: &str) -> Option<Elem> {
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

pub(super) fn parse_fields(v: &Value, prefix: &mut Path, out: &mut BTreeSet<Path>) {
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

pub(super) fn elem_key(e: &Elem) -> String {
    match e {
        Elem::Field(f) => format!("f:{f}"),
        Elem::Key(k) => format!("k:{k}"),
        Elem::Value(v) => format!("v:{v}"),
    }
}

/// FieldsV1: nested `f:`/`k:`/`v:` keys; a path owned for itself that also has owned
/// paths below it says so with `".": {}`.
pub(super) fn render_fields(set: &BTreeSet<Path>) -> Value {
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

pub(super) fn parse_entries(obj: &Value) -> Vec<Entry> {
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

/// Writes the entries that own something into `obj.metadata.managedFields`, in
/// kube-apiserver's order (`sortEncodedManagedFields`): `Apply` entries before `Update`
/// ones, then by time (to the second; no time first), manager, apiVersion and subresource.
pub(super) fn write_entries(obj: &mut Value, mut entries: Vec<Entry>) {
    entries.retain(|e| !e.fields.is_empty());
    entries.sort_by(|p, q| {
        let order = |e: &Entry| {
            let second = crate::util::parse_time(&e.time)
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_secs());
            (
                e.operation.clone(),
                second,
                e.manager.clone(),
                e.api_version.clone(),
            )
        };
        order(p)
            .cmp(&order(q))
            .then_with(|| p.subresource.cmp(&q.subresource))
    });
    let arr: Vec<Value> = entries
        .into_iter()
        .map(|e| {
            let mut v = json!({
                "manager": e.manager,
                "operation": e.operation,
                "apiVersion": e.api_version,
                "fieldsType": "FieldsV1",
                "fieldsV1": render_fields(&e.fields),
            });
            // An apply that changed no value leaves a new entry without a time.
            if !e.time.is_empty() {
                v["time"] = json!(e.time);
            }
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

pub(super) fn subresource_name(scope: Scope) -> String {
    match scope {
        Scope::Status => "status".into(),
        Scope::Main { .. } => String::new(),
    }
}

pub(super) const WHOLE: Scope = Scope::Main {
    exclude_status: false,
};
