//! HTTP layer: routing, content negotiation, verbs, watches, request log and faults.

use crate::registry::ResourceType;
use crate::selector::{FieldSelector, LabelSelector};
use crate::status::{ApiError, ApiResult};
use crate::store::{self, ChangeType, DeleteOpts, PatchType, WatchMsg, Watcher, WriteOpts};
use crate::table;
use crate::{RequestRecord, Shared, Verb};
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::mpsc;

pub fn router(shared: Arc<Shared>) -> axum::Router {
    axum::Router::new().fallback(handle).with_state(shared)
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum View {
    Full,
    Metadata,
    Table,
}

struct Target {
    rt: ResourceType,
    ns: Option<String>,
    name: Option<String>,
    sub: Option<String>,
}

enum Route {
    Json(Value),
    Text(&'static str),
    Resource(Box<Target>),
}

fn json_response(code: u16, v: &Value, content_type: &str) -> Response {
    let mut r = Response::new(Body::from(v.to_string()));
    *r.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::OK);
    if let Ok(h) = HeaderValue::from_str(content_type) {
        r.headers_mut().insert(header::CONTENT_TYPE, h);
    }
    r
}

fn error_response(e: &ApiError) -> Response {
    let mut r = json_response(e.code, &e.to_status(), "application/json");
    if e.code == 429 || e.code == 503 {
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    r
}

fn parse_query(q: &str) -> HashMap<String, String> {
    form_urlencoded::parse(q.as_bytes())
        .filter(|(k, _)| !k.is_empty())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

fn route(shared: &Shared, path: &str) -> ApiResult<Route> {
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
            return Ok(Route::Json(json!({
                "major": "1", "minor": "32", "gitVersion": "v1.32.0-test-apiserver",
                "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
                "buildDate": "2025-01-01T00:00:00Z", "goVersion": "go1.23.0", "compiler": "gc",
                "platform": "linux/amd64"
            })));
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
    if let Some(s) = sub {
        let ok = (s == "status" && rt.status_subresource)
            || (rt.plural == "namespaces" && s == "finalize");
        if !ok {
            return Err(ApiError::no_route());
        }
    }
    Ok(Route::Resource(Box::new(Target {
        rt,
        ns: ns.map(String::from),
        name: name.map(String::from),
        sub: sub.map(String::from),
    })))
}

fn verb_of(method: &Method, t: &Target, q: &HashMap<String, String>) -> ApiResult<Verb> {
    let watch = q.get("watch").is_some_and(|w| w == "true" || w == "1");
    Ok(match (method.as_str(), t.name.is_some()) {
        ("GET", true) if watch => Verb::Watch,
        ("GET", true) => Verb::Get,
        ("GET", false) if watch => Verb::Watch,
        ("GET", false) => Verb::List,
        ("POST", false) => Verb::Create,
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

fn view_of(headers: &HeaderMap) -> View {
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

fn manager_of(q: &HashMap<String, String>, headers: &HeaderMap) -> String {
    if let Some(m) = q.get("fieldManager").filter(|m| !m.is_empty()) {
        return m.clone();
    }
    let ua = headers
        .get(header::USER_AGENT)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    ua.split('/').next().unwrap_or("").to_string()
}

fn decode_body(headers: &HeaderMap, body: &[u8]) -> ApiResult<Value> {
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
    let delay = shared.latency(
        rec.verb,
        &rec.resource,
        rec.subresource.as_deref(),
        rec.namespace.as_deref(),
        rec.name.as_deref(),
    );
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    let fault = shared.take_fault(
        rec.verb,
        &rec.resource,
        rec.subresource.as_deref(),
        rec.namespace.as_deref(),
        rec.name.as_deref(),
    );
    let response = if let Some(code) = fault {
        error_response(&ApiError::injected(code))
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

fn list_kind(rt: &ResourceType) -> String {
    format!("{}List", rt.kind)
}

fn content_type(view: View, list: bool) -> &'static str {
    match (view, list) {
        (View::Table, _) => "application/json;as=Table;v=v1;g=meta.k8s.io",
        (View::Metadata, true) => {
            "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
        }
        (View::Metadata, false) => "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
        (View::Full, _) => "application/json",
    }
}

fn render_one(t: &Target, view: View, obj: &Value, q: &HashMap<String, String>) -> Value {
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

fn write_opts(q: &HashMap<String, String>, manager: &str) -> ApiResult<WriteOpts> {
    let dry_run = match q.get("dryRun").map(String::as_str) {
        None | Some("") => false,
        Some("All") => true,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "dryRun: Unsupported value: \"{other}\": supported values: \"All\""
            )));
        }
    };
    Ok(WriteOpts {
        dry_run,
        manager: manager.to_string(),
        field_validation: q.get("fieldValidation").cloned().unwrap_or_default(),
    })
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
    let view = view_of(headers);
    let ns = t.ns.as_deref();
    let name = t.name.as_deref().unwrap_or("");
    let sub = t.sub.as_deref().filter(|s| *s == "status");
    let events = t.rt.plural == "events";
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
                events,
            )?;
            let limit = q.get("limit").and_then(|l| l.parse::<usize>().ok());
            let st = shared.state();
            if let Some(rv) = q.get("resourceVersion").and_then(|r| r.parse::<u64>().ok())
                && q.get("resourceVersionMatch").map(String::as_str) == Some("Exact")
                && rv < st.floor
            {
                return Err(ApiError::gone(format!(
                    "too old resource version: {rv} ({})",
                    st.floor
                )));
            }
            let (items, meta) = st.list(
                &t.rt,
                ns,
                &lsel,
                &fsel,
                limit,
                q.get("continue").map(String::as_str),
            )?;
            drop(st);
            let v = match view {
                View::Full => json!({
                    "kind": list_kind(&t.rt), "apiVersion": t.rt.api_version(),
                    "metadata": meta, "items": items,
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
        Verb::Watch => watch(shared, t, view, q, events),
        Verb::Create => {
            let opts = write_opts(q, manager)?;
            let b = decode_body(headers, body)?;
            if let Some(review) = crate::auth::review(&shared.tokens, &shared.state(), &t.rt, &b) {
                return Ok(json_response(201, &review?, "application/json"));
            }
            let obj = shared.state().create(&t.rt, ns, b, &opts)?;
            Ok(json_response(
                201,
                &render_one(t, view, &obj, q),
                content_type(view, false),
            ))
        }
        Verb::Update => {
            let opts = write_opts(q, manager)?;
            let b = decode_body(headers, body)?;
            let obj = shared.state().update(&t.rt, ns, name, sub, b, &opts)?;
            Ok(json_response(
                200,
                &render_one(t, view, &obj, q),
                content_type(view, false),
            ))
        }
        Verb::Patch => {
            let opts = write_opts(q, manager)?;
            let ct = headers
                .get(header::CONTENT_TYPE)
                .and_then(|h| h.to_str().ok())
                .unwrap_or("");
            let ct = ct.split(';').next().unwrap_or("").trim();
            let ptype = match ct {
                "application/merge-patch+json" => PatchType::Merge,
                "application/json-patch+json" => PatchType::Json,
                "application/strategic-merge-patch+json" => PatchType::Strategic,
                "application/apply-patch+yaml" | "application/apply-patch+cbor" => PatchType::Apply,
                other => {
                    return Err(ApiError::new(
                        415,
                        "UnsupportedMediaType",
                        format!(
                            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml; got {other:?}"
                        ),
                    ));
                }
            };
            if ptype == PatchType::Strategic && t.rt.crd.is_some() {
                return Err(ApiError::new(
                    415,
                    "UnsupportedMediaType",
                    "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
                ));
            }
            let force = q.get("force").is_some_and(|f| f == "true");
            if ptype != PatchType::Apply && q.contains_key("force") {
                return Err(ApiError::invalid(
                    "PatchOptions",
                    "meta.k8s.io",
                    "",
                    vec![crate::status::Cause::new(
                        "FieldValueForbidden",
                        "force",
                        "Forbidden: may not be specified for non-apply patch",
                    )],
                ));
            }
            let (obj, code) = shared
                .state()
                .patch(&t.rt, ns, name, sub, ptype, body, force, &opts)?;
            Ok(json_response(
                code,
                &render_one(t, view, &obj, q),
                content_type(view, false),
            ))
        }
        Verb::Delete => {
            let opts = delete_opts(headers, body, q)?;
            let (obj, code) = shared.state().delete(&t.rt, ns, name, &opts)?;
            Ok(json_response(
                code,
                &render_one(t, view, &obj, q),
                content_type(view, false),
            ))
        }
        Verb::DeleteCollection => {
            let opts = delete_opts(headers, body, q)?;
            let lsel =
                LabelSelector::parse(q.get("labelSelector").map(String::as_str).unwrap_or(""))?;
            let fsel = FieldSelector::parse(
                q.get("fieldSelector").map(String::as_str).unwrap_or(""),
                events,
            )?;
            let mut st = shared.state();
            let (items, meta) = st.list(&t.rt, ns, &lsel, &fsel, None, None)?;
            let mut out = vec![];
            for it in items {
                let ins = crate::util::meta_str(&it, "namespace").map(String::from);
                match st.delete(&t.rt, ins.as_deref(), crate::util::name_of(&it), &opts) {
                    Ok((o, _)) => out.push(o),
                    Err(e) if e.code == 404 => {}
                    Err(e) => return Err(e),
                }
            }
            let v = json!({"kind": list_kind(&t.rt), "apiVersion": t.rt.api_version(),
                "metadata": meta, "items": out});
            Ok(json_response(200, &v, "application/json"))
        }
        Verb::NonResource => Err(ApiError::no_route()),
    }
}

fn delete_opts(
    headers: &HeaderMap,
    body: &Bytes,
    q: &HashMap<String, String>,
) -> ApiResult<DeleteOpts> {
    let mut o = DeleteOpts::default();
    if !body.is_empty() {
        let b = decode_body(headers, body)?;
        o.propagation = b
            .get("propagationPolicy")
            .and_then(Value::as_str)
            .map(String::from);
        if b.get("orphanDependents").and_then(Value::as_bool) == Some(true) {
            o.propagation.get_or_insert_with(|| "Orphan".into());
        }
        if let Some(p) = b.get("preconditions") {
            o.uid = p.get("uid").and_then(Value::as_str).map(String::from);
            o.resource_version = p
                .get("resourceVersion")
                .and_then(Value::as_str)
                .map(String::from);
        }
        if let Some(d) = b.get("dryRun").and_then(Value::as_array) {
            o.dry_run = d.iter().any(|x| x == "All");
        }
    }
    if let Some(p) = q.get("propagationPolicy") {
        o.propagation = Some(p.clone());
    }
    if q.get("orphanDependents").is_some_and(|x| x == "true") {
        o.propagation = Some("Orphan".into());
    }
    if q.get("dryRun").is_some_and(|d| d == "All") {
        o.dry_run = true;
    }
    Ok(o)
}

struct WatchCtx {
    rt: ResourceType,
    view: View,
    include: String,
    lsel: LabelSelector,
    fsel: FieldSelector,
    name: Option<String>,
    shared: Arc<Shared>,
    rx: mpsc::UnboundedReceiver<WatchMsg>,
    pending: VecDeque<Bytes>,
    deadline: tokio::time::Instant,
    bookmarks: bool,
    tick: tokio::time::Interval,
    done: bool,
    first: bool,
}

fn line(ty: &str, obj: Value) -> Bytes {
    let mut s = json!({"type": ty, "object": obj}).to_string();
    s.push('\n');
    Bytes::from(s)
}

impl WatchCtx {
    fn matches(&self, obj: &Value) -> bool {
        self.lsel.matches(obj)
            && self.fsel.matches(obj)
            && self
                .name
                .as_deref()
                .is_none_or(|n| crate::util::name_of(obj) == n)
    }

    fn render(&mut self, ty: &str, stored: &Value) -> Bytes {
        let v = store::to_view(&self.rt, stored);
        let obj = match self.view {
            View::Full => v,
            View::Metadata => table::partial(&v),
            View::Table => {
                let t = table::table(
                    &self.rt,
                    std::slice::from_ref(&v),
                    json!({"resourceVersion": crate::util::rv_of(&v)}),
                    &self.include,
                    self.first,
                );
                self.first = false;
                t
            }
        };
        line(ty, obj)
    }

    fn on_change(&mut self, c: &store::Change) {
        let new_match = self.matches(&c.new);
        let old_match = c.old.as_ref().is_some_and(|o| self.matches(o));
        let ty = match c.kind {
            ChangeType::Added if new_match => "ADDED",
            ChangeType::Deleted if new_match => "DELETED",
            ChangeType::Modified => match (old_match, new_match) {
                (true, true) => "MODIFIED",
                (false, true) => "ADDED",
                (true, false) => "DELETED",
                (false, false) => return,
            },
            _ => return,
        };
        let b = self.render(ty, &c.new);
        self.pending.push_back(b);
    }

    fn bookmark(&self, rv: u64, initial_end: bool) -> Bytes {
        let mut meta = json!({"resourceVersion": rv.to_string()});
        if initial_end {
            meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let obj = match self.view {
            View::Metadata => {
                json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta})
            }
            _ => {
                json!({"kind": self.rt.kind, "apiVersion": self.rt.api_version(), "metadata": meta})
            }
        };
        line("BOOKMARK", obj)
    }
}

fn watch(
    shared: &Arc<Shared>,
    t: &Target,
    view: View,
    q: &HashMap<String, String>,
    events: bool,
) -> ApiResult<Response> {
    let lsel = LabelSelector::parse(q.get("labelSelector").map(String::as_str).unwrap_or(""))?;
    let fsel = FieldSelector::parse(
        q.get("fieldSelector").map(String::as_str).unwrap_or(""),
        events,
    )?;
    let bookmarks = q.get("allowWatchBookmarks").is_some_and(|b| b == "true");
    let send_initial = q.get("sendInitialEvents").is_some_and(|b| b == "true");
    let rv_param = q.get("resourceVersion").cloned().unwrap_or_default();
    let timeout = q
        .get("timeoutSeconds")
        .and_then(|s| s.parse::<u64>().ok())
        .map(Duration::from_secs)
        .unwrap_or(Duration::from_secs(1800));
    let interval = *crate::lock(&shared.bookmark_interval);
    let (tx, rx) = mpsc::unbounded_channel();
    let mut ctx = WatchCtx {
        rt: t.rt.clone(),
        view,
        include: q
            .get("includeObject")
            .cloned()
            .unwrap_or_else(|| "Metadata".into()),
        lsel,
        fsel,
        name: t.name.clone(),
        shared: shared.clone(),
        rx,
        pending: VecDeque::new(),
        deadline: tokio::time::Instant::now() + timeout,
        bookmarks,
        tick: tokio::time::interval_at(tokio::time::Instant::now() + interval, interval),
        done: false,
        first: true,
    };
    {
        let mut st = shared.state();
        let ns = t.ns.as_deref();
        if send_initial || rv_param.is_empty() || rv_param == "0" {
            let objs: Vec<Value> = st
                .scan(&t.rt, ns)
                .map(|(_, v)| v.clone())
                .filter(|v| ctx.matches(v))
                .collect();
            for o in objs {
                let b = ctx.render("ADDED", &o);
                ctx.pending.push_back(b);
            }
            if send_initial {
                let b = ctx.bookmark(st.rv, true);
                ctx.pending.push_back(b);
            }
        } else {
            let from: u64 = rv_param.parse().map_err(|_| {
                ApiError::bad_request(format!("invalid resource version: {rv_param}"))
            })?;
            if from < st.floor {
                let status =
                    ApiError::gone(format!("too old resource version: {from} ({})", st.floor))
                        .to_status();
                ctx.pending.push_back(line("ERROR", status));
                ctx.done = true;
            } else {
                let changes: Vec<Arc<store::Change>> = st
                    .history
                    .iter()
                    .filter(|c| {
                        c.rv > from && c.storage == t.rt.storage && ns.is_none_or(|n| c.ns == n)
                    })
                    .cloned()
                    .collect();
                for c in changes {
                    ctx.on_change(&c);
                }
            }
        }
        if !ctx.done {
            st.watchers.push(Watcher {
                storage: t.rt.storage.clone(),
                ns: t.ns.clone(),
                tx,
            });
        }
    }
    let stream = futures::stream::unfold(ctx, |mut ctx| async move {
        loop {
            if let Some(b) = ctx.pending.pop_front() {
                return Some((Ok::<Bytes, Infallible>(b), ctx));
            }
            if ctx.done {
                return None;
            }
            tokio::select! {
                m = ctx.rx.recv() => match m {
                    Some(WatchMsg::Change(c)) => ctx.on_change(&c),
                    None => ctx.done = true,
                },
                _ = tokio::time::sleep_until(ctx.deadline) => ctx.done = true,
                _ = ctx.tick.tick(), if ctx.bookmarks => {
                    let shared = ctx.shared.clone();
                    let st = shared.state();
                    let rv = st.rv;
                    let mut drained = vec![];
                    while let Ok(WatchMsg::Change(c)) = ctx.rx.try_recv() {
                        drained.push(c);
                    }
                    drop(st);
                    for c in drained {
                        ctx.on_change(&c);
                    }
                    let b = ctx.bookmark(rv, false);
                    ctx.pending.push_back(b);
                }
            }
        }
    });
    let mut r = Response::new(Body::from_stream(stream));
    if let Ok(h) = HeaderValue::from_str(content_type(view, false)) {
        r.headers_mut().insert(header::CONTENT_TYPE, h);
    }
    Ok(r)
}
