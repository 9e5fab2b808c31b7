//! Built-in kinds answered as kube-apiserver v1.36 answers them: the differences
//! `hack/diff-servers` found between the test server and a real v1.36.2 (test-apiserver's
//! README, "What it found on kube-apiserver v1.36.2"). Each expected answer below was seen
//! on kube-apiserver v1.36.2 + etcd 3.6 on loopback (2026-11-27) and is quoted.

use kube::client::Body;
use serde_json::{Value, json};
use test_apiserver::TestServer;

/// What the server answered: status code, `Warning` header texts, body.
struct Answer {
    code: u16,
    warnings: Vec<String>,
    body: Value,
}

/// A raw request (JSON unless `content_type` says otherwise).
async fn send(
    s: &TestServer,
    method: &str,
    path: &str,
    content_type: &str,
    body: Option<Value>,
) -> Answer {
    let bytes = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
    let request = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", content_type)
        .body(Body::from(bytes))
        .expect("a request");
    let response = s.client().send(request).await.expect("an answer");
    let code = response.status().as_u16();
    let warnings = response
        .headers()
        .get_all("warning")
        .iter()
        .map(|h| h.to_str().unwrap_or("").to_string())
        .collect();
    let bytes = response.into_body().collect_bytes().await.expect("a body");
    Answer {
        code,
        warnings,
        body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    }
}

async fn post(s: &TestServer, path: &str, body: Value) -> Answer {
    send(s, "POST", path, "application/json", Some(body)).await
}

async fn get(s: &TestServer, path: &str) -> Answer {
    send(s, "GET", path, "application/json", None).await
}

const GADGETS: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.v136.example.com}
spec:
  group: v136.example.com
  names: {kind: Gadget, plural: gadgets, singular: gadget, listKind: GadgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
"#;

/// The items of a built-in list carry no `apiVersion`/`kind` on v1.36 (`a list in pages`:
/// the real ConfigMapList's items had neither), while a custom resource's list items keep
/// theirs (apiextensions-apiserver lists unstructured objects as stored); the list itself
/// names its kind either way. kube-rs's typed lists read both.
#[tokio::test]
async fn built_in_list_items_carry_no_kind_custom_ones_do() {
    let s = TestServer::start().await.expect("server starts");
    s.apply_crd_yaml(GADGETS).expect("the CRD installs");
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}});
    assert_eq!(
        post(&s, "/api/v1/namespaces/default/configmaps", cm)
            .await
            .code,
        201
    );
    let gadget = json!({"apiVersion": "v136.example.com/v1", "kind": "Gadget",
        "metadata": {"name": "g"}});
    let gadgets = "/apis/v136.example.com/v1/namespaces/default/gadgets";
    assert_eq!(post(&s, gadgets, gadget).await.code, 201);

    let list = get(&s, "/api/v1/namespaces/default/configmaps?limit=1").await;
    assert_eq!(
        (list.body["kind"].as_str(), list.code),
        (Some("ConfigMapList"), 200)
    );
    let item = &list.body["items"][0];
    assert_eq!(item["metadata"]["name"], "cm");
    assert_eq!((item.get("apiVersion"), item.get("kind")), (None, None));

    let list = get(&s, gadgets).await;
    let item = &list.body["items"][0];
    assert_eq!(
        (item["apiVersion"].as_str(), item["kind"].as_str()),
        (Some("v136.example.com/v1"), Some("Gadget"))
    );

    let typed = kube::Api::<k8s_openapi::api::core::v1::ConfigMap>::default_namespaced(s.client())
        .list(&Default::default())
        .await
        .expect("kube-rs reads a list whose items name no kind");
    let names: Vec<_> = typed
        .items
        .iter()
        .filter_map(|c| c.metadata.name.as_deref())
        .collect();
    assert!(names.contains(&"cm"), "{names:?}");
}

/// An events.k8s.io/v1 Event shows the v1 fields converted from the stored core Event as
/// v1.36 shows them (`an events.k8s.io/v1 Event`): `deprecatedFirstTimestamp: null`,
/// `deprecatedLastTimestamp: null` and `deprecatedSource: {}` (Go's `omitempty` omits
/// neither a zero `metav1.Time` nor a struct), on the create's answer and on a read.
#[tokio::test]
async fn an_events_v1_event_shows_its_deprecated_fields() {
    let s = TestServer::start().await.expect("server starts");
    let path = "/apis/events.k8s.io/v1/namespaces/default/events";
    let event = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "ev"},
        "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "example.com/diff",
        "reportingInstance": "diff-1", "action": "Created", "reason": "Created", "type": "Normal",
        "note": "created", "regarding": {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm",
        "namespace": "default"}});
    let created = post(&s, path, event).await;
    assert_eq!(created.code, 201, "{}", created.body);
    let read = get(&s, &format!("{path}/ev")).await;
    for body in [&created.body, &read.body] {
        assert_eq!(body.get("deprecatedFirstTimestamp"), Some(&Value::Null));
        assert_eq!(body.get("deprecatedLastTimestamp"), Some(&Value::Null));
        assert_eq!(body.get("deprecatedSource"), Some(&json!({})));
        assert_eq!(body.get("deprecatedCount"), None);
    }
    let listed = get(&s, path).await;
    assert_eq!(listed.body["items"][0]["deprecatedSource"], json!({}));
}

/// A server-side apply conflict: v1.36's 409 (`errors.NewApplyConflict`) carries `details`
/// with its `causes` only, no `name`, `group` or `kind` (`a server-side apply by another
/// manager (Conflict)`).
#[tokio::test]
async fn an_apply_conflict_details_its_causes_only() {
    let s = TestServer::start().await.expect("server starts");
    let path = "/api/v1/namespaces/default/configmaps/cm";
    let apply = |data: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm"}, "data": {"a": data}})
    };
    let yaml = "application/apply-patch+yaml";
    let first = send(
        &s,
        "PATCH",
        &format!("{path}?fieldManager=one"),
        yaml,
        Some(apply("1")),
    )
    .await;
    assert_eq!(first.code, 201, "{}", first.body);
    let conflict = send(
        &s,
        "PATCH",
        &format!("{path}?fieldManager=two"),
        yaml,
        Some(apply("2")),
    )
    .await;
    assert_eq!(
        (conflict.code, conflict.body["reason"].as_str()),
        (409, Some("Conflict"))
    );
    assert_eq!(
        conflict.body["details"],
        json!({"causes": [{"reason": "FieldManagerConflict",
            "message": "conflict with \"one\"", "field": ".data.a"}]})
    );
}

/// Unknown fields of a built-in kind by `fieldValidation` (`an unknown field …`, four steps
/// on v1.36): `Strict` is 400 BadRequest `ConfigMap in version "v1" cannot be handled as a
/// ConfigMap: strict decoding error: unknown field "color"`; `Warn`, and no directive (Warn
/// is the default), answer 201 with `Warning: 299 - "unknown field \"color\""` and store
/// the object without it; `Ignore` answers 201, no warning, the field dropped.
#[tokio::test]
async fn unknown_fields_of_a_built_in_kind_are_warned_or_refused() {
    let s = TestServer::start().await.expect("server starts");
    let cm = |name: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name}, "color": "blue", "data": {"a": "1"}})
    };
    let path = "/api/v1/namespaces/default/configmaps";
    let strict = post(&s, &format!("{path}?fieldValidation=Strict"), cm("strict")).await;
    assert_eq!(
        (strict.code, strict.body["reason"].as_str()),
        (400, Some("BadRequest"))
    );
    assert_eq!(
        strict.body["message"],
        r#"ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "color""#
    );
    let warning = r#"299 - "unknown field \"color\"""#;
    for (query, name) in [("?fieldValidation=Warn", "warn"), ("", "default")] {
        let answer = post(&s, &format!("{path}{query}"), cm(name)).await;
        assert_eq!(
            (answer.code, answer.warnings),
            (201, vec![warning.to_string()])
        );
        assert_eq!(
            (answer.body.get("color"), &answer.body["data"]),
            (None, &json!({"a": "1"}))
        );
    }
    let ignored = post(&s, &format!("{path}?fieldValidation=Ignore"), cm("ignore")).await;
    assert_eq!((ignored.code, ignored.warnings), (201, vec![]));
    assert_eq!(
        get(&s, &format!("{path}/ignore")).await.body.get("color"),
        None
    );
}

/// Unknown fields deep in a built-in kind are named by their path, list items by index, as
/// kube-apiserver's strict decoder names them (`spec.template.spec.containers[0].imagee`),
/// one warning each, on a create and on a merge patch; a known field set to `null` is no
/// unknown field.
#[tokio::test]
async fn unknown_fields_deep_in_a_built_in_kind_are_named_by_path() {
    let s = TestServer::start().await.expect("server starts");
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "labels": {"app": "d"}},
        "spec": {"replicas": 1, "foo": 1, "paused": null, "selector": {"matchLabels": {"app": "d"}},
            "template": {"metadata": {"labels": {"app": "d"}},
                "spec": {"containers": [{"name": "c", "image": "busybox", "imagee": "x"}]}}}});
    let path = "/apis/apps/v1/namespaces/default/deployments";
    let strict = post(
        &s,
        &format!("{path}?fieldValidation=Strict"),
        deployment.clone(),
    )
    .await;
    assert_eq!(strict.code, 400);
    assert_eq!(
        strict.body["message"],
        r#"Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: unknown field "spec.foo", unknown field "spec.template.spec.containers[0].imagee""#
    );
    let warned = post(&s, path, deployment).await;
    assert_eq!(
        (warned.code, warned.warnings),
        (
            201,
            vec![
                r#"299 - "unknown field \"spec.foo\"""#.to_string(),
                r#"299 - "unknown field \"spec.template.spec.containers[0].imagee\"""#.to_string()
            ]
        )
    );
    assert_eq!(warned.body["spec"].get("foo"), None);
    assert_eq!(
        warned.body["spec"]["template"]["spec"]["containers"][0].get("imagee"),
        None
    );
    let patched = send(
        &s,
        "PATCH",
        &format!("{path}/d?fieldValidation=Strict"),
        "application/merge-patch+json",
        Some(json!({"spec": {"bar": true}})),
    )
    .await;
    // A patch is refused as Invalid on the field `patch` (v1.36: 422, ` "" is invalid: patch:
    // Invalid value: "{\"apiVersion\":\"apps/v1\",…}": strict decoding error: unknown field
    // "spec.bar"`, details with that one cause).
    assert_eq!(
        (patched.code, patched.body["reason"].as_str()),
        (422, Some("Invalid"))
    );
    let message = patched.body["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with(r#" "" is invalid: patch: Invalid value: "{"#),
        "{message}"
    );
    assert!(
        message.ends_with(r#"": strict decoding error: unknown field "spec.bar""#),
        "{message}"
    );
    assert_eq!(patched.body["details"]["causes"][0]["field"], "patch");
}

/// The managedFields entry of `manager` (Update or Apply, as `operation` says).
fn fields_of(obj: &Value, manager: &str, operation: &str) -> Value {
    obj["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| e["manager"] == manager && e["operation"] == operation)
        .map(|e| e["fieldsV1"].clone())
        .unwrap_or(Value::Null)
}

/// An Update that adds a map records the map itself as owned (`create a ConfigMap`, `a
/// merge patch`): v1.36.2's `fieldsV1` for a ConfigMap created with data `{a}` and labels
/// `{app}` is `{"f:data": {".": {}, "f:a": {}}, "f:metadata": {"f:labels": {".": {}, "f:app":
/// {}}}}` (structured-merge-diff's comparison counts a map that was absent as added), while
/// an Apply owns what its configuration names (v1.36.2: `{"f:data": {"f:a": {}}}`).
#[tokio::test]
async fn an_update_owns_the_maps_it_adds_an_apply_does_not() {
    let s = TestServer::start().await.expect("server starts");
    let path = "/api/v1/namespaces/default/configmaps";
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm", "labels": {"app": "diff"}}, "data": {"a": "1"}});
    let created = post(&s, &format!("{path}?fieldManager=diff"), cm).await;
    assert_eq!(created.code, 201, "{}", created.body);
    assert_eq!(
        fields_of(&created.body, "diff", "Update"),
        json!({"f:data": {".": {}, "f:a": {}}, "f:metadata": {"f:labels": {".": {}, "f:app": {}}}})
    );
    let applied = send(
        &s,
        "PATCH",
        &format!("{path}/applied?fieldManager=other"),
        "application/apply-patch+yaml",
        Some(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "applied"}, "data": {"a": "1"}})),
    )
    .await;
    assert_eq!(applied.code, 201, "{}", applied.body);
    assert_eq!(
        fields_of(&applied.body, "other", "Apply"),
        json!({"f:data": {"f:a": {}}})
    );
}

/// What follows from the `.` entries (`a merge patch`, `the same apply, forced`): a merge
/// patch by the creator adds `b` to the map it already owns; another manager's forced apply
/// of `a` takes `.data.a` only, and the creator keeps the map itself, `b` and the labels.
/// The same three requests to kube-apiserver v1.36.2 (2026-11-27; `kubectl create --raw`,
/// `kubectl patch --type=merge`, `kubectl apply --server-side --force-conflicts`) answered,
/// after the merge patch, `diff`/Update `{"f:data":{".":{},"f:a":{},"f:b":{}},
/// "f:metadata":{"f:labels":{".":{},"f:app":{}}}}`, and after the forced apply `other`/Apply
/// `{"f:data":{"f:a":{}}}` beside `diff`/Update `{"f:data":{".":{},"f:b":{}},
/// "f:metadata":{"f:labels":{".":{},"f:app":{}}}}`: what this test expects.
#[tokio::test]
async fn a_forced_apply_takes_the_field_and_leaves_the_map_to_its_creator() {
    let s = TestServer::start().await.expect("server starts");
    let path = "/api/v1/namespaces/default/configmaps";
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm", "labels": {"app": "diff"}}, "data": {"a": "1"}});
    assert_eq!(
        post(&s, &format!("{path}?fieldManager=diff"), cm)
            .await
            .code,
        201
    );
    let patched = send(
        &s,
        "PATCH",
        &format!("{path}/cm?fieldManager=diff"),
        "application/merge-patch+json",
        Some(json!({"data": {"b": "2"}})),
    )
    .await;
    assert_eq!(
        fields_of(&patched.body, "diff", "Update"),
        json!({"f:data": {".": {}, "f:a": {}, "f:b": {}},
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}}})
    );
    let forced = send(
        &s,
        "PATCH",
        &format!("{path}/cm?fieldManager=other&force=true"),
        "application/apply-patch+yaml",
        Some(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cm"}, "data": {"a": "3"}})),
    )
    .await;
    assert_eq!(forced.code, 200, "{}", forced.body);
    assert_eq!(
        fields_of(&forced.body, "diff", "Update"),
        json!({"f:data": {".": {}, "f:b": {}},
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}}})
    );
    assert_eq!(
        fields_of(&forced.body, "other", "Apply"),
        json!({"f:data": {"f:a": {}}})
    );
}

/// Creating a Namespace (`create the namespace`): on v1.36.2 the creator's entry is only
/// `{"f:metadata": {"f:labels": {".": {}, "f:kubernetes.io/metadata.name": {}}}}`. The label
/// is a default the decoder sets, so its writer owns it; `spec.finalizers` and
/// `status.phase` are set by the Namespace strategy after the managedFields are recorded, and
/// `status` is reset on every main-resource write: nobody owns them.
#[tokio::test]
async fn a_namespace_creator_owns_only_the_name_label() {
    let s = TestServer::start().await.expect("server starts");
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "diff-1"}});
    let created = post(&s, "/api/v1/namespaces?fieldManager=diff", ns).await;
    assert_eq!(created.code, 201, "{}", created.body);
    let entries = created.body["metadata"]["managedFields"]
        .as_array()
        .map_or(0, Vec::len);
    assert_eq!(entries, 1, "{}", created.body["metadata"]);
    assert_eq!(
        fields_of(&created.body, "diff", "Update"),
        json!({"f:metadata": {"f:labels": {".": {}, "f:kubernetes.io/metadata.name": {}}}})
    );
    assert_eq!(created.body["spec"], json!({"finalizers": ["kubernetes"]}));
    assert_eq!(created.body["status"], json!({"phase": "Active"}));
}

/// An events.k8s.io/v1 Event's creator owns `regarding` whole (`an events.k8s.io/v1
/// Event`): v1.36.2 records `"f:regarding": {}`, as ObjectReference is an atomic struct in
/// its schema; so another manager's apply of a different `regarding.name` conflicts on
/// `.regarding` itself.
#[tokio::test]
async fn an_events_v1_event_creator_owns_regarding_whole() {
    let s = TestServer::start().await.expect("server starts");
    let path = "/apis/events.k8s.io/v1/namespaces/default/events";
    let event = |name: &str| {
        json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "ev"},
        "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "example.com/diff",
        "reportingInstance": "diff-1", "action": "Created", "reason": "Created", "type": "Normal",
        "note": "created", "regarding": {"apiVersion": "v1", "kind": "ConfigMap", "name": name,
        "namespace": "default"}})
    };
    let created = post(&s, &format!("{path}?fieldManager=diff"), event("cm")).await;
    assert_eq!(created.code, 201, "{}", created.body);
    let fields = fields_of(&created.body, "diff", "Update");
    assert_eq!(fields["f:regarding"], json!({}), "{fields}");
    assert_eq!(fields["f:note"], json!({}), "{fields}");
    let conflict = send(
        &s,
        "PATCH",
        &format!("{path}/ev?fieldManager=other"),
        "application/apply-patch+yaml",
        Some(event("other")),
    )
    .await;
    assert_eq!(conflict.code, 409, "{}", conflict.body);
    assert_eq!(
        conflict.body["details"]["causes"][0]["field"], ".regarding",
        "{}",
        conflict.body
    );
}
