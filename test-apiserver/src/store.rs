//! The in-memory object store: objects, the global resourceVersion counter, the event
//! history for watches, live watchers, write semantics and the garbage collector.

use crate::events::{core_to_v1, v1_to_core};
use crate::registry::{Registry, ResourceType};
use crate::schema;
use crate::selector::{FieldSelector, LabelSelector};
use crate::ssa::{self, Scope};
use crate::status::{ApiError, ApiResult, Cause};
use crate::util::{self, meta_mut, name_of, now, uid_of};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Arc;
use tokio::sync::mpsc::UnboundedSender;

/// How many changes the watch history keeps before old resourceVersions expire.
pub const HISTORY_LIMIT: usize = 100_000;

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Key {
    pub storage: String,
    pub ns: String,
    pub name: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeType {
    Added,
    Modified,
    Deleted,
}

/// One write, as recorded in the history and sent to watchers (storage shape).
#[derive(Debug)]
pub struct Change {
    pub rv: u64,
    pub storage: String,
    pub ns: String,
    pub kind: ChangeType,
    pub old: Option<Value>,
    pub new: Value,
}

#[derive(Debug)]
pub enum WatchMsg {
    Change(Arc<Change>),
}

pub struct Watcher {
    pub storage: String,
    pub ns: Option<String>,
    pub tx: UnboundedSender<WatchMsg>,
}

/// Options common to writes.
#[derive(Debug, Clone, Default)]
pub struct WriteOpts {
    pub dry_run: bool,
    pub manager: String,
    /// `Strict` rejects unknown fields (400), otherwise they are pruned.
    pub field_validation: String,
}

#[derive(Debug, Clone, Default)]
pub struct DeleteOpts {
    pub propagation: Option<String>,
    pub uid: Option<String>,
    pub resource_version: Option<String>,
    pub dry_run: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PatchType {
    Merge,
    Json,
    Strategic,
    Apply,
}

pub struct State {
    pub rv: u64,
    /// Watches from a resourceVersion below this answer 410 Gone.
    pub floor: u64,
    pub objects: BTreeMap<Key, Value>,
    pub history: VecDeque<Arc<Change>>,
    pub watchers: Vec<Watcher>,
    pub registry: Registry,
    /// The garbage collector's indexes and work queues, kept current by every write.
    gc: GcIndex,
}

/// What the garbage collector knows without scanning the store, maintained by `put` and
/// `remove_key` (the only places that change `State::objects`). kube-controller-manager's
/// GC works the same way: a graph of owner → dependents fed by watch events, and queues
/// (`attemptToDelete`, `attemptToOrphan`) of the nodes an event made worth a look.
///
/// Invariant (checked by the tests with [`State::gc_plan_everything`]): between passes,
/// every object for which a full scan would find something to do is queued.
#[derive(Default)]
struct GcIndex {
    /// uid → key of the stored object with that uid.
    uids: HashMap<String, Key>,
    /// owner uid → the objects (any namespace) whose ownerReferences name that uid.
    dependents: HashMap<String, BTreeSet<Key>>,
    /// Objects whose ownerReferences need another look: they were created, their
    /// ownerReferences, deletionTimestamp or finalizers changed, or an owner they name
    /// appeared, disappeared or started a foreground/orphan deletion.
    dirty_dependents: BTreeSet<Key>,
    /// Owner uids whose `orphan`/`foregroundDeletion` finalizer needs another look: the
    /// owner entered such a deletion, or the set of references to it changed.
    dirty_owners: BTreeSet<String>,
}

/// What the garbage collector does to one dependent.
#[derive(Debug)]
enum GcAction {
    /// Delete it with this propagation policy (its owners are all gone).
    Delete(Key, &'static str),
    /// Remove the ownerReferences with these uids.
    DropRefs(Key, Vec<String>),
}

/// An owner's deletion state as its dependents see it: (foreground, orphan).
fn owner_state(o: &Value) -> (bool, bool) {
    if !util::is_deleting(o) {
        return (false, false);
    }
    let fins = util::finalizers_of(o);
    (
        fins.iter().any(|f| f == "foregroundDeletion"),
        fins.iter().any(|f| f == "orphan"),
    )
}

fn owner_refs_value(obj: &Value) -> Option<&Value> {
    obj.get("metadata").and_then(|m| m.get("ownerReferences"))
}

/// The owner uids an object's ownerReferences name ("" for a reference without one).
fn ref_uids(obj: &Value) -> Vec<String> {
    owner_refs_value(obj)
        .and_then(Value::as_array)
        .map(|refs| {
            refs.iter()
                .map(|r| {
                    r.get("uid")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string()
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Converts a stored object into the requested resource's view.
pub fn to_view(rt: &ResourceType, stored: &Value) -> Value {
    if rt.is_events_v1() {
        core_to_v1(stored)
    } else {
        stored.clone()
    }
}

fn to_storage(rt: &ResourceType, view: &Value) -> Value {
    if rt.is_events_v1() {
        v1_to_core(view)
    } else {
        view.clone()
    }
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

fn owner_refs(obj: &Value) -> Vec<Value> {
    obj.get("metadata")
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

impl Default for State {
    fn default() -> Self {
        let mut s = State {
            rv: 0,
            floor: 0,
            objects: BTreeMap::new(),
            history: VecDeque::new(),
            watchers: vec![],
            registry: Registry::default(),
            gc: GcIndex::default(),
        };
        for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            let rt = s.rt_of("", "namespaces");
            let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
            let opts = WriteOpts {
                manager: "kube-apiserver".into(),
                ..Default::default()
            };
            if let Some(rt) = rt {
                let _ = s.create(&rt, None, body, &opts);
            }
        }
        s
    }
}

impl State {
    pub fn rt_of(&self, group: &str, plural: &str) -> Option<ResourceType> {
        self.registry
            .types
            .iter()
            .find(|t| t.group == group && t.plural == plural)
            .cloned()
    }

    fn key(rt: &ResourceType, ns: Option<&str>, name: &str) -> Key {
        Key {
            storage: rt.storage.clone(),
            ns: if rt.namespaced {
                ns.unwrap_or("").to_string()
            } else {
                String::new()
            },
            name: name.to_string(),
        }
    }

    fn emit(&mut self, change: Change) {
        let change = Arc::new(change);
        self.watchers.retain(|w| {
            if w.storage != change.storage {
                return !w.tx.is_closed();
            }
            if let Some(ns) = &w.ns
                && *ns != change.ns
            {
                return !w.tx.is_closed();
            }
            w.tx.send(WatchMsg::Change(change.clone())).is_ok()
        });
        self.history.push_back(change);
        while self.history.len() > HISTORY_LIMIT {
            if let Some(c) = self.history.pop_front() {
                self.floor = c.rv;
            }
        }
    }

    /// Keeps the garbage collector's indexes current and queues what a write made worth
    /// its attention. `old`/`new` are the stored object before/after (None: absent).
    fn gc_track(&mut self, key: &Key, old: Option<&Value>, new: Option<&Value>) {
        let gc = &mut self.gc;
        // The object as an owner.
        let old_uid = old.map(uid_of);
        let new_uid = new.map(uid_of);
        let mut owner_changed: Vec<&str> = vec![];
        if old_uid != new_uid {
            if let Some(u) = old_uid {
                if gc.uids.get(u) == Some(key) {
                    gc.uids.remove(u);
                }
                owner_changed.push(u);
            }
            if let Some(u) = new_uid {
                gc.uids.insert(u.to_string(), key.clone());
                owner_changed.push(u);
            }
        } else if let Some(u) = new_uid
            && old.map(owner_state) != new.map(owner_state)
        {
            owner_changed.push(u);
        }
        for u in owner_changed {
            if let Some(ds) = gc.dependents.get(u) {
                gc.dirty_dependents.extend(ds.iter().cloned());
            }
            gc.dirty_owners.insert(u.to_string());
        }
        if let (Some(n), Some(u)) = (new, new_uid)
            && owner_state(n) != (false, false)
        {
            gc.dirty_owners.insert(u.to_string());
        }
        // The object as a dependent.
        let old_refs = old.and_then(owner_refs_value);
        let new_refs = new.and_then(owner_refs_value);
        let refs_changed = old_refs != new_refs;
        if refs_changed {
            for u in old.map(ref_uids).unwrap_or_default() {
                if let Some(ds) = gc.dependents.get_mut(&u) {
                    ds.remove(key);
                    if ds.is_empty() {
                        gc.dependents.remove(&u);
                    }
                }
                gc.dirty_owners.insert(u);
            }
            for u in new.map(ref_uids).unwrap_or_default() {
                gc.dependents
                    .entry(u.clone())
                    .or_default()
                    .insert(key.clone());
                gc.dirty_owners.insert(u);
            }
        }
        if let Some(n) = new
            && new_refs.is_some()
            && (refs_changed
                || old.is_none_or(|o| {
                    util::is_deleting(o) != util::is_deleting(n)
                        || util::finalizers_of(o) != util::finalizers_of(n)
                }))
        {
            gc.dirty_dependents.insert(key.clone());
        }
    }

    /// Stores a (view-shaped) object with a new resourceVersion; returns the stored view.
    fn put(&mut self, rt: &ResourceType, mut obj: Value) -> Value {
        self.rv += 1;
        let rv = self.rv;
        meta_mut(&mut obj).insert("resourceVersion".into(), json!(rv.to_string()));
        let stored = to_storage(rt, &obj);
        let ns = util::meta_str(&stored, "namespace").map(String::from);
        let key = State::key(rt, ns.as_deref(), name_of(&stored));
        let old = self.objects.insert(key.clone(), stored.clone());
        self.gc_track(&key, old.as_ref(), Some(&stored));
        if rt.group == "apiextensions.k8s.io" {
            self.registry.install_crd(&stored);
        }
        self.emit(Change {
            rv,
            storage: key.storage,
            ns: key.ns,
            kind: if old.is_some() {
                ChangeType::Modified
            } else {
                ChangeType::Added
            },
            old,
            new: stored,
        });
        obj
    }

    /// Removes an object (storage key), emitting DELETED with a fresh resourceVersion.
    fn remove_key(&mut self, key: &Key) -> Option<Value> {
        let mut old = self.objects.remove(key)?;
        self.gc_track(key, Some(&old), None);
        self.rv += 1;
        let rv = self.rv;
        meta_mut(&mut old).insert("resourceVersion".into(), json!(rv.to_string()));
        self.emit(Change {
            rv,
            storage: key.storage.clone(),
            ns: key.ns.clone(),
            kind: ChangeType::Deleted,
            old: None,
            new: old.clone(),
        });
        // Cascades that kube-apiserver's own controllers perform.
        if key.storage == "apiextensions.k8s.io/customresourcedefinitions" {
            if let Some(rt) = self.registry.remove_crd(&key.name) {
                let keys: Vec<Key> = self
                    .objects
                    .keys()
                    .filter(|k| k.storage == rt.storage)
                    .cloned()
                    .collect();
                for k in keys {
                    self.remove_key(&k);
                }
            }
        } else if key.storage == "/namespaces" {
            let keys: Vec<Key> = self
                .objects
                .keys()
                .filter(|k| k.ns == key.name)
                .cloned()
                .collect();
            for k in keys {
                self.remove_key(&k);
            }
        }
        Some(old)
    }

    pub fn get(&self, rt: &ResourceType, ns: Option<&str>, name: &str) -> ApiResult<Value> {
        self.objects
            .get(&State::key(rt, ns, name))
            .map(|o| to_view(rt, o))
            .ok_or_else(|| ApiError::not_found(&rt.plural, &rt.group, name))
    }

    /// Stored objects of a resource (optionally in one namespace), in key order.
    pub fn scan<'a>(
        &'a self,
        rt: &ResourceType,
        ns: Option<&'a str>,
    ) -> impl Iterator<Item = (&'a Key, &'a Value)> + 'a {
        let start = Key {
            storage: rt.storage.clone(),
            ns: ns.unwrap_or("").to_string(),
            name: String::new(),
        };
        let storage = rt.storage.clone();
        self.objects
            .range(start..)
            .take_while(move |(k, _)| k.storage == storage && ns.is_none_or(|n| k.ns == n))
    }

    #[allow(clippy::too_many_arguments)]
    pub fn list(
        &self,
        rt: &ResourceType,
        ns: Option<&str>,
        lsel: &LabelSelector,
        fsel: &FieldSelector,
        limit: Option<usize>,
        cont: Option<&str>,
    ) -> ApiResult<(Vec<Value>, Value)> {
        let mut list_rv = self.rv;
        let mut after: Option<(String, String)> = None;
        if let Some(c) = cont.filter(|c| !c.is_empty()) {
            use base64::Engine;
            let raw = base64::engine::general_purpose::STANDARD
                .decode(c)
                .ok()
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                .ok_or_else(|| ApiError::bad_request("continue key is not valid"))?;
            let rv = raw.get("rv").and_then(Value::as_u64).unwrap_or(0);
            if rv < self.floor {
                return Err(ApiError::gone(
                    "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue value from the response.",
                ));
            }
            list_rv = rv;
            after = Some((
                raw.get("ns").and_then(Value::as_str).unwrap_or("").into(),
                raw.get("name").and_then(Value::as_str).unwrap_or("").into(),
            ));
        }
        let mut items = vec![];
        let mut next: Option<(String, String)> = None;
        let mut remaining = 0usize;
        for (k, obj) in self.scan(rt, ns) {
            if let Some((ans, aname)) = &after
                && (k.ns.as_str(), k.name.as_str()) <= (ans.as_str(), aname.as_str())
            {
                continue;
            }
            if !lsel.matches(obj) || !fsel.matches(obj) {
                continue;
            }
            if let Some(l) = limit.filter(|l| *l > 0)
                && items.len() >= l
            {
                if next.is_none()
                    && let Some(last) = items.last()
                {
                    next = Some((
                        util::meta_str(last, "namespace").unwrap_or("").to_string(),
                        name_of(last).to_string(),
                    ));
                }
                remaining += 1;
                continue;
            }
            items.push(to_view(rt, obj));
        }
        let mut meta = json!({"resourceVersion": list_rv.to_string()});
        if let Some((ns, name)) = next {
            use base64::Engine;
            let token = json!({"rv": list_rv, "ns": ns, "name": name}).to_string();
            meta["continue"] =
                json!(base64::engine::general_purpose::STANDARD.encode(token.as_bytes()));
            meta["remainingItemCount"] = json!(remaining);
        }
        Ok((items, meta))
    }

    fn namespace_exists(&self, ns: &str) -> bool {
        self.objects.contains_key(&Key {
            storage: "/namespaces".into(),
            ns: String::new(),
            name: ns.into(),
        })
    }

    /// Pruning, defaulting and schema validation of a custom resource.
    fn check_schema(
        &self,
        rt: &ResourceType,
        obj: &mut Value,
        opts: &WriteOpts,
        causes: &mut Vec<Cause>,
    ) -> ApiResult<()> {
        let Some(s) = &rt.schema else { return Ok(()) };
        let mut pruned = vec![];
        schema::prune(obj, s, "", true, &mut pruned);
        if opts.field_validation == "Strict" && !pruned.is_empty() {
            let list: Vec<String> = pruned
                .iter()
                .map(|p| format!("unknown field \"{p}\""))
                .collect();
            return Err(ApiError::bad_request(format!(
                "{} in version \"{}\" cannot be handled as a {}: strict decoding error: {}",
                rt.kind,
                rt.version,
                rt.kind,
                list.join(", ")
            )));
        }
        schema::default(obj, s);
        schema::validate(obj, s, "", causes);
        Ok(())
    }

    fn validate_common(
        &self,
        rt: &ResourceType,
        obj: &mut Value,
        opts: &WriteOpts,
        create: bool,
    ) -> ApiResult<()> {
        let mut causes = vec![];
        let name = name_of(obj).to_string();
        if create {
            let errs = if rt.plural == "namespaces" {
                util::dns_label_errors(&name)
            } else if rt.is_core_events() || rt.is_events_v1() {
                vec![]
            } else {
                util::dns_subdomain_errors(&name)
            };
            for e in errs {
                causes.push(Cause::invalid("metadata.name", &format!("{name:?}"), &e));
            }
        }
        self.check_schema(rt, obj, opts, &mut causes)?;
        if rt.group == "apiextensions.k8s.io" {
            crd_checks(obj, &mut causes);
        }
        if !causes.is_empty() {
            return Err(ApiError::invalid(&rt.kind, &rt.group, &name, causes));
        }
        Ok(())
    }

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
    fn create_prepared(
        &mut self,
        rt: &ResourceType,
        mut obj: Value,
        opts: &WriteOpts,
        applied: Option<()>,
    ) -> ApiResult<Value> {
        let ns = util::meta_str(&obj, "namespace").map(String::from);
        let mut name = name_of(&obj).to_string();
        if name.is_empty() {
            let gen_name = util::meta_str(&obj, "generateName")
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
            loop {
                let candidate = format!("{gen_name}{}", util::random_suffix());
                if !self
                    .objects
                    .contains_key(&State::key(rt, ns.as_deref(), &candidate))
                {
                    name = candidate;
                    break;
                }
            }
            meta_mut(&mut obj).insert("name".into(), json!(name));
        }
        if let Some(ns) = &ns
            && !self.namespace_exists(ns)
        {
            return Err(ApiError::not_found("namespaces", "", ns));
        }
        {
            let m = meta_mut(&mut obj);
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
        }
        if rt.status_subresource
            && rt.plural != "namespaces"
            && let Some(m) = obj.as_object_mut()
        {
            m.remove("status");
        }
        builtin_defaults(rt, &mut obj, None);
        self.validate_common(rt, &mut obj, opts, true)?;
        if self
            .objects
            .contains_key(&State::key(rt, ns.as_deref(), &name))
        {
            return Err(ApiError::already_exists(&rt.plural, &rt.group, &name));
        }
        if applied.is_none() {
            ssa::record_update(
                None,
                &mut obj,
                &opts.manager,
                Scope::Main {
                    exclude_status: false,
                },
                &rt.api_version(),
            );
        }
        if opts.dry_run {
            return Ok(obj);
        }
        Ok(self.put(rt, obj))
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
    fn finish_update(
        &mut self,
        rt: &ResourceType,
        old: Value,
        incoming: Value,
        sub: Option<&str>,
        opts: &WriteOpts,
        applied: bool,
    ) -> ApiResult<Value> {
        let scope = if sub == Some("status") {
            Scope::Status
        } else {
            Scope::Main {
                exclude_status: rt.status_subresource,
            }
        };
        let mut new = match scope {
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
        };
        // System metadata is kept from the stored object.
        {
            let old_meta = old.get("metadata").cloned().unwrap_or(json!({}));
            let m = meta_mut(&mut new);
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
        }
        if let Some(m) = new.as_object_mut() {
            m.insert("apiVersion".into(), json!(rt.api_version()));
            m.insert("kind".into(), json!(rt.kind));
        }
        builtin_defaults(rt, &mut new, Some(&old));
        self.validate_common(rt, &mut new, opts, false)?;
        if rt.generation
            && strip_for_generation(&old, rt.status_subresource)
                != strip_for_generation(&new, rt.status_subresource)
        {
            let g = old
                .get("metadata")
                .and_then(|m| m.get("generation"))
                .and_then(Value::as_i64)
                .unwrap_or(0);
            meta_mut(&mut new).insert("generation".into(), json!(g + 1));
        }
        if !applied {
            ssa::record_update(
                Some(&old),
                &mut new,
                &opts.manager,
                scope,
                &rt.api_version(),
            );
        }
        if strip_volatile(&old) == strip_volatile(&new) {
            return Ok(old);
        }
        if opts.dry_run {
            return Ok(new);
        }
        let stored = self.put(rt, new);
        if util::is_deleting(&stored) && util::finalizers_of(&stored).is_empty() {
            let key = State::key(rt, util::meta_str(&stored, "namespace"), name_of(&stored));
            if let Some(gone) = self.remove_key(&key) {
                return Ok(to_view(rt, &gone));
            }
        }
        Ok(stored)
    }

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
            let scope = if sub == Some("status") {
                Scope::Status
            } else {
                Scope::Main {
                    exclude_status: rt.status_subresource,
                }
            };
            let mut cfg = cfg;
            if let Some(k) = cfg.get("kind").and_then(Value::as_str)
                && k != rt.kind
            {
                return Err(ApiError::bad_request(format!(
                    "the kind in the apply configuration ({k}) does not match the resource ({})",
                    rt.kind
                )));
            }
            match old {
                Err(e) if e.code == 404 => {
                    if sub.is_some() {
                        return Err(e);
                    }
                    meta_mut(&mut cfg).insert("name".into(), json!(name));
                    if rt.namespaced {
                        meta_mut(&mut cfg).insert("namespace".into(), json!(ns.unwrap_or("")));
                    }
                    let created =
                        ssa::apply(None, &cfg, &opts.manager, force, scope, &rt.api_version())
                            .map_err(|c| conflict_error(rt, name, c))?;
                    let created = normalize_body(rt, created)?;
                    let v = self.create_prepared(rt, created, opts, Some(()))?;
                    return Ok((v, 201));
                }
                Err(e) => return Err(e),
                Ok(old) => {
                    if let Some(rv) = util::meta_str(&cfg, "resourceVersion")
                        && rv != util::rv_of(&old)
                    {
                        return Err(ApiError::stale(&rt.plural, &rt.group, name));
                    }
                    let new = ssa::apply(
                        Some(&old),
                        &cfg,
                        &opts.manager,
                        force,
                        scope,
                        &rt.api_version(),
                    )
                    .map_err(|c| conflict_error(rt, name, c))?;
                    let v = self.finish_update(rt, old, new, sub, opts, true)?;
                    return Ok((v, 200));
                }
            }
        }
        let old = old?;
        let patch: Value = serde_json::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
        let mut new = old.clone();
        match ptype {
            PatchType::Json => {
                let p: json_patch::Patch = serde_json::from_value(patch).map_err(|e| {
                    ApiError::bad_request(format!("error decoding json patch: {e}"))
                })?;
                json_patch::patch(&mut new, &p).map_err(|e| {
                    ApiError::new(
                        422,
                        "Invalid",
                        format!(
                            "the server rejected our request due to an error in our request: {e}"
                        ),
                    )
                })?;
            }
            PatchType::Merge => {
                if !patch.is_object() {
                    return Err(ApiError::bad_request(
                        "error decoding patch: merge patch must be a JSON object",
                    ));
                }
                json_patch::merge(&mut new, &patch);
            }
            PatchType::Strategic => {
                if !patch.is_object() {
                    return Err(ApiError::bad_request(
                        "error decoding patch: strategic merge patch must be a JSON object",
                    ));
                }
                strategic_merge(&mut new, &patch);
            }
            PatchType::Apply => unreachable!("handled above"),
        }
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
        let v = self.finish_update(rt, old, new, sub, opts, false)?;
        Ok((v, 200))
    }

    /// DELETE of one object. Returns the object and the HTTP code (200 gone, 202 pending).
    pub fn delete(
        &mut self,
        rt: &ResourceType,
        ns: Option<&str>,
        name: &str,
        opts: &DeleteOpts,
    ) -> ApiResult<(Value, u16)> {
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
        if opts.dry_run {
            return Ok((old, 200));
        }
        let policy = opts.propagation.as_deref().unwrap_or("Background");
        if !["Background", "Foreground", "Orphan"].contains(&policy) {
            return Err(ApiError::invalid(
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
            ));
        }
        Ok(self.delete_internal(rt, old, policy))
    }

    fn delete_internal(&mut self, rt: &ResourceType, old: Value, policy: &str) -> (Value, u16) {
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
        if fins.is_empty() {
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
            return (old, 202);
        }
        let v = self.put(rt, new);
        (v, 202)
    }

    /// What the garbage collector would do for these dependents and owners, computed from
    /// the current state (nothing changes while planning): actions on dependents, then
    /// finalizers to remove from owners.
    fn gc_plan(
        &self,
        dependents: &BTreeSet<Key>,
        owners: &BTreeSet<String>,
    ) -> (Vec<GcAction>, Vec<(Key, &'static str)>) {
        // uid -> (owner key, deleting in foreground, being orphaned)
        let owner = |uid: &str| -> Option<(&Key, bool, bool)> {
            let k = self.gc.uids.get(uid)?;
            let (fg, orphan) = owner_state(self.objects.get(k)?);
            Some((k, fg, orphan))
        };
        let mut actions = vec![];
        for k in dependents {
            let Some(o) = self.objects.get(k) else {
                continue;
            };
            let refs = owner_refs(o);
            if refs.is_empty() {
                continue;
            }
            let mut solid = 0;
            let mut dangling = vec![];
            let mut waiting = vec![];
            let mut waiting_block = false;
            for r in &refs {
                let uid = r.get("uid").and_then(Value::as_str).unwrap_or("");
                match owner(uid) {
                    Some((ok, fg, orphan)) if ok.ns.is_empty() || ok.ns == k.ns => {
                        if orphan {
                            // handled below: the reference is removed
                            solid += 1;
                        } else if fg {
                            waiting.push(uid.to_string());
                            if r.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true) {
                                waiting_block = true;
                            }
                        } else {
                            solid += 1;
                        }
                    }
                    _ => dangling.push(uid.to_string()),
                }
            }
            if solid > 0 {
                if !dangling.is_empty() || !waiting.is_empty() {
                    let mut drop = dangling;
                    drop.extend(waiting);
                    actions.push(GcAction::DropRefs(k.clone(), drop));
                }
            } else if util::is_deleting(o) {
                continue;
            } else if !waiting.is_empty() && waiting_block {
                actions.push(GcAction::Delete(k.clone(), "Foreground"));
            } else {
                let fins = util::finalizers_of(o);
                let policy = if fins.iter().any(|f| f == "orphan") {
                    "Orphan"
                } else if fins.iter().any(|f| f == "foregroundDeletion") {
                    "Foreground"
                } else {
                    "Background"
                };
                actions.push(GcAction::Delete(k.clone(), policy));
            }
        }
        // Owners being orphaned / foreground-deleted.
        let mut finalize = vec![];
        let none = BTreeSet::new();
        for uid in owners {
            let Some((k, fg, orphan)) = owner(uid) else {
                continue;
            };
            let deps = self.gc.dependents.get(uid).unwrap_or(&none);
            if orphan {
                for dk in deps {
                    actions.push(GcAction::DropRefs(dk.clone(), vec![uid.clone()]));
                }
                finalize.push((k.clone(), "orphan"));
            } else if fg {
                let blocked = deps.iter().filter_map(|dk| self.objects.get(dk)).any(|d| {
                    owner_refs(d).iter().any(|r| {
                        r.get("uid").and_then(Value::as_str) == Some(uid)
                            && r.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true)
                    })
                });
                if !blocked {
                    finalize.push((k.clone(), "foregroundDeletion"));
                }
            }
        }
        (actions, finalize)
    }

    /// What a garbage-collector pass over every stored object would do (the tests check
    /// that it is nothing once the queued work is done).
    #[cfg(test)]
    fn gc_plan_everything(&self) -> (Vec<GcAction>, Vec<(Key, &'static str)>) {
        let keys: BTreeSet<Key> = self.objects.keys().cloned().collect();
        let uids: BTreeSet<String> = self
            .objects
            .values()
            .map(|o| uid_of(o).to_string())
            .collect();
        self.gc_plan(&keys, &uids)
    }

    /// Whether the garbage collector has queued work.
    pub fn gc_pending(&self) -> bool {
        !self.gc.dirty_dependents.is_empty() || !self.gc.dirty_owners.is_empty()
    }

    /// Deletes whatever is pending: the garbage collector of kube-controller-manager,
    /// approximated. Looks only at what writes since the last pass queued (see
    /// [`GcIndex`]); what it changes queues the next pass's work. Returns true if it
    /// changed anything.
    pub fn gc_pass(&mut self) -> bool {
        if !self.gc_pending() {
            return false;
        }
        let dependents = std::mem::take(&mut self.gc.dirty_dependents);
        let owners = std::mem::take(&mut self.gc.dirty_owners);
        let (actions, finalize) = self.gc_plan(&dependents, &owners);
        let mut changed = false;
        for a in actions {
            match a {
                GcAction::Delete(k, policy) => {
                    if let (Some(o), Some(rt)) = (
                        self.objects.get(&k).cloned(),
                        self.registry.find_storage(&k.storage).cloned(),
                    ) {
                        let o = to_view(&rt, &o);
                        self.delete_internal(&rt, o, policy);
                        changed = true;
                    }
                }
                GcAction::DropRefs(k, uids) => {
                    if let (Some(o), Some(rt)) = (
                        self.objects.get(&k).cloned(),
                        self.registry.find_storage(&k.storage).cloned(),
                    ) {
                        let mut n = to_view(&rt, &o);
                        let refs: Vec<Value> = owner_refs(&n)
                            .into_iter()
                            .filter(|r| {
                                !uids.iter().any(|u| {
                                    r.get("uid").and_then(Value::as_str) == Some(u.as_str())
                                })
                            })
                            .collect();
                        let m = meta_mut(&mut n);
                        if refs.is_empty() {
                            m.remove("ownerReferences");
                        } else {
                            m.insert("ownerReferences".into(), Value::Array(refs));
                        }
                        self.put(&rt, n);
                        changed = true;
                    }
                }
            }
        }
        for (k, fin) in finalize {
            if let (Some(o), Some(rt)) = (
                self.objects.get(&k).cloned(),
                self.registry.find_storage(&k.storage).cloned(),
            ) {
                let mut n = to_view(&rt, &o);
                let fins: Vec<String> = util::finalizers_of(&n)
                    .into_iter()
                    .filter(|f| f != fin)
                    .collect();
                let empty = fins.is_empty();
                util::set_finalizers(&mut n, fins);
                if empty {
                    self.remove_key(&k);
                } else {
                    self.put(&rt, n);
                }
                changed = true;
            }
        }
        changed
    }

    /// Every resourceVersion issued so far becomes "too old" (410 Gone).
    pub fn compact(&mut self) {
        self.rv += 1;
        self.floor = self.rv;
        self.history.clear();
    }
}

fn conflict_error(rt: &ResourceType, name: &str, conflicts: Vec<ssa::Conflict>) -> ApiError {
    let n = conflicts.len();
    let msg = if n == 1 {
        format!(
            "Apply failed with 1 conflict: conflict with \"{}\": {}",
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
                    "conflicts with \"{m}\":\n{}",
                    ps.iter()
                        .map(|p| format!("- {p}"))
                        .collect::<Vec<_>>()
                        .join("\n")
                )
            })
            .collect();
        format!("Apply failed with {n} conflicts: {}", parts.join("\n"))
    };
    let mut d = json!({"name": name, "kind": rt.plural});
    if !rt.group.is_empty() {
        d["group"] = json!(rt.group);
    }
    d["causes"] = Value::Array(
        conflicts
            .iter()
            .map(|c| json!({"reason": "FieldManagerConflict", "message": format!("conflict with \"{}\"", c.manager), "field": c.path}))
            .collect(),
    );
    ApiError {
        code: 409,
        reason: "Conflict".into(),
        message: msg,
        details: Some(d),
    }
}

/// Checks the body's apiVersion/kind and fills them in.
fn normalize_body(rt: &ResourceType, body: Value) -> ApiResult<Value> {
    let Value::Object(mut m) = body else {
        return Err(ApiError::bad_request(
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml",
        ));
    };
    if let Some(av) = m.get("apiVersion").and_then(Value::as_str)
        && !av.is_empty()
        && av != rt.api_version()
    {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({av}) does not match the expected API version ({})",
            rt.api_version()
        )));
    }
    if let Some(k) = m.get("kind").and_then(Value::as_str)
        && !k.is_empty()
        && k != rt.kind
    {
        return Err(ApiError::bad_request(format!(
            "the kind in the data ({k}) does not match the expected kind ({})",
            rt.kind
        )));
    }
    m.insert("apiVersion".into(), json!(rt.api_version()));
    m.insert("kind".into(), json!(rt.kind));
    if !m.get("metadata").is_some_and(Value::is_object) {
        m.insert("metadata".into(), Value::Object(Map::new()));
    }
    Ok(Value::Object(m))
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
        } else {
            t.insert(k.clone(), v.clone());
        }
    }
}

fn crd_checks(obj: &Value, causes: &mut Vec<Cause>) {
    let name = name_of(obj);
    let spec = obj.get("spec");
    let group = spec
        .and_then(|s| s.get("group"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let plural = spec
        .and_then(|s| s.get("names"))
        .and_then(|n| n.get("plural"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if group.is_empty() {
        causes.push(Cause::required("spec.group", ""));
    }
    if plural.is_empty() {
        causes.push(Cause::required("spec.names.plural", ""));
    }
    if spec
        .and_then(|s| s.get("names"))
        .and_then(|n| n.get("kind"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
    {
        causes.push(Cause::required("spec.names.kind", ""));
    }
    if !group.is_empty() && !plural.is_empty() && name != format!("{plural}.{group}") {
        causes.push(Cause::invalid(
            "metadata.name",
            &format!("{name:?}"),
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    let versions = spec
        .and_then(|s| s.get("versions"))
        .and_then(Value::as_array);
    if versions.is_none_or(|v| v.is_empty()) {
        causes.push(Cause::invalid(
            "spec.versions",
            "null",
            "must have exactly one version marked as storage version",
        ));
    }
    if !matches!(
        spec.and_then(|s| s.get("scope")).and_then(Value::as_str),
        Some("Namespaced") | Some("Cluster")
    ) {
        causes.push(Cause::new(
            "FieldValueNotSupported",
            "spec.scope",
            "Unsupported value: \"\": supported values: \"Cluster\", \"Namespaced\"",
        ));
    }
}

/// What the real server's strategies and controllers fill in for built-in kinds.
fn builtin_defaults(rt: &ResourceType, obj: &mut Value, old: Option<&Value>) {
    match (rt.group.as_str(), rt.plural.as_str()) {
        ("", "namespaces") => {
            let name = name_of(obj).to_string();
            let labels = meta_mut(obj).entry("labels").or_insert_with(|| json!({}));
            if let Some(l) = labels.as_object_mut() {
                l.insert("kubernetes.io/metadata.name".into(), json!(name));
            }
            if obj.get("spec").is_none() {
                obj["spec"] = json!({"finalizers": ["kubernetes"]});
            }
            let phase = old
                .and_then(|o| o.get("status").cloned())
                .unwrap_or(json!({"phase": "Active"}));
            obj["status"] = phase;
        }
        ("", "secrets") => {
            // The Secret strategy merges write-only stringData into data (base64).
            if let Some(Value::Object(sd)) =
                obj.as_object_mut().and_then(|m| m.remove("stringData"))
            {
                use base64::Engine;
                let data = obj
                    .as_object_mut()
                    .map(|m| m.entry("data").or_insert_with(|| json!({})));
                if let Some(Value::Object(d)) = data {
                    for (k, v) in sd {
                        let s = v.as_str().unwrap_or("").as_bytes().to_vec();
                        d.insert(
                            k,
                            json!(base64::engine::general_purpose::STANDARD.encode(s)),
                        );
                    }
                }
            }
            if obj.get("type").is_none() {
                obj["type"] = json!("Opaque");
            }
        }
        ("apiextensions.k8s.io", _) => {
            let names = obj
                .get("spec")
                .and_then(|s| s.get("names"))
                .cloned()
                .unwrap_or(json!({}));
            let mut accepted = names.clone();
            if accepted.get("singular").is_none() {
                let kind = names.get("kind").and_then(Value::as_str).unwrap_or("");
                accepted["singular"] = json!(kind.to_lowercase());
            }
            if accepted.get("listKind").is_none() {
                let kind = names.get("kind").and_then(Value::as_str).unwrap_or("");
                accepted["listKind"] = json!(format!("{kind}List"));
            }
            if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                if let Some(n) = spec.get_mut("names").and_then(Value::as_object_mut) {
                    n.insert("singular".into(), accepted["singular"].clone());
                    n.insert("listKind".into(), accepted["listKind"].clone());
                }
                spec.entry("conversion")
                    .or_insert_with(|| json!({"strategy": "None"}));
            }
            let stored: Vec<Value> = obj
                .get("spec")
                .and_then(|s| s.get("versions"))
                .and_then(Value::as_array)
                .map(|vs| {
                    vs.iter()
                        .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
                        .filter_map(|v| v.get("name").cloned())
                        .collect()
                })
                .unwrap_or_default();
            let ts = old
                .and_then(|o| o.get("metadata"))
                .and_then(|m| m.get("creationTimestamp"))
                .cloned()
                .unwrap_or(json!(now()));
            obj["status"] = json!({
                "acceptedNames": accepted,
                "conditions": [
                    {"type": "NamesAccepted", "status": "True", "lastTransitionTime": ts,
                     "reason": "NoConflicts", "message": "no conflicts found"},
                    {"type": "Established", "status": "True", "lastTransitionTime": ts,
                     "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"}
                ],
                "storedVersions": stored,
            });
        }
        _ => {}
    }
}

#[cfg(test)]
mod gc_tests {
    use super::*;

    /// A small deterministic generator (xorshift64*), so failures reproduce.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    fn opts() -> WriteOpts {
        WriteOpts {
            manager: "test".into(),
            ..Default::default()
        }
    }

    /// Runs passes until the queues are empty, then checks that a pass over every object
    /// (what the collector did before it kept indexes) would find nothing either.
    fn settle(st: &mut State) {
        for _ in 0..1000 {
            if !st.gc_pass() {
                break;
            }
        }
        assert!(!st.gc_pending(), "queued work left after the passes");
        let (actions, finalize) = st.gc_plan_everything();
        assert!(
            actions.is_empty() && finalize.is_empty(),
            "a full pass would still act: {actions:?} {finalize:?}"
        );
    }

    fn uids(st: &State) -> Vec<String> {
        st.objects.values().map(|o| uid_of(o).to_string()).collect()
    }

    /// kube-controller-manager's garbage collector keeps a graph of owners and dependents
    /// up to date from watch events and only processes the nodes an event touched; the
    /// store's incremental collector must reach the same result as a pass over every
    /// object after any mix of creates, ownerReference and finalizer changes, and
    /// background / foreground / orphan deletions (namespaced and cluster-scoped owners,
    /// owners in other namespaces, owner UIDs that never existed or no longer exist).
    #[test]
    fn incremental_gc_matches_a_full_scan() {
        for seed in 1..=40u64 {
            let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
            let mut st = State::default();
            let ns_rt = st.rt_of("", "namespaces").unwrap();
            st.create(
                &ns_rt,
                None,
                json!({"metadata": {"name": "other"}}),
                &opts(),
            )
            .unwrap();
            settle(&mut st);
            let cm = st.rt_of("", "configmaps").unwrap();
            let cr = st
                .rt_of("rbac.authorization.k8s.io", "clusterroles")
                .unwrap();
            let mut gone_uids: Vec<String> = vec!["never-existed".into()];
            for _ in 0..300 {
                let all = uids(&st);
                let pick_uid = |rng: &mut Rng| -> String {
                    if rng.below(5) == 0 {
                        gone_uids[rng.below(gone_uids.len())].clone()
                    } else {
                        all[rng.below(all.len())].clone()
                    }
                };
                let nrefs = rng.below(3);
                let refs: Vec<Value> = (0..nrefs)
                    .map(|i| {
                        json!({"apiVersion": "v1", "kind": "ConfigMap", "name": format!("o{i}"),
                               "uid": pick_uid(&mut rng), "blockOwnerDeletion": rng.below(2) == 0})
                    })
                    .collect();
                let (rt, ns) = if rng.below(4) == 0 {
                    (&cr, None)
                } else {
                    (&cm, Some(["default", "other"][rng.below(2)]))
                };
                let name = format!("o-{}", rng.below(12));
                match rng.below(6) {
                    0 | 1 => {
                        let mut meta = json!({"name": name});
                        if nrefs > 0 {
                            meta["ownerReferences"] = json!(refs);
                        }
                        if rng.below(4) == 0 {
                            meta["finalizers"] = json!(["test/hold"]);
                        }
                        let _ = st.create(rt, ns, json!({"metadata": meta}), &opts());
                    }
                    2 => {
                        let patch = if nrefs == 0 {
                            json!({"metadata": {"ownerReferences": null}})
                        } else {
                            json!({"metadata": {"ownerReferences": refs}})
                        };
                        let _ = st.patch(
                            rt,
                            ns,
                            &name,
                            None,
                            PatchType::Merge,
                            patch.to_string().as_bytes(),
                            false,
                            &opts(),
                        );
                    }
                    3 => {
                        let patch = json!({"metadata": {"finalizers": null}});
                        let _ = st.patch(
                            rt,
                            ns,
                            &name,
                            None,
                            PatchType::Merge,
                            patch.to_string().as_bytes(),
                            false,
                            &opts(),
                        );
                    }
                    _ => {
                        let policy = ["Background", "Foreground", "Orphan"][rng.below(3)];
                        if let Ok(o) = st.get(rt, ns, &name) {
                            gone_uids.push(uid_of(&o).to_string());
                        }
                        let _ = st.delete(
                            rt,
                            ns,
                            &name,
                            &DeleteOpts {
                                propagation: Some(policy.into()),
                                ..Default::default()
                            },
                        );
                    }
                }
                // Sometimes let several writes pile up before the collector runs.
                if rng.below(3) == 0 {
                    settle(&mut st);
                }
            }
            settle(&mut st);
        }
    }
}
