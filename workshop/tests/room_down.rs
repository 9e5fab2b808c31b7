//! `make workshop-room-down` takes away everything the room made, and says what: the
//! ServiceAccounts (their tokens answer 401 from then on), the ClusterRole and its bindings,
//! the namespaces with what is in them, the room's CRDs with every object of theirs, the files;
//! what was on the cluster before stays. A participant's next command then says that their
//! access ended, in one line and in both languages, never "start minikube"; rights taken away
//! (403) get a line of their own. On the test API server in HTTPS mode, so that kubectl is the
//! participant too.

use std::path::Path;
use std::process::{Command, Output};

use test_apiserver::{ServerOptions, TestServer};

async fn https_cluster() -> TestServer {
    let server = TestServer::start_with(ServerOptions {
        https: true,
        ..Default::default()
    })
    .await
    .expect("the HTTPS test API server starts");
    server.enforce_rbac();
    server
}

/// `math-workshop ARGS` with `kubeconfig`, in `lang`, from a fresh HOME.
fn workshop(kubeconfig: &Path, lang: &str, args: &[&str]) -> Output {
    let home = tempfile::tempdir().expect("a fresh HOME");
    Command::new(env!("CARGO_BIN_EXE_math-workshop"))
        .env("LC_ALL", "C.UTF-8")
        .env("KUBECONFIG", kubeconfig)
        .env("HOME", home.path())
        .env_remove("RUST_LOG")
        .args(["--lang", lang])
        .args(args)
        .output()
        .expect("math-workshop runs")
}

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

/// The room of alice and bob, files in `room`; alice's file copied to `kept` (a participant
/// keeps theirs on their laptop when the organiser's folder goes).
fn set_up(server: &TestServer, room: &Path, kept: &Path) {
    let output = workshop(
        &server.kubeconfig_path(),
        "en",
        &[
            "room",
            "--dir",
            &room.display().to_string(),
            "--server",
            &server.url(),
            "alice",
            "bob",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", said(&output));
    std::fs::copy(room.join("alice.kubeconfig"), kept).expect("alice keeps her file");
}

/// The names of the stored objects of a resource.
fn names(server: &TestServer, group: &str, plural: &str) -> Vec<String> {
    server
        .objects(group, plural, None)
        .iter()
        .filter_map(|o| o["metadata"]["name"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_room_taken_down_leaves_nothing_and_the_next_command_says_access_ended() {
    let server = https_cluster().await;
    let dir = tempfile::tempdir().expect("a directory");
    let room = dir.path().join("room");
    let alice = dir.path().join("alice.kubeconfig");
    // What the organiser's cluster held before the room: left alone.
    let admin = server.kubeconfig_path();
    let before = kubectl(&admin, &["create", "namespace", "demo"]);
    assert!(before.status.success(), "{}", said(&before));
    set_up(&server, &room, &alice);
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples/number.yaml");
    let applied = kubectl(&alice, &["apply", "-f", &sample.display().to_string()]);
    assert!(applied.status.success(), "{}", said(&applied));

    let down = workshop(
        &admin,
        "en",
        &["room-down", "--dir", &room.display().to_string()],
    );
    assert_eq!(down.status.code(), Some(0), "{}", said(&down));
    let lines: Vec<String> = String::from_utf8_lossy(&down.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    let expected_start = [
        format!(
            "taking the room down on context test-apiserver, {}/",
            server.url()
        ),
        "deleted the ServiceAccounts, whose tokens now answer 401: alice, bob".to_string(),
        "deleted the ClusterRole math-workshop-participant and its ClusterRoleBindings: \
         math-workshop-participant-alice, math-workshop-participant-bob"
            .to_string(),
        "deleted the namespaces, and with them the Roles, RoleBindings and objects in them: \
         math-workshop-alice, math-workshop-bob, math-workshop-check-alice, \
         math-workshop-check-bob"
            .to_string(),
        "deleted the room's CRDs, and with them every Number, Tuple and Fermat: \
         fermats.math.example.com, numbers.math.example.com, tuples.math.example.com"
            .to_string(),
        format!(
            "removed the files from {}: alice.kubeconfig, bob.kubeconfig",
            room.display()
        ),
    ];
    assert_eq!(lines[..6], expected_start, "{lines:#?}");
    assert!(
        lines[6].starts_with("nothing of the room is left on the cluster (gone after "),
        "{lines:#?}"
    );

    // What it looked for is gone; what was there before is not.
    let namespaces = names(&server, "", "namespaces");
    assert!(namespaces.contains(&"demo".to_string()), "{namespaces:?}");
    assert!(
        !namespaces.iter().any(|ns| ns.starts_with("math-workshop-")),
        "{namespaces:?}"
    );
    for (group, plural) in [
        ("", "serviceaccounts"),
        ("rbac.authorization.k8s.io", "clusterroles"),
        ("rbac.authorization.k8s.io", "clusterrolebindings"),
        ("apiextensions.k8s.io", "customresourcedefinitions"),
    ] {
        let left: Vec<String> = names(&server, group, plural)
            .into_iter()
            .filter(|name| name.contains("math-workshop") || name.ends_with("math.example.com"))
            .collect();
        assert!(left.is_empty(), "{plural}: {left:?}");
    }
    assert!(!room.exists(), "the room's folder is gone");

    // alice's next command: her access ended, in one line, in both languages.
    let described = format!("context math-workshop-alice, {}/", server.url());
    for (lang, line) in [
        (
            "en",
            format!(
                "error: your room access has ended or is not valid ({described} answered 401): \
                 ask the organiser for a new file — make workshop-room PARTICIPANTS=alice"
            ),
        ),
        (
            "ja",
            format!(
                "エラー: 会場へのアクセスが終了したか、無効です ({described} が 401 を返しました)。\
                 主催者に新しいファイルを頼んでください — make workshop-room PARTICIPANTS=alice"
            ),
        ),
    ] {
        let check = workshop(
            &alice,
            lang,
            &[
                "check",
                "1",
                "--cluster",
                "--solution",
                "--participant",
                "alice",
            ],
        );
        assert_eq!(check.status.code(), Some(1), "{}", said(&check));
        assert_eq!(String::from_utf8_lossy(&check.stderr).trim(), line);
    }
    let again = workshop(
        &admin,
        "en",
        &["room-down", "--dir", &room.display().to_string()],
    );
    assert_eq!(
        String::from_utf8_lossy(&again.stdout).lines().last(),
        Some(
            format!(
                "no room on context test-apiserver, {}/: nothing labelled \
                 math.example.com/workshop-room there",
                server.url()
            )
            .as_str()
        )
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn rights_taken_away_get_their_own_line() {
    let server = https_cluster().await;
    let dir = tempfile::tempdir().expect("a directory");
    let room = dir.path().join("room");
    let alice = dir.path().join("alice.kubeconfig");
    set_up(&server, &room, &alice);
    let admin = server.kubeconfig_path();
    let taken = kubectl(
        &admin,
        &[
            "delete",
            "rolebinding",
            "math-workshop-participant",
            "-n",
            "math-workshop-alice",
        ],
    );
    assert!(taken.status.success(), "{}", said(&taken));
    let run = workshop(
        &alice,
        "en",
        &[
            "run",
            "--stage",
            "1",
            "--solution",
            "--participant",
            "alice",
        ],
    );
    assert_eq!(run.status.code(), Some(1), "{}", said(&run));
    assert_eq!(
        String::from_utf8_lossy(&run.stderr).trim(),
        format!(
            "error: your rights in the room were taken away (context math-workshop-alice, {}/ \
             answered 403 for your namespace math-workshop-alice): ask the organiser to give \
             them back — make workshop-room PARTICIPANTS=alice",
            server.url()
        )
    );
    // The organiser gives them back by running the same command again.
    let output = workshop(
        &admin,
        "en",
        &[
            "room",
            "--dir",
            &room.display().to_string(),
            "--server",
            &server.url(),
            "alice",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", said(&output));
    let back = kubectl(&room.join("alice.kubeconfig"), &["get", "numbers"]);
    assert!(back.status.success(), "{}", said(&back));
    server.shutdown().await;
}
