//! PATCH: JSON merge patch, JSON patch (RFC 6902), strategic merge patch (approximated,
//! built-ins only) and server-side apply (create when missing, field-manager conflicts).
//! The result goes through the same update path as a PUT (`rest.rs`).

use super::rest::scope_of;
use super::strategy::normalize_body;
use super::{State, WriteOpts};
use crate::registry::ResourceType;
use crate::ssa::{self, Scope, Shape};
use crate::status::{ApiError, ApiResult, Cause};
use crate::util::{self, meta_mut, name_of, uid_of};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PatchType {
    Merge,
    Json,
    Strategic,
    Apply,
}

impl State {
    /// PATCH (merge, json, strategic-merge approximated as merge, server-side apply).
    #[allow(clippy::too_many_arguments)]
    pub fn patch(
        &mut self,
        rt: &ResourceType,
        ns: Option<&str>,
        name: &str,
        sub: Option<&str>,
        ptype: PatchType,
        body: &[u8],
        force: bool,
        opts: &WriteOpts,
    ) -> ApiResult<(Value, u16)> {
        let old = self.get(rt, ns, name);
        if ptype == PatchType::Apply {
            return self.server_side_apply(rt, ns, name, sub, body, force, opts, old);
        }
        let old = old?;
        let mut new = old.clone();
        patch_document(&mut new, ptype, body)?;
        if util::rv_of(&new) != util::rv_of(&old) && !util::rv_of(&new).is_empty() {
            return Err(ApiError::stale(&rt.plural, &rt.group, name));
        }
        if util::uid_of(&new) != util::uid_of(&old) && !util::uid_of(&new).is_empty() {
            return Err(ApiError::conflict(
                &rt.plural,
                &rt.group,
                name,
                &format!(
                    "Precondition failed: UID in precondition: {}, UID in object meta: {}",
                    uid_of(&new),
                    uid_of(&old)
                ),
            ));
        }
        let patched = (opts.field_validation == "Strict").then(|| new.to_string());
        let v = self
            .finish_update(rt, old, new, sub, opts, false)
            .map_err(|e| strict_patch_error(e, patched.as_deref()))?;
        Ok((v, 200))
    }

    /// Server-side apply of the configuration `body` onto `old` (the object as stored, or
    /// why it is not): creates the object when it is missing (not through a subresource),
    /// else updates it, refusing a stale resourceVersion the configuration names.
    #[allow(clippy::too_many_arguments)]
    fn server_side_apply(
        &mut self,
        rt: &ResourceType,
        ns: Option<&str>,
        name: &str,
        sub: Option<&str>,
        body: &[u8],
        force: bool,
        opts: &WriteOpts,
        old: ApiResult<Value>,
    ) -> ApiResult<(Value, u16)> {
        let mut cfg = apply_configuration(rt, name, body, opts)?;
        let scope = scope_of(rt, sub);
        match old {
            Err(e) if e.code == 404 => {
                if sub.is_some() {
                    return Err(e);
                }
                meta_mut(&mut cfg).insert("name".into(), json!(name));
                if rt.namespaced {
                    meta_mut(&mut cfg).insert("namespace".into(), json!(ns.unwrap_or("")));
                }
                let created = applied(rt, None, &cfg, opts, force, scope)?;
                let created = normalize_body(rt, created)?;
                let v = self.create_prepared(rt, created, opts, Some(()))?;
                Ok((v, 201))
            }
            Err(e) => Err(e),
            Ok(old) => {
                if let Some(rv) = util::meta_str(&cfg, "resourceVersion")
                    && rv != util::rv_of(&old)
                {
                    return Err(ApiError::stale(&rt.plural, &rt.group, name));
                }
                let new = applied(rt, Some(&old), &cfg, opts, force, scope)?;
                let v = self.finish_update(rt, old, new, sub, opts, true)?;
                Ok((v, 200))
            }
        }
    }
}

/// The apply configuration of a server-side apply, refused as kube-apiserver refuses it: no
/// field manager, not YAML or JSON, not an object, or naming another object or another kind.
fn apply_configuration(
    rt: &ResourceType,
    name: &str,
    body: &[u8],
    opts: &WriteOpts,
) -> ApiResult<Value> {
    if opts.manager.is_empty() {
        return Err(ApiError::invalid(
            "PatchOptions",
            "meta.k8s.io",
            "",
            vec![Cause::required(
                "fieldManager",
                "is required for apply patch",
            )],
        ));
    }
    let cfg: Value = serde_yaml::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
    if !cfg.is_object() {
        return Err(ApiError::bad_request("apply patch must be an object"));
    }
    let cfg_name = name_of(&cfg);
    if !cfg_name.is_empty() && cfg_name != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({cfg_name}) does not match the name on the URL ({name})"
        )));
    }
    if let Some(k) = cfg.get("kind").and_then(Value::as_str)
        && k != rt.kind
    {
        return Err(ApiError::bad_request(format!(
            "the kind in the apply configuration ({k}) does not match the resource ({})",
            rt.kind
        )));
    }
    Ok(cfg)
}

/// `cfg` applied onto `live` (none when creating) by the write's field manager; a conflict
/// with another manager's fields is kube-apiserver's 409.
fn applied(
    rt: &ResourceType,
    live: Option<&Value>,
    cfg: &Value,
    opts: &WriteOpts,
    force: bool,
    scope: Scope,
) -> ApiResult<Value> {
    ssa::apply(
        live,
        cfg,
        &opts.manager,
        force,
        scope,
        &rt.api_version(),
        Shape::root(rt.schema.as_ref()),
    )
    .map_err(conflict_error)
}

/// Applies a JSON, merge or strategic merge patch to `doc` (not server-side apply, which
/// needs the managed fields): the shared step of PATCH on an object and on its `scale`.
pub(crate) fn patch_document(doc: &mut Value, ptype: PatchType, body: &[u8]) -> ApiResult<()> {
    let patch: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
    match ptype {
        PatchType::Json => {
            let p: json_patch::Patch = serde_json::from_value(patch)
                .map_err(|e| ApiError::bad_request(format!("error decoding json patch: {e}")))?;
            // kube-apiserver answers every failed operation with these words alone and
            // empty details (real v1.24: a failed `test` → 422, `"details":{}`).
            apply_json_patch(doc, &p).map_err(|e| {
                tracing::debug!("json patch refused: {e}");
                ApiError {
                    details: Some(json!({})),
                    ..ApiError::new(
                        422,
                        "Invalid",
                        "the server rejected our request due to an error in our request",
                    )
                }
            })
        }
        PatchType::Merge => {
            if !patch.is_object() {
                return Err(ApiError::bad_request(
                    "error decoding patch: merge patch must be a JSON object",
                ));
            }
            json_patch::merge(doc, &patch);
            Ok(())
        }
        PatchType::Strategic => {
            if !patch.is_object() {
                return Err(ApiError::bad_request(
                    "error decoding patch: strategic merge patch must be a JSON object",
                ));
            }
            strategic_merge(doc, &patch);
            Ok(())
        }
        PatchType::Apply => Err(ApiError::new(
            415,
            "UnsupportedMediaType",
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json",
        )),
    }
}

/// Applies RFC 6902 operations one by one, as kube-apiserver's json-patch library does, with
/// its one leniency: `test` with a null value passes on a missing path. kube-runtime's
/// `finalizer()` helper relies on it to add the first finalizer of an object.
fn apply_json_patch(
    doc: &mut Value,
    patch: &json_patch::Patch,
) -> Result<(), json_patch::PatchError> {
    for op in &patch.0 {
        if test_null_on_missing(doc, op) {
            continue;
        }
        json_patch::patch(doc, std::slice::from_ref(op))?;
    }
    Ok(())
}

fn test_null_on_missing(doc: &Value, op: &json_patch::PatchOperation) -> bool {
    match op {
        json_patch::PatchOperation::Test(t) => {
            t.value.is_null() && doc.pointer(t.path.as_str()).is_none()
        }
        _ => false,
    }
}

/// A patch whose result has unknown fields under `fieldValidation=Strict`: kube-apiserver's
/// patcher refuses it as Invalid on the field `patch`, quoting the patched object (v1.36:
/// 422 ` "" is invalid: patch: Invalid value: "{…}": strict decoding error: unknown field
/// "spec.bar"`), not with the 400 a create or update gets.
fn strict_patch_error(e: ApiError, patched: Option<&str>) -> ApiError {
    const STRICT: &str = "strict decoding error: ";
    match (patched, e.message.find(STRICT)) {
        (Some(object), Some(at)) if e.code == 400 => {
            let detail = &e.message[at..];
            let value = Value::String(object.to_string()).to_string();
            ApiError::invalid("", "", "", vec![Cause::invalid("patch", &value, detail)])
        }
        _ => e,
    }
}

fn conflict_error(conflicts: Vec<ssa::Conflict>) -> ApiError {
    let n = conflicts.len();
    let msg = if n == 1 {
        format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            conflicts[0].manager, conflicts[0].path
        )
    } else {
        let mut by: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for c in &conflicts {
            by.entry(c.manager.clone())
                .or_default()
                .push(c.path.clone());
        }
        let parts: Vec<String> = by
            .iter()
            .map(|(m, ps)| {
                format!(
                    "conflicts with {m}:\n{}",
                    ps.iter()
                        .map(|p| format!("- {p}"))
                        .collect::<Vec<_>>()
                        .join("\n")
                )
            })
            .collect();
        format!("Apply failed with {n} conflicts: {}", parts.join("\n"))
    };
    // `errors.NewApplyConflict`: the details carry the causes only (no name, group or kind).
    let mut d = json!({});
    d["causes"] = Value::Array(
        conflicts
            .iter()
            .map(|c| json!({"reason": "FieldManagerConflict", "message": format!("conflict with {}", c.manager), "field": c.path}))
            .collect(),
    );
    ApiError {
        code: 409,
        reason: "Conflict".into(),
        message: msg,
        details: Some(d),
    }
}

/// Strategic merge patch approximated as a JSON merge patch; `$patch: replace|delete`
/// on maps and `$setElementOrder`/`$retainKeys`/`$deleteFromPrimitiveList` directives
/// are honoured or ignored as documented in the README.
fn strategic_merge(target: &mut Value, patch: &Value) {
    let Some(p) = patch.as_object() else {
        *target = patch.clone();
        return;
    };
    if let Some(d) = p.get("$patch").and_then(Value::as_str) {
        if d == "replace" {
            let mut clean = patch.clone();
            if let Some(m) = clean.as_object_mut() {
                m.remove("$patch");
            }
            *target = clean;
            return;
        }
        if d == "delete" {
            *target = Value::Null;
            return;
        }
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Some(t) = target.as_object_mut() else {
        return;
    };
    for (k, v) in p {
        if k.starts_with('$') {
            continue;
        }
        if v.is_null() {
            t.remove(k);
        } else if v.is_object() {
            let entry = t.entry(k.clone()).or_insert(Value::Null);
            strategic_merge(entry, v);
            if entry.is_null() {
                t.remove(k);
            }
        } else if let (Some(key), Some(Value::Array(items)), Value::Array(patch_items)) =
            (merge_key(k), t.get_mut(k), v)
        {
            merge_list(items, patch_items, key);
        } else {
            t.insert(k.clone(), v.clone());
        }
    }
}

/// The `patchMergeKey` of the lists kube-apiserver merges item by item in a strategic merge
/// patch (from the Go types' tags); every other list is replaced.
pub(crate) fn merge_key(field: &str) -> Option<&'static str> {
    match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "volumes"
        | "env"
        | "imagePullSecrets" => Some("name"),
        "volumeMounts" => Some("mountPath"),
        "conditions" => Some("type"),
        "ownerReferences" => Some("uid"),
        _ => None,
    }
}

/// Merges `patch` items into `items` by `key`: an item with a known key is merged into the
/// existing one (or removed by `$patch: delete`), a new one is added; then the items are
/// ordered as kube-apiserver orders them (see [`interleave`]).
fn merge_list(items: &mut Vec<Value>, patch: &[Value], key: &str) {
    let original = std::mem::take(items);
    let mut patched = vec![];
    for p in patch {
        let delete = p.get("$patch").and_then(Value::as_str) == Some("delete");
        let existing = p
            .get(key)
            .and_then(|k| original.iter().find(|i| i.get(key) == Some(k)));
        match existing {
            _ if delete => {}
            Some(old) => {
                let mut merged = old.clone();
                strategic_merge(&mut merged, p);
                patched.push(merged);
            }
            None => patched.push(p.clone()),
        }
    }
    let in_patch = |i: &Value| {
        patch
            .iter()
            .any(|p| p.get(key).is_some() && p.get(key) == i.get(key))
    };
    let server_only: Vec<Value> = original.iter().filter(|i| !in_patch(i)).cloned().collect();
    *items = interleave(server_only, patched, &original, key);
}

/// apimachinery's `mergeSortedSlice`: the items the patch names (in the patch's order) and
/// the server's other items (in their order) are merged; a server item goes first only
/// when both are on the server and it stood before. So new items come before the
/// server's (real v1.24: env [A] patched with [B] → [B, A]; [B, A] with [A, C] → [B, A, C]).
fn interleave(
    server_only: Vec<Value>,
    patched: Vec<Value>,
    original: &[Value],
    key: &str,
) -> Vec<Value> {
    let position = |v: &Value| {
        original
            .iter()
            .position(|o| o.get(key) == v.get(key) && v.get(key).is_some())
    };
    let mut left = server_only.into_iter().peekable();
    let mut right = patched.into_iter().peekable();
    let mut out = vec![];
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => return out,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => matches!((position(l), position(r)), (Some(a), Some(b)) if a < b),
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strategic_merge_merges_keyed_lists_and_replaces_others() {
        let mut pod = json!({"spec": {
            "ephemeralContainers": [{"name": "a", "image": "x"}],
            "tolerations": [{"key": "k"}]
        }});
        strategic_merge(
            &mut pod,
            &json!({"spec": {
                "ephemeralContainers": [{"name": "b", "image": "y"}, {"name": "a", "image": "z"}],
                "tolerations": [{"key": "t"}]
            }}),
        );
        assert_eq!(
            pod["spec"]["ephemeralContainers"],
            json!([{"name": "b", "image": "y"}, {"name": "a", "image": "z"}])
        );
        assert_eq!(pod["spec"]["tolerations"], json!([{"key": "t"}]));
    }

    /// real kube-apiserver v1.24, 2026-11-25: a Deployment's env [A=1] patched with [B=2]
    /// → [B=2, A=1]; then with [A=9, C=3] → [B=2, A=9, C=3].
    #[test]
    fn keyed_lists_keep_kube_apiservers_order() {
        let env = |v: Value| json!({"env": v});
        let mut doc = env(json!([{"name": "A", "value": "1"}]));
        strategic_merge(&mut doc, &env(json!([{"name": "B", "value": "2"}])));
        assert_eq!(
            doc,
            env(json!([{"name": "B", "value": "2"}, {"name": "A", "value": "1"}]))
        );
        strategic_merge(
            &mut doc,
            &env(json!([{"name": "A", "value": "9"}, {"name": "C", "value": "3"}])),
        );
        assert_eq!(
            doc,
            env(
                json!([{"name": "B", "value": "2"}, {"name": "A", "value": "9"}, {"name": "C", "value": "3"}])
            )
        );
    }

    #[test]
    fn json_patch_test_of_null_passes_only_on_a_missing_path() {
        let ops = |v: Value| -> json_patch::Patch { serde_json::from_value(v).expect("ops") };
        let mut doc = json!({"metadata": {}});
        let add = ops(json!([
            {"op": "test", "path": "/metadata/finalizers", "value": null},
            {"op": "add", "path": "/metadata/finalizers", "value": ["f"]}
        ]));
        assert!(apply_json_patch(&mut doc, &add).is_ok());
        assert_eq!(doc["metadata"]["finalizers"], json!(["f"]));
        let again = ops(json!([{"op": "test", "path": "/metadata/finalizers", "value": null}]));
        assert!(apply_json_patch(&mut doc, &again).is_err());
    }
}
