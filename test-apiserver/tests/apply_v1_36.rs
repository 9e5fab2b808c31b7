//! Server-side apply's ownership as kube-apiserver v1.36 records it: an apply that changes no
//! value still makes its manager a co-owner, and an ownerReferences item is one atomic field
//! keyed by its `uid`. Each answer quoted below was seen on kube-apiserver v1.36.2 + etcd 3.6
//! on loopback (2026-11-27) with kubectl v1.32's `kubectl create` and `kubectl apply
//! --server-side`; what a test derives from them without a real answer says so.

use kube::client::Body;
use serde_json::{Value, json};
use test_apiserver::TestServer;

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

/// A raw request; the answer's status code and body.
async fn send(
    s: &TestServer,
    method: &str,
    path: &str,
    content_type: &str,
    body: Value,
) -> (u16, Value) {
    let request = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", content_type)
        .body(Body::from(body.to_string().into_bytes()))
        .expect("a request");
    let response = s.client().send(request).await.expect("an answer");
    let code = response.status().as_u16();
    let bytes = response.into_body().collect_bytes().await.expect("a body");
    (code, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

/// A create by `kubectl-create`, as `kubectl create` names itself.
async fn create(s: &TestServer, collection: &str, obj: Value) -> Value {
    let path = format!("{collection}?fieldManager=kubectl-create");
    let (code, body) = send(s, "POST", &path, "application/json", obj).await;
    assert_eq!(code, 201, "{body}");
    body
}

/// A server-side apply by `manager` (not forced unless `force`): the code and the body.
async fn apply(
    s: &TestServer,
    collection: &str,
    manager: &str,
    force: bool,
    obj: Value,
) -> (u16, Value) {
    let name = obj["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let path = format!("{collection}/{name}?fieldManager={manager}&force={force}");
    send(s, "PATCH", &path, "application/apply-patch+yaml", obj).await
}

/// managedFields as `[manager, operation, fieldsV1]` triples, in the order the server lists
/// them: how the quoted v1.36.2 answers are written.
fn owners(obj: &Value) -> Value {
    let entries = obj["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    entries
        .iter()
        .map(|e| json!([e["manager"], e["operation"], e["fieldsV1"]]))
        .collect()
}

fn resource_version(obj: &Value) -> &str {
    obj["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
}

fn plain() -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "plain", "namespace": "default"}, "data": {"a": "1"}})
}

/// `kubectl create cm plain --from-literal=a=1`, then `kubectl apply --server-side
/// --field-manager=y` of the same data: v1.36.2 answered managedFields
/// `[["y","Apply",{"f:data":{"f:a":{}}}],["kubectl-create","Update",{"f:data":{".":{},"f:a":{}}}]]`
/// and moved the resourceVersion (a watcher sees MODIFIED): `y` co-owns `a` although it
/// changed no value. The same apply by `y` again left the managedFields as they were; whether
/// v1.36 writes then cannot be seen without its resourceVersion, and the test server keeps
/// answering it without a write, as an unchanged object is not written.
#[tokio::test]
async fn an_apply_that_changes_nothing_makes_the_applier_a_co_owner() {
    let s = TestServer::start().await.expect("server starts");
    let created = create(&s, CONFIGMAPS, plain()).await;
    let before = s.resource_version();
    let (code, applied) = apply(&s, CONFIGMAPS, "y", false, plain()).await;
    assert_eq!(code, 200, "{applied}");
    assert_eq!(
        owners(&applied),
        json!([["y", "Apply", {"f:data": {"f:a": {}}}],
            ["kubectl-create", "Update", {"f:data": {".": {}, "f:a": {}}}]])
    );
    assert_ne!(resource_version(&applied), resource_version(&created));
    assert_eq!(s.resource_version(), before + 1, "the new owner is written");

    let (code, again) = apply(&s, CONFIGMAPS, "y", false, plain()).await;
    assert_eq!(code, 200, "{again}");
    assert_eq!(owners(&again), owners(&applied));
    assert_eq!(resource_version(&again), resource_version(&applied));
    assert_eq!(
        s.resource_version(),
        before + 1,
        "an identical apply writes nothing"
    );
}

/// What follows from the co-ownership (derived, not seen on v1.36): another manager's apply
/// of a different `a` conflicts with both owners, `kubectl-create` and `y`; without `y`'s
/// entry only the creator would be named.
#[tokio::test]
async fn a_co_owner_by_an_unchanged_apply_is_named_in_a_conflict() {
    let s = TestServer::start().await.expect("server starts");
    create(&s, CONFIGMAPS, plain()).await;
    assert_eq!(apply(&s, CONFIGMAPS, "y", false, plain()).await.0, 200);
    let mut other = plain();
    other["data"]["a"] = json!("2");
    let (code, refused) = apply(&s, CONFIGMAPS, "z", false, other).await;
    assert_eq!(code, 409, "{refused}");
    let mut named: Vec<String> = refused["details"]["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            format!(
                "{} {}",
                c["message"].as_str().unwrap_or(""),
                c["field"].as_str().unwrap_or("")
            )
        })
        .collect();
    named.sort();
    assert_eq!(
        named,
        [
            "conflict with \"kubectl-create\" using v1 .data.a",
            "conflict with \"y\" .data.a"
        ]
    );
}

/// A ConfigMap `parent`, and the body of one it owns through `owner` (controller true,
/// blockOwnerDeletion false, as the v1.36.2 run had it).
async fn parent_and_reference(s: &TestServer) -> (Value, String) {
    let parent = create(
        s,
        CONFIGMAPS,
        json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "parent"}}),
    )
    .await;
    let uid = parent["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let owner = json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "parent", "uid": uid,
        "controller": true, "blockOwnerDeletion": false});
    (owner, uid)
}

/// `kubectl create -f` of a ConfigMap with one ownerReference (to the ConfigMap `parent`, uid
/// U), then `kubectl apply --server-side --field-manager=x` of the same object: v1.36.2
/// answered, after the create, the creator's
/// `"f:metadata":{"f:ownerReferences":{".":{},"k:{\"uid\":\"U\"}":{}}}` and, after the apply,
/// `[["x","Apply",{"f:data":{"f:a":{}},"f:metadata":{"f:ownerReferences":{"k:{\"uid\":\"U\"}":{}}}}],
/// ["kubectl-create","Update",{"f:data":{".":{},"f:a":{}},"f:metadata":{"f:ownerReferences":{".":{},"k:{\"uid\":\"U\"}":{}}}}]]`:
/// OwnerReference is `+structType=atomic`, so the item is one leaf, keyed by its uid.
#[tokio::test]
async fn an_owner_reference_is_one_field_keyed_by_its_uid() {
    let s = TestServer::start().await.expect("server starts");
    let (owner, uid) = parent_and_reference(&s).await;
    let child = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "child", "namespace": "default", "ownerReferences": [owner]},
        "data": {"a": "1"}});
    let item = format!("k:{{\"uid\":\"{uid}\"}}");
    let created = create(&s, CONFIGMAPS, child.clone()).await;
    let by_creator = json!({"f:data": {".": {}, "f:a": {}},
        "f:metadata": {"f:ownerReferences": {".": {}, &item: {}}}});
    assert_eq!(
        owners(&created),
        json!([["kubectl-create", "Update", by_creator]])
    );
    let (code, applied) = apply(&s, CONFIGMAPS, "x", false, child).await;
    assert_eq!(code, 200, "{applied}");
    let by_x = json!({"f:data": {"f:a": {}}, "f:metadata": {"f:ownerReferences": {&item: {}}}});
    assert_eq!(
        owners(&applied),
        json!([
            ["x", "Apply", by_x],
            ["kubectl-create", "Update", by_creator]
        ])
    );
}

const WIDGETS: &str = "/apis/testserver.example.com/v1/namespaces/default/widgets";

/// A custom resource's `metadata` is ObjectMeta too (apiextensions-apiserver builds its
/// schema with the built-in ObjectMeta), so its ownerReferences items are as atomic
/// (derived from the ConfigMap answer above, not seen on v1.36): the creator owns the item
/// by its uid, and a forced apply of the reference without `blockOwnerDeletion` replaces the
/// item whole, as an atomic value is replaced, rather than merging into it.
#[tokio::test]
async fn a_custom_resources_owner_reference_is_atomic_too() {
    let s = TestServer::start().await.expect("server starts");
    s.apply_crd_yaml(include_str!("fixtures/widgets.yaml"))
        .expect("the CRD installs");
    let (owner, uid) = parent_and_reference(&s).await;
    let widget = |owner: Value| {
        json!({"apiVersion": "testserver.example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "ownerReferences": [owner]}, "spec": {"tags": ["t"]}})
    };
    let item = format!("k:{{\"uid\":\"{uid}\"}}");
    let created = create(&s, WIDGETS, widget(owner.clone())).await;
    assert_eq!(
        owners(&created)[0][2]["f:metadata"],
        json!({"f:ownerReferences": {".": {}, &item: {}}})
    );
    let mut without_block = owner;
    if let Some(o) = without_block.as_object_mut() {
        o.remove("blockOwnerDeletion");
    }
    let (code, forced) = apply(&s, WIDGETS, "x", true, widget(without_block.clone())).await;
    assert_eq!(code, 200, "{forced}");
    assert_eq!(
        forced["metadata"]["ownerReferences"],
        json!([without_block])
    );
    assert_eq!(
        owners(&forced)[0],
        json!(["x", "Apply", {"f:metadata": {"f:ownerReferences": {&item: {}}},
            "f:spec": {"f:tags": {"v:\"t\"": {}}}}])
    );
}

/// Each entry's `time`, by manager.
fn times(obj: &Value) -> Vec<(String, String)> {
    let entries = obj["metadata"]["managedFields"].as_array();
    entries
        .into_iter()
        .flatten()
        .map(|e| {
            let text = |k: &str| e[k].as_str().unwrap_or_default().to_string();
            (text("manager"), text("time"))
        })
        .collect()
}

fn time_of(obj: &Value, manager: &str) -> Option<String> {
    times(obj)
        .into_iter()
        .find(|(m, _)| m == manager)
        .map(|(_, t)| t)
}

/// Past the next second: managedFields times have seconds, so a stamp after this differs.
async fn next_second() {
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
}

/// The ConfigMap `shared` with `data`.
fn shared(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "shared", "namespace": "default"}, "data": data})
}

/// A forced apply that takes a field from another manager: kube-apiserver takes it out of the
/// loser's entry and leaves that entry's `time` as it was (only the writer's entry is stamped:
/// `managedFieldsUpdater.Apply` in apimachinery's `util/managedfields/internal` sets
/// `Times()[fieldManager]` alone), and drops an entry left owning nothing (structured-merge-
/// diff's `Updater.update` deletes managers whose set is empty). Derived from v1.36.2's
/// source, and seen on kube-apiserver v1.36.2 (2026-11-28, kubectl 1.32): a ConfigMap applied by
/// `alpha` (data a, b), 2 s later a forced apply by `beta` taking `a` left
/// `alpha Apply 2026-11-28T05:35:04Z [f:b]` and `beta Apply 2026-11-28T05:35:06Z [f:a]`.
#[tokio::test]
async fn a_forced_apply_leaves_the_losers_time_as_it_was() {
    let s = TestServer::start().await.expect("server starts");
    let (code, first) = apply(
        &s,
        CONFIGMAPS,
        "alpha",
        false,
        shared(json!({"a": "1", "b": "2"})),
    )
    .await;
    assert_eq!(code, 201, "{first}");
    let alpha_time = time_of(&first, "alpha").expect("alpha's entry has a time");
    next_second().await;
    let take_a = shared(json!({"a": "x"}));
    let (code, taken) = apply(&s, CONFIGMAPS, "beta", true, take_a).await;
    assert_eq!(code, 200, "{taken}");
    assert_eq!(
        owners(&taken),
        json!([["alpha", "Apply", {"f:data": {"f:b": {}}}],
            ["beta", "Apply", {"f:data": {"f:a": {}}}]])
    );
    assert_eq!(time_of(&taken, "alpha"), Some(alpha_time.clone()));
    assert_ne!(time_of(&taken, "beta"), Some(alpha_time.clone()));

    next_second().await;
    let take_b = shared(json!({"b": "y"}));
    let (code, emptied) = apply(&s, CONFIGMAPS, "gamma", true, take_b).await;
    assert_eq!(code, 200, "{emptied}");
    assert_eq!(
        times(&emptied)
            .iter()
            .map(|(m, _)| m.as_str())
            .collect::<Vec<_>>(),
        ["beta", "gamma"],
        "alpha owns nothing and is gone: {emptied}"
    );
    assert_eq!(time_of(&emptied, "beta"), time_of(&taken, "beta"));
}

/// The same for an Update (a merge patch by `editor`): the appliers whose value it changed
/// lose the field, their times stay (`managedFieldsUpdater.Update` stamps the updater's entry
/// only). Derived from v1.36.2's source, not seen on a server.
#[tokio::test]
async fn an_update_that_takes_a_field_leaves_the_losers_time_as_it_was() {
    let s = TestServer::start().await.expect("server starts");
    let (code, first) = apply(
        &s,
        CONFIGMAPS,
        "alpha",
        false,
        shared(json!({"a": "1", "b": "2"})),
    )
    .await;
    assert_eq!(code, 201, "{first}");
    next_second().await;
    let path = format!("{CONFIGMAPS}/shared?fieldManager=editor");
    let patch = json!({"data": {"a": "edited"}});
    let (code, edited) = send(&s, "PATCH", &path, "application/merge-patch+json", patch).await;
    assert_eq!(code, 200, "{edited}");
    assert_eq!(
        owners(&edited)[0],
        json!(["alpha", "Apply", {"f:data": {"f:b": {}}}])
    );
    assert_eq!(time_of(&edited, "alpha"), time_of(&first, "alpha"));
    assert_ne!(time_of(&edited, "editor"), time_of(&first, "alpha"));
}
