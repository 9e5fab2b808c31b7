//! RBAC enforced (`TestServer::enforce_rbac`): a ServiceAccount's token from a TokenRequest may
//! do what its Role allows in its namespace, and is refused elsewhere with kube-apiserver's 403
//! and words; the administrator (no token) may do anything; without `enforce_rbac` the same
//! token may do anything, as every other test expects.

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::api::{Api, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::json;
use test_apiserver::TestServer;

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
  context: {{cluster: t, user: u, namespace: alice}}
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

fn of<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
    serde_json::from_value(value).unwrap()
}

/// Namespaces alice and bob; in alice a ServiceAccount allowed configmaps there; its token.
async fn alice_and_bob(server: &TestServer) -> String {
    let admin = server.client();
    for ns in ["alice", "bob"] {
        Api::<Namespace>::all(admin.clone())
            .create(
                &PostParams::default(),
                &of(json!({"metadata": {"name": ns}})),
            )
            .await
            .unwrap();
    }
    let pp = PostParams::default();
    Api::<ServiceAccount>::namespaced(admin.clone(), "alice")
        .create(&pp, &of(json!({"metadata": {"name": "alice"}})))
        .await
        .unwrap();
    Api::<Role>::namespaced(admin.clone(), "alice")
        .create(
            &pp,
            &of(json!({
                "metadata": {"name": "participant"},
                "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["*"]}],
            })),
        )
        .await
        .unwrap();
    Api::<RoleBinding>::namespaced(admin.clone(), "alice")
        .create(&pp, &of(json!({
            "metadata": {"name": "participant"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "participant"},
            "subjects": [{"kind": "ServiceAccount", "name": "alice", "namespace": "alice"}],
        })))
        .await
        .unwrap();
    let request: k8s_openapi::api::authentication::v1::TokenRequest =
        of(json!({"spec": {"audiences": [], "expirationSeconds": 3600}}));
    Api::<ServiceAccount>::namespaced(admin, "alice")
        .create_token_request("alice", &pp, &request)
        .await
        .unwrap()
        .status
        .unwrap()
        .token
        .expect("a TokenRequest's status carries its token")
}

#[tokio::test]
async fn a_service_account_may_do_what_its_role_allows_and_nothing_else() {
    let server = TestServer::start().await.unwrap();
    server.enforce_rbac();
    let token = alice_and_bob(&server).await;
    let alice = client_with_token(&server, &token).await;
    let mine = Api::<ConfigMap>::namespaced(alice.clone(), "alice");
    mine.create(
        &PostParams::default(),
        &of(json!({"metadata": {"name": "a"}})),
    )
    .await
    .unwrap();
    let names: Vec<_> = mine
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|cm| cm.metadata.name)
        .collect();
    assert!(names.contains(&"a".to_string()), "{names:?}");

    let theirs = Api::<ConfigMap>::namespaced(alice.clone(), "bob");
    let Err(kube::Error::Api(status)) = theirs.list(&ListParams::default()).await else {
        panic!("alice listed bob's configmaps");
    };
    assert_eq!((status.code, status.reason.as_str()), (403, "Forbidden"));
    assert_eq!(
        status.message,
        "configmaps is forbidden: User \"system:serviceaccount:alice:alice\" cannot list \
         resource \"configmaps\" in API group \"\" in the namespace \"bob\""
    );
    let Err(kube::Error::Api(status)) = Api::<Namespace>::all(alice.clone())
        .create(
            &PostParams::default(),
            &of(json!({"metadata": {"name": "carol"}})),
        )
        .await
    else {
        panic!("alice created a namespace");
    };
    assert_eq!(
        status.message,
        "namespaces is forbidden: User \"system:serviceaccount:alice:alice\" cannot create \
         resource \"namespaces\" in API group \"\" at the cluster scope"
    );
    // The administrator (the server's own kubeconfig, no token) is not bound by RBAC.
    let admin = Api::<ConfigMap>::namespaced(server.client(), "bob");
    assert!(admin.list(&ListParams::default()).await.is_ok());
    // An unknown token is not anybody.
    let stranger = client_with_token(&server, "not-issued").await;
    let Err(kube::Error::Api(status)) = Api::<ConfigMap>::namespaced(stranger, "alice")
        .list(&ListParams::default())
        .await
    else {
        panic!("an unknown token listed");
    };
    assert_eq!(status.code, 401);
    server.shutdown().await;
}

#[tokio::test]
async fn without_enforcement_a_token_may_do_anything() {
    let server = TestServer::start().await.unwrap();
    let token = alice_and_bob(&server).await;
    let alice = client_with_token(&server, &token).await;
    assert!(
        Api::<ConfigMap>::namespaced(alice, "bob")
            .list(&ListParams::default())
            .await
            .is_ok()
    );
    server.shutdown().await;
}
