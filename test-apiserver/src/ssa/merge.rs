//! Apply's merge of a configuration into a live object, list by list as the shape says.

use super::paths::*;
use serde_json::{Value, json};

/// Deep merge for apply: objects merge (atomic structs and maps are replaced), merged lists merge item by item, everything else
/// replaces, null removes.
pub fn merge(target: &mut Value, patch: &Value, shape: Shape) {
    merge_at(target, patch, shape, true)
}

pub(super) fn merge_at(target: &mut Value, patch: &Value, shape: Shape, top: bool) {
    match (target.as_object_mut(), patch.as_object()) {
        (Some(t), Some(p)) => {
            for (k, v) in p {
                let child = if top { shape.top(k) } else { shape.field(k) };
                if v.is_null() {
                    t.remove(k);
                    continue;
                }
                match t.get_mut(k) {
                    Some(tv) if tv.is_object() && v.is_object() && !child.is_atomic_map() => {
                        merge_at(tv, v, child, false)
                    }
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
pub(super) fn merge_list(lhs: &mut Vec<Value>, patch: &Value, shape: Shape) {
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
        // A set's values and atomic items (an OwnerReference) are replaced, not merged.
        if kind == ListKind::Set || shape.items().is_atomic_map() {
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
