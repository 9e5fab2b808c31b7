//! Routing: which path is a discovery document, `/version`, a health check, OpenAPI, or a
//! resource (group, version, namespace, plural, name, subresource), and which verb a
//! method on a resource path is.

use crate::registry::{Registry, ResourceType};
use crate::status::{ApiError, ApiResult};
use crate::{Shared, Verb};
use axum::http::Method;
use serde_json::{Value, json};
use std::collections::HashMap;

pub(super) struct Target {
    pub(super) rt: ResourceType,
    pub(super) ns: Option<String>,
    pub(super) name: Option<String>,
    pub(super) sub: Option<String>,
}

pub(super) enum Route {
    Json(Value),
    Text(&'static str),
    Resource(Box<Target>),
}

pub(super) fn route(shared: &Shared, path: &str) -> ApiResult<Route> {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    match segs.as_slice() {
        ["api", "v1", rest @ ..] if !rest.is_empty() => resource(shared, "", "v1", rest),
        ["apis", g, v, rest @ ..] if !rest.is_empty() => resource(shared, g, v, rest),
        _ => document(shared, &segs),
    }
}

/// A path that is not a resource's: the root's list of paths, `/version`, a health check, a
/// discovery document or an OpenAPI document; anything else is not found.
fn document(shared: &Shared, segs: &[&str]) -> ApiResult<Route> {
    let st = shared.state();
    match segs {
        [] => Ok(Route::Json(json!({ "paths": root_paths(&st.registry) }))),
        ["version"] => Ok(Route::Json(version_info())),
        ["healthz" | "readyz" | "livez", ..] => Ok(Route::Text("ok")),
        ["api"] => Ok(Route::Json(json!({
            "kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                "serverAddress": shared.url.trim_start_matches("http://")}]
        }))),
        ["api", "v1"] => st
            .registry
            .resource_list("", "v1")
            .map(Route::Json)
            .ok_or_else(ApiError::no_route),
        ["apis"] => Ok(Route::Json(st.registry.api_group_list())),
        ["apis", g] => st
            .registry
            .api_group(g)
            .map(Route::Json)
            .ok_or_else(ApiError::no_route),
        ["apis", g, v] => st
            .registry
            .resource_list(g, v)
            .map(Route::Json)
            .ok_or_else(ApiError::no_route),
        ["openapi", "v3"] => Ok(Route::Json(crate::openapi::root(&st.registry))),
        ["openapi", "v3", rest @ ..] => crate::openapi::gv_doc(&st.registry, &rest.join("/"))
            .map(Route::Json)
            .ok_or_else(ApiError::no_route),
        _ => Err(ApiError::no_route()),
    }
}

/// The root's `paths`: the fixed ones, then each served group and group version.
fn root_paths(registry: &Registry) -> Vec<String> {
    let mut paths = vec![
        "/api".to_string(),
        "/api/v1".into(),
        "/apis".into(),
        "/healthz".into(),
        "/livez".into(),
        "/readyz".into(),
        "/version".into(),
    ];
    for (g, v) in registry.groups() {
        paths.push(format!("/apis/{g}"));
        paths.push(format!("/apis/{g}/{v}"));
    }
    paths
}

/// (namespace, plural, name, subresource) of a resource path.
type ResourceParts<'a> = (Option<&'a str>, &'a str, Option<&'a str>, Option<&'a str>);

/// The parts of a resource path after its group version: (namespace, plural, name,
/// subresource), or `None` when the path is not one. `namespaces/<ns>/status` and
/// `namespaces/<ns>/finalize` are a Namespace's subresources, not a resource `status` in it.
fn resource_parts<'a>(rest: &[&'a str]) -> Option<ResourceParts<'a>> {
    let parts = match rest {
        ["namespaces", ns, plural, tail @ ..]
            if !(tail.is_empty() && (*plural == "status" || *plural == "finalize")) =>
        {
            (
                Some(*ns),
                *plural,
                tail.first().copied(),
                tail.get(1).copied(),
            )
        }
        [plural, tail @ ..] => (None, *plural, tail.first().copied(), tail.get(1).copied()),
        [] => return None,
    };
    (rest.len() <= 5).then_some(parts)
}

/// A resource path of `group`/`version`: found only for a served resource, a namespace only
/// for a namespaced one (whose objects are named only within one), and a subresource only
/// where the resource has it.
fn resource(shared: &Shared, group: &str, version: &str, rest: &[&str]) -> ApiResult<Route> {
    let (ns, plural, name, sub) = resource_parts(rest).ok_or_else(ApiError::no_route)?;
    let st = shared.state();
    let rt = st
        .registry
        .find(group, version, plural)
        .cloned()
        .ok_or_else(ApiError::no_route)?;
    if ns.is_some() && !rt.namespaced {
        return Err(ApiError::no_route());
    }
    if ns.is_none() && rt.namespaced && name.is_some() {
        return Err(ApiError::no_route());
    }
    if let Some(s) = sub
        && !rt.has_subresource(s)
    {
        return Err(ApiError::no_route());
    }
    Ok(Route::Resource(Box::new(Target {
        rt,
        ns: ns.map(String::from),
        name: name.map(String::from),
        sub: sub.map(String::from),
    })))
}

pub(super) fn verb_of(method: &Method, t: &Target, q: &HashMap<String, String>) -> ApiResult<Verb> {
    let watch = q.get("watch").is_some_and(|w| w == "true" || w == "1");
    Ok(match (method.as_str(), t.name.is_some()) {
        ("GET", true) if watch => Verb::Watch,
        ("GET", true) => Verb::Get,
        ("GET", false) if watch => Verb::Watch,
        ("GET", false) => Verb::List,
        ("POST", false) => Verb::Create,
        // Subresources created on an object: eviction, binding, token, exec, attach.
        ("POST", true) if t.sub.is_some() => Verb::Create,
        ("PUT", true) => Verb::Update,
        ("PATCH", true) => Verb::Patch,
        ("DELETE", true) => Verb::Delete,
        ("DELETE", false) => Verb::DeleteCollection,
        _ => {
            return Err(ApiError::method_not_allowed(
                "the server does not allow this method on the requested resource".to_string(),
            ));
        }
    })
}

/// A path kube-apiserver serves through its CRD handler: a custom resource, or the
/// discovery document of a group (or group version) that only CRDs define.
pub(super) fn is_custom_resource_path(
    shared: &Shared,
    path: &str,
    routed: &ApiResult<Route>,
) -> bool {
    if let Ok(Route::Resource(t)) = routed {
        return t.rt.crd.is_some();
    }
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let group = match segs.as_slice() {
        ["apis", g] | ["apis", g, _] => *g,
        _ => return false,
    };
    let st = shared.state();
    let mut of_group = st
        .registry
        .types
        .iter()
        .filter(|t| t.group == group)
        .peekable();
    of_group.peek().is_some() && of_group.all(|t| t.crd.is_some())
}

/// The Kubernetes version the server answers as: kube-apiserver v1.36.2's `/version`, whose
/// version and compatibility fields clients read (kubectl's version skew warning, kube-rs's
/// `apiserver_version`). The build fields (commit, date, Go version) name no real build.
pub(crate) const GIT_VERSION: &str = "v1.36.2";

/// `/version`, as `k8s.io/apimachinery/pkg/version.Info` serialises it.
fn version_info() -> serde_json::Value {
    json!({
        "major": "1", "minor": "36",
        "emulationMajor": "1", "emulationMinor": "36",
        "minCompatibilityMajor": "1", "minCompatibilityMinor": "35",
        "gitVersion": GIT_VERSION,
        "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.26.0", "compiler": "gc",
        "platform": "linux/amd64"
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_namespaces_status_is_its_subresource_and_a_deep_path_is_none() {
        assert_eq!(
            resource_parts(&["namespaces", "a", "pods", "p", "status"]),
            Some((Some("a"), "pods", Some("p"), Some("status")))
        );
        assert_eq!(
            resource_parts(&["namespaces", "a", "status"]),
            Some((None, "namespaces", Some("a"), Some("status")))
        );
        assert_eq!(
            resource_parts(&["nodes"]),
            Some((None, "nodes", None, None))
        );
        assert_eq!(
            resource_parts(&["namespaces", "a", "pods", "p", "status", "x"]),
            None
        );
        assert_eq!(resource_parts(&[]), None);
    }
}
