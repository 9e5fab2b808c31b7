//! `Table` (meta.k8s.io/v1) rendering for `kubectl get` and a small JSONPath evaluator
//! for `additionalPrinterColumns`.

use crate::registry::{PrinterColumn, ResourceType};
use crate::util::{human_duration, parse_time};
use serde_json::{Value, json};
use std::time::SystemTime;

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Field(String),
    Index(usize),
    Wildcard,
    Filter(String, String, bool), // field path under @, value, equal?
}

fn parse_path(expr: &str) -> Vec<Step> {
    let e = expr.trim();
    let e = e
        .strip_prefix('{')
        .and_then(|x| x.strip_suffix('}'))
        .unwrap_or(e);
    let e = e.strip_prefix('$').unwrap_or(e);
    let mut steps = vec![];
    let chars: Vec<char> = e.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '.' => {
                let start = i + 1;
                i = field_end(&chars, start);
                let f: String = chars[start..i].iter().collect();
                if f == "*" {
                    steps.push(Step::Wildcard);
                } else if !f.is_empty() {
                    steps.push(Step::Field(f));
                }
            }
            '[' => {
                let start = i + 1;
                let mut depth = 0;
                while i < chars.len() {
                    if chars[i] == '[' {
                        depth += 1;
                    }
                    if chars[i] == ']' {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    i += 1;
                }
                let inner: String = chars[start..i.min(chars.len())].iter().collect();
                i += 1;
                steps.push(bracket_step(inner.trim()));
            }
            _ => {
                let start = i;
                i = field_end(&chars, start);
                steps.push(Step::Field(chars[start..i].iter().collect()));
            }
        }
    }
    steps
}

/// Where the field name starting at `start` ends: at the next `.` or `[`, or the end.
fn field_end(chars: &[char], start: usize) -> usize {
    let mut i = start;
    while i < chars.len() && chars[i] != '.' && chars[i] != '[' {
        i += 1;
    }
    i
}

/// The step a bracket holds: `*`, an index, a filter `?(@.field == "value")` (or `!=`, or
/// none: the field is present), or a quoted field name.
fn bracket_step(inner: &str) -> Step {
    if inner == "*" {
        return Step::Wildcard;
    }
    if let Ok(n) = inner.parse::<usize>() {
        return Step::Index(n);
    }
    if let Some(f) = inner.strip_prefix("?(").and_then(|x| x.strip_suffix(')')) {
        let (lhs, rhs, eq) = if let Some((l, r)) = f.split_once("!=") {
            (l, r, false)
        } else if let Some((l, r)) = f.split_once("==") {
            (l, r, true)
        } else {
            (f, "", true)
        };
        let lhs = lhs.trim().trim_start_matches('@').trim_start_matches('.');
        let rhs = rhs.trim().trim_matches('"').trim_matches('\'');
        return Step::Filter(lhs.to_string(), rhs.to_string(), eq);
    }
    let f = inner.trim_matches('\'').trim_matches('"');
    Step::Field(f.to_string())
}

/// Evaluates a JSONPath expression like `.status.conditions[?(@.type=="Ready")].status`.
pub fn eval(expr: &str, obj: &Value) -> Vec<Value> {
    let mut cur = vec![obj.clone()];
    for step in parse_path(expr) {
        let mut next = vec![];
        for v in cur {
            match &step {
                Step::Field(f) => {
                    if let Some(x) = v.get(f) {
                        next.push(x.clone())
                    }
                }
                Step::Index(n) => {
                    if let Some(x) = v.get(*n) {
                        next.push(x.clone())
                    }
                }
                Step::Wildcard => match v {
                    Value::Array(a) => next.extend(a),
                    Value::Object(m) => next.extend(m.into_values()),
                    _ => {}
                },
                Step::Filter(lhs, rhs, eq) => {
                    if let Value::Array(a) = v {
                        for item in a {
                            let mut c = Some(&item);
                            for p in lhs.split('.').filter(|p| !p.is_empty()) {
                                c = c.and_then(|x| x.get(p));
                            }
                            let actual = match c {
                                Some(Value::String(s)) => Some(s.clone()),
                                Some(other) => Some(other.to_string()),
                                None => None,
                            };
                            let keep = if rhs.is_empty() {
                                actual.is_some()
                            } else {
                                (actual.as_deref() == Some(rhs.as_str())) == *eq
                            };
                            if keep {
                                next.push(item.clone());
                            }
                        }
                    }
                }
            }
        }
        cur = next;
    }
    cur
}

fn age(ts: Option<&Value>) -> Value {
    match ts.and_then(Value::as_str).and_then(parse_time) {
        Some(t) => json!(human_duration(
            SystemTime::now().duration_since(t).unwrap_or_default()
        )),
        None => json!("<unknown>"),
    }
}

fn cell(col: &PrinterColumn, obj: &Value) -> Value {
    let results = eval(&col.json_path, obj);
    if results.is_empty() {
        return Value::Null;
    }
    let v = if results.len() == 1 {
        results[0].clone()
    } else {
        Value::String(
            results
                .iter()
                .map(|r| match r {
                    Value::String(s) => s.clone(),
                    o => o.to_string(),
                })
                .collect::<Vec<_>>()
                .join(","),
        )
    };
    match col.type_.as_str() {
        "date" => age(Some(&v)),
        "integer" | "number" | "boolean" if !v.is_array() && !v.is_object() => v,
        _ => match v {
            Value::String(_) => v,
            other => Value::String(other.to_string()),
        },
    }
}

fn columns(rt: &ResourceType) -> Vec<Value> {
    let mut cols = vec![json!({"name": "Name", "type": "string", "format": "name",
        "description": "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
        "priority": 0})];
    if rt.crd.is_some() {
        for c in &rt.columns {
            cols.push(json!({"name": c.name, "type": c.type_, "format": c.format,
                "description": c.description, "priority": c.priority}));
        }
        return cols;
    }
    if rt.plural == "events" {
        return vec![
            json!({"name": "Last Seen", "type": "string", "format": "", "description": "", "priority": 0}),
            json!({"name": "Type", "type": "string", "format": "", "description": "", "priority": 0}),
            json!({"name": "Reason", "type": "string", "format": "", "description": "", "priority": 0}),
            json!({"name": "Object", "type": "string", "format": "", "description": "", "priority": 0}),
            json!({"name": "Message", "type": "string", "format": "", "description": "", "priority": 0}),
        ];
    }
    if rt.plural == "namespaces" {
        cols.push(json!({"name": "Status", "type": "string", "format": "", "description": "The status of the namespace", "priority": 0}));
    }
    if rt.plural == "resourcequotas" {
        cols.push(json!({"name": "Age", "type": "string", "format": "", "description": "CreationTimestamp is a timestamp representing the server time when this object was created.", "priority": 0}));
        cols.push(json!({"name": "Request", "type": "string", "format": "", "description": "Request represents a minimum amount of cpu/memory that a container may consume.", "priority": 0}));
        cols.push(json!({"name": "Limit", "type": "string", "format": "", "description": "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.", "priority": 0}));
        return cols;
    }
    cols.push(json!({"name": "Age", "type": "string", "format": "", "description": "CreationTimestamp is a timestamp representing the server time when this object was created.", "priority": 0}));
    cols
}

fn row_cells(rt: &ResourceType, obj: &Value) -> Vec<Value> {
    let meta = obj.get("metadata");
    let name = meta
        .and_then(|m| m.get("name"))
        .cloned()
        .unwrap_or(json!(""));
    let created = meta.and_then(|m| m.get("creationTimestamp"));
    if rt.crd.is_some() {
        let mut cells = vec![name];
        for c in &rt.columns {
            cells.push(cell(c, obj));
        }
        return cells;
    }
    if rt.plural == "events" {
        return event_cells(obj, created);
    }
    let mut cells = vec![name];
    if rt.plural == "resourcequotas" {
        let (request, limit) = quota_usage(obj);
        cells.push(age(created));
        cells.push(json!(request));
        cells.push(json!(limit));
        return cells;
    }
    if rt.plural == "namespaces" {
        let phase = obj
            .get("status")
            .and_then(|s| s.get("phase"))
            .cloned()
            .unwrap_or(json!("Active"));
        cells.push(phase);
    }
    cells.push(age(created));
    cells
}

/// An Event's row (stored in core/v1 shape, read in either): last seen, type, reason,
/// `kind/name` of its object, message.
fn event_cells(obj: &Value, created: Option<&Value>) -> Vec<Value> {
    let last = obj
        .get("lastTimestamp")
        .filter(|v| !v.is_null())
        .or_else(|| obj.get("eventTime"))
        .or(created);
    let io = obj.get("involvedObject").or_else(|| obj.get("regarding"));
    let object = format!(
        "{}/{}",
        io.and_then(|i| i.get("kind"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_lowercase(),
        io.and_then(|i| i.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("")
    );
    let msg = obj
        .get("message")
        .or_else(|| obj.get("note"))
        .cloned()
        .unwrap_or(json!(""));
    vec![
        age(last),
        obj.get("type").cloned().unwrap_or(json!("")),
        obj.get("reason").cloned().unwrap_or(json!("")),
        json!(object),
        msg,
    ]
}

/// A ResourceQuota's Request and Limit columns, as kube-apiserver's printResourceQuota
/// writes them: `name: used/hard` for each status.hard entry, sorted, `limits.*` in the
/// Limit column.
fn quota_usage(obj: &Value) -> (String, String) {
    let hard = obj.pointer("/status/hard").and_then(Value::as_object);
    let mut names: Vec<&String> = hard.map(|h| h.keys().collect()).unwrap_or_default();
    names.sort();
    let (mut request, mut limit) = (vec![], vec![]);
    for n in names {
        let q = |part: &str| {
            obj.pointer(&format!("/status/{part}"))
                .and_then(|m| m.get(n.as_str()))
                .and_then(Value::as_str)
                .unwrap_or("0")
                .to_string()
        };
        let entry = format!("{n}: {}/{}", q("used"), q("hard"));
        let pieces: Vec<&str> = n.split('.').collect();
        if pieces.len() > 1 && pieces[0] == "limits" {
            limit.push(entry);
        } else {
            request.push(entry);
        }
    }
    (request.join(", "), limit.join(", "))
}

/// Object metadata as a `PartialObjectMetadata`.
pub fn partial(obj: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata").cloned().unwrap_or(json!({})),
    })
}

/// Renders objects as a Table. `include`: "None", "Metadata" (default) or "Object".
pub fn table(
    rt: &ResourceType,
    objs: &[Value],
    list_meta: Value,
    include: &str,
    headers: bool,
) -> Value {
    let rows: Vec<Value> = objs
        .iter()
        .map(|o| {
            let mut row = json!({"cells": row_cells(rt, o)});
            match include {
                "None" => {}
                "Object" => row["object"] = o.clone(),
                _ => row["object"] = partial(o),
            }
            row
        })
        .collect();
    let mut t = json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "rows": rows,
    });
    if headers {
        t["columnDefinitions"] = Value::Array(columns(rt));
    } else {
        t["columnDefinitions"] = Value::Null;
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bracket_holds_an_index_a_filter_or_a_quoted_field() {
        assert_eq!(bracket_step("*"), Step::Wildcard);
        assert_eq!(bracket_step("2"), Step::Index(2));
        assert_eq!(
            bracket_step("?(@.type==\"Ready\")"),
            Step::Filter("type".into(), "Ready".into(), true)
        );
        assert_eq!(
            bracket_step("?(@.type != 'Ready')"),
            Step::Filter("type".into(), "Ready".into(), false)
        );
        assert_eq!(bracket_step("'a.b'"), Step::Field("a.b".into()));
    }

    #[test]
    fn jsonpath() {
        let o = json!({"spec": {"value": 5, "numbers": [1, 4]},
            "status": {"conditions": [{"type": "A", "status": "False"}, {"type": "Ready", "status": "True"}]}});
        assert_eq!(eval(".spec.value", &o), vec![json!(5)]);
        assert_eq!(eval(".spec.numbers[1]", &o), vec![json!(4)]);
        assert_eq!(
            eval(".status.conditions[?(@.type==\"Ready\")].status", &o),
            vec![json!("True")]
        );
        assert_eq!(eval(".spec.missing", &o), Vec::<Value>::new());
    }
}
