//! managedFields bookkeeping and server-side apply (an approximation of
//! structured-merge-diff: lists are atomic, ownership is tracked per leaf field).

use crate::util::now;
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

pub type Path = Vec<String>;

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

fn collect(v: &Value, prefix: &mut Path, out: &mut BTreeSet<Path>) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, child) in m {
                prefix.push(k.clone());
                collect(child, prefix, out);
                prefix.pop();
            }
        }
        Value::Null => {}
        _ => {
            out.insert(prefix.clone());
        }
    }
}

/// The leaf paths of an object, restricted to the scope.
pub fn leaf_paths(obj: &Value, scope: Scope) -> BTreeSet<Path> {
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
                    let mut prefix = vec![k.clone(), mk.clone()];
                    collect(mv, &mut prefix, &mut out);
                }
            }
            continue;
        }
        let mut prefix = vec![k.clone()];
        collect(v, &mut prefix, &mut out);
    }
    out
}

fn get<'a>(v: &'a Value, p: &Path) -> Option<&'a Value> {
    let mut cur = v;
    for s in p {
        cur = cur.get(s)?;
    }
    Some(cur)
}

fn remove(v: &mut Value, p: &[String]) {
    if p.is_empty() {
        return;
    }
    let Some(m) = v.as_object_mut() else { return };
    if p.len() == 1 {
        m.remove(&p[0]);
        return;
    }
    if let Some(child) = m.get_mut(&p[0]) {
        remove(child, &p[1..]);
        if child.as_object().is_some_and(Map::is_empty) && p[0] != "metadata" {
            m.remove(&p[0]);
        }
    }
}

fn overlap(a: &Path, b: &Path) -> bool {
    let n = a.len().min(b.len());
    a[..n] == b[..n]
}

/// Deep merge for apply: objects merge, everything else replaces, null removes.
pub fn merge(target: &mut Value, patch: &Value) {
    match (target.as_object_mut(), patch.as_object()) {
        (Some(t), Some(p)) => {
            for (k, v) in p {
                if v.is_null() {
                    t.remove(k);
                } else if v.is_object() && t.get(k).is_some_and(Value::is_object) {
                    if let Some(tv) = t.get_mut(k) {
                        merge(tv, v);
                    }
                } else {
                    t.insert(k.clone(), v.clone());
                }
            }
        }
        _ => *target = patch.clone(),
    }
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
        let name = k.strip_prefix("f:").unwrap_or(k);
        prefix.push(name.to_string());
        parse_fields(child, prefix, out);
        prefix.pop();
    }
}

fn render_fields(set: &BTreeSet<Path>) -> Value {
    let mut root = Value::Object(Map::new());
    for p in set {
        let mut cur = &mut root;
        for s in p {
            let Some(m) = cur.as_object_mut() else { break };
            cur = m.entry(format!("f:{s}")).or_insert_with(|| json!({}));
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

/// Records an `Update` operation (create, PUT, non-apply PATCH) by `manager` into
/// `new.metadata.managedFields`, based on the fields that changed since `old`.
pub fn record_update(
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    scope: Scope,
    api_version: &str,
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
    if new
        .get("metadata")
        .and_then(|m| m.get("managedFields"))
        .and_then(Value::as_array)
        .is_some_and(Vec::is_empty)
    {
        entries.clear();
    }
    let new_paths = leaf_paths(new, scope);
    let changed: Vec<Path> = new_paths
        .iter()
        .filter(|p| old.and_then(|o| get(o, p)) != get(new, p))
        .cloned()
        .collect();
    let all_new = leaf_paths(
        new,
        Scope::Main {
            exclude_status: false,
        },
    );
    let sub = subresource_name(scope);
    let mut touched = false;
    for e in entries.iter_mut() {
        let before = e.fields.len();
        e.fields
            .retain(|q| all_new.contains(q) || all_new.iter().any(|p| p.starts_with(q)));
        if !(e.manager == manager && e.operation == "Update" && e.subresource == sub) {
            e.fields.retain(|q| !changed.iter().any(|c| overlap(c, q)));
        }
        if e.fields.len() != before {
            e.time = now();
        }
    }
    if !changed.is_empty() {
        if let Some(e) = entries
            .iter_mut()
            .find(|e| e.manager == manager && e.operation == "Update" && e.subresource == sub)
        {
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
        touched = true;
    }
    let _ = touched;
    write_entries(new, entries);
}

/// A field owned by another manager whose value the apply would change.
#[derive(Debug, Clone)]
pub struct Conflict {
    pub manager: String,
    pub path: String,
}

/// Server-side apply of `cfg` by `manager` onto `live` (None: create).
pub fn apply(
    live: Option<&Value>,
    cfg: &Value,
    manager: &str,
    force: bool,
    scope: Scope,
    api_version: &str,
) -> Result<Value, Vec<Conflict>> {
    let empty = json!({});
    let base = live.unwrap_or(&empty);
    let mut entries = parse_entries(base);
    let applied = leaf_paths(cfg, scope);
    let sub = subresource_name(scope);
    let mut conflicts = vec![];
    let mut forced: Vec<(usize, Path)> = vec![];
    for (i, e) in entries.iter().enumerate() {
        if e.manager == manager {
            continue;
        }
        for q in &e.fields {
            for p in &applied {
                if !overlap(p, q) {
                    continue;
                }
                // An empty map in the configuration sets no value.
                if get(cfg, p).is_some_and(|v| v.as_object().is_some_and(Map::is_empty)) {
                    continue;
                }
                let longer = if p.len() >= q.len() { p } else { q };
                if get(base, longer) != get(cfg, longer) {
                    if force {
                        forced.push((i, q.clone()));
                    } else {
                        conflicts.push(Conflict {
                            manager: e.manager.clone(),
                            path: format!(".{}", q.join(".")),
                        });
                    }
                    break;
                }
            }
        }
    }
    if !conflicts.is_empty() {
        return Err(conflicts);
    }
    for (i, q) in forced {
        entries[i].fields.remove(&q);
        entries[i].time = now();
    }
    let mut obj = base.clone();
    let prev: BTreeSet<Path> = entries
        .iter()
        .find(|e| e.manager == manager && e.operation == "Apply" && e.subresource == sub)
        .map(|e| e.fields.clone())
        .unwrap_or_default();
    for p in prev.difference(&applied) {
        let owned_by_other = entries.iter().any(|e| {
            !(e.manager == manager && e.operation == "Apply" && e.subresource == sub)
                && e.fields.iter().any(|q| overlap(p, q))
        });
        if !owned_by_other {
            remove(&mut obj, p);
        }
    }
    let mut cfg_scoped = cfg.clone();
    if let Some(m) = cfg_scoped.as_object_mut() {
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
    }
    merge(&mut obj, &cfg_scoped);
    if let Some(m) = obj.as_object_mut() {
        if let Some(av) = cfg.get("apiVersion") {
            m.insert("apiVersion".into(), av.clone());
        }
        if let Some(k) = cfg.get("kind") {
            m.insert("kind".into(), k.clone());
        }
    }
    let all = leaf_paths(
        &obj,
        Scope::Main {
            exclude_status: false,
        },
    );
    for e in entries.iter_mut() {
        e.fields
            .retain(|q| all.contains(q) || all.iter().any(|p| p.starts_with(q)));
    }
    if let Some(e) = entries
        .iter_mut()
        .find(|e| e.manager == manager && e.operation == "Apply" && e.subresource == sub)
    {
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

#[cfg(test)]
mod tests {
    use super::*;

    const MAIN: Scope = Scope::Main {
        exclude_status: false,
    };

    #[test]
    fn apply_conflict_and_force() {
        let a = json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "l"}, "spec": {"holder": "a", "d": 1}});
        let obj = apply(None, &a, "a", false, MAIN, "v1").unwrap();
        let b = json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "l"}, "spec": {"holder": "b"}});
        let err = apply(Some(&obj), &b, "b", false, MAIN, "v1").unwrap_err();
        assert_eq!(err[0].manager, "a");
        assert_eq!(err[0].path, ".spec.holder");
        let same = json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "l"}, "spec": {"holder": "a"}});
        assert!(apply(Some(&obj), &same, "b", false, MAIN, "v1").is_ok());
        let forced = apply(Some(&obj), &b, "b", true, MAIN, "v1").unwrap();
        assert_eq!(forced["spec"]["holder"], "b");
        assert_eq!(forced["spec"]["d"], 1);
        // a re-applies without d: d is removed
        let a2 = json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "l"}, "spec": {}});
        let o = apply(Some(&forced), &a2, "a", false, MAIN, "v1").unwrap();
        assert!(o["spec"].get("d").is_none());
        assert_eq!(o["spec"]["holder"], "b");
    }

    #[test]
    fn update_takes_ownership() {
        let a = json!({"metadata": {"name": "l"}, "spec": {"holder": "a"}});
        let obj = apply(None, &a, "a", false, MAIN, "v1").unwrap();
        let mut new = obj.clone();
        new["spec"]["holder"] = json!("c");
        record_update(Some(&obj), &mut new, "c", MAIN, "v1");
        let b = json!({"metadata": {"name": "l"}, "spec": {"holder": "b"}});
        let err = apply(Some(&new), &b, "b", false, MAIN, "v1").unwrap_err();
        assert_eq!(err[0].manager, "c");
    }
}
