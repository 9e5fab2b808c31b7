//! Who and where, said before anything is written. The organiser's names are kept as given or
//! refused with the name that would work (`Taro`, names in Japanese script, a name given
//! twice), and nothing is set up; a participant's `PARTICIPANT` is a name as the files are
//! named, and a room's file that is not there is named with the files that are. A context
//! that is none of kind's, minikube's, the test server's or a room's gets no CRDs without
//! `FORCE=1`, and the first line says which cluster it is.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use test_apiserver::{RequestFilter, TestServer, Verb};

/// `math-workshop ARGS` with `kubeconfig`.
fn workshop(kubeconfig: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_math-workshop"))
        .env("LC_ALL", "C.UTF-8")
        .env("KUBECONFIG", kubeconfig)
        .env_remove("RUST_LOG")
        .args(args)
        .output()
        .expect("math-workshop runs")
}

fn said(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn names_not_as_the_files_are_named_are_refused_and_nothing_is_set_up() {
    let server = TestServer::start().await.expect("the test API server");
    let dir = tempfile::tempdir().expect("a directory");
    let room = dir.path().join("room");
    server.reset_requests();
    let output = workshop(
        &server.kubeconfig_path(),
        &[
            "room",
            "--dir",
            &room.display().to_string(),
            "--server",
            "https://10.0.0.5:6443",
            "太郎",
            "花子",
            "Taro",
            "alice",
            "alice",
        ],
    );
    assert_eq!(output.status.code(), Some(1), "{}", said(&output));
    let refused: Vec<String> = String::from_utf8_lossy(&output.stderr)
        .lines()
        .map(str::to_string)
        .collect();
    let rule = "a participant's name is lowercase ASCII letters, digits and hyphens (it names a \
                namespace and a file)";
    assert_eq!(
        refused,
        [
            format!("the name 太郎 is refused: {rule}; write it in romaji, or use participant-1"),
            format!("the name 花子 is refused: {rule}; write it in romaji, or use participant-2"),
            format!("the name Taro is refused: {rule}; use taro"),
            "the name alice is given 2 times: each participant needs a name of their own \
             (e.g. alice-2)"
                .to_string(),
            "error: nothing set up: fix the names above and run it again".to_string(),
        ]
    );
    // Not a request, not a file.
    assert!(server.requests().is_empty(), "{:?}", server.requests());
    assert!(!room.exists());
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn participant_is_a_name_as_the_files_are_named_and_a_missing_file_is_named() {
    let server = TestServer::start().await.expect("the test API server");
    let taro = workshop(
        &server.kubeconfig_path(),
        &[
            "check",
            "1",
            "--cluster",
            "--solution",
            "--participant",
            "Taro",
        ],
    );
    assert_eq!(taro.status.code(), Some(1), "{}", said(&taro));
    assert_eq!(
        String::from_utf8_lossy(&taro.stderr).trim(),
        "error: PARTICIPANT=Taro: a participant's name is lowercase ASCII letters, digits and \
         hyphens, as the room's files are named: use PARTICIPANT=taro"
    );
    // export KUBECONFIG=$PWD/workshop/room/$PARTICIPANT.kubeconfig with the wrong name.
    let dir = tempfile::tempdir().expect("a directory");
    for name in ["taro", "hanako"] {
        std::fs::write(dir.path().join(format!("{name}.kubeconfig")), "").expect("a file");
    }
    let missing: PathBuf = dir.path().join("Taro.kubeconfig");
    let output = workshop(&missing, &["run", "--stage", "1", "--solution"]);
    assert_eq!(output.status.code(), Some(1), "{}", said(&output));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr).trim(),
        format!(
            "error: KUBECONFIG={} does not exist; {} holds hanako.kubeconfig, taro.kubeconfig \
             (the files are named as make workshop-room printed the names)",
            missing.display(),
            dir.path().display()
        )
    );
    server.shutdown().await;
}

/// The server's kubeconfig with its context called `context`.
fn renamed(server: &TestServer, dir: &Path, context: &str) -> PathBuf {
    let text = std::fs::read_to_string(server.kubeconfig_path()).expect("the kubeconfig");
    let path = dir.join(format!("{context}.kubeconfig"));
    std::fs::write(&path, text.replace("test-apiserver", context)).expect("a kubeconfig");
    path
}

#[tokio::test(flavor = "multi_thread")]
async fn crds_go_into_an_unfamiliar_context_only_with_force_and_the_first_line_names_it() {
    let server = TestServer::start().await.expect("the test API server");
    let dir = tempfile::tempdir().expect("a directory");
    let work = renamed(&server, dir.path(), "prod-eu");
    let crds = RequestFilter::new()
        .verb(Verb::Create)
        .resource("customresourcedefinitions");
    let on = format!("on context prod-eu ({}/)", server.url());

    let refused = workshop(&work, &["install", "--solution", "--participant", "alice"]);
    assert_eq!(refused.status.code(), Some(1), "{}", said(&refused));
    let first = String::from_utf8_lossy(&refused.stdout);
    assert_eq!(
        first.lines().next(),
        Some(format!("participant alice, namespace default, {on}").as_str())
    );
    assert_eq!(
        String::from_utf8_lossy(&refused.stderr).trim(),
        format!(
            "error: not installing into context prod-eu ({}/): it is none of kind's, \
             minikube's, the test API server's or a room's, and CRDs change the whole cluster \
             (a work cluster?). If this cluster is yours to change, add FORCE=1 (make) or \
             --force",
            server.url()
        )
    );
    assert_eq!(server.count(&crds), 0);

    let forced = workshop(
        &work,
        &["install", "--solution", "--force", "--participant", "alice"],
    );
    assert_eq!(forced.status.code(), Some(0), "{}", said(&forced));
    assert_eq!(server.count(&crds), 3);

    // kind's context as it comes: familiar, no FORCE=1 needed; the check names it first.
    let kind = renamed(&server, dir.path(), "kind-kind");
    let check = workshop(
        &kind,
        &[
            "check",
            "1",
            "--cluster",
            "--solution",
            "--participant",
            "alice",
        ],
    );
    assert_eq!(check.status.code(), Some(0), "{}", said(&check));
    assert_eq!(
        String::from_utf8_lossy(&check.stdout).lines().next(),
        Some(
            format!(
                "Stage 1: Number — the reference solutions, workshop/src/solutions/number.rs, on \
                 context kind-kind ({}/), namespace math-workshop-check-alice (participant alice)",
                server.url()
            )
            .as_str()
        )
    );
    server.shutdown().await;
}
