//! Replays a recorded sequence of requests against two API servers (this one and a real
//! kube-apiserver, say) and reports every difference of status code, `Status` reason,
//! `Warning` headers and body shape: the tool behind `hack/diff-servers`.
//!
//! A recording is YAML: a list of steps, each a request (`method`, `path`, optional `body`
//! and `contentType`). `{run}` anywhere in a path or body becomes a suffix unique to the run,
//! the same on both servers, so that a recording can create its own namespace and objects
//! on a shared cluster and be replayed again. Bodies are compared by *shape*: which keys an
//! object has and the JSON type of each value, never the values (uids, timestamps and
//! resourceVersions always differ); `kind`, `apiVersion`, `reason` and `code` are compared
//! by value, as they are what a client branches on. Watches are not replayed (a stream has
//! no end to compare at).

mod replay;

pub use replay::{ReplayError, StepReport, replay, send};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

/// One recorded request.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    /// What the step checks, printed with its differences.
    pub name: String,
    /// `GET`, `POST`, `PUT`, `PATCH` or `DELETE`.
    pub method: String,
    /// The path and query, e.g. `/api/v1/namespaces/diff-{run}/configmaps?fieldValidation=Strict`.
    pub path: String,
    /// The request body (sent as JSON unless `contentType` says otherwise).
    #[serde(default)]
    pub body: Option<Value>,
    /// The `Content-Type` of the body (default `application/json`; patches name their type,
    /// e.g. `application/merge-patch+json` or `application/apply-patch+yaml`).
    #[serde(default)]
    pub content_type: Option<String>,
}

impl Step {
    /// The step with every `{run}` replaced by `run`.
    pub fn for_run(&self, run: &str) -> Step {
        let body = self.body.as_ref().map(|b| {
            let text = b.to_string().replace("{run}", run);
            serde_json::from_str(&text).unwrap_or_else(|_| b.clone())
        });
        Step {
            name: self.name.clone(),
            method: self.method.clone(),
            path: self.path.replace("{run}", run),
            body,
            content_type: self.content_type.clone(),
        }
    }
}

/// Reads a recording (a YAML list of [`Step`]s).
pub fn parse_recording(yaml: &str) -> Result<Vec<Step>, serde_yaml::Error> {
    serde_yaml::from_str(yaml)
}

/// What one server answered to one step, as compared.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The HTTP status code.
    pub code: u16,
    /// The `Warning` headers' texts (`299 - "<text>"` → `<text>`).
    pub warnings: Vec<String>,
    /// The body as JSON (a non-JSON body is kept as a string).
    pub body: Value,
}

impl Answer {
    /// The `reason` of a `Status` body, if the body is one.
    pub fn reason(&self) -> Option<&str> {
        (self.body["kind"] == "Status")
            .then(|| self.body["reason"].as_str())
            .flatten()
    }
}

/// The fields compared by value: what clients branch on.
const BY_VALUE: &[&str] = &["kind", "apiVersion", "reason", "code", "status", "type"];

/// The shape of a JSON value: objects keep their keys (with the shapes of their values),
/// lists the union of their items' shapes, scalars become their type's name; the fields in
/// [`BY_VALUE`] keep their value when they are strings or numbers.
pub fn shape(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let out: Map<String, Value> = m
                .iter()
                .map(|(k, v)| {
                    let kept = BY_VALUE.contains(&k.as_str()) && (v.is_string() || v.is_number());
                    (k.clone(), if kept { v.clone() } else { shape(v) })
                })
                .collect();
            Value::Object(out)
        }
        Value::Array(items) => {
            let shapes: BTreeSet<String> = items.iter().map(|i| shape(i).to_string()).collect();
            let items: Vec<Value> = shapes
                .iter()
                .filter_map(|s| serde_json::from_str(s).ok())
                .collect();
            Value::Array(items)
        }
        Value::String(_) => json!("string"),
        Value::Number(_) => json!("number"),
        Value::Bool(_) => json!("bool"),
        Value::Null => json!("null"),
    }
}

/// The paths where two shapes differ, each with both sides (`-` when absent).
pub fn shape_differences(a: &Value, b: &Value) -> Vec<String> {
    let mut out = vec![];
    walk(a, b, "", &mut out);
    out
}

fn walk(a: &Value, b: &Value, at: &str, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                let path = format!("{at}.{k}");
                match (x.get(k), y.get(k)) {
                    (Some(p), Some(q)) => walk(p, q, &path, out),
                    (Some(p), None) => out.push(format!("{path}: {} vs -", brief(p))),
                    (None, Some(q)) => out.push(format!("{path}: - vs {}", brief(q))),
                    (None, None) => {}
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() <= 1 && y.len() <= 1 => {
            match (x.first(), y.first()) {
                (Some(p), Some(q)) => walk(p, q, &format!("{at}[]"), out),
                (None, None) => {}
                _ => out.push(format!("{at}: {} vs {}", brief(a), brief(b))),
            }
        }
        _ if a != b => out.push(format!("{}: {} vs {}", display(at), brief(a), brief(b))),
        _ => {}
    }
}

fn display(at: &str) -> &str {
    if at.is_empty() { "(body)" } else { at }
}

fn brief(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 80 {
        format!("{}…", s.chars().take(80).collect::<String>())
    } else {
        s
    }
}

/// Every difference between two servers' answers to one step, in words.
pub fn differences(left: &Answer, right: &Answer) -> Vec<String> {
    let mut out = vec![];
    if left.code != right.code {
        out.push(format!("status code: {} vs {}", left.code, right.code));
    }
    if left.reason() != right.reason() {
        out.push(format!(
            "reason: {} vs {}",
            left.reason().unwrap_or("-"),
            right.reason().unwrap_or("-")
        ));
    }
    if left.warnings != right.warnings {
        out.push(format!(
            "warnings: {:?} vs {:?}",
            left.warnings, right.warnings
        ));
    }
    out.extend(
        shape_differences(&shape(&left.body), &shape(&right.body))
            .into_iter()
            .map(|d| format!("body {d}")),
    );
    out
}

/// The text of a `Warning` header: `299 - "text"` → `text`.
pub fn warning_text(header: &str) -> String {
    let rest = header.splitn(3, ' ').nth(2).unwrap_or(header);
    let rest = rest.trim();
    let quoted = rest.strip_prefix('"').and_then(|r| r.strip_suffix('"'));
    quoted.unwrap_or(rest).replace("\\\"", "\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(code: u16, body: Value) -> Answer {
        Answer {
            code,
            warnings: vec![],
            body,
        }
    }

    #[test]
    fn values_differ_but_shapes_agree() {
        let a = answer(
            201,
            json!({"kind": "ConfigMap", "metadata": {"uid": "1", "name": "a"}}),
        );
        let b = answer(
            201,
            json!({"kind": "ConfigMap", "metadata": {"uid": "2", "name": "b"}}),
        );
        assert_eq!(differences(&a, &b), Vec::<String>::new());
    }

    #[test]
    fn code_reason_and_missing_fields_are_reported() {
        let a = answer(
            409,
            json!({"kind": "Status", "reason": "AlreadyExists", "details": {"name": "x"}}),
        );
        let b = answer(422, json!({"kind": "Status", "reason": "Invalid"}));
        assert_eq!(
            differences(&a, &b),
            [
                "status code: 409 vs 422",
                "reason: AlreadyExists vs Invalid",
                "body .details: {\"name\":\"string\"} vs -",
                "body .reason: \"AlreadyExists\" vs \"Invalid\"",
            ]
        );
    }

    #[test]
    fn a_run_suffix_reaches_path_and_body() {
        let step = Step {
            name: "n".into(),
            method: "POST".into(),
            path: "/api/v1/namespaces/diff-{run}/configmaps".into(),
            body: Some(json!({"metadata": {"namespace": "diff-{run}"}})),
            content_type: None,
        };
        let s = step.for_run("7");
        assert_eq!(s.path, "/api/v1/namespaces/diff-7/configmaps");
        assert_eq!(s.body, Some(json!({"metadata": {"namespace": "diff-7"}})));
    }

    #[test]
    fn warning_headers_lose_their_code_and_quotes() {
        assert_eq!(
            warning_text("299 - \"unknown field \\\"spec.x\\\"\""),
            "unknown field \"spec.x\""
        );
    }
}
