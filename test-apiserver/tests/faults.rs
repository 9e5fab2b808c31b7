//! Outages and a write-throughput cap: what a client sees when kube-apiserver is down or
//! loaded.

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use std::time::Duration;
use test_apiserver::{RequestFilter, ServerOptions, TestServer, Verb};

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(serde_json::json!({"metadata": {"name": name}})).unwrap()
}

/// Every namespace holds kube-controller-manager's `kube-root-ca.crt`; these tests count
/// their own ConfigMaps.
const OWN: &str = "metadata.name!=kube-root-ca.crt";

fn own() -> ListParams {
    ListParams::default().fields(OWN)
}

fn test_config_maps(s: &TestServer) -> Vec<serde_json::Value> {
    s.objects("", "configmaps", Some("default"))
        .into_iter()
        .filter(|o| {
            o.pointer("/metadata/name").and_then(|n| n.as_str()) != Some("kube-root-ca.crt")
        })
        .collect()
}

fn is_connect_error(e: &kube::Error) -> bool {
    // kube reports a refused connection as a hyper-util client error whose source chain
    // holds the io error.
    let mut src: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = src {
        if let Some(io) = s.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::ConnectionRefused
        {
            return true;
        }
        src = s.source();
    }
    false
}

/// kube-apiserver killed and restarted on etcd: connections are refused meanwhile; after
/// it the same objects come back with the same resourceVersions.
#[tokio::test]
async fn an_outage_refuses_connections_and_keeps_every_object() {
    let s = TestServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let created = api.create(&PostParams::default(), &cm("a")).await.unwrap();
    let mut watch = api
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    assert!(matches!(watch.next().await, Some(Ok(WatchEvent::Added(_)))));

    s.stop();
    assert!(s.is_down());
    // The open watch ends (reset or end of stream), it does not hang.
    let ended = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(Ok(_)) = watch.next().await {}
    })
    .await;
    assert!(ended.is_ok(), "the watch survived the outage");
    // A fresh client cannot connect at all.
    let err = Api::<ConfigMap>::namespaced(s.client(), "default")
        .get("a")
        .await
        .unwrap_err();
    assert!(is_connect_error(&err), "not a connect error: {err:?}");

    s.resume();
    let got = api.get("a").await.unwrap();
    assert_eq!(
        got.metadata.resource_version,
        created.metadata.resource_version
    );
    api.create(&PostParams::default(), &cm("b")).await.unwrap();
    assert_eq!(test_config_maps(&s).len(), 2);
}

/// A control-plane upgrade: the server is down when the client starts and comes up later.
#[tokio::test]
async fn a_server_started_down_serves_after_resume() {
    let s = TestServer::start_with(ServerOptions {
        start_down: true,
        ..Default::default()
    })
    .await
    .unwrap();
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let err = api.list(&Default::default()).await.unwrap_err();
    assert!(is_connect_error(&err), "not a connect error: {err:?}");
    // `outage` ends on its own.
    s.outage(Duration::from_millis(300));
    let back = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if let Ok(l) = api.list(&own()).await {
                return l;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the server came back");
    assert!(back.items.is_empty());
    assert!(!s.is_down());
}

/// A loaded apiserver: writes over the cap queue (they are slow, never refused).
#[tokio::test]
async fn writes_over_the_cap_queue_and_all_succeed() {
    let s = TestServer::start().await.unwrap();
    s.set_write_rate(50);
    s.set_latency(
        RequestFilter::new().verb(Verb::Create),
        Duration::from_millis(5),
    );
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let writes = (0..40).map(|i| {
        let api = api.clone();
        async move {
            api.create(&PostParams::default(), &cm(&format!("c{i}")))
                .await
        }
    });
    let results = futures::future::join_all(writes).await;
    assert!(results.iter().all(Result::is_ok));
    assert_eq!(s.count(&RequestFilter::new().verb(Verb::Create)), 40);
    assert_eq!(test_config_maps(&s).len(), 40);
    // 40 writes at 50/s: the last one waited for its slot (0.78 s after the first).
    let longest = s.requests().iter().map(|r| r.duration).max().unwrap();
    assert!(longest >= Duration::from_millis(700), "{longest:?}");
}

/// Under the cap the server is one queue of busy time: time charged from outside (the
/// benchmark charges the manager's CPU) delays the writes queued behind it.
#[tokio::test]
async fn time_charged_to_a_capped_server_delays_the_next_write() {
    let s = TestServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    // No cap: a charge is nothing.
    s.charge(Duration::from_secs(30));
    api.create(&PostParams::default(), &cm("free"))
        .await
        .unwrap();
    s.set_write_rate(1000);
    s.charge(Duration::from_millis(500));
    api.create(&PostParams::default(), &cm("late"))
        .await
        .unwrap();
    let took: Vec<Duration> = s
        .requests()
        .iter()
        .filter(|r| r.verb == Verb::Create)
        .map(|r| r.duration)
        .collect();
    let [free, late] = took[..] else {
        panic!("{took:?}")
    };
    assert!(free < Duration::from_secs(30), "{free:?}");
    assert!(late >= Duration::from_millis(450), "{late:?}");
}

/// A write can weigh more (or less) than one slot under the cap.
#[tokio::test]
async fn a_heavier_write_takes_more_of_the_capped_servers_time() {
    let s = TestServer::start().await.unwrap();
    s.set_write_rate(100);
    s.set_write_weight(RequestFilter::new().resource("configmaps"), 50.0);
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    api.create(&PostParams::default(), &cm("first"))
        .await
        .unwrap();
    api.create(&PostParams::default(), &cm("second"))
        .await
        .unwrap();
    // The first took 50 slots of 10 ms: the second waited for them.
    let second = s
        .requests()
        .iter()
        .filter(|r| r.verb == Verb::Create)
        .map(|r| r.duration)
        .nth(1)
        .unwrap();
    assert!(second >= Duration::from_millis(400), "{second:?}");
}

/// Each watch event delivered takes its cost from the capped server's time: writes that
/// every watcher sees come slower than writes nobody watches.
#[tokio::test]
async fn watch_events_take_the_capped_servers_time() {
    let s = TestServer::start().await.unwrap();
    s.set_write_rate(1000);
    s.set_watch_event_cost(Duration::from_millis(20));
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let mut watch = api
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    let drain = tokio::spawn(async move { while watch.next().await.is_some() {} });
    for i in 0..10 {
        api.create(&PostParams::default(), &cm(&format!("w{i}")))
            .await
            .unwrap();
    }
    drain.abort();
    // Each create after the first waited for the 20 ms its predecessor's event took.
    let waited: Duration = s
        .requests()
        .iter()
        .filter(|r| r.verb == Verb::Create)
        .map(|r| r.duration)
        .sum();
    assert!(waited >= Duration::from_millis(150), "{waited:?}");
}

async fn until_back<T, F, Fut>(mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, kube::Error>>,
{
    tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if let Ok(v) = f().await {
                return v;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the server came back")
}

/// A kube-apiserver restart loses the watch cache (it is rebuilt from etcd by a list):
/// the cacher answers a watch from an older resourceVersion with HTTP 200 and one
/// `ERROR` event, 410 Expired (`watch_cache.go`: `too old resource version: %d (%d)`,
/// the second number the cache's list resourceVersion; measured on the real control
/// plane: every resuming watch gets it within 0.1 s of the return). Objects, their
/// resourceVersions and etcd's history are kept: lists, `continue` tokens and watches from
/// the current resourceVersion work.
#[tokio::test]
async fn a_restart_answers_old_watches_410_expired() {
    let s = TestServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let a = api.create(&PostParams::default(), &cm("a")).await.unwrap();
    api.create(&PostParams::default(), &cm("b")).await.unwrap();
    let seen = a.metadata.resource_version.clone().unwrap();
    // Before the restart, a watch from `seen` replays what came after it.
    let mut w = api
        .watch(&WatchParams::default().timeout(2), &seen)
        .await
        .unwrap()
        .boxed();
    assert!(matches!(w.next().await, Some(Ok(WatchEvent::Added(_)))));
    drop(w);
    let page = api
        .list(&kube::api::ListParams::default().limit(1))
        .await
        .unwrap();
    let token = page.metadata.continue_.clone().unwrap();

    s.restart(Duration::from_millis(200));
    assert!(s.is_down());
    let listed = until_back(|| {
        let api = api.clone();
        async move { api.list(&own()).await }
    })
    .await;
    assert_eq!(listed.items.len(), 2, "etcd kept every object");
    let got = api.get("a").await.unwrap();
    assert_eq!(got.metadata.resource_version, a.metadata.resource_version);
    let current = listed.metadata.resource_version.clone().unwrap();

    let mut w = api
        .watch(&WatchParams::default().timeout(2), &seen)
        .await
        .unwrap()
        .boxed();
    match w.next().await {
        Some(Ok(WatchEvent::Error(e))) => {
            assert_eq!((e.code, e.reason.as_str()), (410, "Expired"));
            assert_eq!(
                e.message,
                format!("too old resource version: {seen} ({current})")
            );
        }
        other => panic!("expected 410 Expired, got {other:?}"),
    }
    assert!(w.next().await.is_none(), "the watch ends after the error");

    // The continue token of a list begun before the restart still pages (etcd).
    let rest = api
        .list(
            &kube::api::ListParams::default()
                .limit(1)
                .continue_token(&token),
        )
        .await
        .unwrap();
    assert_eq!(rest.items.len(), 1);

    // A watch from the current resourceVersion sees what comes next.
    let mut w = api
        .watch(&WatchParams::default().timeout(5), &current)
        .await
        .unwrap()
        .boxed();
    api.create(&PostParams::default(), &cm("c")).await.unwrap();
    match w.next().await {
        Some(Ok(WatchEvent::Added(o))) => assert_eq!(o.metadata.name.as_deref(), Some("c")),
        other => panic!("expected ADDED c, got {other:?}"),
    }
}

/// kube-runtime's watcher relists after the restart and carries on: its store ends with
/// what was written before, during (nothing) and after the restart.
#[tokio::test]
async fn a_watcher_relists_after_a_restart() {
    use kube::runtime::{WatchStreamExt, reflector, watcher};
    let s = TestServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    api.create(&PostParams::default(), &cm("before"))
        .await
        .unwrap();
    let (reader, writer) = reflector::store();
    let stream = reflector(
        writer,
        watcher(api.clone(), watcher::Config::default().fields(OWN)),
    )
    .applied_objects()
    .boxed();
    let task = tokio::spawn(async move {
        let mut stream = stream;
        while stream.next().await.is_some() {}
    });
    reader.wait_until_ready().await.unwrap();
    s.restart(Duration::from_millis(100));
    until_back(|| {
        let api = api.clone();
        async move { api.create(&PostParams::default(), &cm("after")).await }
    })
    .await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while reader.state().len() != 2 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "store: {:?}",
            reader
                .state()
                .iter()
                .map(|c| c.metadata.name.clone())
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let relisted = s
        .requests()
        .iter()
        .filter(|r| r.verb == Verb::List && r.resource == "configmaps")
        .count();
    assert!(relisted >= 2, "the watcher listed again ({relisted} lists)");
    task.abort();
}

/// Right after a restart kube-apiserver serves its built-in resources but not yet the
/// custom ones: until its CRD informer has synced, their paths (and their group's
/// discovery) fall through to the not-found handler, which answers 503 while "mux and
/// discovery" are incomplete (`apiserver/pkg/util/notfoundhandler`,
/// `apiextensions-apiserver/pkg/apiserver/apiserver.go`'s `CRDInformerHasNotSynced`):
///
/// ```text
/// 503 {"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
///      "message":"the request has been made before all known HTTP paths have been installed, please try again",
///      "reason":"ServiceUnavailable","details":{"retryAfterSeconds":5},"code":503}
/// Retry-After: 5
/// ```
///
/// kube-rs's client retries a 503 after the `Retry-After` it names, 5 s.
#[tokio::test]
async fn custom_resources_can_be_unavailable_after_a_restart() {
    let s = TestServer::start().await.unwrap();
    s.apply_crd_yaml(include_str!("fixtures/crds.yaml"))
        .unwrap();
    s.restart_with(test_apiserver::Restart {
        downtime: Duration::from_millis(100),
        custom_resources_unavailable: Duration::from_secs(30),
    });
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    until_back(|| {
        let cms = cms.clone();
        async move { cms.list(&Default::default()).await }
    })
    .await;
    let mut config = kube::Config::new(s.url().parse().unwrap());
    config.default_retry = false;
    let raw = kube::Client::try_from(config).unwrap();
    for path in [
        "/apis/math.example.com/v1beta1/namespaces/default/numbers",
        "/apis/math.example.com/v1beta1",
    ] {
        let req = http::Request::get(path).body(Vec::new()).unwrap();
        let resp = raw.send(req.map(Into::into)).await.unwrap();
        assert_eq!(resp.status().as_u16(), 503, "{path}");
        assert_eq!(
            resp.headers()
                .get("Retry-After")
                .and_then(|h| h.to_str().ok()),
            Some("5")
        );
        let body: serde_json::Value =
            serde_json::from_slice(&resp.into_body().collect_bytes().await.unwrap()).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
                "status": "Failure",
                "message": "the request has been made before all known HTTP paths have been installed, please try again",
                "reason": "ServiceUnavailable", "details": {"retryAfterSeconds": 5}, "code": 503})
        );
    }
    // Built-in resources are served meanwhile.
    cms.create(&PostParams::default(), &cm("x")).await.unwrap();
}

/// An owner and `n` ConfigMaps it owns, `dependent-0` … (background deletion).
async fn owner_with_dependents(api: &Api<ConfigMap>, owner: &str, n: usize) {
    let created = api
        .create(&PostParams::default(), &cm(owner))
        .await
        .unwrap();
    let uid = created.metadata.uid.clone().unwrap();
    for i in 0..n {
        let dependent: ConfigMap = serde_json::from_value(serde_json::json!({"metadata": {
            "name": format!("dependent-{i}"),
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": owner, "uid": uid}],
        }}))
        .unwrap();
        api.create(&PostParams::default(), &dependent)
            .await
            .unwrap();
    }
}

/// kube-controller-manager's garbage collector under its client limit (`--kube-api-qps`): a
/// few deletions a second. Twelve dependents of a deleted owner go a few at a time, in order
/// of the limit, and all of them in the end.
///
/// The same on a real kube-apiserver + kube-controller-manager v1.24 at the default limit (20
/// a second, burst 30): 300 ConfigMaps owned by a ConfigMap deleted with
/// `--cascade=background` were counted every 2.1 s: 288 left after 0.2 s, then 243, 200, 160,
/// 120, 80, 40 and none after 15.0 s: 19–20 deletions a second, the client's limit spent one
/// request per deletion, as `set_gc_rate` spends one token.
#[tokio::test]
async fn a_rate_limited_garbage_collector_deletes_a_few_dependents_at_a_time() {
    let s = TestServer::start().await.unwrap();
    s.set_gc_rate(4);
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    owner_with_dependents(&api, "owner", 12).await;
    api.delete("owner", &Default::default()).await.unwrap();
    let left = || test_config_maps(&s).len();
    // The bucket holds a second's worth (4): the rest waits for the next tokens.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let soon = left();
    assert!(
        (7..=12).contains(&soon),
        "{soon} of the 12 dependents left right after the owner's deletion"
    );
    let start = std::time::Instant::now();
    while left() > 0 {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{} dependents still there",
            left()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Without the limit, all of them at once.
    s.set_gc_rate(0);
    owner_with_dependents(&api, "owner-2", 12).await;
    api.delete("owner-2", &Default::default()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        left(),
        0,
        "without the limit the collector deletes them at once"
    );
}
