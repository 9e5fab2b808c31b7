//! A shared cluster nobody can break (`make workshop-room`): on the test API server with RBAC
//! enforced, the organiser sets the room up; with their kubeconfig alone a participant does
//! in their namespace what the guide asks (the math kinds, their status, Events, the runner's
//! Lease) and nothing in a neighbour's namespace, nor to a CRD: 403 with the server's words.

use std::path::Path;

use math_workshop::{crds, organiser, solutions};
use serde_json::json;
use test_apiserver::TestServer;

/// The room of `participants` on a fresh server, as the organiser sets it up; their
/// kubeconfigs are written under `dir`.
async fn room(participants: &[&str], dir: &Path) -> TestServer {
    let server = TestServer::start()
        .await
        .expect("the test API server starts");
    let names: Vec<String> = participants.iter().map(|p| p.to_string()).collect();
    let cluster = json!({"server": server.url()});
    let crds = crds::generate(&solutions::track());
    let room = organiser::Room {
        crds: &crds,
        cluster: &cluster,
        participants: &names,
        dir,
        token_hours: organiser::TOKEN_HOURS,
    };
    organiser::set_up(&server.client(), &room)
        .await
        .expect("the organiser sets the room up");
    server.enforce_rbac();
    server
}

/// The client of a participant's kubeconfig file, as the tools build it.
async fn client_of(file: &Path) -> kube::Client {
    let yaml = std::fs::read_to_string(file).expect("the participant's kubeconfig");
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&yaml).expect("a kubeconfig");
    let options = kube::config::KubeConfigOptions::default();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .expect("usable");
    assert_eq!(config.default_namespace, "math-workshop-alice");
    kube::Client::try_from(config).expect("a client")
}

fn api(client: &kube::Client, ns: &str, plural: &str) -> kube::Api<kube::api::DynamicObject> {
    let gvk = kube::api::GroupVersionKind::gvk("math.example.com", "v1beta1", "Number");
    let resource = kube::api::ApiResource::from_gvk_with_plural(&gvk, plural);
    kube::Api::namespaced_with(client.clone(), ns, &resource)
}

fn refusal<T: std::fmt::Debug>(answer: Result<T, kube::Error>) -> (u16, String) {
    match answer {
        Err(kube::Error::Api(status)) => (status.code, status.message),
        other => panic!("not refused: {other:?}"),
    }
}

#[tokio::test]
async fn a_participant_does_the_stages_in_their_namespace_and_nothing_next_door() {
    use kube::api::{ListParams, Patch, PatchParams, PostParams};
    let dir = tempfile::tempdir().expect("a directory");
    let server = room(&["alice", "bob"], dir.path()).await;
    let file = organiser::kubeconfig_path(dir.path(), "alice");
    let alice = client_of(&file).await;
    let mine = api(&alice, "math-workshop-alice", "numbers");
    let number = serde_json::from_value(json!({
        "apiVersion": "math.example.com/v1beta1", "kind": "Number",
        "metadata": {"name": "seven"}, "spec": {"value": 7},
    }))
    .expect("a Number");
    mine.create(&PostParams::default(), &number)
        .await
        .expect("alice creates a Number");
    let status = json!({"status": {"fizzBuzz": "7", "isSquare": false, "isPrime": true, "observedGeneration": 1}});
    mine.patch_status("seven", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .expect("alice writes its status");
    let events = kube::Api::<k8s_openapi::api::core::v1::Event>::namespaced(
        alice.clone(),
        "math-workshop-alice",
    );
    events
        .list(&ListParams::default())
        .await
        .expect("alice reads her Events");
    let leases = kube::Api::<k8s_openapi::api::coordination::v1::Lease>::namespaced(
        alice.clone(),
        "math-workshop-alice",
    );
    let lease =
        serde_json::from_value(json!({"metadata": {"name": "heartbeat"}})).expect("a Lease");
    leases
        .create(&PostParams::default(), &lease)
        .await
        .expect("alice keeps a Lease");
    kube::Api::<k8s_openapi::api::core::v1::Namespace>::all(alice.clone())
        .get("math-workshop-alice")
        .await
        .expect("alice reads her namespace");

    let next_door = api(&alice, "math-workshop-bob", "numbers");
    assert_eq!(
        refusal(next_door.list(&ListParams::default()).await),
        (
            403,
            "numbers.math.example.com is forbidden: User \"system:serviceaccount:math-workshop-alice:alice\" \
             cannot list resource \"numbers\" in API group \"math.example.com\" in the namespace \"math-workshop-bob\""
                .to_string()
        )
    );
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let crds = kube::Api::<CustomResourceDefinition>::all(alice.clone());
    crds.get("numbers.math.example.com")
        .await
        .expect("alice reads the CRDs");
    let (code, message) = refusal(
        crds.delete("numbers.math.example.com", &Default::default())
            .await,
    );
    assert_eq!(code, 403);
    assert!(
        message.ends_with("cannot delete resource \"customresourcedefinitions\" in API group \"apiextensions.k8s.io\" at the cluster scope"),
        "{message}"
    );
    server.shutdown().await;
}

/// `math-workshop ARGS` with a participant's kubeconfig alone: (exit code, stdout, stderr).
async fn as_participant(file: &Path, args: &[&str]) -> (i32, String, String) {
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_math-workshop"))
        .env("LC_ALL", "C.UTF-8")
        .env("KUBECONFIG", file)
        .env_remove("RUST_LOG")
        .args(args)
        .output()
        .await
        .expect("math-workshop runs");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn with_the_room_kubeconfig_the_check_passes_install_installs_nothing_and_all_namespaces_is_refused()
 {
    let dir = tempfile::tempdir().expect("a directory");
    let server = room(&["alice", "bob"], dir.path()).await;
    let file = organiser::kubeconfig_path(dir.path(), "alice");
    // Twice: the second check empties what the first left.
    let check = [
        "check",
        "1",
        "--cluster",
        "--solution",
        "--participant",
        "alice",
    ];
    for _ in 0..2 {
        let (code, out, err) = as_participant(&file, &check).await;
        assert_eq!(code, 0, "{out}\n{err}");
        assert!(out.contains("namespace math-workshop-check-alice"), "{out}");
    }

    let (code, out, err) =
        as_participant(&file, &["install", "--solution", "--participant", "alice"]).await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(
        out.lines().last(),
        Some(
            "nothing installed: this is a room's shared cluster, and the organiser installed the \
             CRDs (the reference solution's, the same schema as yours)"
        ),
        "{out}"
    );
    let (code, out, err) = as_participant(
        &file,
        &[
            "run",
            "--stage",
            "1",
            "--solution",
            "--participant",
            "alice",
            "--all-namespaces",
        ],
    )
    .await;
    assert_eq!(code, 1, "{out}\n{err}");
    assert_eq!(
        err.trim(),
        "error: not watching every namespace: this is a room's shared cluster; leave out \
         ARGS=--all-namespaces to look after your own",
        "{out}"
    );
    // Bob's namespace saw none of it.
    assert!(
        server
            .objects("math.example.com", "numbers", Some("math-workshop-bob"))
            .is_empty()
    );
    server.shutdown().await;
}

/// The namespaces the server holds, by name.
fn namespaces(server: &TestServer) -> Vec<String> {
    server
        .objects("", "namespaces", None)
        .iter()
        .filter_map(|ns| ns["metadata"]["name"].as_str().map(str::to_string))
        .collect()
}

/// An organiser with the cluster's admin kubeconfig checks as a participant the room was not
/// set up for (kube-apiserver v1.36.2 answered its read of the missing namespace 404, and the
/// check stopped there): the check creates its namespace, passes, and deletes what it made.
/// Then again over what an interrupted check (Ctrl-C) leaves: not the organiser's, so deleted
/// and made fresh, not kept.
#[tokio::test(flavor = "multi_thread")]
async fn an_admin_without_a_room_of_their_own_checks_in_a_namespace_the_check_makes() {
    let dir = tempfile::tempdir().expect("a directory");
    let server = room(&["alice"], dir.path()).await;
    let admin = server.kubeconfig_path();
    let check = [
        "check",
        "3",
        "--cluster",
        "--solution",
        "--participant",
        "lead",
    ];
    for round in ["fresh", "over a leftover"] {
        if round == "over a leftover" {
            leave_an_interrupted_checks_namespace(&server).await;
        }
        let (code, out, err) = as_participant(&admin, &check).await;
        assert_eq!(code, 0, "{round}: {out}\n{err}");
        assert!(
            out.contains(
                "✓ the room's CRDs are installed (by the organiser), namespace \
                 math-workshop-check-lead created for the check (deleted at its end)"
            ),
            "{round}: {out}"
        );
        assert!(out.trim_end().ends_with(", 0 failed"), "{round}: {out}");
        // What the check made, it deleted (a namespace being deleted has a deletionTimestamp).
        let left = server.object("", "namespaces", None, "math-workshop-check-lead");
        assert!(
            left.as_ref()
                .is_none_or(|ns| !ns["metadata"]["deletionTimestamp"].is_null()),
            "{round}: {left:?}"
        );
    }
    // The room's own namespaces are as the organiser left them.
    for ns in ["math-workshop-alice", "math-workshop-check-alice"] {
        assert!(namespaces(&server).contains(&ns.to_string()), "{ns}");
    }
    server.shutdown().await;
}

/// `math-workshop-check-lead` as a check interrupted by Ctrl-C leaves it: marked as lead's and
/// as a check's, with a Number in it (once the previous one is gone).
async fn leave_an_interrupted_checks_namespace(server: &TestServer) {
    use kube::api::PostParams;
    let name = "math-workshop-check-lead";
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while server.object("", "namespaces", None, name).is_some() {
        assert!(std::time::Instant::now() < deadline, "{name} never went");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let namespace = serde_json::from_value(json!({"metadata": {"name": name, "annotations": {
        "math.example.com/workshop-participant": "lead",
        "math.example.com/workshop-check": "true",
    }}}))
    .expect("a Namespace");
    kube::Api::<k8s_openapi::api::core::v1::Namespace>::all(server.client())
        .create(&PostParams::default(), &namespace)
        .await
        .expect("the leftover namespace");
    let number = serde_json::from_value(json!({
        "apiVersion": "math.example.com/v1beta1", "kind": "Number",
        "metadata": {"name": "left-over"}, "spec": {"value": 4},
    }))
    .expect("a Number");
    api(&server.client(), name, "numbers")
        .create(&PostParams::default(), &number)
        .await
        .expect("a leftover Number");
}

/// The kubeconfig of a user who may read everything (kube-apiserver's `view` ClusterRole,
/// cluster-wide) and write nothing, written under `dir`.
async fn a_readers_kubeconfig(server: &TestServer, dir: &Path) -> std::path::PathBuf {
    use kube::api::{Patch, PatchParams};
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "User", "name": "reader"}],
    });
    let api = kube::Api::<k8s_openapi::api::rbac::v1::ClusterRoleBinding>::all(server.client());
    api.patch(
        "reader",
        &PatchParams::apply("test"),
        &Patch::Apply(&binding),
    )
    .await
    .expect("the reader is bound to view");
    let user = test_apiserver::UserInfo {
        username: "reader".into(),
        uid: "reader".into(),
        groups: vec![],
    };
    server.add_token("reader-token", user);
    let cluster = json!({"server": server.url()});
    let config = organiser::participant_kubeconfig(&cluster, "reader", "reader-token");
    let file = dir.join("reader.kubeconfig");
    let yaml = serde_yaml::to_string(&config).expect("YAML");
    std::fs::write(&file, yaml).expect("the reader's kubeconfig");
    file
}

/// A participant's room kubeconfig with another participant's name: that name's check
/// namespace is not theirs to read or create (403). Nor is it for a user who may read but
/// not create namespaces (404, then 403). One line says what to do; nothing is written to the
/// cluster.
#[tokio::test(flavor = "multi_thread")]
async fn a_room_kubeconfig_for_another_name_says_what_to_do_and_creates_nothing() {
    let dir = tempfile::tempdir().expect("a directory");
    let server = room(&["alice", "bob"], dir.path()).await;
    let alice = organiser::kubeconfig_path(dir.path(), "alice");
    let reader = a_readers_kubeconfig(&server, dir.path()).await;
    let before = namespaces(&server);
    for (file, name) in [(&alice, "carol"), (&alice, "bob"), (&reader, "reader")] {
        server.reset_requests();
        let check = [
            "check",
            "3",
            "--cluster",
            "--solution",
            "--participant",
            name,
        ];
        let (code, out, err) = as_participant(file, &check).await;
        assert_eq!(code, 1, "{out}\n{err}");
        let failed: Vec<&str> = out.lines().filter(|l| l.starts_with('✗')).collect();
        assert_eq!(
            failed,
            [format!(
                "✗ create the check's namespace math-workshop-check-{name} — your kubeconfig \
                 has no rights to create it on this cluster (403): the organiser runs `make \
                 workshop-room PARTICIPANTS={name}` first (then PARTICIPANT={name} uses \
                 workshop/room/{name}.kubeconfig), or check with the kubeconfig the organiser \
                 gave you (export PARTICIPANT=<your name>)"
            )],
            "{out}"
        );
        let written: Vec<String> = server
            .requests()
            .into_iter()
            .filter(|r| r.verb.is_write() && r.status < 400)
            .map(|r| format!("{} {}", r.method, r.path))
            .collect();
        assert!(written.is_empty(), "{written:?}");
    }
    // The same line for a Japanese reader, in the guide's words (会場, 主催者).
    let check = [
        "--lang",
        "ja",
        "check",
        "3",
        "--cluster",
        "--solution",
        "--participant",
        "carol",
    ];
    let (code, out, err) = as_participant(&alice, &check).await;
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(
        out.contains(
            "✗ チェック用の Namespace math-workshop-check-carol を作る — この kubeconfig には、\
             このクラスターでこの Namespace を作る権限がありません (403)。主催者が先に \
             `make workshop-room PARTICIPANTS=carol` を実行するか (その後は PARTICIPANT=carol \
             で workshop/room/carol.kubeconfig が使われます)、主催者から受け取った自分の \
             kubeconfig でチェックしてください (export PARTICIPANT=<自分の名前>)"
        ),
        "{out}"
    );
    assert_eq!(namespaces(&server), before);
    server.shutdown().await;
}

/// `math-workshop ARGS` with `file` as the kubeconfig, in `lang`: (exit code, stdout, stderr);
/// killed after 60 s (a runner that started would run until stopped).
async fn with_kubeconfig(file: &Path, lang: &str, args: &[&str]) -> (i32, String, String) {
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_math-workshop"))
        .env("LC_ALL", "C.UTF-8")
        .env("KUBECONFIG", file)
        .env_remove("RUST_LOG")
        .args(["--lang", lang])
        .args(args)
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(std::time::Duration::from_secs(60), child)
        .await
        .unwrap_or_else(|_| panic!("{args:?} still running after 60 s"))
        .expect("math-workshop runs");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// `make workshop-install` and `make workshop-run` create the participant's own namespace
/// when it is missing. A kubeconfig that may read the cluster but not create namespaces (here
/// a cluster that is not a room, its CRDs installed by its admin, the namespace of the
/// kubeconfig's context missing) gets the check's one line about it, in English and in
/// Japanese, not the bare "cannot create namespace"; both exit non-zero and create nothing.
#[tokio::test(flavor = "multi_thread")]
async fn install_and_run_without_the_right_to_create_their_namespace_say_what_to_do() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let dir = tempfile::tempdir().expect("a directory");
    let server = TestServer::start()
        .await
        .expect("the test API server starts");
    let crds = kube::Api::<CustomResourceDefinition>::all(server.client());
    for crd in crds::generate(&solutions::track()) {
        crds.create(&kube::api::PostParams::default(), &crd)
            .await
            .expect("the admin installs the CRDs");
    }
    server.enforce_rbac();
    let reader = a_readers_kubeconfig(&server, dir.path()).await;
    let before = namespaces(&server);
    let english = "error: your kubeconfig has no rights to create namespace \
                   math-workshop-reader on this cluster (403): the organiser runs `make \
                   workshop-room PARTICIPANTS=reader` first (then PARTICIPANT=reader uses \
                   workshop/room/reader.kubeconfig), or use the kubeconfig the organiser gave \
                   you (export PARTICIPANT=<your name>)";
    let japanese = "エラー: この kubeconfig には、このクラスターで Namespace \
                    math-workshop-reader を作る権限がありません (403)。主催者が先に `make \
                    workshop-room PARTICIPANTS=reader` を実行するか (その後は \
                    PARTICIPANT=reader で workshop/room/reader.kubeconfig が使われます)、\
                    主催者から受け取った自分の kubeconfig を使ってください (export \
                    PARTICIPANT=<自分の名前>)";
    let install = ["install", "--solution", "--participant", "reader"];
    let run = ["run", "--solution", "--participant", "reader"];
    for (args, lang, line) in [
        (&install, "en", english),
        (&run, "en", english),
        (&install, "ja", japanese),
        (&run, "ja", japanese),
    ] {
        server.reset_requests();
        let (code, out, err) = with_kubeconfig(&reader, lang, args).await;
        assert_ne!(code, 0, "{args:?}: {out}\n{err}");
        assert_eq!(err.trim_end(), line, "{args:?} --lang {lang}:\n{out}");
        let written: Vec<String> = server
            .requests()
            .into_iter()
            .filter(|r| r.verb.is_write() && r.status < 400)
            .map(|r| format!("{} {}", r.method, r.path))
            .collect();
        assert!(written.is_empty(), "{args:?}: {written:?}");
    }
    assert_eq!(namespaces(&server), before);
    server.shutdown().await;
}
