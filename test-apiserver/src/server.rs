//! HTTP layer: translates requests into calls on the store. This file holds the request
//! pipeline (request log, injected latencies and faults, waking the garbage collector
//! after writes) and the verb dispatch; [`routing`] maps paths to discovery documents or
//! resources, [`negotiation`] handles media types and response shapes, [`options`] turns
//! query parameters and bodies into write options, and [`watch`] streams watch events.

mod negotiation;
mod options;
mod routing;
mod subresources;
mod watch;

use crate::misbehave;
use crate::selector::{FieldSelector, LabelSelector};
use crate::status::{ApiError, ApiResult};
use crate::table;
use crate::{RequestRecord, Shared, Verb};
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use negotiation::{
    AGGREGATED_DISCOVERY, View, content_type, decode_body, error_response, json_response,
    list_items, list_kind, render_one, view_of, wants_aggregated,
};
use options::{delete_opts, manager_of, parse_query, patch_opts, write_opts};
use routing::{Route, Target, is_custom_resource_path, route, verb_of};
use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

pub fn router(shared: Arc<Shared>) -> axum::Router {
    axum::Router::new().fallback(handle).with_state(shared)
}

async fn handle(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    let started = Instant::now();
    let time = SystemTime::now();
    let (parts, body) = req.into_parts();
    let path = parts.uri.path().to_string();
    let query = parts.uri.query().unwrap_or("").to_string();
    let q = parse_query(&query);
    let user_agent = parts
        .headers
        .get(header::USER_AGENT)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("")
        .to_string();
    let mut rec = RequestRecord {
        verb: Verb::NonResource,
        method: parts.method.to_string(),
        path: path.clone(),
        query: query.clone(),
        group: String::new(),
        version: String::new(),
        resource: String::new(),
        subresource: None,
        namespace: None,
        name: None,
        status: 200,
        dry_run: q.get("dryRun").is_some_and(|d| d == "All"),
        field_manager: manager_of(&q, &parts.headers),
        user_agent,
        time,
        duration: Duration::ZERO,
    };
    let routed = route(&shared, &path);
    let target_verb = match &routed {
        Ok(Route::Resource(t)) => {
            rec.group = t.rt.group.clone();
            rec.version = t.rt.version.clone();
            rec.resource = t.rt.plural.clone();
            rec.subresource = t.sub.clone();
            rec.namespace = t.ns.clone();
            rec.name = t.name.clone();
            verb_of(&parts.method, t, &q)
        }
        _ => Ok(Verb::NonResource),
    };
    if let Ok(v) = &target_verb {
        rec.verb = *v;
    }
    let delay = shared.latency(&rec);
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    if rec.verb.is_write() {
        shared
            .faults_io
            .throttle_write(shared.write_weight(&rec))
            .await;
    }
    let refusal = match rec.verb {
        Verb::NonResource => None,
        verb => shared
            .misbehave
            .refuse(&parts.headers, &shared.tokens, verb == Verb::Watch),
    };
    let forbidden = refusal
        .is_none()
        .then(|| crate::rbac::refuse(&shared, &parts.headers, &rec))
        .flatten();
    let fault = (refusal.is_none() && forbidden.is_none())
        .then(|| {
            shared.take_fault(
                rec.verb,
                &rec.resource,
                rec.subresource.as_deref(),
                rec.namespace.as_deref(),
                rec.name.as_deref(),
            )
        })
        .flatten();
    let response = if let Some(refusal) = refusal {
        refused(refusal)
    } else if let Some(forbidden) = forbidden {
        error_response(&forbidden)
    } else if let Some(code) = fault {
        error_response(&ApiError::injected(code))
    } else if crds_unavailable(&shared) && is_custom_resource_path(&shared, &path, &routed) {
        // kube-apiserver's not-found handler while its CRD informer has not synced.
        error_response(&ApiError::unavailable(
            "the request has been made before all known HTTP paths have been installed, please try again",
            5,
        ))
    } else {
        let body = match axum::body::to_bytes(body, 64 * 1024 * 1024).await {
            Ok(b) => b,
            Err(e) => {
                let r = error_response(&ApiError::bad_request(format!("reading body: {e}")));
                rec.status = r.status().as_u16();
                shared.record(rec);
                return r;
            }
        };
        match (routed, target_verb) {
            (Err(e), _) | (_, Err(e)) => error_response(&e),
            (Ok(Route::Text(t)), _) => (StatusCode::OK, t).into_response(),
            (Ok(Route::Json(v)), _) => {
                if parts.method != Method::GET {
                    error_response(&ApiError::method_not_allowed(
                        "the server does not allow this method on the requested resource",
                    ))
                } else if let Some(core) = aggregated_root(&path)
                    && wants_aggregated(&parts.headers)
                {
                    let doc = shared.state().registry.aggregated(core);
                    json_response(200, &doc, AGGREGATED_DISCOVERY)
                } else {
                    json_response(200, &v, "application/json")
                }
            }
            (Ok(Route::Resource(t)), Ok(verb)) => {
                match serve(
                    &shared,
                    &t,
                    verb,
                    &q,
                    &parts.headers,
                    &body,
                    &rec.field_manager,
                ) {
                    Ok(r) => r,
                    Err(e) => error_response(&e),
                }
            }
        }
    };
    if rec.verb.is_write() {
        shared.gc_notify.notify_one();
    }
    rec.status = response.status().as_u16();
    rec.duration = started.elapsed();
    tracing::debug!(verb = rec.verb.as_str(), path = %rec.path, status = rec.status, "request");
    shared.record(rec);
    response
}

/// What authentication or priority and fairness answer a request they turn away.
fn refused(refusal: misbehave::Refusal) -> Response {
    match refusal {
        misbehave::Refusal::Unauthorized(e) => error_response(&e),
        // kube-apiserver's APF filter: `http.Error(w, "Too many requests, please try again
        // later.", 429)` with `Retry-After`, plain text, not a Status.
        misbehave::Refusal::TooManyRequests { retry_after } => {
            let mut r = (
                StatusCode::TOO_MANY_REQUESTS,
                "Too many requests, please try again later.\n",
            )
                .into_response();
            if let Ok(h) = HeaderValue::from_str(&retry_after.to_string()) {
                r.headers_mut().insert(header::RETRY_AFTER, h);
            }
            r
        }
    }
}

/// `/api` (core: `Some(true)`) and `/apis` (`Some(false)`) also answer aggregated discovery.
fn aggregated_root(path: &str) -> Option<bool> {
    match path.trim_end_matches('/') {
        "/api" => Some(true),
        "/apis" => Some(false),
        _ => None,
    }
}

/// Whether a restart's window of 503s for custom resources is open.
fn crds_unavailable(shared: &Shared) -> bool {
    crate::lock(&shared.crds_unavailable_until).is_some_and(|t| Instant::now() < t)
}

fn serve(
    shared: &Arc<Shared>,
    t: &Target,
    verb: Verb,
    q: &HashMap<String, String>,
    headers: &HeaderMap,
    body: &Bytes,
    manager: &str,
) -> ApiResult<Response> {
    if let Some(answer) = subresources::serve(shared, t, verb, q, headers, body, manager) {
        return answer;
    }
    let view = view_of(headers);
    let ns = t.ns.as_deref();
    let name = t.name.as_deref().unwrap_or("");
    // A CSR's `approval` writes its status as `status` does; a pod's `ephemeralcontainers`
    // is the pod (what a client may change there is its ephemeral containers).
    let sub = match t.sub.as_deref() {
        Some("status" | "approval") => Some("status"),
        _ => None,
    };
    let plural = t.rt.plural.as_str();
    match verb {
        Verb::Get => {
            let obj = shared.state().get(&t.rt, ns, name)?;
            Ok(json_response(
                200,
                &render_one(t, view, &obj, q),
                content_type(view, false),
            ))
        }
        Verb::List => {
            let lsel =
                LabelSelector::parse(q.get("labelSelector").map(String::as_str).unwrap_or(""))?;
            let fsel = FieldSelector::parse(
                q.get("fieldSelector").map(String::as_str).unwrap_or(""),
                plural,
            )?;
            let limit = q.get("limit").and_then(|l| l.parse::<usize>().ok());
            let st = shared.state();
            if let Some(rv) = q.get("resourceVersion").and_then(|r| r.parse::<u64>().ok())
                && q.get("resourceVersionMatch").map(String::as_str) == Some("Exact")
                && rv < st.watch.floor
            {
                return Err(ApiError::gone(format!(
                    "too old resource version: {rv} ({})",
                    st.watch.floor
                )));
            }
            let lagged = shared.misbehave.lagged_list(
                &t.rt,
                ns,
                q.get("resourceVersion").map(String::as_str),
                &lsel,
                &fsel,
            );
            let (items, meta) = match lagged {
                Some(list) => list,
                None => st.list(
                    &t.rt,
                    ns,
                    &lsel,
                    &fsel,
                    limit,
                    q.get("continue").map(String::as_str),
                )?,
            };
            drop(st);
            let v = match view {
                View::Full => json!({
                    "kind": list_kind(&t.rt), "apiVersion": t.rt.api_version(),
                    "metadata": meta, "items": list_items(&t.rt, items),
                }),
                View::Metadata => json!({
                    "kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
                    "metadata": meta, "items": items.iter().map(table::partial).collect::<Vec<_>>(),
                }),
                View::Table => table::table(
                    &t.rt,
                    &items,
                    meta,
                    q.get("includeObject")
                        .map(String::as_str)
                        .unwrap_or("Metadata"),
                    true,
                ),
            };
            Ok(json_response(200, &v, content_type(view, true)))
        }
        Verb::Watch => watch::watch(shared, t, view, q, plural),
        Verb::Create => {
            let opts = write_opts(q, manager)?;
            let b = decode_body(headers, body)?;
            let requester = crate::rbac::requester(shared, headers);
            let identity = crate::rbac::identity(shared, headers);
            let state = shared.state();
            let review = crate::auth::review(
                &shared.tokens,
                &state,
                &t.rt,
                &b,
                requester.as_ref(),
                &identity,
            );
            drop(state);
            if let Some(review) = review {
                return Ok(json_response(201, &review?, "application/json"));
            }
            let obj = shared.state().create(&t.rt, ns, b, &opts)?;
            Ok(with_warnings(
                json_response(
                    201,
                    &render_one(t, view, &obj, q),
                    content_type(view, false),
                ),
                &opts,
            ))
        }
        Verb::Update => {
            let opts = write_opts(q, manager)?;
            let b = decode_body(headers, body)?;
            let obj = shared.state().update(&t.rt, ns, name, sub, b, &opts)?;
            Ok(with_warnings(
                json_response(
                    200,
                    &render_one(t, view, &obj, q),
                    content_type(view, false),
                ),
                &opts,
            ))
        }
        Verb::Patch => {
            let opts = write_opts(q, manager)?;
            let (ptype, force) = patch_opts(headers, q, &t.rt)?;
            let (obj, code) = shared
                .state()
                .patch(&t.rt, ns, name, sub, ptype, body, force, &opts)?;
            Ok(with_warnings(
                json_response(
                    code,
                    &render_one(t, view, &obj, q),
                    content_type(view, false),
                ),
                &opts,
            ))
        }
        Verb::Delete => {
            let opts = delete_opts(headers, body, q)?;
            let (obj, code) = shared.state().delete(&t.rt, ns, name, &opts)?;
            match crate::store::deleted_status(&t.rt, &obj) {
                Some(status) => Ok(json_response(code, &status, "application/json")),
                None => Ok(json_response(
                    code,
                    &render_one(t, view, &obj, q),
                    content_type(view, false),
                )),
            }
        }
        Verb::DeleteCollection if t.rt.is_namespaces() => Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        )),
        Verb::DeleteCollection => {
            let opts = delete_opts(headers, body, q)?;
            let lsel =
                LabelSelector::parse(q.get("labelSelector").map(String::as_str).unwrap_or(""))?;
            let fsel = FieldSelector::parse(
                q.get("fieldSelector").map(String::as_str).unwrap_or(""),
                plural,
            )?;
            let (out, meta) = shared
                .state()
                .delete_collection(&t.rt, ns, &lsel, &fsel, &opts)?;
            let v = json!({"kind": list_kind(&t.rt), "apiVersion": t.rt.api_version(),
                "metadata": meta, "items": list_items(&t.rt, out)});
            Ok(json_response(200, &v, "application/json"))
        }
        Verb::NonResource => Err(ApiError::no_route()),
    }
}

/// The answer with one `Warning: 299 - "<text>"` header per warning of the write, quoted as
/// k8s.io/apiserver's `NewWarningHeader` quotes them.
fn with_warnings(mut r: Response, opts: &crate::store::WriteOpts) -> Response {
    for w in opts.warnings.borrow().iter() {
        let text = format!("299 - \"{}\"", w.replace('\\', "\\\\").replace('"', "\\\""));
        if let Ok(h) = axum::http::HeaderValue::from_str(&text) {
            r.headers_mut().append("warning", h);
        }
    }
    r
}
