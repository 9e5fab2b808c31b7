//! Request options: the query string, the field manager, and the options of writes
//! (`dryRun`, `fieldValidation`), patches (the patch type from `Content-Type`, `force`)
//! and deletes (`DeleteOptions` in the body or the query).

use super::negotiation::decode_body;
use crate::registry::ResourceType;
use crate::status::{ApiError, ApiResult};
use crate::store::{DeleteOpts, PatchType, WriteOpts};
use axum::body::Bytes;
use axum::http::{HeaderMap, header};
use serde_json::Value;
use std::collections::HashMap;

pub(super) fn parse_query(q: &str) -> HashMap<String, String> {
    form_urlencoded::parse(q.as_bytes())
        .filter(|(k, _)| !k.is_empty())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

pub(super) fn manager_of(q: &HashMap<String, String>, headers: &HeaderMap) -> String {
    if let Some(m) = q.get("fieldManager").filter(|m| !m.is_empty()) {
        return m.clone();
    }
    let ua = headers
        .get(header::USER_AGENT)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    ua.split('/').next().unwrap_or("").to_string()
}

pub(super) fn write_opts(q: &HashMap<String, String>, manager: &str) -> ApiResult<WriteOpts> {
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
        warnings: Default::default(),
    })
}

pub(super) fn delete_opts(
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

/// The patch type from `Content-Type` (strategic merge only for built-ins) and `force`
/// (only for server-side apply).
pub(super) fn patch_opts(
    headers: &HeaderMap,
    q: &HashMap<String, String>,
    rt: &ResourceType,
) -> ApiResult<(PatchType, bool)> {
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
    if ptype == PatchType::Strategic && rt.crd.is_some() {
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
    Ok((ptype, force))
}
