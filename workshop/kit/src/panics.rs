//! Turning a controller's panic (a `todo!()` not yet filled in) into a message for a learner
//! instead of a crash: tokio catches the panic of a spawned task; the hook installed here
//! remembers where it happened.

use std::any::Any;
use std::sync::{Mutex, OnceLock};

/// Every panic seen so far: its message and where it happened.
fn seen() -> &'static Mutex<Vec<(String, String)>> {
    static SEEN: OnceLock<Mutex<Vec<(String, String)>>> = OnceLock::new();
    SEEN.get_or_init(Default::default)
}

/// The text of a panic payload (`todo!("…")` panics with "not yet implemented: …").
pub fn message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else {
        "a panic without a message".to_string()
    }
}

/// Installs a panic hook that remembers the location of each panic message. With `quiet`
/// the default report on stderr ("thread … panicked at …") is left out for panics in tasks
/// (not on the main thread): the runner catches those and reports each once, with where it
/// happened (the checker as a hint). Without it, a `todo!()` would print twice: once where it
/// is, and again when kube-runtime re-panics with `called Result::unwrap() on an Err value:
/// JoinError::Panic(…)` (it runs each reconcile in a task of its own, and unwraps its result).
pub fn install_hook(quiet: bool) {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if let Some(location) = info.location() {
            let location = format!("{}:{}", location.file(), location.line());
            seen()
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((message(info.payload()), location));
        }
        if !quiet || std::thread::current().name() == Some("main") {
            default(info);
        }
    }));
}

/// "not yet implemented: … (at workshop/src/exercises/number.rs:<line>)". kube-runtime runs each
/// reconcile in a task of its own and re-panics with that task's `JoinError`, whose text
/// quotes the original message: the original panic (the one in your code) is the one named.
pub fn describe(payload: &(dyn Any + Send)) -> String {
    let outer = message(payload);
    let seen = seen().lock().unwrap_or_else(|e| e.into_inner());
    let original = seen
        .iter()
        .find(|(message, _)| *message == outer || outer.contains(&format!("{message:?}")));
    match original {
        Some((message, at)) => crate::t!(
            crate::messages::PANIC_AT,
            message = in_words(message),
            at = at
        ),
        None => in_words(&outer),
    }
}

/// A `todo!("EXERCISE 1b: … in workshop/src/exercises/number.rs")` said in the tools'
/// language (the exercises' own text is English); any other panic as it is.
fn in_words(message: &str) -> String {
    if crate::messages::lang() == crate::messages::Lang::En {
        return message.to_string();
    }
    match todo_exercise(message) {
        Some((exercise, file)) => crate::t!(
            crate::messages::EXERCISE_TODO,
            exercise = exercise,
            file = file
        ),
        None => message.to_string(),
    }
}

/// ("1b", "workshop/src/exercises/number.rs") from an exercise's `todo!` message.
fn todo_exercise(message: &str) -> Option<(&str, &str)> {
    let rest = message.strip_prefix("not yet implemented: EXERCISE ")?;
    let (exercise, text) = rest.split_once(':')?;
    let (_, file) = text.rsplit_once(" in ")?;
    Some((exercise.trim(), file.trim()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_exercises_todo_names_its_exercise_and_file() {
        let message = "not yet implemented: EXERCISE 2a: create or update the child Numbers, in workshop/src/exercises/tuple.rs";
        assert_eq!(
            super::todo_exercise(message),
            Some(("2a", "workshop/src/exercises/tuple.rs"))
        );
        assert_eq!(super::todo_exercise("index out of bounds"), None);
    }
}
