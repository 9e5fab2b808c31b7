//! The real `kubectl` (v1.32) against the server, through the kubeconfig it writes.
//! A missing kubectl fails these tests with a clear message.

use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
use test_apiserver::{RequestFilter, TestServer, Verb};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

struct Kubectl {
    kubeconfig: PathBuf,
    cache: tempfile::TempDir,
}

impl Kubectl {
    fn new(s: &TestServer) -> Kubectl {
        Kubectl {
            kubeconfig: s.kubeconfig_path(),
            cache: tempfile::tempdir().expect("temp dir"),
        }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new("kubectl");
        c.env("KUBECONFIG", &self.kubeconfig)
            .arg("--cache-dir")
            .arg(self.cache.path())
            .args(args);
        c
    }

    /// Runs kubectl, returning (success, stdout, stderr).
    async fn try_run(&self, args: &[&str]) -> (bool, String, String) {
        let mut c = self.command(args);
        let out = tokio::task::spawn_blocking(move || c.output())
            .await
            .expect("join")
            .unwrap_or_else(|e| {
                panic!("kubectl must be installed and on PATH to run these tests: {e}")
            });
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    async fn run(&self, args: &[&str]) -> String {
        let (ok, out, err) = self.try_run(args).await;
        assert!(ok, "kubectl {args:?} failed:\nstdout: {out}\nstderr: {err}");
        out
    }
}

async fn setup() -> (TestServer, Kubectl) {
    let s = TestServer::start().await.expect("server starts");
    let k = Kubectl::new(&s);
    let crds = fixtures().join("crds.yaml");
    let out = k.run(&["apply", "-f", crds.to_str().unwrap()]).await;
    assert!(
        out.contains(
            "customresourcedefinition.apiextensions.k8s.io/numbers.math.example.com created"
        ),
        "{out}"
    );
    k.run(&[
        "wait",
        "--for",
        "condition=established",
        "crd/numbers.math.example.com",
        "--timeout=10s",
    ])
    .await;
    (s, k)
}

fn numbers_api(s: &TestServer) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("math.example.com", "v1beta1", "Number"),
        "numbers",
    );
    Api::namespaced_with(s.client(), "default", &ar)
}

/// kubectl client-side apply against kube-apiserver: discovery (legacy APIGroupList /
/// APIResourceList), OpenAPI v3 telling kubectl the server validates fields, GET then
/// POST with the last-applied annotation, "unchanged" on re-apply, PATCH (merge patch for
/// CRs, strategic merge patch for built-ins) on change; `get` by category, short name,
/// plural, with printer columns (Table), -o yaml/json/jsonpath.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_and_get() {
    let (s, k) = setup().await;
    let dir = fixtures().join("manifests");
    let dir = dir.to_str().unwrap();
    let out = k.run(&["apply", "-f", dir]).await;
    assert!(
        out.contains("number.math.example.com/nine created"),
        "{out}"
    );
    assert!(
        out.contains("deployment.apps/math-controller created"),
        "{out}"
    );
    let out = k.run(&["apply", "-f", dir]).await;
    assert!(
        out.contains("number.math.example.com/nine unchanged"),
        "{out}"
    );
    let n = s
        .object("math.example.com", "numbers", Some("default"), "nine")
        .unwrap();
    assert!(
        n["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .is_string()
    );
    s.reset_requests();
    let tmp = tempfile::tempdir().unwrap();
    let changed = std::fs::read_to_string(fixtures().join("manifests/numbers.yaml"))
        .unwrap()
        .replace("value: 9", "value: 16");
    let f = tmp.path().join("n.yaml");
    std::fs::write(&f, changed).unwrap();
    let out = k.run(&["apply", "-f", f.to_str().unwrap()]).await;
    assert!(
        out.contains("number.math.example.com/nine configured"),
        "{out}"
    );
    assert_eq!(
        s.count(&RequestFilter::new().verb(Verb::Patch).resource("numbers")),
        1
    );
    let n = s
        .object("math.example.com", "numbers", Some("default"), "nine")
        .unwrap();
    assert_eq!(n["spec"]["value"], 16);
    assert_eq!(n["metadata"]["generation"], 2);
    // category, plural, short name
    let out = k.run(&["get", "math"]).await;
    for name in [
        "number.math.example.com/nine",
        "tuple.math.example.com/pair",
        "fermat.math.example.com/five",
    ] {
        assert!(out.contains(name), "{out}");
    }
    let out = k.run(&["get", "numbers"]).await;
    let header: Vec<&str> = out.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["NAME", "VALUE", "FIZZBUZZ", "SQUARE", "READY", "AGE"]
    );
    assert!(out.lines().nth(1).unwrap().starts_with("nine"), "{out}");
    let out = k.run(&["get", "num", "nine", "-o", "yaml"]).await;
    assert!(out.contains("value: 16"), "{out}");
    let out = k.run(&["get", "tuples", "-o", "json"]).await;
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["items"][0]["spec"]["numbers"], json!([1, 4]));
    let out = k
        .run(&["get", "fermat", "five", "-o", "jsonpath={.spec.number}"])
        .await;
    assert_eq!(out, "5");
    let out = k.run(&["get", "tuples"]).await;
    assert!(out.contains("[1,4]"), "{out}");
    // a schema violation is reported as kube-apiserver words it
    let bad = tmp.path().join("bad.yaml");
    std::fs::write(&bad, "apiVersion: math.example.com/v1beta1\nkind: Fermat\nmetadata: {name: f}\nspec: {number: -1}\n").unwrap();
    let (ok, _, err) = k.try_run(&["apply", "-f", bad.to_str().unwrap()]).await;
    assert!(!ok);
    assert!(err.contains("spec.number: Invalid value: -1: spec.number in body should be greater than or equal to 0"), "{err}");
}

/// kubectl apply --server-side (application/apply-patch+yaml with fieldManager=kubectl),
/// --dry-run=server of a deploy/ directory of built-in kinds (dryRun=All persists
/// nothing), and `kubectl create namespace` (sent as protobuf by kubectl's typed client).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_apply_dry_run_and_namespaces() {
    let (s, k) = setup().await;
    let out = k.run(&["create", "namespace", "workshop"]).await;
    assert!(out.contains("namespace/workshop created"), "{out}");
    let dir = fixtures().join("manifests");
    let dir = dir.to_str().unwrap();
    let out = k
        .run(&["apply", "--server-side", "-n", "workshop", "-f", dir])
        .await;
    assert!(
        out.contains("number.math.example.com/nine serverside-applied"),
        "{out}"
    );
    let n = s
        .object("math.example.com", "numbers", Some("workshop"), "nine")
        .unwrap();
    assert_eq!(n["metadata"]["managedFields"][0]["manager"], "kubectl");
    assert_eq!(n["metadata"]["managedFields"][0]["operation"], "Apply");
    let out = k
        .run(&["apply", "--server-side", "-n", "workshop", "-f", dir])
        .await;
    assert!(out.contains("serverside-applied"), "{out}");
    let before = s.resource_version();
    let out = k
        .run(&["apply", "--dry-run=server", "-n", "kube-system", "-f", dir])
        .await;
    assert!(
        out.contains("serviceaccount/math-controller created (server dry run)"),
        "{out}"
    );
    // cluster-scoped ones exist already (applied above)
    assert!(out.contains("clusterrolebinding.rbac.authorization.k8s.io/math-controller configured (server dry run)"), "{out}");
    assert_eq!(s.resource_version(), before, "dry run persists nothing");
    assert!(
        s.object(
            "",
            "serviceaccounts",
            Some("kube-system"),
            "math-controller"
        )
        .is_none()
    );
    let (ok, _, err) = k.try_run(&["get", "numbers", "-n", "missing"]).await;
    assert!(ok, "{err}");
    let out = k.run(&["get", "ns"]).await;
    assert!(out.contains("workshop") && out.contains("Active"), "{out}");
}

/// kubectl describe lists core/v1 Events selected by involvedObject.*; events written via
/// events.k8s.io/v1 (kube-runtime's Recorder) appear there, as on kube-apiserver.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describe_shows_events() {
    use k8s_openapi::api::core::v1::ObjectReference;
    use kube::runtime::events::{Event, EventType, Recorder, Reporter};
    let (s, k) = setup().await;
    k.run(&[
        "apply",
        "-f",
        fixtures().join("manifests/numbers.yaml").to_str().unwrap(),
    ])
    .await;
    let n = numbers_api(&s).get("nine").await.unwrap();
    let rec = Recorder::new(
        s.client(),
        Reporter {
            controller: "math-controller".into(),
            instance: None,
        },
    );
    let reference = ObjectReference {
        api_version: Some("math.example.com/v1beta1".into()),
        kind: Some("Number".into()),
        name: Some("nine".into()),
        namespace: Some("default".into()),
        uid: n.metadata.uid.clone(),
        ..Default::default()
    };
    let ev = Event {
        type_: EventType::Normal,
        reason: "Computed".into(),
        note: Some("9 is a perfect square".into()),
        action: "Reconcile".into(),
        secondary: None,
    };
    rec.publish(&ev, &reference).await.unwrap();
    let out = k.run(&["describe", "number", "nine"]).await;
    assert!(out.contains("Computed"), "{out}");
    assert!(out.contains("9 is a perfect square"), "{out}");
    let out = k.run(&["get", "events"]).await;
    assert!(out.contains("number/nine"), "{out}");
}

/// kubectl patch --type=merge|json, kubectl wait --for=condition=Ready (watch with a
/// fieldSelector), kubectl get -w (Table watch), kubectl delete (waits for the object to
/// disappear via a watch), --cascade=foreground|orphan through the garbage collector.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patch_wait_watch_delete() {
    let (s, k) = setup().await;
    k.run(&[
        "apply",
        "-f",
        fixtures().join("manifests/numbers.yaml").to_str().unwrap(),
    ])
    .await;
    k.run(&[
        "patch",
        "number",
        "nine",
        "--type=merge",
        "-p",
        r#"{"spec":{"value":25}}"#,
    ])
    .await;
    k.run(&[
        "patch",
        "number",
        "nine",
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/spec/value","value":36}]"#,
    ])
    .await;
    let numbers = numbers_api(&s);
    assert_eq!(numbers.get("nine").await.unwrap().data["spec"]["value"], 36);
    // wait: the condition arrives later
    let api = numbers.clone();
    let setter = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        api.patch_status(
            "nine",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}})),
        )
        .await
        .unwrap();
    });
    let out = k
        .run(&[
            "wait",
            "--for=condition=Ready",
            "number/nine",
            "--timeout=10s",
        ])
        .await;
    assert!(out.contains("condition met"), "{out}");
    setter.await.unwrap();
    // get -w prints the table, then rows as things change
    let mut child = k
        .command(&["get", "numbers", "-w", "--request-timeout=5s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("kubectl runs");
    tokio::time::sleep(Duration::from_millis(700)).await;
    numbers
        .patch(
            "nine",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"value": 49}})),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let _ = child.kill();
    let out = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let out = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.lines().next().unwrap_or("").starts_with("NAME"),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("nine") && l.contains("49")),
        "{out}"
    );
    // ownership for cascading deletes
    let t = s
        .object("math.example.com", "tuples", Some("default"), "pair")
        .unwrap();
    let child_of = |owner: &Value, kind: &str| {
        json!([{"apiVersion": "math.example.com/v1beta1", "kind": kind,
            "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
            "controller": true, "blockOwnerDeletion": true}])
    };
    let refs = child_of(&t, "Tuple");
    numbers
        .patch(
            "nine",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"ownerReferences": refs}})),
        )
        .await
        .unwrap();
    let out = k
        .run(&["delete", "tuple", "pair", "--cascade=orphan"])
        .await;
    assert!(out.contains("deleted"), "{out}");
    let n = numbers.get("nine").await.unwrap();
    assert!(n.metadata.owner_references.unwrap_or_default().is_empty());
    let f = s
        .object("math.example.com", "fermats", Some("default"), "five")
        .unwrap();
    let refs = child_of(&f, "Fermat");
    numbers
        .patch(
            "nine",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"ownerReferences": refs}})),
        )
        .await
        .unwrap();
    let out = k
        .run(&["delete", "fermat", "five", "--cascade=foreground"])
        .await;
    assert!(out.contains("deleted"), "{out}");
    assert!(
        s.object("math.example.com", "fermats", Some("default"), "five")
            .is_none()
    );
    assert!(
        s.object("math.example.com", "numbers", Some("default"), "nine")
            .is_none()
    );
    let out = k.run(&["get", "math"]).await;
    assert!(out.trim().is_empty(), "{out}");
    let (ok, _, err) = k.try_run(&["delete", "number", "nine"]).await;
    assert!(!ok && err.contains("NotFound"), "{err}");
}

/// The standalone binary (`cargo run -p test-apiserver -- --crds ...`) prints the
/// kubeconfig path first; kubectl then talks to it like to any cluster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn standalone_binary() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let kc = dir.path().join("kubeconfig");
    let mut child = Command::new(env!("CARGO_BIN_EXE_test-apiserver"))
        .args(["--kubeconfig", kc.to_str().unwrap(), "--crds"])
        .arg(fixtures().join("crds.yaml"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("the binary starts");
    let stdout = child.stdout.take().unwrap();
    let first = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .map(|_| line)
    })
    .await
    .unwrap()
    .unwrap();
    assert_eq!(first.trim(), kc.to_str().unwrap());
    let k = Kubectl {
        kubeconfig: kc,
        cache: tempfile::tempdir().unwrap(),
    };
    k.run(&[
        "apply",
        "-f",
        fixtures().join("manifests/numbers.yaml").to_str().unwrap(),
    ])
    .await;
    let out = k.run(&["get", "math", "-o", "name"]).await;
    assert_eq!(out.lines().count(), 3, "{out}");
    let _ = child.kill();
    let _ = child.wait();
}

/// `kubectl create quota` (protobuf, like `create namespace`), `kubectl describe quota` and
/// `kubectl get quota` (the quota controller's status), a refused `kubectl create`, and
/// `kubectl delete namespace`, which waits until the namespace controller has emptied and
/// removed it. kube-apiserver v1.24 with kube-controller-manager:
///
/// ```text
/// $ kubectl create quota tq --hard=count/configmaps=1,count/numbers.math.example.com=1 -n s17-k
/// resourcequota/tq created
/// $ kubectl describe quota tq -n s17-k
/// Name:                           tq
/// Namespace:                      s17-k
/// Resource                        Used  Hard
/// --------                        ----  ----
/// count/configmaps                1     1
/// count/numbers.math.example.com  0     1
/// $ kubectl create configmap c1 -n s17-k
/// error: failed to create configmap: configmaps "c1" is forbidden: exceeded quota: tq, requested: count/configmaps=1, used: count/configmaps=1, limited: count/configmaps=1
/// $ kubectl get quota -n s17-k
/// NAME   AGE   REQUEST                                                      LIMIT
/// tq     2s    count/configmaps: 1/1, count/numbers.math.example.com: 0/1
/// $ time kubectl delete namespace s17-k
/// namespace "s17-k" deleted
/// real 0m5.130s
/// ```
///
/// The one ConfigMap counted is `kube-root-ca.crt`, which kube-controller-manager puts in
/// every namespace, and so does this server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quota_and_namespace_deletion() {
    let (s, k) = setup().await;
    s.set_namespace_deletion_delay(Duration::from_millis(300));
    k.run(&["create", "namespace", "q"]).await;
    let out = k
        .run(&[
            "create",
            "quota",
            "tq",
            "--hard=count/configmaps=1,count/numbers.math.example.com=1",
            "-n",
            "q",
        ])
        .await;
    assert!(out.contains("resourcequota/tq created"), "{out}");
    s.wait_for("", "resourcequotas", Duration::from_secs(10), |qs| {
        qs.iter().any(|q| q.pointer("/status/hard").is_some())
    })
    .await
    .unwrap();
    let out = k.run(&["describe", "quota", "tq", "-n", "q"]).await;
    assert!(
        out.contains("count/configmaps                1     1")
            && out.contains("count/numbers.math.example.com  0     1"),
        "{out}"
    );
    let (ok, _, err) = k.try_run(&["create", "configmap", "c1", "-n", "q"]).await;
    assert!(!ok);
    assert_eq!(
        err.trim(),
        "error: failed to create configmap: configmaps \"c1\" is forbidden: exceeded quota: tq, requested: count/configmaps=1, used: count/configmaps=1, limited: count/configmaps=1"
    );
    let out = k.run(&["get", "quota", "-n", "q"]).await;
    assert!(
        out.contains("count/configmaps: 1/1, count/numbers.math.example.com: 0/1"),
        "{out}"
    );
    let out = k.run(&["delete", "namespace", "q"]).await;
    assert!(out.contains("namespace \"q\" deleted"), "{out}");
    assert!(
        s.object("", "namespaces", None, "q").is_none(),
        "kubectl delete returns once the namespace is gone"
    );
    assert!(s.objects("", "configmaps", Some("q")).is_empty());
    let (ok, _, err) = k.try_run(&["delete", "namespace", "default"]).await;
    assert!(!ok);
    assert!(
        err.contains("namespaces \"default\" is forbidden: this namespace may not be deleted"),
        "{err}"
    );
}
