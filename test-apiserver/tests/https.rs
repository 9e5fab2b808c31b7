//! HTTPS mode (`ServerOptions { https: true, .. }`, `--https`): the kubeconfig names its
//! certificate authority and the client's certificate and key by file path, as minikube writes
//! its own; kubectl and kube-rs trust it. Over TLS kubectl sends a kubeconfig's bearer token
//! (over plain HTTP it does not), so kubectl itself is the token's user: a ServiceAccount's
//! TokenRequest token is that account, refused outside its rights with 403, and once the
//! account is deleted every request, `/version` too, answers 401 `Unauthorized`, as
//! kube-apiserver answers.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::json;
use test_apiserver::{ServerOptions, TestServer};

async fn https_server() -> TestServer {
    TestServer::start_with(ServerOptions {
        https: true,
        ..Default::default()
    })
    .await
    .expect("the HTTPS test server starts")
}

fn of<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
    serde_json::from_value(value).expect("a valid object")
}

/// `kubectl ARGS` with `kubeconfig` alone, from a fresh HOME (no ~/.kube of anyone's).
fn kubectl(kubeconfig: &Path, args: &[&str]) -> Output {
    let home = tempfile::tempdir().expect("a fresh HOME");
    Command::new("kubectl")
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env("HOME", home.path())
        .output()
        .expect("kubectl runs")
}

fn said(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn the_kubeconfig_names_its_files_as_minikubes_and_kubectl_trusts_them() {
    let server = https_server().await;
    assert!(
        server.url().starts_with("https://127.0.0.1:"),
        "{}",
        server.url()
    );
    let yaml = std::fs::read_to_string(server.kubeconfig_path()).expect("the kubeconfig");
    let ca = server
        .certificate_authority()
        .expect("an authority over HTTPS");
    assert!(
        yaml.contains(&format!("certificate-authority: {}", ca.display())),
        "{yaml}"
    );
    assert!(!yaml.contains("certificate-authority-data"), "{yaml}");
    for file in ["client-certificate: ", "client-key: "] {
        let path = yaml
            .lines()
            .find_map(|line| line.trim().strip_prefix(file))
            .unwrap_or_else(|| panic!("no {file}in {yaml}"));
        assert!(PathBuf::from(path).is_file(), "{path}");
    }
    let output = kubectl(
        &server.kubeconfig_path(),
        &["get", "namespace", "default", "-o", "name"],
    );
    assert_eq!(said(&output).trim(), "namespace/default");
    // The server's own client trusts the authority too.
    Api::<Namespace>::all(server.client())
        .get("default")
        .await
        .expect("kube-rs over HTTPS");
    server.shutdown().await;
}

/// A ServiceAccount `alice` in namespace `alice` that may read namespace `alice`'s objects
/// (the `view` ClusterRole, bound in `alice`), and a kubeconfig with its token and the
/// server's authority file: what a room hands a participant, before it is made portable.
async fn alices_kubeconfig(server: &TestServer, dir: &Path) -> PathBuf {
    let admin = server.client();
    let pp = PostParams::default();
    for ns in ["alice", "bob"] {
        Api::<Namespace>::all(admin.clone())
            .create(&pp, &of(json!({"metadata": {"name": ns}})))
            .await
            .expect("a namespace");
    }
    let accounts = Api::<ServiceAccount>::namespaced(admin.clone(), "alice");
    accounts
        .create(&pp, &of(json!({"metadata": {"name": "alice"}})))
        .await
        .expect("a ServiceAccount");
    Api::<RoleBinding>::namespaced(admin.clone(), "alice")
        .create(&pp, &of(json!({
            "metadata": {"name": "alice-view"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "ServiceAccount", "name": "alice", "namespace": "alice"}],
        })))
        .await
        .expect("a RoleBinding");
    let request: TokenRequest = of(json!({"spec": {"expirationSeconds": 86400}}));
    let token = accounts
        .create_token_request("alice", &pp, &request)
        .await
        .expect("a TokenRequest")
        .status
        .and_then(|status| status.token)
        .expect("a token");
    let file = dir.join("alice.kubeconfig");
    let ca = server.certificate_authority().expect("an authority");
    let yaml = format!(
        "apiVersion: v1
kind: Config
clusters:
- name: room
  cluster: {{server: '{}', certificate-authority: '{}'}}
contexts:
- name: alice
  context: {{cluster: room, user: alice, namespace: alice}}
current-context: alice
users:
- name: alice
  user: {{token: '{token}'}}
",
        server.url(),
        ca.display()
    );
    std::fs::write(&file, yaml).expect("alice's kubeconfig");
    file
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_is_the_tokens_user_and_a_deleted_account_is_unauthorized() {
    let server = https_server().await;
    server.enforce_rbac();
    let dir = tempfile::tempdir().expect("a directory");
    let alice = alices_kubeconfig(&server, dir.path()).await;

    let whoami = kubectl(
        &alice,
        &[
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo.username}",
        ],
    );
    assert_eq!(said(&whoami), "system:serviceaccount:alice:alice");
    let own = kubectl(&alice, &["get", "configmaps"]);
    assert!(own.status.success(), "{}", said(&own));
    let next_door = kubectl(&alice, &["get", "configmaps", "-n", "bob"]);
    assert_eq!(
        said(&next_door).trim(),
        "Error from server (Forbidden): configmaps is forbidden: User \
         \"system:serviceaccount:alice:alice\" cannot list resource \"configmaps\" in API group \
         \"\" in the namespace \"bob\""
    );

    // Deleting the account revokes its tokens, on every path.
    Api::<ServiceAccount>::namespaced(server.client(), "alice")
        .delete("alice", &DeleteParams::default())
        .await
        .expect("the account is deleted");
    // From a fresh HOME kubectl asks for discovery first, and says so as it did with a
    // revoked token on kube-apiserver v1.36.2 (kubectl v1.32, 2026-11-28).
    let revoked = kubectl(&alice, &["get", "configmaps"]);
    assert_eq!(
        said(&revoked).lines().last(),
        Some(
            "error: You must be logged in to the server (the server has asked for the client \
             to provide credentials)"
        )
    );
    let version = kubectl(&alice, &["get", "--raw", "/version"]);
    assert_eq!(
        said(&version).trim(),
        "error: You must be logged in to the server (Unauthorized)"
    );
    server.shutdown().await;
}
