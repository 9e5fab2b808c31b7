//! The table of served resources: built-ins statically, custom resources from CRDs.

mod builtins;
mod crd;

pub use builtins::builtins;
pub use crd::from_crd;
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
    /// A built-in kind's object as its k8s-openapi type keeps it (decoded and encoded
    /// again), which tells the fields of a request the type does not know
    /// ([`crate::unknown`]); `None` for custom resources, whose schema tells them.
    pub round_trip: Option<fn(&Value) -> Option<Value>>,
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

/// Every verb a resource with the full REST storage serves.
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
