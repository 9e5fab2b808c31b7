//! A list that keeps failing (issue 48, item 2 and N6): the real binary while every relist
//! of Numbers is answered 500 for 30 s. It is tried again after growing, jittered pauses
//! (client-go's reflector backoff: 800 ms doubling to 30 s), and the log says so when it
//! starts and when it works again, not once per try. Before: kube-runtime's backoff was reset
//! by the `Init` the watcher yields before each list attempt, so the list was tried within a
//! second, each time a consistent read from etcd, with a warning line each time.

mod common;

use std::time::Duration;

use common::binary::Manager;
use common::*;
use test_apiserver::{RequestFilter, Verb};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_list_backs_off_and_is_told_once() {
    let h = Harness::without_manager().await;
    let manager = Manager::start(&h);
    h.create_number("before", 4).await;
    wait_for(&h.numbers(), "before", number_ready).await;
    // The watch must list again (its history is compacted away: 410), and every list fails.
    let lists = RequestFilter::new().verb(Verb::List).resource("numbers");
    h.server.fail_next(lists.clone(), 1_000_000, 500);
    h.server.reset_requests();
    h.server.compact();
    h.server.close_watches();
    tokio::time::sleep(Duration::from_secs(30)).await;
    let tries = h.server.count(&lists);
    let during = manager.lines();
    let told: Vec<&String> = (during.iter())
        .filter(|l| l.contains("watching Numbers"))
        .collect();
    // 800 ms doubling, each drawn up to twice as long: at most 6 tries fit in 30 s.
    assert!((2..=7).contains(&tries), "{tries} lists of Numbers in 30 s");
    assert!(
        (1..=2).contains(&told.len()),
        "told when it started (and at most once more with a count): {told:#?}"
    );
    assert!(
        told[0].contains("500") || told[0].contains("injected"),
        "{}",
        told[0]
    );

    h.server.clear_faults();
    h.create_number("n", 9).await;
    // The next try is at most 60 s away (30 s, drawn up to twice as long).
    wait_for(&h.numbers(), "n", number_ready).await;
    let lines = manager.stop().await;
    let recovered: Vec<&String> = (lines.iter())
        .filter(|l| l.contains("watching Numbers works again after"))
        .collect();
    assert_eq!(recovered.len(), 1, "{lines:#?}");
    assert!(recovered[0].contains("failed tries"), "{}", recovered[0]);
}
