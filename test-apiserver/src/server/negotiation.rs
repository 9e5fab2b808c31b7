//! Content negotiation: the view a client asks for in `Accept` (the object,
//! `PartialObjectMetadata` or a `Table`), the matching `Content-Type`, response shapes,
//! `Status` error bodies, and decoding request bodies (JSON, YAML, the protobuf subset).

use super::routing::Target;
use crate::registry::ResourceType;
use crate::status::{ApiError, ApiResult};
use crate::table;
use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::{Value, json};
use std::collections::HashMap;

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum View {
    Full,
    Metadata,
    Table,
}

/// The body as kube-apiserver writes it: `kind` and `apiVersion` first (Go's field order),
/// then the rest. Clients quote positions in it: kube-rs's "expected Pod at line 1 column
/// 17" when an object of another kind comes back.
fn to_wire(v: &Value) -> String {
    let Value::Object(m) = v else {
        return v.to_string();
    };
    let head = ["kind", "apiVersion"]
        .into_iter()
        .filter_map(|k| m.get(k).map(|x| (k, x)));
    let rest = m
        .iter()
        .filter(|(k, _)| *k != "kind" && *k != "apiVersion")
        .map(|(k, x)| (k.as_str(), x));
    let fields: Vec<String> = head
        .chain(rest)
        .map(|(k, x)| format!("{}:{x}", Value::String(k.to_string())))
        .collect();
    format!("{{{}}}", fields.join(","))
}

pub(super) fn json_response(code: u16, v: &Value, content_type: &str) -> Response {
    let mut r = Response::new(Body::from(to_wire(v)));
    *r.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::OK);
    if let Ok(h) = HeaderValue::from_str(content_type) {
        r.headers_mut().insert(header::CONTENT_TYPE, h);
    }
    r
}

pub(super) fn error_response(e: &ApiError) -> Response {
    let mut r = json_response(e.code, &e.to_status(), "application/json");
    if let Some(secs) = e.retry_after()
        && let Ok(h) = HeaderValue::from_str(&secs.to_string())
    {
        r.headers_mut().insert(header::RETRY_AFTER, h);
    }
    r
}

/// The media type of aggregated discovery kube-apiserver serves (1.30+: `v2`).
pub(super) const AGGREGATED_DISCOVERY: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// Whether the client asks for aggregated discovery before the plain documents: kubectl
/// and kube-rs's `Discovery::run_aggregated` list it first in `Accept`.
pub(super) fn wants_aggregated(headers: &HeaderMap) -> bool {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    for part in accept.split(',') {
        let params: Vec<String> = part.split(';').map(|p| p.trim().to_string()).collect();
        let has = |p: &str| params.iter().any(|x| x == p);
        if has("g=apidiscovery.k8s.io") && has("as=APIGroupDiscoveryList") {
            if has("v=v2") {
                return true;
            }
            continue;
        }
        if params
            .first()
            .is_some_and(|m| m == "application/json" || m == "*/*")
        {
            return false;
        }
    }
    false
}

pub(super) fn view_of(headers: &HeaderMap) -> View {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    // The first acceptable media type wins.
    for part in accept.split(',') {
        let p = part.replace(' ', "");
        if p.contains("as=Table") && p.contains("g=meta.k8s.io") && p.contains("v=v1;")
            || p.contains("as=Table") && p.ends_with("v=v1")
            || p.contains("as=Table;v=v1")
        {
            return View::Table;
        }
        if p.contains("as=PartialObjectMetadata") && p.contains("v=v1") {
            return View::Metadata;
        }
        if p.starts_with("application/json") && !p.contains("as=") {
            return View::Full;
        }
        if p.starts_with("*/*") || p.starts_with("application/yaml") {
            return View::Full;
        }
    }
    View::Full
}

pub(super) fn decode_body(headers: &HeaderMap, body: &[u8]) -> ApiResult<Value> {
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    if ct.contains("protobuf")
        && let Some(v) = crate::proto::decode(body)
    {
        return Ok(v);
    }
    if ct.contains("protobuf") || ct.contains("cbor") {
        return Err(ApiError::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml; got {ct}"
            ),
        ));
    }
    if ct.contains("yaml") {
        serde_yaml::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))
    } else {
        serde_json::from_slice(body).map_err(|e| {
            ApiError::bad_request(format!(
                "the body of the request could not be decoded as JSON: {e}"
            ))
        })
    }
}

pub(super) fn list_kind(rt: &ResourceType) -> String {
    format!("{}List", rt.kind)
}

/// The items of a list as kube-apiserver encodes them: a built-in list's items are typed
/// Go structs whose `TypeMeta` the list encoder leaves empty, so they carry no `apiVersion`
/// or `kind` (v1.36's `ConfigMapList` items have neither); a custom resource's items are
/// unstructured objects and keep both.
pub(super) fn list_items(rt: &ResourceType, mut items: Vec<Value>) -> Vec<Value> {
    if rt.crd.is_none() {
        for item in &mut items {
            if let Some(m) = item.as_object_mut() {
                m.remove("apiVersion");
                m.remove("kind");
            }
        }
    }
    items
}

pub(super) fn content_type(view: View, list: bool) -> &'static str {
    match (view, list) {
        (View::Table, _) => "application/json;as=Table;v=v1;g=meta.k8s.io",
        (View::Metadata, true) => {
            "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
        }
        (View::Metadata, false) => "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
        (View::Full, _) => "application/json",
    }
}

pub(super) fn render_one(
    t: &Target,
    view: View,
    obj: &Value,
    q: &HashMap<String, String>,
) -> Value {
    match view {
        View::Full => obj.clone(),
        View::Metadata => table::partial(obj),
        View::Table => table::table(
            &t.rt,
            std::slice::from_ref(obj),
            json!({"resourceVersion": crate::util::rv_of(obj)}),
            q.get("includeObject")
                .map(String::as_str)
                .unwrap_or("Metadata"),
            true,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_and_api_version_come_first() {
        let v = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "a"}});
        let wire = to_wire(&v);
        assert!(
            wire.starts_with(r#"{"kind":"Service","apiVersion":"v1","#),
            "{wire}"
        );
        assert_eq!(serde_json::from_str::<Value>(&wire).ok(), Some(v));
    }
}
