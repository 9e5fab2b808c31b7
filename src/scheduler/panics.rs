//! A panic in one run is that run's problem: [`catch`] ends a future that panicked with a
//! [`Panic`] (what it said, and where) instead of unwinding through the task that runs every
//! reconcile, and the panic hook keeps such a panic to itself, so that it is told once, by
//! whoever caught it, in the log's format, instead of Rust's default message on stderr at
//! every retry. Panics anywhere else (another thread, a task of its own) still reach the hook
//! that was installed before (Rust's default: the message on stderr).
//!
//! controller-runtime recovers a reconcile's panic by default (`RecoverPanic`) and counts it
//! in `controller_runtime_reconcile_panics_total`; kube-runtime's `Controller` runs each
//! reconcile in the task that polls them all, so one panic ends every controller. Why a
//! caught future rather than a task per reconcile is said in docs/architecture.md ("A panic is
//! one object's problem").

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Once;

use futures::FutureExt;

/// What a caught panic said, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Panic {
    /// The panic's message, on one line, control characters replaced (it may quote what the
    /// cluster sent: an object's name, a field).
    pub message: String,
    /// `file:line:column` of the panic, when the hook saw it.
    pub location: Option<String>,
}

impl std::fmt::Display for Panic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.location {
            Some(location) => write!(f, "panicked at {location}: {}", self.message),
            None => write!(f, "panicked: {}", self.message),
        }
    }
}

thread_local! {
    /// How many [`catch`]es are polling on this thread now: a panic while one is is caught.
    static CATCHING: Cell<u32> = const { Cell::new(0) };
    /// What the hook saw of the last panic it kept to itself on this thread.
    static SEEN: RefCell<Option<Panic>> = const { RefCell::new(None) };
}

/// `work`, or what it panicked with. The future is polled with the panic hook told that a
/// panic here is caught, so the hook keeps it quiet and notes where it happened.
///
/// `AssertUnwindSafe`: what a run shares with the others (the scheduler's book and permits,
/// the memories, the caches) is behind locks that recover from a panic while held, each
/// keeping a valid map, and its permits and request slots go back when dropped; what the
/// panic cut short is what a cancelled run leaves too (docs/architecture.md says what).
pub async fn catch<F: Future>(work: F) -> Result<F::Output, Panic> {
    install_hook();
    let mut work = Box::pin(work);
    let polled = futures::future::poll_fn(move |cx| {
        let _catching = Catching::enter();
        work.as_mut().poll(cx)
    });
    AssertUnwindSafe(polled).catch_unwind().await.map_err(taken)
}

/// [`catch`] for a closure: `work()`, or what it panicked with.
pub fn catch_now<T>(work: impl FnOnce() -> T) -> Result<T, Panic> {
    install_hook();
    let caught = {
        let _catching = Catching::enter();
        std::panic::catch_unwind(AssertUnwindSafe(work))
    };
    caught.map_err(taken)
}

/// The [`Panic`] of a payload just caught on this thread: as the hook saw it, or (a hook
/// installed after ours did not call it) from the payload alone.
fn taken(payload: Box<dyn Any + Send>) -> Panic {
    SEEN.with(|seen| seen.borrow_mut().take())
        .unwrap_or_else(|| Panic {
            message: one_line(payload_text(payload.as_ref())),
            location: None,
        })
}

/// Marks this thread as polling a [`catch`] for as long as it lives (also while unwinding).
struct Catching;

impl Catching {
    fn enter() -> Catching {
        CATCHING.with(|c| c.set(c.get().saturating_add(1)));
        Catching
    }
}

impl Drop for Catching {
    fn drop(&mut self) {
        CATCHING.with(|c| c.set(c.get().saturating_sub(1)));
    }
}

/// Once per process: a hook that keeps the panics of a [`catch`] to itself, noting what they
/// said and where, and hands every other panic to the hook installed before it.
fn install_hook() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if CATCHING.with(Cell::get) == 0 {
                return previous(info);
            }
            let panic = Panic {
                message: one_line(payload_text(info.payload())),
                location: info.location().map(ToString::to_string),
            };
            SEEN.with(|seen| *seen.borrow_mut() = Some(panic));
        }));
    });
}

/// What a panic's payload says: `panic!`'s message, or that it carried something else.
fn payload_text(payload: &(dyn Any + Send)) -> &str {
    if let Some(text) = payload.downcast_ref::<&str>() {
        text
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text
    } else {
        "(a panic without a message)"
    }
}

/// `text` on one line, every control character (a newline, an escape) a space.
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A future that panics ends with its message and place; the next one on the same thread
    /// runs as usual.
    #[tokio::test]
    async fn a_panicking_future_ends_with_what_it_said() {
        let name = "bad\u{1b}[2J";
        let caught = catch(async move {
            tokio::task::yield_now().await;
            panic!("cannot reconcile {name}\nsecond line");
        })
        .await;
        let panic = caught.expect_err("caught");
        assert_eq!(panic.message, "cannot reconcile bad [2J second line");
        let location = panic.location.clone().unwrap_or_default();
        assert!(
            location.starts_with("src/scheduler/panics.rs:"),
            "{location}"
        );
        assert!(
            panic
                .to_string()
                .starts_with("panicked at src/scheduler/panics.rs:")
        );
        assert_eq!(catch(async { 7 }).await, Ok(7));
    }

    #[test]
    fn a_panicking_closure_ends_with_what_it_said() {
        let code = 42;
        let caught = catch_now(|| -> u8 { panic!("code {code}") });
        assert_eq!(caught.map_err(|p| p.message), Err("code 42".to_string()));
        assert_eq!(catch_now(|| 1), Ok(1));
        assert_eq!(CATCHING.with(Cell::get), 0, "left after the panic");
    }
}
