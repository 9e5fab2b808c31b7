//! What a store keeps of each object: the fields the controllers read, in as little room as
//! they fit, made into the kind's type again ([`Packed::unpack`]) each time a reconcile reads
//! it.
//!
//! A cached object is what a manager's memory grows with (issue 48, item 7). k8s-openapi's
//! `ObjectMeta` is 360 B inline whatever is set (every field an `Option`), a UID is a 36-byte
//! string, an ownerReference a 104-byte element and four strings: a settled Number held as a
//! `Number` asked the allocator for 958 B (`tests/cache_memory.rs`), about 1.1 KB in
//! jemalloc's size classes. Packed, the metadata keeps only what the controllers read (below),
//! each string in a box of its length and each UUID in 16 bytes; the spec and the status are
//! kept as they are, since they are what the controllers compare.
//!
//! Kept: name, namespace, UID, resourceVersion, generation, creation and deletion timestamps,
//! ownerReferences. Dropped: labels, annotations, finalizers, generateName,
//! deletionGracePeriodSeconds and managedFields — no controller of this manager reads them, and
//! every write it makes is a patch of the fields it owns, never the cached object sent back,
//! so nothing dropped here is ever written away. A controller that comes to read a label must
//! keep it here first.
//!
//! Unpacking costs a few small allocations per object read (a Fermat 10000's reconcile reads
//! its 5000 Tuples); `make bench` shows the manager's CPU with it.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use uuid::Uuid;

use crate::kind::Packable;

/// One object as a store keeps it.
pub struct Packed<K: Packable> {
    meta: Meta,
    body: K::Body,
}

/// The metadata the controllers read.
struct Meta {
    name: Box<str>,
    namespace: Option<Box<str>>,
    uid: Option<Uid>,
    resource_version: Option<Box<str>>,
    generation: Option<i64>,
    creation_timestamp: Option<Time>,
    deletion_timestamp: Option<Time>,
    owner_references: Box<[Owner]>,
}

/// An ownerReference.
struct Owner {
    api_version: Box<str>,
    kind: Box<str>,
    name: Box<str>,
    uid: Uid,
    controller: Option<bool>,
    block_owner_deletion: Option<bool>,
}

/// A UID as a store keeps it: kube-apiserver's are UUIDs in their canonical text, kept as
/// their 16 bytes; any other text is kept as it is, so that it reads back as it came. The same
/// text always makes the same `Uid`, so two are equal exactly when their texts are.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Uid(Repr);

#[derive(Clone, PartialEq, Eq, Hash)]
enum Repr {
    Uuid([u8; 16]),
    Text(Box<str>),
}

impl Uid {
    /// The UID `text` says.
    pub fn new(text: &str) -> Uid {
        Uid(match Uuid::try_parse(text) {
            Ok(uuid) if uuid.hyphenated().to_string() == text => Repr::Uuid(*uuid.as_bytes()),
            _ => Repr::Text(text.into()),
        })
    }

    fn text(&self) -> String {
        match &self.0 {
            Repr::Uuid(bytes) => Uuid::from_bytes(*bytes).hyphenated().to_string(),
            Repr::Text(text) => text.to_string(),
        }
    }
}

impl<K: Packable> Packed<K> {
    /// What a store keeps of `obj`.
    pub fn new(obj: &K) -> Packed<K> {
        Packed {
            meta: Meta::new(obj.meta()),
            body: obj.body(),
        }
    }

    /// The object as the controllers read it.
    pub fn unpack(&self) -> K {
        K::join(self.meta.unpack(), &self.body)
    }

    /// Its namespace (empty for a cluster-scoped object) and its name.
    pub fn name(&self) -> (&str, &str) {
        let namespace = self.meta.namespace.as_deref().unwrap_or_default();
        (namespace, &self.meta.name)
    }

    /// Its resourceVersion.
    pub fn resource_version(&self) -> Option<&str> {
        self.meta.resource_version.as_deref()
    }

    /// Whether `obj` is this object as it was: the same UID at the same resourceVersion.
    pub fn is_unchanged(&self, obj: &ObjectMeta) -> bool {
        self.meta.uid == obj.uid.as_deref().map(Uid::new)
            && self.meta.resource_version.is_some()
            && self.meta.resource_version.as_deref() == obj.resource_version.as_deref()
    }

    /// The UID of its controller (the ownerReference that says `controller`), if it has one.
    pub fn controller(&self) -> Option<&Uid> {
        (self.meta.owner_references.iter())
            .find(|r| r.controller == Some(true))
            .map(|r| &r.uid)
    }
}

impl Meta {
    fn new(meta: &ObjectMeta) -> Meta {
        let boxed = |text: &Option<String>| text.as_deref().map(Box::from);
        Meta {
            name: meta.name.as_deref().unwrap_or_default().into(),
            namespace: boxed(&meta.namespace),
            uid: meta.uid.as_deref().map(Uid::new),
            resource_version: boxed(&meta.resource_version),
            generation: meta.generation,
            creation_timestamp: meta.creation_timestamp.clone(),
            deletion_timestamp: meta.deletion_timestamp.clone(),
            owner_references: (meta.owner_references.iter().flatten())
                .map(Owner::new)
                .collect(),
        }
    }

    fn unpack(&self) -> ObjectMeta {
        let text = |boxed: &Option<Box<str>>| boxed.as_deref().map(str::to_string);
        let owners = &self.owner_references;
        ObjectMeta {
            name: Some(self.name.to_string()),
            namespace: text(&self.namespace),
            uid: self.uid.as_ref().map(Uid::text),
            resource_version: text(&self.resource_version),
            generation: self.generation,
            creation_timestamp: self.creation_timestamp.clone(),
            deletion_timestamp: self.deletion_timestamp.clone(),
            owner_references: (!owners.is_empty())
                .then(|| owners.iter().map(Owner::unpack).collect()),
            ..ObjectMeta::default()
        }
    }
}

impl Owner {
    fn new(reference: &OwnerReference) -> Owner {
        Owner {
            api_version: reference.api_version.as_str().into(),
            kind: reference.kind.as_str().into(),
            name: reference.name.as_str().into(),
            uid: Uid::new(&reference.uid),
            controller: reference.controller,
            block_owner_deletion: reference.block_owner_deletion,
        }
    }

    fn unpack(&self) -> OwnerReference {
        OwnerReference {
            api_version: self.api_version.to_string(),
            kind: self.kind.to_string(),
            name: self.name.to_string(),
            uid: self.uid.text(),
            controller: self.controller,
            block_owner_deletion: self.block_owner_deletion,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{Number, NumberSpec, NumberStatus};
    use k8s_openapi::jiff::Timestamp;
    use std::collections::BTreeMap;

    fn json(n: &Number) -> serde_json::Value {
        serde_json::to_value(n).expect("a Number is JSON")
    }

    const UUID: &str = "6f1c2a8e-3b4d-4f5a-9c6b-7d8e9fa0b1c2";

    fn owner(uid: &str, controller: Option<bool>) -> OwnerReference {
        OwnerReference {
            api_version: "math.example.com/v1beta1".into(),
            kind: "Tuple".into(),
            name: "t".into(),
            uid: uid.into(),
            controller,
            block_owner_deletion: Some(true),
        }
    }

    fn number(uid: &str) -> Number {
        let mut n = Number::new("n-0", NumberSpec { value: 9 });
        n.metadata = ObjectMeta {
            namespace: Some("demo".into()),
            uid: Some(uid.into()),
            resource_version: Some("42".into()),
            generation: Some(3),
            creation_timestamp: Some(Time(Timestamp::UNIX_EPOCH)),
            deletion_timestamp: Some(Time(Timestamp::MAX)),
            owner_references: Some(vec![owner("other", None), owner(UUID, Some(true))]),
            ..n.metadata
        };
        n.status = Some(NumberStatus {
            observed_generation: Some(3),
            fizz_buzz: Some("Fizz".into()),
            ..NumberStatus::default()
        });
        n
    }

    /// What the controllers read comes back as it went in, a UUID or any other UID.
    #[test]
    fn an_object_unpacks_as_the_controllers_read_it() {
        for uid in [
            UUID,
            "uid-of-a-test",
            "6F1C2A8E-3B4D-4F5A-9C6B-7D8E9FA0B1C2",
        ] {
            let n = number(uid);
            let packed = Packed::new(&n);
            assert_eq!(json(&packed.unpack()), json(&n), "{uid}");
            assert_eq!(packed.name(), ("demo", "n-0"));
            assert!(packed.controller() == Some(&Uid::new(UUID)));
            assert!(packed.controller() != Some(&Uid::new("other")));
            assert!(packed.is_unchanged(&n.metadata));
            let newer = ObjectMeta {
                resource_version: Some("43".into()),
                ..n.metadata.clone()
            };
            assert!(!packed.is_unchanged(&newer));
            let other = ObjectMeta {
                uid: Some("another".into()),
                ..n.metadata.clone()
            };
            assert!(!packed.is_unchanged(&other));
        }
    }

    /// Labels, annotations, finalizers and managedFields are not kept: no controller reads
    /// them.
    #[test]
    fn what_no_controller_reads_is_not_kept() {
        let mut n = number(UUID);
        let read = n.clone();
        n.metadata.labels = Some(BTreeMap::from([("app".into(), "demo".into())]));
        n.metadata.annotations = Some(BTreeMap::from([("note".into(), "x".into())]));
        n.metadata.finalizers = Some(vec!["example.com/keep".into()]);
        n.metadata.generate_name = Some("n-".into());
        assert_eq!(json(&Packed::new(&n).unpack()), json(&read));
    }
}
