//! The workshop hands-on, end to end: the real `kubectl` drives the test API server the way
//! a learner does (`kubectl apply -f crds/`, `kubectl apply -f samples/`, `kubectl get math`,
//! `kubectl delete number t-1`, `kubectl describe tuple t`), while the real manager runs
//! in-process. Every assertion is on what the learner sees: tables, statuses, children,
//! Events, exit codes and error messages, and the request counts the server keeps.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Output;
use std::time::Duration;

use common::*;
use serde_json::Value;
use test_apiserver::{RequestFilter, Verb};

/// How long `kubectl wait` may take; as generous as [`CONVERGE`].
const WAIT: &str = "--timeout=60s";
/// For 51 Fermats, 625 Tuples and 1250 Numbers on a loaded two-core machine, where the test
/// API server (a debug build) spends most of its time in garbage-collection passes: one
/// kubectl run must end before `common::kubectl` gives up on it (120 s), so `kubectl wait`
/// is run again while it times out, up to [`BULK_ATTEMPTS`] times.
const WAIT_LONG: &str = "--timeout=100s";
const BULK_ATTEMPTS: usize = 3;

/// A test API server, the manager, and what a learner's shell has: a directory for the YAML
/// files they write, and a kubectl discovery cache of their own (ports are reused between
/// runs, and a cache left by another server would describe other resources).
struct Workshop {
    h: Harness,
    dir: tempfile::TempDir,
}

impl Workshop {
    /// CRDs installed, manager running: the workshop after `make install && cargo run`.
    async fn start() -> Workshop {
        Workshop::with(Harness::start().await)
    }

    fn with(h: Harness) -> Workshop {
        let dir = tempfile::Builder::new()
            .prefix("workshop-")
            .tempdir()
            .expect("a temporary directory");
        Workshop { h, dir }
    }

    /// `--cache-dir` first, then `args`.
    fn args<'a>(&self, cache: &'a str, args: &[&'a str]) -> Vec<&'a str> {
        let mut all = vec![cache];
        all.extend_from_slice(args);
        all
    }

    fn cache_flag(&self) -> String {
        format!(
            "--cache-dir={}",
            self.dir.path().join("kube-cache").display()
        )
    }

    async fn kubectl(&self, args: &[&str]) -> Output {
        let cache = self.cache_flag();
        let kubeconfig = self.h.server.kubeconfig_path();
        kubectl(&kubeconfig, &self.args(&cache, args)).await
    }

    /// kubectl that must succeed; its stdout.
    async fn ok(&self, args: &[&str]) -> String {
        let cache = self.cache_flag();
        let kubeconfig = self.h.server.kubeconfig_path();
        kubectl_ok(&kubeconfig, &self.args(&cache, args)).await
    }

    /// kubectl that must fail; its stderr.
    async fn fails(&self, args: &[&str]) -> String {
        let output = self.kubectl(args).await;
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert!(
            !output.status.success(),
            "kubectl {} should have failed; it printed:\n{}{stderr}",
            args.join(" "),
            String::from_utf8_lossy(&output.stdout)
        );
        stderr
    }

    /// Write a YAML file the way a learner would, and return its path for `kubectl apply -f`.
    fn file(&self, name: &str, yaml: &str) -> String {
        let path: PathBuf = self.dir.path().join(name);
        std::fs::write(&path, yaml).expect("write a YAML file");
        path.to_string_lossy().into_owned()
    }

    /// `kubectl apply -f` of YAML written on the spot.
    async fn apply(&self, name: &str, yaml: &str) -> String {
        let file = self.file(name, yaml);
        self.ok(&["apply", "-f", &file]).await
    }

    /// `kubectl get <what> -o json`, parsed.
    async fn json(&self, what: &[&str]) -> Value {
        let mut args = vec!["get"];
        args.extend_from_slice(what);
        args.extend_from_slice(&["-o", "json"]);
        let out = self.ok(&args).await;
        serde_json::from_str(&out)
            .unwrap_or_else(|e| panic!("kubectl get -o json printed no JSON ({e}): {out}"))
    }

    /// One object, or `None` when kubectl says it does not exist.
    async fn get(&self, kind: &str, name: &str) -> Option<Value> {
        let out = self
            .ok(&["get", kind, name, "--ignore-not-found", "-o", "json"])
            .await;
        if out.trim().is_empty() {
            return None;
        }
        Some(serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}")))
    }

    /// Every object of a kind, by name.
    async fn items(&self, kind: &str) -> BTreeMap<String, Value> {
        let list = self.json(&[kind]).await;
        list["items"]
            .as_array()
            .unwrap_or_else(|| panic!("a list of {kind}: {list}"))
            .iter()
            .map(|item| (name(item).to_string(), item.clone()))
            .collect()
    }

    /// `kubectl get <kind> <name> -o jsonpath=<path>`.
    async fn jsonpath(&self, kind: &str, name: &str, path: &str) -> String {
        self.ok(&["get", kind, name, "-o", &format!("jsonpath={path}")])
            .await
    }

    /// `kubectl wait --for=<condition> <objects>` with the workshop's generous timeout.
    async fn wait(&self, condition: &str, objects: &[&str]) -> String {
        let mut args = vec!["wait", condition, WAIT];
        args.extend_from_slice(objects);
        self.ok(&args).await
    }

    /// Every object of the `math` category (`kubectl get math`), with the names of those
    /// whose Ready condition is not True for their current generation.
    async fn not_ready(&self) -> (usize, Vec<String>) {
        let list = self.json(&["math"]).await;
        let items = list["items"].as_array().cloned().unwrap_or_default();
        let waiting = items
            .iter()
            .filter(|item| !is_ready(item))
            .map(|item| format!("{}/{}", item["kind"], name(item)))
            .collect();
        (items.len(), waiting)
    }

    /// `kubectl wait` with [`WAIT_LONG`], run again while it times out.
    async fn wait_long(&self, condition: &str, objects: &[&str]) -> String {
        let mut args = vec!["wait", condition, WAIT_LONG];
        args.extend_from_slice(objects);
        let mut last = String::new();
        for _ in 0..BULK_ATTEMPTS {
            let output = self.kubectl(&args).await;
            if output.status.success() {
                return String::from_utf8_lossy(&output.stdout).into_owned();
            }
            last = String::from_utf8_lossy(&output.stderr).into_owned();
            assert!(
                last.contains("timed out waiting"),
                "kubectl {}: {last}",
                args.join(" ")
            );
        }
        panic!("kubectl {} kept timing out: {last}", args.join(" "));
    }

    /// `kubectl describe <kind> <name>`.
    async fn describe(&self, kind: &str, name: &str) -> String {
        self.ok(&["describe", kind, name]).await
    }
}

fn name(obj: &Value) -> &str {
    obj["metadata"]["name"].as_str().unwrap_or_default()
}

fn uid(obj: &Value) -> String {
    obj["metadata"]["uid"]
        .as_str()
        .unwrap_or_else(|| panic!("no uid: {obj}"))
        .to_string()
}

/// The object's controller ownerReference.
fn controller(obj: &Value) -> Option<&Value> {
    obj["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|r| r["controller"] == Value::Bool(true))
}

fn controlled_by(obj: &Value, owner_uid: &str) -> bool {
    controller(obj).is_some_and(|r| r["uid"] == owner_uid)
}

/// The Ready condition is True and describes the object's current generation.
fn is_ready(obj: &Value) -> bool {
    let generation = &obj["metadata"]["generation"];
    obj["status"]["observedGeneration"] == *generation
        && obj["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| {
                c["type"] == "Ready"
                    && c["status"] == "True"
                    && c["observedGeneration"] == *generation
            })
}

fn ready_condition(obj: &Value) -> Value {
    obj["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Ready")
        .cloned()
        .unwrap_or(Value::Null)
}

/// The Events section of `kubectl describe`.
fn events_of(describe: &str) -> &str {
    describe
        .split_once("\nEvents:")
        .map(|(_, events)| events)
        .unwrap_or_else(|| panic!("no Events in:\n{describe}"))
}

/// The words of a table line: `kubectl get` pads columns with spaces.
fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// The table row of one object, as words (the AGE column dropped).
fn row<'a>(table: &'a str, name: &str) -> Vec<&'a str> {
    let line = table
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no row for {name} in:\n{table}"));
    let mut cells = words(line);
    cells.pop();
    cells
}

fn number_yaml(name: &str, value: i64) -> String {
    format!(
        "apiVersion: math.example.com/v1beta1\nkind: Number\nmetadata:\n  name: {name}\nspec:\n  value: {value}\n"
    )
}

fn tuple_yaml(name: &str, numbers: &[i64]) -> String {
    let numbers: Vec<String> = numbers.iter().map(i64::to_string).collect();
    format!(
        "apiVersion: math.example.com/v1beta1\nkind: Tuple\nmetadata:\n  name: {name}\nspec:\n  numbers: [{}]\n",
        numbers.join(", ")
    )
}

fn fermat_yaml(name: &str, number: i64) -> String {
    format!(
        "apiVersion: math.example.com/v1beta1\nkind: Fermat\nmetadata:\n  name: {name}\nspec:\n  number: {number}\n"
    )
}

/// Several documents in one YAML stream, as `kubectl apply -f` takes them.
fn documents(docs: impl IntoIterator<Item = String>) -> String {
    docs.into_iter()
        .map(|d| format!("---\n{d}"))
        .collect::<String>()
}

// --- The mathematics, worked out independently of the project's own `math` module. ---

/// The integer square root of a small non-negative number, when it is exact.
fn square_root(v: i64) -> Option<i64> {
    (0..=v).find(|x| x * x >= v).filter(|x| x * x == v)
}

/// Every `x²+y²` = n with 0 < x ≤ y, by trying every split n = a + (n - a), smallest first.
fn sums_of_two_squares(n: i64) -> Vec<String> {
    (1..=n / 2)
        .filter_map(|a| Some(format!("{}²+{}²", square_root(a)?, square_root(n - a)?)))
        .collect()
}

fn trial_division_prime(n: i64) -> bool {
    n >= 2 && (2..n).take_while(|d| d * d <= n).all(|d| n % d != 0)
}

// --- 1. Installing the CRDs ---

#[tokio::test]
async fn installing_the_crds_with_kubectl_makes_the_math_readable() {
    let mut w = Workshop::with(Harness::without_crds().await);
    // Before `make install`, the kinds do not exist.
    let stderr = w.fails(&["get", "numbers"]).await;
    assert!(
        stderr.contains("the server doesn't have a resource type \"numbers\""),
        "{stderr}"
    );

    let out = w.ok(&["apply", "-f", "crds/"]).await;
    for plural in ["numbers", "tuples", "fermats"] {
        assert!(
            out.contains(&format!(
                "customresourcedefinition.apiextensions.k8s.io/{plural}.math.example.com created"
            )),
            "{out}"
        );
    }
    w.wait("--for=condition=Established", &["crd", "--all"])
        .await;
    let resources = w
        .ok(&["api-resources", "--api-group=math.example.com"])
        .await;
    for (plural, short, kind) in [
        ("numbers", "num", "Number"),
        ("tuples", "tup", "Tuple"),
        ("fermats", "fer", "Fermat"),
    ] {
        assert_eq!(
            row(&resources, plural),
            [plural, short, "math.example.com/v1beta1", "true"],
            "{kind}: {resources}"
        );
    }
    // Applying the CRDs again changes nothing.
    let again = w.ok(&["apply", "-f", "crds/"]).await;
    assert_eq!(again.matches("unchanged").count(), 3, "{again}");

    // `cargo run`, then every sample of the workshop.
    w.h.start_manager();
    let out = w.ok(&["apply", "-f", "samples/"]).await;
    assert!(
        out.contains("fermat.math.example.com/fermat-50 created"),
        "{out}"
    );
    // A parent is Ready only once everything below it is: waiting for the parents the
    // learner applied is enough (and `kubectl wait` takes a while per object).
    w.wait("--for=condition=Ready", &["fermats", "--all"]).await;
    w.wait(
        "--for=condition=Ready",
        &[
            "tuple/tuple-sample",
            "tuple/tuple-squares",
            "number/number-sample",
            "number/number-large",
            "number/number-large-square",
            "number/number-negative",
            "number/number-prime",
        ],
    )
    .await;
    let (count, waiting) = w.not_ready().await;
    assert_eq!(waiting, Vec::<String>::new(), "not Ready");
    assert_eq!(count, 5 + 2 + 6 + 5 + 3 + 62 + 2 * 62);

    let numbers = w.ok(&["get", "numbers"]).await;
    assert_eq!(
        words(numbers.lines().next().unwrap_or_default()),
        [
            "NAME", "VALUE", "FIZZBUZZ", "SQUARE", "PRIME", "READY", "AGE"
        ],
        "{numbers}"
    );
    assert_eq!(
        row(&numbers, "number-sample"),
        ["number-sample", "15", "FizzBuzz", "false", "false", "True"]
    );
    assert_eq!(
        row(&numbers, "number-large"),
        [
            "number-large",
            "9223372036854775807",
            "9223372036854775807",
            "false",
            "false",
            "True"
        ]
    );
    assert_eq!(
        row(&numbers, "tuple-sample-2"),
        ["tuple-sample-2", "2", "2", "false", "true", "True"]
    );

    let math = w.ok(&["get", "math"]).await;
    let headers: Vec<Vec<&str>> = math
        .lines()
        .filter(|l| l.starts_with("NAME "))
        .map(words)
        .collect();
    for header in [
        vec![
            "NAME", "VALUE", "FIZZBUZZ", "SQUARE", "PRIME", "READY", "AGE",
        ],
        vec![
            "NAME",
            "NUMBERS",
            "ALLSQUARES",
            "READYNUMBERS",
            "DESIRED",
            "READY",
            "AGE",
        ],
        vec![
            "NAME",
            "NUMBER",
            "PRIME",
            "ONEMODFOUR",
            "TWOSQUARES",
            "FOUND",
            "READY",
            "AGE",
        ],
    ] {
        assert!(headers.contains(&header), "{header:?} missing in:\n{math}");
    }
    assert_eq!(
        row(&math, "number.math.example.com/number-negative"),
        [
            "number.math.example.com/number-negative",
            "-9",
            "Fizz",
            "false",
            "false",
            "True"
        ]
    );
    assert_eq!(
        row(&math, "tuple.math.example.com/tuple-squares"),
        [
            "tuple.math.example.com/tuple-squares",
            "[0,1,4,9,16]",
            "true",
            "5",
            "5",
            "True"
        ]
    );
    assert_eq!(
        row(&math, "tuple.math.example.com/tuple-sample"),
        [
            "tuple.math.example.com/tuple-sample",
            "[0,1,2]",
            "false",
            "3",
            "3",
            "True"
        ]
    );
    assert_eq!(
        row(&math, "fermat.math.example.com/fermat-50"),
        [
            "fermat.math.example.com/fermat-50",
            "50",
            "false",
            "false",
            "true",
            "[\"1²+7²\",\"5²+5²\"]",
            "True"
        ]
    );
    assert_eq!(
        row(&math, "fermat.math.example.com/fermat-19"),
        [
            "fermat.math.example.com/fermat-19",
            "19",
            "true",
            "false",
            "false",
            "[]",
            "True"
        ]
    );
    // Short names, and the wide view with the counts.
    let wide = w.ok(&["get", "fer", "-o", "wide"]).await;
    assert_eq!(
        row(&wide, "fermat-13"),
        [
            "fermat-13",
            "13",
            "true",
            "true",
            "true",
            "[\"2²+3²\"]",
            "6",
            "6",
            "True"
        ],
        "{wide}"
    );
    let all = w.ok(&["get", "num,tup,fer", "-o", "name"]).await;
    // 5 Numbers, 2 Tuples, 6 Fermats from samples/; 5 + 3 + 2 * 62 children.
    assert_eq!(
        all.lines().count(),
        5 + 2 + 6 + 5 + 3 + 62 + 2 * 62,
        "{all}"
    );
}

// --- 2. Numbers ---

#[tokio::test]
async fn numbers_applied_with_kubectl_get_their_status() {
    let w = Workshop::start().await;
    // (name, value, fizzBuzz, isSquare, isPrime), from the definitions in DESIGN.md.
    let expected: [(&str, i64, &str, bool, bool); 10] = [
        ("zero", 0, "FizzBuzz", true, false),
        ("one", 1, "1", true, false),
        ("three", 3, "Fizz", false, true),
        ("five", 5, "Buzz", false, true),
        ("fifteen", 15, "FizzBuzz", false, false),
        ("sixteen", 16, "16", true, false),
        ("minus-nine", -9, "Fizz", false, false),
        ("two-to-the-62", 1 << 62, "4611686018427387904", true, false),
        ("int64-max", i64::MAX, "9223372036854775807", false, false),
        // samples/number-large-square.yaml: 3037000499², the largest square in an int64.
        (
            "number-large-square",
            9_223_372_030_926_249_001,
            "9223372030926249001",
            true,
            false,
        ),
    ];
    let yaml = documents(
        expected
            .iter()
            .filter(|e| e.0 != "number-large-square")
            .map(|&(name, value, ..)| number_yaml(name, value)),
    );
    let file = w.file("numbers.yaml", &yaml);
    let out = w
        .ok(&[
            "apply",
            "-f",
            &file,
            "-f",
            "samples/number-large-square.yaml",
        ])
        .await;
    assert_eq!(out.matches(" created").count(), expected.len(), "{out}");
    w.wait("--for=condition=Ready", &["numbers", "--all"]).await;

    let numbers = w.items("numbers").await;
    assert_eq!(numbers.len(), expected.len());
    for (name, value, fizz_buzz, square, prime) in expected {
        let n = &numbers[name];
        assert_eq!(n["spec"]["value"].as_i64(), Some(value), "{n}");
        let status = &n["status"];
        assert_eq!(status["fizzBuzz"], fizz_buzz, "{name}: {status}");
        assert_eq!(status["isSquare"], square, "{name}: {status}");
        assert_eq!(status["isPrime"], prime, "{name}: {status}");
        assert!(is_ready(n), "{name}: {n}");
        assert_eq!(ready_condition(n)["reason"], "Computed", "{n}");
    }
    // 2^63 - 1 survives every round trip exactly: no float on the way.
    assert_eq!(
        w.jsonpath("number", "int64-max", "{.spec.value} {.status.fizzBuzz}")
            .await,
        "9223372036854775807 9223372036854775807"
    );
    let message = ready_condition(&numbers["int64-max"])["message"].clone();
    let message = message.as_str().unwrap_or_default();
    assert!(
        message.contains("9223372036854775807")
            && message.contains("not a perfect square")
            && message.contains("not prime"),
        "{message}"
    );

    // The learner changes a value: the status follows the new generation.
    w.apply("fifteen.yaml", &number_yaml("fifteen", 25)).await;
    w.wait("--for=condition=Ready", &["number/fifteen"]).await;
    assert_eq!(
        w.jsonpath(
            "number",
            "fifteen",
            "{.metadata.generation} {.status.observedGeneration} {.status.fizzBuzz} {.status.isSquare} {.status.isPrime}"
        )
        .await,
        "2 2 Buzz true false"
    );
}

// --- 3. A Tuple and its Numbers ---

#[tokio::test]
async fn a_tuple_applied_with_kubectl_owns_heals_and_shrinks_its_numbers() {
    let w = Workshop::start().await;
    w.apply("t.yaml", &tuple_yaml("t", &[0, 1, 1])).await;
    w.wait("--for=condition=Ready", &["tuple/t"]).await;
    let t = w.get("tuple", "t").await.expect("the Tuple exists");
    let t_uid = uid(&t);
    assert_eq!(t["status"]["allSquares"], true, "{t}");
    assert_eq!(
        (&t["status"]["readyNumbers"], &t["status"]["desiredNumbers"]),
        (&Value::from(3), &Value::from(3))
    );
    for (i, value) in [0, 1, 1].into_iter().enumerate() {
        let n = w
            .get("number", &format!("t-{i}"))
            .await
            .unwrap_or_else(|| panic!("t-{i} was created"));
        assert_eq!(n["spec"]["value"], value, "{n}");
        assert_eq!(
            n["metadata"]["ownerReferences"],
            serde_json::json!([{
                "apiVersion": "math.example.com/v1beta1",
                "kind": "Tuple",
                "name": "t",
                "uid": t_uid,
                "controller": true,
                "blockOwnerDeletion": true,
            }]),
            "{n}"
        );
        assert!(is_ready(&n), "{n}");
    }

    // Declare [0, 1, 2]: allSquares flips to false.
    let out = w.apply("t.yaml", &tuple_yaml("t", &[0, 1, 2])).await;
    assert!(out.contains("tuple.math.example.com/t configured"), "{out}");
    w.wait("--for=condition=Ready", &["tuple/t"]).await;
    assert_eq!(
        w.jsonpath(
            "tuple",
            "t",
            "{.metadata.generation} {.status.allSquares} {.status.readyNumbers}/{.status.desiredNumbers}"
        )
        .await,
        "2 false 3/3"
    );
    assert_eq!(w.jsonpath("number", "t-2", "{.spec.value}").await, "2");

    // Shrink to [0, 1]: the extra Number is deleted.
    w.apply("t.yaml", &tuple_yaml("t", &[0, 1])).await;
    w.wait("--for=delete", &["number/t-2"]).await;
    w.wait("--for=condition=Ready", &["tuple/t"]).await;
    assert_eq!(
        w.jsonpath(
            "tuple",
            "t",
            "{.metadata.generation} {.status.allSquares} {.status.readyNumbers}/{.status.desiredNumbers}"
        )
        .await,
        "3 true 2/2"
    );
    let names = w.ok(&["get", "numbers", "-o", "name"]).await;
    assert_eq!(
        words(&names),
        ["number.math.example.com/t-0", "number.math.example.com/t-1"]
    );

    // Delete a child: it comes back (a new object, with a new uid).
    let old = uid(&w.get("number", "t-1").await.expect("t-1"));
    let out = w.ok(&["delete", "number", "t-1"]).await;
    assert!(out.contains("\"t-1\" deleted"), "{out}");
    let back = poll(
        "t-1 to come back",
        || async { w.get("number", "t-1").await },
        |n| uid(n) != old && is_ready(n),
    )
    .await;
    assert_eq!(back["spec"]["value"], 1);
    assert!(controlled_by(&back, &t_uid), "{back}");

    // Edit a child by hand: the Tuple puts the desired value back.
    let out = w
        .ok(&[
            "patch",
            "number",
            "t-0",
            "--type=merge",
            "-p",
            r#"{"spec":{"value":7}}"#,
        ])
        .await;
    assert!(out.contains("number.math.example.com/t-0 patched"), "{out}");
    let corrected = poll(
        "t-0 to be corrected",
        || async { w.get("number", "t-0").await },
        |n| n["spec"]["value"] == 0 && n["metadata"]["generation"] == 3 && is_ready(n),
    )
    .await;
    assert_eq!(corrected["status"]["isSquare"], true, "{corrected}");
    let t = poll(
        "the Tuple to be Ready again",
        || async { w.get("tuple", "t").await },
        |t| is_ready(t) && t["status"]["readyNumbers"] == 2,
    )
    .await;
    assert_eq!(t["status"]["allSquares"], true, "{t}");

    // `kubectl describe` tells the story in Events.
    let describe = poll(
        "the Events of the Tuple",
        || async { Some(w.describe("tuple", "t").await) },
        |d| d.contains("Corrected") && d.contains("Deleted") && d.contains("t-1"),
    )
    .await;
    let events = events_of(&describe);
    let lines = |reason: &str| -> Vec<&str> {
        events
            .lines()
            .filter(|l| words(l).get(1) == Some(&reason))
            .collect()
    };
    let created = lines("Created");
    assert!(
        created.iter().any(
            |l| l.contains("math-controller") && l.contains("created 3 Numbers: t-0, t-1, t-2")
        ),
        "{describe}"
    );
    assert!(
        created.iter().any(|l| l.contains("created 1 Number: t-1")),
        "the Number that came back is reported as such:\n{describe}"
    );
    assert!(
        lines("Deleted")
            .iter()
            .any(|l| l.starts_with("  Normal") && l.contains("deleted the unwanted 1 Number: t-2")),
        "{describe}"
    );
    assert!(
        lines("Corrected")
            .iter()
            .any(|l| l.contains("1 Number: t-0")),
        "{describe}"
    );
}

// --- 4. Fermat finds the sums of two squares ---

/// The longest test of the file; its name sorts first so that it starts first, while the
/// others share the second of the two test threads of a two-core machine.
#[tokio::test]
async fn a_cluster_of_fermats_0_to_50_finds_every_sum_of_two_squares() {
    let w = Workshop::start().await;
    let yaml = documents((0..=50).map(|n| fermat_yaml(&format!("fermat-{n}"), n)));
    let out = w.apply("fermats.yaml", &yaml).await;
    assert_eq!(out.matches(" created").count(), 51, "{out}");
    w.wait_long("--for=condition=Ready", &["fermat", "--all"])
        .await;

    let fermats = w.items("fermats").await;
    assert_eq!(fermats.len(), 51);
    for n in 0..=50i64 {
        let f = &fermats[&format!("fermat-{n}")];
        let s = &f["status"];
        let expected = sums_of_two_squares(n);
        assert!(is_ready(f), "{f}");
        assert_eq!(s["twoSquaresFound"], !expected.is_empty(), "{n}: {s}");
        assert_eq!(s["decompositions"], serde_json::json!(expected), "{n}: {s}");
        assert_eq!(s["isPrime"], trial_division_prime(n), "{n}: {s}");
        assert_eq!(s["oneModFour"], n % 4 == 1, "{n}: {s}");
        assert_eq!(s["readyTuples"], n / 2, "{n}: {s}");
        assert_eq!(s["desiredTuples"], n / 2, "{n}: {s}");
    }
    assert_eq!(
        fermats["fermat-50"]["status"]["decompositions"],
        serde_json::json!(["1²+7²", "5²+5²"])
    );
    // Fermat's theorem, as the cluster found it: an odd prime is a sum of two squares
    // exactly when it is 1 mod 4.
    for n in (3..=50).filter(|&n| trial_division_prime(n)) {
        let s = &fermats[&format!("fermat-{n}")]["status"];
        assert_eq!(s["twoSquaresFound"], s["oneModFour"], "{n}: {s}");
    }
    // Exactly the children asked for, each controlled by its parent: a Tuple [a, n-a] per
    // a, a Number per item.
    let desired_tuples: BTreeMap<String, (String, [i64; 2])> = (0..=50i64)
        .flat_map(|n| {
            (1..=n / 2).map(move |a| {
                (
                    format!("fermat-{n}-{a}-and-{}", n - a),
                    (format!("fermat-{n}"), [a, n - a]),
                )
            })
        })
        .collect();
    let tuples = w.items("tuples").await;
    assert_eq!(
        tuples.keys().collect::<Vec<_>>(),
        desired_tuples.keys().collect::<Vec<_>>()
    );
    let numbers = w.items("numbers").await;
    assert_eq!(numbers.len(), 2 * desired_tuples.len());
    for (name, (fermat, values)) in &desired_tuples {
        let t = &tuples[name];
        assert!(controlled_by(t, &uid(&fermats[fermat])), "{t}");
        assert_eq!(t["spec"]["numbers"], serde_json::json!(values), "{t}");
        for (i, value) in values.iter().enumerate() {
            let n = &numbers[&format!("{name}-{i}")];
            assert!(controlled_by(n, &uid(t)), "{n}");
            assert_eq!(n["spec"]["value"], *value, "{n}");
        }
    }
}

#[tokio::test]
async fn a_fermat_applied_with_kubectl_heals_its_tuples_and_follows_its_number() {
    let w = Workshop::start().await;
    w.ok(&["apply", "-f", "samples/fermat-50.yaml"]).await;
    w.wait("--for=condition=Ready", &["fermat/fermat-50"]).await;
    let f = w.get("fermat", "fermat-50").await.expect("fermat-50");
    assert_eq!(
        f["status"]["decompositions"],
        serde_json::json!(["1²+7²", "5²+5²"])
    );
    let f50 = uid(&f);
    let tuples = w.items("tuples").await;
    assert_eq!(tuples.len(), 25);
    assert!(tuples.values().all(|t| controlled_by(t, &f50)));

    // Delete a child Tuple with kubectl: it comes back.
    let old = uid(&tuples["fermat-50-1-and-49"]);
    w.ok(&["delete", "tuple", "fermat-50-1-and-49"]).await;
    let back = poll(
        "fermat-50-1-and-49 to come back",
        || async { w.get("tuple", "fermat-50-1-and-49").await },
        |t| uid(t) != old && is_ready(t),
    )
    .await;
    assert!(controlled_by(&back, &f50), "{back}");
    assert_eq!(back["spec"]["numbers"], serde_json::json!([1, 49]));
    assert_eq!(back["status"]["allSquares"], true, "{back}");
    let f = poll(
        "fermat-50 to count the Tuple again",
        || async { w.get("fermat", "fermat-50").await },
        |f| is_ready(f) && f["status"]["readyTuples"] == 25,
    )
    .await;
    assert_eq!(
        f["status"]["decompositions"],
        serde_json::json!(["1²+7²", "5²+5²"])
    );

    // Change n with kubectl: the Tuples no longer wanted are deleted, new ones created.
    let out = w
        .apply("fermat-50.yaml", &fermat_yaml("fermat-50", 10))
        .await;
    assert!(
        out.contains("fermat.math.example.com/fermat-50 configured"),
        "{out}"
    );
    w.wait("--for=condition=Ready", &["fermat/fermat-50"]).await;
    let f = w.get("fermat", "fermat-50").await.expect("fermat-50");
    assert_eq!(f["metadata"]["generation"], 2);
    assert_eq!(f["status"]["decompositions"], serde_json::json!(["1²+3²"]));
    let wanted: BTreeSet<String> = (1..=5)
        .map(|a| format!("fermat-50-{a}-and-{}", 10 - a))
        .collect();
    poll(
        "only the Tuples of 10 to remain under fermat-50",
        || async {
            let tuples = w.items("tuples").await;
            Some(
                tuples
                    .values()
                    .filter(|t| controlled_by(t, &f50))
                    .map(|t| name(t).to_string())
                    .collect::<BTreeSet<_>>(),
            )
        },
        |names| *names == wanted,
    )
    .await;
    let numbers: BTreeSet<String> = poll(
        "only the Numbers of those Tuples to remain",
        || async {
            Some(
                w.items("numbers")
                    .await
                    .into_keys()
                    .filter(|n| n.starts_with("fermat-50-"))
                    .collect::<BTreeSet<_>>(),
            )
        },
        |names| names.len() == 10,
    )
    .await;
    let expected: BTreeSet<String> = wanted
        .iter()
        .flat_map(|t| [format!("{t}-0"), format!("{t}-1")])
        .collect();
    assert_eq!(numbers, expected);
    let describe = w.describe("fermat", "fermat-50").await;
    assert!(
        describe.contains("deleted the unwanted 25 Tuples: fermat-50-"),
        "{describe}"
    );
}

// --- 5. Cascading deletion ---

#[tokio::test]
async fn deleting_a_fermat_with_kubectl_takes_its_tuples_and_numbers_along() {
    let w = Workshop::start().await;
    w.ok(&[
        "apply",
        "-f",
        "samples/fermat-13.yaml",
        "-f",
        "samples/fermat-25.yaml",
        "-f",
        "samples/number.yaml",
    ])
    .await;
    w.wait("--for=condition=Ready", &["fermats", "--all"]).await;
    let learner = &w;
    let children = move |prefix: &'static str| async move {
        let names = learner.ok(&["get", "tuples,numbers", "-o", "name"]).await;
        Some(
            names
                .lines()
                .filter(|l| l.split('/').nth(1).is_some_and(|n| n.starts_with(prefix)))
                .count(),
        )
    };
    assert_eq!(children("fermat-13-").await, Some(6 + 12));
    assert_eq!(children("fermat-25-").await, Some(12 + 24));

    // The default: background cascading deletion.
    let out = w.ok(&["delete", "fermat", "fermat-13"]).await;
    assert!(out.contains("\"fermat-13\" deleted"), "{out}");
    poll(
        "the children of fermat-13 to go",
        || children("fermat-13-"),
        |c| *c == 0,
    )
    .await;

    // Foreground: kubectl returns once the Fermat is gone, which is after its Tuples (their
    // ownerReference blocks the owner's deletion), which is after their Numbers.
    w.ok(&["delete", "fermat", "fermat-25", "--cascade=foreground"])
        .await;
    assert_eq!(
        w.ok(&["get", "fermats", "-o", "name"]).await,
        "",
        "both Fermats are gone"
    );
    poll(
        "the children of fermat-25 to go",
        || children("fermat-25-"),
        |c| *c == 0,
    )
    .await;

    // Nothing comes back, and what was not theirs stays.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let left = w.ok(&["get", "math", "-o", "name"]).await;
    assert_eq!(words(&left), ["number.math.example.com/number-sample"]);
}

// --- 6. A restart costs nothing ---

#[tokio::test]
async fn a_manager_restarted_on_a_converged_cluster_writes_nothing() {
    let mut w = Workshop::start().await;
    w.ok(&[
        "apply",
        "-f",
        "samples/fermat-13.yaml",
        "-f",
        "samples/tuple.yaml",
        "-f",
        "samples/number.yaml",
    ])
    .await;
    w.wait(
        "--for=condition=Ready",
        &[
            "fermat/fermat-13",
            "tuple/tuple-sample",
            "number/number-sample",
        ],
    )
    .await;
    let (count, waiting) = w.not_ready().await;
    assert_eq!((count, waiting), (1 + 6 + 12 + 1 + 3 + 1, vec![]));

    w.h.stop_manager().await;
    w.h.server.reset_requests();
    w.h.start_manager();
    eventually(
        "the restarted manager to watch all three kinds",
        || async { Some(w.h.server.count(&RequestFilter::new().verb(Verb::Watch))) },
        |watches| *watches >= 3,
    )
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let writes: Vec<String> =
        w.h.server
            .requests()
            .iter()
            .filter(|r| r.verb.is_write())
            .map(|r| format!("{} {} {}", r.method, r.path, r.status))
            .collect();
    assert_eq!(
        w.h.server.write_count(),
        0,
        "writes after a restart: {writes:#?}"
    );
    // And the learner still sees every answer.
    let (count, waiting) = w.not_ready().await;
    assert_eq!((count, waiting), (24, vec![]));
    w.h.stop_manager().await;
}

// --- 7. A name already taken ---

#[tokio::test]
async fn a_number_owned_by_someone_else_is_left_alone_and_reported() {
    let w = Workshop::start().await;
    w.ok(&["create", "configmap", "someone"]).await;
    let owner = w.jsonpath("configmap", "someone", "{.metadata.uid}").await;
    assert!(!owner.is_empty());
    let foreign = format!(
        "apiVersion: math.example.com/v1beta1
kind: Number
metadata:
  name: c-1
  ownerReferences:
  - apiVersion: v1
    kind: ConfigMap
    name: someone
    uid: {owner}
    controller: true
spec:
  value: 99
"
    );
    w.apply("c-1.yaml", &foreign).await;
    // A Number of a desired name with no controller is adopted instead.
    w.apply("c-2.yaml", &number_yaml("c-2", 5)).await;
    w.apply("c.yaml", &tuple_yaml("c", &[4, 9, 16])).await;
    let c_uid = uid(&w.get("tuple", "c").await.expect("c"));

    let reason = poll(
        "the Tuple to report the conflict",
        || async {
            Some(
                w.jsonpath(
                    "tuple",
                    "c",
                    r#"{.status.conditions[?(@.type=="Ready")].reason}"#,
                )
                .await,
            )
        },
        |reason| reason == "ChildConflict",
    )
    .await;
    assert_eq!(reason, "ChildConflict");
    let t = w.get("tuple", "c").await.expect("c");
    let condition = ready_condition(&t);
    assert_eq!(condition["status"], "False", "{t}");
    let message = condition["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("c-1") && message.contains("ConfigMap someone"),
        "{message}"
    );
    assert_eq!(
        t["status"]["allSquares"],
        Value::Null,
        "no answer while a child is not ours: {t}"
    );

    // The rest still reconciles: c-0 is created, c-2 adopted and given the desired value.
    let c0 = poll(
        "c-0 to be created",
        || async { w.get("number", "c-0").await },
        is_ready,
    )
    .await;
    assert!(controlled_by(&c0, &c_uid), "{c0}");
    let c2 = poll(
        "c-2 to be adopted",
        || async { w.get("number", "c-2").await },
        |n| n["spec"]["value"] == 16 && is_ready(n),
    )
    .await;
    assert!(controlled_by(&c2, &c_uid), "{c2}");
    // The foreign Number is untouched.
    let c1 = w.get("number", "c-1").await.expect("c-1");
    assert_eq!(c1["spec"]["value"], 99);
    assert_eq!(
        controller(&c1).map(|r| r["uid"].clone()),
        Some(Value::from(owner.clone()))
    );

    let describe = poll(
        "the Warning Event",
        || async { Some(w.describe("tuple", "c").await) },
        |d| d.contains("ChildConflict") && d.contains("Adopted"),
    )
    .await;
    let warning = events_of(&describe)
        .lines()
        .find(|l| words(l).get(1) == Some(&"ChildConflict"))
        .unwrap_or_else(|| panic!("{describe}"));
    assert_eq!(words(warning).first(), Some(&"Warning"), "{describe}");
    assert!(
        warning.contains("c-1") && warning.contains("leaving it alone"),
        "{warning}"
    );
    assert!(describe.contains("adopted 1 Number: c-2"), "{describe}");

    // The learner removes the other owner: the garbage collector takes c-1, and the Tuple
    // creates its own.
    w.ok(&["delete", "configmap", "someone"]).await;
    let c1 = poll(
        "the Tuple to take c-1 over",
        || async { w.get("number", "c-1").await },
        |n| controlled_by(n, &c_uid) && is_ready(n),
    )
    .await;
    assert_eq!(c1["spec"]["value"], 9);
    w.wait("--for=condition=Ready", &["tuple/c"]).await;
    assert_eq!(
        w.jsonpath("tuple", "c", "{.status.allSquares}").await,
        "true"
    );
}

// --- 8. Bad input ---

#[tokio::test]
async fn bad_input_is_refused_by_the_api_server_with_a_clear_message() {
    let w = Workshop::start().await;
    let missing_value = w.file(
        "number-without-value.yaml",
        "apiVersion: math.example.com/v1beta1\nkind: Number\nmetadata:\n  name: number-without-value\nspec: {}\n",
    );
    let cases: [(&str, &str, &str, &[&str]); 5] = [
        (
            "samples/invalid/fermat-negative.yaml",
            "fermat",
            "fermat-negative",
            &["spec.number", "greater than or equal to 0"],
        ),
        (
            "samples/invalid/fermat-too-large.yaml",
            "fermat",
            "fermat-too-large",
            &["spec.number", "less than or equal to 20000"],
        ),
        (
            "samples/invalid/tuple-too-long.yaml",
            "tuple",
            "tuple-too-long",
            &["spec.numbers", "1000"],
        ),
        (
            "samples/invalid/number-string.yaml",
            "number",
            "number-string",
            &["spec.value", "integer"],
        ),
        (
            &missing_value,
            "number",
            "number-without-value",
            &["spec.value", "Required value"],
        ),
    ];
    for (file, kind, name, expected) in cases {
        for server_side in [false, true] {
            let mut args = vec!["apply", "-f", file];
            if server_side {
                args.push("--server-side");
            }
            let stderr = w.fails(&args).await;
            assert!(
                stderr.contains(&format!("\"{name}\" is invalid")),
                "{file} (server-side: {server_side}): {stderr}"
            );
            for text in expected {
                assert!(
                    stderr.contains(text),
                    "{file} (server-side: {server_side}): no {text:?} in {stderr}"
                );
            }
            // Nothing was stored.
            let stderr = w.fails(&["get", kind, name]).await;
            assert!(stderr.contains("NotFound"), "{stderr}");
        }
    }
    assert_eq!(w.ok(&["get", "math", "-o", "name"]).await, "");
    let stored: Vec<String> =
        w.h.server
            .requests()
            .iter()
            .filter(|r| r.verb.is_write() && r.status < 300 && r.group == "math.example.com")
            .map(|r| format!("{} {} {}", r.method, r.path, r.status))
            .collect();
    assert!(stored.is_empty(), "writes that were accepted: {stored:#?}");

    // The manager carries on: a valid sample is answered.
    w.ok(&["apply", "-f", "samples/fermat.yaml"]).await;
    w.wait("--for=condition=Ready", &["fermat/fermat-sample"])
        .await;
    assert_eq!(
        w.jsonpath("fermat", "fermat-sample", "{.status.decompositions}")
            .await,
        r#"["1²+2²"]"#
    );
}

// --- 9. Faults ---

#[tokio::test]
async fn a_workload_applied_with_kubectl_converges_through_faults() {
    let mut w = Workshop::with(Harness::without_manager().await);
    // The learner applies a workload before the manager runs.
    let yaml = documents([
        fermat_yaml("f-20", 20),
        fermat_yaml("f-13", 13),
        tuple_yaml("t", &[1, 4, 9]),
    ]);
    w.apply("workload.yaml", &yaml).await;

    // Every kind of write the manager makes fails a few times: 500s on creates, 409s and
    // 500s on spec and status patches, 500s on deletes.
    let server = w.h.server.clone();
    for (verb, resource, times, status) in [
        (Verb::Create, "numbers", 5, 500),
        (Verb::Create, "tuples", 3, 500),
        (Verb::Patch, "numbers", 4, 409),
        (Verb::Patch, "numbers", 4, 500),
        (Verb::Patch, "tuples", 3, 409),
        (Verb::Patch, "fermats/status", 2, 500),
        (Verb::Delete, "tuples", 2, 500),
    ] {
        // Only the manager writes statuses; kubectl's own writes must get through.
        let filter = match resource.split_once('/') {
            Some((resource, sub)) => RequestFilter::new().resource(resource).subresource(sub),
            None => RequestFilter::new().resource(resource),
        };
        server.fail_next(filter.verb(verb), times, status);
    }
    w.h.start_manager();
    eventually(
        "the manager to create some Numbers",
        || async { Some(server.objects("math.example.com", "numbers", None).len()) },
        |n| *n >= 6,
    )
    .await;
    // Watches end and the resourceVersions the manager knows expire, mid-run.
    server.close_watches();
    server.compact();
    // More work arrives meanwhile: a new Fermat, and f-20 shrinks to 10.
    w.apply("more.yaml", &fermat_yaml("f-17", 17)).await;
    w.ok(&[
        "patch",
        "fermat",
        "f-20",
        "--type=merge",
        "-p",
        r#"{"spec":{"number":10}}"#,
    ])
    .await;
    server.close_watches();
    server.compact();
    tokio::time::sleep(Duration::from_millis(200)).await;
    server.close_watches();

    w.wait("--for=condition=Ready", &["fermats", "--all"]).await;
    w.wait("--for=condition=Ready", &["tuple/t"]).await;
    let fermats = poll(
        "every Fermat to be Ready for its current generation",
        || async { Some(w.items("fermats").await) },
        |f| f.len() == 3 && f.values().all(is_ready),
    )
    .await;
    for (f, expected) in [
        ("f-20", vec!["1²+3²"]),
        ("f-13", vec!["2²+3²"]),
        ("f-17", vec!["1²+4²"]),
    ] {
        assert_eq!(
            fermats[f]["status"]["decompositions"],
            serde_json::json!(expected),
            "{f}"
        );
    }

    // Nothing duplicated, nothing lost: exactly the desired children, each controlled by its
    // parent, each Ready.
    let desired_tuples: BTreeMap<String, (String, [i64; 2])> =
        [("f-20", 10), ("f-13", 13), ("f-17", 17)]
            .into_iter()
            .flat_map(|(f, n)| {
                (1..=n / 2).map(move |a| {
                    (
                        format!("{f}-{a}-and-{}", n - a),
                        (f.to_string(), [a, n - a]),
                    )
                })
            })
            .collect();
    let tuples = poll(
        "exactly the desired Tuples",
        || async { Some(w.items("tuples").await) },
        |t| t.len() == desired_tuples.len() + 1,
    )
    .await;
    let mut desired_numbers = BTreeMap::new();
    for (name, (fermat, numbers)) in &desired_tuples {
        let t = tuples
            .get(name)
            .unwrap_or_else(|| panic!("{name} is missing: {:?}", tuples.keys()));
        assert!(controlled_by(t, &uid(&fermats[fermat])), "{t}");
        assert_eq!(t["spec"]["numbers"], serde_json::json!(numbers));
        assert!(is_ready(t), "{t}");
        for (i, v) in numbers.iter().enumerate() {
            desired_numbers.insert(format!("{name}-{i}"), (uid(t), *v));
        }
    }
    for (i, v) in [1, 4, 9].into_iter().enumerate() {
        desired_numbers.insert(format!("t-{i}"), (uid(&tuples["t"]), v));
    }
    let numbers = poll(
        "exactly the desired Numbers",
        || async { Some(w.items("numbers").await) },
        |n| n.len() == desired_numbers.len(),
    )
    .await;
    assert_eq!(
        numbers.keys().collect::<Vec<_>>(),
        desired_numbers.keys().collect::<Vec<_>>()
    );
    for (name, (owner, value)) in &desired_numbers {
        let n = &numbers[name];
        assert!(controlled_by(n, owner), "{n}");
        assert_eq!(n["spec"]["value"], *value, "{n}");
        assert!(is_ready(n), "{n}");
    }
    assert!(
        w.h.server.count(&RequestFilter::new().verb(Verb::Watch)) > 3,
        "the watches were restarted"
    );
}
