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
        // The namespace registry has no DeleteCollection.
        let verbs = if self.is_namespaces() {
            json!([
                "create", "delete", "get", "list", "patch", "update", "watch"
            ])
        } else {
            json!([
                "create",
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "update",
                "watch"
            ])
        };
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
        if self.status_subresource {
            out.push(json!({
                "name": format!("{}/status", self.plural),
                "singularName": "",
                "namespaced": self.namespaced,
                "kind": self.kind,
                "verbs": ["get", "patch", "update"],
            }));
        }
        out
    }
}

#[allow(clippy::too_many_arguments)]
fn builtin(
    group: &str,
    version: &str,
    plural: &str,
    kind: &str,
    namespaced: bool,
    short: &[&str],
    categories: &[&str],
    status: bool,
    generation: bool,
) -> ResourceType {
    ResourceType {
        group: group.into(),
        version: version.into(),
        plural: plural.into(),
        singular: kind.to_lowercase(),
        kind: kind.into(),
        namespaced,
        short_names: short.iter().map(|s| s.to_string()).collect(),
        categories: categories.iter().map(|s| s.to_string()).collect(),
        status_subresource: status,
        generation,
        storage: format!("{group}/{plural}"),
        schema: None,
        columns: vec![],
        crd: None,
    }
}

/// Built-in resources this server accepts (stored as JSON, no controllers behind them).
pub fn builtins() -> Vec<ResourceType> {
    let mut v = vec![
        builtin(
            "",
            "v1",
            "namespaces",
            "Namespace",
            false,
            &["ns"],
            &[],
            true,
            false,
        ),
        builtin(
            "",
            "v1",
            "events",
            "Event",
            true,
            &["ev"],
            &[],
            false,
            false,
        ),
        builtin(
            "",
            "v1",
            "serviceaccounts",
            "ServiceAccount",
            true,
            &["sa"],
            &[],
            false,
            false,
        ),
        builtin(
            "",
            "v1",
            "configmaps",
            "ConfigMap",
            true,
            &["cm"],
            &[],
            false,
            false,
        ),
        builtin("", "v1", "secrets", "Secret", true, &[], &[], false, false),
        builtin(
            "",
            "v1",
            "resourcequotas",
            "ResourceQuota",
            true,
            &["quota"],
            &[],
            true,
            false,
        ),
        builtin(
            "",
            "v1",
            "services",
            "Service",
            true,
            &["svc"],
            &["all"],
            true,
            false,
        ),
        builtin(
            "apiextensions.k8s.io",
            "v1",
            "customresourcedefinitions",
            "CustomResourceDefinition",
            false,
            &["crd", "crds"],
            &["api-extensions"],
            true,
            true,
        ),
        builtin(
            "events.k8s.io",
            "v1",
            "events",
            "Event",
            true,
            &["ev"],
            &[],
            false,
            false,
        ),
        builtin(
            "coordination.k8s.io",
            "v1",
            "leases",
            "Lease",
            true,
            &[],
            &[],
            false,
            false,
        ),
        builtin(
            "rbac.authorization.k8s.io",
            "v1",
            "clusterroles",
            "ClusterRole",
            false,
            &[],
            &[],
            false,
            false,
        ),
        builtin(
            "rbac.authorization.k8s.io",
            "v1",
            "clusterrolebindings",
            "ClusterRoleBinding",
            false,
            &[],
            &[],
            false,
            false,
        ),
        builtin(
            "rbac.authorization.k8s.io",
            "v1",
            "roles",
            "Role",
            true,
            &[],
            &[],
            false,
            false,
        ),
        builtin(
            "rbac.authorization.k8s.io",
            "v1",
            "rolebindings",
            "RoleBinding",
            true,
            &[],
            &[],
            false,
            false,
        ),
        // Reviews are answered, never stored (auth.rs).
        builtin(
            "authentication.k8s.io",
            "v1",
            "tokenreviews",
            "TokenReview",
            false,
            &[],
            &[],
            false,
            false,
        ),
        builtin(
            "authorization.k8s.io",
            "v1",
            "subjectaccessreviews",
            "SubjectAccessReview",
            false,
            &[],
            &[],
            false,
            false,
        ),
        builtin(
            "apps",
            "v1",
            "deployments",
            "Deployment",
            true,
            &["deploy"],
            &["all"],
            true,
            true,
        ),
    ];
    for rt in &mut v {
        if rt.plural == "events" {
            rt.storage = "/events".into();
        }
    }
    v
}

/// Parses the served/storage version of a CRD into a resource type.
pub fn from_crd(crd: &Value) -> Option<ResourceType> {
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
    let versions = spec.get("versions")?.as_array()?;
    let version = versions
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .or_else(|| {
            versions
                .iter()
                .find(|v| v.get("served").and_then(Value::as_bool) == Some(true))
        })
        .or_else(|| versions.first())?;
    let vname = version.get("name")?.as_str()?.to_string();
    let status_subresource = version
        .get("subresources")
        .and_then(|s| s.get("status"))
        .is_some();
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

    /// Registers (or replaces) the resource a CRD defines.
    pub fn install_crd(&mut self, crd: &Value) -> Option<ResourceType> {
        let rt = from_crd(crd)?;
        self.types
            .retain(|t| t.crd != rt.crd && t.storage != rt.storage);
        self.types.push(rt.clone());
        Some(rt)
    }

    pub fn remove_crd(&mut self, crd_name: &str) -> Option<ResourceType> {
        let pos = self
            .types
            .iter()
            .position(|t| t.crd.as_deref() == Some(crd_name))?;
        Some(self.types.remove(pos))
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

    pub fn api_group_list(&self) -> Value {
        let groups: Vec<Value> = self
            .groups()
            .into_iter()
            .map(|(g, v)| {
                let gv = json!({"groupVersion": format!("{g}/{v}"), "version": v});
                json!({"name": g, "versions": [gv.clone()], "preferredVersion": gv})
            })
            .collect();
        json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
    }

    pub fn api_group(&self, group: &str) -> Option<Value> {
        let (g, v) = self.groups().into_iter().find(|(g, _)| g == group)?;
        let gv = json!({"groupVersion": format!("{g}/{v}"), "version": v});
        Some(json!({
            "kind": "APIGroup", "apiVersion": "v1", "name": g,
            "versions": [gv.clone()], "preferredVersion": gv
        }))
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
