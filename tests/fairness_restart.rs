//! Fair to every user after a restart (issue 28): the new object goes before the settled
//! ones of the initial list. Read from the manager's debug log, so in a test binary of its
//! own: with one thread-local subscriber in a process, tracing caches a callsite first hit on
//! another test's thread (no subscriber) as disabled, and the other fairness tests, running
//! in parallel, hit the reconcile's debug lines first.

mod common;

use common::{Harness, eventually, fermat_ready, wait_for};
use math_controller::ops::manager::Options;

/// The manager's log, captured in this test's thread (the in-process manager runs on it).
#[derive(Clone, Default)]
struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut log) = self.0.lock() {
            log.extend_from_slice(buf);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn lines(&self) -> Vec<String> {
        let log = self.0.lock().map(|l| l.clone()).unwrap_or_default();
        String::from_utf8_lossy(&log)
            .lines()
            .map(str::to_string)
            .collect()
    }
}

/// After a restart, the initial list brings a hundred settled Tuples and one new one (no
/// status yet), all due at once, one reconcile at a time: the new one is reconciled among the
/// first, not after the settled ones that the list brought before it. A few settled Tuples may
/// go first: one let in before it arrived, and on a slow machine those that have waited a
/// second already (the aging that keeps a settled object from starving). Before issue 28 it
/// was in the list's order, after every other Tuple: 86th of 104.
#[tokio::test]
async fn after_a_restart_a_new_object_goes_before_the_initial_list() {
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new("math_controller=debug"))
        .with_writer({
            let captured = captured.clone();
            move || captured.clone()
        })
        .with_ansi(false)
        .finish();
    let _log = tracing::subscriber::set_default(subscriber);

    let mut h = Harness::without_manager().await;
    h.start_manager();
    h.create_fermat("f", 200).await;
    wait_for(&h.fermats(), "f", fermat_ready).await;
    h.stop_manager().await;
    // Named to come last in the list's order.
    h.create_tuple("zz-new", vec![4, 9]).await;
    let before_restart = captured.lines().len();
    h.start_manager_with(Options {
        concurrency: 1,
        ..Options::default()
    });
    wait_for(&h.tuples(), "zz-new", common::tuple_ready).await;
    // Every settled Tuple gets its turn too (nothing starves), then the order is read.
    let plans = || {
        let lines = captured.lines();
        let planned: Vec<String> = lines[before_restart.min(lines.len())..]
            .iter()
            .filter(|l| l.contains(" wants ") && l.contains("Tuple default/"))
            .cloned()
            .collect();
        planned
    };
    let planned = eventually(
        "every settled Tuple is reconciled after the restart",
        || async { Some(plans()) },
        |planned| planned.len() > 100,
    )
    .await;
    let new_at = planned
        .iter()
        .position(|l| l.contains("Tuple default/zz-new "))
        .expect("the new Tuple was planned");
    eprintln!(
        "the new Tuple was plan {} of {} after the restart",
        new_at + 1,
        planned.len()
    );
    assert!(
        planned.len() > 100,
        "every settled Tuple is reconciled after the restart: {} plans",
        planned.len()
    );
    assert!(
        new_at < 10,
        "the new Tuple was the {}th Tuple planned after the restart",
        new_at + 1
    );
}
