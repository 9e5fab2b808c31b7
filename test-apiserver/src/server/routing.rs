//! Routing: which path is a discovery document, `/version`, a health check, OpenAPI, or a
//! resource (group, version, namespace, plural, name, subresource), and which verb a
//! method on a resource path is.

use crate::registry::ResourceType;
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
    let st = shared.state();
    let (group, version, rest): (&str, &str, &[&str]) = match segs.as_slice() {
        [] => {
            let mut paths = vec![
                "/api".to_string(),
                "/api/v1".into(),
                "/apis".into(),
                "/healthz".into(),
                "/livez".into(),
                "/readyz".into(),
                "/version".into(),
            ];
            for (g, v) in st.registry.groups() {
                paths.push(format!("/apis/{g}"));
                paths.push(format!("/apis/{g}/{v}"));
            }
            return Ok(Route::Json(json!({ "paths": paths })));
        }
        ["version"] => {
            return Ok(Route::Json(version_info()));
        }
        ["healthz" | "readyz" | "livez", ..] => return Ok(Route::Text("ok")),
        ["api"] => {
            return Ok(Route::Json(json!({
                "kind": "APIVersions", "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                    "serverAddress": shared.url.trim_start_matches("http://")}]
            })));
        }
        ["api", "v1"] => {
            return st
                .registry
                .resource_list("", "v1")
                .map(Route::Json)
                .ok_or_else(ApiError::no_route);
        }
        ["api", "v1", rest @ ..] => ("", "v1", rest),
        ["apis"] => return Ok(Route::Json(st.registry.api_group_list())),
        ["apis", g] => {
            return st
                .registry
                .api_group(g)
                .map(Route::Json)
                .ok_or_else(ApiError::no_route);
        }
        ["apis", g, v] => {
            return st
                .registry
                .resource_list(g, v)
                .map(Route::Json)
                .ok_or_else(ApiError::no_route);
        }
        ["apis", g, v, rest @ ..] => (g, v, rest),
        ["openapi", "v3"] => return Ok(Route::Json(crate::openapi::root(&st.registry))),
        ["openapi", "v3", rest @ ..] => {
            return crate::openapi::gv_doc(&st.registry, &rest.join("/"))
                .map(Route::Json)
                .ok_or_else(ApiError::no_route);
        }
        _ => return Err(ApiError::no_route()),
    };
    let (ns, plural, name, sub) = match rest {
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
        [] => return Err(ApiError::no_route()),
    };
    if rest.len() > 5 {
        return Err(ApiError::no_route());
    }
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
