//! The built-in kinds kube-apiserver serves, with what its registry says of each beyond
//! the type k8s-openapi generates.

use super::{ALL_VERBS, ResourceType, ScalePaths};
use serde_json::Value;

/// What kube-apiserver's registry of a built-in kind says beyond its type: short names,
/// categories, verbs and the subresources other than `status` (which every kind whose type
/// has a `status` has).
struct Registration {
    short: &'static [&'static str],
    categories: &'static [&'static str],
    subresources: &'static [&'static str],
    verbs: &'static [&'static str],
}

const fn reg(short: &'static [&'static str], categories: &'static [&'static str]) -> Registration {
    Registration {
        short,
        categories,
        subresources: &[],
        verbs: ALL_VERBS,
    }
}

impl Registration {
    const fn sub(mut self, subresources: &'static [&'static str]) -> Self {
        self.subresources = subresources;
        self
    }

    const fn verbs(mut self, verbs: &'static [&'static str]) -> Self {
        self.verbs = verbs;
        self
    }
}

/// The top-level fields of `K`'s OpenAPI schema, from k8s-openapi.
fn fields_of<K: schemars::JsonSchema>() -> Vec<String> {
    let mut generator = schemars::SchemaGenerator::default();
    K::json_schema(&mut generator)
        .as_object()
        .and_then(|o| o.get("properties"))
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// The resource type of a built-in kind, read from its k8s-openapi type: group, version,
/// kind, plural and scope from `k8s_openapi::Resource`; a `status` subresource when the
/// kind has a status and more than `create`; `metadata.generation` for the kinds of the
/// named groups with a spec and a status (Deployments, Jobs, CRDs; not Services or Leases).
fn of<K>(r: Registration) -> ResourceType
where
    K: k8s_openapi::Resource
        + schemars::JsonSchema
        + serde::de::DeserializeOwned
        + serde::Serialize,
    K::Scope: 'static,
{
    let fields = fields_of::<K>();
    let namespaced = std::any::TypeId::of::<K::Scope>()
        == std::any::TypeId::of::<k8s_openapi::NamespaceResourceScope>();
    let stored = r.verbs.contains(&"get");
    let has = |f: &str| fields.iter().any(|x| x == f);
    ResourceType {
        group: K::GROUP.into(),
        version: K::VERSION.into(),
        plural: K::URL_PATH_SEGMENT.into(),
        singular: K::KIND.to_lowercase(),
        kind: K::KIND.into(),
        namespaced,
        short_names: r.short.iter().map(|s| s.to_string()).collect(),
        categories: r.categories.iter().map(|s| s.to_string()).collect(),
        status_subresource: stored && has("status"),
        generation: !K::GROUP.is_empty() && has("spec") && has("status"),
        storage: format!("{}/{}", K::GROUP, K::URL_PATH_SEGMENT),
        schema: None,
        columns: vec![],
        crd: None,
        storage_version: None,
        subresources: r.subresources.iter().map(|s| s.to_string()).collect(),
        verbs: r.verbs.iter().map(|s| s.to_string()).collect(),
        scale: r.subresources.contains(&"scale").then(ScalePaths::default),
        round_trip: Some(crate::unknown::round_trip::<K>),
    }
}

/// The `categories` of the kinds `kubectl get all` lists.
const ALL: &[&str] = &["all"];

/// Built-in resources this server serves, from k8s-openapi's types: stored as JSON, with
/// the behaviour of their registries where a test has needed it (see README.md).
pub fn builtins() -> Vec<ResourceType> {
    use k8s_openapi::api::{
        apps::v1 as apps, authentication::v1 as authn, authorization::v1 as authz,
        batch::v1 as batch, certificates::v1 as certs, coordination::v1 as coordination,
        discovery::v1 as discovery, events::v1 as events, networking::v1 as networking,
        policy::v1 as policy, rbac::v1 as rbac, scheduling::v1 as scheduling,
        storage::v1 as storage,
    };
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
    use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1 as apiregistration;
    let mut v = core_types();
    v.extend([
        of::<apiextensions::CustomResourceDefinition>(reg(&["crd", "crds"], &["api-extensions"])),
        of::<apiregistration::APIService>(reg(&[], &["api-extensions"])),
        of::<events::Event>(reg(&["ev"], &[])),
        of::<coordination::Lease>(reg(&[], &[])),
        of::<rbac::ClusterRole>(reg(&[], &[])),
        of::<rbac::ClusterRoleBinding>(reg(&[], &[])),
        of::<rbac::Role>(reg(&[], &[])),
        of::<rbac::RoleBinding>(reg(&[], &[])),
        // Reviews are answered, never stored (auth.rs).
        of::<authn::SelfSubjectReview>(reg(&[], &[]).verbs(&["create"])),
        of::<authn::TokenReview>(reg(&[], &[]).verbs(&["create"])),
        of::<authz::SubjectAccessReview>(reg(&[], &[]).verbs(&["create"])),
        of::<authz::SelfSubjectAccessReview>(reg(&[], &[]).verbs(&["create"])),
        of::<authz::SelfSubjectRulesReview>(reg(&[], &[]).verbs(&["create"])),
        of::<apps::Deployment>(reg(&["deploy"], ALL).sub(&["scale"])),
        of::<apps::ReplicaSet>(reg(&["rs"], ALL).sub(&["scale"])),
        of::<apps::StatefulSet>(reg(&["sts"], ALL).sub(&["scale"])),
        of::<apps::DaemonSet>(reg(&["ds"], ALL)),
        of::<apps::ControllerRevision>(reg(&[], &[])),
        of::<batch::Job>(reg(&[], ALL)),
        of::<batch::CronJob>(reg(&["cj"], ALL)),
        of::<certs::CertificateSigningRequest>(reg(&["csr"], &[]).sub(&["approval"])),
        of::<discovery::EndpointSlice>(reg(&[], &[])),
        of::<networking::Ingress>(reg(&["ing"], &[])),
        of::<networking::NetworkPolicy>(reg(&["netpol"], &[])),
        of::<policy::PodDisruptionBudget>(reg(&["pdb"], &[])),
        of::<scheduling::PriorityClass>(reg(&["pc"], &[])),
        of::<storage::StorageClass>(reg(&["sc"], &[])),
    ]);
    for rt in &mut v {
        if rt.plural == "events" {
            rt.storage = "/events".into();
        }
    }
    v
}

/// The core group's (`/api/v1`) built-in resources, in discovery order.
fn core_types() -> Vec<ResourceType> {
    use k8s_openapi::api::core::v1 as core;
    const POD_SUBRESOURCES: &[&str] = &[
        "attach",
        "binding",
        "ephemeralcontainers",
        "eviction",
        "exec",
        "log",
        "portforward",
        "proxy",
    ];
    vec![
        of::<core::Namespace>(reg(&["ns"], &[]).sub(&["finalize"]).verbs(&[
            "create", "delete", "get", "list", "patch", "update", "watch",
        ])),
        of::<core::Event>(reg(&["ev"], &[])),
        of::<core::ServiceAccount>(reg(&["sa"], &[]).sub(&["token"])),
        of::<core::ConfigMap>(reg(&["cm"], &[])),
        of::<core::Secret>(reg(&[], &[])),
        of::<core::ResourceQuota>(reg(&["quota"], &[])),
        of::<core::Service>(reg(&["svc"], ALL).sub(&["proxy"])),
        of::<core::Pod>(reg(&["po"], ALL).sub(POD_SUBRESOURCES)),
        of::<core::Node>(reg(&["no"], &[]).sub(&["proxy"])),
        of::<core::Endpoints>(reg(&["ep"], &[])),
        of::<core::PersistentVolume>(reg(&["pv"], &[])),
        of::<core::PersistentVolumeClaim>(reg(&["pvc"], &[])),
        of::<core::LimitRange>(reg(&["limits"], &[])),
        of::<core::PodTemplate>(reg(&[], &[])),
        of::<core::ReplicationController>(reg(&["rc"], ALL).sub(&["scale"])),
        of::<core::ComponentStatus>(reg(&["cs"], &[]).verbs(&["get", "list"])),
    ]
}
