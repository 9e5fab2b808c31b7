//! Objects the manager's types cannot decode, and how one of them stops nobody else.
//!
//! A CRD changed under stored objects is ordinary in a workshop (`make workshop-install`, then
//! `make install`, or an older checkout): kube-apiserver keeps serving an object as it was
//! stored, `spec.value: 1.5` under an `int64` schema included. kube decodes a list page as one
//! `ObjectList<K>`, so one such object failed the whole list of its kind, the caches never
//! synced and no controller started. The watches therefore list and watch [`Decoded<K>`]:
//! each object is decoded on its own, and one that does not decode is kept aside, named once
//! (the watch logs it, the reconcile's context writes a Warning Event on it and counts it in
//! `math_controller_undecodable_objects{kind}`), and read again when it changes: fixed, it
//! joins the cache; deleted, it is forgotten. Its parent finds its name here
//! ([`Undecodable::why`]) and says so in its Ready condition instead of creating it again.
//!
//! Why not kube's own `DeserializeGuard`: it buffers every object as a `serde_value` tree and
//! decodes a clone of that tree, the large managedFields included, and its error does not say
//! which field failed. Here the buffer is a `serde_json::Value` that never holds what no
//! controller reads (managedFields are skipped while parsing, the last-applied annotation
//! dropped): the one pass that makes an object tolerable also makes it lean, before the cache
//! keeps it. The typed decode reads that buffer in place, and only a failure is decoded again
//! with `serde_path_to_error`, to name the field.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, RwLock};

use futures::{Stream, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use serde::de::{DeserializeOwned, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};
use tracing::{info, warn};

use crate::cluster::cache::Cache;
use crate::cluster::watch_retry::Watched;
use crate::cluster::watches::Witness;
use crate::kind::Kind;

/// Kept by `kubectl apply` on every object; the manager never reads it.
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// An object as a list or a watch brought it: decoded as `K`, or kept aside with why not.
#[derive(Clone, Debug)]
pub struct Decoded<K>(pub Result<K, Undecoded>);

/// An object that did not decode: who it is, and serde's words with the field's path.
#[derive(Clone, Debug, PartialEq)]
pub struct Undecoded {
    pub metadata: ObjectMeta,
    /// `spec.value: invalid type: floating point `1.5`, expected i64`
    pub error: String,
}

impl<K: Resource> Resource for Decoded<K> {
    type DynamicType = K::DynamicType;
    type Scope = K::Scope;

    fn kind(dt: &Self::DynamicType) -> std::borrow::Cow<'_, str> {
        K::kind(dt)
    }

    fn group(dt: &Self::DynamicType) -> std::borrow::Cow<'_, str> {
        K::group(dt)
    }

    fn version(dt: &Self::DynamicType) -> std::borrow::Cow<'_, str> {
        K::version(dt)
    }

    fn plural(dt: &Self::DynamicType) -> std::borrow::Cow<'_, str> {
        K::plural(dt)
    }

    fn meta(&self) -> &ObjectMeta {
        match &self.0 {
            Ok(obj) => obj.meta(),
            Err(undecoded) => &undecoded.metadata,
        }
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        match &mut self.0 {
            Ok(obj) => obj.meta_mut(),
            Err(undecoded) => &mut undecoded.metadata,
        }
    }
}

impl<'de, K: DeserializeOwned> Deserialize<'de> for Decoded<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let object = deserializer.deserialize_map(LeanObject)?;
        Ok(Decoded::from_lean(object))
    }
}

impl<K: DeserializeOwned> Decoded<K> {
    /// `object` (already lean) decoded as `K`, or named with the failing field.
    fn from_lean(object: Value) -> Decoded<K> {
        if let Ok(decoded) = K::deserialize(&object) {
            return Decoded(Ok(decoded));
        }
        let error = match serde_path_to_error::deserialize::<_, K>(&object) {
            Err(error) => printable(&format!("{}: {}", error.path(), error.inner())),
            // Decoded the second time (cannot happen: the same input); say nothing wrong.
            Ok(_) => "it did not decode".to_string(),
        };
        let metadata = ObjectMeta::deserialize(&object["metadata"]).unwrap_or_else(|_| {
            let text = |field: &str| object["metadata"][field].as_str().map(str::to_string);
            ObjectMeta {
                name: text("name"),
                namespace: text("namespace"),
                uid: text("uid"),
                resource_version: text("resourceVersion"),
                ..ObjectMeta::default()
            }
        });
        Decoded(Err(Undecoded { metadata, error }))
    }
}

/// `text` with its control characters escaped: serde quotes the cluster's values in its
/// errors, which go to a terminal (the log) and into Events and conditions.
fn printable(text: &str) -> String {
    text.chars()
        .flat_map(|c| match c.is_control() {
            true => c.escape_default().collect::<Vec<_>>(),
            false => vec![c],
        })
        .collect()
}

/// An object's JSON as a `Value`, without what no controller reads: `metadata.managedFields`
/// is skipped while it is parsed (never allocated), and the last-applied annotation dropped.
struct LeanObject;

impl<'de> Visitor<'de> for LeanObject {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Kubernetes object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = match key.as_str() {
                "metadata" => map.next_value_seed(LeanMetadata)?,
                _ => map.next_value::<Value>()?,
            };
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

/// An object's `metadata`, lean (see [`LeanObject`]).
struct LeanMetadata;

impl<'de> DeserializeSeed<'de> for LeanMetadata {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for LeanMetadata {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object's metadata")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut metadata = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if key == "managedFields" {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            let mut value = map.next_value::<Value>()?;
            if key == "annotations"
                && let Value::Object(annotations) = &mut value
            {
                annotations.remove(LAST_APPLIED);
                if annotations.is_empty() {
                    continue;
                }
            }
            metadata.insert(key, value);
        }
        Ok(Value::Object(metadata))
    }
}

/// The objects of one kind that do not decode, by namespace and name: kept by the kind's
/// watch, asked by parents ([`Undecodable::why`]). A relist replaces them all (an object
/// fixed or deleted while the watch was down leaves), so the set never outlives the objects.
pub struct Undecodable<K: Resource<DynamicType = ()>> {
    /// Why each does not decode, and who it is (its parents are found by its metadata).
    objects: RwLock<HashMap<ObjectRef<K>, (String, ObjectMeta)>>,
    /// The objects a relist in progress found undecodable so far.
    relisting: RwLock<HashSet<ObjectRef<K>>>,
}

impl<K: Resource<DynamicType = ()>> Default for Undecodable<K> {
    fn default() -> Self {
        Undecodable {
            objects: RwLock::default(),
            relisting: RwLock::default(),
        }
    }
}

/// What changed among a kind's objects that do not decode, with one watch event.
#[derive(Debug, PartialEq)]
pub enum Change {
    /// Newly undecodable, or with another error: to be named once.
    Named(Undecoded),
    /// It decodes again (fixed), or it is gone.
    Cleared(ObjectMeta),
    /// A relist no longer found some (fixed or deleted while the watch was down).
    Relisted,
}

impl<K: Resource<DynamicType = ()>> Undecodable<K> {
    /// Why the object `name` in `namespace` cannot be read, if it cannot.
    pub fn why(&self, namespace: &str, name: &str) -> Option<String> {
        let key = ObjectRef::new(name).within(namespace);
        let objects = self.objects.read().unwrap_or_else(|e| e.into_inner());
        objects.get(&key).map(|(why, _)| why.clone())
    }

    /// How many objects do not decode.
    pub fn len(&self) -> usize {
        self.objects.read().map_or(0, |o| o.len())
    }

    /// Whether every object decodes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The watch (or a relist) brought `undecoded`: named if it is news.
    pub fn saw(&self, undecoded: Undecoded) -> Option<Change> {
        let key = object_ref(&undecoded.metadata);
        (self.relisting.write().unwrap_or_else(|e| e.into_inner())).insert(key.clone());
        let mut objects = self.objects.write().unwrap_or_else(|e| e.into_inner());
        let now = (undecoded.error.clone(), undecoded.metadata.clone());
        match objects.insert(key, now) {
            Some((before, _)) if before == undecoded.error => None,
            _ => Some(Change::Named(undecoded)),
        }
    }

    /// The object of `metadata` decodes again, or was deleted.
    pub fn cleared(&self, metadata: &ObjectMeta) -> Option<Change> {
        let key = object_ref(metadata);
        let mut objects = self.objects.write().unwrap_or_else(|e| e.into_inner());
        let (_, metadata) = objects.remove(&key)?;
        Some(Change::Cleared(metadata))
    }

    /// A (re)list begins: what it finds replaces the set when it is done.
    pub fn relist_begins(&self) {
        (self.relisting.write().unwrap_or_else(|e| e.into_inner())).clear();
    }

    /// The relist is complete: the objects it did not find undecodable were fixed or deleted
    /// while the watch was down. Answers their metadata, for their parents.
    pub fn relisted(&self) -> Vec<ObjectMeta> {
        let found = std::mem::take(&mut *self.relisting.write().unwrap_or_else(|e| e.into_inner()));
        let mut objects = self.objects.write().unwrap_or_else(|e| e.into_inner());
        let gone: Vec<ObjectRef<K>> = (objects.keys())
            .filter(|key| !found.contains(*key))
            .cloned()
            .collect();
        (gone.iter())
            .filter_map(|key| objects.remove(key).map(|(_, metadata)| metadata))
            .collect()
    }
}

/// What the decode stage of a watch hands on: what decodes, as `K`, and the objects that do
/// not decode whose parents must hear of them.
pub(crate) struct Sorted<K> {
    /// What the watch brought, decoded; for an object that stopped decoding, the deletion of
    /// what the cache held of it (the cache must not answer for it as it was).
    pub watched: Option<Watched<K>>,
    /// Objects that do not decode, newly or no longer (fixed, deleted, gone while the watch
    /// was down): their parents look at them again.
    pub undecodable: Vec<ObjectMeta>,
}

/// Stage 3 of a kind's watch ([`crate::cluster::watches::watch_and_fan_out`]): what does not
/// decode is set aside in the kind's cache ([`Undecodable`]) and named once, in the log and
/// to `witness`; the rest goes on as `K`.
pub(crate) fn sort_out<K: Kind, W: Witness>(
    watched: impl Stream<Item = Watched<Decoded<K>>> + Send,
    cache: Cache<K>,
    witness: Arc<W>,
) -> impl Stream<Item = Sorted<K>> + Send {
    watched.map(move |watched| {
        let (sorted, changed) = sort(watched, &cache);
        if let Some(Change::Named(undecoded)) = &changed {
            let meta = &undecoded.metadata;
            warn!(
                "{} {}/{} cannot be decoded, and is left alone until it changes: {}",
                K::KIND,
                meta.namespace.as_deref().unwrap_or_default(),
                meta.name.as_deref().unwrap_or_default(),
                undecoded.error
            );
            witness.undecodable::<K>(undecoded);
        }
        if let Some(Change::Cleared(meta)) = &changed {
            info!(
                "{} {}/{} no longer fails to decode (fixed or deleted)",
                K::KIND,
                meta.namespace.as_deref().unwrap_or_default(),
                meta.name.as_deref().unwrap_or_default(),
            );
        }
        if changed.is_some() {
            witness.undecodable_count::<K>(cache.undecodable.len());
        }
        sorted
    })
}

/// One watch item sorted, against the kind's cache; and what changed among the objects that
/// do not decode (a relist's end only clears quietly: those fixed or deleted meanwhile).
fn sort<K: Kind>(watched: Watched<Decoded<K>>, cache: &Cache<K>) -> (Sorted<K>, Option<Change>) {
    use watcher::Event::{Apply, Delete, Init, InitApply, InitDone};
    let set = &cache.undecodable;
    let only = |watched| Sorted {
        watched: Some(watched),
        undecodable: Vec::new(),
    };
    let event = match watched {
        Watched::Event(event) => event,
        Watched::Relisting => return (only(Watched::Relisting), None),
        Watched::Failed => return (only(Watched::Failed), None),
    };
    let (event, change) = match event {
        Init => {
            set.relist_begins();
            (Some(Init), None)
        }
        InitApply(Decoded(Ok(obj))) => {
            let change = set.cleared(obj.meta());
            (Some(InitApply(obj)), change)
        }
        InitApply(Decoded(Err(undecoded))) => (None, set.saw(undecoded)),
        InitDone => {
            let gone = set.relisted();
            let sorted = Sorted {
                watched: Some(Watched::Event(InitDone)),
                undecodable: gone,
            };
            let change = (!sorted.undecodable.is_empty()).then_some(Change::Relisted);
            return (sorted, change);
        }
        Apply(Decoded(Ok(obj))) => {
            let change = set.cleared(obj.meta());
            (Some(Apply(obj)), change)
        }
        Delete(Decoded(Ok(obj))) => {
            let change = set.cleared(obj.meta());
            (Some(Delete(obj)), change)
        }
        Apply(Decoded(Err(undecoded))) => (cached_version(cache, &undecoded), set.saw(undecoded)),
        Delete(Decoded(Err(undecoded))) => {
            let before = cached_version(cache, &undecoded);
            (before, set.cleared(&undecoded.metadata))
        }
    };
    let undecodable = match &change {
        Some(Change::Named(u)) => vec![u.metadata.clone()],
        Some(Change::Cleared(meta)) => vec![meta.clone()],
        _ => Vec::new(),
    };
    let watched = event.map(Watched::Event);
    (
        Sorted {
            watched,
            undecodable,
        },
        change,
    )
}

/// For an object that no longer decodes, the deletion of what the cache holds of it, if
/// anything.
fn cached_version<K: Kind>(cache: &Cache<K>, undecoded: &Undecoded) -> Option<watcher::Event<K>> {
    let key = object_ref::<K>(&undecoded.metadata);
    let held = cache.store.get(&key)?;
    Some(watcher::Event::Delete(held.as_ref().clone()))
}

/// The cache key of the object `metadata` describes.
fn object_ref<K: Resource<DynamicType = ()>>(metadata: &ObjectMeta) -> ObjectRef<K> {
    let name = metadata.name.as_deref().unwrap_or_default();
    match metadata.namespace.as_deref() {
        Some(namespace) => ObjectRef::new(name).within(namespace),
        None => ObjectRef::new(name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Number;
    use serde_json::json;

    fn number(value: Value) -> Value {
        json!({
            "apiVersion": "math.example.com/v1beta1",
            "kind": "Number",
            "metadata": {
                "name": "n",
                "namespace": "ns",
                "resourceVersion": "7",
                "annotations": { LAST_APPLIED: "{…}", "kept": "yes" },
                "managedFields": [{ "manager": "kubectl", "fieldsV1": { "f:spec": {} } }],
            },
            "spec": { "value": value },
        })
    }

    #[test]
    fn an_object_that_decodes_is_lean() {
        let decoded: Decoded<Number> =
            serde_json::from_value(number(json!(4))).expect("a Decoded always decodes");
        let n = decoded.0.expect("a Number of 4");
        assert_eq!(n.spec.value, 4);
        assert_eq!(n.metadata.managed_fields, None);
        let annotations = n.metadata.annotations.expect("one annotation is kept");
        assert_eq!(annotations.keys().collect::<Vec<_>>(), ["kept"]);
    }

    #[test]
    fn an_object_that_does_not_decode_is_named_with_its_field() {
        let decoded: Decoded<Number> =
            serde_json::from_value(number(json!(1.5))).expect("a Decoded always decodes");
        let undecoded = decoded.0.expect_err("1.5 is no i64");
        assert_eq!(undecoded.metadata.name.as_deref(), Some("n"));
        assert_eq!(undecoded.metadata.namespace.as_deref(), Some("ns"));
        assert_eq!(
            undecoded.error,
            "spec.value: invalid type: floating point `1.5`, expected i64"
        );
        // Through a list, as kube decodes one (its `flatten` buffers every item first).
        let list = json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": "9"},
            "items": [number(json!(1.5)), number(json!(2))]});
        let list: kube::core::ObjectList<Decoded<Number>> =
            serde_json::from_value(list).expect("the list decodes");
        assert!(list.items[0].0.is_err() && list.items[1].0.is_ok());
    }

    #[test]
    fn what_the_cluster_wrote_cannot_steer_a_terminal() {
        assert_eq!(printable("unknown `\u{1b}[2J`"), "unknown `\\u{1b}[2J`");
    }

    #[test]
    fn an_undecodable_object_is_named_once_until_it_changes_its_error_or_is_cleared() {
        let set = Undecodable::<Number>::default();
        let undecoded = |error: &str| Undecoded {
            metadata: ObjectMeta {
                name: Some("n".into()),
                namespace: Some("ns".into()),
                ..ObjectMeta::default()
            },
            error: error.into(),
        };
        assert_eq!(set.saw(undecoded("a")), Some(Change::Named(undecoded("a"))));
        assert_eq!(set.saw(undecoded("a")), None);
        assert_eq!(set.saw(undecoded("b")), Some(Change::Named(undecoded("b"))));
        assert_eq!(set.why("ns", "n").as_deref(), Some("b"));
        let meta = undecoded("b").metadata;
        assert_eq!(set.cleared(&meta), Some(Change::Cleared(meta.clone())));
        assert_eq!(set.cleared(&meta), None);
        assert!(set.is_empty());

        // A relist that no longer finds it: fixed or deleted while the watch was down.
        set.saw(undecoded("a"));
        set.relist_begins();
        assert_eq!(set.relisted(), [meta]);
        assert_eq!(set.why("ns", "n"), None);
    }
}
