//! A minimal decoder for the Kubernetes protobuf envelope, enough for the typed clients
//! kubectl uses for `kubectl create namespace` / `kubectl create configmap`: it reads
//! `runtime.Unknown`, then `metadata` (name, generateName, namespace, labels,
//! annotations, finalizers) and, for ConfigMaps, `data`; for (Cluster)RoleBindings
//! (`kubectl create clusterrolebinding`), `subjects` and `roleRef`; for ResourceQuotas
//! (`kubectl create quota`), `spec.hard` and `spec.scopes`; for the authorization reviews
//! (`kubectl auth can-i` sends a SelfSubjectAccessReview, `--list` a SelfSubjectRulesReview),
//! their `spec`. Other fields are ignored.

use serde_json::{Map, Value, json};

fn varint(b: &[u8], i: &mut usize) -> Option<u64> {
    let mut out = 0u64;
    let mut shift = 0;
    loop {
        let byte = *b.get(*i)?;
        *i += 1;
        out |= ((byte & 0x7f) as u64) << shift;
        if byte & 0x80 == 0 {
            return Some(out);
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}

/// (field number, payload) for length-delimited fields; other wire types are skipped.
fn fields(b: &[u8]) -> Option<Vec<(u64, &[u8])>> {
    let mut i = 0;
    let mut out = vec![];
    while i < b.len() {
        let key = varint(b, &mut i)?;
        let (field, wt) = (key >> 3, key & 7);
        match wt {
            0 => {
                varint(b, &mut i)?;
            }
            1 => i += 8,
            5 => i += 4,
            2 => {
                let len = varint(b, &mut i)? as usize;
                let end = i.checked_add(len)?;
                out.push((field, b.get(i..end)?));
                i = end;
            }
            _ => return None,
        }
    }
    Some(out)
}

fn string(b: &[u8]) -> Value {
    Value::String(String::from_utf8_lossy(b).into_owned())
}

fn map_entry(b: &[u8]) -> Option<(String, Value)> {
    let f = fields(b)?;
    let k = f
        .iter()
        .find(|(n, _)| *n == 1)
        .map(|(_, v)| String::from_utf8_lossy(v).into_owned())?;
    let v = f
        .iter()
        .find(|(n, _)| *n == 2)
        .map(|(_, v)| string(v))
        .unwrap_or(json!(""));
    Some((k, v))
}

/// A message of string fields, numbered 1.. in the order of `names`; empty ones left out.
fn strings(b: &[u8], names: &[&str]) -> Option<Value> {
    let mut m = Map::new();
    for (n, v) in fields(b)? {
        let name = usize::try_from(n)
            .ok()
            .and_then(|n| names.get(n.checked_sub(1)?));
        if let Some(name) = name
            && !v.is_empty()
        {
            m.insert((*name).to_string(), string(v));
        }
    }
    Some(Value::Object(m))
}

fn object_meta(b: &[u8]) -> Option<Value> {
    let mut m = Map::new();
    let mut labels = Map::new();
    let mut annotations = Map::new();
    let mut finalizers = vec![];
    for (n, v) in fields(b)? {
        if v.is_empty() {
            continue;
        }
        match n {
            1 => {
                m.insert("name".into(), string(v));
            }
            2 => {
                m.insert("generateName".into(), string(v));
            }
            3 => {
                m.insert("namespace".into(), string(v));
            }
            11 => {
                let (k, val) = map_entry(v)?;
                labels.insert(k, val);
            }
            12 => {
                let (k, val) = map_entry(v)?;
                annotations.insert(k, val);
            }
            14 => finalizers.push(string(v)),
            _ => {}
        }
    }
    if !labels.is_empty() {
        m.insert("labels".into(), Value::Object(labels));
    }
    if !annotations.is_empty() {
        m.insert("annotations".into(), Value::Object(annotations));
    }
    if !finalizers.is_empty() {
        m.insert("finalizers".into(), Value::Array(finalizers));
    }
    Some(Value::Object(m))
}

/// `ResourceQuotaSpec`: `hard` (1: map of name → `resource.Quantity`, whose field 1 is
/// its string form) and `scopes` (2).
fn quota_spec(b: &[u8]) -> Option<Value> {
    let mut hard = Map::new();
    let mut scopes = vec![];
    for (n, v) in fields(b)? {
        match n {
            1 => {
                let entry = fields(v)?;
                let key = entry
                    .iter()
                    .find(|(n, _)| *n == 1)
                    .map(|(_, k)| String::from_utf8_lossy(k).into_owned())?;
                let quantity = entry
                    .iter()
                    .find(|(n, _)| *n == 2)
                    .and_then(|(_, q)| fields(q))
                    .and_then(|q| q.into_iter().find(|(n, _)| *n == 1))
                    .map(|(_, s)| string(s))
                    .unwrap_or(json!("0"));
                hard.insert(key, quantity);
            }
            2 => scopes.push(string(v)),
            _ => {}
        }
    }
    let mut spec = Map::new();
    if !hard.is_empty() {
        spec.insert("hard".into(), Value::Object(hard));
    }
    if !scopes.is_empty() {
        spec.insert("scopes".into(), Value::Array(scopes));
    }
    Some(Value::Object(spec))
}

/// `ResourceAttributes` (authorization/v1 generated.proto, fields 1 to 7; the selectors, 8
/// and 9, are messages and not read).
const RESOURCE_ATTRIBUTES: &[&str] = &[
    "namespace",
    "verb",
    "group",
    "version",
    "resource",
    "subresource",
    "name",
];

/// The `spec` of an authorization review (authorization/v1 generated.proto): a
/// (Self|Local)SubjectAccessReview's `resourceAttributes` (1) and `nonResourceAttributes` (2:
/// `path`, `verb`); a (Local)SubjectAccessReview's `user` (3), `groups` (4) and `uid` (6)
/// (a SelfSubjectAccessReview's 3 is `authorizationOptions`); a SelfSubjectRulesReview's
/// `namespace` (1).
fn review_spec(b: &[u8], kind: &str) -> Option<Value> {
    if kind == "SelfSubjectRulesReview" {
        return strings(b, &["namespace"]);
    }
    let names_a_subject = kind != "SelfSubjectAccessReview";
    let mut spec = Map::new();
    let mut groups = vec![];
    for (n, v) in fields(b)? {
        match n {
            1 => {
                spec.insert(
                    "resourceAttributes".into(),
                    strings(v, RESOURCE_ATTRIBUTES)?,
                );
            }
            2 => {
                spec.insert(
                    "nonResourceAttributes".into(),
                    strings(v, &["path", "verb"])?,
                );
            }
            3 if names_a_subject && !v.is_empty() => {
                spec.insert("user".into(), string(v));
            }
            4 if names_a_subject => groups.push(string(v)),
            6 if names_a_subject && !v.is_empty() => {
                spec.insert("uid".into(), string(v));
            }
            _ => {}
        }
    }
    if !groups.is_empty() {
        spec.insert("groups".into(), Value::Array(groups));
    }
    Some(Value::Object(spec))
}

/// `runtime.Unknown`: `typeMeta` (1: `apiVersion`, `kind`) and `raw` (2, the object's own
/// message); `contentEncoding` (3) and `contentType` (4) are empty from kubectl.
fn unknown(b: &[u8]) -> Option<(String, String, &[u8])> {
    let mut api_version = String::new();
    let mut kind = String::new();
    let mut raw: &[u8] = &[];
    for (n, v) in fields(b)? {
        match n {
            1 => {
                for (tn, tv) in fields(v)? {
                    match tn {
                        1 => api_version = String::from_utf8_lossy(tv).into_owned(),
                        2 => kind = String::from_utf8_lossy(tv).into_owned(),
                        _ => {}
                    }
                }
            }
            2 => raw = v,
            _ => {}
        }
    }
    Some((api_version, kind, raw))
}

/// Decodes `k8s\0` + runtime.Unknown into JSON, or None if it is not understood.
pub fn decode(body: &[u8]) -> Option<Value> {
    let (api_version, kind, raw) = unknown(body.strip_prefix(b"k8s\0")?)?;
    let mut obj = json!({"apiVersion": api_version, "kind": kind});
    let mut data = Map::new();
    for (n, v) in fields(raw)? {
        match (n, kind.as_str()) {
            (1, _) => obj["metadata"] = object_meta(v)?,
            (2, "ConfigMap") => {
                let (k, val) = map_entry(v)?;
                data.insert(k, val);
            }
            (2, "ClusterRoleBinding" | "RoleBinding") => {
                let subject = strings(v, &["kind", "apiGroup", "name", "namespace"])?;
                match obj.get_mut("subjects").and_then(Value::as_array_mut) {
                    Some(subjects) => subjects.push(subject),
                    None => obj["subjects"] = json!([subject]),
                }
            }
            (2, "ResourceQuota") => obj["spec"] = quota_spec(v)?,
            (
                2,
                "SelfSubjectAccessReview"
                | "SubjectAccessReview"
                | "LocalSubjectAccessReview"
                | "SelfSubjectRulesReview",
            ) => obj["spec"] = review_spec(v, &kind)?,
            (3, "ClusterRoleBinding" | "RoleBinding") => {
                obj["roleRef"] = strings(v, &["apiGroup", "kind", "name"])?;
            }
            _ => {}
        }
    }
    if !data.is_empty() {
        obj["data"] = Value::Object(data);
    }
    Some(obj)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(hex: &str) -> Vec<u8> {
        hex.split_whitespace()
            .filter_map(|h| u8::from_str_radix(h, 16).ok())
            .collect()
    }

    /// The body `kubectl auth can-i create configmaps` (kubectl v1.32, `-v=8`) sends, in
    /// the namespace `default`.
    #[test]
    fn kubectl_auth_can_i() {
        let body = bytes(
            "6b 38 73 00 0a 32 0a 17 61 75 74 68 6f 72 69 7a 61 74 69 6f 6e 2e 6b 38 \
             73 2e 69 6f 2f 76 31 12 17 53 65 6c 66 53 75 62 6a 65 63 74 41 63 63 65 \
             73 73 52 65 76 69 65 77 12 45 0a 10 0a 00 12 00 1a 00 22 00 2a 00 32 00 \
             38 00 42 00 12 27 0a 25 0a 07 64 65 66 61 75 6c 74 12 06 63 72 65 61 74 \
             65 1a 00 22 00 2a 0a 63 6f 6e 66 69 67 6d 61 70 73 32 00 3a 00 1a 08 08 \
             00 12 00 1a 00 20 00 1a 00 22 00",
        );
        assert_eq!(
            decode(&body),
            Some(
                json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                        "metadata": {},
                        "spec": {"resourceAttributes": {"namespace": "default", "verb": "create",
                                                        "resource": "configmaps"}}})
            )
        );
    }

    /// `kubectl auth can-i get /metrics` and `kubectl auth can-i --list -n alice`.
    #[test]
    fn kubectl_auth_can_i_non_resource_and_list() {
        let metrics = bytes(
            "6b 38 73 00 0a 32 0a 17 61 75 74 68 6f 72 69 7a 61 74 69 6f 6e 2e 6b 38 \
             73 2e 69 6f 2f 76 31 12 17 53 65 6c 66 53 75 62 6a 65 63 74 41 63 63 65 \
             73 73 52 65 76 69 65 77 12 2f 0a 10 0a 00 12 00 1a 00 22 00 2a 00 32 00 \
             38 00 42 00 12 11 12 0f 0a 08 2f 6d 65 74 72 69 63 73 12 03 67 65 74 1a \
             08 08 00 12 00 1a 00 20 00 1a 00 22 00",
        );
        let spec = decode(&metrics).and_then(|v| v.get("spec").cloned());
        assert_eq!(
            spec,
            Some(json!({"nonResourceAttributes": {"path": "/metrics", "verb": "get"}}))
        );
        let list = bytes(
            "6b 38 73 00 0a 31 0a 17 61 75 74 68 6f 72 69 7a 61 74 69 6f 6e 2e 6b 38 \
             73 2e 69 6f 2f 76 31 12 16 53 65 6c 66 53 75 62 6a 65 63 74 52 75 6c 65 \
             73 52 65 76 69 65 77 12 21 0a 10 0a 00 12 00 1a 00 22 00 2a 00 32 00 38 \
             00 42 00 12 07 0a 05 61 6c 69 63 65 1a 04 18 00 22 00 1a 00 22 00",
        );
        let v = decode(&list).expect("decodes");
        assert_eq!(v["kind"], "SelfSubjectRulesReview");
        assert_eq!(v["spec"], json!({"namespace": "alice"}));
    }

    /// The body `kubectl create quota tq2 --hard=count/tuples.math.example.com=5,configmaps=3,count/numbers.math.example.com=10 -n s17-q`
    /// sent to kube-apiserver v1.24 (from `kubectl -v=8`).
    #[test]
    fn kubectl_create_quota() {
        let hex = "6b 38 73 00 0a 13 0a 02 76 31 12 0d 52 65 73 6f 75 72 63 65 51 75 6f 74 \
                   61 12 7f 0a 18 0a 03 74 71 32 12 00 1a 05 73 31 37 2d 71 22 00 2a 00 32 \
                   00 38 00 42 00 12 61 0a 11 0a 0a 63 6f 6e 66 69 67 6d 61 70 73 12 03 0a \
                   01 33 0a 26 0a 1e 63 6f 75 6e 74 2f 6e 75 6d 62 65 72 73 2e 6d 61 74 68 \
                   2e 65 78 61 6d 70 6c 65 2e 63 6f 6d 12 04 0a 02 31 30 0a 24 0a 1d 63 6f \
                   75 6e 74 2f 74 75 70 6c 65 73 2e 6d 61 74 68 2e 65 78 61 6d 70 6c 65 2e \
                   63 6f 6d 12 03 0a 01 35 1a 00 1a 00 22 00";
        let bytes: Vec<u8> = hex
            .split_whitespace()
            .filter_map(|h| u8::from_str_radix(h, 16).ok())
            .collect();
        let v = decode(&bytes).expect("decodes");
        assert_eq!(
            v,
            json!({"apiVersion": "v1", "kind": "ResourceQuota",
                   "metadata": {"name": "tq2", "namespace": "s17-q"},
                   "spec": {"hard": {"configmaps": "3", "count/numbers.math.example.com": "10",
                                     "count/tuples.math.example.com": "5"}}})
        );
    }
}
