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
use axum::http::request::Parts;
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
    let (parts, body) = req.into_parts();
    let q = parse_query(parts.uri.query().unwrap_or(""));
    let mut rec = request_record(&parts, &q);
    let routed = route(&shared, &rec.path);
    let target_verb = resolve_verb(&mut rec, &routed, &parts.method, &q);
    hold(&shared, &rec).await;
    let response = match turned_away(&shared, &parts.headers, &rec, &routed) {
        Some(r) => r,
        None => {
            let body = match axum::body::to_bytes(body, 64 * 1024 * 1024).await {
                Ok(b) => b,
                Err(e) => {
                    let r = error_response(&ApiError::bad_request(format!("reading body: {e}")));
                    rec.status = r.status().as_u16();
                    shared.record(rec);
                    return r;
                }
            };
            let manager = rec.field_manager.clone();
            dispatch(&shared, &parts, routed, target_verb, &q, &body, &manager)
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

/// The request log's record of a request as it arrives: a non-resource request answered 200
/// until routing and the answer say otherwise.
fn request_record(parts: &Parts, q: &HashMap<String, String>) -> RequestRecord {
    let user_agent = parts
        .headers
        .get(header::USER_AGENT)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("")
        .to_string();
    RequestRecord {
        verb: Verb::NonResource,
        method: parts.method.to_string(),
        path: parts.uri.path().to_string(),
        query: parts.uri.query().unwrap_or("").to_string(),
        group: String::new(),
        version: String::new(),
        resource: String::new(),
        subresource: None,
        namespace: None,
        name: None,
        status: 200,
        dry_run: q.get("dryRun").is_some_and(|d| d == "All"),
        field_manager: manager_of(q, &parts.headers),
        user_agent,
        time: SystemTime::now(),
        duration: Duration::ZERO,
    }
}

/// The verb of a routed resource request, written with its target into `rec` (what latency,
/// faults, RBAC and the request log go by); anything else is a non-resource request.
fn resolve_verb(
    rec: &mut RequestRecord,
    routed: &ApiResult<Route>,
    method: &Method,
    q: &HashMap<String, String>,
) -> ApiResult<Verb> {
    let target_verb = match routed {
        Ok(Route::Resource(t)) => {
            rec.group = t.rt.group.clone();
            rec.version = t.rt.version.clone();
            rec.resource = t.rt.plural.clone();
            rec.subresource = t.sub.clone();
            rec.namespace = t.ns.clone();
            rec.name = t.name.clone();
            verb_of(method, t, q)
        }
        _ => Ok(Verb::NonResource),
    };
    if let Ok(v) = &target_verb {
        rec.verb = *v;
    }
    target_verb
}

/// Holds the request as long as the injected latency says, and a write as long as the write
/// throttle says, before anything answers it.
async fn hold(shared: &Shared, rec: &RequestRecord) {
    let delay = shared.latency(rec);
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    if rec.verb.is_write() {
        shared
            .faults_io
            .throttle_write(shared.write_weight(rec))
            .await;
    }
}

/// The answer of whatever turns the request away before it is served, in kube-apiserver's
/// order: authentication and priority and fairness, then RBAC, then an injected fault (taken
/// only when nothing before refused, so a refused request does not use it up), then the
/// restart's window in which custom resources are not served yet.
fn turned_away(
    shared: &Shared,
    headers: &HeaderMap,
    rec: &RequestRecord,
    routed: &ApiResult<Route>,
) -> Option<Response> {
    if rec.verb != Verb::NonResource
        && let Some(refusal) =
            shared
                .misbehave
                .refuse(headers, &shared.tokens, rec.verb == Verb::Watch)
    {
        return Some(refused(refusal));
    }
    if let Some(forbidden) = crate::rbac::refuse(shared, headers, rec) {
        return Some(error_response(&forbidden));
    }
    if let Some(code) = shared.take_fault(
        rec.verb,
        &rec.resource,
        rec.subresource.as_deref(),
        rec.namespace.as_deref(),
        rec.name.as_deref(),
    ) {
        return Some(error_response(&ApiError::injected(code)));
    }
    if crds_unavailable(shared) && is_custom_resource_path(shared, &rec.path, routed) {
        // kube-apiserver's not-found handler while its CRD informer has not synced.
        return Some(error_response(&ApiError::unavailable(
            "the request has been made before all known HTTP paths have been installed, please try again",
            5,
        )));
    }
    None
}

/// Serves a request nothing turned away: a routing error, a text or discovery document, or a
/// resource verb.
fn dispatch(
    shared: &Arc<Shared>,
    parts: &Parts,
    routed: ApiResult<Route>,
    target_verb: ApiResult<Verb>,
    q: &HashMap<String, String>,
    body: &Bytes,
    manager: &str,
) -> Response {
    match (routed, target_verb) {
        (Err(e), _) | (_, Err(e)) => error_response(&e),
        (Ok(Route::Text(t)), _) => (StatusCode::OK, t).into_response(),
        (Ok(Route::Json(v)), _) => discovery(shared, parts, &v),
        (Ok(Route::Resource(t)), Ok(verb)) => {
            match serve(shared, &t, verb, q, &parts.headers, body, manager) {
                Ok(r) => r,
                Err(e) => error_response(&e),
            }
        }
    }
}

/// A discovery document: read-only, and aggregated at `/api` and `/apis` for a client that
/// asks for that form.
fn discovery(shared: &Shared, parts: &Parts, v: &serde_json::Value) -> Response {
    if parts.method != Method::GET {
        error_response(&ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        ))
    } else if let Some(core) = aggregated_root(parts.uri.path())
        && wants_aggregated(&parts.headers)
    {
        let doc = shared.state().registry.aggregated(core);
        json_response(200, &doc, AGGREGATED_DISCOVERY)
    } else {
        json_response(200, v, "application/json")
    }
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

/// Serves a resource verb: a subresource with an answer of its own (scale, token, eviction,
/// ...) first, else the verb on the object or collection.
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
    let call = Call {
        shared,
        t,
        q,
        headers,
        body,
        manager,
        view: view_of(headers),
    };
    match verb {
        Verb::Get => call.get(),
        Verb::List => call.list(),
        Verb::Watch => watch::watch(shared, t, call.view, q, t.rt.plural.as_str()),
        Verb::Create => call.create(),
        Verb::Update => call.update(),
        Verb::Patch => call.patch(),
        Verb::Delete => call.delete(),
        Verb::DeleteCollection if t.rt.is_namespaces() => Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        )),
        Verb::DeleteCollection => call.delete_collection(),
        Verb::NonResource => Err(ApiError::no_route()),
    }
}

/// The subresource a write through `sub` writes: a CSR's `approval` writes its status as
/// `status` does; a pod's `ephemeralcontainers` is the pod (what a client may change there is
/// its ephemeral containers), as is the object itself.
fn written_subresource(sub: Option<&str>) -> Option<&'static str> {
    match sub {
        Some("status" | "approval") => Some("status"),
        _ => None,
    }
}

/// The label and field selectors of a list or a delete of a collection.
fn selectors(
    q: &HashMap<String, String>,
    plural: &str,
) -> ApiResult<(LabelSelector, FieldSelector)> {
    let lsel = LabelSelector::parse(q.get("labelSelector").map(String::as_str).unwrap_or(""))?;
    let fsel = FieldSelector::parse(
        q.get("fieldSelector").map(String::as_str).unwrap_or(""),
        plural,
    )?;
    Ok((lsel, fsel))
}

/// One resource request being served: what each verb reads of it.
struct Call<'a> {
    shared: &'a Arc<Shared>,
    t: &'a Target,
    q: &'a HashMap<String, String>,
    headers: &'a HeaderMap,
    body: &'a Bytes,
    manager: &'a str,
    view: View,
}

impl Call<'_> {
    fn ns(&self) -> Option<&str> {
        self.t.ns.as_deref()
    }

    fn name(&self) -> &str {
        self.t.name.as_deref().unwrap_or("")
    }

    /// `obj` as the client asked to see it (full, metadata only, or a table), with `code`.
    fn one(&self, code: u16, obj: &serde_json::Value) -> Response {
        json_response(
            code,
            &render_one(self.t, self.view, obj, self.q),
            content_type(self.view, false),
        )
    }

    fn get(&self) -> ApiResult<Response> {
        let obj = self
            .shared
            .state()
            .get(&self.t.rt, self.ns(), self.name())?;
        Ok(self.one(200, &obj))
    }

    /// A list: refused as gone for an exact resourceVersion the watch cache no longer holds,
    /// served late when a lagging cache is injected, else from the store (a page of it).
    fn list(&self) -> ApiResult<Response> {
        let (t, q, ns) = (self.t, self.q, self.ns());
        let (lsel, fsel) = selectors(q, &t.rt.plural)?;
        let limit = q.get("limit").and_then(|l| l.parse::<usize>().ok());
        let st = self.shared.state();
        if let Some(rv) = q.get("resourceVersion").and_then(|r| r.parse::<u64>().ok())
            && q.get("resourceVersionMatch").map(String::as_str) == Some("Exact")
            && rv < st.watch.floor
        {
            return Err(ApiError::gone(format!(
                "too old resource version: {rv} ({})",
                st.watch.floor
            )));
        }
        let rv = q.get("resourceVersion").map(String::as_str);
        let lagged = self
            .shared
            .misbehave
            .lagged_list(&t.rt, ns, rv, &lsel, &fsel);
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
        let v = self.list_body(items, meta);
        Ok(json_response(200, &v, content_type(self.view, true)))
    }

    /// A list's items in the view the client asked for.
    fn list_body(
        &self,
        items: Vec<serde_json::Value>,
        meta: serde_json::Value,
    ) -> serde_json::Value {
        let t = self.t;
        match self.view {
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
                self.q
                    .get("includeObject")
                    .map(String::as_str)
                    .unwrap_or("Metadata"),
                true,
            ),
        }
    }

    /// A create; a review (TokenReview, SubjectAccessReview, ...) is answered, not stored.
    fn create(&self) -> ApiResult<Response> {
        let opts = write_opts(self.q, self.manager)?;
        let b = decode_body(self.headers, self.body)?;
        let requester = crate::rbac::requester(self.shared, self.headers);
        let identity = crate::rbac::identity(self.shared, self.headers);
        let state = self.shared.state();
        let review = crate::auth::review(
            &self.shared.tokens,
            &state,
            &self.t.rt,
            &b,
            requester.as_ref(),
            &identity,
        );
        drop(state);
        if let Some(review) = review {
            return Ok(json_response(201, &review?, "application/json"));
        }
        let obj = self
            .shared
            .state()
            .create(&self.t.rt, self.ns(), b, &opts)?;
        Ok(with_warnings(self.one(201, &obj), &opts))
    }

    fn update(&self) -> ApiResult<Response> {
        let opts = write_opts(self.q, self.manager)?;
        let b = decode_body(self.headers, self.body)?;
        let sub = written_subresource(self.t.sub.as_deref());
        let obj = self
            .shared
            .state()
            .update(&self.t.rt, self.ns(), self.name(), sub, b, &opts)?;
        Ok(with_warnings(self.one(200, &obj), &opts))
    }

    fn patch(&self) -> ApiResult<Response> {
        let opts = write_opts(self.q, self.manager)?;
        let (ptype, force) = patch_opts(self.headers, self.q, &self.t.rt)?;
        let sub = written_subresource(self.t.sub.as_deref());
        let (obj, code) = self.shared.state().patch(
            &self.t.rt,
            self.ns(),
            self.name(),
            sub,
            ptype,
            self.body,
            force,
            &opts,
        )?;
        Ok(with_warnings(self.one(code, &obj), &opts))
    }

    /// A delete answers kube-apiserver's Status when the object is gone at once, else the
    /// object (its deletion waits on finalizers, or its kind returns deleted objects).
    fn delete(&self) -> ApiResult<Response> {
        let opts = delete_opts(self.headers, self.body, self.q)?;
        let (obj, code) = self
            .shared
            .state()
            .delete(&self.t.rt, self.ns(), self.name(), &opts)?;
        match crate::store::deleted_status(&self.t.rt, &obj) {
            Some(status) => Ok(json_response(code, &status, "application/json")),
            None => Ok(self.one(code, &obj)),
        }
    }

    fn delete_collection(&self) -> ApiResult<Response> {
        let t = self.t;
        let opts = delete_opts(self.headers, self.body, self.q)?;
        let (lsel, fsel) = selectors(self.q, &t.rt.plural)?;
        let (out, meta) =
            self.shared
                .state()
                .delete_collection(&t.rt, self.ns(), &lsel, &fsel, &opts)?;
        let v = json!({"kind": list_kind(&t.rt), "apiVersion": t.rt.api_version(),
            "metadata": meta, "items": list_items(&t.rt, out)});
        Ok(json_response(200, &v, "application/json"))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_approval_writes_the_status_and_ephemeral_containers_the_pod() {
        assert_eq!(written_subresource(Some("status")), Some("status"));
        assert_eq!(written_subresource(Some("approval")), Some("status"));
        assert_eq!(written_subresource(Some("ephemeralcontainers")), None);
        assert_eq!(written_subresource(None), None);
    }
}
