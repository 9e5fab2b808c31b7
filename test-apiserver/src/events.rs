//! core/v1 Event <-> events.k8s.io/v1 Event conversion (both are views of one store,
//! which keeps the core/v1 shape, as kube-apiserver does).

use serde_json::{Map, Value};

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
    // Empty legacy fields are omitted in the events.k8s.io view.
    if let Some(m) = v.as_object_mut() {
        for k in [
            "deprecatedSource",
            "deprecatedFirstTimestamp",
            "deprecatedLastTimestamp",
        ] {
            if m.get(k)
                .is_some_and(|x| x.is_null() || x.as_object().is_some_and(Map::is_empty))
            {
                m.remove(k);
            }
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
    fn roundtrip() {
        let v1 = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"},
            "regarding": {"kind": "Fermat", "name": "f"}, "note": "hello", "reason": "Created",
            "reportingController": "math", "type": "Normal"});
        let core = v1_to_core(&v1);
        assert_eq!(core["involvedObject"]["name"], "f");
        assert_eq!(core["message"], "hello");
        assert_eq!(core["reportingComponent"], "math");
        assert_eq!(core_to_v1(&core), v1);
    }
}
