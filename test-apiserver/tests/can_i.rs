//! `kubectl auth can-i` against the server: the real kubectl (v1.32 here) sends a
//! SelfSubjectAccessReview, and for `--list` a SelfSubjectRulesReview, as protobuf
//! (`Content-Type: application/vnd.kubernetes.protobuf`, `Accept:
//! application/vnd.kubernetes.protobuf,application/json`) and prints `yes` (exit 0) or `no`
//! (exit 1). kubectl sends a kubeconfig's credentials only over TLS (client-go's clientcmd
//! drops them for an `http://` server), so against this plain-HTTP server it is always the
//! administrator; what a participant's kubectl would send with its token is sent here by
//! kube's client, byte for byte as kubectl encodes it. The expected answers are
//! kube-apiserver's RBAC semantics: a Role grants only in its namespace, never a
//! cluster-scoped kind; the administrator may do anything (kube-apiserver v1.36.2 answered
//! its administrator `status: {allowed: true}`); a binding to a role that does not exist is
//! named in the answers. `kubectl auth whoami` sends a SelfSubjectReview, answered with who
//! the caller is.

use std::path::Path;
use std::process::Command;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, Role, RoleBinding};
use kube::api::{Api, PostParams};
use serde_json::json;
use test_apiserver::{RequestFilter, TestServer, Verb};

fn of<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
    serde_json::from_value(value).expect("a valid object")
}

/// What a participant's Role allows in their namespace: the math kinds and their status,
/// and Events (as the room's Role does).
fn participant_role() -> Role {
    of(json!({
        "metadata": {"name": "participant"},
        "rules": [
            {"apiGroups": ["math.example.com"],
             "resources": ["numbers", "numbers/status", "tuples", "tuples/status", "fermats", "fermats/status"],
             "verbs": ["*"]},
            {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch", "get", "list", "watch"]},
        ],
    }))
}

/// The CRDs, namespaces alice and bob, in alice a ServiceAccount bound to the participant
/// Role; returns that ServiceAccount's token (a TokenRequest's, as the organiser's is).
async fn room(server: &TestServer) -> String {
    let crds = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/crds.yaml");
    let crds = std::fs::read_to_string(crds).expect("the CRD fixture");
    server.apply_crd_yaml(&crds).expect("the CRDs install");
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
    Api::<Role>::namespaced(admin.clone(), "alice")
        .create(&pp, &participant_role())
        .await
        .expect("the Role");
    Api::<RoleBinding>::namespaced(admin, "alice")
        .create(&pp, &of(json!({
            "metadata": {"name": "participant"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "participant"},
            "subjects": [{"kind": "ServiceAccount", "name": "alice", "namespace": "alice"}],
        })))
        .await
        .expect("the RoleBinding");
    let request = of(json!({"spec": {"audiences": [], "expirationSeconds": 3600}}));
    accounts
        .create_token_request("alice", &pp, &request)
        .await
        .expect("a token")
        .status
        .and_then(|s| s.token)
        .expect("a TokenRequest's status carries its token")
}

/// A client presenting `token`, as a participant's kubeconfig makes one.
async fn client_with_token(server: &TestServer, token: &str) -> kube::Client {
    let yaml = format!(
        "apiVersion: v1
kind: Config
clusters:
- name: room
  cluster: {{server: '{}'}}
contexts:
- name: alice
  context: {{cluster: room, user: alice, namespace: alice}}
current-context: alice
users:
- name: alice
  user: {{token: '{token}'}}
",
        server.url()
    );
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&yaml).expect("a kubeconfig");
    let options = kube::config::KubeConfigOptions::default();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .expect("a usable kubeconfig");
    kube::Client::try_from(config).expect("a client")
}

/// A protobuf field: key, length, bytes (every field here is length-delimited).
fn field(number: u8, bytes: &[u8]) -> Vec<u8> {
    let mut out = vec![number << 3 | 2];
    let mut len = bytes.len();
    while len >= 0x80 {
        out.push((len as u8 & 0x7f) | 0x80);
        len >>= 7;
    }
    out.push(len as u8);
    out.extend_from_slice(bytes);
    out
}

/// `k8s\0` + runtime.Unknown{typeMeta, raw}, as kubectl frames a body.
fn envelope(kind: &str, raw: &[u8]) -> Vec<u8> {
    let type_meta = [
        field(1, b"authorization.k8s.io/v1"),
        field(2, kind.as_bytes()),
    ]
    .concat();
    [b"k8s\0".to_vec(), field(1, &type_meta), field(2, raw)].concat()
}

/// The SelfSubjectAccessReview `kubectl auth can-i VERB RESOURCE[/SUB] -n NAMESPACE` sends
/// (ResourceAttributes 1 namespace, 2 verb, 3 group, 5 resource, 6 subresource).
fn access_review(namespace: &str, verb: &str, group: &str, resource: &str, sub: &str) -> Vec<u8> {
    let attributes = [
        field(1, namespace.as_bytes()),
        field(2, verb.as_bytes()),
        field(3, group.as_bytes()),
        field(5, resource.as_bytes()),
        field(6, sub.as_bytes()),
    ]
    .concat();
    let spec = field(1, &attributes);
    envelope("SelfSubjectAccessReview", &field(2, &spec))
}

/// POSTs a protobuf review as kubectl does and returns the answer's `status`.
async fn post_review(client: &kube::Client, plural: &str, body: Vec<u8>) -> serde_json::Value {
    let request = http::Request::post(format!("/apis/authorization.k8s.io/v1/{plural}"))
        .header("content-type", "application/vnd.kubernetes.protobuf")
        .header(
            "accept",
            "application/vnd.kubernetes.protobuf,application/json",
        )
        .body(body)
        .expect("a request");
    let answer: serde_json::Value = client.request(request).await.expect("an answer");
    answer["status"].clone()
}

/// kubectl's stdout and exit code.
async fn kubectl(kubeconfig: &Path, cache: &Path, args: &[&str]) -> (String, Option<i32>) {
    let mut command = Command::new("kubectl");
    command
        .env("KUBECONFIG", kubeconfig)
        .arg("--cache-dir")
        .arg(cache)
        .args(args);
    let out = tokio::task::spawn_blocking(move || command.output())
        .await
        .expect("join")
        .unwrap_or_else(|e| {
            panic!("kubectl must be installed and on PATH to run these tests: {e}")
        });
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!(
        "kubectl {args:?} -> {:?}\n{stdout}{stderr}",
        out.status.code()
    );
    (stdout, out.status.code())
}

/// The real kubectl, as the administrator: `yes` for anything, and `--list` shows
/// `cluster-admin`'s rules.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_auth_can_i_is_answered() {
    let server = TestServer::start().await.expect("the server starts");
    room(&server).await;
    server.enforce_rbac();
    let dir = tempfile::tempdir().expect("a directory");
    let (admin, cache) = (server.kubeconfig_path(), dir.path().join("cache"));
    let yes = ("yes\n".to_string(), Some(0));
    for args in [
        ["auth", "can-i", "create", "customresourcedefinitions"],
        ["auth", "can-i", "delete", "numbers.math.example.com"],
        ["auth", "can-i", "get", "/metrics"],
    ] {
        assert_eq!(kubectl(&admin, &cache, &args).await, yes, "{args:?}");
    }
    let reviews = RequestFilter::new()
        .verb(Verb::Create)
        .resource("selfsubjectaccessreviews");
    let answered: Vec<u16> = server
        .requests()
        .iter()
        .filter(|r| reviews.matches(r))
        .map(|r| r.status)
        .collect();
    assert_eq!(answered, vec![201; 3], "one review per question, answered");

    let (list, code) = kubectl(&admin, &cache, &["auth", "can-i", "--list", "-n", "alice"]).await;
    assert_eq!(code, Some(0), "{list}");
    let list = rows(&list);
    for expected in [
        row("*.*", &["*"]),
        row("[*]", &["*"]),
        row("[/api/*]", &["get"]),
    ] {
        assert!(list.contains(&expected), "{expected:?} in {list:?}");
    }
    let rules = RequestFilter::new()
        .verb(Verb::Create)
        .resource("selfsubjectrulesreviews");
    assert_eq!(server.count(&rules), 1);
    server.shutdown().await;
}

/// What a participant's `kubectl auth can-i` sends, with their token: allowed what the Role
/// allows in their namespace, nothing in the neighbour's, no cluster-scoped write; everyone
/// may ask (kube-apiserver's `system:basic-user`).
#[tokio::test]
async fn a_participant_may_what_the_role_allows_in_their_namespace() {
    let server = TestServer::start().await.expect("the server starts");
    let token = room(&server).await;
    server.enforce_rbac();
    let alice = client_with_token(&server, &token).await;
    let math = "math.example.com";
    let crds = "apiextensions.k8s.io";
    for (namespace, verb, group, resource, sub, allowed) in [
        ("alice", "create", math, "numbers", "", true),
        ("alice", "patch", math, "fermats", "status", true),
        ("alice", "list", "", "events", "", true),
        ("alice", "delete", "", "events", "", false),
        ("bob", "create", math, "numbers", "", false),
        (
            "alice",
            "create",
            crds,
            "customresourcedefinitions",
            "",
            false,
        ),
        (
            "",
            "create",
            "authorization.k8s.io",
            "selfsubjectaccessreviews",
            "",
            true,
        ),
    ] {
        let body = access_review(namespace, verb, group, resource, sub);
        let status = post_review(&alice, "selfsubjectaccessreviews", body).await;
        assert_eq!(
            status["allowed"],
            json!(allowed),
            "{verb} {resource}/{sub} in {namespace:?}: {status}"
        );
    }
    let allowed = access_review("alice", "create", math, "numbers", "");
    assert_eq!(
        post_review(&alice, "selfsubjectaccessreviews", allowed).await["reason"],
        "RBAC: allowed by RoleBinding \"participant/alice\" of Role \"participant\" to \
         ServiceAccount \"alice/alice\""
    );
    server.shutdown().await;
}

/// What a participant's `kubectl auth can-i --list [-n NAMESPACE]` sends: the Role's rules in
/// their namespace, the bootstrap's everywhere, nothing of the math kinds next door.
#[tokio::test]
async fn a_participant_lists_the_rules_of_their_namespace_only() {
    let server = TestServer::start().await.expect("the server starts");
    let token = room(&server).await;
    server.enforce_rbac();
    let alice = client_with_token(&server, &token).await;
    let list = |namespace: &str| {
        envelope(
            "SelfSubjectRulesReview",
            &field(2, &field(1, namespace.as_bytes())),
        )
    };
    let mine = post_review(&alice, "selfsubjectrulesreviews", list("alice")).await;
    let rules = mine["resourceRules"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        rules.contains(&json!({"verbs": ["*"], "apiGroups": ["math.example.com"],
            "resources": ["numbers", "numbers/status", "tuples", "tuples/status", "fermats", "fermats/status"]})),
        "{mine}"
    );
    assert!(rules.contains(
        &json!({"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
        "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]})
    ));
    assert_eq!(mine["incomplete"], false);
    let theirs = post_review(&alice, "selfsubjectrulesreviews", list("bob")).await;
    assert!(!theirs.to_string().contains("math.example.com"), "{theirs}");
    assert!(!theirs["resourceRules"].as_array().is_none_or(Vec::is_empty));
    server.shutdown().await;
}

/// The rows of `kubectl auth can-i --list` as (what, verbs): what is the Resources cell
/// (`numbers.math.example.com`) or, on a non-resource row, the Non-Resource URLs cell
/// (`[/api/*]`); the verbs (the last cell, `[create get]`) sorted.
fn rows(table: &str) -> Vec<(String, Vec<String>)> {
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let what = line.split_whitespace().next()?;
            let verbs = line.get(line.rfind('[')?..)?.trim();
            let mut verbs: Vec<String> = verbs
                .trim_matches(|c| c == '[' || c == ']')
                .split_whitespace()
                .map(String::from)
                .collect();
            verbs.sort();
            Some((what.to_string(), verbs))
        })
        .collect()
}

fn row(what: &str, verbs: &[&str]) -> (String, Vec<String>) {
    let mut verbs: Vec<String> = verbs.iter().map(|v| v.to_string()).collect();
    verbs.sort();
    (what.to_string(), verbs)
}

/// The body kubectl v1.32's `kubectl auth whoami -v=9` sent (2026-11-28): `k8s\0` +
/// runtime.Unknown{authentication.k8s.io/v1 SelfSubjectReview, an empty object}.
const WHOAMI_BODY: &str = "6b 38 73 00 0a 2d 0a 18 61 75 74 68 65 6e 74 69 63 61 74 69 6f 6e 2e 6b \
    38 73 2e 69 6f 2f 76 31 12 11 53 65 6c 66 53 75 62 6a 65 63 74 52 65 76 69 65 77 12 1a 0a 10 \
    0a 00 12 00 1a 00 22 00 2a 00 32 00 38 00 42 00 12 06 0a 04 0a 00 12 00 1a 00 22 00";

/// POSTs kubectl's SelfSubjectReview as kubectl does; the answer (or kube's error).
async fn whoami(client: &kube::Client) -> Result<serde_json::Value, kube::Error> {
    let body: Vec<u8> = WHOAMI_BODY
        .split_whitespace()
        .filter_map(|h| u8::from_str_radix(h, 16).ok())
        .collect();
    let request = http::Request::post("/apis/authentication.k8s.io/v1/selfsubjectreviews")
        .header("content-type", "application/vnd.kubernetes.protobuf")
        .header(
            "accept",
            "application/vnd.kubernetes.protobuf,application/json",
        )
        .body(body)
        .expect("a request");
    client.request(request).await
}

/// `kubectl auth whoami` with a participant's token: kube-apiserver's SelfSubjectReview
/// handler answers the authenticated user (a ServiceAccount token's: its name, the
/// ServiceAccount's uid, its groups and `system:authenticated`), whether or not RBAC is
/// enforced (authentication comes first); everyone authenticated may ask
/// (`system:basic-user`). A token the server does not know is kube-apiserver's 401.
#[tokio::test]
async fn a_participant_is_told_who_they_are() {
    let server = TestServer::start().await.expect("the server starts");
    let token = room(&server).await;
    let account = Api::<ServiceAccount>::namespaced(server.client(), "alice")
        .get("alice")
        .await
        .expect("the ServiceAccount");
    let alice = client_with_token(&server, &token).await;
    let expected = json!({"userInfo": {
        "username": "system:serviceaccount:alice:alice",
        "uid": account.metadata.uid,
        "groups": ["system:serviceaccounts", "system:serviceaccounts:alice", "system:authenticated"],
    }});
    let answer = whoami(&alice).await.expect("a SelfSubjectReview");
    assert_eq!(answer["status"], expected, "{answer}");
    assert_eq!(answer["kind"], "SelfSubjectReview");
    assert_eq!(answer["apiVersion"], "authentication.k8s.io/v1");
    server.enforce_rbac();
    let answer = whoami(&alice)
        .await
        .expect("a SelfSubjectReview under RBAC");
    assert_eq!(answer["status"], expected, "{answer}");

    let stranger = client_with_token(&server, "not-a-token").await;
    match whoami(&stranger).await {
        Err(kube::Error::Api(status)) => {
            assert_eq!((status.code, status.reason.as_str()), (401, "Unauthorized"));
            assert_eq!(status.message, "Unauthorized");
        }
        other => panic!("an unknown token must be refused with 401: {other:?}"),
    }
    server.shutdown().await;
}

/// The real `kubectl auth whoami` (v1.32) as the administrator (kubectl sends no credentials
/// over plain HTTP): its table, and `-o json`'s object. kube-apiserver v1.36.2 (2026-11-28) answers
/// its administrator with `username: "kubernetes-admin"`, groups `system:masters`,
/// `system:authenticated`, and an `extra` credential id (an X509 hash) this server cannot have.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_auth_whoami_names_the_administrator() {
    let server = TestServer::start().await.expect("the server starts");
    let dir = tempfile::tempdir().expect("a directory");
    let (admin, cache) = (server.kubeconfig_path(), dir.path().join("cache"));
    let (table, code) = kubectl(&admin, &cache, &["auth", "whoami"]).await;
    assert_eq!(code, Some(0), "{table}");
    let rows: Vec<Vec<&str>> = table
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows,
        [
            vec!["ATTRIBUTE", "VALUE"],
            vec!["Username", "kubernetes-admin"],
            vec!["Groups", "[system:masters", "system:authenticated]"],
        ]
    );
    let (out, code) = kubectl(&admin, &cache, &["auth", "whoami", "-o", "json"]).await;
    assert_eq!(code, Some(0), "{out}");
    let review: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(review["status"]["userInfo"]["username"], "kubernetes-admin");
    let reviews = RequestFilter::new()
        .verb(Verb::Create)
        .resource("selfsubjectreviews");
    assert_eq!(server.count(&reviews), 2, "one review per command");
    server.shutdown().await;
}

/// A binding of alice's ServiceAccount to a role that does not exist.
fn binding_to_missing(kind: &str, name: &str, role: &str) -> serde_json::Value {
    json!({
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": "alice", "namespace": "alice"}],
    })
}

/// A binding to a role that does not exist grants nothing, and kube-apiserver says so
/// (v1.36.2's source: `DefaultRuleResolver.GetRoleReferenceRules` returns its lister's
/// NotFound, `role.rbac.authorization.k8s.io "ghost" not found`; `RBACAuthorizer.RulesFor`
/// passes the errors to the SelfSubjectRulesReview's `evaluationError`, several as
/// `utilerrors.NewAggregate` prints them, `[a, b]`; `RBACAuthorizer.Authorize` denies with the
/// reason `RBAC: <errors>`, which a SelfSubjectAccessReview carries in `reason` (its
/// `evaluationError` stays empty: the authorizer returns no error) and a refused request
/// appends to its 403 message (`ForbiddenStatusError`)). Rules that resolve still count.
/// kube-apiserver v1.36.2 (2026-11-28, a ServiceAccount bound to a missing Role `ghost`):
/// `kubectl get pods` → 403 `pods is forbidden: User "system:serviceaccount:default:ghosty"
/// cannot list resource "pods" in API group "" in the namespace "default": RBAC:
/// role.rbac.authorization.k8s.io "ghost" not found`; `kubectl auth can-i get pods` → `no -
/// RBAC: role.rbac.authorization.k8s.io "ghost" not found`.
#[tokio::test]
async fn a_binding_to_a_missing_role_is_named_in_the_answers() {
    let server = TestServer::start().await.expect("the server starts");
    let token = room(&server).await;
    let pp = PostParams::default();
    Api::<RoleBinding>::namespaced(server.client(), "alice")
        .create(&pp, &of(binding_to_missing("Role", "haunted", "ghost")))
        .await
        .expect("the RoleBinding");
    server.enforce_rbac();
    let alice = client_with_token(&server, &token).await;
    let list = |namespace: &str| {
        envelope(
            "SelfSubjectRulesReview",
            &field(2, &field(1, namespace.as_bytes())),
        )
    };
    let ghost = "role.rbac.authorization.k8s.io \"ghost\" not found";
    let mine = post_review(&alice, "selfsubjectrulesreviews", list("alice")).await;
    assert_eq!(mine["evaluationError"], ghost, "{mine}");
    assert!(mine.to_string().contains("math.example.com"), "{mine}");
    let theirs = post_review(&alice, "selfsubjectrulesreviews", list("bob")).await;
    assert!(theirs.get("evaluationError").is_none(), "{theirs}");

    let denied = access_review("alice", "delete", "", "events", "");
    let status = post_review(&alice, "selfsubjectaccessreviews", denied).await;
    assert_eq!(
        status,
        json!({"allowed": false, "reason": format!("RBAC: {ghost}")})
    );
    let allowed = access_review("alice", "create", "math.example.com", "numbers", "");
    let status = post_review(&alice, "selfsubjectaccessreviews", allowed).await;
    assert_eq!(status["allowed"], true, "{status}");

    Api::<ClusterRoleBinding>::all(server.client())
        .create(
            &pp,
            &of(binding_to_missing("ClusterRole", "lost", "vanished")),
        )
        .await
        .expect("the ClusterRoleBinding");
    let both = format!("[clusterrole.rbac.authorization.k8s.io \"vanished\" not found, {ghost}]");
    let mine = post_review(&alice, "selfsubjectrulesreviews", list("alice")).await;
    assert_eq!(mine["evaluationError"], both.as_str(), "{mine}");
    match Api::<ConfigMap>::namespaced(alice, "alice")
        .list(&Default::default())
        .await
    {
        Err(kube::Error::Api(refused)) => assert_eq!(
            refused.message,
            format!(
                "configmaps is forbidden: User \"system:serviceaccount:alice:alice\" cannot list \
                 resource \"configmaps\" in API group \"\" in the namespace \"alice\": RBAC: {both}"
            )
        ),
        other => panic!("a 403 was expected: {other:?}"),
    }
    server.shutdown().await;
}
