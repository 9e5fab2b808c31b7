//! What the manager's caches hold per object (issue 48, item 7): a Fermat 10000's 5000 Tuples
//! and 10000 Numbers, as kube-apiserver v1.36 serves them once they are settled (managedFields,
//! ownerReferences, a Ready condition), decoded as the watch decodes them and filed in their
//! stores. The bytes are counted by the allocator, so the number is the same on every machine
//! and every run: what a store keeps, not how fast anything is. `make bench` measures the
//! whole manager's memory (peak RSS per cached object); this test keeps the caches' part of it
//! from growing back unnoticed.
//!
//! One test in this binary: the allocator's count is the whole process's, and a second test
//! running beside it would be counted too.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

use kube::runtime::watcher::Event;
use math_controller::api::{Number, Tuple};
use math_controller::cluster::store::{Store, Writer, store};
use math_controller::cluster::undecodable::Decoded;
use math_controller::kind::Kind;
use serde_json::{Value, json};

/// The system allocator, counting the bytes it holds for the program.
struct Counting;

static HELD: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        HELD.fetch_add(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        HELD.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// At most this many bytes per cached object, in what the allocator was asked for. jemalloc
/// rounds each request up to its size class (about an eighth more), and the manager holds more
/// than its caches per object (its memories, the scheduler's book): this leaves room for them
/// under the 1 KiB per cached object that `make bench` shows.
const MOST_PER_OBJECT: usize = 720;

const UID: &str = "6f1c2a8e-3b4d-4f5a-9c6b-7d8e9fa0b1c2";

fn uid(kind: &str, i: usize) -> String {
    format!("{}{:012x}", &UID[..24], i * 3 + (kind == "Tuple") as usize)
}

/// A managedFields entry as kube-apiserver writes one (the manager's status write).
fn managed(manager: &str, subresource: Option<&str>) -> Value {
    let mut entry = json!({
        "manager": manager, "operation": "Apply", "apiVersion": "math.example.com/v1beta1",
        "time": "2026-12-01T10:00:00Z", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:status": {"f:conditions": {"k:{\"type\":\"Ready\"}": {
            ".": {}, "f:lastTransitionTime": {}, "f:message": {}, "f:observedGeneration": {},
            "f:reason": {}, "f:status": {}, "f:type": {}}}, "f:observedGeneration": {}}},
    });
    if let Some(subresource) = subresource {
        entry["subresource"] = json!(subresource);
    }
    entry
}

/// An object of `kind` as the server lists it once settled: its controller's ownerReference,
/// two managers' fields, its Ready condition.
fn settled(kind: &str, name: &str, i: usize, owner: (&str, &str, String)) -> Value {
    json!({
        "apiVersion": "math.example.com/v1beta1", "kind": kind,
        "metadata": {
            "name": name, "namespace": "math-bench-10000", "uid": uid(kind, i),
            "resourceVersion": format!("{}", 1_000_000 + i * 3), "generation": 1,
            "creationTimestamp": "2026-12-01T10:00:00Z",
            "ownerReferences": [{"apiVersion": "math.example.com/v1beta1", "kind": owner.0,
                "name": owner.1, "uid": owner.2, "controller": true, "blockOwnerDeletion": true}],
            "managedFields": [managed("math-controller", None), managed("math-controller", Some("status"))],
        },
    })
}

fn number(tuple: &str, t: usize, index: usize, value: i64) -> Value {
    let name = format!("{tuple}-{index}");
    let mut n = settled(
        "Number",
        &name,
        t * 2 + index,
        ("Tuple", tuple, uid("Tuple", t)),
    );
    n["spec"] = json!({"value": value});
    n["status"] = json!({
        "observedGeneration": 1, "fizzBuzz": value.to_string(), "isSquare": false, "isPrime": false,
        "conditions": [{"type": "Ready", "status": "True", "reason": "Computed",
            "message": format!("fizzbuzz({value}) = {value}; {value} is not a perfect square and not prime"),
            "lastTransitionTime": "2026-12-01T10:00:01Z", "observedGeneration": 1}],
    });
    n
}

fn tuple(fermat: &str, a: i64, n: i64) -> Value {
    let name = format!("{fermat}-{a}-and-{}", n - a);
    let owner = ("Fermat", fermat, UID.to_string());
    let mut t = settled("Tuple", &name, a as usize, owner);
    t["spec"] = json!({"numbers": [a, n - a]});
    t["status"] = json!({
        "observedGeneration": 1, "allSquares": false, "readyNumbers": 2, "desiredNumbers": 2,
        "conditions": [{"type": "Ready", "status": "True", "reason": "AllNumbersReady",
            "message": "2 of 2 Numbers are Ready", "lastTransitionTime": "2026-12-01T10:00:02Z",
            "observedGeneration": 1}],
    });
    t
}

/// `objects` decoded as the watch decodes them and filed in a new store.
fn filed<K: Kind>(objects: impl Iterator<Item = Value>) -> (Store<K>, Writer<K>) {
    let (store, mut writer) = store::<K>();
    for object in objects {
        let text = serde_json::to_string(&object).expect("JSON");
        let Decoded(decoded) = serde_json::from_str::<Decoded<K>>(&text).expect("an object");
        writer.apply_watcher_event(&Event::Apply(decoded.expect("it decodes")));
    }
    (store, writer)
}

#[test]
fn a_fermat_10000s_children_cost_their_caches_under_720_bytes_each() {
    let n = 10_000_i64;
    let before = HELD.load(Ordering::Relaxed);
    let tuples = filed::<Tuple>((1..=n / 2).map(|a| tuple("big", a, n)));
    let numbers = filed::<Number>((1..=n / 2).enumerate().flat_map(|(t, a)| {
        let name = format!("big-{a}-and-{}", n - a);
        [number(&name, t, 0, a), number(&name, t, 1, n - a)]
    }));
    let held = (HELD.load(Ordering::Relaxed) - before) as usize;
    let objects = tuples.0.len() + numbers.0.len();
    assert_eq!(objects, 15_000);
    let per_object = held / objects;
    println!("{objects} cached objects: {held} B, {per_object} B each");
    assert!(
        per_object <= MOST_PER_OBJECT,
        "{per_object} B per cached object, more than {MOST_PER_OBJECT} B"
    );
}
