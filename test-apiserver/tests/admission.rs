//! What kube-apiserver refuses although the object itself is valid: ResourceQuota object
//! counts, creates in a namespace that is being deleted (NamespaceLifecycle), and Events
//! over the API's limits. Each test quotes what the real kube-apiserver v1.24 answered (with
//! etcd 3.4 on loopback, 2 cores); the
//! test server must answer the same code, reason, message and causes.

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ResourceQuota};
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};
use std::time::Duration;
use test_apiserver::TestServer;

const CRDS: &str = include_str!("fixtures/crds.yaml");
const WAIT: Duration = Duration::from_secs(10);

async fn server() -> TestServer {
    let s = TestServer::start().await.expect("server starts");
    s.apply_crd_yaml(CRDS).expect("CRDs install");
    s
}

fn tuples(s: &TestServer, ns: &str) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("math.example.com", "v1beta1", "Tuple"),
        "tuples",
    );
    Api::namespaced_with(s.client(), ns, &ar)
}

fn tuple(name: &str) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "math.example.com/v1beta1", "kind": "Tuple",
        "metadata": {"name": name}, "spec": {"numbers": [1, 2]}
    }))
    .expect("valid tuple")
}

fn api_err(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// The whole Status body of a refused request, as kube-apiserver sends it.
async fn raw_post(s: &TestServer, path: &str, body: &Value) -> (u16, Value) {
    raw(s, "POST", path, "application/json", body).await
}

async fn raw(s: &TestServer, method: &str, path: &str, ct: &str, body: &Value) -> (u16, Value) {
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("Content-Type", ct)
        .body(serde_json::to_vec(body).expect("json"))
        .expect("request");
    let resp = s
        .client()
        .send(req.map(Into::into))
        .await
        .expect("an answer");
    let code = resp.status().as_u16();
    let bytes = resp.into_body().collect_bytes().await.expect("body");
    (code, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

async fn create_namespace(s: &TestServer, name: &str) {
    Api::<Namespace>::all(s.client())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": name}})).expect("namespace"),
        )
        .await
        .expect("namespace created");
}

async fn quota(s: &TestServer, ns: &str, name: &str, hard: Value) -> ResourceQuota {
    let api: Api<ResourceQuota> = Api::namespaced(s.client(), ns);
    api.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": name}, "spec": {"hard": hard}}))
            .expect("quota"),
    )
    .await
    .expect("quota created")
}

/// The quota's status as the quota controller keeps it (`hard`, `used`), once it says
/// `pred`.
async fn quota_status(
    s: &TestServer,
    ns: &str,
    name: &str,
    pred: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let st = s
            .object("", "resourcequotas", Some(ns), name)
            .and_then(|q| q.get("status").cloned())
            .unwrap_or(Value::Null);
        if pred(&st) {
            return st;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "quota {ns}/{name} never reached the expected status; last: {st}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn used(st: &Value, key: &str) -> Option<String> {
    st.get("used")
        .and_then(|u| u.get(key))
        .and_then(Value::as_str)
        .map(String::from)
}

/// kube-apiserver's ResourceQuota admission (on by default) with kube-controller-manager's
/// quota controller: the controller copies `spec.hard` to `status.hard` and counts
/// `status.used`; a create that would go over `count/<resource>.<group>` is refused 403
/// before it is stored, also for a name that already exists and for dry runs, but only
/// after validation (an invalid object is still 422). Real kube-apiserver v1.24:
///
/// ```text
/// $ kubectl create quota tq --hard=count/tuples.math.example.com=5 -n s17-q
/// status: {"hard":{"count/tuples.math.example.com":"5"},"used":{"count/tuples.math.example.com":"0"}}
/// POST t1..t5 -> 201, POST t6 -> 403
/// {"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
///  "message":"tuples.math.example.com \"t6\" is forbidden: exceeded quota: tq, requested: count/tuples.math.example.com=1, used: count/tuples.math.example.com=5, limited: count/tuples.math.example.com=5",
///  "reason":"Forbidden","details":{"name":"t6","group":"math.example.com","kind":"tuples"},"code":403}
/// POST t1 (exists) -> 403 exceeded quota (not 409); POST ?dryRun=All -> 403 exceeded quota
/// POST generateName "g-" -> 403 `tuples.math.example.com "g-jmm8h" is forbidden: exceeded quota: ...`
/// POST spec.numbers: "x" -> 422 `Tuple.math.example.com "bad" is invalid: spec.numbers: ...`
/// DELETE t1 -> a create is admitted again 19-63 ms later (5 rounds)
/// ```
#[tokio::test]
async fn resource_quota_counts_objects_per_namespace() {
    let s = server().await;
    create_namespace(&s, "q").await;
    let q = quota(&s, "q", "tq", json!({"count/tuples.math.example.com": "5"})).await;
    assert!(
        q.status.is_none(),
        "the API server stores no status on create"
    );
    let st = quota_status(&s, "q", "tq", |st| st.get("hard").is_some()).await;
    assert_eq!(
        st,
        json!({"hard": {"count/tuples.math.example.com": "5"},
               "used": {"count/tuples.math.example.com": "0"}})
    );
    let api = tuples(&s, "q");
    for i in 1..=5 {
        api.create(&PostParams::default(), &tuple(&format!("t{i}")))
            .await
            .expect("under the quota");
    }
    let st = quota_status(&s, "q", "tq", |st| {
        used(st, "count/tuples.math.example.com").as_deref() == Some("5")
    })
    .await;
    assert_eq!(st["hard"]["count/tuples.math.example.com"], "5");

    let (code, body) = raw_post(
        &s,
        "/apis/math.example.com/v1beta1/namespaces/q/tuples",
        &serde_json::to_value(tuple("t6")).expect("json"),
    )
    .await;
    assert_eq!(code, 403);
    assert_eq!(
        body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "tuples.math.example.com \"t6\" is forbidden: exceeded quota: tq, requested: count/tuples.math.example.com=1, used: count/tuples.math.example.com=5, limited: count/tuples.math.example.com=5",
               "reason": "Forbidden",
               "details": {"name": "t6", "group": "math.example.com", "kind": "tuples"},
               "code": 403})
    );
    // A name that exists: the quota answers first.
    let e = api_err(
        api.create(&PostParams::default(), &tuple("t1"))
            .await
            .unwrap_err(),
    );
    assert_eq!((e.code, e.reason.as_str()), (403, "Forbidden"));
    assert!(e.message.contains("exceeded quota: tq"), "{}", e.message);
    // Dry runs are refused the same way.
    let e = api_err(
        api.create(
            &PostParams {
                dry_run: true,
                ..Default::default()
            },
            &tuple("dry"),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(e.code, 403);
    // generateName: the message names the generated name.
    let mut g = tuple("");
    g.metadata.name = None;
    g.metadata.generate_name = Some("g-".into());
    let e = api_err(api.create(&PostParams::default(), &g).await.unwrap_err());
    assert_eq!(e.code, 403);
    let named = e
        .message
        .strip_prefix("tuples.math.example.com \"g-")
        .expect(&e.message);
    assert_eq!(named.find('"'), Some(5), "{}", e.message);
    // Validation comes before the quota.
    let (code, body) = raw_post(
        &s,
        "/apis/math.example.com/v1beta1/namespaces/q/tuples",
        &json!({"apiVersion": "math.example.com/v1beta1", "kind": "Tuple",
                "metadata": {"name": "bad"}, "spec": {"numbers": "x"}}),
    )
    .await;
    assert_eq!((code, body["reason"].as_str()), (422, Some("Invalid")));
    // Other namespaces and other kinds are not limited.
    tuples(&s, "default")
        .create(&PostParams::default(), &tuple("t6"))
        .await
        .expect("no quota in default");
    Api::<ConfigMap>::namespaced(s.client(), "q")
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "c"}})).expect("cm"),
        )
        .await
        .expect("configmaps are not limited by tq");

    // A delete frees its slot once the quota controller has recounted.
    api.delete("t1", &DeleteParams::default())
        .await
        .expect("deleted");
    quota_status(&s, "q", "tq", |st| {
        used(st, "count/tuples.math.example.com").as_deref() == Some("4")
    })
    .await;
    api.create(&PostParams::default(), &tuple("t7"))
        .await
        .expect("room again after the delete");
    assert_eq!(s.objects("math.example.com", "tuples", Some("q")).len(), 5);
}

/// kube-apiserver charges the quota in admission, before the object is stored: a create
/// that then fails with 409 AlreadyExists has used a slot until the quota controller
/// recounts (it does on the next delete in the namespace, or its 5-minute resync). Real
/// kube-apiserver v1.24 (quota count/tuples=5, 4 Tuples):
///
/// ```text
/// used 4; POST t2 (exists) -> 409; used 5; POST t8 -> 403 "... exceeded quota: tq, requested:
/// count/tuples.math.example.com=1, used: count/tuples.math.example.com=5, limited: ...=5";
/// 2 s later used is still 5
/// ```
///
/// Core kinds count as `count/<resource>`, and ConfigMaps, Secrets, Services and
/// ResourceQuotas also under their legacy names (`configmaps`, ...). Quantities are
/// written back in canonical form (`1000` reads `1k`).
#[tokio::test]
async fn quota_is_charged_before_the_store_answers_and_legacy_names_count() {
    let s = server().await;
    create_namespace(&s, "q").await;
    quota(&s, "q", "tq", json!({"count/tuples.math.example.com": "2"})).await;
    quota_status(&s, "q", "tq", |st| st.get("hard").is_some()).await;
    let api = tuples(&s, "q");
    api.create(&PostParams::default(), &tuple("a"))
        .await
        .expect("1 of 2");
    let e = api_err(
        api.create(&PostParams::default(), &tuple("a"))
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, 409);
    let st = quota_status(&s, "q", "tq", |st| st.get("used").is_some()).await;
    assert_eq!(
        used(&st, "count/tuples.math.example.com").as_deref(),
        Some("2")
    );
    let e = api_err(
        api.create(&PostParams::default(), &tuple("b"))
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, 403, "the failed create used the last slot");
    // The next delete in the namespace makes the controller recount.
    api.delete("a", &DeleteParams::default())
        .await
        .expect("deleted");
    quota_status(&s, "q", "tq", |st| {
        used(st, "count/tuples.math.example.com").as_deref() == Some("0")
    })
    .await;

    // Every namespace holds kube-controller-manager's `kube-root-ca.crt`, which a
    // `count/configmaps` quota counts; it goes first so that the counts below are the
    // test's ConfigMaps alone (the test server does not publish it again).
    Api::<ConfigMap>::namespaced(s.client(), "q")
        .delete("kube-root-ca.crt", &DeleteParams::default())
        .await
        .expect("kube-root-ca.crt deleted");
    let q = quota(
        &s,
        "q",
        "cm",
        json!({"configmaps": "1000", "count/configmaps": "2"}),
    )
    .await;
    assert_eq!(
        serde_json::to_value(&q.spec).expect("json")["hard"],
        json!({"configmaps": "1k", "count/configmaps": "2"})
    );
    quota_status(&s, "q", "cm", |st| st.get("hard").is_some()).await;
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "q");
    for n in ["c1", "c2"] {
        cms.create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": n}})).expect("cm"),
        )
        .await
        .expect("under the quota");
    }
    let e = api_err(
        cms.create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "c3"}})).expect("cm"),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(
        e.message,
        "configmaps \"c3\" is forbidden: exceeded quota: cm, requested: count/configmaps=1, used: count/configmaps=2, limited: count/configmaps=2"
    );
    let st = quota_status(&s, "q", "cm", |st| {
        used(st, "configmaps").as_deref() == Some("2")
    })
    .await;
    assert_eq!(
        st["used"],
        json!({"configmaps": "2", "count/configmaps": "2"})
    );
    // Raising the limit (a spec change) makes the controller recount at once.
    Api::<ResourceQuota>::namespaced(s.client(), "q")
        .patch(
            "cm",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"hard": {"count/configmaps": "3"}}})),
        )
        .await
        .expect("patched");
    quota_status(&s, "q", "cm", |st| st["hard"]["count/configmaps"] == "3").await;
    cms.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "c3"}})).expect("cm"),
    )
    .await
    .expect("room after raising the limit");
}

fn terminating_refusal(resource: &str, group: Option<&str>, name: &str, ns: &str) -> Value {
    let mut details = json!({"name": name, "kind": resource,
        "causes": [{"reason": "NamespaceTerminating",
                    "message": format!("namespace {ns} is being terminated"),
                    "field": "metadata.namespace"}]});
    let qualified = match group {
        Some(g) => {
            details["group"] = json!(g);
            format!("{resource}.{g}")
        }
        None => resource.to_string(),
    };
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": format!("{qualified} \"{name}\" is forbidden: unable to create new content in namespace {ns} because it is being terminated"),
           "reason": "Forbidden", "details": details, "code": 403})
}

/// kube-apiserver's NamespaceLifecycle admission (always on) and namespace registry, with
/// kube-controller-manager's namespace controller. Real kube-apiserver v1.24:
///
/// ```text
/// DELETE /api/v1/namespaces/s17-n -> 200 {"status":{"phase":"Terminating"},"spec":{"finalizers":["kubernetes"]},
///   metadata.deletionTimestamp set, no metadata.finalizers}; a second DELETE -> 200
/// POST tuple t9 -> 403
/// {"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
///  "message":"tuples.math.example.com \"t9\" is forbidden: unable to create new content in namespace s17-n because it is being terminated",
///  "reason":"Forbidden","details":{"name":"t9","group":"math.example.com","kind":"tuples",
///  "causes":[{"reason":"NamespaceTerminating","message":"namespace s17-n is being terminated","field":"metadata.namespace"}]},"code":403}
/// POST core event e1 -> 403 `events "e1" is forbidden: unable to create ...` (same causes, no group)
/// POST events.k8s.io event e2 -> 403 `events.events.k8s.io "e2" is forbidden: ...`
/// POST generateName "g-" -> 403 `tuples.math.example.com "g-" is forbidden: ...` (before the name is generated)
/// POST invalid object "BAD" -> 403 (before validation); ?dryRun=All -> 403; server-side apply create -> 403
/// PATCH existing tuple (spec) -> 200, PATCH its /status -> 200
/// the content goes (5 s after the DELETE: kube-controller-manager's namespaceDeletionGracePeriod);
/// one Tuple held by a finalizer keeps the namespace, status.conditions then say
///   NamespaceContentRemaining True SomeResourcesRemain "Some resources are remaining: tuples.math.example.com has 1 resource instances"
///   NamespaceFinalizersRemaining True SomeFinalizersRemain "Some content in the namespace has finalizers remaining: s17.example.com/hold in 1 resource instances"
/// the finalizer removed -> the namespace is gone 1.3 s later
/// DELETE /api/v1/namespaces/default?dryRun=All -> 403
///   {"message":"namespaces \"default\" is forbidden: this namespace may not be deleted","reason":"Forbidden",
///    "details":{"name":"default","kind":"namespaces"},"code":403}
/// ```
#[tokio::test]
async fn namespace_lifecycle_refuses_creates_while_terminating() {
    let s = server().await;
    create_namespace(&s, "n").await;
    let api = tuples(&s, "n");
    for t in ["t1", "t2"] {
        api.create(&PostParams::default(), &tuple(t))
            .await
            .expect("created");
    }
    let mut held = tuple("held");
    held.metadata.finalizers = Some(vec!["s17.example.com/hold".into()]);
    api.create(&PostParams::default(), &held)
        .await
        .expect("created");

    let (code, ns) = raw(
        &s,
        "DELETE",
        "/api/v1/namespaces/n",
        "application/json",
        &json!({}),
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(ns["status"]["phase"], "Terminating");
    assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));
    assert!(ns["metadata"]["deletionTimestamp"].is_string());
    assert!(ns["metadata"].get("finalizers").is_none());
    let (code, _) = raw(
        &s,
        "DELETE",
        "/api/v1/namespaces/n",
        "application/json",
        &json!({}),
    )
    .await;
    assert_eq!(code, 200, "a second delete answers the namespace again");

    let (code, body) = raw_post(
        &s,
        "/apis/math.example.com/v1beta1/namespaces/n/tuples",
        &serde_json::to_value(tuple("t9")).expect("json"),
    )
    .await;
    assert_eq!(code, 403);
    assert_eq!(
        body,
        terminating_refusal("tuples", Some("math.example.com"), "t9", "n")
    );
    let (_, body) = raw_post(
        &s,
        "/api/v1/namespaces/n/events",
        &json!({"metadata": {"name": "e1"}, "involvedObject": {"kind": "Tuple", "name": "held", "namespace": "n"},
                "reason": "X", "message": "m"}),
    )
    .await;
    assert_eq!(body, terminating_refusal("events", None, "e1", "n"));
    let (_, body) = raw_post(
        &s,
        "/apis/events.k8s.io/v1/namespaces/n/events",
        &json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e2"},
                "eventTime": "2026-01-01T00:00:00.000000Z",
                "regarding": {"kind": "Tuple", "name": "held", "namespace": "n"}, "reason": "X",
                "note": "m", "action": "A", "reportingController": "x", "reportingInstance": "y",
                "type": "Normal"}),
    )
    .await;
    assert_eq!(
        body,
        terminating_refusal("events", Some("events.k8s.io"), "e2", "n")
    );
    let (_, body) = raw_post(
        &s,
        "/apis/math.example.com/v1beta1/namespaces/n/tuples",
        &json!({"apiVersion": "math.example.com/v1beta1", "kind": "Tuple",
                "metadata": {"generateName": "g-"}, "spec": {"numbers": [1]}}),
    )
    .await;
    assert_eq!(
        body,
        terminating_refusal("tuples", Some("math.example.com"), "g-", "n")
    );
    let (code, _) = raw_post(
        &s,
        "/apis/math.example.com/v1beta1/namespaces/n/tuples",
        &json!({"apiVersion": "math.example.com/v1beta1", "kind": "Tuple",
                "metadata": {"name": "BAD"}, "spec": {"numbers": "x"}}),
    )
    .await;
    assert_eq!(code, 403, "the namespace is checked before validation");
    let (code, _) = raw_post(
        &s,
        "/apis/math.example.com/v1beta1/namespaces/n/tuples?dryRun=All",
        &serde_json::to_value(tuple("t10")).expect("json"),
    )
    .await;
    assert_eq!(code, 403);
    let e = api_err(
        api.patch(
            "new1",
            &PatchParams::apply("test").force(),
            &Patch::Apply(tuple("new1")),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!((e.code, e.reason.as_str()), (403, "Forbidden"));
    // Writes to what exists still work.
    api.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"numbers": [4]}})),
    )
    .await
    .expect("patch");
    api.patch_status(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"observedGeneration": 1}})),
    )
    .await
    .expect("status patch");

    // The namespace controller deletes the content; the held Tuple keeps the namespace.
    s.wait_for("math.example.com", "tuples", WAIT, |ts| {
        ts.iter().all(|t| t["metadata"]["name"] == "held")
    })
    .await
    .expect("content deleted");
    let deadline = tokio::time::Instant::now() + WAIT;
    let conditions = loop {
        let ns = s
            .object("", "namespaces", None, "n")
            .expect("namespace still there");
        if let Some(c) = ns["status"].get("conditions").filter(|c| {
            c.as_array().is_some_and(|c| {
                c.iter()
                    .any(|c| c["type"] == "NamespaceFinalizersRemaining" && c["status"] == "True")
            })
        }) {
            break c.clone();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no conditions: {ns}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let by_type = |t: &str| -> (String, String, String) {
        let c = conditions
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["type"] == t))
            .unwrap_or_else(|| panic!("no {t} in {conditions}"));
        (
            c["status"].as_str().unwrap_or("").into(),
            c["reason"].as_str().unwrap_or("").into(),
            c["message"].as_str().unwrap_or("").into(),
        )
    };
    assert_eq!(
        by_type("NamespaceContentRemaining"),
        (
            "True".into(),
            "SomeResourcesRemain".into(),
            "Some resources are remaining: tuples.math.example.com has 1 resource instances".into()
        )
    );
    assert_eq!(
        by_type("NamespaceFinalizersRemaining"),
        (
            "True".into(),
            "SomeFinalizersRemain".into(),
            "Some content in the namespace has finalizers remaining: s17.example.com/hold in 1 resource instances".into()
        )
    );
    assert_eq!(
        by_type("NamespaceDeletionContentFailure"),
        (
            "False".into(),
            "ContentDeleted".into(),
            "All content successfully deleted, may be waiting on finalization".into()
        )
    );
    let held = s
        .object("math.example.com", "tuples", Some("n"), "held")
        .expect("held stays");
    assert!(held["metadata"]["deletionTimestamp"].is_string());

    api.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .expect("finalizer removed");
    s.wait_for("", "namespaces", WAIT, |nss| {
        nss.iter().all(|n| n["metadata"]["name"] != "n")
    })
    .await
    .expect("the namespace goes once its content is gone");

    // Then it is simply missing again.
    let e = api_err(
        api.create(&PostParams::default(), &tuple("t1"))
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (e.code, e.message.as_str()),
        (404, "namespaces \"n\" not found")
    );

    // The namespace registry has no deletecollection (real: 405, `details: {}`), and
    // a DELETE that leaves an object pending on its finalizers answers 200, like one that
    // removes it (`DELETE pending object: HTTP 200` on kube-apiserver v1.24).
    let (code, body) = raw(
        &s,
        "DELETE",
        "/api/v1/namespaces",
        "application/json",
        &json!({}),
    )
    .await;
    assert_eq!(code, 405);
    assert_eq!(
        body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "the server does not allow this method on the requested resource",
               "reason": "MethodNotAllowed", "details": {}, "code": 405})
    );
    let mut pending = tuple("pending");
    pending.metadata.finalizers = Some(vec!["s17.example.com/hold".into()]);
    tuples(&s, "default")
        .create(&PostParams::default(), &pending)
        .await
        .expect("created");
    let (code, body) = raw(
        &s,
        "DELETE",
        "/apis/math.example.com/v1beta1/namespaces/default/tuples/pending",
        "application/json",
        &json!({}),
    )
    .await;
    assert_eq!(code, 200);
    assert!(body["metadata"]["deletionTimestamp"].is_string(), "{body}");

    // default, kube-system and kube-public may not be deleted.
    let (code, body) = raw(
        &s,
        "DELETE",
        "/api/v1/namespaces/default",
        "application/json",
        &json!({}),
    )
    .await;
    assert_eq!(code, 403);
    assert_eq!(
        body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "namespaces \"default\" is forbidden: this namespace may not be deleted",
               "reason": "Forbidden", "details": {"name": "default", "kind": "namespaces"},
               "code": 403})
    );
}

/// Namespace deletion goes one resource type at a time, as the namespace controller's
/// deletecollection calls do, so a controller watching parents and children sees children
/// go while their parents still exist (and its creates are refused). With
/// `set_namespace_deletion_delay` the content stays for a while first, as
/// kube-controller-manager's 5-second `namespaceDeletionGracePeriod` keeps it.
#[tokio::test]
async fn namespace_content_goes_after_the_grace_period() {
    let s = server().await;
    s.set_namespace_deletion_delay(Duration::from_millis(400));
    create_namespace(&s, "n").await;
    tuples(&s, "n")
        .create(&PostParams::default(), &tuple("t"))
        .await
        .expect("created");
    Api::<Namespace>::all(s.client())
        .delete("n", &DeleteParams::default())
        .await
        .expect("deleted");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        s.objects("math.example.com", "tuples", Some("n")).len(),
        1,
        "the content waits for the grace period"
    );
    s.wait_for("", "namespaces", WAIT, |nss| {
        nss.iter().all(|n| n["metadata"]["name"] != "n")
    })
    .await
    .expect("then it goes");
    assert!(
        s.objects("math.example.com", "tuples", Some("n"))
            .is_empty()
    );
}

fn v1_event(name: &str, note: &str) -> Value {
    json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": name},
           "eventTime": "2026-01-01T00:00:00.000000Z",
           "regarding": {"kind": "Tuple", "name": "x", "namespace": "default"},
           "reason": "R", "note": note, "action": "A", "reportingController": "math-controller",
           "reportingInstance": "i", "type": "Normal"})
}

fn core_event(name: &str, message: &str) -> Value {
    json!({"metadata": {"name": name},
           "involvedObject": {"kind": "Tuple", "name": "x", "namespace": "default"},
           "reason": "R", "message": message, "type": "Normal"})
}

fn invalid_event(name: &str, causes: &[(&str, &str, &str)]) -> Value {
    let full: Vec<String> = causes.iter().map(|(_, f, m)| format!("{f}: {m}")).collect();
    let list = if full.len() == 1 {
        full[0].clone()
    } else {
        format!("[{}]", full.join(", "))
    };
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": format!("Event \"{name}\" is invalid: {list}"), "reason": "Invalid",
           "details": {"name": name, "kind": "Event",
                       "causes": causes.iter().map(|(r, f, m)| json!({"reason": r, "message": m, "field": f})).collect::<Vec<_>>()},
           "code": 422})
}

/// kube-apiserver's Event validation (pkg/apis/core/validation/events.go, v1.24). Events
/// written through events.k8s.io/v1 (kube-rs's Recorder) get the strict checks: a name
/// that is a DNS subdomain of at most 253 characters, a note of at most 1024 bytes
/// (reported under the core field name `message`), `eventTime`, `type`; a core/v1 Event
/// without `eventTime` is checked only for its namespace. Real kube-apiserver v1.24:
///
/// ```text
/// events.k8s.io, name of 254 'a' -> 422 {"message":"Event \"aaa…\" is invalid: metadata.name: Invalid value: \"aaa…\": must be no more than 253 characters",
///   "reason":"Invalid","details":{"name":"aaa…","kind":"Event","causes":[{"reason":"FieldValueInvalid","message":"Invalid value: \"aaa…\": must be no more than 253 characters","field":"metadata.name"}]},"code":422}
/// events.k8s.io, note of 1025 bytes -> 422 "Event \"e-note\" is invalid: message: Invalid value: \"\": can have at most 1024 characters"
///   causes [{"reason":"FieldValueInvalid","message":"Invalid value: \"\": can have at most 1024 characters","field":"message"}]
/// events.k8s.io, note of 1024 bytes -> 201
/// events.k8s.io, both, name Bad_Name -> 422 "Event \"Bad_Name\" is invalid: [message: Invalid value: \"\": can have at most 1024 characters,
///   metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of ... ]"
/// core/v1 without eventTime: name of 254, message of 1025, name Bad_Name -> 201 each
/// core/v1 with eventTime, message of 1025 -> 422 "Event \"c-et\" is invalid: message: Invalid value: \"\": can have at most 1024 characters"
/// events.k8s.io PATCH series.count 1 -> 422 "Event \"e-note1024\" is invalid: series.count: Invalid value: \"\": should be at least 2"
/// events.k8s.io PATCH note -> 422 "Event \"e-note1024\" is invalid: message: Invalid value: \"changed\": field is immutable"
/// core/v1 PATCH message -> 200
/// events.k8s.io {"metadata":{"name":"empty"}} -> 422 "Event \"empty\" is invalid: [involvedObject.namespace: Invalid value: \"\": does not match event.namespace,
///   eventTime: Required value, type: Invalid value: \"\": has invalid value: ]"
/// ```
#[tokio::test]
async fn event_validation_follows_kube_apiserver() {
    let s = server().await;
    let v1 = "/apis/events.k8s.io/v1/namespaces/default/events";
    let core = "/api/v1/namespaces/default/events";
    let long = "a".repeat(254);
    let (code, body) = raw_post(&s, v1, &v1_event(&long, "ok")).await;
    assert_eq!(code, 422);
    assert_eq!(
        body,
        invalid_event(
            &long,
            &[(
                "FieldValueInvalid",
                "metadata.name",
                &format!("Invalid value: \"{long}\": must be no more than 253 characters")
            )]
        )
    );
    let (_, body) = raw_post(&s, v1, &v1_event("e-note", &"n".repeat(1025))).await;
    assert_eq!(
        body,
        invalid_event(
            "e-note",
            &[(
                "FieldValueInvalid",
                "message",
                "Invalid value: \"\": can have at most 1024 characters"
            )]
        )
    );
    let (code, _) = raw_post(&s, v1, &v1_event("e-note1024", &"n".repeat(1024))).await;
    assert_eq!(code, 201);
    let (code, _) = raw_post(&s, v1, &v1_event(&"a".repeat(253), "ok")).await;
    assert_eq!(code, 201);
    let (_, body) = raw_post(&s, v1, &v1_event("Bad_Name", &"n".repeat(1025))).await;
    assert_eq!(
        body,
        invalid_event(
            "Bad_Name",
            &[
                (
                    "FieldValueInvalid",
                    "message",
                    "Invalid value: \"\": can have at most 1024 characters"
                ),
                (
                    "FieldValueInvalid",
                    "metadata.name",
                    "Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
                )
            ]
        )
    );
    // core/v1 without eventTime: only the namespace is checked.
    for (name, msg) in [
        (long.as_str(), "ok".to_string()),
        ("c-note", "n".repeat(1025)),
        ("Bad_Name", "ok".into()),
    ] {
        let (code, body) = raw_post(&s, core, &core_event(name, &msg)).await;
        assert_eq!(code, 201, "{name}: {body}");
    }
    let mut with_time = core_event("c-et", &"n".repeat(1025));
    with_time["eventTime"] = json!("2026-01-01T00:00:00.000000Z");
    with_time["action"] = json!("A");
    with_time["reportingComponent"] = json!("math-controller");
    with_time["reportingInstance"] = json!("i");
    let (_, body) = raw_post(&s, core, &with_time).await;
    assert_eq!(
        body,
        invalid_event(
            "c-et",
            &[(
                "FieldValueInvalid",
                "message",
                "Invalid value: \"\": can have at most 1024 characters"
            )]
        )
    );
    // Updates: the series is checked, and what an Event says may not change.
    let merge = "application/merge-patch+json";
    let (_, body) = raw(
        &s,
        "PATCH",
        &format!("{v1}/e-note1024"),
        merge,
        &json!({"series": {"count": 1, "lastObservedTime": "2026-01-01T00:00:01.000000Z"}}),
    )
    .await;
    assert_eq!(
        body,
        invalid_event(
            "e-note1024",
            &[(
                "FieldValueInvalid",
                "series.count",
                "Invalid value: \"\": should be at least 2"
            )]
        )
    );
    let (_, body) = raw(
        &s,
        "PATCH",
        &format!("{v1}/e-note1024"),
        merge,
        &json!({"note": "changed"}),
    )
    .await;
    assert_eq!(
        body,
        invalid_event(
            "e-note1024",
            &[(
                "FieldValueInvalid",
                "message",
                "Invalid value: \"changed\": field is immutable"
            )]
        )
    );
    let (code, _) = raw(
        &s,
        "PATCH",
        &format!("{v1}/e-note1024"),
        merge,
        &json!({"series": {"count": 2, "lastObservedTime": "2026-01-01T00:00:01.000000Z"}}),
    )
    .await;
    assert_eq!(code, 200, "a series as kube-rs's Recorder writes it");
    let (code, _) = raw(
        &s,
        "PATCH",
        &format!("{core}/c-note"),
        merge,
        &json!({"message": "changed"}),
    )
    .await;
    assert_eq!(code, 200);
    let (_, body) = raw_post(
        &s,
        "/apis/events.k8s.io/v1/namespaces/kube-public/events",
        &json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "empty"}}),
    )
    .await;
    assert_eq!(
        body,
        invalid_event(
            "empty",
            &[
                (
                    "FieldValueInvalid",
                    "involvedObject.namespace",
                    "Invalid value: \"\": does not match event.namespace"
                ),
                ("FieldValueRequired", "eventTime", "Required value"),
                (
                    "FieldValueInvalid",
                    "type",
                    "Invalid value: \"\": has invalid value: "
                )
            ]
        )
    );
}
