//! CEL validation rules (`x-kubernetes-validations`) of custom resources, evaluated the way
//! apiextensions-apiserver does (`pkg/apiserver/schema/cel/validation.go`): the schema and
//! the object are walked together, each rule sees its node as `self` (and the stored node
//! as `oldSelf`), and a failed rule becomes a field error in kube-apiserver's words. The
//! expressions are parsed and run by kube-rs's `kube-cel` (the `cel` crate with the
//! Kubernetes CEL libraries); only the walk and the words live here.
//!
//! Differences from kube-apiserver, because cel-rust has no type checker: a rule that
//! names an undefined field or returns a non-bool is refused when it runs, not when the
//! CRD is created; no cost budget; the parser's own error text is cel-rust's.

use crate::status::Cause;
use kube_cel::KubeCelExt;
use kube_cel::cel::objects::{Key, Map};
use kube_cel::cel::{Context, ExecutionError, Program, Value as Cel};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;

thread_local! {
    /// Registering the standard and Kubernetes functions costs more than a rule's
    /// evaluation, so each thread does it once.
    static BASE: Context<'static> = Context::default().with_all();
}

/// The blocking cause kube-apiserver adds when type errors kept the rules from running.
pub fn not_checked() -> Cause {
    Cause::new(
        "FieldValueInvalid",
        "<nil>",
        "Invalid value: \"null\": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
    )
}

/// Evaluates every rule of `schema` against the object (`old`: the stored object of an
/// update), pushing a cause per failed rule.
pub fn validate(obj: &Value, old: Option<&Value>, schema: &Value, causes: &mut Vec<Cause>) {
    if !has_rules(schema) {
        return;
    }
    BASE.with(|base| walk(base, schema, obj, old, "", causes));
}

/// Whether any node of the schema carries a rule (most CRDs have none: skip the walk).
pub fn has_rules(schema: &Value) -> bool {
    match schema {
        Value::Object(m) => m.contains_key("x-kubernetes-validations") || m.values().any(has_rules),
        Value::Array(a) => a.iter().any(has_rules),
        _ => false,
    }
}

fn walk(
    base: &Context<'static>,
    schema: &Value,
    value: &Value,
    old: Option<&Value>,
    path: &str,
    causes: &mut Vec<Cause>,
) {
    if value.is_null() {
        // Only non-null values are validated (a rule on the parent checks presence).
        return;
    }
    if let Some(rules) = schema
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
    {
        let node = Node {
            schema,
            value,
            old,
            path,
        };
        for rule in rules {
            if let Some(c) = evaluate(base, &node, rule) {
                causes.push(c);
            }
        }
    }
    if let Some(sub) = schema.get("allOf").and_then(Value::as_array) {
        for s in sub {
            walk(base, s, value, old, path, causes);
        }
    }
    match value {
        Value::Object(obj) => {
            let correlates =
                schema.get("x-kubernetes-map-type").and_then(Value::as_str) != Some("atomic");
            let props = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            for (k, v) in obj {
                let old_v = old.filter(|_| correlates).and_then(|o| o.get(k));
                if let Some(s) = props.and_then(|p| p.get(k)) {
                    walk(base, s, v, old_v, &child(path, k), causes);
                } else if let Some(s) = additional {
                    walk(base, s, v, old_v, &format!("{path}[{k}]"), causes);
                }
            }
        }
        Value::Array(items) => {
            let Some(s) = schema.get("items") else { return };
            for (i, item) in items.iter().enumerate() {
                let old_item = old.and_then(|o| correlated_item(schema, item, o));
                walk(base, s, item, old_item, &format!("{path}[{i}]"), causes);
            }
        }
        _ => {}
    }
}

/// `spec` under the root, `spec.min` under `spec`.
fn child(path: &str, field: &str) -> String {
    if path.is_empty() {
        field.to_string()
    } else {
        format!("{path}.{field}")
    }
}

/// Only the items of a `map` list correlate with the stored list (by their keys); a rule
/// with `oldSelf` on any other list's items never runs on update, as in kube-apiserver.
fn correlated_item<'a>(schema: &Value, item: &Value, old: &'a Value) -> Option<&'a Value> {
    if schema.get("x-kubernetes-list-type").and_then(Value::as_str) != Some("map") {
        return None;
    }
    let keys: Vec<&str> = schema
        .get("x-kubernetes-list-map-keys")?
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    old.as_array()?
        .iter()
        .find(|o| keys.iter().all(|k| o.get(k) == item.get(k)))
}

/// One schema node and the values a rule there sees.
struct Node<'a> {
    schema: &'a Value,
    value: &'a Value,
    old: Option<&'a Value>,
    /// The node's field path ("" at the root).
    path: &'a str,
}

impl Node<'_> {
    /// The schema's type, which `Duplicate value` still shows.
    fn type_name(&self) -> &str {
        self.schema
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// The "value" of the node's field errors as kube-apiserver v1.36.2 prints it: none for
    /// an object or a list (`spec: Invalid value: <detail>`), the value itself for a scalar
    /// (`spec.mode: Invalid value: "slow": <detail>`), as Go's `%q` or `%v` print it.
    fn shown_value(&self) -> Option<String> {
        match self.value {
            Value::Object(_) | Value::Array(_) => None,
            Value::Null => Some("null".into()),
            Value::String(s) => Some(format!("{s:?}")),
            Value::Bool(b) => Some(b.to_string()),
            Value::Number(n) => Some(go_number(n)),
        }
    }
}

/// Go's `%v` of a JSON number decoded as int64 or float64 (`2`, `1.5`, `1e+21`).
fn go_number(n: &serde_json::Number) -> String {
    if n.is_i64() || n.is_u64() {
        return n.to_string();
    }
    let f = n.as_f64().unwrap_or(0.0);
    if f.fract() == 0.0 && f.abs() < 1e21 {
        format!("{f:.0}")
    } else if f.abs() >= 1e21 {
        let e = format!("{f:e}");
        match e.split_once('e') {
            Some((m, x)) if !x.starts_with('-') => format!("{m}e+{x:0>2}"),
            _ => e,
        }
    } else {
        f.to_string()
    }
}

/// Runs one rule; the cause when it fails.
fn evaluate(base: &Context<'static>, node: &Node, rule: &Value) -> Option<Cause> {
    let text = rule.get("rule").and_then(Value::as_str)?;
    let program = match Program::compile(text) {
        Ok(p) => p,
        Err(e) => {
            return Some(invalid(
                node.path,
                node.shown_value(),
                &format!("rule compile error: compilation failed: {e}"),
            ));
        }
    };
    let uses_old_self = program.references().has_variable("oldSelf");
    let optional_old_self = rule
        .get("optionalOldSelf")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if uses_old_self && node.old.is_none() && !optional_old_self {
        // Transition rules run only where there is a stored value to compare with.
        return None;
    }
    if !uses_old_self && node.old == Some(node.value) {
        // Ratcheting (1.30+): an unchanged value keeps passing, whatever the rule says now.
        return None;
    }
    let mut ctx = base.new_inner_scope();
    ctx.add_variable_from_value("self", to_cel(node.value, node.schema));
    if uses_old_self {
        let old = node.old.map_or(Cel::Null, |o| to_cel(o, node.schema));
        ctx.add_variable_from_value("oldSelf", old);
    }
    match program.execute(&ctx) {
        Ok(Cel::Bool(true)) => None,
        Ok(Cel::Bool(false)) => Some(failed(&ctx, node, rule)),
        Ok(other) => Some(invalid(
            node.path,
            node.shown_value(),
            &format!(
                "rule did not evaluate to a bool ({other:?}) evaluating rule: {}",
                error_string(rule)
            ),
        )),
        Err(e) => Some(invalid(
            node.path,
            node.shown_value(),
            &format!("{} evaluating rule: {}", go_words(&e), error_string(rule)),
        )),
    }
}

/// The field error of a rule that evaluated to false: at its `fieldPath` if it has one,
/// worded by its `messageExpression`, else its message, else `failed rule: <rule>`.
fn failed(ctx: &Context, node: &Node, rule: &Value) -> Cause {
    let mut path = node.path.to_string();
    if let Some(fp) = rule.get("fieldPath").and_then(Value::as_str) {
        for part in fp.trim_start_matches('.').split('.') {
            path = child(&path, part);
        }
    }
    let detail = rule
        .get("messageExpression")
        .and_then(Value::as_str)
        .and_then(|m| message_expression(ctx, m))
        .unwrap_or_else(|| match rule.get("message").and_then(Value::as_str) {
            Some(m) if !m.is_empty() => m.trim().to_string(),
            _ => format!("failed rule: {}", error_string(rule)),
        });
    let type_name = node.type_name();
    match rule.get("reason").and_then(Value::as_str) {
        Some("FieldValueForbidden") => Cause::new(
            "FieldValueForbidden",
            &shown(&path),
            format!("Forbidden: {detail}"),
        ),
        Some("FieldValueRequired") => Cause::new(
            "FieldValueRequired",
            &shown(&path),
            format!("Required value: {detail}"),
        ),
        Some("FieldValueDuplicate") => Cause::new(
            "FieldValueDuplicate",
            &shown(&path),
            format!("Duplicate value: {type_name:?}"),
        ),
        _ => invalid(&path, node.shown_value(), &detail),
    }
}

/// A `messageExpression`'s string, when it gives one kube-apiserver would use (trimmed,
/// non-empty, one line); otherwise the rule's message is used, as there.
fn message_expression(ctx: &Context, expr: &str) -> Option<String> {
    let program = Program::compile(expr).ok()?;
    let Ok(Cel::String(s)) = program.execute(ctx) else {
        return None;
    };
    let s = s.trim();
    (!s.is_empty() && !s.contains('\n') && s.len() <= 5 * 1024).then(|| s.to_string())
}

/// The message if there is one, else the rule (kube-apiserver's `ruleErrorString`).
fn error_string(rule: &Value) -> String {
    match rule.get("message").and_then(Value::as_str) {
        Some(m) if !m.is_empty() => m.trim().to_string(),
        _ => rule
            .get("rule")
            .and_then(Value::as_str)
            .unwrap_or("")
            .trim()
            .to_string(),
    }
}

/// A nil field path prints as `<nil>` in kube-apiserver's field errors.
fn shown(path: &str) -> String {
    if path.is_empty() {
        "<nil>".into()
    } else {
        path.into()
    }
}

/// `Invalid value: <value>: <detail>`, or `Invalid value: <detail>` with no value shown.
fn invalid(path: &str, value: Option<String>, detail: &str) -> Cause {
    match value {
        Some(v) => Cause::invalid(&shown(path), &v, detail),
        None => Cause::new(
            "FieldValueInvalid",
            &shown(path),
            format!("Invalid value: {detail}"),
        ),
    }
}

/// cel-go's words for the runtime errors a rule meets most (`no such key: x`).
fn go_words(e: &ExecutionError) -> String {
    match e {
        ExecutionError::NoSuchKey(k) => format!("no such key: {k}"),
        ExecutionError::DivisionByZero(_) => "division by zero".into(),
        ExecutionError::RemainderByZero(_) => "modulus by zero".into(),
        ExecutionError::Overflow(..) => "integer overflow".into(),
        other => other.to_string(),
    }
}

/// The CEL value of a JSON value, typed by its schema as kube-apiserver types it (an
/// integer-valued `number` is still a double).
fn to_cel(value: &Value, schema: &Value) -> Cel {
    let ty = schema.get("type").and_then(Value::as_str).unwrap_or("");
    match value {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) if ty == "number" => Cel::Float(n.as_f64().unwrap_or(f64::NAN)),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Cel::Int(i),
            (None, Some(u)) => Cel::UInt(u),
            _ => Cel::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => Cel::String(Arc::new(s.clone())),
        Value::Array(items) => {
            let item_schema = schema.get("items").unwrap_or(&Value::Null);
            Cel::List(Arc::new(
                items.iter().map(|i| to_cel(i, item_schema)).collect(),
            ))
        }
        Value::Object(obj) => {
            let props = schema.get("properties");
            let additional = schema.get("additionalProperties").unwrap_or(&Value::Null);
            let map: HashMap<Key, Cel> = obj
                .iter()
                .map(|(k, v)| {
                    let s = props.and_then(|p| p.get(k)).unwrap_or(additional);
                    (Key::String(Arc::new(k.clone())), to_cel(v, s))
                })
                .collect();
            Cel::Map(Map { map: Arc::new(map) })
        }
    }
}

/// The causes of a CRD whose rules do not compile, as apiextensions-apiserver refuses it
/// at creation: at the rule's path under the CRD's schema, the rule shown as Go's `%#v`
/// of a `ValidationRule`.
pub fn crd_rule_errors(crd: &Value, causes: &mut Vec<Cause>) {
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let schemas: Vec<&Value> = versions
        .iter()
        .filter_map(|v| v.pointer("/schema/openAPIV3Schema"))
        .collect();
    // One schema shared by every version is validated as the internal API's
    // `spec.validation` (the conversion from v1 hoists it there).
    let shared = !schemas.is_empty()
        && schemas.len() == versions.len()
        && schemas.iter().all(|s| *s == schemas[0]);
    if shared {
        check_schema(schemas[0], "spec.validation.openAPIV3Schema", causes);
        return;
    }
    for (i, v) in versions.iter().enumerate() {
        if let Some(s) = v.pointer("/schema/openAPIV3Schema") {
            check_schema(
                s,
                &format!("spec.versions[{i}].schema.openAPIV3Schema"),
                causes,
            );
        }
    }
}

fn check_schema(schema: &Value, path: &str, causes: &mut Vec<Cause>) {
    if let Some(rules) = schema
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
    {
        for (i, rule) in rules.iter().enumerate() {
            let at = format!("{path}.x-kubernetes-validations[{i}]");
            check_rule(rule, &at, causes);
        }
    }
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (k, s) in props {
            check_schema(s, &format!("{path}.properties[{k}]"), causes);
        }
    }
    for (key, shown) in [
        ("items", "items"),
        ("additionalProperties", "additionalProperties"),
    ] {
        if let Some(s) = schema.get(key).filter(|s| s.is_object()) {
            check_schema(s, &format!("{path}.{shown}"), causes);
        }
    }
    if let Some(all) = schema.get("allOf").and_then(Value::as_array) {
        for (i, s) in all.iter().enumerate() {
            check_schema(s, &format!("{path}.allOf[{i}]"), causes);
        }
    }
}

fn check_rule(rule: &Value, at: &str, causes: &mut Vec<Cause>) {
    let text = |k: &str| rule.get(k).and_then(Value::as_str).unwrap_or("");
    if text("rule").trim().is_empty() {
        causes.push(Cause::required(
            &format!("{at}.rule"),
            "rule is not specified",
        ));
        return;
    }
    if let Err(e) = Program::compile(text("rule")) {
        causes.push(Cause::invalid(
            &format!("{at}.rule"),
            &go_rule(rule),
            &format!("compilation failed: {}", one_line(&e.to_string())),
        ));
    }
    let expr = text("messageExpression");
    if !expr.is_empty()
        && let Err(e) = Program::compile(expr)
    {
        causes.push(Cause::invalid(
            &format!("{at}.messageExpression"),
            &go_rule(rule),
            &format!(
                "messageExpression compilation failed: {}",
                one_line(&e.to_string())
            ),
        ));
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The `ValidationRule` as kube-apiserver v1.36.2 prints it in the field error: Go's JSON of
/// the internal type (field names as in Go, absent pointers `null`, `<`, `>` and `&`
/// escaped as Go's encoder does), e.g. `{"Rule":"self.min \u003c=","Message":"…",…}`.
/// The field list is the internal type's as far as this project knows it; the v1.36.2
/// note elides the fields after `Message`.
fn go_rule(rule: &Value) -> String {
    let text = |k: &str| json!(rule.get(k).and_then(Value::as_str).unwrap_or(""));
    let reason = rule
        .get("reason")
        .and_then(Value::as_str)
        .map_or(Value::Null, |r| json!(r));
    let optional = rule
        .get("optionalOldSelf")
        .and_then(Value::as_bool)
        .map_or(Value::Null, Value::Bool);
    let fields = [
        ("Rule", text("rule")),
        ("Message", text("message")),
        ("MessageExpression", text("messageExpression")),
        ("Reason", reason),
        ("FieldPath", text("fieldPath")),
        ("OptionalOldSelf", optional),
    ];
    let body: Vec<String> = fields
        .iter()
        .map(|(k, v)| format!("\"{k}\":{}", go_json_escape(&v.to_string())))
        .collect();
    format!("{{{}}}", body.join(","))
}

/// Go's `encoding/json` escapes `<`, `>`, `&`, U+2028 and U+2029 inside strings.
fn go_json_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(schema: Value, obj: Value, old: Option<Value>) -> Vec<String> {
        let mut causes = vec![];
        validate(&obj, old.as_ref(), &schema, &mut causes);
        causes.iter().map(Cause::full).collect()
    }

    #[test]
    fn a_number_schema_makes_integers_doubles() {
        let schema =
            json!({"type": "number", "x-kubernetes-validations": [{"rule": "self > 1.5"}]});
        assert_eq!(run(schema.clone(), json!(2), None), Vec::<String>::new());
        assert_eq!(
            run(schema, json!(1), None),
            ["<nil>: Invalid value: 1: failed rule: self > 1.5"]
        );
    }

    #[test]
    fn map_list_items_correlate_by_key_for_transition_rules() {
        let schema = json!({"type": "array", "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "x-kubernetes-validations": [
                {"rule": "self.v == oldSelf.v", "message": "v is immutable"}]}});
        let old = json!([{"name": "a", "v": 1}, {"name": "b", "v": 2}]);
        let new = json!([{"name": "b", "v": 2}, {"name": "a", "v": 5}, {"name": "c", "v": 9}]);
        assert_eq!(
            run(schema, new, Some(old)),
            ["[1]: Invalid value: v is immutable"]
        );
    }

    #[test]
    fn a_missing_field_is_an_evaluation_error_in_cel_gos_words() {
        let schema =
            json!({"type": "object", "x-kubernetes-validations": [{"rule": "self.a > 0"}]});
        assert_eq!(
            run(schema, json!({}), None),
            ["<nil>: Invalid value: no such key: a evaluating rule: self.a > 0"]
        );
    }

    #[test]
    fn kubernetes_libraries_are_there() {
        let schema = json!({"type": "string", "x-kubernetes-validations": [
            {"rule": "self.lowerAscii() == self"},
            {"rule": "quantity(self).isGreaterThan(quantity('1Gi'))"}]});
        assert_eq!(run(schema.clone(), json!("2gi"), None).len(), 1);
        assert_eq!(run(schema, json!("2Gi"), None).len(), 1);
    }
}
