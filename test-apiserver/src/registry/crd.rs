//! Resource types from a CustomResourceDefinition: one per served version, as the
//! apiextensions-apiserver builds its handlers.

use super::{ALL_VERBS, PrinterColumn, ResourceType, ScalePaths};
use serde_json::Value;

/// The served versions of a CRD as resource types, the preferred one first (kube-apiserver's
/// version priority: GA before beta before alpha, higher numbers first), each with its own
/// schema, subresources and columns, all stored in the storage version.
pub fn from_crd(crd: &Value) -> Vec<ResourceType> {
    let versions = crd
        .get("spec")
        .and_then(|s| s.get("versions"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let storage = versions
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .or_else(|| versions.first())
        .and_then(|v| v.get("name"))
        .and_then(Value::as_str)
        .map(String::from);
    let mut out: Vec<ResourceType> = versions
        .iter()
        .filter(|v| v.get("served").and_then(Value::as_bool) != Some(false))
        .filter_map(|v| from_crd_version(crd, v))
        .collect();
    for rt in &mut out {
        rt.storage_version = storage.clone();
    }
    out.sort_by_key(|rt| version_priority(&rt.version));
    out
}

/// kube-apiserver's order of versions (`version.CompareKubeAwareVersionStrings`): `vN`
/// before `vNbetaM` before `vNalphaM`, higher numbers first, other names last by name.
fn version_priority(v: &str) -> (u8, std::cmp::Reverse<u64>, std::cmp::Reverse<u64>, String) {
    use std::cmp::Reverse;
    let parsed = v.strip_prefix('v').and_then(|rest| {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let major: u64 = rest[..digits].parse().ok()?;
        let tail = &rest[digits..];
        let (class, minor) = if tail.is_empty() {
            (0, "0")
        } else if let Some(m) = tail.strip_prefix("beta") {
            (1, m)
        } else {
            (2, tail.strip_prefix("alpha")?)
        };
        Some((class, major, minor.parse::<u64>().ok()?))
    });
    match parsed {
        Some((class, major, minor)) => (class, Reverse(major), Reverse(minor), String::new()),
        None => (3, Reverse(0), Reverse(0), v.to_string()),
    }
}

/// One served version of a CRD as a resource type.
fn from_crd_version(crd: &Value, version: &Value) -> Option<ResourceType> {
    let spec = crd.get("spec")?;
    let group = spec.get("group")?.as_str()?.to_string();
    let names = spec.get("names")?;
    let plural = names.get("plural")?.as_str()?.to_string();
    let kind = names.get("kind")?.as_str()?.to_string();
    let singular = names
        .get("singular")
        .and_then(Value::as_str)
        .map(String::from)
        .unwrap_or_else(|| kind.to_lowercase());
    let short_names = strings(names.get("shortNames"));
    let categories = strings(names.get("categories"));
    let namespaced = spec.get("scope").and_then(Value::as_str) != Some("Cluster");
    let vname = version.get("name")?.as_str()?.to_string();
    let status_subresource = version
        .get("subresources")
        .and_then(|s| s.get("status"))
        .is_some();
    let scale = scale_paths(version);
    let schema = version
        .get("schema")
        .and_then(|s| s.get("openAPIV3Schema"))
        .cloned();
    Some(ResourceType {
        storage: format!("{group}/{plural}"),
        group,
        version: vname,
        plural,
        singular,
        kind,
        namespaced,
        short_names,
        categories,
        status_subresource,
        generation: true,
        schema,
        columns: printer_columns(version),
        crd: crd
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .map(String::from),
        storage_version: None,
        subresources: scale.iter().map(|_| "scale".to_string()).collect(),
        verbs: ALL_VERBS.iter().map(|s| s.to_string()).collect(),
        scale,
        round_trip: None,
    })
}

/// The strings of a list of strings (none when absent; what is not a string is skipped).
fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// The version's `scale` subresource: where its replicas and selector are.
fn scale_paths(version: &Value) -> Option<ScalePaths> {
    version
        .get("subresources")
        .and_then(|s| s.get("scale"))
        .map(|s| {
            let path = |k: &str| s.get(k).and_then(Value::as_str).map(String::from);
            ScalePaths {
                spec_replicas: path("specReplicasPath").unwrap_or_default(),
                status_replicas: path("statusReplicasPath").unwrap_or_default(),
                label_selector: path("labelSelectorPath"),
            }
        })
}

/// The version's `additionalPrinterColumns`, or the Age column apiextensions-apiserver
/// serves when none is declared.
fn printer_columns(version: &Value) -> Vec<PrinterColumn> {
    let text = |c: &Value, k: &str, default: &str| -> String {
        c.get(k).and_then(Value::as_str).unwrap_or(default).into()
    };
    let mut columns: Vec<PrinterColumn> = version
        .get("additionalPrinterColumns")
        .and_then(Value::as_array)
        .map(|cols| {
            cols.iter()
                .map(|c| PrinterColumn {
                    name: text(c, "name", ""),
                    type_: text(c, "type", "string"),
                    format: text(c, "format", ""),
                    description: text(c, "description", ""),
                    priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
                    json_path: text(c, "jsonPath", ""),
                })
                .collect()
        })
        .unwrap_or_default();
    if columns.is_empty() {
        columns.push(PrinterColumn {
            name: "Age".into(),
            type_: "date".into(),
            format: String::new(),
            description: "CreationTimestamp is a timestamp representing the server time when this object was created.".into(),
            priority: 0,
            json_path: ".metadata.creationTimestamp".into(),
        });
    }
    columns
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_version_without_printer_columns_is_shown_with_its_age() {
        let columns = printer_columns(&json!({"name": "v1"}));
        let named: Vec<(&str, &str)> = columns
            .iter()
            .map(|c| (c.name.as_str(), c.json_path.as_str()))
            .collect();
        assert_eq!(named, [("Age", ".metadata.creationTimestamp")]);
        let declared =
            json!({"additionalPrinterColumns": [{"name": "Value", "jsonPath": ".spec.value"}]});
        let columns = printer_columns(&declared);
        assert_eq!(columns.len(), 1);
        assert_eq!(
            (columns[0].name.as_str(), columns[0].type_.as_str()),
            ("Value", "string")
        );
    }
}
