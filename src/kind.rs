//! Each kind's facts, in one trait implementation per kind, so that the compiler checks the
//! tables a reader would otherwise keep in their head: what a kind is called, which controller
//! counts its reconciles, when it counts as ready, which kind a parent owns, the names of the
//! children it wants and how a child's name leads back to that parent.
//!
//! The implementations live with each kind's controller (`controller/number.rs` answers "when
//! is a Number ready?"); the generic machinery (`reconcile/`, `cluster/`, `scheduler/`) and the plugin only
//! ask these traits. Adding a kind, or renaming a child pattern, is then a change the compiler
//! walks you through, not a string match whose fallback quietly stops waking a parent.

use std::fmt::Debug;

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// A kind this manager reconciles: Number, Tuple or Fermat.
pub trait Kind:
    Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + Clone
    + Debug
    + Serialize
    + DeserializeOwned
    + Send
    + Sync
    + 'static
{
    /// For logs, Events and the `kind` label of metrics: "Number", "Tuple", "Fermat" (the
    /// same as [`Resource::kind`], but known at compile time).
    const KIND: &'static str;
    /// The `controller` label of the metrics of this kind's controller: "number".
    const CONTROLLER: &'static str;
    /// Its own controller has computed its status for its current generation.
    fn is_ready(&self) -> bool;
    /// Its controller has written a status at least once: the children it gets before that
    /// are its first ones, after it they are a repair or a change.
    fn has_status(&self) -> bool;
}

/// A kind that a parent owns: what its desired spec is and how a new one is made.
pub trait Child: Kind {
    type Spec: PartialEq + Clone + Debug + Serialize;
    /// The parent's Ready reason while these children are on their way: "WaitingForNumbers".
    const WAITING_REASON: &'static str;
    /// A new object with this name and spec (the namespace and owner are added by the caller).
    fn build(name: &str, spec: Self::Spec) -> Self;
    fn child_spec(&self) -> &Self::Spec;
}

/// A kind that owns children of one kind: which ones it wants, and how a child's name leads
/// back to it.
pub trait Parent: Kind {
    type Child: Child;
    /// The children its spec asks for, in order (a pure function of the spec).
    fn desired_children(&self) -> Vec<Desired<<Self::Child as Child>::Spec>>;
    /// The name of the parent whose [`Parent::desired_children`] include a child of this
    /// name, if the name has the shape this kind gives its children: the inverse of those
    /// names. A deleted child that somebody else controlled frees its name, and the parent
    /// that wants it is found this way, since no ownerReference points to it.
    fn parent_of(child: &str) -> Option<&str>;
}

/// One child the parent's spec asks for.
#[derive(Clone, Debug, PartialEq)]
pub struct Desired<S> {
    pub name: String,
    pub spec: S,
}

/// The object's controller ownerReference, if it has one (at most one may say `controller`).
pub fn controller_ref<K: Resource>(obj: &K) -> Option<&OwnerReference> {
    obj.meta()
        .owner_references
        .as_deref()
        .unwrap_or_default()
        .iter()
        .find(|r| r.controller == Some(true))
}

/// The UID of the object's controller, if it has one.
pub fn controller_uid<K: Resource>(obj: &K) -> Option<&str> {
    controller_ref(obj).map(|r| r.uid.as_str())
}
