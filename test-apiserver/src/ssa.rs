//! managedFields bookkeeping and server-side apply, after structured-merge-diff: ownership is
//! tracked per leaf field, per item of `x-kubernetes-list-type: map` lists (by their
//! `x-kubernetes-list-map-keys`) and per value of `set` lists; other lists are atomic.

mod compare;
mod fields;
mod merge;
mod paths;

use crate::util::now;
use compare::{Comparison, compare, zero};
use fields::*;
pub use merge::merge;
use paths::*;
pub use paths::{Scope, Shape};
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// Drops from every entry but `keep` what the write set (another manager's fields it
/// took) and what it removed; the rest of each entry stays its owner's, and so does its
/// `time`: kube-apiserver stamps the writer's entry only (apimachinery's
/// `managedFieldsUpdater`), and `fields::write_entries` drops an entry left owning nothing,
/// as structured-merge-diff's `Updater.update` deletes an empty manager.
fn drop_changed(entries: &mut [Entry], c: &Comparison, keep: impl Fn(&Entry) -> bool) {
    for e in entries.iter_mut().filter(|e| !keep(e)) {
        e.fields.retain(|q| !c.set(q) && !c.removed.contains(q));
    }
}

/// Drops owned paths that no longer exist in `obj` (an owned ancestor of something that
/// exists stays), leaving each entry's `time` as it was (see [`drop_changed`]).
fn retain_existing(entries: &mut [Entry], obj: &Value, shape: Shape) {
    let all = leaf_paths(obj, WHOLE, shape);
    for e in entries.iter_mut() {
        e.fields
            .retain(|q| all.contains(q) || all.iter().any(|p| p.starts_with(q)));
    }
}

/// Records an `Update` operation (create, PUT, non-apply PATCH) by `manager` into
/// `new.metadata.managedFields`: the manager owns what the write added or changed since
/// `old` (`None`: a create, compared with the kind's zero value), maps and lists it added
/// included; other managers lose what it changed or removed.
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
    let created = zero(shape);
    let c = compare(Some(old.unwrap_or(&created)), new, shape);
    let sub = subresource_name(scope);
    retain_existing(&mut entries, new, shape);
    drop_changed(&mut entries, &c, |e| e.is(manager, "Update", &sub));
    let changed: Vec<Path> = c.set_in(scope).cloned().collect();
    if let Some(e) = entries.iter_mut().find(|e| e.is(manager, "Update", &sub)) {
        e.fields.retain(|q| !c.removed.contains(q));
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
    let c = compare(live, &obj, shape);
    let mut conflicts = vec![];
    for e in entries.iter_mut().filter(|e| e.manager != manager) {
        let taken: Vec<Path> = e.fields.iter().filter(|q| c.set(q)).cloned().collect();
        if force {
            // The loser's entry keeps its time (see `drop_changed`).
            for q in &taken {
                e.fields.remove(q);
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
    // `obj` still carries the live managedFields: it differs from `live` in its values only.
    let changed = live != Some(&obj);
    retain_existing(&mut entries, &obj, shape);
    record_applier(&mut entries, manager, sub, api_version, applied, changed);
    write_entries(&mut obj, entries);
    Ok(obj)
}

/// The applier's entry owns what it applied, also when the apply changed no value: then it
/// co-owns those fields with their other owners (v1.36.2 records `y`'s entry for an apply of
/// the values a ConfigMap already has, and writes it). Its time moves only with a change of
/// value, as kube-apiserver's `managedFieldsUpdater` stamps it; a new entry of an apply that
/// changed nothing has none, so an identical apply by the same manager changes nothing.
fn record_applier(
    entries: &mut Vec<Entry>,
    manager: &str,
    sub: String,
    api_version: &str,
    applied: BTreeSet<Path>,
    changed: bool,
) {
    let stamp = |time: &mut String| {
        if changed {
            *time = now();
        }
    };
    if let Some(e) = entries.iter_mut().find(|e| e.is(manager, "Apply", &sub)) {
        stamp(&mut e.time);
        e.fields = applied;
        e.api_version = api_version.into();
    } else {
        let mut time = String::new();
        stamp(&mut time);
        entries.push(Entry {
            manager: manager.into(),
            operation: "Apply".into(),
            subresource: sub,
            api_version: api_version.into(),
            time,
            fields: applied,
        });
    }
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
