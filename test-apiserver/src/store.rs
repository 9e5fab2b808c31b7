//! The in-memory object store, split the way kube-apiserver separates the same concerns:
//!
//! - [`storage`]: the objects and the one global resourceVersion (etcd's role): put,
//!   remove, get, scan, paged lists, and the cascades kube-apiserver's own controllers
//!   perform (a deleted CRD takes its objects, a deleted namespace its contents).
//! - [`watch_cache`]: the history of changes and the live watchers (the `Cacher`).
//! - [`rest`]: the REST verbs' semantics for create, update and delete, finalizers
//!   included (the generic registry's `Store`); [`patch`] the four patch types and
//!   server-side apply; [`strategy`] per-kind validation and defaulting (the strategies).
//! - [`gc`]: the garbage collector, a controller-like component of its own
//!   (kube-controller-manager's), fed by every write and run by `background_loop` in
//!   `lib.rs`.
//! - [`quota`]: ResourceQuota admission (kube-apiserver's) and the quota controller
//!   (kube-controller-manager's); [`namespaces`]: NamespaceLifecycle admission, namespace
//!   deletion, and the namespace controller that empties a terminating namespace. Both
//!   controllers also run in `background_loop`.
//!
//! They share one [`State`] behind the server's mutex; each file adds an `impl State`
//! block for its concern.

mod crd_cleanup;
mod defaults;
mod gc;
mod namespaces;
mod patch;
mod quota;
mod rest;
mod storage;
mod strategy;
mod watch_cache;

pub use patch::PatchType;
pub(crate) use patch::{merge_key, patch_document};
pub(crate) use rest::deleted_status;
pub use rest::{DeleteOpts, WriteOpts};
pub use storage::to_view;
pub use watch_cache::{Change, ChangeType, WatchCache, WatchMsg, Watcher};

use crate::admission::Admission;
use crate::registry::{Registry, ResourceType};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// Where an object is stored: its resource's storage name, its namespace ("" for
/// cluster-scoped kinds) and its name. Ordered, so one resource's objects are a range.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Key {
    pub storage: String,
    pub ns: String,
    pub name: String,
}

/// Everything the server holds, behind one mutex; each concern adds its own `impl State`.
pub struct State {
    /// The global resourceVersion: the last one issued.
    pub rv: u64,
    pub objects: BTreeMap<Key, Value>,
    /// The history for watches that resume from a resourceVersion, and the live watchers.
    pub watch: WatchCache,
    pub registry: Registry,
    /// The garbage collector's indexes and work queues, kept current by every write.
    gc: gc::GcIndex,
    /// Admission plugins (off unless a test turns them on), run on every create and update.
    pub admission: Admission,
    /// The quota controller's queue (quota admission is always on).
    pub quota: quota::QuotaController,
    /// The namespace controller's queue.
    pub namespaces: namespaces::NamespaceController,
    /// apiextensions-apiserver's CRD finalizer controller's queue.
    pub crd_cleanup: crd_cleanup::CrdCleanup,
}

/// A fresh server: the built-in resources, the four namespaces every cluster has and the
/// objects a control plane creates in them (`defaults.rs`).
impl Default for State {
    fn default() -> Self {
        let mut s = State {
            rv: 0,
            objects: BTreeMap::new(),
            watch: WatchCache::default(),
            registry: Registry::default(),
            gc: gc::GcIndex::default(),
            admission: Admission::default(),
            quota: quota::QuotaController::default(),
            namespaces: namespaces::NamespaceController::default(),
            crd_cleanup: crd_cleanup::CrdCleanup::default(),
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
        s.create_cluster_defaults();
        s
    }
}

impl State {
    /// The served resource type of `group`/`plural`, if any.
    pub fn rt_of(&self, group: &str, plural: &str) -> Option<ResourceType> {
        self.registry
            .types
            .iter()
            .find(|t| t.group == group && t.plural == plural)
            .cloned()
    }

    /// The storage key of an object (the namespace is ignored for cluster-scoped kinds).
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
}
