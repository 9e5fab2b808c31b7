//! OpenAPI v3 structural schema handling for custom resources:
//! pruning, defaulting and validation with kube-apiserver's messages.

use crate::status::Cause;
use crate::util::go_value;
use serde_json::{Map, Value};

fn flag(schema: &Value, key: &str) -> bool {
    schema.get(key).and_then(Value::as_bool) == Some(true)
}

fn props(schema: &Value) -> Option<&Map<String, Value>> {
    schema.get("properties").and_then(Value::as_object)
}

/// Removes fields not declared in the schema. Returns the pruned paths (for strict field validation).
pub fn prune(value: &mut Value, schema: &Value, path: &str, root: bool, pruned: &mut Vec<String>) {
    if flag(schema, "x-kubernetes-int-or-string") {
        return;
    }
    match value {
        Value::Object(map) => {
            let preserve = flag(schema, "x-kubernetes-preserve-unknown-fields");
            let embedded = flag(schema, "x-kubernetes-embedded-resource");
            let p = props(schema);
            let additional = schema.get("additionalProperties");
            let keys: Vec<String> = map.keys().cloned().collect();
            for k in keys {
                let child_path = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                if (root || embedded) && (k == "apiVersion" || k == "kind" || k == "metadata") {
                    continue;
                }
                if let Some(s) = p.and_then(|p| p.get(&k)) {
                    if let Some(v) = map.get_mut(&k) {
                        prune(v, s, &child_path, false, pruned);
                    }
                } else if let Some(add) = additional {
                    if add.is_object()
                        && let Some(v) = map.get_mut(&k)
                    {
                        prune(v, add, &child_path, false, pruned);
                    }
                    // additionalProperties: true keeps everything
                } else if !preserve {
                    map.remove(&k);
                    pruned.push(child_path);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, it) in items.iter_mut().enumerate() {
                    prune(it, item_schema, &format!("{path}[{i}]"), false, pruned);
                }
            }
        }
        _ => {}
    }
}

/// Applies `default:` values and drops nulls of non-nullable fields (as the apiserver does before defaulting).
pub fn default(value: &mut Value, schema: &Value) {
    match value {
        Value::Object(map) => {
            if let Some(p) = props(schema) {
                for (k, s) in p {
                    let nullable = flag(s, "nullable");
                    if map.get(k).is_some_and(Value::is_null) && !nullable {
                        map.remove(k);
                    }
                    if !map.contains_key(k)
                        && let Some(d) = s.get("default")
                    {
                        map.insert(k.clone(), d.clone());
                    }
                    if let Some(v) = map.get_mut(k) {
                        default(v, s);
                    }
                }
            } else if let Some(add) = schema.get("additionalProperties").filter(|a| a.is_object()) {
                for v in map.values_mut() {
                    default(v, add);
                }
            }
        }
        Value::Array(items) => {
            if let Some(s) = schema.get("items") {
                for it in items {
                    default(it, s);
                }
            }
        }
        _ => {}
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) => {
            if n.is_i64() || n.is_u64() {
                "integer"
            } else {
                "number"
            }
        }
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_error(path: &str, want: &str, v: &Value) -> Cause {
    let got = type_name(v);
    Cause::new(
        "FieldValueTypeInvalid",
        path,
        format!("Invalid value: \"{got}\": {path} in body must be of type {want}: \"{got}\""),
    )
}

fn as_f64(v: &Value) -> Option<f64> {
    v.as_f64()
}

fn num_str(v: &Value) -> String {
    v.to_string()
}

/// Validates `value` against `schema`, pushing kube-apiserver style causes. Like
/// kube-apiserver, a value of the wrong type gets only its type error: the checks of its kind
/// (bounds, lengths, items, properties) run on a value of the declared type alone.
pub fn validate(value: &Value, schema: &Value, path: &str, errs: &mut Vec<Cause>) {
    if value.is_null() {
        check_null(value, schema, path, errs);
        return;
    }
    if flag(schema, "x-kubernetes-int-or-string") {
        check_int_or_string(value, path, errs);
        return;
    }
    if !check_type(value, schema, path, errs) {
        return;
    }
    check_enum(value, schema, path, errs);
    match value {
        Value::Number(_) => check_number(value, schema, path, errs),
        Value::String(s) => check_string(s, value, schema, path, errs),
        Value::Array(items) => check_array(items, schema, path, errs),
        Value::Object(map) => check_object(map, schema, path, errs),
        Value::Bool(_) | Value::Null => {}
    }
}

/// A `null` is valid only where the schema says `nullable`; elsewhere it is a type error
/// against the declared type (none when the schema declares no type).
fn check_null(value: &Value, schema: &Value, path: &str, errs: &mut Vec<Cause>) {
    if flag(schema, "nullable") {
        return;
    }
    if let Some(t) = schema.get("type").and_then(Value::as_str) {
        errs.push(type_error(path, t, value));
    }
}

/// `x-kubernetes-int-or-string`: a string or a whole number, nothing else is checked.
fn check_int_or_string(value: &Value, path: &str, errs: &mut Vec<Cause>) {
    let ok =
        matches!(value, Value::String(_)) || value.as_i64().is_some() || value.as_u64().is_some();
    if !ok {
        errs.push(type_error(path, "integer,string", value));
    }
}

/// Whether `value` is of the schema's `type` `t` (an unknown type name accepts anything; an
/// integer may be written as a float without a fraction, as JSON allows).
fn matches_type(t: &str, value: &Value) -> bool {
    match t {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "number" => value.is_number(),
        "integer" => {
            value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        _ => true,
    }
}

/// Whether an integer `value` does not fit its `format` (`int32`; any other format, or none,
/// means int64).
fn integer_out_of_range(format: &str, value: &Value) -> bool {
    match format {
        "int32" => value
            .as_i64()
            .is_none_or(|i| i < i32::MIN as i64 || i > i32::MAX as i64),
        _ => value.as_i64().is_none(),
    }
}

/// The schema's `type` (and an integer's `format`): pushes the error and returns false when
/// `value` is not of it, so that no other check runs on it.
fn check_type(value: &Value, schema: &Value, path: &str, errs: &mut Vec<Cause>) -> bool {
    let Some(t) = schema.get("type").and_then(Value::as_str) else {
        return true;
    };
    if !matches_type(t, value) {
        errs.push(type_error(path, t, value));
        return false;
    }
    if t == "integer" {
        let fmt = schema.get("format").and_then(Value::as_str).unwrap_or("");
        if integer_out_of_range(fmt, value) {
            let f = if fmt.is_empty() { "int64" } else { fmt };
            errs.push(Cause::new(
                "FieldValueInvalid",
                path,
                format!(
                    "Invalid value: \"{v}\": {path} in body must be of type {f}: \"{v}\"",
                    v = num_str(value)
                ),
            ));
            return false;
        }
    }
    true
}

/// `enum`: the value must be one of those listed, all of which the message names.
fn check_enum(value: &Value, schema: &Value, path: &str, errs: &mut Vec<Cause>) {
    if let Some(e) = schema.get("enum").and_then(Value::as_array)
        && !e.contains(value)
    {
        let supported: Vec<String> = e.iter().map(go_value).collect();
        errs.push(Cause::new(
            "FieldValueNotSupported",
            path,
            format!(
                "Unsupported value: {}: supported values: {}",
                go_value(value),
                supported.join(", ")
            ),
        ));
    }
}

/// A number's `minimum`, `maximum` (each possibly exclusive) and `multipleOf`.
fn check_number(value: &Value, schema: &Value, path: &str, errs: &mut Vec<Cause>) {
    let x = as_f64(value).unwrap_or(0.0);
    if let Some(min) = schema.get("minimum") {
        let m = as_f64(min).unwrap_or(f64::MIN);
        let excl = flag(schema, "exclusiveMinimum");
        if (excl && x <= m) || (!excl && x < m) {
            let rel = if excl {
                "greater than"
            } else {
                "greater than or equal to"
            };
            errs.push(Cause::invalid(
                path,
                &num_str(value),
                &format!("{path} in body should be {rel} {}", num_str(min)),
            ));
        }
    }
    if let Some(max) = schema.get("maximum") {
        let m = as_f64(max).unwrap_or(f64::MAX);
        let excl = flag(schema, "exclusiveMaximum");
        if (excl && x >= m) || (!excl && x > m) {
            let rel = if excl {
                "less than"
            } else {
                "less than or equal to"
            };
            errs.push(Cause::invalid(
                path,
                &num_str(value),
                &format!("{path} in body should be {rel} {}", num_str(max)),
            ));
        }
    }
    if let Some(mult) = schema.get("multipleOf").and_then(Value::as_f64)
        && mult != 0.0
        && (x / mult).fract() != 0.0
    {
        errs.push(Cause::invalid(
            path,
            &num_str(value),
            &format!("{path} in body should be a multiple of {mult}"),
        ));
    }
}

/// A string's `maxLength`, `minLength` (in characters, as kube-apiserver counts) and `pattern`.
fn check_string(s: &str, value: &Value, schema: &Value, path: &str, errs: &mut Vec<Cause>) {
    let len = s.chars().count() as u64;
    if let Some(max) = schema.get("maxLength").and_then(Value::as_u64)
        && len > max
    {
        errs.push(Cause::new(
            "FieldValueTooLong",
            path,
            format!("Too long: may not be more than {max} bytes"),
        ));
    }
    if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
        && len < min
    {
        errs.push(Cause::invalid(
            path,
            &go_value(value),
            &format!("{path} in body should be at least {min} chars long"),
        ));
    }
    if let Some(p) = schema.get("pattern").and_then(Value::as_str)
        && let Ok(re) = regex::Regex::new(p)
        && !re.is_match(s)
    {
        errs.push(Cause::invalid(
            path,
            &go_value(value),
            &format!("{path} in body should match '{p}'"),
        ));
    }
}

/// An array's `maxItems`, `minItems`, then each item against `items`.
fn check_array(items: &[Value], schema: &Value, path: &str, errs: &mut Vec<Cause>) {
    let n = items.len() as u64;
    if let Some(max) = schema.get("maxItems").and_then(Value::as_u64)
        && n > max
    {
        errs.push(Cause::new(
            "FieldValueTooMany",
            path,
            format!("Too many: {n}: must have at most {max} items"),
        ));
    }
    if let Some(min) = schema.get("minItems").and_then(Value::as_u64)
        && n < min
    {
        errs.push(Cause::invalid(
            path,
            &n.to_string(),
            &format!("{path} in body should have at least {min} items"),
        ));
    }
    if let Some(s) = schema.get("items") {
        for (i, it) in items.iter().enumerate() {
            validate(it, s, &format!("{path}[{i}]"), errs);
        }
    }
}

/// An object's `required` and `maxProperties`, then each field against its property's schema
/// or `additionalProperties`. At the root, `metadata`, `apiVersion` and `kind` are the API
/// server's to check, not the schema's.
fn check_object(map: &Map<String, Value>, schema: &Value, path: &str, errs: &mut Vec<Cause>) {
    if let Some(req) = schema.get("required").and_then(Value::as_array) {
        for r in req.iter().filter_map(Value::as_str) {
            if !map.contains_key(r) {
                errs.push(Cause::required(&child_path(path, r), ""));
            }
        }
    }
    if let Some(max) = schema.get("maxProperties").and_then(Value::as_u64)
        && map.len() as u64 > max
    {
        errs.push(Cause::new(
            "FieldValueTooMany",
            path,
            format!("Too many: {}: must have at most {max} items", map.len()),
        ));
    }
    let p = props(schema);
    let add = schema.get("additionalProperties").filter(|a| a.is_object());
    for (k, v) in map {
        if path.is_empty() && (k == "metadata" || k == "apiVersion" || k == "kind") {
            continue;
        }
        let child = child_path(path, k);
        if let Some(s) = p.and_then(|p| p.get(k)) {
            validate(v, s, &child, errs);
        } else if let Some(s) = add {
            validate(v, s, &child, errs);
        }
    }
}

/// The path of field `key` below `path` (the root's fields have no leading dot).
fn child_path(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {"spec": {"type": "object", "required": ["number"],
        "properties": {
            "number": {"type": "integer", "format": "int64", "minimum": 0, "maximum": 10},
            "numbers": {"type": "array", "maxItems": 2, "items": {"type": "integer"}},
            "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
        }}}})
    }

    fn run(mut v: Value) -> (Value, Vec<String>) {
        let s = schema();
        let mut pruned = vec![];
        prune(&mut v, &s, "", true, &mut pruned);
        default(&mut v, &s);
        let mut errs = vec![];
        validate(&v, &s, "", &mut errs);
        (v, errs.iter().map(Cause::full).collect())
    }

    #[test]
    fn messages() {
        let (_, e) = run(json!({"spec": {"number": -1}}));
        assert_eq!(
            e,
            vec![
                "spec.number: Invalid value: -1: spec.number in body should be greater than or equal to 0"
            ]
        );
        let (_, e) = run(json!({"spec": {"number": "x"}}));
        assert_eq!(
            e,
            vec![
                "spec.number: Invalid value: \"string\": spec.number in body must be of type integer: \"string\""
            ]
        );
        let (_, e) = run(json!({"spec": {"number": 1, "numbers": [1, 2, 3]}}));
        assert_eq!(
            e,
            vec!["spec.numbers: Too many: 3: must have at most 2 items"]
        );
        let (_, e) = run(json!({"spec": {}}));
        assert_eq!(e, vec!["spec.number: Required value"]);
        let (_, e) = run(json!({"spec": {"number": 1, "mode": "c"}}));
        assert_eq!(
            e,
            vec!["spec.mode: Unsupported value: \"c\": supported values: \"a\", \"b\""]
        );
    }

    #[test]
    fn an_integer_is_whole_and_fits_its_format() {
        assert!(matches_type("integer", &json!(3)));
        assert!(matches_type("integer", &json!(3.0)));
        assert!(!matches_type("integer", &json!(3.5)));
        assert!(!matches_type("string", &json!(3)));
        assert!(matches_type("unknown", &json!(3)));
        assert!(!integer_out_of_range("int32", &json!(i32::MAX)));
        assert!(integer_out_of_range(
            "int32",
            &json!(i64::from(i32::MAX) + 1)
        ));
        assert!(!integer_out_of_range("", &json!(i64::MAX)));
        assert!(integer_out_of_range("int64", &json!(u64::MAX)));
    }

    #[test]
    fn prune_and_default() {
        let (v, e) = run(json!({"spec": {"number": 1, "junk": 1, "free": {"x": 1}}, "other": 2}));
        assert!(e.is_empty());
        assert_eq!(
            v,
            json!({"spec": {"number": 1, "mode": "a", "free": {"x": 1}}})
        );
    }
}
