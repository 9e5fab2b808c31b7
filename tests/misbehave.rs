//! A cluster that misbehaves (issue 25, items 4–7): a watch cache that lags behind etcd, a
//! resourceVersion that answers 410 again and again, a bearer token rotated under the
//! manager, a flow that priority and fairness throttles. Each test shows what a user sees:
//! children exact, requests counted in the test server's log, the status the parent shows.

mod common;

use std::time::Duration;

use common::*;
use kube::api::{Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use math_controller::metrics::Metrics;
use math_controller::ops::client;
use math_controller::ops::manager::Options;
use serde_json::json;
use test_apiserver::{RequestFilter, Verb};

fn lists_of(resource: &str) -> RequestFilter {
    RequestFilter::new().verb(Verb::List).resource(resource)
}

/// Item 6: the Numbers' watch cache lags at a resourceVersion that its watches can no longer
/// resume from (HA apiservers, or one just restarted). A relist at `resourceVersion=0` would
/// get that resourceVersion back and the watch a 410 again, forever, with no pause; after a
/// 410 the manager lists from etcd instead, and carries on.
#[tokio::test]
async fn a_410_loop_is_broken_by_a_consistent_list() {
    let h = Harness::start().await;
    h.create_tuple("t", vec![4]).await;
    wait_for(&h.tuples(), "t", tuple_ready).await;
    h.server.lag_lists("numbers");
    // Every resourceVersion so far is gone for watches, the lagging cache's included.
    h.server
        .expire_resource_versions(0..=h.server.resource_version());
    h.server.reset_requests();
    h.server.close_watches();
    // A new Tuple after the 410: its Numbers are only seen through a working Number watch.
    h.create_tuple("u", vec![9, 16]).await;
    let number_lists = lists_of("numbers");
    eventually(
        "u Ready, or the Numbers relisted 50 times",
        || async {
            let ready = h
                .tuples()
                .get("u")
                .await
                .ok()
                .is_some_and(|u| tuple_ready(&u));
            Some((ready, h.server.count(&number_lists)))
        },
        |(ready, lists)| *ready || *lists >= 50,
    )
    .await;
    let lists = h.server.count(&number_lists);
    assert!(
        lists <= 3,
        "the Numbers were listed {lists} times after one 410"
    );
    let stale_lists = h
        .server
        .requests()
        .iter()
        .filter(|r| number_lists.matches(r) && r.query.contains("resourceVersion=0"))
        .count();
    assert_eq!(stale_lists, 0, "a relist after a 410 reads from etcd");
    wait_for(&h.tuples(), "u", tuple_ready).await;
    wait_for(&h.tuples(), "t", tuple_ready).await;
}

/// Item 6: a server whose every watch answers 410 (a proxy or an apiserver whose watch
/// cache is broken): each 410 costs a full list and a full fan-out to the controllers, so
/// after the first (relisted at once) they come with a growing pause, as client-go's
/// reflector pauses (800 ms, doubling, up to 30 s); and once watches work again the manager
/// carries on.
#[tokio::test]
async fn repeated_410s_relist_with_a_growing_pause() {
    let h = Harness::start().await;
    h.create_tuple("t", vec![4]).await;
    wait_for(&h.tuples(), "t", tuple_ready).await;
    h.server.expire_resource_versions(0..=u64::MAX);
    h.server.reset_requests();
    h.server.close_watches();
    tokio::time::sleep(Duration::from_secs(3)).await;
    // At once, after 0.8 s, after 1.6 s more: 3 lists in 3 s; with no pause, hundreds.
    let lists = h.server.count(&lists_of("numbers"));
    assert!(lists <= 5, "the Numbers were listed {lists} times in 3 s");
    h.server.clear_faults();
    h.create_tuple("u", vec![9]).await;
    wait_for(&h.tuples(), "u", tuple_ready).await;
}

/// Item 7: the Numbers' watch cache lags behind the Numbers a Tuple just created; a 410
/// makes the manager relist. A list from that cache would show the Tuple without its new
/// Numbers, and the Tuple would create them again (409 AlreadyExists, one per child): the
/// relist reads from etcd, which has them.
#[tokio::test]
async fn a_relist_after_a_410_does_not_create_children_again() {
    let h = Harness::start().await;
    h.create_tuple("t", vec![4]).await;
    wait_for(&h.tuples(), "t", tuple_ready).await;
    let stale = h.server.lag_lists("numbers");
    h.tuples()
        .patch(
            "t",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"numbers": [4, 9, 16]}})),
        )
        .await
        .expect("patch t");
    wait_for(&h.tuples(), "t", |t| {
        tuple_ready(t)
            && t.status
                .as_ref()
                .is_some_and(|s| s.desired_numbers == Some(3))
    })
    .await;
    // Every watch resuming from after the snapshot answers 410; the snapshot's own
    // resourceVersion still resumes (the lagging cache holds the history after it).
    h.server
        .expire_resource_versions(stale + 1..=h.server.resource_version());
    // The Numbers' new watch (which replays what the lagging cache missed) takes a moment
    // to open: the Tuple is reconciled from the relisted cache before it.
    let number_watches = RequestFilter::new().verb(Verb::Watch).resource("numbers");
    h.server
        .set_latency(number_watches.clone(), Duration::from_millis(1500));
    h.server.reset_requests();
    h.server.close_watches();
    let number_lists = lists_of("numbers");
    eventually(
        "the Numbers relisted",
        || async { Some(h.server.count(&number_lists)) },
        |n| *n >= 1,
    )
    .await;
    h.server.set_latency(number_watches, Duration::ZERO);
    // A change after the relist, so that the test knows the Tuple was reconciled since.
    h.tuples()
        .patch(
            "t",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"numbers": [4, 9, 16, 25]}})),
        )
        .await
        .expect("patch t again");
    wait_for(&h.tuples(), "t", |t| {
        tuple_ready(t)
            && t.status
                .as_ref()
                .is_some_and(|s| s.desired_numbers == Some(4))
    })
    .await;
    let creates: Vec<String> = h
        .server
        .requests()
        .iter()
        .filter(|r| r.verb == Verb::Create && r.resource == "numbers")
        .map(|r| format!("{} {}", r.status, r.path))
        .collect();
    assert_eq!(
        creates.len(),
        1,
        "Number creates after the relist: {creates:?}"
    );
}

/// A client of the manager's own making (its retry, its token file handling) on a kubeconfig
/// whose user reads its bearer token from `token_file`.
async fn manager_client(
    server: &test_apiserver::TestServer,
    token_file: &std::path::Path,
    metrics: &Metrics,
) -> kube::Client {
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
  user: {{tokenFile: '{}'}}
",
        server.url(),
        token_file.display()
    );
    let kubeconfig = Kubeconfig::from_yaml(&yaml).expect("a kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("a client configuration");
    client::build(
        client::with_read_timeout(config, client::DEFAULT_READ_TIMEOUT),
        metrics,
    )
    .expect("a client")
}

/// The Events stored about object `name` with `reason`.
fn events_of(h: &Harness, name: &str, reason: &str) -> usize {
    h.server
        .objects("events.k8s.io", "events", Some("default"))
        .into_iter()
        .filter(|e| {
            e.pointer("/regarding/name").and_then(|n| n.as_str()) == Some(name)
                && e.get("reason").and_then(|r| r.as_str()) == Some(reason)
        })
        .count()
}

/// Item 4: the manager's token is rotated (the file rewritten, the old token no longer
/// accepted, as when a ServiceAccount token is revoked): the 401s are not refusals (no
/// `ChildCreateRefused`, no five-minute backoff), the client reads the file again at the
/// first 401 and the manager carries on with the new token.
#[tokio::test]
async fn a_rotated_token_is_read_again_and_the_manager_carries_on() {
    let h = Harness::without_manager().await;
    let user = test_apiserver::UserInfo {
        username: "system:serviceaccount:default:math-controller".into(),
        uid: "sa".into(),
        groups: vec![],
    };
    h.server.add_token("token-1", user.clone());
    h.server.add_token("token-2", user);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, "token-1\n").expect("write the token");
    let metrics = Metrics::new();
    let client = manager_client(&h.server, &token_file, &metrics).await;
    let manager = Running::with_client(client, Options::default());
    h.create_tuple("t", vec![4]).await;
    wait_for(&h.tuples(), "t", tuple_ready).await;

    std::fs::write(&token_file, "token-2\n").expect("rotate the token");
    h.server.expire_token("token-1");
    h.server.reset_requests();
    h.create_tuple("u", vec![9, 16]).await;
    let u = wait_for(&h.tuples(), "u", tuple_ready).await;
    assert_eq!(u.status.and_then(|s| s.ready_numbers), Some(2));
    assert_eq!(events_of(&h, "u", "ChildCreateRefused"), 0);
    let unauthorized = h
        .server
        .requests()
        .iter()
        .filter(|r| r.status == 401)
        .count();
    // One per request sent with the old token before the first 401 was seen (the watches'
    // next requests, the first create): each is sent again once with the new token.
    assert!(unauthorized <= 5, "{unauthorized} requests answered 401");
    manager.shutdown().await.expect("the manager stops");
}

/// Item 5: priority and fairness keeps the manager's flow over its share: a fifth of its
/// requests are answered 429 with `Retry-After: 1`, the whole time. A Fermat 200 converges
/// with exactly its children, each created once; every 429 is counted in
/// `math_controller_api_throttled_total`; other flows (the test's own client) are served.
#[tokio::test]
async fn a_throttled_flow_converges_with_exact_children_and_counts_its_429s() {
    let h = Harness::without_manager().await;
    let flow = "system:serviceaccount:default:math-controller";
    h.server.add_token(
        "manager-token",
        test_apiserver::UserInfo {
            username: flow.into(),
            uid: "sa".into(),
            groups: vec![],
        },
    );
    let dir = tempfile::tempdir().expect("a temporary directory");
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, "manager-token").expect("write the token");
    let metrics = Metrics::new();
    let client = manager_client(&h.server, &token_file, &metrics).await;
    h.server.throttle_flow(flow, 0.2, 1);
    let manager = Running::with_client(client, Options::default());
    h.create_fermat("f", 200).await;
    wait_for(&h.fermats(), "f", fermat_ready).await;
    let tuples = h.tuples().list(&Default::default()).await.expect("tuples");
    let numbers = h
        .numbers()
        .list(&Default::default())
        .await
        .expect("numbers");
    assert_eq!((tuples.items.len(), numbers.items.len()), (100, 200));
    let requests = h.server.requests();
    let throttled = requests.iter().filter(|r| r.status == 429).count();
    let created = |resource: &str| {
        requests
            .iter()
            .filter(|r| r.verb == Verb::Create && r.resource == resource && r.status == 201)
            .count()
    };
    assert_eq!((created("tuples"), created("numbers")), (100, 200));
    let duplicates = requests
        .iter()
        .filter(|r| r.verb == Verb::Create && r.status == 409)
        .count();
    assert_eq!(duplicates, 0, "creates answered 409 AlreadyExists");
    assert!(throttled > 0);
    assert_eq!(
        sample(&metrics.encode(), "math_controller_api_throttled_total"),
        Some(throttled as f64)
    );
    manager.shutdown().await.expect("the manager stops");
}
