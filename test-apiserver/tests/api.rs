//! The server through `kube::Client`: each test names the kube-apiserver behaviour it mirrors.

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Event as CoreEvent, Namespace, ObjectReference};
use kube::api::{
    Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams, Preconditions,
    WatchEvent, WatchParams,
};
use kube::core::{ApiResource, GroupVersionKind};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::{Value, json};
use std::time::Duration;
use test_apiserver::{RequestFilter, ServerOptions, TestServer, Verb};

const CRDS: &str = include_str!("fixtures/crds.yaml");

async fn server() -> TestServer {
    let s = TestServer::start().await.expect("server starts");
    s.apply_crd_yaml(CRDS).expect("CRDs install");
    s
}

fn ar(kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("math.example.com", "v1beta1", kind),
        plural,
    )
}

fn api(s: &TestServer, kind: &str, plural: &str) -> Api<DynamicObject> {
    Api::namespaced_with(s.client(), "default", &ar(kind, plural))
}

fn obj(kind: &str, name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "math.example.com/v1beta1", "kind": kind,
        "metadata": {"name": name}, "spec": spec
    }))
    .expect("valid object")
}

fn api_err(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// kube-apiserver: create assigns uid, creationTimestamp, generation 1 and a resourceVersion
/// from one global counter; a second create answers 409 AlreadyExists; get of a missing
/// object answers 404 NotFound with a Status body.
#[tokio::test]
async fn create_get_conflicts_and_not_found() {
    let s = server().await;
    let numbers = api(&s, "Number", "numbers");
    let n = numbers
        .create(
            &PostParams::default(),
            &obj("Number", "n1", json!({"value": 4})),
        )
        .await
        .unwrap();
    assert_eq!(n.metadata.generation, Some(1));
    assert!(n.metadata.uid.is_some());
    assert!(n.metadata.creation_timestamp.is_some());
    let rv1: u64 = n.metadata.resource_version.unwrap().parse().unwrap();
    let e = api_err(
        numbers
            .create(
                &PostParams::default(),
                &obj("Number", "n1", json!({"value": 4})),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!((e.code, e.reason.as_str()), (409, "AlreadyExists"));
    assert_eq!(e.message, "numbers.math.example.com \"n1\" already exists");
    let cm: Api<ConfigMap> = Api::default_namespaced(s.client());
    let c = cm
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "c"}, "data": {"a": "b"}}))
                .unwrap(),
        )
        .await
        .unwrap();
    let rv2: u64 = c.metadata.resource_version.unwrap().parse().unwrap();
    assert!(rv2 > rv1, "one global resourceVersion counter");
    let e = api_err(numbers.get("missing").await.unwrap_err());
    assert_eq!((e.code, e.reason.as_str()), (404, "NotFound"));
    assert_eq!(e.message, "numbers.math.example.com \"missing\" not found");
    let d = e.details.unwrap();
    assert_eq!(
        (d.name.as_str(), d.group.as_str(), d.kind.as_str()),
        ("missing", "math.example.com", "numbers")
    );
    // generateName
    let mut g = obj("Number", "", json!({"value": 1}));
    g.metadata.name = None;
    g.metadata.generate_name = Some("gen-".into());
    let g = numbers.create(&PostParams::default(), &g).await.unwrap();
    assert!(g.metadata.name.unwrap().starts_with("gen-"));
}

/// kube-apiserver: a namespaced create into a namespace that does not exist answers 404
/// `namespaces "nope" not found`; deleting a namespace deletes its contents, then it.
#[tokio::test]
async fn namespaces_must_exist() {
    let s = server().await;
    let numbers: Api<DynamicObject> =
        Api::namespaced_with(s.client(), "nope", &ar("Number", "numbers"));
    let e = api_err(
        numbers
            .create(
                &PostParams::default(),
                &obj("Number", "n", json!({"value": 1})),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, 404);
    assert_eq!(e.message, "namespaces \"nope\" not found");
    let nss: Api<Namespace> = Api::all(s.client());
    let names: Vec<String> = nss
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    assert!(names.contains(&"default".to_string()) && names.contains(&"kube-system".to_string()));
    nss.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "nope"}})).unwrap(),
    )
    .await
    .unwrap();
    numbers
        .create(
            &PostParams::default(),
            &obj("Number", "n", json!({"value": 1})),
        )
        .await
        .unwrap();
    nss.delete("nope", &DeleteParams::default()).await.unwrap();
    // The namespace controller empties it in the background (tests/admission.rs has the
    // details), then it goes.
    s.wait_for("", "namespaces", Duration::from_secs(10), |nss| {
        nss.iter().all(|n| n["metadata"]["name"] != "nope")
    })
    .await
    .unwrap();
    assert!(
        s.objects("math.example.com", "numbers", Some("nope"))
            .is_empty()
    );
}

/// kube-apiserver (CR status subresource): writes to the main resource ignore status,
/// writes to /status ignore everything but status, and metadata.generation bumps only
/// when something outside metadata and status changes.
#[tokio::test]
async fn status_subresource_and_generation() {
    let s = server().await;
    let numbers = api(&s, "Number", "numbers");
    let mut n = obj("Number", "n", json!({"value": 4}));
    n.data["status"] = json!({"fizzBuzz": "ignored"});
    let n = numbers.create(&PostParams::default(), &n).await.unwrap();
    assert!(
        n.data.get("status").is_none(),
        "status is dropped on create"
    );
    let pp = PatchParams::default();
    let n = numbers
        .patch_status(
            "n",
            &pp,
            &Patch::Merge(json!({"status": {"fizzBuzz": "4"}, "spec": {"value": 99}})),
        )
        .await
        .unwrap();
    assert_eq!(n.data["status"]["fizzBuzz"], "4");
    assert_eq!(n.data["spec"]["value"], 4, "/status ignores spec");
    assert_eq!(n.metadata.generation, Some(1));
    let n = numbers
        .patch(
            "n",
            &pp,
            &Patch::Merge(json!({"metadata": {"labels": {"a": "b"}}, "status": {"fizzBuzz": "x"}})),
        )
        .await
        .unwrap();
    assert_eq!(
        n.metadata.generation,
        Some(1),
        "metadata changes keep generation"
    );
    assert_eq!(
        n.data["status"]["fizzBuzz"], "4",
        "main resource ignores status"
    );
    let n = numbers
        .patch("n", &pp, &Patch::Merge(json!({"spec": {"value": 5}})))
        .await
        .unwrap();
    assert_eq!(n.metadata.generation, Some(2));
    // A no-op write does not bump the resourceVersion.
    let again = numbers
        .patch("n", &pp, &Patch::Merge(json!({"spec": {"value": 5}})))
        .await
        .unwrap();
    assert_eq!(again.metadata.resource_version, n.metadata.resource_version);
    // PUT to /status
    let mut cur = numbers.get_status("n").await.unwrap();
    cur.data["status"] = json!({"fizzBuzz": "Buzz"});
    let put = numbers
        .replace_status("n", &PostParams::default(), &cur)
        .await
        .unwrap();
    assert_eq!(put.data["status"]["fizzBuzz"], "Buzz");
}

/// kube-apiserver: PUT with a stale metadata.resourceVersion answers 409 Conflict
/// "the object has been modified; please apply your changes to the latest version and
/// try again"; a CR PUT without resourceVersion is 422.
#[tokio::test]
async fn optimistic_concurrency() {
    let s = server().await;
    let numbers = api(&s, "Number", "numbers");
    let n = numbers
        .create(
            &PostParams::default(),
            &obj("Number", "n", json!({"value": 1})),
        )
        .await
        .unwrap();
    let mut a = n.clone();
    a.data["spec"]["value"] = json!(2);
    numbers
        .replace("n", &PostParams::default(), &a)
        .await
        .unwrap();
    let mut b = n.clone();
    b.data["spec"]["value"] = json!(3);
    let e = api_err(
        numbers
            .replace("n", &PostParams::default(), &b)
            .await
            .unwrap_err(),
    );
    assert_eq!((e.code, e.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        e.message,
        "Operation cannot be fulfilled on numbers.math.example.com \"n\": the object has been modified; please apply your changes to the latest version and try again"
    );
    b.metadata.resource_version = None;
    let e = api_err(
        numbers
            .replace("n", &PostParams::default(), &b)
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, 422);
}

/// kube-apiserver (apiextensions structural schemas): types, int64/int32 formats,
/// required, minimum/maximum incl. exclusive, maxItems, maxLength/minLength, enum, nullable,
/// int-or-string, preserve-unknown-fields, defaulting and pruning; 422 messages as the real
/// server words them; metadata.name must be a DNS subdomain.
#[tokio::test]
async fn schema_validation_defaulting_pruning() {
    let s = server().await;
    let fermats = api(&s, "Fermat", "fermats");
    let tuples = api(&s, "Tuple", "tuples");
    let pp = PostParams::default();
    let err = |r: Result<DynamicObject, kube::Error>| api_err(r.unwrap_err());
    let e = err(fermats
        .create(&pp, &obj("Fermat", "f", json!({"number": -1})))
        .await);
    assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        e.message,
        "Fermat.math.example.com \"f\" is invalid: spec.number: Invalid value: -1: spec.number in body should be greater than or equal to 0"
    );
    let causes = e.details.unwrap().causes;
    assert_eq!(causes[0].field, "spec.number");
    assert_eq!(causes[0].reason, "FieldValueInvalid");
    let e = err(fermats
        .create(&pp, &obj("Fermat", "f", json!({"number": "string"})))
        .await);
    assert_eq!(
        e.message,
        "Fermat.math.example.com \"f\" is invalid: spec.number: Invalid value: \"string\": spec.number in body must be of type integer: \"string\""
    );
    let many: Vec<i64> = (0..1001).collect();
    let e = err(tuples
        .create(&pp, &obj("Tuple", "t", json!({"numbers": many})))
        .await);
    assert_eq!(
        e.message,
        "Tuple.math.example.com \"t\" is invalid: spec.numbers: Too many: 1001: must have at most 1000 items"
    );
    let e = err(fermats.create(&pp, &obj("Fermat", "f", json!({}))).await);
    assert!(
        e.message.ends_with("spec.number: Required value"),
        "{}",
        e.message
    );
    let e = err(fermats
        .create(&pp, &obj("Fermat", "f", json!({"number": 1, "small": 0})))
        .await);
    assert!(
        e.message.contains("should be greater than 0"),
        "{}",
        e.message
    );
    let e = err(fermats
        .create(
            &pp,
            &obj(
                "Fermat",
                "f",
                json!({"number": 1, "small": 3_000_000_000i64}),
            ),
        )
        .await);
    assert!(e.message.contains("must be of type int32"), "{}", e.message);
    let e = err(fermats
        .create(
            &pp,
            &obj(
                "Fermat",
                "f",
                json!({"number": 100001, "mode": "medium", "label": "123456789"}),
            ),
        )
        .await);
    assert!(
        e.message
            .starts_with("Fermat.math.example.com \"f\" is invalid: ["),
        "{}",
        e.message
    );
    assert!(e.message.contains("spec.number: Invalid value: 100001: spec.number in body should be less than or equal to 100000"));
    assert!(e.message.contains(
        "spec.mode: Unsupported value: \"medium\": supported values: \"fast\", \"slow\""
    ));
    assert!(
        e.message
            .contains("spec.label: Too long: may not be more than 8 bytes")
    );
    let e = err(fermats
        .create(&pp, &obj("Fermat", "f", json!({"number": 1, "port": 1.5})))
        .await);
    assert!(e.message.contains("spec.port"), "{}", e.message);
    let e = err(fermats
        .create(&pp, &obj("Fermat", "Bad_Name", json!({"number": 1})))
        .await);
    assert!(
        e.message
            .contains("metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"),
        "{}",
        e.message
    );
    let long = "a".repeat(254);
    let e = err(fermats
        .create(&pp, &obj("Fermat", &long, json!({"number": 1})))
        .await);
    assert!(
        e.message.contains("must be no more than 253 characters"),
        "{}",
        e.message
    );
    // defaulting, pruning, nullable, int-or-string, preserve-unknown-fields
    let f = fermats
        .create(&pp, &obj("Fermat", "ok", json!({"number": 7, "unknown": 1, "label": null, "port": "http", "extra": {"any": {"thing": 1}}})))
        .await
        .unwrap();
    assert_eq!(f.data["spec"]["mode"], "fast");
    assert!(f.data["spec"].get("unknown").is_none());
    assert!(f.data["spec"]["label"].is_null());
    assert_eq!(f.data["spec"]["extra"]["any"]["thing"], 1);
    assert_eq!(f.data["spec"]["port"], "http");
}

/// kube-apiserver list: label selectors (=, ==, !=, in, notin, exists, !key), field
/// selectors metadata.name/metadata.namespace, limit/continue paging with
/// remainingItemCount, and an unknown field selector is 400 BadRequest.
#[tokio::test]
async fn list_selectors_and_paging() {
    let s = server().await;
    let numbers = api(&s, "Number", "numbers");
    for (i, tier) in ["a", "b", "c", "a", "b"].iter().enumerate() {
        let mut n = obj("Number", &format!("n{i}"), json!({"value": i}));
        n.metadata.labels = Some([("tier".to_string(), tier.to_string())].into());
        if i == 0 {
            n.metadata
                .labels
                .as_mut()
                .unwrap()
                .insert("special".into(), "yes".into());
        }
        numbers.create(&PostParams::default(), &n).await.unwrap();
    }
    let names = |l: kube::core::ObjectList<DynamicObject>| -> Vec<String> {
        l.items
            .into_iter()
            .filter_map(|o| o.metadata.name)
            .collect()
    };
    let q = |sel: &'static str| {
        let numbers = numbers.clone();
        async move {
            names(
                numbers
                    .list(&ListParams::default().labels(sel))
                    .await
                    .unwrap(),
            )
        }
    };
    assert_eq!(q("tier=a").await, ["n0", "n3"]);
    assert_eq!(q("tier==b").await, ["n1", "n4"]);
    assert_eq!(q("tier!=a").await, ["n1", "n2", "n4"]);
    assert_eq!(q("tier in (a,c)").await, ["n0", "n2", "n3"]);
    assert_eq!(q("tier notin (a,c)").await, ["n1", "n4"]);
    assert_eq!(q("special").await, ["n0"]);
    assert_eq!(q("!special").await.len(), 4);
    let l = numbers
        .list(&ListParams::default().fields("metadata.name=n2"))
        .await
        .unwrap();
    assert_eq!(names(l), ["n2"]);
    let l = numbers
        .list(&ListParams::default().fields("metadata.namespace!=default"))
        .await
        .unwrap();
    assert!(l.items.is_empty());
    let e = api_err(
        numbers
            .list(&ListParams::default().fields("spec.value=1"))
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, 400);
    // paging
    let p1 = numbers.list(&ListParams::default().limit(2)).await.unwrap();
    assert_eq!(names(p1.clone()), ["n0", "n1"]);
    assert_eq!(p1.metadata.remaining_item_count, Some(3));
    let token = p1.metadata.continue_.clone().unwrap();
    let p2 = numbers
        .list(&ListParams::default().limit(2).continue_token(&token))
        .await
        .unwrap();
    assert_eq!(names(p2.clone()), ["n2", "n3"]);
    let p3 = numbers
        .list(
            &ListParams::default()
                .limit(2)
                .continue_token(p2.metadata.continue_.as_deref().unwrap()),
        )
        .await
        .unwrap();
    assert_eq!(names(p3.clone()), ["n4"]);
    assert!(p3.metadata.continue_.is_none_or(|c| c.is_empty()));
    assert!(p1.metadata.resource_version.is_some());
    // an expired continue token answers 410 Gone
    s.compact();
    let e = api_err(
        numbers
            .list(&ListParams::default().limit(2).continue_token(&token))
            .await
            .unwrap_err(),
    );
    assert_eq!((e.code, e.reason.as_str()), (410, "Expired"));
}

/// kube-apiserver watch: resourceVersion unset/"0" starts with synthetic ADDED events;
/// a given resourceVersion replays history after it; a compacted one ends with an ERROR
/// event carrying a 410 Expired Status; bookmarks carry only the resourceVersion;
/// timeoutSeconds ends the stream cleanly; label selectors turn modifications into
/// ADDED/DELETED as objects enter or leave the selection.
#[tokio::test]
async fn watch_semantics() {
    let s = TestServer::start_with(ServerOptions {
        bookmark_interval: Duration::from_millis(200),
        ..Default::default()
    })
    .await
    .unwrap();
    s.apply_crd_yaml(CRDS).unwrap();
    let numbers = api(&s, "Number", "numbers");
    let a = numbers
        .create(
            &PostParams::default(),
            &obj("Number", "a", json!({"value": 1})),
        )
        .await
        .unwrap();
    let rv_a = a.metadata.resource_version.clone().unwrap();
    numbers
        .create(
            &PostParams::default(),
            &obj("Number", "b", json!({"value": 2})),
        )
        .await
        .unwrap();
    // from "0": synthetic ADDED for both
    let mut st = numbers
        .watch(&WatchParams::default().disable_bookmarks().timeout(1), "0")
        .await
        .unwrap()
        .boxed();
    let mut added = vec![];
    while let Some(ev) = st.try_next().await.unwrap() {
        if let WatchEvent::Added(o) = ev {
            added.push(o.metadata.name.unwrap());
        }
    }
    assert_eq!(added, ["a", "b"], "timeoutSeconds ends the stream");
    // replay from rv of a: only b's ADDED, then a live MODIFIED
    let mut st = numbers
        .watch(
            &WatchParams::default().disable_bookmarks().timeout(5),
            &rv_a,
        )
        .await
        .unwrap()
        .boxed();
    match st.try_next().await.unwrap() {
        Some(WatchEvent::Added(o)) => assert_eq!(o.metadata.name.as_deref(), Some("b")),
        other => panic!("unexpected {other:?}"),
    }
    numbers
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"value": 3}})),
        )
        .await
        .unwrap();
    match st.try_next().await.unwrap() {
        Some(WatchEvent::Modified(o)) => assert_eq!(o.data["spec"]["value"], 3),
        other => panic!("unexpected {other:?}"),
    }
    numbers.delete("a", &DeleteParams::default()).await.unwrap();
    match st.try_next().await.unwrap() {
        Some(WatchEvent::Deleted(o)) => assert_eq!(o.metadata.name.as_deref(), Some("a")),
        other => panic!("unexpected {other:?}"),
    }
    drop(st);
    // bookmarks
    let mut st = numbers
        .watch(
            &WatchParams::default().timeout(5),
            &s.resource_version().to_string(),
        )
        .await
        .unwrap()
        .boxed();
    match st.try_next().await.unwrap() {
        Some(WatchEvent::Bookmark(b)) => {
            assert_eq!(
                b.metadata.resource_version,
                s.resource_version().to_string()
            )
        }
        other => panic!("unexpected {other:?}"),
    }
    drop(st);
    // label selector: leaving the selection is DELETED, entering it ADDED
    let lsel = WatchParams::default()
        .disable_bookmarks()
        .labels("pick=yes")
        .timeout(5);
    let mut st = numbers
        .watch(&lsel, &s.resource_version().to_string())
        .await
        .unwrap()
        .boxed();
    numbers
        .patch(
            "b",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"pick": "yes"}}})),
        )
        .await
        .unwrap();
    assert!(matches!(
        st.try_next().await.unwrap(),
        Some(WatchEvent::Added(_))
    ));
    numbers
        .patch(
            "b",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"pick": "no"}}})),
        )
        .await
        .unwrap();
    assert!(matches!(
        st.try_next().await.unwrap(),
        Some(WatchEvent::Deleted(_))
    ));
    drop(st);
    // compaction: 410 as an ERROR event
    s.compact();
    let mut st = numbers
        .watch(&WatchParams::default(), &rv_a)
        .await
        .unwrap()
        .boxed();
    match st.try_next().await.unwrap() {
        Some(WatchEvent::Error(e)) => {
            assert_eq!((e.code, e.reason.as_str()), (410, "Expired"));
            assert!(e.message.starts_with("too old resource version"));
        }
        other => panic!("unexpected {other:?}"),
    }
}

/// kube-apiserver streaming lists: `sendInitialEvents=true` with
/// `resourceVersionMatch=NotOlderThan` sends the state as ADDED events and ends the
/// initial batch with a BOOKMARK annotated `k8s.io/initial-events-end: "true"`.
#[tokio::test]
async fn streaming_list_initial_events_end() {
    let s = server().await;
    let numbers = api(&s, "Number", "numbers");
    numbers
        .create(
            &PostParams::default(),
            &obj("Number", "a", json!({"value": 1})),
        )
        .await
        .unwrap();
    let wp = WatchParams::default().initial_events().timeout(3);
    let mut st = numbers.watch(&wp, "").await.unwrap().boxed();
    assert!(matches!(
        st.try_next().await.unwrap(),
        Some(WatchEvent::Added(_))
    ));
    match st.try_next().await.unwrap() {
        Some(WatchEvent::Bookmark(b)) => {
            assert_eq!(
                b.metadata
                    .annotations
                    .get("k8s.io/initial-events-end")
                    .map(String::as_str),
                Some("true")
            )
        }
        other => panic!("unexpected {other:?}"),
    }
    // kube-runtime's watcher in streaming mode sees the object
    let st = watcher(
        numbers.clone(),
        watcher::Config::default().streaming_lists(),
    )
    .applied_objects()
    .boxed();
    let first = tokio::time::timeout(Duration::from_secs(5), st.into_future())
        .await
        .unwrap()
        .0;
    assert_eq!(first.unwrap().unwrap().metadata.name.as_deref(), Some("a"));
}

/// kube-apiserver + kube-runtime: closing every watch and compacting forces the watcher
/// to relist (410 on the re-watch) and it keeps seeing changes; metadata-only watches
/// (PartialObjectMetadata) work too.
#[tokio::test]
async fn watcher_survives_close_and_compaction() {
    let s = server().await;
    let numbers = api(&s, "Number", "numbers");
    let mut applied = watcher(numbers.clone(), watcher::Config::default())
        .applied_objects()
        .boxed();
    numbers
        .create(
            &PostParams::default(),
            &obj("Number", "a", json!({"value": 1})),
        )
        .await
        .unwrap();
    assert_eq!(next(&mut applied).await.metadata.name.as_deref(), Some("a"));
    s.compact();
    s.close_watches();
    numbers
        .create(
            &PostParams::default(),
            &obj("Number", "b", json!({"value": 2})),
        )
        .await
        .unwrap();
    let mut seen = vec![];
    while !seen.contains(&"b".to_string()) {
        seen.push(next(&mut applied).await.metadata.name.unwrap());
    }
    assert!(
        s.count(&RequestFilter::new().verb(Verb::List).resource("numbers")) >= 2,
        "relisted"
    );
    #[allow(deprecated)]
    let meta = kube::runtime::metadata_watcher(numbers.clone(), watcher::Config::default())
        .applied_objects()
        .boxed();
    let first = tokio::time::timeout(Duration::from_secs(5), meta.into_future())
        .await
        .unwrap()
        .0;
    assert!(first.unwrap().unwrap().metadata.name.is_some());
}

async fn next(
    st: &mut futures::stream::BoxStream<'static, Result<DynamicObject, watcher::Error>>,
) -> DynamicObject {
    loop {
        // kube-runtime surfaces the 410 as an error item, then relists
        match tokio::time::timeout(Duration::from_secs(5), st.next())
            .await
            .expect("an event within 5s")
            .expect("stream continues")
        {
            Ok(o) => return o,
            Err(e) => eprintln!("watcher error (expected after compaction): {e}"),
        }
    }
}

fn owned(
    kind: &str,
    name: &str,
    spec: Value,
    owner: &DynamicObject,
    owner_kind: &str,
    block: bool,
) -> DynamicObject {
    let mut o = obj(kind, name, spec);
    o.metadata.owner_references = Some(vec![
        serde_json::from_value(json!({
            "apiVersion": "math.example.com/v1beta1", "kind": owner_kind,
            "name": owner.metadata.name, "uid": owner.metadata.uid,
            "controller": true, "blockOwnerDeletion": block
        }))
        .unwrap(),
    ]);
    o
}

async fn gone(s: &TestServer, plural: &str, name: &str) {
    for _ in 0..300 {
        if s.object("math.example.com", plural, Some("default"), name)
            .is_none()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{plural}/{name} was not garbage-collected");
}

/// kube-controller-manager's garbage collector: background deletion removes dependents
/// (by owner UID, in the owner's namespace) transitively; objects whose owner UID does
/// not exist are collected.
#[tokio::test]
async fn gc_background_and_dangling() {
    let s = server().await;
    let (f, t, n) = (
        api(&s, "Fermat", "fermats"),
        api(&s, "Tuple", "tuples"),
        api(&s, "Number", "numbers"),
    );
    let pp = PostParams::default();
    let fermat = f
        .create(&pp, &obj("Fermat", "f", json!({"number": 5})))
        .await
        .unwrap();
    let tuple = t
        .create(
            &pp,
            &owned(
                "Tuple",
                "f-1-and-4",
                json!({"numbers": [1, 4]}),
                &fermat,
                "Fermat",
                true,
            ),
        )
        .await
        .unwrap();
    n.create(
        &pp,
        &owned(
            "Number",
            "f-1-and-4-0",
            json!({"value": 1}),
            &tuple,
            "Tuple",
            true,
        ),
    )
    .await
    .unwrap();
    f.delete("f", &DeleteParams::default()).await.unwrap();
    s.wait_for(
        "math.example.com",
        "tuples",
        Duration::from_secs(3),
        |objs| objs.is_empty(),
    )
    .await
    .unwrap();
    gone(&s, "tuples", "f-1-and-4").await;
    gone(&s, "numbers", "f-1-and-4-0").await;
    // an owner UID that never existed
    let mut fake = fermat.clone();
    fake.metadata.uid = Some("00000000-0000-0000-0000-000000000000".into());
    n.create(
        &pp,
        &owned(
            "Number",
            "orphan",
            json!({"value": 1}),
            &fake,
            "Fermat",
            false,
        ),
    )
    .await
    .unwrap();
    gone(&s, "numbers", "orphan").await;
}

/// kube-apiserver + GC: foreground deletion gives the owner a deletionTimestamp and the
/// `foregroundDeletion` finalizer until dependents with blockOwnerDeletion are gone;
/// orphan deletion removes the ownerReferences from dependents; finalizers keep an object
/// (with deletionTimestamp) until removed; preconditions mismatch is 409.
#[tokio::test]
async fn gc_foreground_orphan_finalizers_preconditions() {
    let s = server().await;
    let (t, n) = (api(&s, "Tuple", "tuples"), api(&s, "Number", "numbers"));
    let pp = PostParams::default();
    let tuple = t
        .create(&pp, &obj("Tuple", "t", json!({"numbers": [1]})))
        .await
        .unwrap();
    let mut child = owned("Number", "t-0", json!({"value": 1}), &tuple, "Tuple", true);
    child.metadata.finalizers = Some(vec!["test/hold".into()]);
    n.create(&pp, &child).await.unwrap();
    let r = t.delete("t", &DeleteParams::foreground()).await.unwrap();
    let pending = r.left().expect("object returned while pending");
    assert!(pending.metadata.deletion_timestamp.is_some());
    assert!(
        pending
            .metadata
            .finalizers
            .unwrap()
            .contains(&"foregroundDeletion".to_string())
    );
    // child is being deleted but held by its finalizer; the owner waits
    tokio::time::sleep(Duration::from_millis(100)).await;
    let c = n.get("t-0").await.unwrap();
    assert!(c.metadata.deletion_timestamp.is_some());
    assert!(
        t.get("t").await.is_ok(),
        "owner waits for blocking dependents"
    );
    n.patch(
        "t-0",
        &PatchParams::default(),
        &Patch::Json::<()>(
            serde_json::from_value(json!([{"op": "remove", "path": "/metadata/finalizers"}]))
                .unwrap(),
        ),
    )
    .await
    .unwrap();
    gone(&s, "numbers", "t-0").await;
    gone(&s, "tuples", "t").await;
    // orphan
    let tuple = t
        .create(&pp, &obj("Tuple", "o", json!({"numbers": [1]})))
        .await
        .unwrap();
    n.create(
        &pp,
        &owned("Number", "o-0", json!({"value": 1}), &tuple, "Tuple", true),
    )
    .await
    .unwrap();
    t.delete("o", &DeleteParams::orphan()).await.unwrap();
    gone(&s, "tuples", "o").await;
    let c = n.get("o-0").await.unwrap();
    assert!(c.metadata.owner_references.unwrap_or_default().is_empty());
    // preconditions
    let dp = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some("wrong".into()),
            resource_version: None,
        }),
        ..Default::default()
    };
    let e = api_err(n.delete("o-0", &dp).await.unwrap_err());
    assert_eq!((e.code, e.reason.as_str()), (409, "Conflict"));
    assert!(
        e.message
            .contains("Precondition failed: UID in precondition: wrong")
    );
    let dp = DeleteParams {
        preconditions: Some(Preconditions {
            uid: None,
            resource_version: Some("1".into()),
        }),
        ..Default::default()
    };
    assert_eq!(api_err(n.delete("o-0", &dp).await.unwrap_err()).code, 409);
    // deletecollection with a label selector
    n.patch(
        "o-0",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})),
    )
    .await
    .unwrap();
    n.create(&pp, &obj("Number", "keep", json!({"value": 2})))
        .await
        .unwrap();
    n.delete_collection(
        &DeleteParams::default(),
        &ListParams::default().labels("x=y"),
    )
    .await
    .unwrap();
    assert!(n.get("o-0").await.is_err());
    assert!(n.get("keep").await.is_ok());
}

/// kube-controller-manager's garbage collector reacts to every change of the owner graph,
/// not only to owner deletions: a dependent created after its owner was deleted is
/// collected; an update that points ownerReferences at a missing owner collects the
/// object; a reference to a missing owner is dropped while another owner lives; a
/// blocking dependent added while its owner's foreground deletion is pending is deleted
/// in the foreground and holds the owner; orphan deletion releases a dependent added to
/// the owner just before it, and the owner goes with its last finalizer.
#[tokio::test]
async fn gc_follows_changes_to_the_owner_graph() {
    let s = server().await;
    let (f, t, n) = (
        api(&s, "Fermat", "fermats"),
        api(&s, "Tuple", "tuples"),
        api(&s, "Number", "numbers"),
    );
    let pp = PostParams::default();
    let refs_of = |o: &DynamicObject| -> Vec<String> {
        o.metadata
            .owner_references
            .clone()
            .unwrap_or_default()
            .into_iter()
            .map(|r| r.uid)
            .collect()
    };
    // a dependent created after its owner is gone
    let fermat = f
        .create(&pp, &obj("Fermat", "f", json!({"number": 5})))
        .await
        .unwrap();
    f.delete("f", &DeleteParams::default()).await.unwrap();
    gone(&s, "fermats", "f").await;
    n.create(
        &pp,
        &owned(
            "Number",
            "late",
            json!({"value": 1}),
            &fermat,
            "Fermat",
            false,
        ),
    )
    .await
    .unwrap();
    gone(&s, "numbers", "late").await;
    // ownerReferences changed to a missing owner
    let tuple = t
        .create(&pp, &obj("Tuple", "t", json!({"numbers": [1]})))
        .await
        .unwrap();
    n.create(
        &pp,
        &owned(
            "Number",
            "moved",
            json!({"value": 1}),
            &tuple,
            "Tuple",
            false,
        ),
    )
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(n.get("moved").await.is_ok(), "a live owner keeps it");
    n.patch(
        "moved",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"ownerReferences": [{
            "apiVersion": "math.example.com/v1beta1", "kind": "Fermat", "name": "f",
            "uid": fermat.metadata.uid, "controller": true
        }]}})),
    )
    .await
    .unwrap();
    gone(&s, "numbers", "moved").await;
    // a missing owner next to a live one: only the reference goes
    let mut two = owned("Number", "two", json!({"value": 2}), &tuple, "Tuple", false);
    let mut missing = two.metadata.owner_references.clone().unwrap();
    missing[0].uid = "00000000-0000-0000-0000-000000000000".into();
    missing[0].controller = None;
    two.metadata
        .owner_references
        .as_mut()
        .unwrap()
        .extend(missing);
    n.create(&pp, &two).await.unwrap();
    let mut dropped = false;
    for _ in 0..300 {
        if refs_of(&n.get("two").await.unwrap()) == vec![tuple.metadata.uid.clone().unwrap()] {
            dropped = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(dropped, "the reference to the missing owner is dropped");
    // foreground: a blocking dependent added while the owner waits
    let fg = t
        .create(&pp, &obj("Tuple", "fg", json!({"numbers": [1]})))
        .await
        .unwrap();
    let mut held = owned("Number", "fg-held", json!({"value": 1}), &fg, "Tuple", true);
    held.metadata.finalizers = Some(vec!["test/hold".into()]);
    n.create(&pp, &held).await.unwrap();
    t.delete("fg", &DeleteParams::foreground()).await.unwrap();
    n.create(
        &pp,
        &owned("Number", "fg-late", json!({"value": 1}), &fg, "Tuple", true),
    )
    .await
    .unwrap();
    gone(&s, "numbers", "fg-late").await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        n.get("fg-held")
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_some(),
        "the held dependent is being deleted"
    );
    assert!(
        t.get("fg").await.is_ok(),
        "owner waits for the held dependent"
    );
    n.patch(
        "fg-held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    gone(&s, "numbers", "fg-held").await;
    gone(&s, "tuples", "fg").await;
    // orphan: every dependent is released, the owner goes with its last finalizer
    let mut or = obj("Tuple", "or", json!({"numbers": [1]}));
    or.metadata.finalizers = Some(vec!["test/hold".into()]);
    let or = t.create(&pp, &or).await.unwrap();
    for name in ["or-0", "or-1"] {
        n.create(
            &pp,
            &owned("Number", name, json!({"value": 1}), &or, "Tuple", true),
        )
        .await
        .unwrap();
    }
    t.delete("or", &DeleteParams::orphan()).await.unwrap();
    let mut released = false;
    for _ in 0..300 {
        let o = t.get("or").await.unwrap();
        if o.metadata.finalizers == Some(vec!["test/hold".into()]) {
            released = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        released,
        "the orphan finalizer is removed, the other one stays"
    );
    for name in ["or-0", "or-1"] {
        assert!(
            refs_of(&n.get(name).await.unwrap()).is_empty(),
            "{name} released"
        );
    }
    t.patch(
        "or",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    gone(&s, "tuples", "or").await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(n.get("or-0").await.is_ok() && n.get("or-1").await.is_ok());
    assert!(n.get("two").await.is_ok() && t.get("t").await.is_ok());
}

/// kube-apiserver dryRun=All: validates and answers as if written, persists nothing.
#[tokio::test]
async fn dry_run() {
    let s = server().await;
    let n = api(&s, "Number", "numbers");
    let rv = s.resource_version();
    let o = n
        .create(
            &PostParams {
                dry_run: true,
                ..Default::default()
            },
            &obj("Number", "d", json!({"value": 1})),
        )
        .await
        .unwrap();
    assert_eq!(o.metadata.name.as_deref(), Some("d"));
    assert!(n.get("d").await.is_err());
    let e = api_err(
        n.create(
            &PostParams {
                dry_run: true,
                ..Default::default()
            },
            &obj("Number", "d", json!({"value": "x"})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(e.code, 422);
    n.create(
        &PostParams::default(),
        &obj("Number", "d", json!({"value": 1})),
    )
    .await
    .unwrap();
    let pp = PatchParams {
        dry_run: true,
        ..Default::default()
    };
    let o = n
        .patch("d", &pp, &Patch::Merge(json!({"spec": {"value": 2}})))
        .await
        .unwrap();
    assert_eq!(o.data["spec"]["value"], 2);
    assert_eq!(n.get("d").await.unwrap().data["spec"]["value"], 1);
    n.delete(
        "d",
        &DeleteParams {
            dry_run: true,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert!(n.get("d").await.is_ok());
    assert_eq!(s.resource_version(), rv + 1, "only the real create wrote");
}

/// kube-apiserver server-side apply: creates when missing, records managedFields, a
/// different manager changing an owned field gets 409 Conflict naming the field and the
/// manager, force=true takes ownership, fields a manager stops applying are removed;
/// this is how Lease-based leader election (kube-lease-manager) gets mutual exclusion.
#[tokio::test]
async fn server_side_apply_and_leases() {
    let s = server().await;
    let leases: Api<Lease> = Api::default_namespaced(s.client());
    let apply = |holder: &str| {
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "leader"},
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15}})
    };
    let l = leases
        .patch(
            "leader",
            &PatchParams::apply("a"),
            &Patch::Apply(apply("a")),
        )
        .await
        .unwrap();
    assert_eq!(l.spec.unwrap().holder_identity.as_deref(), Some("a"));
    let mf = l.metadata.managed_fields.unwrap();
    assert_eq!(mf[0].manager.as_deref(), Some("a"));
    assert_eq!(mf[0].operation.as_deref(), Some("Apply"));
    let e = api_err(
        leases
            .patch(
                "leader",
                &PatchParams::apply("b"),
                &Patch::Apply(apply("b")),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!((e.code, e.reason.as_str()), (409, "Conflict"));
    assert!(e.message.contains("conflict with \"a\""), "{}", e.message);
    assert!(e.message.contains(".spec.holderIdentity"), "{}", e.message);
    // same values are shared, no conflict
    leases
        .patch(
            "leader",
            &PatchParams::apply("c"),
            &Patch::Apply(apply("a")),
        )
        .await
        .unwrap();
    // the holder renews with a strategic merge patch (as kube-lease-manager does)
    leases
        .patch(
            "leader",
            &PatchParams {
                field_manager: Some("a".into()),
                ..Default::default()
            },
            &Patch::Strategic(json!({"spec": {"renewTime": "2024-01-01T00:00:00.000000Z"}})),
        )
        .await
        .unwrap();
    let l = leases
        .patch(
            "leader",
            &PatchParams::apply("b").force(),
            &Patch::Apply(apply("b")),
        )
        .await
        .unwrap();
    assert_eq!(
        l.spec.as_ref().unwrap().holder_identity.as_deref(),
        Some("b")
    );
    assert!(l.spec.unwrap().renew_time.is_some());
    // release: strategic patch with nulls removes the fields
    let l = leases
        .patch(
            "leader",
            &PatchParams {
                field_manager: Some("b".into()),
                ..Default::default()
            },
            &Patch::Strategic(json!({"spec": {"holderIdentity": null}})),
        )
        .await
        .unwrap();
    assert!(l.spec.unwrap().holder_identity.is_none());
    // a manager that stops applying a field removes it
    let numbers = api(&s, "Number", "numbers");
    let cfg = json!({"apiVersion": "math.example.com/v1beta1", "kind": "Number",
        "metadata": {"name": "ssa", "labels": {"a": "1", "b": "2"}}, "spec": {"value": 1}});
    numbers
        .patch("ssa", &PatchParams::apply("m"), &Patch::Apply(&cfg))
        .await
        .unwrap();
    let cfg2 = json!({"apiVersion": "math.example.com/v1beta1", "kind": "Number",
        "metadata": {"name": "ssa", "labels": {"a": "1"}}, "spec": {"value": 1}});
    let o = numbers
        .patch("ssa", &PatchParams::apply("m"), &Patch::Apply(&cfg2))
        .await
        .unwrap();
    assert_eq!(o.metadata.labels.unwrap().len(), 1);
    // status via apply on the subresource
    let st = json!({"apiVersion": "math.example.com/v1beta1", "kind": "Number",
        "metadata": {"name": "ssa"}, "status": {"fizzBuzz": "1"}});
    let o = numbers
        .patch_status("ssa", &PatchParams::apply("m").force(), &Patch::Apply(&st))
        .await
        .unwrap();
    assert_eq!(o.data["status"]["fizzBuzz"], "1");
    // apply without fieldManager is rejected
    let e = api_err(
        numbers
            .patch("ssa", &PatchParams::default(), &Patch::Apply(&cfg2))
            .await
            .unwrap_err(),
    );
    assert_eq!(e.code, 422);
}

/// kube-apiserver events: events.k8s.io/v1 and core/v1 Events are two views of one
/// store (regarding<->involvedObject, note<->message, reportingController<->
/// reportingComponent), and core field selectors on involvedObject.* find them.
#[tokio::test]
async fn events_two_views_and_recorder() {
    let s = server().await;
    let numbers = api(&s, "Number", "numbers");
    let n = numbers
        .create(
            &PostParams::default(),
            &obj("Number", "n", json!({"value": 1})),
        )
        .await
        .unwrap();
    let reference = ObjectReference {
        api_version: Some("math.example.com/v1beta1".into()),
        kind: Some("Number".into()),
        name: n.metadata.name.clone(),
        namespace: Some("default".into()),
        uid: n.metadata.uid.clone(),
        ..Default::default()
    };
    let rec = Recorder::new(
        s.client(),
        Reporter {
            controller: "math-controller".into(),
            instance: None,
        },
    );
    let ev = Event {
        type_: EventType::Normal,
        reason: "Created".into(),
        note: Some("hello".into()),
        action: "Create".into(),
        secondary: None,
    };
    rec.publish(&ev, &reference).await.unwrap();
    rec.publish(&ev, &reference).await.unwrap(); // series: PATCH
    let core: Api<CoreEvent> = Api::default_namespaced(s.client());
    let sel = format!(
        "involvedObject.name=n,involvedObject.namespace=default,involvedObject.kind=Number,involvedObject.uid={}",
        n.metadata.uid.unwrap()
    );
    let l = core
        .list(&ListParams::default().fields(&sel))
        .await
        .unwrap();
    assert_eq!(l.items.len(), 1);
    let e = &l.items[0];
    assert_eq!(e.message.as_deref(), Some("hello"));
    assert_eq!(e.reporting_component.as_deref(), Some("math-controller"));
    assert_eq!(e.involved_object.name.as_deref(), Some("n"));
    assert_eq!(e.series.as_ref().map(|s| s.count), Some(Some(2)));
    // and the other way round
    core.create(
        &PostParams::default(),
        &serde_json::from_value(json!({
            "metadata": {"name": "legacy"}, "involvedObject": {"kind": "Number", "name": "n"},
            "message": "old style", "reason": "Legacy", "type": "Warning"
        }))
        .unwrap(),
    )
    .await
    .unwrap();
    let v1: Api<k8s_openapi::api::events::v1::Event> = Api::default_namespaced(s.client());
    let e = v1.get("legacy").await.unwrap();
    assert_eq!(e.note.as_deref(), Some("old style"));
    assert_eq!(e.regarding.unwrap().name.as_deref(), Some("n"));
    let l = v1
        .list(&ListParams::default().fields("regarding.name=n,reason=Legacy"))
        .await
        .unwrap();
    assert_eq!(l.items.len(), 1);
}

/// Test hooks: request log and counters by verb/resource/subresource/namespace, write
/// count and reset; injected faults answer with the code and a Status body; latency;
/// CRD deletion removes its objects and its discovery entry.
#[tokio::test]
async fn request_log_faults_latency_and_crd_deletion() {
    let s = server().await;
    let numbers = api(&s, "Number", "numbers");
    s.reset_requests();
    numbers
        .create(
            &PostParams::default(),
            &obj("Number", "n", json!({"value": 1})),
        )
        .await
        .unwrap();
    numbers.get("n").await.unwrap();
    numbers
        .patch_status(
            "n",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"isPrime": false}})),
        )
        .await
        .unwrap();
    assert_eq!(s.write_count(), 2);
    assert_eq!(
        s.count(&RequestFilter::new().verb(Verb::Get).resource("numbers")),
        1
    );
    assert_eq!(
        s.count(&RequestFilter::new().verb(Verb::Patch).subresource("status")),
        1
    );
    assert_eq!(
        s.count(&RequestFilter::new().namespace("default").main_resource()),
        2
    );
    let r = s.requests();
    assert_eq!(r[0].verb, Verb::Create);
    assert_eq!(r[0].status, 201);
    assert_eq!(r[0].group, "math.example.com");
    s.reset_requests();
    assert_eq!(s.requests().len(), 0);
    s.fail_next(
        RequestFilter::new().verb(Verb::Patch).resource("numbers"),
        2,
        500,
    );
    s.fail_next(RequestFilter::new().verb(Verb::Get), 1, 429);
    let pp = PatchParams::default();
    let p = Patch::Merge(json!({"spec": {"value": 2}}));
    let e = api_err(numbers.patch("n", &pp, &p).await.unwrap_err());
    assert_eq!((e.code, e.reason.as_str()), (500, "InternalError"));
    assert_eq!(
        api_err(numbers.patch("n", &pp, &p).await.unwrap_err()).code,
        500
    );
    numbers.patch("n", &pp, &p).await.unwrap();
    // kube-rs retries 429 (honouring Retry-After), so the get succeeds on the second try
    s.reset_requests();
    numbers.get("n").await.unwrap();
    let codes: Vec<u16> = s.requests().iter().map(|r| r.status).collect();
    assert_eq!(codes, [429, 200]);
    s.set_latency(
        RequestFilter::new().verb(Verb::Get),
        Duration::from_millis(200),
    );
    let t0 = std::time::Instant::now();
    numbers.get("n").await.unwrap();
    assert!(t0.elapsed() >= Duration::from_millis(200));
    s.set_latency(RequestFilter::new().verb(Verb::Get), Duration::ZERO);
    // deleting the CRD deletes its objects and the resource
    let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(s.client());
    let crd = crds.get("numbers.math.example.com").await.unwrap();
    let conds = crd.status.unwrap().conditions.unwrap();
    assert!(
        conds
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True")
    );
    crds.delete("numbers.math.example.com", &DeleteParams::default())
        .await
        .unwrap();
    // Its finalizer controller deletes the instances, then the CRD (`crd_lifecycle.rs`).
    s.wait_for(
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        Duration::from_secs(10),
        |crds| {
            !crds
                .iter()
                .any(|c| c["metadata"]["name"] == "numbers.math.example.com")
        },
    )
    .await
    .unwrap();
    assert!(s.objects("math.example.com", "numbers", None).is_empty());
    assert_eq!(api_err(numbers.get("n").await.unwrap_err()).code, 404);
}

/// kube-apiserver discovery: /api, /apis and /apis/<group>/<version> list kinds, plurals,
/// short names, categories and the status subresource; kube's Discovery resolves them.
#[tokio::test]
async fn discovery() {
    let s = server().await;
    let d = kube::discovery::Discovery::new(s.client())
        .run()
        .await
        .unwrap();
    let (ar, caps) = d
        .resolve_gvk(&GroupVersionKind::gvk(
            "math.example.com",
            "v1beta1",
            "Number",
        ))
        .expect("Number is discoverable");
    assert_eq!(ar.plural, "numbers");
    assert!(
        caps.subresources
            .iter()
            .any(|(r, _)| r.plural == "numbers/status" || r.plural == "status")
    );
    assert!(
        d.has_group("coordination.k8s.io") && d.has_group("events.k8s.io") && d.has_group("apps")
    );
    let v = s.client().apiserver_version().await.unwrap();
    assert_eq!(v.major, "1");
    let raw: Value = reqwest_get(&s, "/apis/math.example.com/v1beta1").await;
    let num = raw["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "numbers")
        .unwrap();
    assert_eq!(num["shortNames"], json!(["num"]));
    assert_eq!(num["categories"], json!(["math"]));
}

async fn reqwest_get(s: &TestServer, path: &str) -> Value {
    let req = http::Request::get(path).body(Vec::new()).unwrap();
    s.client().request::<Value>(req).await.unwrap()
}
