//! `kubectl math tree`, through kubectl's real plugin mechanism: the built `kubectl-math`
//! binary's directory goes on the PATH and the tests run `kubectl math tree ...` against the
//! test API server, with the manager running in-process. The live view runs in tmux and is
//! checked on the captured screen, as a person would see it.

// The manager's test harness (a test API server with the CRDs, the manager in-process, kubectl),
// shared with the tests of the repository's root rather than copied.
#[path = "../../../tests/common/mod.rs"]
mod common;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use common::*;
use k8s_openapi::api::core::v1::Namespace;
use kube::ResourceExt;
use kube::api::{Api, PostParams};
use math_controller::api::{Tuple, TupleSpec};
use serde_json::Value;
use test_apiserver::{RequestFilter, Verb};

/// PATH with the plugin's directory first, so that kubectl finds `kubectl-math`.
fn path_with_plugin() -> OsString {
    let plugin = Path::new(env!("CARGO_BIN_EXE_kubectl-math"));
    let dir = plugin.parent().expect("the plugin is in a directory");
    let mut dirs = vec![dir.to_path_buf()];
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(dirs).expect("a PATH")
}

/// `kubectl math <args>` with `kubeconfig`, its output piped (so: no colour).
async fn math_with(kubeconfig: &Path, args: &[&str]) -> Output {
    let mut command = tokio::process::Command::new("kubectl");
    command
        .arg("math")
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env("PATH", path_with_plugin())
        .env_remove("NO_COLOR")
        .kill_on_drop(true);
    match tokio::time::timeout(Duration::from_secs(120), command.output()).await {
        Ok(Ok(output)) => output,
        Ok(Err(e)) => panic!("kubectl could not be run ({e}): the plugin tests need kubectl"),
        Err(_) => panic!("kubectl math {args:?} did not finish within 120 s"),
    }
}

/// `kubectl math <args>` that must succeed: its stdout.
async fn math(h: &Harness, args: &[&str]) -> String {
    let output = math_with(&h.server.kubeconfig_path(), args).await;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "kubectl math {} failed: {}{stdout}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// `kubectl math <args>` that must fail with one line on stderr: that line.
async fn math_fails(kubeconfig: &Path, args: &[&str]) -> String {
    let output = math_with(kubeconfig, args).await;
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        !output.status.success(),
        "kubectl math {} should fail; it printed {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stdout)
    );
    assert_eq!(output.stdout.len(), 0, "nothing on stdout");
    assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
    stderr
}

/// The line that shows `kind/name`.
fn line<'a>(out: &'a str, name: &str) -> &'a str {
    out.lines()
        .find(|l| l.contains(&format!("{name} ")) || l.ends_with(name))
        .unwrap_or_else(|| panic!("no line for {name} in\n{out}"))
}

#[tokio::test]
async fn the_tree_of_a_fermat_shows_every_tuple_and_number_with_its_status() {
    let h = Harness::start().await;
    h.create_fermat("f", 13).await;
    wait_for(&h.fermats(), "f", fermat_ready).await;
    let out = math(&h, &["tree", "fermat/f"]).await;
    assert!(!out.contains('\x1b'), "plain text when piped:\n{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("NAME") && lines[0].contains("READY"),
        "{out}"
    );
    assert_eq!(
        lines.len(),
        2 + 6 + 12,
        "header, Fermat, 6 Tuples, 12 Numbers:\n{out}"
    );
    let fermat = line(&out, "Fermat/f");
    assert!(
        fermat.contains("True") && fermat.contains("13 (prime, 1 mod 4) → 2²+3²"),
        "{fermat}"
    );
    assert!(line(&out, "Tuple/f-4-and-9").contains("[4, 9] → all squares"));
    assert!(line(&out, "Tuple/f-6-and-7").contains("[6, 7] → not all squares"));
    assert!(line(&out, "└─ Tuple/f-6-and-7").contains("True"));
    assert!(line(&out, "│  └─ Number/f-4-and-9-1").contains("9 → Fizz, square"));
    assert!(line(&out, "Number/f-2-and-11-1").contains("11 → 11, prime"));
    assert!(
        lines[2..].iter().all(|l| l.contains(" True ")),
        "all Ready:\n{out}"
    );
    assert!(!out.contains('✗'), "nothing wrong:\n{out}");

    // The same through `fermat f` and the short name, like kubectl get.
    assert_eq!(
        math(&h, &["tree", "fer", "f", "--max-children", "20"])
            .await
            .lines()
            .count(),
        20
    );
}

#[tokio::test]
async fn tuples_standalone_numbers_and_namespaces() {
    let h = Harness::start().await;
    h.create_tuple("t", vec![0, 1, 2]).await;
    h.create_number("n", 15).await;
    let namespaces: Api<Namespace> = Api::all(h.client.clone());
    let mut ns = Namespace::default();
    ns.metadata.name = Some("elsewhere".into());
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .expect("namespace");
    let tuples: Api<Tuple> = Api::namespaced(h.client.clone(), "elsewhere");
    let t = Tuple::new("far", TupleSpec { numbers: vec![4] });
    tuples
        .create(&PostParams::default(), &t)
        .await
        .expect("tuple");
    wait_for(&h.tuples(), "t", tuple_ready).await;
    wait_for(&tuples, "far", tuple_ready).await;
    wait_for(&h.numbers(), "n", number_ready).await;

    let out = math(&h, &["tree", "tuple/t"]).await;
    assert_eq!(out.lines().count(), 5, "{out}");
    assert!(line(&out, "Tuple/t").contains("[0, 1, 2] → not all squares"));
    assert!(line(&out, "├─ Number/t-0").contains("0 → FizzBuzz, square"));
    assert!(line(&out, "└─ Number/t-2").contains("2 → 2, prime"));

    // No argument: every tree in the namespace, standalone objects at the top level.
    let out = math(&h, &["tree"]).await;
    let roots: Vec<&str> = (out.lines().skip(1))
        .filter(|l| !l.starts_with(['├', '└', '│', ' ']))
        .map(|l| l.split_whitespace().next().unwrap_or_default())
        .collect();
    assert_eq!(roots, ["Tuple/t", "Number/n"], "{out}");

    let out = math(&h, &["tree", "-n", "elsewhere", "tuple/far"]).await;
    assert!(
        line(&out, "Number/far-0").contains("4 → 4, square"),
        "{out}"
    );
    let out = math(&h, &["tree", "-A"]).await;
    assert!(out.starts_with("NAMESPACE"), "{out}");
    assert!(line(&out, "Tuple/far").starts_with("elsewhere "), "{out}");
    assert!(line(&out, "Tuple/t").starts_with("default "), "{out}");
}

#[tokio::test]
async fn missing_and_edited_children_are_marked_and_the_plugin_only_reads() {
    let mut h = Harness::start().await;
    h.create_tuple("t", vec![0, 1, 2]).await;
    wait_for(&h.tuples(), "t", tuple_ready).await;
    // Without a manager, the gaps stay open for the plugin to show.
    h.stop_manager().await;
    let kubeconfig = h.server.kubeconfig_path();
    kubectl_ok(&kubeconfig, &["delete", "number", "t-1"]).await;
    let patch = r#"{"spec":{"value":7}}"#;
    kubectl_ok(
        &kubeconfig,
        &["patch", "number", "t-0", "--type=merge", "-p", patch],
    )
    .await;

    let writes = h.server.write_count();
    let out = math(&h, &["tree", "tuple/t"]).await;
    let missing = line(&out, "Number/t-1");
    assert!(
        missing.contains("wanted: value 1") && missing.contains("✗ missing"),
        "{out}"
    );
    let edited = line(&out, "Number/t-0");
    assert!(
        edited.contains("7 → ?")
            && edited.contains(r#"✗ spec {"value":7}, the parent wants {"value":0}"#)
            && edited.contains("✗ status is for generation 1, spec is generation 2"),
        "{out}"
    );
    assert!(!line(&out, "Number/t-2").contains('✗'), "{out}");

    let json: Value = serde_json::from_str(&math(&h, &["tree", "tuple/t", "-o", "json"]).await)
        .expect("-o json prints JSON");
    let children = json["items"][0]["children"].as_array().expect("children");
    let types = |child: &Value| -> Vec<String> {
        (child["problems"].as_array().expect("problems").iter())
            .map(|p| p["type"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    assert_eq!(types(&children[0]), ["SpecDiffers", "StaleStatus"]);
    assert_eq!(children[1]["exists"], false);
    assert_eq!(types(&children[1]), ["Missing"]);
    assert!(types(&children[2]).is_empty());
    assert_eq!(json["items"][0]["healthy"], false);
    assert_eq!(h.server.write_count(), writes, "the plugin never writes");

    // The manager closes the gaps, and the tree says so.
    h.start_manager();
    wait_for(&h.numbers(), "t-0", |n| {
        n.spec.value == 0 && number_ready(n)
    })
    .await;
    wait_for(&h.numbers(), "t-1", number_ready).await;
    wait_for(&h.tuples(), "t", tuple_ready).await;
    let out = math(&h, &["tree", "tuple/t"]).await;
    assert!(!out.contains('✗'), "{out}");
}

#[tokio::test]
async fn a_child_controlled_by_someone_else_is_marked() {
    let h = Harness::start().await;
    h.create_foreign_number("c-1", 99).await;
    h.create_tuple("c", vec![4, 9]).await;
    wait_for(&h.tuples(), "c", |t| {
        t.status
            .as_ref()
            .is_some_and(|s| s.conditions.iter().any(|c| c.reason == "ChildConflict"))
    })
    .await;
    wait_for(&h.numbers(), "c-0", number_ready).await;

    let out = math(&h, &["tree", "tuple/c"]).await;
    let tuple = line(&out, "Tuple/c");
    assert!(
        tuple.contains("False") && tuple.contains("owned by someone else"),
        "{out}"
    );
    let foreign = line(&out, "Number/c-1");
    assert!(
        foreign.contains("✗ controlled by ConfigMap someone"),
        "{out}"
    );
    assert!(!line(&out, "Number/c-0").contains('✗'), "{out}");
    // Its controller is no Tuple: it is also a tree of its own.
    let all = math(&h, &["tree"]).await;
    assert!(all.lines().any(|l| l.starts_with("Number/c-1 ")), "{all}");
}

/// Sets a terminal's title (OSC 0 … BEL) and clears its screen (CSI 2 J).
const EVIL: &str = "\x1b]0;pwned\x07\x1b[2J";

/// Objects whose strings carry terminal escapes, written through the API as anyone with write
/// access could (object names cannot hold control characters; owner names, statuses and
/// condition messages can): Tuple `t` wants Number `t-0`, which a ConfigMap owner named with
/// escapes controls; Number `n` has escapes in its fizzBuzz and its condition message. No
/// manager runs, so nothing rewrites them.
async fn objects_with_escapes(h: &Harness) {
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
    use kube::api::{Patch, PatchParams};
    use math_controller::api::{Number, NumberSpec};
    let owner = Api::<ConfigMap>::default_namespaced(h.client.clone())
        .create(
            &PostParams::default(),
            &ConfigMap {
                metadata: kube::api::ObjectMeta {
                    name: Some("someone".into()),
                    ..Default::default()
                },
                ..Default::default()
            },
        )
        .await
        .expect("owner");
    h.create_tuple("t", vec![4]).await;
    let mut foreign = Number::new("t-0", NumberSpec { value: 4 });
    foreign.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: format!("owner{EVIL}"),
        uid: owner.uid().expect("uid"),
        controller: Some(true),
        block_owner_deletion: None,
    }]);
    h.numbers()
        .create(&PostParams::default(), &foreign)
        .await
        .expect("a Number with an owner named with escapes");
    h.create_number("n", 15).await;
    let status = serde_json::json!({"status": {
        "observedGeneration": 1,
        "fizzBuzz": format!("Buzz{EVIL}"),
        "conditions": [{
            "type": "Ready", "status": "False", "reason": "Waiting",
            "message": format!("waiting{EVIL}"),
            "lastTransitionTime": "2024-01-01T00:00:00Z",
        }],
    }});
    h.numbers()
        .patch_status("n", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .expect("a status with escapes");
}

/// Control characters in `text` other than line ends.
fn control_characters(text: &str) -> Vec<char> {
    text.chars()
        .filter(|c| c.is_control() && *c != '\n')
        .collect()
}

#[tokio::test]
async fn escapes_from_the_cluster_are_printed_escaped_as_kubectl_does() {
    let h = Harness::without_manager().await;
    objects_with_escapes(&h).await;
    let out = math(&h, &["tree"]).await;
    assert_eq!(control_characters(&out), [], "{out:?}");
    assert!(
        line(&out, "Number/n").contains("Buzz^[]0;pwned^G^[[2J")
            && line(&out, "Number/n").contains("waiting^[]0;pwned^G^[[2J"),
        "{out}"
    );
    // kubectl's own escaping of the same owner name (it replaces ESC and CR, and lets BEL
    // through, which we escape too).
    let kubectl = kubectl_ok(
        &h.server.kubeconfig_path(),
        &[
            "get",
            "number",
            "t-0",
            "--no-headers",
            "-o",
            "custom-columns=OWNER:.metadata.ownerReferences[0].name",
        ],
    )
    .await;
    let by_kubectl = kubectl.trim_end();
    assert!(by_kubectl.starts_with("owner^[]0;pwned"), "{by_kubectl:?}");
    assert!(
        line(&out, "Number/t-0").contains(&format!(
            "✗ controlled by ConfigMap {} (uid",
            by_kubectl.replace('\x07', "^G")
        )),
        "kubectl printed {by_kubectl:?}; we printed\n{out}"
    );
    // JSON carries the values, escaped as JSON escapes them.
    let json = math(&h, &["tree", "-o", "json"]).await;
    assert_eq!(control_characters(&json), [], "{json}");
    assert!(
        json.contains(r"Buzz\u001b]0;pwned\u0007\u001b[2J"),
        "{json}"
    );
}

#[tokio::test]
async fn the_live_view_prints_escapes_from_the_cluster_escaped() {
    let h = Harness::without_manager().await;
    objects_with_escapes(&h).await;
    let dir = tempfile::Builder::new()
        .prefix("tmux-")
        .tempdir()
        .expect("tempdir");
    let tmux = Tmux::start(dir, &h.server.kubeconfig_path(), "tree --watch").await;
    let (plain, _) = tmux
        .until("the tree on screen", |plain, _| {
            screen_line(plain, "Number/n").is_some_and(|l| l.contains("Buzz^[]0;pwned^G^[[2J"))
        })
        .await;
    assert!(
        screen_line(&plain, "Number/t-0")
            .is_some_and(|l| l.contains("controlled by ConfigMap owner^[]0;pwned^G^[[2J")),
        "{plain}"
    );
    // The screen was not cleared under the view's title, and the title was not changed.
    assert!(
        plain
            .lines()
            .next()
            .is_some_and(|l| l.contains("kubectl math tree --watch")),
        "{plain}"
    );
    let title = tmux
        .run(&["display", "-p", "-t", "view", "#{pane_title}"])
        .await;
    assert!(
        !title.contains("pwned"),
        "the terminal's title was set to {title:?}"
    );
    tmux.run(&["send-keys", "-t", "view", "q"]).await;
    let (exit, stty) = tmux.exited().await;
    assert_eq!(exit.trim(), "0");
    cooked(&stty);
}

#[tokio::test]
async fn large_trees_fold_and_depth_cuts() {
    let h = Harness::start().await;
    h.create_fermat("big", 50).await;
    wait_for(&h.fermats(), "big", fermat_ready).await;
    let out = math(&h, &["tree", "fermat/big"]).await;
    assert!(out.contains("└─ … 5 more Tuples, all Ready"), "{out}");
    assert_eq!(
        out.lines().filter(|l| l.contains("Tuple/")).count(),
        20,
        "{out}"
    );
    let out = math(
        &h,
        &["tree", "fermat/big", "--max-children", "3", "--depth", "1"],
    )
    .await;
    assert!(!out.contains("Number/"), "{out}");
    assert!(out.contains("│  └─ … 2 Numbers, all Ready"), "{out}");
    assert!(out.contains("└─ … 22 more Tuples, all Ready"), "{out}");
    let out = math(&h, &["tree", "fermat/big", "--depth", "0"]).await;
    assert_eq!(out.lines().count(), 3, "{out}");

    // JSON has every child, whatever --max-children says.
    let json: Value =
        serde_json::from_str(&math(&h, &["tree", "fermat/big", "-o", "json"]).await).expect("JSON");
    let fermat = &json["items"][0];
    assert_eq!(fermat["kind"], "Fermat");
    assert_eq!(fermat["healthy"], true);
    assert_eq!(
        fermat["status"]["decompositions"],
        serde_json::json!(["1²+7²", "5²+5²"])
    );
    let tuples = fermat["children"].as_array().expect("tuples");
    assert_eq!(tuples.len(), 25);
    assert_eq!(tuples[24]["metadata"]["name"], "big-25-and-25");
    assert_eq!(tuples[24]["children"][1]["spec"]["value"], 25);
    assert_eq!(tuples[24]["children"][1]["ready"], "True");
}

#[tokio::test]
async fn errors_say_what_to_do_in_one_line() {
    let h = Harness::start().await;
    let kubeconfig = h.server.kubeconfig_path();
    let err = math_fails(&kubeconfig, &["tree", "fermat/nope"]).await;
    assert!(
        err.starts_with(r#"error: fermat "nope" not found in namespace "default""#),
        "{err}"
    );
    let err = math_fails(&kubeconfig, &["tree", "pod/x"]).await;
    assert!(
        err.contains("is not fermat/NAME, tuple/NAME or number/NAME"),
        "{err}"
    );
    let err = math_fails(&kubeconfig, &["tree", "-A", "fermat/x"]).await;
    assert!(err.contains("-n NAMESPACE"), "{err}");
    let err = math_fails(&kubeconfig, &["tree", "--watch"]).await;
    assert!(err.contains("--watch draws in a terminal"), "{err}");
    let err = math_fails(&kubeconfig, &["tree", "--context", "nowhere"]).await;
    assert!(
        err.contains("no cluster configured") && err.contains("nowhere"),
        "{err}"
    );

    let bare = Harness::without_crds().await;
    let err = math_fails(&bare.server.kubeconfig_path(), &["tree"]).await;
    assert!(
        err.contains("CRDs") && err.contains("run `make install`"),
        "{err}"
    );

    let dir = tempfile::tempdir().expect("tempdir");
    let err = math_fails(&dir.path().join("absent"), &["tree"]).await;
    assert!(err.contains("no cluster configured"), "{err}");
    // A cluster that is not there: a port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let config = std::fs::read_to_string(&kubeconfig).expect("kubeconfig");
    let url = h.server.url();
    let down = dir.path().join("down");
    std::fs::write(
        &down,
        config.replace(&url, &format!("http://127.0.0.1:{port}")),
    )
    .expect("write");
    let err = math_fails(&down, &["tree"]).await;
    assert!(
        err.contains("cannot reach the API server") && err.contains("is the cluster running?"),
        "{err}"
    );
}

/// A tmux server of the test's own, on a socket in a temporary directory.
struct Tmux {
    dir: tempfile::TempDir,
}

impl Tmux {
    fn socket(&self) -> PathBuf {
        self.dir.path().join("tmux.sock")
    }

    async fn run(&self, args: &[&str]) -> String {
        let output = tokio::process::Command::new("tmux")
            .arg("-S")
            .arg(self.socket())
            .args(args)
            .env("TERM", "xterm-256color")
            .output()
            .await
            .unwrap_or_else(|e| {
                panic!("tmux could not be run ({e}): install it (apt-get install tmux)")
            });
        assert!(
            output.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Start `kubectl math <args>` in a 200×50 terminal; when it exits, its exit code and the
    /// terminal settings it left behind (`stty -a`) are written next to the socket.
    async fn start(dir: tempfile::TempDir, kubeconfig: &Path, args: &str) -> Tmux {
        let tmux = Tmux { dir };
        let out = tmux.dir.path().display().to_string();
        let script = format!(
            "PATH='{}' KUBECONFIG='{}' kubectl math {args}; echo $? > {out}/exit; stty -a > {out}/stty.new; mv {out}/stty.new {out}/stty; exec sleep 600",
            path_with_plugin().to_string_lossy(),
            kubeconfig.display()
        );
        let (w, h) = ("200", "50");
        tmux.run(&[
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "view",
            "-x",
            w,
            "-y",
            h,
            &script,
        ])
        .await;
        tmux
    }

    async fn screen(&self, escapes: bool) -> String {
        let args: &[&str] = if escapes {
            &["capture-pane", "-p", "-e", "-t", "view"]
        } else {
            &["capture-pane", "-p", "-t", "view"]
        };
        self.run(args).await
    }

    /// Wait until the screen shows what `done` looks for; returns (plain, with escapes).
    async fn until(&self, what: &str, done: impl Fn(&str, &str) -> bool) -> (String, String) {
        eventually(
            what,
            || async { Some((self.screen(false).await, self.screen(true).await)) },
            |(plain, escaped)| done(plain, escaped),
        )
        .await
    }

    /// Wait for the program to exit; its exit code and `stty -a` afterwards. The shell stays
    /// (a dead pane would not tell whether the cursor is shown).
    async fn exited(&self) -> (String, String) {
        let read = |f: &str| std::fs::read_to_string(self.dir.path().join(f)).unwrap_or_default();
        eventually(
            "the live view to exit",
            || async { Some(read("stty")) },
            |stty| stty.contains("icanon"),
        )
        .await;
        let modes = self
            .run(&[
                "display",
                "-p",
                "-t",
                "view",
                "#{alternate_on} #{cursor_flag}",
            ])
            .await;
        assert_eq!(
            modes.trim(),
            "0 1",
            "the normal screen is back, with a cursor"
        );
        (read("exit"), read("stty"))
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = std::process::Command::new("tmux")
            .arg("-S")
            .arg(self.socket())
            .arg("kill-server")
            .status();
    }
}

/// The terminal is back in cooked mode: line editing and echo, as before the view.
fn cooked(stty: &str) {
    let words: Vec<&str> = stty.split_whitespace().collect();
    assert!(
        words.contains(&"icanon") && words.contains(&"echo"),
        "stty -a after the view: {stty}"
    );
}

fn screen_line<'a>(screen: &'a str, name: &str) -> Option<&'a str> {
    screen
        .lines()
        .find(|l| l.contains(&format!("{name} ")) || l.contains(&format!("{name}\x1b")))
}

#[tokio::test]
async fn the_live_view_shows_a_deleted_number_go_and_come_back_highlighted() {
    let mut h = Harness::start().await;
    h.create_fermat("x", 13).await;
    wait_for(&h.fermats(), "x", fermat_ready).await;
    let kubeconfig = h.server.kubeconfig_path();
    let dir = tempfile::Builder::new()
        .prefix("tmux-")
        .tempdir()
        .expect("tempdir");
    let tmux = Tmux::start(dir, &kubeconfig, "tree fermat/x --watch").await;
    let number = "Number/x-4-and-9-1";
    tmux.until("the tree on screen", |plain, _| {
        plain.contains("kubectl math tree fermat/x --watch")
            && screen_line(plain, number)
                .is_some_and(|l| l.contains("9 → Fizz, square") && l.contains("True"))
    })
    .await;

    // Without the manager the Number stays gone, long enough to be seen.
    h.stop_manager().await;
    let lists = RequestFilter::new().verb(Verb::List);
    let lists_before = h.server.count(&lists);
    kubectl_ok(&kubeconfig, &["delete", "number", "x-4-and-9-1"]).await;
    let (plain, escaped) = tmux
        .until("the Number shown gone", |plain, _| {
            screen_line(plain, number)
                .is_some_and(|l| l.contains("wanted: value 9") && l.contains("✗ gone"))
        })
        .await;
    assert!(
        screen_line(&escaped, number).is_some_and(|l| l.contains("41m")),
        "gone, in red:\n{escaped}"
    );
    assert!(!plain.contains('↻'), "{plain}");
    assert_eq!(
        h.server.count(&lists),
        lists_before,
        "the view follows the watch; it does not list again"
    );

    // The manager puts it back: a new UID, highlighted, and Ready.
    h.start_manager();
    let back = wait_for(&h.numbers(), "x-4-and-9-1", number_ready).await;
    let uid = back.uid().expect("uid");
    let (plain, escaped) = tmux
        .until("the Number back, highlighted", |plain, _| {
            screen_line(plain, number)
                .is_some_and(|l| l.contains("↻ back, new uid") && l.contains("✓ now Ready"))
        })
        .await;
    let line = screen_line(&plain, number).expect("line");
    assert!(line.contains(&uid[..8]) && line.contains("True"), "{line}");
    let highlighted = screen_line(&escaped, number).expect("line");
    assert!(
        highlighted.contains("\x1b[42m") || highlighted.contains(";42m"),
        "highlighted: {highlighted:?}"
    );

    tmux.run(&["send-keys", "-t", "view", "q"]).await;
    let (exit, stty) = tmux.exited().await;
    assert_eq!(exit.trim(), "0");
    cooked(&stty);
}

#[tokio::test]
async fn ctrl_c_quits_the_live_view_and_restores_the_terminal() {
    let h = Harness::start().await;
    h.create_tuple("t", vec![1, 2]).await;
    wait_for(&h.tuples(), "t", tuple_ready).await;
    let dir = tempfile::Builder::new()
        .prefix("tmux-")
        .tempdir()
        .expect("tempdir");
    let tmux = Tmux::start(dir, &h.server.kubeconfig_path(), "tree --watch").await;
    tmux.until("the tree on screen", |plain, _| {
        screen_line(plain, "Number/t-1").is_some()
    })
    .await;
    let (_, escaped) = tmux
        .until("colour", |_, escaped| escaped.contains("\x1b[32m"))
        .await;
    assert!(escaped.contains("True"), "{escaped}");
    tmux.run(&["send-keys", "-t", "view", "C-c"]).await;
    let (exit, stty) = tmux.exited().await;
    assert_eq!(exit.trim(), "0");
    cooked(&stty);
}
