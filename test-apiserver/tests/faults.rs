//! Outages and a write-throughput cap: what a client sees when kube-apiserver is down or
//! loaded.

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams, WatchEvent, WatchParams};
use std::time::Duration;
use test_apiserver::{RequestFilter, ServerOptions, TestServer, Verb};

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(serde_json::json!({"metadata": {"name": name}})).unwrap()
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
    assert_eq!(s.objects("", "configmaps", Some("default")).len(), 2);
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
            if let Ok(l) = api.list(&Default::default()).await {
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
    assert_eq!(s.objects("", "configmaps", Some("default")).len(), 40);
    // 40 writes at 50/s: the last one waited for its slot (0.78 s after the first).
    let longest = s.requests().iter().map(|r| r.duration).max().unwrap();
    assert!(longest >= Duration::from_millis(700), "{longest:?}");
}
