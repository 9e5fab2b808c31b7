//! Subresources besides `status`, answered as kube-apiserver's registries answer them:
//! `scale` (a `Scale` over the object's replicas), `eviction` and `binding` of pods,
//! `token` of ServiceAccounts (a TokenRequest the server's TokenReview then accepts), and,
//! for what needs a kubelet (`log`, `exec`, `attach`, `portforward`, `proxy`), the answer
//! of a cluster that has no nodes. `approval` (CSRs) and `ephemeralcontainers` (pods) go
//! through the main path: they write one part of the object as `status` does.

use super::negotiation::{decode_body, json_response};
use super::options::{patch_opts, write_opts};
use super::routing::Target;
use crate::registry::{ResourceType, ScalePaths};
use crate::status::{ApiError, ApiResult};
use crate::store::{DeleteOpts, PatchType};
use crate::util::{name_of, new_uid, now, uid_of};
use crate::{Shared, Verb};
use axum::body::Bytes;
use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;

/// The request's answer when `t` names a subresource served here, else `None`.
pub(super) fn serve(
    shared: &Arc<Shared>,
    t: &Target,
    verb: Verb,
    q: &HashMap<String, String>,
    headers: &HeaderMap,
    body: &Bytes,
    manager: &str,
) -> Option<ApiResult<Response>> {
    let sub = t.sub.as_deref()?;
    let name = t.name.as_deref().unwrap_or("");
    let ns = t.ns.as_deref();
    let answer = match sub {
        "scale" => scale(shared, t, verb, q, headers, body, manager),
        "eviction" => only_create(verb).and_then(|()| evict(shared, &t.rt, ns, name)),
        "binding" => only_create(verb).and_then(|()| bind(shared, t, headers, body, manager)),
        "token" => only_create(verb).and_then(|()| token(shared, &t.rt, ns, name, headers, body)),
        "log" if t.rt.plural == "pods" => log(shared, &t.rt, ns, name, q),
        "exec" | "attach" | "portforward" | "proxy" | "log" => {
            Err(no_node(shared, &t.rt, ns, name))
        }
        _ => return None,
    };
    Some(answer)
}

fn only_create(verb: Verb) -> ApiResult<()> {
    if verb == Verb::Create {
        Ok(())
    } else {
        Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        ))
    }
}

/// The value at a CRD-style JSON path (`.spec.replicas`).
fn at<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    obj.pointer(&path.replace('.', "/"))
}

fn set_at(obj: &mut Value, path: &str, value: Value) {
    let mut cur = obj;
    let parts: Vec<&str> = path.split('.').filter(|p| !p.is_empty()).collect();
    for (i, p) in parts.iter().enumerate() {
        if !cur.is_object() {
            *cur = json!({});
        }
        let Some(m) = cur.as_object_mut() else { return };
        if i + 1 == parts.len() {
            m.insert((*p).to_string(), value);
            return;
        }
        cur = m.entry((*p).to_string()).or_insert_with(|| json!({}));
    }
}

/// The `autoscaling/v1` Scale kube-apiserver derives from an object and its scale paths.
pub(crate) fn scale_of(obj: &Value, paths: &ScalePaths) -> Value {
    let meta = obj.get("metadata").cloned().unwrap_or(json!({}));
    let keep = [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ];
    let metadata: serde_json::Map<String, Value> = keep
        .iter()
        .filter_map(|k| meta.get(*k).map(|v| ((*k).to_string(), v.clone())))
        .collect();
    let replicas = |path: &str| at(obj, path).cloned().unwrap_or(json!(0));
    let mut status = json!({"replicas": replicas(&paths.status_replicas)});
    if let Some(selector) = paths.label_selector.as_deref().and_then(|p| at(obj, p))
        && selector.is_string()
    {
        status["selector"] = selector.clone();
    }
    json!({
        "kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": metadata,
        "spec": {"replicas": replicas(&paths.spec_replicas)}, "status": status
    })
}

#[allow(clippy::too_many_arguments)]
fn scale(
    shared: &Arc<Shared>,
    t: &Target,
    verb: Verb,
    q: &HashMap<String, String>,
    headers: &HeaderMap,
    body: &Bytes,
    manager: &str,
) -> ApiResult<Response> {
    let paths = t.rt.scale.clone().unwrap_or_default();
    let name = t.name.as_deref().unwrap_or("");
    let ns = t.ns.as_deref();
    let mut st = shared.state();
    let old = st.get(&t.rt, ns, name)?;
    let wanted = match verb {
        Verb::Get => {
            return Ok(json_response(
                200,
                &scale_of(&old, &paths),
                "application/json",
            ));
        }
        Verb::Update => decode_body(headers, body)?,
        Verb::Patch => {
            let (ptype, _) = patch_opts(headers, q, &t.rt)?;
            let mut scale = scale_of(&old, &paths);
            crate::store::patch_document(&mut scale, ptype_for_scale(ptype), body)?;
            scale
        }
        _ => {
            return Err(ApiError::method_not_allowed(
                "the server does not allow this method on the requested resource",
            ));
        }
    };
    let replicas = wanted
        .pointer("/spec/replicas")
        .cloned()
        .unwrap_or(json!(0));
    let mut new = old.clone();
    set_at(&mut new, &paths.spec_replicas, replicas);
    if let Some(rv) = wanted
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .filter(|rv| !rv.is_empty())
    {
        set_at(&mut new, ".metadata.resourceVersion", json!(rv));
    }
    let opts = write_opts(q, manager)?;
    let written = st.update(&t.rt, ns, name, None, new, &opts)?;
    Ok(json_response(
        200,
        &scale_of(&written, &paths),
        "application/json",
    ))
}

/// A Scale is a built-in type: strategic merge applies to it as a merge patch does.
fn ptype_for_scale(ptype: PatchType) -> PatchType {
    match ptype {
        PatchType::Strategic => PatchType::Merge,
        other => other,
    }
}

/// The Status kube-apiserver answers to an accepted eviction or binding (201).
fn created_status() -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
}

/// An eviction with no PodDisruptionBudget in the way deletes the pod.
fn evict(
    shared: &Arc<Shared>,
    rt: &ResourceType,
    ns: Option<&str>,
    name: &str,
) -> ApiResult<Response> {
    shared
        .state()
        .delete(rt, ns, name, &DeleteOpts::default())?;
    Ok(json_response(201, &created_status(), "application/json"))
}

/// A Binding assigns an unscheduled pod to a node (what the scheduler does).
fn bind(
    shared: &Arc<Shared>,
    t: &Target,
    headers: &HeaderMap,
    body: &Bytes,
    manager: &str,
) -> ApiResult<Response> {
    let binding = decode_body(headers, body)?;
    let node = binding
        .pointer("/target/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let name = t.name.as_deref().unwrap_or("");
    let ns = t.ns.as_deref();
    let mut st = shared.state();
    let mut pod = st.get(&t.rt, ns, name)?;
    if let Some(current) = pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
    {
        return Err(ApiError::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on pods/binding \"{name}\": pod {name} is already assigned to node \"{current}\""
            ),
        ));
    }
    set_at(&mut pod, ".spec.nodeName", json!(node));
    let opts = crate::store::WriteOpts {
        manager: manager.to_string(),
        ..Default::default()
    };
    st.update(&t.rt, ns, name, None, pod, &opts)?;
    Ok(json_response(201, &created_status(), "application/json"))
}

/// A TokenRequest: a fresh token for the ServiceAccount, which the server's TokenReview
/// then authenticates as `system:serviceaccount:<namespace>:<name>`.
fn token(
    shared: &Arc<Shared>,
    rt: &ResourceType,
    ns: Option<&str>,
    name: &str,
    headers: &HeaderMap,
    body: &Bytes,
) -> ApiResult<Response> {
    let request = decode_body(headers, body)?;
    let account = shared.state().get(rt, ns, name)?;
    let namespace = ns.unwrap_or("default");
    let mut user = crate::auth::service_account_user(namespace, name_of(&account));
    user.uid = uid_of(&account).to_string();
    let token = format!("test-apiserver-{}", new_uid());
    let seconds = request
        .pointer("/spec/expirationSeconds")
        .and_then(Value::as_i64)
        .unwrap_or(3600);
    let bound = crate::auth::Bound {
        namespace: namespace.to_string(),
        name: name_of(&account).to_string(),
        uid: uid_of(&account).to_string(),
        expires: std::time::SystemTime::now()
            + std::time::Duration::from_secs(u64::try_from(seconds).unwrap_or(0)),
    };
    shared.tokens.issue(&token, user, bound);
    let audiences = request
        .pointer("/spec/audiences")
        .filter(|a| a.as_array().is_some_and(|a| !a.is_empty()))
        .cloned()
        .unwrap_or(json!(["https://kubernetes.default.svc.cluster.local"]));
    let expires = chrono_after(seconds);
    let answer = json!({
        "kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": now()},
        "spec": {"audiences": audiences, "expirationSeconds": seconds},
        "status": {"token": token, "expirationTimestamp": expires}
    });
    Ok(json_response(201, &answer, "application/json"))
}

/// RFC 3339 time `seconds` from now.
fn chrono_after(seconds: i64) -> String {
    let at = std::time::SystemTime::now()
        + std::time::Duration::from_secs(u64::try_from(seconds).unwrap_or(0));
    crate::util::format_time(at, false)
}

/// The logs of a pod no node runs: kube-apiserver checks the container, then has no
/// location to stream from and answers 204 with no body (real v1.24, 2026-11-25:
/// `GET pods/p1/log` → 204; `?container=nope` → 400 `container nope is not valid for pod
/// p1`). A pod with a node needs its kubelet, which this server does not have.
fn log(
    shared: &Arc<Shared>,
    rt: &ResourceType,
    ns: Option<&str>,
    name: &str,
    q: &HashMap<String, String>,
) -> ApiResult<Response> {
    let pod = shared.state().get(rt, ns, name)?;
    let names: Vec<&str> = ["containers", "initContainers", "ephemeralContainers"]
        .iter()
        .filter_map(|k| pod.pointer(&format!("/spec/{k}")).and_then(Value::as_array))
        .flatten()
        .filter_map(|c| c.get("name").and_then(Value::as_str))
        .collect();
    match q
        .get("container")
        .map(String::as_str)
        .filter(|c| !c.is_empty())
    {
        Some(c) if !names.contains(&c) => {
            return Err(ApiError::bad_request(format!(
                "container {c} is not valid for pod {name}"
            )));
        }
        None if pod
            .pointer("/spec/containers")
            .and_then(Value::as_array)
            .is_some_and(|c| c.len() > 1) =>
        {
            return Err(ApiError::bad_request(format!(
                "a container name must be specified for pod {name}"
            )));
        }
        _ => {}
    }
    let host = pod.pointer("/spec/nodeName").and_then(Value::as_str);
    if host.is_some_and(|h| !h.is_empty()) {
        return Err(no_node(shared, rt, ns, name));
    }
    let mut r = Response::new(axum::body::Body::empty());
    *r.status_mut() = axum::http::StatusCode::NO_CONTENT;
    Ok(r)
}

/// What kube-apiserver answers for a kubelet-backed subresource in a cluster with no nodes:
/// an unscheduled pod has no host to reach (400), a Service has no endpoints (503), a node
/// has no address (500). The object must exist first (404).
fn no_node(shared: &Arc<Shared>, rt: &ResourceType, ns: Option<&str>, name: &str) -> ApiError {
    let obj = match shared.state().get(rt, ns, name) {
        Ok(obj) => obj,
        Err(e) => return e,
    };
    match rt.plural.as_str() {
        "pods" => {
            let host = obj.pointer("/spec/nodeName").and_then(Value::as_str);
            match host.filter(|h| !h.is_empty()) {
                None => ApiError::bad_request(format!("pod {name} does not have a host assigned")),
                Some(node) => ApiError::new(
                    500,
                    "InternalError",
                    format!("node {node:?} not found: no kubelet serves this test server"),
                ),
            }
        }
        "services" => ApiError::new(
            503,
            "ServiceUnavailable",
            format!("no endpoints available for service \"{name}\""),
        ),
        _ => ApiError::new(
            500,
            "InternalError",
            "no preferred addresses found; known addresses: []",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_reads_and_writes_the_paths_of_the_crd() {
        let paths = ScalePaths {
            spec_replicas: ".spec.replicas".into(),
            status_replicas: ".status.replicas".into(),
            label_selector: None,
        };
        let obj = json!({"metadata": {"name": "baz", "labels": {"a": "b"}},
            "spec": {"replicas": 2}, "status": {"replicas": 1}});
        let scale = scale_of(&obj, &paths);
        assert_eq!(scale["spec"]["replicas"], 2);
        assert_eq!(scale["status"]["replicas"], 1);
        assert_eq!(scale["metadata"], json!({"name": "baz"}));
        let mut fresh = json!({"metadata": {}});
        set_at(&mut fresh, ".spec.replicas", json!(3));
        assert_eq!(fresh["spec"]["replicas"], 3);
    }
}
