//! A busy, shared production kube-apiserver: expired tokens (401), a flow throttled by API
//! Priority and Fairness (429 with `Retry-After`), a lagging watch cache (a list at
//! `resourceVersion=0` from an older snapshot) and resourceVersions a watch cannot resume
//! from (410).

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use test_apiserver::{ANONYMOUS, TestServer, UserInfo};

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(serde_json::json!({"metadata": {"name": name}})).unwrap()
}

/// A client that sends `token`, with kube's own retries off (the test sees every answer).
async fn client_with_token(s: &TestServer, token: &str) -> kube::Client {
    let yaml = format!(
        "apiVersion: v1
kind: Config
clusters:
- name: t
  cluster: {{server: '{}'}}
contexts:
- name: t
  context: {{cluster: t, user: u, namespace: default}}
current-context: t
users:
- name: u
  user: {{token: {token}}}
",
        s.url()
    );
    let kubeconfig = Kubeconfig::from_yaml(&yaml).unwrap();
    let mut config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .unwrap();
    config.default_retry = false;
    kube::Client::try_from(config).unwrap()
}

fn user(name: &str) -> UserInfo {
    UserInfo {
        username: name.to_string(),
        uid: name.to_string(),
        groups: vec![],
    }
}

#[tokio::test]
async fn an_expired_token_answers_401_and_a_new_one_is_served() {
    let s = TestServer::start().await.unwrap();
    let old = client_with_token(&s, "old-token").await;
    let api: Api<ConfigMap> = Api::namespaced(old, "default");
    api.create(&PostParams::default(), &cm("a")).await.unwrap();

    s.expire_token("old-token");
    match api.get("a").await {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 401);
            assert_eq!(status.reason, "Unauthorized");
            assert_eq!(status.message, "Unauthorized");
        }
        other => panic!("expected 401, got {other:?}"),
    }
    // A watch is refused too (at its start, as authentication comes before everything).
    assert!(api.watch(&WatchParams::default(), "0").await.is_err());

    let new = Api::<ConfigMap>::namespaced(client_with_token(&s, "new-token").await, "default");
    assert!(new.get("a").await.is_ok());
}

#[tokio::test]
async fn a_throttled_flow_gets_429_at_its_share_and_others_do_not() {
    let s = TestServer::start().await.unwrap();
    s.add_token("manager-token", user("system:serviceaccount:math:manager"));
    let manager =
        Api::<ConfigMap>::namespaced(client_with_token(&s, "manager-token").await, "default");
    let other = Api::<ConfigMap>::namespaced(s.client(), "default");
    s.throttle_flow("system:serviceaccount:math:manager", 0.5, 3);

    let mut throttled = 0;
    for i in 0..10 {
        match manager
            .create(&PostParams::default(), &cm(&format!("m{i}")))
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(status)) => {
                assert_eq!(status.code, 429);
                throttled += 1;
            }
            Err(e) => panic!("unexpected {e:?}"),
        }
    }
    assert_eq!(throttled, 5, "exactly half of the flow's requests");
    // The anonymous flow (no token) is not throttled.
    for i in 0..10 {
        other
            .create(&PostParams::default(), &cm(&format!("o{i}")))
            .await
            .unwrap();
    }
    // Watches are long-running: never throttled.
    for _ in 0..4 {
        assert!(
            manager
                .watch(&WatchParams::default().timeout(1), "0")
                .await
                .is_ok()
        );
    }

    s.throttle_flow(ANONYMOUS, 1.0, 7);
    let raw = reqwest_like_get(&s.url()).await;
    assert_eq!(raw.0, 429);
    assert_eq!(raw.1.as_deref(), Some("7"));
}

/// A plain GET of the ConfigMaps, without kube's client: the status and Retry-After.
async fn reqwest_like_get(url: &str) -> (u16, Option<String>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = url.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "GET /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    let code = answer
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let retry_after = answer.lines().find_map(|l| {
        l.to_ascii_lowercase()
            .strip_prefix("retry-after:")
            .map(|v| v.trim().to_string())
    });
    (code, retry_after)
}

#[tokio::test]
async fn a_lagging_cache_lists_an_old_snapshot_at_rv_0_and_etcd_lists_the_truth() {
    let s = TestServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    api.create(&PostParams::default(), &cm("old"))
        .await
        .unwrap();
    let lagging_at = s.lag_lists("configmaps");
    api.create(&PostParams::default(), &cm("new"))
        .await
        .unwrap();

    // Every namespace also holds kube-root-ca.crt, as on a real cluster: not this test's.
    let names = |l: &kube::api::ObjectList<ConfigMap>| {
        l.items
            .iter()
            .filter_map(|c| c.metadata.name.clone())
            .filter(|n| n != "kube-root-ca.crt")
            .collect::<Vec<_>>()
    };
    let cached = api.list(&ListParams::default().match_any()).await.unwrap();
    assert_eq!(names(&cached), ["old"]);
    assert_eq!(
        cached.metadata.resource_version,
        Some(lagging_at.to_string())
    );
    let consistent = api.list(&ListParams::default()).await.unwrap();
    assert_eq!(names(&consistent), ["new", "old"]);

    s.catch_up_lists();
    let cached = api.list(&ListParams::default().match_any()).await.unwrap();
    assert_eq!(names(&cached), ["new", "old"]);
}

#[tokio::test]
async fn an_expired_resource_version_answers_410_to_watches() {
    let s = TestServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let a = api.create(&PostParams::default(), &cm("a")).await.unwrap();
    let rv = a.metadata.resource_version.clone().unwrap();
    let at: u64 = rv.parse().unwrap();
    s.expire_resource_versions(at..=at);
    let mut w = api
        .watch(&WatchParams::default().timeout(2), &rv)
        .await
        .unwrap()
        .boxed();
    match w.next().await {
        Some(Ok(WatchEvent::Error(e))) => assert_eq!((e.code, e.reason.as_str()), (410, "Expired")),
        other => panic!("expected 410 Expired, got {other:?}"),
    }
    // Another resourceVersion still resumes.
    api.create(&PostParams::default(), &cm("b")).await.unwrap();
    let before = (rv.parse::<u64>().unwrap() - 1).to_string();
    let mut w = api
        .watch(&WatchParams::default().timeout(2), &before)
        .await
        .unwrap()
        .boxed();
    assert!(matches!(w.next().await, Some(Ok(WatchEvent::Added(_)))));
}
