//! Server-side apply of `x-kubernetes-list-type: set` and `map` lists (issue 26): items are
//! merged and owned one by one, as structured-merge-diff does in kube-apiserver. Every
//! expected value below was first seen on kube-apiserver v1.24 (+ etcd 3.4 on loopback) with the
//! same CRD (`fixtures/widgets.yaml`) and the same sequence of applies.

use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use serde_json::{Value, json};
use test_apiserver::TestServer;

async fn widgets() -> (TestServer, Api<DynamicObject>) {
    let s = TestServer::start().await.expect("server starts");
    s.apply_crd_yaml(include_str!("fixtures/widgets.yaml"))
        .expect("the CRD installs");
    let gvk = GroupVersionKind::gvk("testserver.example.com", "v1", "Widget");
    let api = Api::default_namespaced_with(s.client(), &ApiResource::from_gvk(&gvk));
    (s, api)
}

fn widget(body: Value) -> Value {
    let mut w = json!({"apiVersion": "testserver.example.com/v1", "kind": "Widget",
        "metadata": {"name": "w"}});
    if let (Some(w), Some(b)) = (w.as_object_mut(), body.as_object()) {
        w.extend(b.clone());
    }
    w
}

async fn apply(api: &Api<DynamicObject>, manager: &str, body: Value) -> Result<Value, kube::Error> {
    let o = api
        .patch(
            "w",
            &PatchParams::apply(manager),
            &Patch::Apply(widget(body)),
        )
        .await?;
    Ok(serde_json::to_value(o).unwrap_or_default())
}

async fn apply_status(
    api: &Api<DynamicObject>,
    manager: &str,
    body: Value,
) -> Result<Value, kube::Error> {
    let o = api
        .patch_status(
            "w",
            &PatchParams::apply(manager),
            &Patch::Apply(widget(body)),
        )
        .await?;
    Ok(serde_json::to_value(o).unwrap_or_default())
}

fn conflict_message(e: kube::Error) -> String {
    match e {
        kube::Error::Api(s) if s.code == 409 => s.message,
        other => panic!("expected a 409 Conflict, got {other:?}"),
    }
}

fn fields_of(obj: &Value, manager: &str, subresource: Option<&str>) -> Value {
    obj["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| {
            e["manager"] == manager && e.get("subresource").and_then(Value::as_str) == subresource
        })
        .map(|e| e["fieldsV1"].clone())
        .unwrap_or(Value::Null)
}

/// Two managers apply different items of a set and of a map list: both are kept (in
/// structured-merge-diff's order), each manager owns its own items, the same field of one
/// item with two values is a conflict named by the item's keys, and a manager that stops
/// applying an item removes it unless another manager still applies it.
#[tokio::test]
async fn set_and_map_lists_merge_with_per_item_ownership() {
    let (_s, api) = widgets().await;
    apply(
        &api,
        "a",
        json!({"spec": {"tags": ["x", "y"], "atomic": ["a"],
        "ports": [{"port": 80, "protocol": "TCP", "name": "http"}]}}),
    )
    .await
    .unwrap();
    let both = apply(&api, "b", json!({"spec": {"tags": ["z", "y"],
        "ports": [{"port": 443, "protocol": "TCP"}, {"port": 80, "protocol": "TCP", "name": "http"}]}}))
    .await
    .unwrap();
    assert_eq!(both["spec"]["tags"], json!(["x", "z", "y"]));
    assert_eq!(
        both["spec"]["ports"],
        json!([{"port": 443, "protocol": "TCP"}, {"name": "http", "port": 80, "protocol": "TCP"}])
    );
    assert_eq!(
        fields_of(&both, "b", None),
        json!({"f:spec": {
            "f:ports": {
                "k:{\"port\":443,\"protocol\":\"TCP\"}": {".": {}, "f:port": {}, "f:protocol": {}},
                "k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:name": {}, "f:port": {}, "f:protocol": {}}
            },
            "f:tags": {"v:\"y\"": {}, "v:\"z\"": {}}
        }})
    );

    let e = apply(&api, "b", json!({"spec": {"tags": ["z", "y"],
        "ports": [{"port": 443, "protocol": "TCP"}, {"port": 80, "protocol": "TCP", "name": "web"}]}}))
    .await
    .unwrap_err();
    assert_eq!(
        conflict_message(e),
        "Apply failed with 1 conflict: conflict with \"a\": .spec.ports[port=80,protocol=\"TCP\"].name"
    );

    let a_dropped = apply(&api, "a", json!({"spec": {"atomic": ["a"]}}))
        .await
        .unwrap();
    assert_eq!(a_dropped["spec"]["tags"], json!(["z", "y"]));
    assert_eq!(
        a_dropped["spec"]["ports"],
        json!([{"port": 443, "protocol": "TCP"}, {"name": "http", "port": 80, "protocol": "TCP"}])
    );
    let b_dropped = apply(&api, "b", json!({"spec": {}})).await.unwrap();
    assert_eq!(b_dropped["spec"], json!({"atomic": ["a"]}));
}

/// `status.conditions` as a map list keyed by `type` (what kube-rs users declare): two
/// controllers applying their own condition through the status subresource keep both, a
/// different value for the other's condition is a conflict that names its subresource, and
/// a controller that stops applying its condition removes it.
#[tokio::test]
async fn status_conditions_by_two_managers() {
    let (_s, api) = widgets().await;
    apply(&api, "a", json!({"spec": {}})).await.unwrap();
    apply_status(
        &api,
        "a",
        json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
    )
    .await
    .unwrap();
    let both = apply_status(
        &api,
        "b",
        json!({"status": {"conditions": [
        {"type": "Synced", "status": "False", "reason": "X"}]}}),
    )
    .await
    .unwrap();
    assert_eq!(
        both["status"]["conditions"],
        json!([{"status": "True", "type": "Ready"}, {"reason": "X", "status": "False", "type": "Synced"}])
    );
    assert_eq!(
        fields_of(&both, "a", Some("status")),
        json!({"f:status": {"f:conditions": {"k:{\"type\":\"Ready\"}":
            {".": {}, "f:status": {}, "f:type": {}}}}})
    );

    let e = apply_status(
        &api,
        "b",
        json!({"status": {"conditions": [
        {"type": "Ready", "status": "False"}]}}),
    )
    .await
    .unwrap_err();
    assert_eq!(
        conflict_message(e),
        "Apply failed with 1 conflict: conflict with \"a\" with subresource \"status\": .status.conditions[type=\"Ready\"].status"
    );

    let a_dropped = apply_status(&api, "a", json!({"status": {"conditions": []}}))
        .await
        .unwrap();
    assert_eq!(
        a_dropped["status"]["conditions"],
        json!([{"reason": "X", "status": "False", "type": "Synced"}])
    );
}

/// `metadata.finalizers` is a set on every kind (ObjectMeta's `+listType=set`): two
/// controllers applying their own finalizer keep both, and each removes only its own.
#[tokio::test]
async fn finalizers_from_two_managers_are_a_set() {
    use k8s_openapi::api::core::v1::ConfigMap;
    let s = TestServer::start().await.expect("server starts");
    let cms: Api<ConfigMap> = Api::default_namespaced(s.client());
    let with = |finalizers: &[&str]| {
        Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cm", "finalizers": finalizers}}))
    };
    cms.patch("cm", &PatchParams::apply("a"), &with(&["example.com/a"]))
        .await
        .unwrap();
    let both = cms
        .patch("cm", &PatchParams::apply("b"), &with(&["example.com/b"]))
        .await
        .unwrap();
    assert_eq!(
        both.metadata.finalizers.unwrap_or_default(),
        ["example.com/a", "example.com/b"]
    );
    let b_only = cms
        .patch("cm", &PatchParams::apply("a"), &with(&[]))
        .await
        .unwrap();
    assert_eq!(
        b_only.metadata.finalizers.unwrap_or_default(),
        ["example.com/b"]
    );
    let none = cms
        .patch("cm", &PatchParams::apply("b"), &with(&[]))
        .await
        .unwrap();
    assert_eq!(none.metadata.finalizers, None);
}
