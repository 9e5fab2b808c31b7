//! Per-kind rules applied on every write (kube-apiserver's strategies and
//! apiextensions-apiserver's structural schemas): apiVersion/kind checks, name
//! validation, pruning, defaulting and validation of custom resources, CRD checks, and
//! what the real server fills in for built-in kinds (namespaces, secrets, CRD status).

use super::{State, WriteOpts};
use crate::events::{self, v1_to_core};
use crate::registry::ResourceType;
use crate::schema;
use crate::status::{ApiError, ApiResult, Cause};
use crate::util::{self, meta_mut, name_of, now};
use serde_json::{Map, Value, json};

impl State {
    /// Pruning, defaulting and schema validation of a custom resource.
    fn check_schema(
        &self,
        rt: &ResourceType,
        obj: &mut Value,
        opts: &WriteOpts,
        old: Option<&Value>,
        causes: &mut Vec<Cause>,
    ) -> ApiResult<()> {
        let Some(s) = &rt.schema else { return Ok(()) };
        let mut pruned = vec![];
        schema::prune(obj, s, "", true, &mut pruned);
        field_validation(rt, opts, &pruned)?;
        schema::default(obj, s);
        let mut found = vec![];
        schema::validate(obj, s, "", &mut found);
        if let Some(old) = old {
            ratchet(&mut found, obj, old);
        }
        causes.extend(found);
        cel_rules(obj, old, s, causes);
        Ok(())
    }

    /// Validation of a create (`old` None) or an update of `obj` (view-shaped).
    pub(super) fn validate_common(
        &self,
        rt: &ResourceType,
        obj: &mut Value,
        opts: &WriteOpts,
        old: Option<&Value>,
    ) -> ApiResult<()> {
        let mut causes = vec![];
        let name = name_of(obj).to_string();
        if let Some(known) = rt.round_trip.and_then(|f| f(obj)) {
            let unknown = crate::unknown::prune(obj, &known);
            field_validation(rt, opts, &unknown)?;
        }
        if rt.is_core_events() || rt.is_events_v1() {
            // The Event strategy validates the internal (core) Event, and its refusals
            // name the internal kind: `Event "x" is invalid`, also for events.k8s.io.
            let core = |v: &Value| {
                if rt.is_events_v1() {
                    v1_to_core(v)
                } else {
                    v.clone()
                }
            };
            let causes = match old {
                None => events::validate_create(&core(obj), rt.is_events_v1()),
                Some(old) => events::validate_update(&core(obj), &core(old), rt.is_events_v1()),
            };
            if !causes.is_empty() {
                return Err(ApiError::invalid("Event", "", &name, causes));
            }
            return Ok(());
        }
        if old.is_none() {
            let errs = if rt.plural == "namespaces" {
                util::dns_label_errors(&name)
            } else {
                util::dns_subdomain_errors(&name)
            };
            for e in errs {
                causes.push(Cause::invalid("metadata.name", &format!("{name:?}"), &e));
            }
        }
        if rt.group == "certificates.k8s.io" && rt.plural == "certificatesigningrequests" {
            csr_request(obj, &mut causes);
        }
        if rt.group.is_empty() && rt.plural == "resourcequotas" {
            super::quota::normalize_quota(obj, &mut causes)?;
        }
        self.check_schema(rt, obj, opts, old, &mut causes)?;
        if rt.group == "apiextensions.k8s.io" {
            crd_checks(obj, &mut causes);
            crate::cel::crd_rule_errors(obj, &mut causes);
        }
        if !causes.is_empty() {
            return Err(ApiError::invalid(&rt.kind, &rt.group, &name, causes));
        }
        Ok(())
    }
}

/// What `fieldValidation` makes of the unknown fields of a write (`paths`, already dropped
/// from the object), as k8s.io/apiserver's handlers answer: `Strict` refuses the write with
/// a 400 naming them all, `Ignore` says nothing, `Warn` (also when the client named no
/// directive: kube-apiserver's default) adds one `Warning` per field.
fn field_validation(rt: &ResourceType, opts: &WriteOpts, paths: &[String]) -> ApiResult<()> {
    let unknown = paths.iter().map(|p| format!("unknown field \"{p}\""));
    match opts.field_validation.as_str() {
        _ if paths.is_empty() => {}
        "Strict" => {
            return Err(ApiError::bad_request(format!(
                "{} in version \"{}\" cannot be handled as a {}: strict decoding error: {}",
                rt.kind,
                rt.version,
                rt.kind,
                unknown.collect::<Vec<_>>().join(", ")
            )));
        }
        "Ignore" => {}
        _ => opts.warnings.borrow_mut().extend(unknown),
    }
    Ok(())
}

/// The CRD's CEL rules, unless the schema already found a wrong type or an unsupported
/// value: then kube-apiserver runs no rule and says so in one more cause.
fn cel_rules(obj: &Value, old: Option<&Value>, schema: &Value, causes: &mut Vec<Cause>) {
    let blocking = causes
        .iter()
        .any(|c| c.reason == "FieldValueTypeInvalid" || c.reason == "FieldValueNotSupported");
    if !blocking {
        crate::cel::validate(obj, old, schema, causes);
    } else if crate::cel::has_rules(schema) {
        causes.push(crate::cel::not_checked());
    }
}

/// Checks the body's apiVersion/kind and fills them in.
pub(super) fn normalize_body(rt: &ResourceType, body: Value) -> ApiResult<Value> {
    let Value::Object(mut m) = body else {
        return Err(ApiError::bad_request(
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml",
        ));
    };
    if let Some(av) = m.get("apiVersion").and_then(Value::as_str)
        && !av.is_empty()
        && av != rt.api_version()
    {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({av}) does not match the expected API version ({})",
            rt.api_version()
        )));
    }
    if let Some(k) = m.get("kind").and_then(Value::as_str)
        && !k.is_empty()
        && k != rt.kind
    {
        return Err(ApiError::bad_request(format!(
            "the kind in the data ({k}) does not match the expected kind ({})",
            rt.kind
        )));
    }
    m.insert("apiVersion".into(), json!(rt.api_version()));
    m.insert("kind".into(), json!(rt.kind));
    if !m.get("metadata").is_some_and(Value::is_object) {
        m.insert("metadata".into(), Value::Object(Map::new()));
    }
    Ok(Value::Object(m))
}

/// A CSR's `spec.request` must hold a PEM `CERTIFICATE REQUEST` block (real v1.24,
/// 2026-11-25: `request: ""` → 422 `spec.request: Invalid value: []byte{}: PEM block type
/// must be CERTIFICATE REQUEST`). The DER inside is not parsed here.
fn csr_request(obj: &Value, causes: &mut Vec<Cause>) {
    use base64::Engine as _;
    let encoded = obj
        .pointer("/spec/request")
        .and_then(Value::as_str)
        .unwrap_or("");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .unwrap_or_default();
    if first_pem_type(&bytes) == Some("CERTIFICATE REQUEST") {
        return;
    }
    let shown: Vec<String> = bytes.iter().map(|b| format!("{b:#04x}")).collect();
    causes.push(Cause::invalid(
        "spec.request",
        &format!("[]byte{{{}}}", shown.join(", ")),
        "PEM block type must be CERTIFICATE REQUEST",
    ));
}

/// The type of the first PEM block (`-----BEGIN <type>-----`), as Go's `pem.Decode` finds it.
fn first_pem_type(bytes: &[u8]) -> Option<&str> {
    let text = std::str::from_utf8(bytes).ok()?;
    let start = text.find("-----BEGIN ")? + "-----BEGIN ".len();
    let rest = &text[start..];
    let end = rest.find("-----")?;
    let kind = &rest[..end];
    rest.contains(&format!("-----END {kind}-----"))
        .then_some(kind)
}

fn crd_checks(obj: &Value, causes: &mut Vec<Cause>) {
    let name = name_of(obj);
    let spec = obj.get("spec");
    let group = spec
        .and_then(|s| s.get("group"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let plural = spec
        .and_then(|s| s.get("names"))
        .and_then(|n| n.get("plural"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if group.is_empty() {
        causes.push(Cause::required("spec.group", ""));
    }
    if plural.is_empty() {
        causes.push(Cause::required("spec.names.plural", ""));
    }
    if spec
        .and_then(|s| s.get("names"))
        .and_then(|n| n.get("kind"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
    {
        causes.push(Cause::required("spec.names.kind", ""));
    }
    if !group.is_empty() && !plural.is_empty() && name != format!("{plural}.{group}") {
        causes.push(Cause::invalid(
            "metadata.name",
            &format!("{name:?}"),
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    let versions = spec
        .and_then(|s| s.get("versions"))
        .and_then(Value::as_array);
    if versions.is_none_or(|v| v.is_empty()) {
        causes.push(Cause::invalid(
            "spec.versions",
            "null",
            "must have exactly one version marked as storage version",
        ));
    }
    if !matches!(
        spec.and_then(|s| s.get("scope")).and_then(Value::as_str),
        Some("Namespaced") | Some("Cluster")
    ) {
        causes.push(Cause::new(
            "FieldValueNotSupported",
            "spec.scope",
            "Unsupported value: \"\": supported values: \"Cluster\", \"Namespaced\"",
        ));
    }
}

/// What a strategy's `PrepareForCreate` sets, which kube-apiserver runs after its field
/// manager has recorded the creator's fields, so that nobody owns them: a Namespace's
/// `kubernetes` finalizer and its phase (v1.36.2's creator of a Namespace owns only the
/// `kubernetes.io/metadata.name` label).
pub(super) fn prepare_for_create(rt: &ResourceType, obj: &mut Value) {
    if !rt.is_namespaces() {
        return;
    }
    let spec = obj
        .as_object_mut()
        .map(|m| m.entry("spec").or_insert_with(|| json!({})));
    if let Some(Value::Object(spec)) = spec {
        let finalizers = spec.entry("finalizers").or_insert_with(|| json!([]));
        if let Some(list) = finalizers.as_array_mut()
            && !list.iter().any(|f| f == "kubernetes")
        {
            list.push(json!("kubernetes"));
        }
    }
    obj["status"] = json!({"phase": "Active"});
}

/// What the real server's strategies and controllers fill in for built-in kinds.
pub(super) fn builtin_defaults(rt: &ResourceType, obj: &mut Value, old: Option<&Value>) {
    match (rt.group.as_str(), rt.plural.as_str()) {
        ("", "namespaces") => namespace_defaults(obj, old),
        ("", "secrets") => secret_defaults(obj),
        ("", "pods") if old.is_none() => pod_defaults(obj),
        ("", "services") if old.is_none() => {
            let spec = obj
                .as_object_mut()
                .map(|m| m.entry("spec").or_insert_with(|| json!({})));
            if let Some(Value::Object(spec)) = spec {
                spec.entry("type").or_insert_with(|| json!("ClusterIP"));
                spec.entry("sessionAffinity")
                    .or_insert_with(|| json!("None"));
            }
            obj["status"] = json!({"loadBalancer": {}});
        }
        ("apiextensions.k8s.io", _) => crd_defaults(obj, old),
        _ => {}
    }
}

/// A Namespace is labelled with its name; an update keeps its status (the namespace
/// controller's) and, without a spec, gets the `kubernetes` finalizer back.
fn namespace_defaults(obj: &mut Value, old: Option<&Value>) {
    let name = name_of(obj).to_string();
    let labels = meta_mut(obj).entry("labels").or_insert_with(|| json!({}));
    if let Some(l) = labels.as_object_mut() {
        l.insert("kubernetes.io/metadata.name".into(), json!(name));
    }
    // On a create, the strategy sets spec and status after the managedFields are
    // recorded: see `prepare_for_create`.
    if let Some(old) = old {
        if obj.get("spec").is_none() {
            obj["spec"] = json!({"finalizers": ["kubernetes"]});
        }
        obj["status"] = old.get("status").cloned().unwrap_or(json!({}));
    }
}

/// The Secret strategy merges write-only stringData into data (base64); the type is Opaque
/// unless given.
fn secret_defaults(obj: &mut Value) {
    if let Some(Value::Object(sd)) = obj.as_object_mut().and_then(|m| m.remove("stringData")) {
        use base64::Engine;
        let data = obj
            .as_object_mut()
            .map(|m| m.entry("data").or_insert_with(|| json!({})));
        if let Some(Value::Object(d)) = data {
            for (k, v) in sd {
                let s = v.as_str().unwrap_or("").as_bytes().to_vec();
                d.insert(
                    k,
                    json!(base64::engine::general_purpose::STANDARD.encode(s)),
                );
            }
        }
    }
    if obj.get("type").is_none() {
        obj["type"] = json!("Opaque");
    }
}

/// A CustomResourceDefinition's defaulted names and conversion, and the status the
/// apiextensions controllers write at once here: its names accepted, Established (since
/// its creation), its storage versions stored.
fn crd_defaults(obj: &mut Value, old: Option<&Value>) {
    let names = obj
        .get("spec")
        .and_then(|s| s.get("names"))
        .cloned()
        .unwrap_or(json!({}));
    let mut accepted = names.clone();
    if accepted.get("singular").is_none() {
        let kind = names.get("kind").and_then(Value::as_str).unwrap_or("");
        accepted["singular"] = json!(kind.to_lowercase());
    }
    if accepted.get("listKind").is_none() {
        let kind = names.get("kind").and_then(Value::as_str).unwrap_or("");
        accepted["listKind"] = json!(format!("{kind}List"));
    }
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        if let Some(n) = spec.get_mut("names").and_then(Value::as_object_mut) {
            n.insert("singular".into(), accepted["singular"].clone());
            n.insert("listKind".into(), accepted["listKind"].clone());
        }
        spec.entry("conversion")
            .or_insert_with(|| json!({"strategy": "None"}));
    }
    let stored: Vec<Value> = obj
        .get("spec")
        .and_then(|s| s.get("versions"))
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter()
                .filter(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
                .filter_map(|v| v.get("name").cloned())
                .collect()
        })
        .unwrap_or_default();
    let ts = old
        .and_then(|o| o.get("metadata"))
        .and_then(|m| m.get("creationTimestamp"))
        .cloned()
        .unwrap_or(json!(now()));
    obj["status"] = json!({
        "acceptedNames": accepted,
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "lastTransitionTime": ts,
             "reason": "NoConflicts", "message": "no conflicts found"},
            {"type": "Established", "status": "True", "lastTransitionTime": ts,
             "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"}
        ],
        "storedVersions": stored,
    });
}

/// The Pod defaults a client reads back from a real server, and the status of a pod no
/// scheduler has placed (there are no nodes): Pending.
fn pod_defaults(obj: &mut Value) {
    let spec = obj
        .as_object_mut()
        .map(|m| m.entry("spec").or_insert_with(|| json!({})));
    if let Some(Value::Object(spec)) = spec {
        for (k, v) in [
            ("restartPolicy", json!("Always")),
            ("dnsPolicy", json!("ClusterFirst")),
            ("schedulerName", json!("default-scheduler")),
            ("terminationGracePeriodSeconds", json!(30)),
            ("serviceAccountName", json!("default")),
            ("securityContext", json!({})),
        ] {
            spec.entry(k).or_insert(v);
        }
    }
    obj["status"] = json!({"phase": "Pending", "qosClass": "BestEffort"});
}

/// CRD validation ratcheting (kube-apiserver 1.30+, GA 1.33): on an update, a schema error
/// at a value equal to the stored one is dropped, so that an object made invalid by a
/// tightened CRD can still have its other fields changed. Values are correlated by field
/// name up to the first list index: an error inside a list is dropped only when the whole
/// list is unchanged (kube-apiserver also correlates `map` lists' items by key, and so
/// accepts a little more). `Required` errors are never dropped.
fn ratchet(causes: &mut Vec<Cause>, new: &Value, old: &Value) {
    causes.retain(|c| c.reason == "FieldValueRequired" || changed_at(&c.field, new, old));
}

/// Whether the value at a cause's field path (`spec.size`, `spec.items[2].name`: up to the
/// first index) differs between the two objects.
fn changed_at(field: &str, new: &Value, old: &Value) -> bool {
    let path = field.split('[').next().unwrap_or("");
    let at = |v: &Value| {
        path.split('.')
            .filter(|p| !p.is_empty())
            .try_fold(v, |v, p| v.get(p))
            .cloned()
    };
    at(new) != at(old)
}
