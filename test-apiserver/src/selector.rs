//! Label and field selectors.

use crate::status::{ApiError, ApiResult};
use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
enum Req {
    Eq(String, String),
    NotEq(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

/// A parsed label selector (`a=b,c!=d,e in (x,y),f notin (z),g,!h`).
#[derive(Debug, Clone, Default)]
pub struct LabelSelector {
    reqs: Vec<Req>,
}

fn split_top(s: &str) -> Vec<String> {
    let mut parts = vec![];
    let mut depth = 0;
    let mut cur = String::new();
    for c in s.chars() {
        match c {
            '(' => {
                depth += 1;
                cur.push(c)
            }
            ')' => {
                depth -= 1;
                cur.push(c)
            }
            ',' if depth == 0 => parts.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    parts.push(cur);
    parts
        .into_iter()
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty())
        .collect()
}

fn parse_set(s: &str) -> Option<Vec<String>> {
    let s = s.trim();
    let inner = s.strip_prefix('(')?.strip_suffix(')')?;
    Some(
        inner
            .split(',')
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .collect(),
    )
}

fn bad(sel: &str) -> ApiError {
    ApiError::bad_request(format!(
        "unable to parse requirement: found '{sel}', expected: '=', '!=', '==', 'in', notin'"
    ))
}

impl LabelSelector {
    pub fn parse(s: &str) -> ApiResult<LabelSelector> {
        let mut reqs = vec![];
        for part in split_top(s) {
            if let Some(k) = part.strip_prefix('!') {
                reqs.push(Req::NotExists(k.trim().to_string()));
            } else if let Some((k, v)) = part.split_once("!=") {
                reqs.push(Req::NotEq(k.trim().into(), v.trim().into()));
            } else if let Some((k, v)) = part.split_once("==") {
                reqs.push(Req::Eq(k.trim().into(), v.trim().into()));
            } else if let Some((k, v)) = part.split_once('=') {
                reqs.push(Req::Eq(k.trim().into(), v.trim().into()));
            } else if let Some(idx) = part.find(" notin ") {
                let set = parse_set(&part[idx + 7..]).ok_or_else(|| bad(&part))?;
                reqs.push(Req::NotIn(part[..idx].trim().into(), set));
            } else if let Some(idx) = part.find(" in ") {
                let set = parse_set(&part[idx + 4..]).ok_or_else(|| bad(&part))?;
                reqs.push(Req::In(part[..idx].trim().into(), set));
            } else if part.contains(char::is_whitespace) || part.contains('(') {
                return Err(bad(&part));
            } else {
                reqs.push(Req::Exists(part));
            }
        }
        Ok(LabelSelector { reqs })
    }

    pub fn matches(&self, obj: &Value) -> bool {
        let labels = obj.get("metadata").and_then(|m| m.get("labels"));
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.reqs.iter().all(|r| match r {
            Req::Eq(k, v) => get(k) == Some(v.as_str()),
            Req::NotEq(k, v) => get(k) != Some(v.as_str()),
            Req::In(k, set) => get(k).is_some_and(|x| set.iter().any(|s| s == x)),
            Req::NotIn(k, set) => !get(k).is_some_and(|x| set.iter().any(|s| s == x)),
            Req::Exists(k) => get(k).is_some(),
            Req::NotExists(k) => get(k).is_none(),
        })
    }
}

/// A parsed field selector; fields are resolved against the stored object.
#[derive(Debug, Clone, Default)]
pub struct FieldSelector {
    /// (path, negated, wanted value, the value of a missing field)
    reqs: Vec<(Vec<String>, bool, String, &'static str)>,
}

/// The field labels kube-apiserver's registry of `plural` adds to `metadata.name` and
/// `metadata.namespace` (besides Events', below), with the value of a missing field.
fn kind_field(plural: &str, label: &str) -> Option<&'static str> {
    match (plural, label) {
        (
            "pods",
            "spec.nodeName"
            | "spec.restartPolicy"
            | "spec.schedulerName"
            | "spec.serviceAccountName"
            | "spec.hostNetwork"
            | "status.phase"
            | "status.podIP"
            | "status.nominatedNodeName",
        ) => Some(if label == "spec.hostNetwork" {
            "false"
        } else {
            ""
        }),
        ("nodes", "spec.unschedulable") => Some("false"),
        ("secrets", "type") | ("namespaces", "status.phase") => Some(""),
        ("certificatesigningrequests", "spec.signerName") => Some(""),
        ("jobs", "status.successful") => Some("0"),
        _ => None,
    }
}

/// Maps a field label to a JSON path in the stored object, or `None` if unsupported.
fn field_path(label: &str, plural: &str) -> Option<(Vec<String>, &'static str)> {
    let p = |s: &str| s.split('.').map(String::from).collect::<Vec<_>>();
    match label {
        "metadata.name" | "metadata.namespace" => return Some((p(label), "")),
        _ => {}
    }
    if let Some(missing) = kind_field(plural, label) {
        return Some((p(label), missing));
    }
    event_field_path(label, plural == "events").map(|path| (path, ""))
}

fn event_field_path(label: &str, events: bool) -> Option<Vec<String>> {
    let p = |s: &str| s.split('.').map(String::from).collect::<Vec<_>>();
    if !events {
        return None;
    }
    // Events are stored in core/v1 shape; events.k8s.io names map onto it.
    let label = if let Some(rest) = label.strip_prefix("regarding.") {
        format!("involvedObject.{rest}")
    } else {
        label.to_string()
    };
    match label.as_str() {
        "involvedObject.kind"
        | "involvedObject.namespace"
        | "involvedObject.name"
        | "involvedObject.uid"
        | "involvedObject.apiVersion"
        | "involvedObject.resourceVersion"
        | "involvedObject.fieldPath"
        | "reason"
        | "type"
        | "reportingComponent" => Some(p(&label)),
        "reportingController" => Some(p("reportingComponent")),
        "source" | "deprecatedSource" => Some(p("source.component")),
        _ => None,
    }
}

impl FieldSelector {
    /// Parses the field selector of a request on `plural` (the resource's plural name).
    pub fn parse(s: &str, plural: &str) -> ApiResult<FieldSelector> {
        let mut reqs = vec![];
        for part in split_top(s) {
            let (k, neg, v) = if let Some((k, v)) = part.split_once("!=") {
                (k, true, v)
            } else if let Some((k, v)) = part.split_once("==") {
                (k, false, v)
            } else if let Some((k, v)) = part.split_once('=') {
                (k, false, v)
            } else {
                return Err(ApiError::bad_request(format!(
                    "invalid selector: '{s}'; can't understand '{part}'"
                )));
            };
            let k = k.trim();
            let (path, missing) = field_path(k, plural)
                .ok_or_else(|| ApiError::bad_request(format!("field label not supported: {k}")))?;
            reqs.push((path, neg, v.trim().to_string(), missing));
        }
        Ok(FieldSelector { reqs })
    }

    pub fn matches(&self, obj: &Value) -> bool {
        self.reqs.iter().all(|(path, neg, want, missing)| {
            let mut cur = Some(obj);
            for p in path {
                cur = cur.and_then(|c| c.get(p));
            }
            let actual = match cur {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => missing.to_string(),
                Some(other) => other.to_string(),
            };
            (actual == *want) != *neg
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn labels() {
        let o = json!({"metadata": {"labels": {"app": "x", "tier": "db"}}});
        let m = |s: &str| LabelSelector::parse(s).map(|l| l.matches(&o));
        assert!(m("app=x").unwrap());
        assert!(m("app==x,tier").unwrap());
        assert!(!m("app!=x").unwrap());
        assert!(m("tier in (db, web)").unwrap());
        assert!(!m("tier notin (db)").unwrap());
        assert!(m("!missing").unwrap());
        assert!(!m("missing").unwrap());
        assert!(m("").unwrap());
    }

    #[test]
    fn fields() {
        let o = json!({"metadata": {"name": "a"}, "involvedObject": {"kind": "Fermat"}});
        let f =
            FieldSelector::parse("metadata.name=a,involvedObject.kind=Fermat", "events").unwrap();
        assert!(f.matches(&o));
        let f = FieldSelector::parse("regarding.kind!=Fermat", "events").unwrap();
        assert!(!f.matches(&o));
        assert!(FieldSelector::parse("spec.x=1", "configmaps").is_err());
        assert!(FieldSelector::parse("spec.nodeName=n", "configmaps").is_err());
    }

    #[test]
    fn node_fields_read_a_missing_bool_as_false() {
        let node = json!({"metadata": {"name": "n"}, "spec": {}});
        let schedulable = FieldSelector::parse("spec.unschedulable==false", "nodes").unwrap();
        assert!(schedulable.matches(&node));
        let cordoned = json!({"metadata": {"name": "n"}, "spec": {"unschedulable": true}});
        assert!(!schedulable.matches(&cordoned));
    }
}
