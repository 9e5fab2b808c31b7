//! The live view's frame spacing.

use std::time::{Duration, Instant};

use crate::pace::{FRAME, Pacer, spacing};

const MS: Duration = Duration::from_millis(1);

#[test]
fn frames_are_spaced_so_that_drawing_takes_at_most_a_third_of_the_time() {
    assert_eq!(spacing(Duration::ZERO), FRAME);
    assert_eq!(spacing(20 * MS), FRAME, "cheap frames: FRAME apart");
    assert_eq!(
        spacing(200 * MS),
        600 * MS,
        "a frame of 200 ms, then 400 ms for the rest"
    );
    assert_eq!(spacing(Duration::MAX), Duration::MAX);
}

#[test]
fn the_pacer_draws_at_once_then_when_something_changed_or_at_idle() {
    let t0 = Instant::now();
    let mut pacer = Pacer::new(t0);
    assert!(
        pacer.next(t0 + 1000 * MS) <= t0,
        "the first frame is due at once"
    );

    pacer.drawn(t0, 300 * MS);
    let idle = t0 + 2000 * MS;
    assert_eq!(
        pacer.next(idle),
        idle,
        "nothing changed: wait for the idle redraw"
    );
    assert_eq!(
        pacer.next(t0),
        t0 + 900 * MS,
        "an idle redraw is spaced too"
    );
    pacer.changed();
    assert_eq!(
        pacer.next(idle),
        t0 + 900 * MS,
        "a change: as soon as the spacing allows"
    );
    assert_eq!(pacer.started(), t0);

    pacer.drawn(t0 + 900 * MS, 10 * MS);
    pacer.changed();
    assert_eq!(pacer.next(idle), t0 + 1000 * MS);
}
