//! `--metrics-secure`, end to end against the test API server: /metrics over HTTPS, 401 without a
//! token the cluster knows, 403 for a user not bound to the metrics-reader ClusterRole of
//! `deploy/`, 200 for one who is; answers cached so that repeated scrapes cost no API calls; a
//! replaced certificate served without a restart; the real binary's flags; `deploy/`'s pieces.

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use common::{Harness, https, kubectl_ok, repo};
use math_controller::ops::manager::Options;
use serde_json::Value;
use serving::HttpLimits;
use serving::secure_metrics::{MAX_REVIEWS_IN_FLIGHT, SecureMetrics};
use test_apiserver::{RequestFilter, TestServer};

/// Bound to math-controller-metrics-reader.
const READER: &str = "reader-token";
/// A real ServiceAccount token, but not bound.
const STRANGER: &str = "stranger-token";
/// Known to nobody.
const UNKNOWN: &str = "made-up-token";

fn free_port() -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap()
}

/// deploy/'s metrics-reader ClusterRole, bound to monitoring/prometheus, whose token is READER.
async fn grant_prometheus(h: &Harness) {
    let kubeconfig = h.server.kubeconfig_path();
    let reader = repo().join("deploy/24-metrics-reader-cluster-role.yaml");
    kubectl_ok(&kubeconfig, &["apply", "-f", &reader.to_string_lossy()]).await;
    kubectl_ok(
        &kubeconfig,
        &[
            "create",
            "clusterrolebinding",
            "prometheus-metrics",
            "--clusterrole=math-controller-metrics-reader",
            "--serviceaccount=monitoring:prometheus",
        ],
    )
    .await;
    h.server
        .add_service_account_token(READER, "monitoring", "prometheus");
}

/// A cluster with deploy/'s metrics-reader ClusterRole bound to monitoring/prometheus (whose
/// token is READER), a token for monitoring/stranger, and a manager serving secure metrics.
async fn cluster(secure: SecureMetrics) -> (Harness, SocketAddr) {
    cluster_with(secure, HttpLimits::default()).await
}

/// [`cluster`] with the metrics server's limits changed.
async fn cluster_with(secure: SecureMetrics, http: HttpLimits) -> (Harness, SocketAddr) {
    let mut h = Harness::without_manager().await;
    grant_prometheus(&h).await;
    h.server
        .add_service_account_token(STRANGER, "monitoring", "stranger");
    let address = free_port();
    h.start_manager_with(Options {
        metrics_address: Some(address),
        metrics_secure: Some(secure),
        http,
        ..Options::default()
    });
    wait_listening(address).await;
    (h, address)
}

async fn wait_listening(address: SocketAddr) {
    common::eventually(
        "the metrics port to listen",
        || async { std::net::TcpStream::connect(address).ok().map(|_| ()) },
        |_| true,
    )
    .await;
}

/// TokenReviews and SubjectAccessReviews the server answered so far.
fn reviews(server: &TestServer) -> (usize, usize) {
    (
        server.count(&RequestFilter::new().resource("tokenreviews")),
        server.count(&RequestFilter::new().resource("subjectaccessreviews")),
    )
}

async fn status(address: SocketAddr, token: Option<&str>) -> u16 {
    https::get(address, "/metrics", token).await.unwrap().status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scrapes_need_a_token_the_cluster_allows_to_get_metrics() {
    let (mut h, address) = cluster(SecureMetrics::default()).await;

    let none = https::get(address, "/metrics", None).await.unwrap();
    assert_eq!(none.status, 401, "{}", none.text);
    assert!(
        !none.text.contains("math_controller_"),
        "nothing leaks: {}",
        none.text
    );
    assert_eq!(status(address, Some(UNKNOWN)).await, 401);
    let stranger = https::get(address, "/metrics", Some(STRANGER))
        .await
        .unwrap();
    assert_eq!(stranger.status, 403, "{}", stranger.text);
    assert!(
        stranger
            .text
            .contains("system:serviceaccount:monitoring:stranger"),
        "the refusal names the user: {}",
        stranger.text
    );

    // The documented series, once the manager has done something.
    h.create_number("n", 25).await;
    let status_written = r#"math_controller_write_requests_total{controller="number",kind="Number",operation="patch_status"} 1"#;
    let reader = common::eventually(
        "the Number's status write counted",
        || async { https::get(address, "/metrics", Some(READER)).await.ok() },
        |a| a.status != 200 || a.text.contains(status_written),
    )
    .await;
    assert_eq!(reader.status, 200, "{}", reader.text);
    for documented in [
        "content-type: text/plain; version=0.0.4; charset=utf-8",
        "# TYPE controller_runtime_reconcile_total counter",
        "# TYPE controller_runtime_reconcile_time_seconds histogram",
        "# TYPE controller_runtime_active_workers gauge",
        "# TYPE workqueue_depth gauge",
        "# TYPE math_controller_write_requests_total counter",
        "# TYPE math_controller_build_info gauge",
        r#"math_controller_write_requests_total{controller="number",kind="Number",operation="patch_status"} 1"#,
    ] {
        assert!(
            reader
                .text
                .to_lowercase()
                .contains(&documented.to_lowercase()),
            "{documented} missing in\n{}",
            reader.text
        );
    }
    // A reader may get /metrics, nothing else.
    assert_eq!(
        https::get(address, "/debug", Some(READER))
            .await
            .unwrap()
            .status,
        403
    );
    h.stop_manager().await;
    assert!(
        std::net::TcpStream::connect(address).is_err(),
        "the metrics server stops with the manager"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_scrape_within_the_cache_period_costs_no_api_call() {
    let (mut h, address) = cluster(SecureMetrics::default()).await;
    assert_eq!(reviews(&h.server), (0, 0));

    assert_eq!(status(address, Some(READER)).await, 200);
    assert_eq!(reviews(&h.server), (1, 1), "who is it, and may they");
    assert_eq!(status(address, Some(READER)).await, 200);
    assert_eq!(reviews(&h.server), (1, 1), "an allowed answer is reused");

    assert_eq!(status(address, Some(STRANGER)).await, 403);
    assert_eq!(status(address, Some(STRANGER)).await, 403);
    assert_eq!(reviews(&h.server), (2, 2), "a refusal is reused too");

    assert_eq!(status(address, Some(UNKNOWN)).await, 401);
    assert_eq!(status(address, Some(UNKNOWN)).await, 401);
    assert_eq!(
        reviews(&h.server),
        (3, 2),
        "an unknown token costs one TokenReview, no SubjectAccessReview"
    );

    assert_eq!(status(address, None).await, 401);
    assert_eq!(reviews(&h.server), (3, 2), "no token, no question");
    h.stop_manager().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_cache_every_scrape_asks_and_a_revoked_binding_is_refused() {
    let (mut h, address) = cluster(SecureMetrics {
        allowed_ttl: Duration::ZERO,
        denied_ttl: Duration::ZERO,
        ..SecureMetrics::default()
    })
    .await;
    assert_eq!(status(address, Some(READER)).await, 200);
    assert_eq!(status(address, Some(READER)).await, 200);
    assert_eq!(reviews(&h.server), (2, 2));
    kubectl_ok(
        &h.server.kubeconfig_path(),
        &["delete", "clusterrolebinding", "prometheus-metrics"],
    )
    .await;
    assert_eq!(status(address, Some(READER)).await, 403);
    h.stop_manager().await;
}

/// Reads until the server closes the connection: `None` if it kept it open for 20 s (the
/// server under test closes it after 300 ms; 20 s only catches one that never does).
async fn until_closed(stream: &mut (impl tokio::io::AsyncRead + Unpin)) -> Option<Vec<u8>> {
    use tokio::io::AsyncReadExt;
    let mut out = Vec::new();
    match tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut out)).await {
        // rustls calls a close without close_notify an error; closed is closed.
        Ok(_) => Some(out),
        Err(_) => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_a_request_after_the_tls_handshake_is_cut_off() {
    use tokio::io::AsyncWriteExt;
    let http = HttpLimits {
        header_read_timeout: Duration::from_millis(300),
        ..HttpLimits::default()
    };
    let (mut h, address) = cluster_with(SecureMetrics::default(), http).await;
    let mut half = https::connect(address).await.unwrap();
    half.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ")
        .await
        .unwrap();
    half.flush().await.unwrap();
    let answer = until_closed(&mut half).await;
    assert!(
        answer.is_some(),
        "half a request is held open after the handshake"
    );
    // A client that finished the handshake and says nothing, too.
    let mut silent = https::connect(address).await.unwrap();
    assert!(
        until_closed(&mut silent).await.is_some(),
        "a silent TLS client is held open"
    );
    // And one that never starts the handshake is not held for ever either (10 s).
    let mut raw = tokio::net::TcpStream::connect(address).await.unwrap();
    assert!(until_closed(&mut raw).await.is_some());
    // Scrapes still work.
    assert_eq!(status(address, Some(READER)).await, 200);
    h.stop_manager().await;
}

/// The largest number of TokenReviews the server was answering at the same moment, from its
/// request log (arrival and duration of each).
fn most_token_reviews_at_once(server: &TestServer) -> usize {
    let filter = RequestFilter::new().resource("tokenreviews");
    let spans: Vec<(std::time::SystemTime, std::time::SystemTime)> = server
        .requests()
        .into_iter()
        .filter(|r| filter.matches(r))
        .map(|r| (r.time, r.time + r.duration))
        .collect();
    // A review's span starts when it arrived; count the others still being answered then
    // (with a millisecond of slack for the two clocks the log reads).
    let slack = Duration::from_millis(1);
    spans
        .iter()
        .map(|(start, _)| {
            spans
                .iter()
                .filter(|(s, e)| s <= start && *start + slack < *e)
                .count()
        })
        .max()
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_scrapes_with_one_token_cost_one_review_of_each_kind() {
    let (mut h, address) = cluster(SecureMetrics::default()).await;
    // Slow reviews, so that the scrapes overlap.
    for resource in ["tokenreviews", "subjectaccessreviews"] {
        h.server.set_latency(
            RequestFilter::new().resource(resource),
            Duration::from_millis(300),
        );
    }
    let scrapes: Vec<_> = (0..16)
        .map(|_| tokio::spawn(async move { status(address, Some(READER)).await }))
        .collect();
    for scrape in scrapes {
        assert_eq!(scrape.await.unwrap(), 200);
    }
    assert_eq!(
        reviews(&h.server),
        (1, 1),
        "one question each, shared by all 16"
    );
    h.stop_manager().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_most_a_few_reviews_are_in_flight() {
    let (mut h, address) = cluster(SecureMetrics::default()).await;
    h.server.set_latency(
        RequestFilter::new().resource("tokenreviews"),
        Duration::from_millis(300),
    );
    // 16 scrapers with 16 different made-up tokens, at once.
    let scrapes: Vec<_> = (0..16)
        .map(|i| tokio::spawn(async move { status(address, Some(&format!("made-up-{i}"))).await }))
        .collect();
    for scrape in scrapes {
        assert_eq!(scrape.await.unwrap(), 401);
    }
    assert_eq!(reviews(&h.server), (16, 0));
    let at_once = most_token_reviews_at_once(&h.server);
    assert!(
        (1..=MAX_REVIEWS_IN_FLIGHT).contains(&at_once),
        "{at_once} TokenReviews in flight at once; at most {MAX_REVIEWS_IN_FLIGHT}"
    );
    h.stop_manager().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn junk_tokens_do_not_evict_the_answer_for_prometheus() {
    // Refusals remembered for long, so that none expires during the test.
    let (mut h, address) = cluster(SecureMetrics {
        denied_ttl: Duration::from_secs(600),
        ..SecureMetrics::default()
    })
    .await;
    assert_eq!(status(address, Some(READER)).await, 200);
    assert_eq!(reviews(&h.server), (1, 1));
    // More made-up tokens than any cache holds, over one connection.
    let mut junk = https::KeepAlive::open(address).await.unwrap();
    for i in 0..1100 {
        let (code, _) = junk
            .request("GET", "/metrics", Some(&format!("junk-{i}")))
            .await
            .unwrap();
        assert_eq!(code, 401);
    }
    assert_eq!(reviews(&h.server), (1101, 1));
    // Prometheus' next scrape is still answered from memory.
    assert_eq!(status(address, Some(READER)).await, 200);
    assert_eq!(
        reviews(&h.server),
        (1101, 1),
        "junk tokens evicted Prometheus' cached answer"
    );
    h.stop_manager().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_users_permission_is_remembered_apart_from_its_tokens() {
    let (mut h, address) = cluster(SecureMetrics::default()).await;
    // A second token of the same ServiceAccount (Prometheus restarted with a new one).
    h.server
        .add_service_account_token("reader-token-2", "monitoring", "prometheus");
    assert_eq!(status(address, Some(READER)).await, 200);
    assert_eq!(reviews(&h.server), (1, 1));
    assert_eq!(status(address, Some("reader-token-2")).await, 200);
    assert_eq!(
        reviews(&h.server),
        (2, 1),
        "who the new token is must be asked; what that user may do is known"
    );
    h.stop_manager().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn head_is_authorised_as_the_verb_head() {
    let (mut h, address) = cluster(SecureMetrics::default()).await;
    let mut scraper = https::KeepAlive::open(address).await.unwrap();
    // metrics-reader grants get, which kube-apiserver does not count for HEAD on a
    // non-resource URL (the verb is the lower-cased method).
    let (code, text) = scraper
        .request("HEAD", "/metrics", Some(READER))
        .await
        .unwrap();
    assert_eq!(code, 403, "{text}");
    assert_eq!(
        scraper
            .request("GET", "/metrics", Some(READER))
            .await
            .unwrap()
            .0,
        200
    );
    let role = r#"{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "metrics-head"},
        "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["head"]}]}"#;
    let kubeconfig = h.server.kubeconfig_path();
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), role).unwrap();
    kubectl_ok(
        &kubeconfig,
        &["apply", "-f", &file.path().to_string_lossy()],
    )
    .await;
    kubectl_ok(
        &kubeconfig,
        &[
            "create",
            "clusterrolebinding",
            "stranger-head",
            "--clusterrole=metrics-head",
            "--serviceaccount=monitoring:stranger",
        ],
    )
    .await;
    let mut stranger = https::KeepAlive::open(address).await.unwrap();
    assert_eq!(
        stranger
            .request("HEAD", "/metrics", Some(STRANGER))
            .await
            .unwrap()
            .0,
        200
    );
    assert_eq!(
        stranger
            .request("GET", "/metrics", Some(STRANGER))
            .await
            .unwrap()
            .0,
        403
    );
    h.stop_manager().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_that_hangs_is_given_up() {
    let (mut h, address) = cluster(SecureMetrics {
        review_timeout: Duration::from_millis(300),
        ..SecureMetrics::default()
    })
    .await;
    h.server.set_latency(
        RequestFilter::new().resource("tokenreviews"),
        Duration::from_secs(3600),
    );
    let answer = tokio::time::timeout(
        Duration::from_secs(20),
        https::get(address, "/metrics", Some(READER)),
    )
    .await
    .expect("an answer while the TokenReview hangs")
    .unwrap();
    assert_eq!(answer.status, 500, "{}", answer.text);
    assert!(answer.text.contains("did not answer"), "{}", answer.text);
    // Not remembered: once the API server answers again, so does the endpoint.
    h.server.clear_faults();
    assert_eq!(status(address, Some(READER)).await, 200);
    h.stop_manager().await;
}

/// A certificate and key for `name`, written as tls.crt and tls.key; returns the certificate's
/// fingerprint.
fn write_certificate(dir: &Path, name: &str) -> Vec<u8> {
    let generated = rcgen::generate_simple_self_signed(vec![name.to_string()]).unwrap();
    std::fs::write(dir.join("tls.crt"), generated.cert.pem()).unwrap();
    std::fs::write(dir.join("tls.key"), generated.signing_key.serialize_pem()).unwrap();
    https::fingerprint(generated.cert.der())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replaced_certificate_is_served_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let first = write_certificate(dir.path(), "first.example");
    let (mut h, address) = cluster(SecureMetrics {
        cert_dir: Some(dir.path().to_path_buf()),
        ..SecureMetrics::default()
    })
    .await;
    let before = https::get(address, "/metrics", Some(READER)).await.unwrap();
    assert_eq!(before.status, 200);
    assert_eq!(
        before.fingerprint, first,
        "the certificate of the directory"
    );

    // As cert-manager renews it: the Secret's files are replaced in the running pod.
    let second = write_certificate(dir.path(), "second.example");
    assert_ne!(first, second);
    let after = common::eventually(
        "the new certificate to be served",
        || async { https::get(address, "/metrics", Some(READER)).await.ok() },
        |a| a.fingerprint != first,
    )
    .await;
    assert_eq!(after.fingerprint, second);
    assert_eq!(after.status, 200);
    h.stop_manager().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_serves_secure_metrics_with_the_flags_of_deploy() {
    let h = Harness::without_manager().await;
    let kubeconfig = h.server.kubeconfig_path();
    grant_prometheus(&h).await;
    let address = free_port();
    let probes = free_port();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_math-controller"))
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .arg("--metrics-secure")
        .arg(format!("--metrics-bind-address={address}"))
        .arg(format!("--health-probe-bind-address={probes}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    wait_listening(address).await;
    assert_eq!(status(address, None).await, 401);
    assert_eq!(status(address, Some(READER)).await, 200);
    // The probes stay plain HTTP for the kubelet.
    let health = http_get(probes, "/healthz").await;
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
    child.kill().await.unwrap();
}

/// A plain-HTTP GET, for the probes.
async fn http_get(address: SocketAddr, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    wait_listening(address).await;
    let mut s = tokio::net::TcpStream::connect(address).await.unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    out
}

/// deploy/: the Service, the container port and the optional NetworkPolicy agree on 8443 named
/// https; the metrics-reader ClusterRole grants exactly get on /metrics.
#[test]
fn deploy_exposes_8443_as_https_to_metrics_readers_only() {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::Service;
    use k8s_openapi::api::networking::v1::NetworkPolicy;
    use k8s_openapi::api::rbac::v1::ClusterRole;
    let read = |file: &str| -> Value {
        serde_yaml::from_str(&std::fs::read_to_string(repo().join("deploy").join(file)).unwrap())
            .unwrap()
    };
    let deployment: Deployment = serde_json::from_value(read("30-deployment.yaml")).unwrap();
    let container = &deployment.spec.unwrap().template.spec.unwrap().containers[0];
    let port = container
        .ports
        .as_ref()
        .unwrap()
        .iter()
        .find(|p| p.name.as_deref() == Some("https"))
        .expect("a container port named https");
    assert_eq!(port.container_port, 8443);
    let args = container.args.clone().unwrap();
    assert!(args.contains(&"--metrics-secure".to_string()), "{args:?}");
    assert!(
        args.contains(&"--metrics-bind-address=:8443".to_string()),
        "{args:?}"
    );

    let service: Service = serde_json::from_value(read("40-metrics-service.yaml")).unwrap();
    let ports = service.spec.unwrap().ports.unwrap();
    assert_eq!(ports.len(), 1);
    assert_eq!(ports[0].name.as_deref(), Some("https"));
    assert_eq!(ports[0].port, 8443);
    assert_eq!(
        ports[0].target_port,
        Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String("https".into()))
    );

    let reader: ClusterRole =
        serde_json::from_value(read("24-metrics-reader-cluster-role.yaml")).unwrap();
    // The role a 403 tells its reader to bind is this one.
    assert_eq!(
        reader.metadata.name.as_deref(),
        Some(math_controller::cli::METRICS_READER_ROLE)
    );
    let rules = reader.rules.unwrap();
    assert_eq!(rules.len(), 1);
    assert_eq!(
        rules[0].non_resource_urls,
        Some(vec!["/metrics".to_string()])
    );
    assert_eq!(rules[0].verbs, vec!["get".to_string()]);
    assert_eq!(rules[0].resources, None);

    let policy_doc = read("optional/network-policy.yaml");
    let policy: NetworkPolicy = serde_json::from_value(policy_doc.clone()).unwrap();
    assert_eq!(
        serde_json::to_value(&policy).unwrap(),
        policy_doc,
        "no unknown fields"
    );
    let spec = policy.spec.unwrap();
    assert_eq!(
        spec.pod_selector.and_then(|s| s.match_labels),
        deployment_labels(),
        "selects the manager's pods"
    );
    let ingress = spec.ingress.unwrap();
    assert_eq!(ingress.len(), 1);
    let from = ingress[0].from.as_ref().unwrap();
    assert_eq!(
        from[0]
            .namespace_selector
            .as_ref()
            .and_then(|s| s.match_labels.clone()),
        Some([("metrics".to_string(), "enabled".to_string())].into())
    );
    let ports = ingress[0].ports.as_ref().unwrap();
    assert_eq!(
        ports[0].port,
        Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(8443))
    );
}

fn deployment_labels() -> Option<std::collections::BTreeMap<String, String>> {
    Some(
        [
            (
                "app.kubernetes.io/name".to_string(),
                "math-controller".to_string(),
            ),
            (
                "app.kubernetes.io/component".to_string(),
                "manager".to_string(),
            ),
        ]
        .into(),
    )
}
