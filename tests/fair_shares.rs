//! Flow shares (issue 28): a small Fermat's writes wait at the server behind few of a big
//! one's, on a test API server that answers writes in arrival order at a fixed rate. In a
//! binary of its own: beside `tests/fairness.rs`' test that reads the manager's log through a
//! thread's own subscriber, this one's manager (on another thread, at the same time) left that
//! log nearly empty (tracing caches per log line whether anyone wants it).

mod common;

use common::flows::{create_fermat, create_namespace, ours_in};
use common::{Harness, eventually, fermat_ready, wait_for};
use kube::api::Api;
use math_controller::api::Fermat;
use math_controller::ops::manager::Options;
use test_apiserver::{RequestFilter, RequestRecord, Verb};

/// The position of the first request matching `first` and of the last matching `last`, in the
/// order the server answered them, and how many of the big Fermat's writes it answered between
/// the two: the small one's time to Ready, counted in the big one's writes.
fn big_writes_between(
    log: &[RequestRecord],
    first: impl Fn(&RequestRecord) -> bool,
    last: impl Fn(&RequestRecord) -> bool,
) -> (usize, usize, usize) {
    let start = log.iter().position(first).expect("the first request");
    let end = log.iter().rposition(last).expect("the last request");
    let between = log[start..end].iter().filter(|r| ours_in(r, "big")).count();
    (start, end, between)
}

/// The server answers writes in arrival order at a fixed rate (as a loaded kube-apiserver
/// does: one queue of CPU), so a write of the small Fermat waits behind every write the big one
/// already has open there. A Fermat 13 is a chain of about ten such waits (its Tuples, their
/// Numbers, the Numbers' statuses, the Tuples', its own), and while the big one holds every
/// request slot each wait is a whole pool of its writes: the small one's time to Ready is
/// counted here in the big one's writes the server answered meanwhile. With flow shares the
/// big one holds half the slots while the small one is active, and half the reconciles.
async fn big_writes_while_a_small_fermat_is_built(flow_shares: bool) -> usize {
    let mut h = Harness::without_manager().await;
    create_namespace(&h, "big").await;
    create_namespace(&h, "small").await;
    h.server.set_write_rate(WRITES_PER_SECOND);
    h.start_manager_with(Options {
        requests_in_flight: 16,
        flow_shares,
        ..Options::default()
    });
    create_fermat(&h, "big", 200).await;
    let number_creates = RequestFilter::new()
        .verb(Verb::Create)
        .resource("numbers")
        .namespace("big");
    eventually(
        "the big Fermat's Numbers are being created",
        || async { Some(h.server.count(&number_creates)) },
        |n| *n >= 20,
    )
    .await;
    create_fermat(&h, "small", 13).await;
    for namespace in ["small", "big"] {
        let fermats = Api::<Fermat>::namespaced(h.client.clone(), namespace);
        wait_for(&fermats, "f", fermat_ready).await;
    }
    let log = h.server.requests();
    let (start, end, between) = big_writes_between(
        &log,
        |r| ours_in(r, "small") && r.resource == "fermats" && r.verb == Verb::Create,
        |r| ours_in(r, "small"),
    );
    let big = log.iter().filter(|r| ours_in(r, "big")).count();
    let after = log[end..].iter().filter(|r| ours_in(r, "big")).count();
    eprintln!(
        "flow shares {flow_shares}: the server answered {between} of the big Fermat's {big} writes \
         while the small one was built (requests {start}..{end}), {after} after"
    );
    between
}

/// How fast the server answers writes in the test above: slow enough that the server's queue,
/// not the test's CPU, is what a write waits for.
const WRITES_PER_SECOND: u32 = 100;

/// Without flow shares (the big one holding all 16 slots and all 64 reconciles of each kind,
/// as before them) the server answered 162–213 of the big one's writes while the small one
/// was built; with them 99–115 (nine runs, on a loaded 2-core machine).
#[tokio::test]
async fn a_small_fermat_waits_behind_few_of_the_big_ones_writes() {
    let between = big_writes_while_a_small_fermat_is_built(true).await;
    assert!(
        between <= 150,
        "the small Fermat waited behind {between} of the big one's writes (16 slots): it \
         waits at the server behind every request the big one has open there"
    );
}
