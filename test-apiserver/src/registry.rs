//! The table of served resources: built-ins statically, custom resources from CRDs.

use serde_json::{Value, json};

#[derive(Debug, Clone)]
pub struct PrinterColumn {
    pub name: String,
    pub type_: String,
    pub format: String,
    pub description: String,
    pub priority: i64,
    pub json_path: String,
}

#[derive(Debug, Clone)]
pub struct ResourceType {
    pub group: String,
    pub version: String,
    pub plural: String,
    pub singular: String,
    pub kind: String,
    pub namespaced: bool,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub status_subresource: bool,
    /// `metadata.generation` is maintained (CRs, CRDs, Deployments).
    pub generation: bool,
    /// Where objects live: two views (core and events.k8s.io Events) share one store.
    pub storage: String,
    /// `openAPIV3Schema` of a custom resource.
    pub schema: Option<Value>,
    pub columns: Vec<PrinterColumn>,
    /// Name of the CRD that defines this resource.
    pub crd: Option<String>,
    /// The version a CRD's objects are stored in, when this type serves another one
    /// (reads and writes convert with the `None` strategy: `apiVersion` rewritten).
    pub storage_version: Option<String>,
    /// Subresources besides `status` (`scale`, `log`, `eviction`, ...).
    pub subresources: Vec<String>,
    /// The verbs discovery lists for the resource itself.
    pub verbs: Vec<String>,
    /// Where the `scale` subresource reads and writes replicas, when it is served.
    pub scale: Option<ScalePaths>,
}

/// A CRD's `subresources.scale` (JSON paths such as `.spec.replicas`); the built-in kinds
/// with a `scale` use `.spec.replicas`, `.status.replicas` and `.status.selector`.
#[derive(Debug, Clone, PartialEq)]
pub struct ScalePaths {
    pub spec_replicas: String,
    pub status_replicas: String,
    pub label_selector: Option<String>,
}

impl Default for ScalePaths {
    fn default() -> Self {
        ScalePaths {
            spec_replicas: ".spec.replicas".into(),
            status_replicas: ".status.replicas".into(),
            label_selector: Some(".status.selector".into()),
        }
    }
}

impl ResourceType {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    pub fn is_events_v1(&self) -> bool {
        self.group == "events.k8s.io" && self.plural == "events"
    }

    pub fn is_namespaces(&self) -> bool {
        self.group.is_empty() && self.plural == "namespaces"
    }

    pub fn is_core_events(&self) -> bool {
        self.group.is_empty() && self.plural == "events"
    }

    pub fn discovery_entries(&self) -> Vec<Value> {
        let verbs = json!(self.verbs);
        let mut main = json!({
            "name": self.plural,
            "singularName": self.singular,
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": verbs,
        });
        if !self.short_names.is_empty() {
            main["shortNames"] = json!(self.short_names);
        }
        if !self.categories.is_empty() {
            main["categories"] = json!(self.categories);
        }
        let mut out = vec![main];
        for sub in self.all_subresources() {
            let k = subresource_kind(&self.kind, sub);
            let mut entry = json!({
                "name": format!("{}/{sub}", self.plural),
                "singularName": "",
                "namespaced": self.namespaced,
                "kind": k.kind,
                "verbs": k.verbs,
            });
            if !k.group.is_empty() {
                entry["group"] = json!(k.group);
                entry["version"] = json!(k.version);
            }
            out.push(entry);
        }
        out
    }

    /// This resource in aggregated discovery (`APIResourceDiscovery`).
    pub fn aggregated_entry(&self) -> Value {
        let subresources: Vec<Value> = self
            .all_subresources()
            .into_iter()
            .map(|sub| {
                let k = subresource_kind(&self.kind, sub);
                let (group, version) = if k.version.is_empty() {
                    (self.group.as_str(), self.version.as_str())
                } else {
                    (k.group, k.version)
                };
                json!({"subresource": sub,
                    "responseKind": {"group": group, "version": version, "kind": k.kind},
                    "verbs": k.verbs})
            })
            .collect();
        let mut entry = json!({
            "resource": self.plural,
            "responseKind": {"group": self.group, "version": self.version, "kind": self.kind},
            "scope": if self.namespaced { "Namespaced" } else { "Cluster" },
            "singularResource": self.singular,
            "verbs": self.verbs,
        });
        if !self.short_names.is_empty() {
            entry["shortNames"] = json!(self.short_names);
        }
        if !self.categories.is_empty() {
            entry["categories"] = json!(self.categories);
        }
        if !subresources.is_empty() {
            entry["subresources"] = json!(subresources);
        }
        entry
    }

    /// `status` (when the kind has one) and the other subresources, in discovery order.
    pub fn all_subresources(&self) -> Vec<&str> {
        let mut subs: Vec<&str> = self.subresources.iter().map(String::as_str).collect();
        if self.status_subresource {
            subs.push("status");
        }
        subs.sort_unstable();
        subs
    }

    /// Whether `sub` is served for this resource.
    pub fn has_subresource(&self, sub: &str) -> bool {
        (sub == "status" && self.status_subresource) || self.subresources.iter().any(|s| s == sub)
    }
}

/// What a subresource answers with, as discovery states it: group, version and kind of
/// the response (empty group and version: those of the resource), and the verbs.
pub struct SubresourceKind {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: String,
    pub verbs: Vec<&'static str>,
}

/// The response kind and verbs kube-apiserver's discovery lists for a subresource.
pub fn subresource_kind(kind: &str, sub: &str) -> SubresourceKind {
    let (group, version, k, verbs): (&str, &str, &str, &[&'static str]) = match sub {
        "status" | "approval" | "ephemeralcontainers" => {
            ("", "", kind, &["get", "patch", "update"])
        }
        "scale" => ("autoscaling", "v1", "Scale", &["get", "patch", "update"]),
        "log" => ("", "", kind, &["get"]),
        "exec" => ("", "v1", "PodExecOptions", &["create", "get"]),
        "attach" => ("", "v1", "PodAttachOptions", &["create", "get"]),
        "portforward" => ("", "v1", "PodPortForwardOptions", &["create", "get"]),
        "proxy" => (
            "",
            "v1",
            "ProxyOptions",
            &["create", "delete", "get", "patch", "update"],
        ),
        "binding" => ("", "v1", "Binding", &["create"]),
        "eviction" => ("policy", "v1", "Eviction", &["create"]),
        "token" => ("authentication.k8s.io", "v1", "TokenRequest", &["create"]),
        "finalize" => ("", "", kind, &["update"]),
        _ => ("", "", kind, &["get"]),
    };
    SubresourceKind {
        group,
        version,
        kind: k.to_string(),
        verbs: verbs.to_vec(),
    }
}

/// What kube-apiserver's registry of a built-in kind says beyond its type: short names,
/// categories, verbs and the subresources other than `status` (which every kind whose type
/// has a `status` has).
struct Registration {
    short: &'static [&'static str],
    categories: &'static [&'static str],
    subresources: &'static [&'static str],
    verbs: &'static [&'static str],
}

const ALL_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

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
    K: k8s_openapi::Resource + schemars::JsonSchema,
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
    }
}

/// Built-in resources this server serves, from k8s-openapi's types: stored as JSON, with
/// the behaviour of their registries where a test has needed it (see README.md).
pub fn builtins() -> Vec<ResourceType> {
    use k8s_openapi::api::{
        apps::v1 as apps, authentication::v1 as authn, authorization::v1 as authz,
        batch::v1 as batch, certificates::v1 as certs, coordination::v1 as coordination,
        core::v1 as core, discovery::v1 as discovery, events::v1 as events,
        networking::v1 as networking, policy::v1 as policy, rbac::v1 as rbac,
        scheduling::v1 as scheduling, storage::v1 as storage,
    };
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
    use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1 as apiregistration;
    const ALL: &[&str] = &["all"];
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
    let mut v = vec![
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
        of::<apiextensions::CustomResourceDefinition>(reg(&["crd", "crds"], &["api-extensions"])),
        of::<apiregistration::APIService>(reg(&[], &["api-extensions"])),
        of::<events::Event>(reg(&["ev"], &[])),
        of::<coordination::Lease>(reg(&[], &[])),
        of::<rbac::ClusterRole>(reg(&[], &[])),
        of::<rbac::ClusterRoleBinding>(reg(&[], &[])),
        of::<rbac::Role>(reg(&[], &[])),
        of::<rbac::RoleBinding>(reg(&[], &[])),
        // Reviews are answered, never stored (auth.rs).
        of::<authn::TokenReview>(reg(&[], &[]).verbs(&["create"])),
        of::<authz::SubjectAccessReview>(reg(&[], &[]).verbs(&["create"])),
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
    ];
    for rt in &mut v {
        if rt.plural == "events" {
            rt.storage = "/events".into();
        }
    }
    v
}

/// The served versions of a CRD as resource types, the preferred one first (kube-apiserver's
/// version priority: GA before beta before alpha, higher numbers first), each with its own
/// schema, subresources and columns, all stored in the storage version.
pub fn from_crd(crd: &Value) -> Vec<ResourceType> {
    let versions = crd
        .get("spec")
        .and_then(|s| s.get("versions"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let storage = versions
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .or_else(|| versions.first())
        .and_then(|v| v.get("name"))
        .and_then(Value::as_str)
        .map(String::from);
    let mut out: Vec<ResourceType> = versions
        .iter()
        .filter(|v| v.get("served").and_then(Value::as_bool) != Some(false))
        .filter_map(|v| from_crd_version(crd, v))
        .collect();
    for rt in &mut out {
        rt.storage_version = storage.clone();
    }
    out.sort_by_key(|rt| version_priority(&rt.version));
    out
}

/// kube-apiserver's order of versions (`version.CompareKubeAwareVersionStrings`): `vN`
/// before `vNbetaM` before `vNalphaM`, higher numbers first, other names last by name.
fn version_priority(v: &str) -> (u8, std::cmp::Reverse<u64>, std::cmp::Reverse<u64>, String) {
    use std::cmp::Reverse;
    let parsed = v.strip_prefix('v').and_then(|rest| {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let major: u64 = rest[..digits].parse().ok()?;
        let tail = &rest[digits..];
        let (class, minor) = if tail.is_empty() {
            (0, "0")
        } else if let Some(m) = tail.strip_prefix("beta") {
            (1, m)
        } else {
            (2, tail.strip_prefix("alpha")?)
        };
        Some((class, major, minor.parse::<u64>().ok()?))
    });
    match parsed {
        Some((class, major, minor)) => (class, Reverse(major), Reverse(minor), String::new()),
        None => (3, Reverse(0), Reverse(0), v.to_string()),
    }
}

/// One served version of a CRD as a resource type.
fn from_crd_version(crd: &Value, version: &Value) -> Option<ResourceType> {
    let spec = crd.get("spec")?;
    let group = spec.get("group")?.as_str()?.to_string();
    let names = spec.get("names")?;
    let plural = names.get("plural")?.as_str()?.to_string();
    let kind = names.get("kind")?.as_str()?.to_string();
    let singular = names
        .get("singular")
        .and_then(Value::as_str)
        .map(String::from)
        .unwrap_or_else(|| kind.to_lowercase());
    let strs = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    let short_names = strs(names.get("shortNames"));
    let categories = strs(names.get("categories"));
    let namespaced = spec.get("scope").and_then(Value::as_str) != Some("Cluster");
    let vname = version.get("name")?.as_str()?.to_string();
    let status_subresource = version
        .get("subresources")
        .and_then(|s| s.get("status"))
        .is_some();
    let scale = version
        .get("subresources")
        .and_then(|s| s.get("scale"))
        .map(|s| {
            let path = |k: &str| s.get(k).and_then(Value::as_str).map(String::from);
            ScalePaths {
                spec_replicas: path("specReplicasPath").unwrap_or_default(),
                status_replicas: path("statusReplicasPath").unwrap_or_default(),
                label_selector: path("labelSelectorPath"),
            }
        });
    let schema = version
        .get("schema")
        .and_then(|s| s.get("openAPIV3Schema"))
        .cloned();
    let mut columns: Vec<PrinterColumn> = version
        .get("additionalPrinterColumns")
        .and_then(Value::as_array)
        .map(|cols| {
            cols.iter()
                .map(|c| PrinterColumn {
                    name: c.get("name").and_then(Value::as_str).unwrap_or("").into(),
                    type_: c
                        .get("type")
                        .and_then(Value::as_str)
                        .unwrap_or("string")
                        .into(),
                    format: c.get("format").and_then(Value::as_str).unwrap_or("").into(),
                    description: c
                        .get("description")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .into(),
                    priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
                    json_path: c
                        .get("jsonPath")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .into(),
                })
                .collect()
        })
        .unwrap_or_default();
    if columns.is_empty() {
        // apiextensions-apiserver serves a default Age column when none is declared.
        columns.push(PrinterColumn {
            name: "Age".into(),
            type_: "date".into(),
            format: String::new(),
            description: "CreationTimestamp is a timestamp representing the server time when this object was created.".into(),
            priority: 0,
            json_path: ".metadata.creationTimestamp".into(),
        });
    }
    Some(ResourceType {
        storage: format!("{group}/{plural}"),
        group,
        version: vname,
        plural,
        singular,
        kind,
        namespaced,
        short_names,
        categories,
        status_subresource,
        generation: true,
        schema,
        columns,
        crd: crd
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .map(String::from),
        storage_version: None,
        subresources: scale.iter().map(|_| "scale".to_string()).collect(),
        verbs: ALL_VERBS.iter().map(|s| s.to_string()).collect(),
        scale,
    })
}

/// All served resources.
#[derive(Debug, Clone)]
pub struct Registry {
    pub types: Vec<ResourceType>,
}

impl Default for Registry {
    fn default() -> Self {
        Registry { types: builtins() }
    }
}

impl Registry {
    pub fn find(&self, group: &str, version: &str, plural: &str) -> Option<&ResourceType> {
        self.types
            .iter()
            .find(|t| t.group == group && t.version == version && t.plural == plural)
    }

    pub fn find_storage(&self, storage: &str) -> Option<&ResourceType> {
        self.types.iter().find(|t| t.storage == storage)
    }

    /// Registers (or replaces) the resource a CRD defines, in each served version.
    pub fn install_crd(&mut self, crd: &Value) -> Option<ResourceType> {
        let served = from_crd(crd);
        let first = served.first()?.clone();
        self.types
            .retain(|t| t.crd != first.crd && t.storage != first.storage);
        self.types.extend(served);
        Some(first)
    }

    /// Unregisters every version of a CRD's resource; answers one of them.
    pub fn remove_crd(&mut self, crd_name: &str) -> Option<ResourceType> {
        let first = self
            .types
            .iter()
            .find(|t| t.crd.as_deref() == Some(crd_name))?
            .clone();
        self.types.retain(|t| t.crd.as_deref() != Some(crd_name));
        Some(first)
    }

    /// The resource type of the version a resource is stored in, when `rt` serves another.
    pub fn storage_type_of(&self, rt: &ResourceType) -> Option<&ResourceType> {
        let sv = rt
            .storage_version
            .as_deref()
            .filter(|sv| *sv != rt.version)?;
        self.find(&rt.group, sv, &rt.plural)
    }

    /// A named group's versions, the preferred first (registration order).
    fn versions_of(&self, group: &str) -> Vec<String> {
        self.groups()
            .into_iter()
            .filter(|(g, _)| g == group)
            .map(|(_, v)| v)
            .collect()
    }

    fn group_entry(&self, group: &str) -> Option<Value> {
        let versions: Vec<Value> = self
            .versions_of(group)
            .into_iter()
            .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
            .collect();
        let preferred = versions.first()?.clone();
        Some(json!({"name": group, "versions": versions, "preferredVersion": preferred}))
    }

    /// Groups in discovery order (core first, then the order of registration).
    pub fn groups(&self) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = vec![];
        for t in &self.types {
            if t.group.is_empty() {
                continue;
            }
            let gv = (t.group.clone(), t.version.clone());
            if !out.contains(&gv) {
                out.push(gv);
            }
        }
        out
    }

    /// `/api` (core) or `/apis` as aggregated discovery (`apidiscovery.k8s.io/v2`
    /// APIGroupDiscoveryList): every group with its versions and their resources.
    pub fn aggregated(&self, core: bool) -> Value {
        let mut groups: Vec<&str> = vec![];
        for t in &self.types {
            if t.group.is_empty() == core && !groups.contains(&t.group.as_str()) {
                groups.push(&t.group);
            }
        }
        let items: Vec<Value> = groups
            .into_iter()
            .map(|g| {
                let mut versions: Vec<&str> = vec![];
                for t in self.types.iter().filter(|t| t.group == g) {
                    if !versions.contains(&t.version.as_str()) {
                        versions.push(&t.version);
                    }
                }
                let versions: Vec<Value> = versions
                    .into_iter()
                    .map(|v| {
                        let resources: Vec<Value> = self
                            .types
                            .iter()
                            .filter(|t| t.group == g && t.version == v)
                            .map(ResourceType::aggregated_entry)
                            .collect();
                        json!({"version": v, "resources": resources, "freshness": "Current"})
                    })
                    .collect();
                let mut metadata = json!({"creationTimestamp": null});
                if !g.is_empty() {
                    metadata["name"] = json!(g);
                }
                json!({"metadata": metadata, "versions": versions})
            })
            .collect();
        json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2",
            "metadata": {}, "items": items})
    }

    pub fn api_group_list(&self) -> Value {
        let mut names: Vec<String> = vec![];
        for (g, _) in self.groups() {
            if !names.contains(&g) {
                names.push(g);
            }
        }
        let groups: Vec<Value> = names.iter().filter_map(|g| self.group_entry(g)).collect();
        json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
    }

    pub fn api_group(&self, group: &str) -> Option<Value> {
        let mut entry = self.group_entry(group)?;
        if let Some(m) = entry.as_object_mut() {
            m.insert("kind".into(), json!("APIGroup"));
            m.insert("apiVersion".into(), json!("v1"));
        }
        Some(entry)
    }

    pub fn resource_list(&self, group: &str, version: &str) -> Option<Value> {
        let resources: Vec<Value> = self
            .types
            .iter()
            .filter(|t| t.group == group && t.version == version)
            .flat_map(|t| t.discovery_entries())
            .collect();
        if resources.is_empty() {
            return None;
        }
        let gv = if group.is_empty() {
            version.to_string()
        } else {
            format!("{group}/{version}")
        };
        Some(json!({
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": gv,
            "resources": resources,
        }))
    }
}
