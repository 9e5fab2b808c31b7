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
use math_controller::manager::Options;
use math_controller::metrics_auth::SecureMetrics;
use serde_json::Value;
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
    let mut h = Harness::without_manager().await;
    grant_prometheus(&h).await;
    h.server
        .add_service_account_token(STRANGER, "monitoring", "stranger");
    let address = free_port();
    h.start_manager_with(Options {
        metrics_address: Some(address),
        metrics_secure: Some(secure),
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
        "content-type: application/openmetrics-text",
        "# TYPE math_controller_reconcile counter",
        "# TYPE math_controller_reconcile_duration_seconds histogram",
        "# TYPE math_controller_reconcile_in_flight gauge",
        "# TYPE math_controller_write_requests counter",
        "# TYPE math_controller_leader gauge",
        "# TYPE math_controller_build info",
        r#"math_controller_write_requests_total{controller="number",kind="Number",operation="patch_status"} 1"#,
        "# EOF",
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
