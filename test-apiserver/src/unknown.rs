//! Unknown fields of built-in kinds, found as kube-apiserver's strict decoder finds them.
//!
//! kube-apiserver decodes a built-in object into its Go type; with `fieldValidation=Strict`
//! a field the type lacks is a 400 (`strict decoding error: unknown field "spec.foo"`), with
//! `Warn` (the default) a `Warning` header, and either way the field is not stored. Here the
//! object is decoded into k8s-openapi's type of the kind and encoded again: a field of the
//! request missing from that round trip is one the type does not know. [`prune`] compares
//! the two, names each such field by its path (list items by index:
//! `spec.template.spec.containers[0].imagee`, as the strict decoder names them) and drops it.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The object as k8s-openapi's type `K` keeps it (decoded, then encoded), or `None` when it
/// does not decode (a wrong type of value: not an unknown field, and answered elsewhere).
pub fn round_trip<K: DeserializeOwned + Serialize>(obj: &Value) -> Option<Value> {
    let typed: K = serde_json::from_value(obj.clone()).ok()?;
    serde_json::to_value(typed).ok()
}

/// Drops from `obj` every field that `known` (its round trip through the kind's type) lacks,
/// and returns the paths of those that held a value. A field set to `null` is dropped
/// without a word: a known optional field set to `null` round-trips to nothing too, and
/// either way nothing is stored.
pub fn prune(obj: &mut Value, known: &Value) -> Vec<String> {
    let mut found = vec![];
    walk(obj, known, "", &mut found);
    found
}

fn walk(obj: &mut Value, known: &Value, path: &str, found: &mut Vec<String>) {
    match (obj, known) {
        (Value::Object(fields), Value::Object(kept)) => {
            fields.retain(|name, value| {
                let keep = kept.contains_key(name);
                if !keep && !value.is_null() {
                    found.push(join(path, name));
                }
                keep
            });
            for (name, value) in fields.iter_mut() {
                if let Some(k) = kept.get(name) {
                    walk(value, k, &join(path, name), found);
                }
            }
        }
        (Value::Array(items), Value::Array(kept)) => {
            for (i, (item, k)) in items.iter_mut().zip(kept).enumerate() {
                walk(item, k, &format!("{path}[{i}]"), found);
            }
        }
        _ => {}
    }
}

fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::ConfigMap;
    use serde_json::json;

    #[test]
    fn fields_the_type_lacks_are_named_and_dropped() {
        let mut cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a",
            "labels": {"x": "1"}, "colour": "red"}, "color": "blue", "data": {"k": "v"},
            "immutable": null, "other": null});
        let known = round_trip::<ConfigMap>(&cm).expect("a ConfigMap");
        assert_eq!(prune(&mut cm, &known), ["color", "metadata.colour"]);
        assert_eq!(
            cm,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a",
                "labels": {"x": "1"}}, "data": {"k": "v"}})
        );
    }

    #[test]
    fn list_items_are_named_by_index() {
        let mut d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"selector": {}, "template": {"spec": {"containers": [
                {"name": "a"}, {"name": "b", "imagee": "x"}]}}}});
        let known = round_trip::<Deployment>(&d).expect("a Deployment");
        assert_eq!(
            prune(&mut d, &known),
            ["spec.template.spec.containers[1].imagee"]
        );
    }

    #[test]
    fn an_object_of_the_wrong_shape_is_left_to_validation() {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": "not a map"});
        assert_eq!(round_trip::<ConfigMap>(&cm), None);
    }
}
