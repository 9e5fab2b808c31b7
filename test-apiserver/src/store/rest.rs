//! The REST verbs' semantics (kube-apiserver's generic registry `Store`): create (names,
//! generateName, system metadata), update (optimistic concurrency, the status
//! subresource, generation, no-op writes), delete (preconditions, propagation policies,
//! finalizers and `deletionTimestamp`) and deletecollection. Patches are in `patch.rs`,
//! per-kind validation and defaulting in `strategy.rs`.

use super::State;
use super::namespaces::may_vanish;
use super::storage::to_view;
use super::strategy::{builtin_defaults, normalize_body, prepare_for_create};
use crate::registry::ResourceType;
use crate::selector::{FieldSelector, LabelSelector};
use crate::ssa::{self, Scope, Shape};
use crate::status::{ApiError, ApiResult, Cause};
use crate::util::{self, meta_mut, name_of, now, uid_of};
use serde_json::{Value, json};

/// Options common to writes.
#[derive(Debug, Clone, Default)]
pub struct WriteOpts {
    pub dry_run: bool,
    pub manager: String,
    /// `Strict` rejects unknown fields (400), otherwise they are pruned, with a warning
    /// unless it is `Ignore`.
    pub field_validation: String,
    /// What the write warns of (`Warning` headers of the answer): unknown fields under
    /// `fieldValidation=Warn`, kube-apiserver's default.
    pub warnings: std::cell::RefCell<Vec<String>>,
}

#[derive(Debug, Clone, Default)]
pub struct DeleteOpts {
    pub propagation: Option<String>,
    pub uid: Option<String>,
    pub resource_version: Option<String>,
    pub dry_run: bool,
}

fn check_policy(policy: &str) -> ApiResult<()> {
    if ["Background", "Foreground", "Orphan"].contains(&policy) {
        return Ok(());
    }
    Err(ApiError::invalid(
        "DeleteOptions",
        "meta.k8s.io",
        "",
        vec![Cause::new(
            "FieldValueNotSupported",
            "propagationPolicy",
            format!(
                "Unsupported value: {policy:?}: supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
            ),
        )],
    ))
}

fn strip_for_generation(v: &Value, status_sub: bool) -> Value {
    let mut c = v.clone();
    if let Some(m) = c.as_object_mut() {
        m.remove("metadata");
        if status_sub {
            m.remove("status");
        }
    }
    c
}

fn strip_volatile(v: &Value) -> Value {
    let mut c = v.clone();
    if let Some(m) = c.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("managedFields");
        m.remove("resourceVersion");
    }
    c
}

/// Whether a write leaves the object as it is, so that nothing is stored. An apply's
/// managedFields count (a new co-owner is written, as kube-apiserver v1.36.2 writes it); an
/// Update's are what its changes make them, so its values alone decide.
fn unchanged(old: &Value, new: &Value, applied: bool) -> bool {
    if !applied {
        return strip_volatile(old) == strip_volatile(new);
    }
    let without_rv = |v: &Value| {
        let mut c = v.clone();
        if let Some(m) = c.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("resourceVersion");
        }
        c
    };
    without_rv(old) == without_rv(new)
}

/// What a write through `sub` writes: the status through `/status`, else the object, without
/// its status when the kind has a status subresource (the status is then not the main
/// resource's to write).
pub(super) fn scope_of(rt: &ResourceType, sub: Option<&str>) -> Scope {
    if sub == Some("status") {
        Scope::Status
    } else {
        Scope::Main {
            exclude_status: rt.status_subresource,
        }
    }
}

/// The object an update through `scope` makes of `old` and the `incoming` body: through
/// `/status`, `old` with the incoming status (and an apply's managedFields); else the incoming
/// object, with `old`'s status when the status is not the main resource's to write.
fn written_through(scope: Scope, old: &Value, incoming: &Value, applied: bool) -> Value {
    match scope {
        Scope::Status => {
            let mut n = old.clone();
            if let Some(m) = n.as_object_mut() {
                match incoming.get("status") {
                    Some(s) => {
                        m.insert("status".into(), s.clone());
                    }
                    None => {
                        m.remove("status");
                    }
                }
            }
            if applied
                && let Some(mf) = incoming
                    .get("metadata")
                    .and_then(|m| m.get("managedFields"))
            {
                meta_mut(&mut n).insert("managedFields".into(), mf.clone());
            }
            n
        }
        Scope::Main { exclude_status } => {
            let mut n = incoming.clone();
            if exclude_status && let Some(m) = n.as_object_mut() {
                match old.get("status") {
                    Some(s) => {
                        m.insert("status".into(), s.clone());
                    }
                    None => {
                        m.remove("status");
                    }
                }
            }
            n
        }
    }
}

/// System metadata is kept from the stored object (a client cannot rename, re-own or
/// un-delete through an update), and the type is the resource's.
fn keep_system_metadata(rt: &ResourceType, old: &Value, new: &mut Value) {
    let old_meta = old.get("metadata").cloned().unwrap_or(json!({}));
    let m = meta_mut(new);
    for k in [
        "name",
        "namespace",
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
        "resourceVersion",
    ] {
        match old_meta.get(k) {
            Some(v) => {
                m.insert(k.into(), v.clone());
            }
            None => {
                m.remove(k);
            }
        }
    }
    if m.get("generateName").is_none()
        && let Some(g) = old_meta.get("generateName")
    {
        m.insert("generateName".into(), g.clone());
    }
    if let Some(m) = new.as_object_mut() {
        m.insert("apiVersion".into(), json!(rt.api_version()));
        m.insert("kind".into(), json!(rt.kind));
    }
}

/// A kind with a generation counts one more when anything but metadata (and a status of
/// its own subresource) changed.
fn bump_generation(rt: &ResourceType, old: &Value, new: &mut Value) {
    if rt.generation
        && strip_for_generation(old, rt.status_subresource)
            != strip_for_generation(new, rt.status_subresource)
    {
        let g = old
            .get("metadata")
            .and_then(|m| m.get("generation"))
            .and_then(Value::as_i64)
            .unwrap_or(0);
        meta_mut(new).insert("generation".into(), json!(g + 1));
    }
}

/// What a create resets of the metadata the client sent: the system's fields are the
/// server's (a new uid, the creation time, generation 1 for a kind that counts them), and a
/// status of its own subresource is nobody's yet (a Namespace's phase excepted).
fn reset_system_metadata(rt: &ResourceType, obj: &mut Value) {
    let m = meta_mut(obj);
    for k in [
        "uid",
        "resourceVersion",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "selfLink",
    ] {
        m.remove(k);
    }
    m.insert("uid".into(), json!(util::new_uid()));
    m.insert("creationTimestamp".into(), json!(now()));
    if rt.generation {
        m.insert("generation".into(), json!(1));
    } else {
        m.remove("generation");
    }
    if rt.status_subresource
        && rt.plural != "namespaces"
        && let Some(m) = obj.as_object_mut()
    {
        m.remove("status");
    }
}

impl State {
    /// POST.
    pub fn create(
        &mut self,
        rt: &ResourceType,
        ns: Option<&str>,
        body: Value,
        opts: &WriteOpts,
    ) -> ApiResult<Value> {
        let mut obj = normalize_body(rt, body)?;
        let body_ns = util::meta_str(&obj, "namespace").map(String::from);
        if rt.namespaced {
            let ns = match (ns, body_ns.as_deref()) {
                (Some(p), Some(b)) if !b.is_empty() && p != b => {
                    return Err(ApiError::bad_request(
                        "the namespace of the provided object does not match the namespace sent on the request",
                    ));
                }
                (Some(p), _) => p.to_string(),
                (None, Some(b)) if !b.is_empty() => b.to_string(),
                _ => {
                    return Err(ApiError::bad_request(
                        "the server could not find the requested resource",
                    ));
                }
            };
            meta_mut(&mut obj).insert("namespace".into(), json!(ns));
        } else {
            meta_mut(&mut obj).remove("namespace");
        }
        self.create_prepared(rt, obj, opts, None)
    }

    /// Create path shared with server-side apply (`managed` = fields already recorded).
    pub(super) fn create_prepared(
        &mut self,
        rt: &ResourceType,
        mut obj: Value,
        opts: &WriteOpts,
        applied: Option<()>,
    ) -> ApiResult<Value> {
        let ns = util::meta_str(&obj, "namespace").map(String::from);
        // NamespaceLifecycle (mutating admission) runs before the name is generated and
        // before validation.
        if let Some(ns) = &ns {
            self.namespace_admit(rt, ns, &obj)?;
        }
        self.crd_admit_create(rt, name_of(&obj))?;
        let name = self.name_for_create(rt, ns.as_deref(), &mut obj)?;
        reset_system_metadata(rt, &mut obj);
        builtin_defaults(rt, &mut obj, None);
        self.validate_common(rt, &mut obj, opts, None)?;
        if applied.is_none() {
            // `status` is reset on a create of a kind with a status subresource: nobody's.
            ssa::record_update(
                None,
                &mut obj,
                &opts.manager,
                Scope::Main {
                    exclude_status: rt.status_subresource,
                },
                &rt.api_version(),
                Shape::root(rt.schema.as_ref()),
            );
        }
        prepare_for_create(rt, &mut obj);
        self.admission.validate(&self.registry, rt, None, &obj)?;
        // ResourceQuota comes last of the validating admission plugins, and charges the
        // quota before the store answers (so a 409 below has used a slot).
        self.quota_admit(rt, &obj, opts.dry_run)?;
        if self
            .objects
            .contains_key(&State::key(rt, ns.as_deref(), &name))
        {
            return Err(ApiError::already_exists(&rt.plural, &rt.group, &name));
        }
        if opts.dry_run {
            return Ok(obj);
        }
        let created = self.put(rt, obj);
        if rt.is_namespaces() {
            self.create_namespace_defaults(&name);
        }
        Ok(created)
    }

    /// The name a create stores `obj` under: its own, or `generateName` with a random suffix
    /// no object of the kind in `ns` has yet (written into `obj`); neither is invalid.
    fn name_for_create(
        &self,
        rt: &ResourceType,
        ns: Option<&str>,
        obj: &mut Value,
    ) -> ApiResult<String> {
        let name = name_of(obj).to_string();
        if !name.is_empty() {
            return Ok(name);
        }
        let gen_name = util::meta_str(obj, "generateName")
            .unwrap_or("")
            .to_string();
        if gen_name.is_empty() {
            return Err(ApiError::invalid(
                &rt.kind,
                &rt.group,
                "",
                vec![Cause::required(
                    "metadata.name",
                    "name or generateName is required",
                )],
            ));
        }
        let name = loop {
            let candidate = format!("{gen_name}{}", util::random_suffix());
            if !self.objects.contains_key(&State::key(rt, ns, &candidate)) {
                break candidate;
            }
        };
        meta_mut(obj).insert("name".into(), json!(name));
        Ok(name)
    }

    /// PUT (main resource or `status`).
    pub fn update(
        &mut self,
        rt: &ResourceType,
        ns: Option<&str>,
        name: &str,
        sub: Option<&str>,
        body: Value,
        opts: &WriteOpts,
    ) -> ApiResult<Value> {
        let old = self.get(rt, ns, name)?;
        let body = normalize_body(rt, body)?;
        let body_name = name_of(&body);
        if !body_name.is_empty() && body_name != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        let body_rv = util::rv_of(&body).to_string();
        if body_rv.is_empty() {
            if rt.crd.is_some() {
                return Err(ApiError::invalid(
                    &rt.kind,
                    &rt.group,
                    name,
                    vec![Cause::invalid(
                        "metadata.resourceVersion",
                        "0x0",
                        "must be specified for an update",
                    )],
                ));
            }
        } else if body_rv != util::rv_of(&old) {
            return Err(ApiError::stale(&rt.plural, &rt.group, name));
        }
        self.finish_update(rt, old, body, sub, opts, false)
    }

    /// Applies the subresource rules, system metadata, validation, generation and
    /// managedFields, then stores (or deletes, when finalizers are gone).
    pub(super) fn finish_update(
        &mut self,
        rt: &ResourceType,
        old: Value,
        incoming: Value,
        sub: Option<&str>,
        opts: &WriteOpts,
        applied: bool,
    ) -> ApiResult<Value> {
        let scope = scope_of(rt, sub);
        let mut new = written_through(scope, &old, &incoming, applied);
        keep_system_metadata(rt, &old, &mut new);
        builtin_defaults(rt, &mut new, Some(&old));
        self.validate_common(rt, &mut new, opts, Some(&old))?;
        self.admission
            .validate(&self.registry, rt, Some(&old), &new)?;
        bump_generation(rt, &old, &mut new);
        if !applied {
            ssa::record_update(
                Some(&old),
                &mut new,
                &opts.manager,
                scope,
                &rt.api_version(),
                Shape::root(rt.schema.as_ref()),
            );
        }
        if unchanged(&old, &new, applied) {
            return Ok(old);
        }
        if opts.dry_run {
            return Ok(new);
        }
        let stored = self.put(rt, new);
        if util::is_deleting(&stored)
            && util::finalizers_of(&stored).is_empty()
            && may_vanish(&rt.storage, &stored)
        {
            let key = State::key(rt, util::meta_str(&stored, "namespace"), name_of(&stored));
            if let Some(gone) = self.remove_key(&key) {
                return Ok(to_view(rt, &gone));
            }
        }
        Ok(stored)
    }

    /// DELETE of one object. Returns the object and the HTTP code: 200 whether it is gone
    /// or pending on finalizers (kube-apiserver answers 202 only to the deprecated
    /// `orphanDependents: false`, which nobody sends).
    pub fn delete(
        &mut self,
        rt: &ResourceType,
        ns: Option<&str>,
        name: &str,
        opts: &DeleteOpts,
    ) -> ApiResult<(Value, u16)> {
        if rt.is_namespaces() {
            State::namespace_delete_admit(name)?;
        }
        let old = self.get(rt, ns, name)?;
        if let Some(uid) = opts.uid.as_deref().filter(|u| !u.is_empty())
            && uid != uid_of(&old)
        {
            return Err(ApiError::conflict(
                &rt.plural,
                &rt.group,
                name,
                &format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    uid_of(&old)
                ),
            ));
        }
        if let Some(rv) = opts.resource_version.as_deref().filter(|u| !u.is_empty())
            && rv != util::rv_of(&old)
        {
            return Err(ApiError::conflict(
                &rt.plural,
                &rt.group,
                name,
                &format!(
                    "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                    util::rv_of(&old)
                ),
            ));
        }
        if rt.is_namespaces() {
            if let Some(p) = opts.propagation.as_deref() {
                check_policy(p)?;
            }
            return Ok(self.delete_namespace(rt, old, opts.propagation.as_deref(), opts.dry_run));
        }
        let old = State::crd_mark_terminating(rt, old);
        if opts.dry_run {
            return Ok((old, 200));
        }
        let policy = opts.propagation.as_deref().unwrap_or("Background");
        check_policy(policy)?;
        Ok(self.delete_internal(rt, old, policy))
    }

    pub(super) fn delete_internal(
        &mut self,
        rt: &ResourceType,
        old: Value,
        policy: &str,
    ) -> (Value, u16) {
        let mut fins = util::finalizers_of(&old);
        let extra = match policy {
            "Foreground" => Some("foregroundDeletion"),
            "Orphan" => Some("orphan"),
            _ => None,
        };
        if let Some(f) = extra
            && !fins.iter().any(|x| x == f)
        {
            fins.push(f.to_string());
        }
        if fins.is_empty() && may_vanish(&rt.storage, &old) {
            let key = State::key(rt, util::meta_str(&old, "namespace"), name_of(&old));
            return match self.remove_key(&key) {
                Some(gone) => (to_view(rt, &gone), 200),
                None => (old, 200),
            };
        }
        let mut new = old.clone();
        util::set_finalizers(&mut new, fins);
        {
            let m = meta_mut(&mut new);
            if !m.contains_key("deletionTimestamp") {
                m.insert("deletionTimestamp".into(), json!(now()));
                m.insert("deletionGracePeriodSeconds".into(), json!(0));
            }
        }
        if rt.plural == "namespaces" {
            new["status"] = json!({"phase": "Terminating"});
        }
        if strip_volatile(&new) == strip_volatile(&old) {
            return (old, 200);
        }
        let v = self.put(rt, new);
        (v, 200)
    }

    /// DELETE of a collection: deletes every object the selectors match (one that is
    /// already gone is skipped). Returns the deleted objects and the list metadata.
    pub fn delete_collection(
        &mut self,
        rt: &ResourceType,
        ns: Option<&str>,
        lsel: &LabelSelector,
        fsel: &FieldSelector,
        opts: &DeleteOpts,
    ) -> ApiResult<(Vec<Value>, Value)> {
        let (items, meta) = self.list(rt, ns, lsel, fsel, None, None)?;
        let mut out = vec![];
        for it in items {
            let ins = crate::util::meta_str(&it, "namespace").map(String::from);
            match self.delete(rt, ins.as_deref(), crate::util::name_of(&it), opts) {
                Ok((o, _)) => out.push(o),
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        Ok((out, meta))
    }
}

/// Kinds whose registry sets `ReturnDeletedObject` in kube-apiserver: a DELETE that removes
/// one of them at once answers with the object, every other kind with a `Status`.
const RETURNS_DELETED_OBJECT: &[(&str, &str)] = &[
    ("", "pods"),
    ("", "services"),
    ("", "serviceaccounts"),
    ("", "persistentvolumes"),
    ("", "persistentvolumeclaims"),
    ("storage.k8s.io", "storageclasses"),
];

/// The `Status` kube-apiserver answers to a DELETE that removed `obj` at once (generic
/// registry's `finalizeDelete`), or `None` when the answer is the object itself: its
/// deletion waits on finalizers (it carries a `deletionTimestamp`) or its kind returns
/// deleted objects. kube-rs's `Api::delete` tells the two apart (`Either`).
pub(crate) fn deleted_status(rt: &ResourceType, obj: &Value) -> Option<Value> {
    let pending = obj
        .get("metadata")
        .and_then(|m| m.get("deletionTimestamp"))
        .is_some_and(|t| !t.is_null());
    let returns_object = RETURNS_DELETED_OBJECT
        .iter()
        .any(|(g, p)| rt.group == *g && rt.plural == *p);
    if pending || returns_object || rt.is_namespaces() {
        return None;
    }
    let mut details = json!({"name": name_of(obj), "kind": rt.plural, "uid": uid_of(obj)});
    if !rt.group.is_empty() {
        details["group"] = json!(rt.group);
    }
    Some(json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Success", "details": details
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::builtins;

    fn rt(plural: &str) -> ResourceType {
        builtins()
            .into_iter()
            .find(|t| t.plural == plural)
            .expect("a built-in")
    }

    #[test]
    fn deleted_at_once_answers_a_status_unless_the_kind_returns_the_object() {
        let gone = json!({"metadata": {"name": "a", "uid": "u1"}});
        let status = deleted_status(&rt("configmaps"), &gone).expect("a Status");
        assert_eq!(
            status["details"],
            json!({"name": "a", "kind": "configmaps", "uid": "u1"})
        );
        let lease = deleted_status(&rt("leases"), &gone).expect("a Status");
        assert_eq!(lease["details"]["group"], "coordination.k8s.io");
        assert_eq!(deleted_status(&rt("serviceaccounts"), &gone), None);
        let pending =
            json!({"metadata": {"name": "a", "deletionTimestamp": "2026-01-01T00:00:00Z"}});
        assert_eq!(deleted_status(&rt("configmaps"), &pending), None);
    }

    #[test]
    fn a_status_write_keeps_the_spec_and_an_object_write_the_status() {
        let old = json!({"spec": {"a": 1}, "status": {"s": 1}});
        let incoming = json!({"spec": {"a": 2}, "status": {"s": 2}});
        let status = written_through(Scope::Status, &old, &incoming, false);
        assert_eq!(status, json!({"spec": {"a": 1}, "status": {"s": 2}}));
        let main = Scope::Main {
            exclude_status: true,
        };
        let object = written_through(main, &old, &incoming, false);
        assert_eq!(object, json!({"spec": {"a": 2}, "status": {"s": 1}}));
    }
}
