//! The live view's memo: reused subtrees, and never a different tree than a fresh build.

use super::*;
use crate::build_with;
use crate::memo::Memo;

fn json(roots: &[Node]) -> serde_json::Value {
    render::to_json(roots, None)
}

fn child<'a>(root: &'a Node, name: &str) -> &'a Arc<Node> {
    (root.children.iter())
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("{name} not among {:?}", names(root)))
}

/// What a learner does to a converged Fermat of 30 between two frames: one Number edited by
/// hand, one deleted, one Tuple deleted, one Tuple no longer controlled.
fn edit_the_cluster(objects: &mut Objects) {
    let at = |objects: &Objects, name: &str| {
        (objects.numbers.iter())
            .position(|n| n.name_any() == name)
            .expect("fixture")
    };
    let i = at(objects, "f-2-and-28-1");
    let mut edited = (*objects.numbers[i]).clone();
    edited.spec.value = 99;
    objects.numbers[i] = Arc::new(edited);
    objects.numbers.retain(|n| n.name_any() != "f-3-and-27-0");
    objects.tuples.retain(|t| t.name_any() != "f-4-and-26");
    let i = (objects.tuples.iter())
        .position(|t| t.name_any() == "f-5-and-25")
        .expect("fixture");
    let mut orphan = (*objects.tuples[i]).clone();
    orphan.metadata.owner_references = None;
    objects.tuples[i] = Arc::new(orphan);
}

#[test]
fn a_memo_reuses_what_did_not_change_and_builds_what_a_fresh_build_would() {
    let target = one(Kind::Fermat, "f");
    let mut objects = fermat("f", 30);
    let mut memo = Memo::new();
    let first = build_with(&objects, &target, NS, &mut memo).expect("found");
    assert_eq!(
        json(&first),
        json(&build(&objects, &target, NS).expect("found"))
    );
    assert_eq!(memo.len(), 1 + 15, "the Fermat and its 15 Tuples");

    edit_the_cluster(&mut objects);

    let second = build_with(&objects, &target, NS, &mut memo).expect("found");
    assert_eq!(
        json(&second),
        json(&build(&objects, &target, NS).expect("found"))
    );
    let (before, after) = (&first[0], &second[0]);
    assert!(Arc::ptr_eq(
        child(before, "f-10-and-20"),
        child(after, "f-10-and-20")
    ));
    for changed in ["f-2-and-28", "f-3-and-27", "f-4-and-26", "f-5-and-25"] {
        assert!(!Arc::ptr_eq(child(before, changed), child(after, changed)));
    }
    assert_eq!(
        child(after, "f-5-and-25").problems,
        [Problem::NoController],
        "a problem the parent finds is added to the reused node, not to the memo's"
    );
    assert_eq!(memo.len(), 1 + 14, "a deleted Tuple is forgotten");

    let third = build_with(&objects, &target, NS, &mut memo).expect("found");
    // A node its parent adds a problem to is a copy, made again each time.
    let reused = |a: &Arc<Node>| a.name != "f-5-and-25";
    for (a, b) in after.children.iter().zip(&third[0].children) {
        assert_eq!(Arc::ptr_eq(a, b), reused(a), "{}", a.name);
    }
    let all = build_with(&objects, &Target::All, NS, &mut memo).expect("all");
    assert_eq!(
        json(&all),
        json(&build(&objects, &Target::All, NS).expect("all"))
    );
}
