use std::collections::HashMap;
use std::time::{Duration, Instant};

use clap::Parser as _;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;

use super::cli::{Cli, Command, parse_target, refuse_contradictions};
use super::live::{HIGHLIGHT, Seen, Tracker};
use super::render::{self, Flash, Marks, Options};
use super::*;
use math_controller::api::{FermatSpec, NumberSpec, TupleSpec};
use math_controller::controller::{fermat, number, tuple};

const NS: &str = "default";

fn owned_by(kind: &str, name: &str, uid: &str) -> Vec<OwnerReference> {
    vec![OwnerReference {
        api_version: "math.example.com/v1beta1".into(),
        kind: kind.into(),
        name: name.into(),
        uid: uid.into(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }]
}

fn meta<K: Resource>(obj: &mut K, name: &str) {
    let m = obj.meta_mut();
    m.namespace = Some(NS.into());
    m.uid = Some(format!("uid-{name}"));
    m.generation = Some(1);
    m.creation_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        Timestamp::UNIX_EPOCH,
    ));
}

fn plan_of<C: Child>(
    parent_uid: &str,
    desired: Vec<Desired<C::Spec>>,
    all: &[Arc<C>],
) -> plan::Plan<C> {
    let found: HashMap<String, Arc<C>> = all
        .iter()
        .filter(|c| desired.iter().any(|d| d.name == c.name_any()))
        .map(|c| (c.name_any(), c.clone()))
        .collect();
    let owned: Vec<_> = (all.iter())
        .filter(|c| math_controller::kind::controller_uid(c.as_ref()) == Some(parent_uid))
        .cloned()
        .collect();
    plan::plan(parent_uid, desired, &found, &owned, &HashSet::new())
}

/// A Number as the Number controller leaves it.
fn number(name: &str, value: i64, owner: Option<(&str, &str)>) -> Number {
    let mut n = Number::new(name, NumberSpec { value });
    meta(&mut n, name);
    n.metadata.owner_references = owner.map(|(name, uid)| owned_by("Tuple", name, uid));
    n.status = Some(number::desired_status(&n, None, Timestamp::UNIX_EPOCH));
    n
}

/// A Tuple with its Numbers, all as the controllers leave them once converged.
fn tuple(name: &str, numbers: Vec<i64>, owner: Option<(&str, &str)>) -> (Tuple, Vec<Number>) {
    let mut t = Tuple::new(name, TupleSpec { numbers });
    meta(&mut t, name);
    t.metadata.owner_references = owner.map(|(name, uid)| owned_by("Fermat", name, uid));
    let uid = format!("uid-{name}");
    let kids: Vec<Number> = (tuple::desired_numbers(&t).into_iter())
        .map(|d| number(&d.name, d.spec.value, Some((name, &uid))))
        .collect();
    let arcs: Vec<Arc<Number>> = kids.iter().cloned().map(Arc::new).collect();
    let plan = plan_of(&uid, tuple::desired_numbers(&t), &arcs);
    t.status = Some(tuple::desired_status(&t, &plan, None, Timestamp::UNIX_EPOCH).0);
    (t, kids)
}

/// A converged Fermat of `n`: the Fermat, its Tuples, their Numbers.
fn fermat(name: &str, n: i64) -> Objects {
    let mut f = Fermat::new(name, FermatSpec { number: n });
    meta(&mut f, name);
    let uid = format!("uid-{name}");
    let mut objects = Objects::default();
    for d in fermat::desired_tuples(&f) {
        let (t, numbers) = tuple(&d.name, d.spec.numbers, Some((name, &uid)));
        objects.tuples.push(Arc::new(t));
        objects.numbers.extend(numbers.into_iter().map(Arc::new));
    }
    let plan = plan_of(&uid, fermat::desired_tuples(&f), &objects.tuples);
    f.status = Some(fermat::desired_status(&f, &plan, None, Timestamp::UNIX_EPOCH).0);
    objects.fermats.push(Arc::new(f));
    objects
}

fn one(kind: Kind, name: &str) -> Target {
    Target::One {
        kind,
        name: name.into(),
    }
}

fn tree(objects: &Objects, target: Target) -> Node {
    let mut roots = build(objects, &target, NS).expect("found");
    assert_eq!(roots.len(), 1);
    roots.remove(0)
}

fn names(node: &Node) -> Vec<&str> {
    node.children.iter().map(|c| c.name.as_str()).collect()
}

#[test]
fn a_converged_fermat_is_healthy_with_its_statuses_summed_up() {
    let f = tree(&fermat("f", 5), one(Kind::Fermat, "f"));
    assert!(f.healthy);
    assert_eq!(f.ready, Ready::True);
    assert_eq!(f.summary, "5 (prime, 1 mod 4) → 1²+2²");
    assert_eq!(names(&f), ["f-1-and-4", "f-2-and-3"]);
    assert_eq!(f.children[0].summary, "[1, 4] → all squares");
    assert_eq!(f.children[1].summary, "[2, 3] → not all squares");
    assert_eq!(names(&f.children[0]), ["f-1-and-4-0", "f-1-and-4-1"]);
    assert_eq!(f.children[0].children[1].summary, "4 → 4, square");
    assert_eq!(f.children[1].children[1].summary, "3 → Fizz, prime");
    assert_eq!(f.count(), 7);
}

#[test]
fn a_missing_child_is_shown_where_the_parent_wants_it() {
    let mut objects = fermat("f", 5);
    objects.numbers.retain(|n| n.name_any() != "f-2-and-3-0");
    let f = tree(&objects, one(Kind::Fermat, "f"));
    assert!(
        !f.healthy,
        "a problem anywhere below makes the tree unhealthy"
    );
    assert!(f.children[0].healthy);
    let gone = &f.children[1].children[0];
    assert_eq!(gone.name, "f-2-and-3-0");
    assert!(gone.object.is_none());
    assert_eq!(gone.problems, [Problem::Missing]);
    assert_eq!(gone.summary, "wanted: value 2");
}

#[test]
fn a_child_controlled_by_someone_else_is_marked_and_not_descended() {
    let mut objects = fermat("f", 5);
    let (foreign, numbers) = tuple("f-1-and-4", vec![1, 4], Some(("g", "uid-g")));
    objects.tuples.retain(|t| t.name_any() != "f-1-and-4");
    objects.tuples.push(Arc::new(foreign));
    objects
        .numbers
        .retain(|n| !n.name_any().starts_with("f-1-and-4"));
    objects.numbers.extend(numbers.into_iter().map(Arc::new));
    let f = tree(&objects, one(Kind::Fermat, "f"));
    let child = &f.children[0];
    assert!(
        matches!(&child.problems[..], [Problem::ControlledByOther { owner }] if owner.contains("Fermat g"))
    );
    assert!(
        child.children.is_empty(),
        "its Numbers belong to the other tree"
    );
    assert!(!f.healthy);
}

#[test]
fn edited_specs_stale_statuses_strays_and_orphans_are_marked() {
    let (t, mut numbers) = tuple("t", vec![0, 1], None);
    // Edited by hand: the spec changed, the status still describes generation 1.
    numbers[0].spec.value = 7;
    numbers[0].metadata.generation = Some(2);
    // Owned but unwanted; and one of a desired name with no controller.
    numbers.push(number("t-9", 9, Some(("t", "uid-t"))));
    numbers[1].metadata.owner_references = None;
    let objects = Objects {
        tuples: vec![Arc::new(t)],
        numbers: numbers.into_iter().map(Arc::new).collect(),
        ..Objects::default()
    };
    let t = tree(&objects, one(Kind::Tuple, "t"));
    assert_eq!(names(&t), ["t-0", "t-1", "t-9"]);
    assert_eq!(
        t.children[0].problems,
        [
            Problem::SpecDiffers {
                found: r#"{"value":7}"#.into(),
                wanted: r#"{"value":0}"#.into()
            },
            Problem::StaleStatus {
                observed: Some(1),
                generation: Some(2)
            }
        ]
    );
    assert_eq!(
        t.children[0].summary, "7 → ?",
        "no answer for a spec it was not computed for"
    );
    assert_eq!(t.children[1].problems, [Problem::NoController]);
    assert_eq!(t.children[2].problems, [Problem::Unwanted]);
}

#[test]
fn every_root_without_an_owner_is_shown_and_unknown_names_are_not_found() {
    let mut objects = fermat("f", 3);
    let (t, numbers) = tuple("alone", vec![4], None);
    objects.tuples.push(Arc::new(t));
    objects.numbers.extend(numbers.into_iter().map(Arc::new));
    objects.numbers.push(Arc::new(number("n", 15, None)));
    // Its Fermat is gone (the garbage collector has not caught up).
    let (orphan, _) = tuple("orphan", vec![], Some(("gone", "uid-gone")));
    objects.tuples.push(Arc::new(orphan));
    let roots = build(&objects, &Target::All, NS).expect("roots");
    let shown: Vec<(Kind, &str)> = roots.iter().map(|r| (r.kind, r.name.as_str())).collect();
    assert_eq!(
        shown,
        [
            (Kind::Fermat, "f"),
            (Kind::Tuple, "alone"),
            (Kind::Tuple, "orphan"),
            (Kind::Number, "n")
        ]
    );
    assert_eq!(roots[1].children.len(), 1);
    assert_eq!(
        build(&objects, &one(Kind::Fermat, "nope"), NS).err(),
        Some(NotFound {
            kind: Kind::Fermat,
            name: "nope".into(),
            namespace: NS.into()
        })
    );
    assert!(build(&objects, &one(Kind::Fermat, "f"), "elsewhere").is_err());
}

fn options(max_children: usize, depth: Option<usize>) -> Options {
    Options {
        depth,
        max_children,
        namespaces: false,
    }
}

fn text(node: &Node, opts: &Options, marks: &Marks) -> String {
    let lines = render::lines(
        std::slice::from_ref(node),
        opts,
        marks,
        Timestamp::UNIX_EPOCH,
    );
    render::to_text(&lines, false)
}

#[test]
fn large_trees_fold_healthy_children_and_keep_the_broken_ones() {
    let mut objects = fermat("f", 60);
    objects.tuples.retain(|t| t.name_any() != "f-25-and-35");
    let f = tree(&objects, one(Kind::Fermat, "f"));
    let out = text(&f, &options(5, None), &Marks::default());
    assert!(out.contains("Tuple/f-25-and-35"), "{out}");
    assert!(out.contains("✗ missing"), "{out}");
    assert!(out.contains("… 25 more Tuples, all Ready"), "{out}");
    assert!(!out.contains("Tuple/f-5-and-55"), "{out}");
    assert_eq!(out.lines().count(), 1 + 1 + 4 * 3 + 1 + 1, "{out}");

    let f = tree(&fermat("f", 5), one(Kind::Fermat, "f"));
    let out = text(&f, &options(20, Some(0)), &Marks::default());
    assert_eq!(out.lines().count(), 3, "{out}");
    assert!(out.contains("└─ … 2 Tuples, all Ready"), "{out}");
    let out = text(&f, &options(20, Some(1)), &Marks::default());
    assert!(out.contains("├─ Tuple/f-1-and-4"), "{out}");
    assert!(out.contains("│  └─ … 2 Numbers, all Ready"), "{out}");
}

#[test]
fn fold_summaries_count_what_is_hidden() {
    let mut objects = fermat("f", 10);
    objects.tuples.retain(|t| t.name_any() != "f-1-and-9");
    let mut waiting = (*objects.tuples[0]).clone();
    waiting.status = None;
    objects.tuples[0] = Arc::new(waiting);
    let f = tree(&objects, one(Kind::Fermat, "f"));
    let all: Vec<&Node> = f.children.iter().map(|c| c.as_ref()).collect();
    assert_eq!(
        render::fold_summary(&all, true),
        "… 5 more Tuples: 3 Ready, 1 not Ready, 1 missing"
    );
    assert_eq!(render::fold_summary(&all[4..], false), "… 1 Tuple, Ready");
}

#[test]
fn colour_only_when_asked_and_changes_are_highlighted() {
    let f = tree(&fermat("f", 5), one(Kind::Fermat, "f"));
    let plain = text(&f, &options(20, None), &Marks::default());
    assert!(!plain.contains('\x1b'));
    assert!(plain.starts_with("NAME"));
    assert!(plain.contains("Fermat/f "));
    assert!(plain.contains("└─ Number/f-2-and-3-1"));
    let mut marks = Marks::default();
    let uid = f.children[0].children[0].uid().expect("uid").to_string();
    marks.by_uid.insert(
        uid,
        vec![
            Flash::Back {
                previous_uid: "0123456789".into(),
            },
            Flash::NowReady,
        ],
    );
    let lines = render::lines(
        std::slice::from_ref(&f),
        &options(20, None),
        &marks,
        Timestamp::UNIX_EPOCH,
    );
    let coloured = render::to_text(&lines, true);
    let line = coloured
        .lines()
        .find(|l| l.contains("f-1-and-4-0"))
        .expect("line");
    assert!(
        line.contains("\x1b[30;42mNumber/f-1-and-4-0\x1b[0m"),
        "{line:?}"
    );
    assert!(
        line.contains("↻ back, new uid uid-f-1- (was 01234567)"),
        "{line:?}"
    );
    assert!(line.contains("✓ now Ready"), "{line:?}");
    assert!(coloured.contains("\x1b[32mTrue\x1b[0m"));
}

#[test]
fn json_carries_objects_problems_and_children() {
    let mut objects = fermat("f", 5);
    objects.numbers.retain(|n| n.name_any() != "f-2-and-3-0");
    let f = tree(&objects, one(Kind::Fermat, "f"));
    let json = render::to_json(std::slice::from_ref(&f), None);
    let root = &json["items"][0];
    assert_eq!(root["kind"], "Fermat");
    assert_eq!(root["status"]["decompositions"][0], "1²+2²");
    assert_eq!(root["healthy"], false);
    let missing = &root["children"][1]["children"][0];
    assert_eq!(missing["exists"], false);
    assert_eq!(missing["problems"][0]["type"], "Missing");
    let shallow = render::to_json(std::slice::from_ref(&f), Some(1));
    assert_eq!(
        shallow["items"][0]["children"][0]["children"],
        serde_json::json!([])
    );
}

#[test]
fn ages_read_like_kubectl() {
    assert_eq!(render::age(5), "5s");
    assert_eq!(render::age(130), "2m10s");
    assert_eq!(render::age(600), "10m");
    assert_eq!(render::age(4 * 3600 + 120), "4h2m");
    assert_eq!(render::age(30 * 3600), "30h");
    assert_eq!(render::age(3 * 86_400), "3d");
}

#[test]
fn the_tracker_sees_a_child_go_come_back_and_become_ready() {
    let start = Instant::now();
    let mut tracker = Tracker::new();
    let n = number("t-0", 4, None);
    let listed = Object::Number(Arc::new(n.clone()));
    tracker.observe(Seen::Listed, &listed, Kind::Number, start);
    assert!(
        tracker.marks(start).by_uid.is_empty(),
        "nothing changed yet"
    );
    tracker.observe(Seen::Deleted, &listed, Kind::Number, start);
    let key = (Kind::Number, NS.to_string(), "t-0".to_string());
    assert!(tracker.marks(start).gone.contains(&key));

    let mut back = n.clone();
    back.metadata.uid = Some("new-uid".into());
    back.status = None;
    let t1 = start + Duration::from_secs(1);
    tracker.observe(
        Seen::Applied,
        &Object::Number(Arc::new(back.clone())),
        Kind::Number,
        t1,
    );
    let marks = tracker.marks(t1);
    assert!(marks.gone.is_empty());
    assert_eq!(
        marks.by_uid["new-uid"],
        [Flash::Back {
            previous_uid: "uid-t-0".into()
        }]
    );

    back.status = Some(number::desired_status(&back, None, Timestamp::UNIX_EPOCH));
    let t2 = start + Duration::from_secs(2);
    tracker.observe(
        Seen::Applied,
        &Object::Number(Arc::new(back)),
        Kind::Number,
        t2,
    );
    assert_eq!(
        tracker.marks(t2).by_uid["new-uid"],
        [
            Flash::Back {
                previous_uid: "uid-t-0".into()
            },
            Flash::NowReady
        ]
    );
    assert_eq!(tracker.next_expiry(), Some(t1 + HIGHLIGHT));
    let later = t2 + HIGHLIGHT;
    assert!(tracker.marks(later).by_uid.is_empty(), "highlights fade");
    assert_eq!(tracker.next_expiry(), None);
}

#[test]
fn targets_parse_like_kubectl_arguments() {
    let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(parse_target(&[]).ok(), Some(Target::All));
    assert_eq!(
        parse_target(&words(&["fermat/fermat-13"])).ok(),
        Some(one(Kind::Fermat, "fermat-13"))
    );
    assert_eq!(
        parse_target(&words(&["tuples", "t"])).ok(),
        Some(one(Kind::Tuple, "t"))
    );
    assert_eq!(
        parse_target(&words(&["num/n"])).ok(),
        Some(one(Kind::Number, "n"))
    );
    assert!(parse_target(&words(&["pod/x"])).is_err());
    assert!(parse_target(&words(&["fermat"])).is_err());
    assert!(parse_target(&words(&["fermat/"])).is_err());
}

/// What `kubectl math tree` refuses before it connects, for a command line as typed and
/// whether stdout is a terminal: the error's words, or `None` when the request can go ahead.
fn refused(line: &[&str], on_terminal: bool) -> Option<String> {
    let words = std::iter::once("kubectl-math").chain(line.iter().copied());
    let cli = Cli::try_parse_from(words).expect("a command line clap accepts");
    let Command::Tree(args) = &cli.command;
    let target = parse_target(&args.target).expect("a valid target");
    refuse_contradictions(&cli.global, args, &target, on_terminal)
        .err()
        .map(|e| e.to_string())
}

#[test]
fn contradicting_flags_are_refused_before_connecting() {
    assert_eq!(refused(&["tree"], false), None);
    assert_eq!(refused(&["tree", "-A", "-o", "json"], false), None);
    assert_eq!(refused(&["tree", "-w", "fermat/f"], true), None);
    let says = |line: &[&str], on_terminal, words: &str| {
        let error = refused(line, on_terminal);
        assert!(
            error.as_deref().is_some_and(|e| e.contains(words)),
            "{line:?}: {error:?}"
        );
    };
    says(&["tree", "-A", "fermat/f"], true, "use -n NAMESPACE");
    says(&["tree", "-w", "-o", "json"], true, "-o json prints once");
    says(&["tree", "-w"], false, "drop --watch");
}

#[test]
fn a_child_that_just_came_back_is_drawn_even_when_its_siblings_fold() {
    let f = tree(&fermat("f", 60), one(Kind::Fermat, "f"));
    let uid = f.children[27].children[1].uid().expect("uid").to_string();
    let mut marks = Marks::default();
    marks.by_uid.insert(uid, vec![Flash::NowReady]);
    let out = text(&f, &options(5, None), &marks);
    assert!(out.contains("Tuple/f-28-and-32"), "{out}");
    assert!(
        line_of(&out, "Number/f-28-and-32-1").contains("✓ now Ready"),
        "{out}"
    );
    assert!(out.contains("… 25 more Tuples, all Ready"), "{out}");
}

fn line_of<'a>(out: &'a str, name: &str) -> &'a str {
    out.lines().find(|l| l.contains(name)).unwrap_or("")
}

mod memo;
mod pace;

/// What kubectl (since CVE-2021-25743) does to ESC and CR, and what we add for the control
/// characters kubectl lets through.
#[test]
fn control_characters_are_escaped_as_kubectl_escapes_them() {
    use render::escape_terminal as e;
    // kubectl's own replacements (cli-runtime printers.EscapeTerminal).
    assert_eq!(
        e("x\x1b]0;pwned\x1b\\y\x1b[2Jz\rw"),
        "x^[]0;pwned^[\\y^[[2Jz\\rw"
    );
    // The rest of C0, DEL and C1, which kubectl prints raw.
    assert_eq!(e("a\x07b\x08c\x00d\x7fe"), "a^Gb^Hc^@d^?e");
    assert_eq!(e("line\nnext\ttab"), "line\\nnext\\ttab");
    assert_eq!(e("csi\u{9b}2J"), "csi\\u009b2J");
    // Everything else is left alone, without a copy.
    let plain = "Fermat/f-1-and-4 → 1²+2², ✓ now Ready, ½ ÿ \u{a0}";
    assert!(matches!(e(plain), std::borrow::Cow::Borrowed(_)));
    assert_eq!(e(plain), plain);
}

/// Escapes an attacker can put in names, statuses and messages: set the title, clear the
/// screen, return the cursor, and a C1 CSI.
const EVIL: &str = "\x1b]0;pwned\x07\x1b[2J\r\u{9b}";

/// Objects whose cluster strings carry terminal escapes: a Number controlled by an owner whose
/// name has them, a Number's fizzBuzz and Ready message, a Fermat's decomposition.
fn objects_with_escapes() -> Objects {
    let (t, mut numbers) = tuple("t", vec![4], None);
    // An object of the wanted name controlled by an owner whose name carries escapes.
    numbers[0].metadata.owner_references = Some(owned_by("ConfigMap", EVIL, "uid-x"));
    let mut status = numbers[0].status.clone().expect("status");
    status.fizz_buzz = Some(format!("Fizz{EVIL}"));
    numbers[0].status = Some(status);
    let mut waiting = number("n", 15, None);
    if let Some(s) = waiting.status.as_mut() {
        s.fizz_buzz = Some(format!("Buzz{EVIL}"));
        for c in &mut s.conditions {
            c.status = "False".into();
            c.message = format!("waiting{EVIL}");
        }
    }
    let mut f = fermat("f", 5);
    let fermat = Arc::make_mut(&mut f.fermats[0]);
    if let Some(s) = fermat.status.as_mut() {
        s.decompositions = Some(vec![format!("1²+2²{EVIL}")]);
    }
    Objects {
        fermats: f.fermats,
        tuples: vec![Arc::new(t)],
        numbers: numbers.into_iter().chain([waiting]).map(Arc::new).collect(),
    }
}

/// No control character of the cluster's survives, in plain text or colour; ours (SGR
/// colours) do.
#[test]
fn cluster_strings_cannot_reach_the_terminal() {
    let roots = build(&objects_with_escapes(), &Target::All, NS).expect("trees");
    let lines = render::lines(
        &roots,
        &options(20, None),
        &Marks::default(),
        Timestamp::UNIX_EPOCH,
    );
    for colour in [false, true] {
        let out = render::to_text(&lines, colour);
        // Take out our own colours; nothing else may be a control character.
        let mut rest = out.clone();
        for code in ["0", "1", "2", "31", "32", "33", "30;42", "97;41"] {
            rest = rest.replace(&format!("\x1b[{code}m"), "");
        }
        let bad: Vec<char> = rest
            .chars()
            .filter(|c| c.is_control() && *c != '\n')
            .collect();
        assert!(bad.is_empty(), "{bad:?} in\n{out}");
        assert!(
            out.contains("controlled by ConfigMap ^[]0;pwned^G^[[2J\\r\\u009b"),
            "{out}"
        );
        assert!(out.contains("Buzz^[]0;pwned^G"), "{out}");
        assert!(out.contains("waiting^[]0;pwned^G"), "{out}");
        assert!(out.contains("1²+2²^[]0;pwned^G"), "{out}");
    }
}

/// JSON keeps the cluster's values (escaped the JSON way), with no raw DEL or C1 either.
#[test]
fn cluster_strings_reach_json_escaped() {
    let roots = build(&objects_with_escapes(), &Target::All, NS).expect("trees");
    let json = render::json_text(&render::to_json(&roots, None));
    assert!(!json.chars().any(|c| c.is_control() && c != '\n'), "{json}");
    let back: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
    assert!(back.to_string().contains("Buzz"));
    assert!(json.contains("\\u001b]0;pwned\\u0007"), "{json}");
    assert!(json.contains("\\u009b"), "{json}");
}
