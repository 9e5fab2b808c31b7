//! Minimal OpenAPI v3 documents: enough for kubectl to see that every resource's PATCH
//! accepts `fieldValidation` (so it leaves validation to the server), plus the schemas
//! of custom resources.

use crate::registry::{Registry, ResourceType};
use serde_json::{Map, Value, json};
use std::hash::{Hash, Hasher};

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

fn hash(v: &Value) -> String {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    v.to_string().hash(&mut h);
    format!("{:016X}", h.finish())
}

/// `/openapi/v3`: the index of group-version documents.
pub fn root(reg: &Registry) -> Value {
    let mut paths = Map::new();
    let mut gvs = vec![(String::new(), "v1".to_string())];
    gvs.extend(reg.groups());
    for (g, v) in gvs {
        let p = gv_path(&g, &v);
        if let Some(doc) = gv_doc(reg, &p) {
            paths.insert(
                p.clone(),
                json!({"serverRelativeURL": format!("/openapi/v3/{p}?hash={}", hash(&doc))}),
            );
        }
    }
    json!({ "paths": paths })
}

fn param(name: &str) -> Value {
    json!({"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": true}})
}

/// `/openapi/v3/apis/<group>/<version>` (or `api/v1`).
pub fn gv_doc(reg: &Registry, path: &str) -> Option<Value> {
    let mut paths = Map::new();
    let mut schemas = Map::new();
    for t in &reg.types {
        if gv_path(&t.group, &t.version) != path {
            continue;
        }
        let gvk = json!({"group": t.group, "version": t.version, "kind": t.kind});
        let schema_name = schema_name(t);
        paths.insert(item_path(t), item_operations(t, &gvk, &schema_name));
        let mut schema = t.schema.clone().unwrap_or_else(
            || json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
        );
        schema["x-kubernetes-group-version-kind"] = json!([gvk]);
        schemas.insert(schema_name, schema);
    }
    if paths.is_empty() {
        return None;
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.36.2"},
        "paths": paths,
        "components": {"schemas": schemas},
    }))
}

/// The path of one object of `t`, with `{namespace}` and `{name}` as OpenAPI writes them.
fn item_path(t: &ResourceType) -> String {
    let base = if t.group.is_empty() {
        format!("/api/{}", t.version)
    } else {
        format!("/apis/{}/{}", t.group, t.version)
    };
    if t.namespaced {
        format!("{base}/namespaces/{{namespace}}/{}/{{name}}", t.plural)
    } else {
        format!("{base}/{}/{{name}}", t.plural)
    }
}

/// The name of `t`'s schema among the components (`io.k8s.api.core.v1.Pod` for the core
/// group).
fn schema_name(t: &ResourceType) -> String {
    format!(
        "{}.{}.{}",
        if t.group.is_empty() {
            "io.k8s.api.core"
        } else {
            &t.group
        },
        t.version,
        t.kind
    )
}

/// The operations on one object: get, put, patch (with `force`) and delete, each taking
/// the write parameters kubectl looks for (`fieldValidation` above all).
fn item_operations(t: &ResourceType, gvk: &Value, schema_name: &str) -> Value {
    let write_params = json!([
        param("dryRun"),
        param("fieldManager"),
        param("fieldValidation")
    ]);
    let ref_ = json!({"$ref": format!("#/components/schemas/{schema_name}")});
    let op = |verb: &str| {
        json!({
            "operationId": format!("{verb}{}", t.kind),
            "parameters": write_params,
            "x-kubernetes-action": verb,
            "x-kubernetes-group-version-kind": gvk,
            "responses": {"200": {"description": "OK",
                "content": {"application/json": {"schema": ref_}}}},
        })
    };
    let mut patch = op("patch");
    if let Some(a) = patch["parameters"].as_array_mut() {
        a.push(param("force"))
    }
    json!({"get": op("get"), "put": op("put"), "patch": patch, "delete": op("delete")})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_objects_path_names_its_namespace_only_when_namespaced() {
        let types = crate::registry::builtins();
        let of = |plural: &str| {
            types
                .iter()
                .find(|t| t.plural == plural)
                .expect("a built-in")
        };
        assert_eq!(
            item_path(of("pods")),
            "/api/v1/namespaces/{namespace}/pods/{name}"
        );
        assert_eq!(
            item_path(of("clusterroles")),
            "/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}"
        );
        assert_eq!(schema_name(of("pods")), "io.k8s.api.core.v1.Pod");
    }
}
