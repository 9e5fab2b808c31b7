//! core/v1 Event <-> events.k8s.io/v1 Event conversion (both are views of one store,
//! which keeps the core/v1 shape, as kube-apiserver does), and Event validation as
//! kube-apiserver v1.24 does it (`pkg/apis/core/validation/events.go`): the checks run on
//! the core shape, so errors name core fields (`message`, not `note`), and the refusal is
//! `Event "name" is invalid: ...` whichever API the Event came through.

use crate::status::Cause;
use crate::util;
use serde_json::{Map, Value, json};

const REPORTING_INSTANCE_LIMIT: usize = 128;
const ACTION_LIMIT: usize = 128;
const REASON_LIMIT: usize = 128;
const NOTE_LIMIT: usize = 1024;

fn text<'a>(e: &'a Value, field: &str) -> &'a str {
    e.get(field).and_then(Value::as_str).unwrap_or("")
}

/// A Go zero value: absent, null, empty string, 0, or an object of zero values.
fn is_zero(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(Value::Number(n)) => n.as_f64() == Some(0.0),
        Some(Value::Object(m)) => m.values().all(|v| is_zero(Some(v))),
        Some(Value::Bool(b)) => !b,
        Some(Value::Array(a)) => a.is_empty(),
    }
}

/// `field.Invalid(path, "", detail)`: the checks that report no value.
fn invalid_empty(field: &str, detail: &str) -> Cause {
    Cause::invalid(field, "\"\"", detail)
}

/// `ValidateQualifiedName` (apimachinery's `IsQualifiedName`).
fn qualified_name_errors(value: &str) -> Vec<String> {
    let (prefix, name) = match value.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, value),
    };
    let mut errs = vec![];
    if value.matches('/').count() > 1 {
        errs.push("a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')".to_string());
        return errs;
    }
    if let Some(p) = prefix {
        if p.is_empty() {
            errs.push("prefix part must be non-empty".into());
        } else {
            errs.extend(
                util::dns_subdomain_errors(p)
                    .into_iter()
                    .map(|e| format!("prefix part {e}")),
            );
        }
    }
    if name.is_empty() {
        errs.push("name part must be non-empty".into());
    } else if name.len() > 63 {
        errs.push("name part must be no more than 63 characters".into());
    }
    let bytes = name.as_bytes();
    let alnum = |c: &u8| c.is_ascii_alphanumeric();
    let ok = !bytes.is_empty()
        && bytes.first().is_some_and(alnum)
        && bytes.last().is_some_and(alnum)
        && bytes
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'));
    if !ok {
        errs.push("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')".into());
    }
    errs
}

/// `legacyValidateEvent`: what every Event must satisfy, through either API.
fn legacy(e: &Value, causes: &mut Vec<Cause>) {
    let ns = util::meta_str(e, "namespace").unwrap_or("");
    let involved_ns = e
        .pointer("/involvedObject/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    let reported = !is_zero(e.get("eventTime"));
    if !namespace_fits(reported, ns, involved_ns) {
        causes.push(Cause::invalid(
            "involvedObject.namespace",
            &format!("{involved_ns:?}"),
            "does not match event.namespace",
        ));
    }
    if reported {
        reporting_fields(e, causes);
    }
    for err in util::dns_subdomain_errors(ns) {
        causes.push(Cause::invalid("namespace", &format!("{ns:?}"), &err));
    }
}

/// Whether an Event's namespace fits its object's: the object's own namespace; for an object
/// without one, `default` (or none) for an Event without `eventTime`, and `default` or
/// `kube-system` for one with it (`reported`), which may also name any other object's.
fn namespace_fits(reported: bool, ns: &str, involved_ns: &str) -> bool {
    match (reported, involved_ns.is_empty()) {
        (false, true) => ns.is_empty() || ns == "default",
        (false, false) => ns == involved_ns,
        (true, true) => ns == "default" || ns == "kube-system",
        (true, false) => true,
    }
}

/// An Event with an `eventTime` (written through events.k8s.io/v1) names who reported it and
/// what was done, within the lengths the API allows.
fn reporting_fields(e: &Value, causes: &mut Vec<Cause>) {
    let controller = text(e, "reportingComponent");
    if controller.is_empty() {
        causes.push(Cause::required("reportingController", ""));
    }
    for err in qualified_name_errors(controller) {
        causes.push(Cause::invalid(
            "reportingController",
            &format!("{controller:?}"),
            &err,
        ));
    }
    let checks: [(&str, &str, usize); 3] = [
        (
            "reportingInstance",
            "reportingInstance",
            REPORTING_INSTANCE_LIMIT,
        ),
        ("action", "action", ACTION_LIMIT),
        ("reason", "reason", REASON_LIMIT),
    ];
    for (field, path, limit) in checks {
        let v = text(e, field);
        if v.is_empty() {
            causes.push(Cause::required(path, ""));
        }
        if v.len() > limit {
            causes.push(invalid_empty(
                path,
                &format!("can have at most {limit} characters"),
            ));
        }
    }
    if text(e, "message").len() > NOTE_LIMIT {
        causes.push(invalid_empty(
            "message",
            &format!("can have at most {NOTE_LIMIT} characters"),
        ));
    }
}

/// `validateV1EventSeries`.
fn series(e: &Value, causes: &mut Vec<Cause>) {
    let Some(s) = e.get("series").filter(|s| !s.is_null()) else {
        return;
    };
    if s.get("count").and_then(Value::as_i64).unwrap_or(0) < 2 {
        causes.push(invalid_empty("series.count", "should be at least 2"));
    }
    if is_zero(s.get("lastObservedTime")) {
        causes.push(Cause::required("series.lastObservedTime", ""));
    }
}

/// `ValidateEventCreate` for an Event in the stored (core) shape; `strict` for one that
/// came through events.k8s.io/v1.
pub fn validate_create(e: &Value, strict: bool) -> Vec<Cause> {
    let mut causes = vec![];
    legacy(e, &mut causes);
    if !strict {
        return causes;
    }
    let name = util::meta_str(e, "name").unwrap_or("");
    if name.is_empty() {
        causes.push(Cause::required(
            "metadata.name",
            "name or generateName is required",
        ));
    } else {
        for err in util::dns_subdomain_errors(name) {
            causes.push(Cause::invalid("metadata.name", &format!("{name:?}"), &err));
        }
    }
    series(e, &mut causes);
    if is_zero(e.get("eventTime")) {
        causes.push(Cause::required("eventTime", ""));
    }
    let ty = text(e, "type");
    if ty != "Normal" && ty != "Warning" {
        causes.push(invalid_empty("type", &format!("has invalid value: {ty}")));
    }
    for (field, path) in [
        ("firstTimestamp", "firstTimestamp"),
        ("lastTimestamp", "lastTimestamp"),
        ("count", "count"),
    ] {
        if !is_zero(e.get(field)) {
            causes.push(invalid_empty(path, "needs to be unset"));
        }
    }
    let source = e.get("source");
    if !is_zero(source.and_then(|s| s.get("component")))
        || !is_zero(source.and_then(|s| s.get("host")))
    {
        causes.push(invalid_empty("source", "needs to be unset"));
    }
    causes
}

/// `ValidateEventUpdate`: through events.k8s.io/v1 what an Event says may not change.
pub fn validate_update(new: &Value, old: &Value, strict: bool) -> Vec<Cause> {
    let mut causes = vec![];
    legacy(new, &mut causes);
    if !strict {
        return causes;
    }
    if new.get("series") != old.get("series") {
        series(new, &mut causes);
    }
    // In kube-apiserver's order (reason is checked twice there).
    for (field, path) in [
        ("involvedObject", "involvedObject"),
        ("reason", "reason"),
        ("message", "message"),
        ("source", "source"),
        ("firstTimestamp", "firstTimestamp"),
        ("lastTimestamp", "lastTimestamp"),
        ("count", "count"),
        ("reason", "reason"),
        ("type", "type"),
        ("eventTime", "eventTime"),
        ("action", "action"),
        ("related", "related"),
        ("reportingComponent", "reportingController"),
        ("reportingInstance", "reportingInstance"),
    ] {
        let (a, b) = (new.get(field), old.get(field));
        let same = a == b || (is_zero(a) && is_zero(b));
        if !same {
            let shown = match a {
                Some(v) if !v.is_null() => util::go_value(v),
                _ => "\"\"".to_string(),
            };
            causes.push(Cause::invalid(path, &shown, "field is immutable"));
        }
    }
    causes
}

/// (core/v1 field, events.k8s.io/v1 field)
const RENAMES: &[(&str, &str)] = &[
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
    ("reportingComponent", "reportingController"),
];

fn rename(obj: &Value, to_v1: bool) -> Value {
    let Some(m) = obj.as_object() else {
        return obj.clone();
    };
    let mut out = Map::new();
    for (k, v) in m {
        let new_key = RENAMES
            .iter()
            .find_map(|(core, v1)| {
                if to_v1 && k == core {
                    Some(*v1)
                } else if !to_v1 && k == v1 {
                    Some(*core)
                } else {
                    None
                }
            })
            .unwrap_or(k.as_str());
        out.insert(new_key.to_string(), v.clone());
    }
    Value::Object(out)
}

/// Stored core/v1 Event -> events.k8s.io/v1 view.
pub fn core_to_v1(core: &Value) -> Value {
    let mut v = rename(core, true);
    v["apiVersion"] = Value::String("events.k8s.io/v1".into());
    v["kind"] = Value::String("Event".into());
    // The converted legacy fields as Go encodes them: `omitempty` omits a zero
    // `deprecatedCount` but neither a zero `metav1.Time` (null) nor the `deprecatedSource`
    // struct (`{}`), so v1.36 always shows those three.
    if let Some(m) = v.as_object_mut() {
        m.entry("deprecatedSource").or_insert_with(|| json!({}));
        for k in ["deprecatedFirstTimestamp", "deprecatedLastTimestamp"] {
            m.entry(k).or_insert(Value::Null);
        }
        if m.get("deprecatedCount").and_then(Value::as_i64) == Some(0) {
            m.remove("deprecatedCount");
        }
    }
    v
}

/// events.k8s.io/v1 Event -> stored core/v1 shape.
pub fn v1_to_core(v1: &Value) -> Value {
    let mut v = rename(v1, false);
    v["apiVersion"] = Value::String("v1".into());
    v["kind"] = Value::String("Event".into());
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_events_namespace_is_its_objects_or_a_system_one() {
        assert!(namespace_fits(false, "", ""));
        assert!(namespace_fits(false, "default", ""));
        assert!(!namespace_fits(false, "a", ""));
        assert!(namespace_fits(false, "a", "a"));
        assert!(!namespace_fits(false, "a", "b"));
        assert!(namespace_fits(true, "kube-system", ""));
        assert!(!namespace_fits(true, "a", ""));
        assert!(namespace_fits(true, "a", "b"));
    }

    #[test]
    fn roundtrip() {
        let v1 = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"},
            "regarding": {"kind": "Fermat", "name": "f"}, "note": "hello", "reason": "Created",
            "reportingController": "math", "type": "Normal"});
        let core = v1_to_core(&v1);
        assert_eq!(core["involvedObject"]["name"], "f");
        assert_eq!(core["message"], "hello");
        assert_eq!(core["reportingComponent"], "math");
        let mut shown = v1.clone();
        shown["deprecatedSource"] = json!({});
        shown["deprecatedFirstTimestamp"] = Value::Null;
        shown["deprecatedLastTimestamp"] = Value::Null;
        assert_eq!(core_to_v1(&core), shown);
    }
}
