//! `Status` error bodies, shaped like kube-apiserver's.

use serde_json::{Value, json};

/// One field error (a `StatusCause`).
#[derive(Debug, Clone)]
pub struct Cause {
    pub reason: String,
    pub field: String,
    /// The detail after the field, e.g. `Invalid value: -1: spec.x in body should be ...`.
    pub message: String,
}

impl Cause {
    pub fn new(reason: &str, field: &str, message: impl Into<String>) -> Cause {
        Cause {
            reason: reason.into(),
            field: field.into(),
            message: message.into(),
        }
    }
    pub fn invalid(field: &str, value: &str, detail: &str) -> Cause {
        Cause::new(
            "FieldValueInvalid",
            field,
            format!("Invalid value: {value}: {detail}"),
        )
    }
    pub fn required(field: &str, detail: &str) -> Cause {
        let msg = if detail.is_empty() {
            "Required value".to_string()
        } else {
            format!("Required value: {detail}")
        };
        Cause::new("FieldValueRequired", field, msg)
    }
    pub fn full(&self) -> String {
        if self.field.is_empty() {
            self.message.clone()
        } else {
            format!("{}: {}", self.field, self.message)
        }
    }
}

/// An API error, rendered as a `Status` object with the matching HTTP code.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub code: u16,
    pub reason: String,
    pub message: String,
    pub details: Option<Value>,
}

pub type ApiResult<T> = Result<T, ApiError>;

/// `fermats.math.example.com` or `configmaps` (core group).
pub fn qualified(resource: &str, group: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

fn details(name: &str, group: &str, kind: &str) -> Value {
    let mut d = serde_json::Map::new();
    if !name.is_empty() {
        d.insert("name".into(), json!(name));
    }
    if !group.is_empty() {
        d.insert("group".into(), json!(group));
    }
    if !kind.is_empty() {
        d.insert("kind".into(), json!(kind));
    }
    Value::Object(d)
}

impl ApiError {
    pub fn new(code: u16, reason: &str, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            reason: reason.into(),
            message: message.into(),
            details: None,
        }
    }

    pub fn not_found(resource: &str, group: &str, name: &str) -> ApiError {
        ApiError {
            code: 404,
            reason: "NotFound".into(),
            message: format!("{} \"{name}\" not found", qualified(resource, group)),
            details: Some(details(name, group, resource)),
        }
    }

    pub fn no_route() -> ApiError {
        ApiError {
            code: 404,
            reason: "NotFound".into(),
            message: "the server could not find the requested resource".into(),
            details: Some(json!({})),
        }
    }

    pub fn already_exists(resource: &str, group: &str, name: &str) -> ApiError {
        ApiError {
            code: 409,
            reason: "AlreadyExists".into(),
            message: format!("{} \"{name}\" already exists", qualified(resource, group)),
            details: Some(details(name, group, resource)),
        }
    }

    pub fn conflict(resource: &str, group: &str, name: &str, why: &str) -> ApiError {
        ApiError {
            code: 409,
            reason: "Conflict".into(),
            message: format!(
                "Operation cannot be fulfilled on {} \"{name}\": {why}",
                qualified(resource, group)
            ),
            details: Some(details(name, group, resource)),
        }
    }

    pub fn stale(resource: &str, group: &str, name: &str) -> ApiError {
        ApiError::conflict(
            resource,
            group,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 422 Invalid: `Kind.group "name" is invalid: field: detail`.
    pub fn invalid(kind: &str, group: &str, name: &str, causes: Vec<Cause>) -> ApiError {
        let qualified_kind = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}.{group}")
        };
        let list = if causes.len() == 1 {
            causes[0].full()
        } else {
            format!(
                "[{}]",
                causes
                    .iter()
                    .map(Cause::full)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let mut d = details(name, group, kind);
        d["causes"] = Value::Array(
            causes
                .iter()
                .map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field}))
                .collect(),
        );
        ApiError {
            code: 422,
            reason: "Invalid".into(),
            message: format!("{qualified_kind} \"{name}\" is invalid: {list}"),
            details: Some(d),
        }
    }

    /// 403 Forbidden as admission answers it (`admission.NewForbidden`):
    /// `<resource>.<group> "<name>" is forbidden: <why>`, details naming the resource.
    pub fn forbidden(resource: &str, group: &str, name: &str, why: &str) -> ApiError {
        ApiError {
            code: 403,
            reason: "Forbidden".into(),
            message: format!(
                "{} \"{name}\" is forbidden: {why}",
                qualified(resource, group)
            ),
            details: Some(details(name, group, resource)),
        }
    }

    /// 503 ServiceUnavailable with a `Retry-After` (seconds) in the details and the header.
    pub fn unavailable(message: impl Into<String>, retry_after_seconds: u32) -> ApiError {
        ApiError {
            code: 503,
            reason: "ServiceUnavailable".into(),
            message: message.into(),
            details: Some(json!({ "retryAfterSeconds": retry_after_seconds })),
        }
    }

    /// The `Retry-After` to send: the details' `retryAfterSeconds`, else 1 s for 429/503.
    pub fn retry_after(&self) -> Option<u64> {
        let from_details = self
            .details
            .as_ref()
            .and_then(|d| d.get("retryAfterSeconds"))
            .and_then(Value::as_u64);
        from_details.or((self.code == 429 || self.code == 503).then_some(1))
    }

    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(400, "BadRequest", message)
    }

    pub fn method_not_allowed(message: impl Into<String>) -> ApiError {
        ApiError {
            details: Some(json!({})),
            ..ApiError::new(405, "MethodNotAllowed", message)
        }
    }

    pub fn gone(message: impl Into<String>) -> ApiError {
        ApiError::new(410, "Expired", message)
    }

    /// The error an injected fault answers with, for an HTTP status code.
    pub fn injected(code: u16) -> ApiError {
        let (reason, message) = match code {
            400 => ("BadRequest", "injected fault: bad request"),
            401 => ("Unauthorized", "Unauthorized"),
            403 => ("Forbidden", "injected fault: forbidden"),
            404 => (
                "NotFound",
                "injected fault: the server could not find the requested resource",
            ),
            405 => ("MethodNotAllowed", "injected fault: method not allowed"),
            409 => (
                "Conflict",
                "injected fault: the object has been modified; please apply your changes to the latest version and try again",
            ),
            410 => ("Expired", "injected fault: too old resource version"),
            422 => ("Invalid", "injected fault: invalid"),
            429 => (
                "TooManyRequests",
                "injected fault: the server has received too many requests and has asked us to try again later",
            ),
            503 => (
                "ServiceUnavailable",
                "injected fault: the server is currently unable to handle the request",
            ),
            504 => (
                "Timeout",
                "injected fault: the server was unable to return a response in the time allotted",
            ),
            _ => ("InternalError", "Internal error occurred: injected fault"),
        };
        let mut e = ApiError::new(code, reason, message);
        if code == 429 || code == 503 {
            e.details = Some(json!({"retryAfterSeconds": 1}));
        }
        e
    }

    pub fn to_status(&self) -> Value {
        let mut v = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(d) = &self.details {
            v["details"] = d.clone();
        }
        v
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.code, self.reason, self.message)
    }
}
