//! A panic is one object's problem (issue 48, item 3): a reconcile that panics for one object
//! is caught, counted, told once and retried with backoff, and every other object and kind
//! goes on. In a test binary of its own: it installs a panic hook (process-wide) and reads the
//! manager's log through a subscriber of this test's thread.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use common::{Harness, eventually, fermat_ready, sample, tuple_ready, wait_for};
use math_controller::ops::manager::Options;
use math_controller::reconcile::controller_loop::ReconcileHook;

/// The manager's log, captured in this test's thread (the in-process manager runs on it).
#[derive(Clone, Default)]
struct Captured(Arc<std::sync::Mutex<Vec<u8>>>);

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
    fn lines_with(&self, words: &[&str]) -> Vec<String> {
        let log = self.0.lock().map(|l| l.clone()).unwrap_or_default();
        String::from_utf8_lossy(&log)
            .lines()
            .filter(|l| words.iter().all(|w| l.contains(w)))
            .map(str::to_string)
            .collect()
    }
}

/// The Tuple named `bad` panics in every reconcile while `panicking` holds; each of its
/// panics is counted in `panics`.
fn panics_for_bad(panicking: Arc<AtomicBool>, panics: Arc<AtomicUsize>) -> ReconcileHook {
    ReconcileHook(Arc::new(move |controller, _namespace, name| {
        if controller == "tuple" && name == "bad" && panicking.load(Ordering::SeqCst) {
            panics.fetch_add(1, Ordering::SeqCst);
            panic!("injected panic for {name}");
        }
    }))
}

/// Before: the panic unwound through the task that runs every controller, the manager
/// stopped, and the Fermat beside it never became Ready.
#[tokio::test]
async fn a_reconcile_that_panics_stops_nobody_else_and_is_told_once() {
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new("math_controller=info"))
        .with_writer({
            let captured = captured.clone();
            move || captured.clone()
        })
        .with_ansi(false)
        .finish();
    let _log = tracing::subscriber::set_default(subscriber);
    // What prints Rust's default panic message: it must not hear of the caught panics.
    let default_messages = Arc::new(AtomicUsize::new(0));
    std::panic::set_hook(Box::new({
        let default_messages = default_messages.clone();
        move |_| {
            default_messages.fetch_add(1, Ordering::SeqCst);
        }
    }));

    let (panicking, panics) = (Arc::new(AtomicBool::new(true)), Arc::default());
    let mut h = Harness::without_manager().await;
    let metrics = h.start_manager_observed(Options {
        reconcile_hook: Some(panics_for_bad(panicking.clone(), Arc::clone(&panics))),
        ..Options::default()
    });
    h.create_tuple("bad", vec![4, 9]).await;
    h.create_fermat("f", 13).await;
    wait_for(&h.fermats(), "f", fermat_ready).await;
    // Retried without any news of it (its reconcile writes nothing): the backoff's requeues.
    eventually(
        "the bad Tuple retried",
        || async { Some(panics.load(Ordering::SeqCst)) },
        |n| *n >= 4,
    )
    .await;

    let told = captured.lines_with(&["Tuple/default/bad", "panicked"]);
    eprintln!("{told:#?}");
    assert_eq!(told.len(), 1, "told once: {told:#?}");
    assert!(told[0].contains("ERROR"), "{}", told[0]);
    assert!(
        told[0].contains("panicked at tests/panics.rs:")
            && told[0].contains("injected panic for bad"),
        "where and what: {}",
        told[0]
    );
    assert_eq!(
        default_messages.load(Ordering::SeqCst),
        0,
        "no default panic message"
    );

    panicking.store(false, Ordering::SeqCst);
    wait_for(&h.tuples(), "bad", tuple_ready).await;
    let counted = panics.load(Ordering::SeqCst) as f64;
    let text = metrics.encode();
    let panics_total = r#"controller_runtime_reconcile_panics_total{controller="tuple"}"#;
    assert_eq!(sample(&text, panics_total), Some(counted), "{text}");
    let errors = r#"controller_runtime_reconcile_total{controller="tuple",result="error"}"#;
    assert!(
        sample(&text, errors).is_some_and(|e| e >= counted),
        "{text}"
    );
    let recovered = format!("reconciled again after {counted} panics in a row");
    let recovered = captured.lines_with(&["Tuple/default/bad", &recovered]);
    assert_eq!(recovered.len(), 1, "the recovery told with the count");
    h.stop_manager().await;
}
