//! The room's files work on another laptop. On the test API server in HTTPS mode, whose
//! kubeconfig names its certificate authority by file path as minikube's does, the organiser
//! runs `math-workshop room` (`make workshop-room`): refused in one line while the files would
//! carry this machine's own address (loopback) or an address the server's certificate does not
//! name, nothing written; with `ROOM_SERVER` the files carry the authority inline and a token
//! that lasts the evening before and the day, and the closing table says who has which file
//! until when. Then, with the organiser's certificate files moved away and a fresh `HOME`,
//! kubectl and the tools *as the participant* (kubectl sends the token over TLS only) work in
//! the participant's namespace and nowhere else.

use std::path::Path;
use std::process::{Command, Output};

use test_apiserver::{ServerOptions, TestServer};

/// The room's cluster: the test API server over HTTPS, RBAC enforced for tokens.
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

/// `math-workshop ARGS` with `kubeconfig`, from a fresh HOME (nobody's ~/.kube).
fn workshop(kubeconfig: &Path, args: &[&str]) -> Output {
    let home = tempfile::tempdir().expect("a fresh HOME");
    Command::new(env!("CARGO_BIN_EXE_math-workshop"))
        .env("LC_ALL", "C.UTF-8")
        .env("KUBECONFIG", kubeconfig)
        .env("HOME", home.path())
        .env_remove("RUST_LOG")
        .args(args)
        .output()
        .expect("math-workshop runs")
}

/// `kubectl ARGS` with `kubeconfig`, from a fresh HOME.
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

/// The namespaces the server holds whose name starts with `math-workshop-`.
fn rooms_namespaces(server: &TestServer) -> Vec<String> {
    server
        .objects("", "namespaces", None)
        .iter()
        .filter_map(|ns| ns["metadata"]["name"].as_str().map(str::to_string))
        .filter(|name| name.starts_with("math-workshop-"))
        .collect()
}

/// The port of the server's address.
fn port(server: &TestServer) -> String {
    server
        .url()
        .rsplit(':')
        .next()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_address_the_room_cannot_reach_is_refused_before_anything_is_written() {
    let server = https_cluster().await;
    let organiser = server.kubeconfig_path();
    let dir = tempfile::tempdir().expect("a directory");
    let room = dir.path().join("room");
    let dir_flag = room.display().to_string();

    // The organiser's kubeconfig says https://127.0.0.1:<port>: no laptop reaches that.
    let output = workshop(&organiser, &["room", "--dir", &dir_flag, "alice", "bob"]);
    assert_eq!(output.status.code(), Some(1), "{}", said(&output));
    let error = String::from_utf8_lossy(&output.stderr);
    assert_eq!(error.lines().count(), 1, "{error}");
    assert!(
        error.starts_with(&format!(
            "error: the cluster of your kubeconfig (context test-apiserver, {}/) is served at {}, \
             an address of this machine only",
            server.url(),
            server.url()
        )) && error.contains("make workshop-room ROOM_SERVER=https://<address>:<port>"),
        "{error}"
    );

    // An address the certificate does not name (it names 127.0.0.1, not localhost).
    let elsewhere = format!("https://localhost:{}", port(&server));
    let output = workshop(
        &organiser,
        &["room", "--dir", &dir_flag, "--server", &elsewhere, "alice"],
    );
    assert_eq!(output.status.code(), Some(1), "{}", said(&output));
    let error = String::from_utf8_lossy(&output.stderr);
    assert_eq!(error.lines().count(), 1, "{error}");
    assert!(
        error.starts_with(&format!(
            "error: {elsewhere} answers, but the API server's certificate does not name \
             localhost"
        )) && error.contains("--tls-san localhost")
            && error.contains("minikube start --apiserver-ips=localhost --listen-address=0.0.0.0"),
        "{error}"
    );
    assert!(!room.exists(), "no file written");
    assert!(rooms_namespaces(&server).is_empty());
    server.shutdown().await;
}

/// The organiser's set-up with `ROOM_SERVER` naming the server as its certificate does, the
/// tokens for `hours`; the closing lines.
fn set_up(server: &TestServer, room: &Path, hours: &str) -> String {
    let output = workshop(
        &server.kubeconfig_path(),
        &[
            "room",
            "--dir",
            &room.display().to_string(),
            "--server",
            &server.url(),
            "--token-hours",
            hours,
            "alice",
            "bob",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", said(&output));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Hours from now until the time `at` (RFC 3339), as the test reads it back.
fn hours_until(at: &str) -> i64 {
    let at: k8s_openapi::jiff::Timestamp = at.parse().expect("an RFC 3339 time");
    (at.as_second() - k8s_openapi::jiff::Timestamp::now().as_second()) / 3600
}

#[tokio::test(flavor = "multi_thread")]
async fn a_participants_file_works_from_a_fresh_home_with_the_organisers_files_gone() {
    let server = https_cluster().await;
    let dir = tempfile::tempdir().expect("a directory");
    let room = dir.path().join("room");
    let closing = set_up(&server, &room, "36");

    // The table: one row per participant, the token's end a day and a half away.
    let rows: Vec<&str> = closing
        .lines()
        .skip_while(|line| !line.starts_with("NAME"))
        .collect();
    assert!(
        rows[0].starts_with("NAME") && rows[0].ends_with("TOKEN VALID UNTIL"),
        "{closing}"
    );
    for (row, name) in rows[1..3].iter().zip(["alice", "bob"]) {
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells[0], name, "{closing}");
        assert!(
            cells[1].ends_with(&format!("{name}.kubeconfig")),
            "{closing}"
        );
        assert_eq!(cells[2], format!("math-workshop-{name}"), "{closing}");
        let hours = hours_until(cells[3]);
        assert!((35..=36).contains(&hours), "{hours} h: {closing}");
    }
    assert!(
        closing.ends_with(
            "  export PARTICIPANT=<name>\n  export KUBECONFIG=$PWD/workshop/room/$PARTICIPANT.kubeconfig\n"
        ),
        "{closing}"
    );

    // The file: the authority inline, none of the organiser's paths, its end at its top.
    let alice = room.join("alice.kubeconfig");
    let text = std::fs::read_to_string(&alice).expect("alice's file");
    let certificates = server
        .certificate_authority()
        .and_then(|ca| ca.parent().map(Path::to_path_buf))
        .expect("the organiser's certificate files");
    assert!(text.contains("certificate-authority-data: "), "{text}");
    assert!(!text.contains("certificate-authority: "), "{text}");
    assert!(
        !text.contains(&certificates.display().to_string()),
        "{text}"
    );
    let header = text.lines().next().unwrap_or_default();
    let until = header
        .split("token valid until ")
        .nth(1)
        .and_then(|rest| rest.split('.').next())
        .unwrap_or_default();
    assert!(
        (35..=36).contains(&hours_until(until)),
        "{header}: the token's end, read from the file"
    );

    // The organiser's files gone: alice's file alone is enough, and kubectl is alice.
    let moved = certificates.with_extension("moved");
    std::fs::rename(&certificates, &moved).expect("the organiser's files move away");
    participant_works_with_the_file_alone(&alice);
    std::fs::rename(&moved, &certificates).expect("put back");
    server.shutdown().await;
}

/// With `file` alone: kubectl is the participant, in their namespace, and refused next door;
/// a stage 1 check as the participant passes.
fn participant_works_with_the_file_alone(file: &Path) {
    let whoami = kubectl(
        file,
        &[
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo.username}",
        ],
    );
    assert_eq!(
        said(&whoami),
        "system:serviceaccount:math-workshop-alice:alice"
    );
    let own = kubectl(file, &["get", "numbers"]);
    assert_eq!(
        said(&own).trim(),
        "No resources found in math-workshop-alice namespace."
    );
    let next_door = kubectl(file, &["get", "numbers", "-n", "math-workshop-bob"]);
    assert!(
        said(&next_door).trim().starts_with(
            "Error from server (Forbidden): numbers.math.example.com is forbidden: User \
             \"system:serviceaccount:math-workshop-alice:alice\" cannot list resource \"numbers\""
        ),
        "{}",
        said(&next_door)
    );
    let check = workshop(
        file,
        &[
            "check",
            "1",
            "--cluster",
            "--solution",
            "--participant",
            "alice",
        ],
    );
    let text = said(&check);
    assert_eq!(check.status.code(), Some(0), "{text}");
    assert!(
        text.lines().next().is_some_and(|first| first
            .contains("on context math-workshop-alice (https://127.0.0.1:")
            && first.ends_with("namespace math-workshop-check-alice (participant alice)")),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn token_hours_choose_the_lifetime() {
    let server = https_cluster().await;
    let dir = tempfile::tempdir().expect("a directory");
    let room = dir.path().join("room");
    let closing = set_up(&server, &room, "48");
    let row = closing
        .lines()
        .find(|line| line.starts_with("alice "))
        .unwrap_or_default();
    let until = row.split_whitespace().nth(3).unwrap_or_default();
    assert!((47..=48).contains(&hours_until(until)), "{closing}");
    let refused = workshop(
        &server.kubeconfig_path(),
        &[
            "room",
            "--server",
            &server.url(),
            "--token-hours",
            "0",
            "alice",
        ],
    );
    assert_eq!(
        String::from_utf8_lossy(&refused.stderr).trim(),
        "error: TOKEN_HOURS=0: a token lasts 1 to 8760 hours (the default, 36, covers the \
         evening before and the day)"
    );
    server.shutdown().await;
}
