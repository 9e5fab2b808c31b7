//! A list or watch that fails: how long it waits before the watcher tries again, by why it
//! failed, and what the log says about it: once when it starts failing, with a count while
//! it lasts, and once when it works again, never a line per try.
//!
//! The pause is client-go's reflector backoff, kube-runtime's [`DefaultBackoff`] (800 ms
//! doubling to 30 s, jittered, forgotten after two quiet minutes), taken per class
//! ([`Class`]): a 410 lists again at once (the cache is stale until it does), and only a 410
//! again right after waits ([`GoneBackoff`]); a 429 waits at least the server's
//! `retryAfterSeconds`; an unreachable server is the outage's to report and to probe
//! ([`Outage`]), and the watch goes on as soon as the probe says the server is back. The
//! backoff starts again only when the watch delivers something (an object, or a complete
//! list): kube-runtime's `StreamBackoff` resets on any item, and the watcher's `Init` before
//! every list attempt reset it each time, so a list that kept failing was tried every second
//! for good, each a consistent read from etcd.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use kube::runtime::utils::Backoff;
use kube::runtime::watcher::{self, DefaultBackoff};
use tracing::{debug, info, warn};

use crate::cluster::backoff::Exponential;
use crate::cluster::outage::Outage;
use crate::error::is_unreachable;

/// The longest pause between two tries: client-go's reflector's cap, and kube-runtime's.
const MAX_PAUSE: Duration = Duration::from_secs(30);

/// How often a failure that lasts is told again, with its count.
pub const TELL_EVERY: Duration = Duration::from_secs(60);

/// What the retry stage hands on: what the watcher brought, or that it failed.
#[derive(Debug)]
pub(crate) enum Watched<T> {
    Event(watcher::Event<T>),
    /// A 410: the watcher lists again (at once, or after a pause when 410s come in a row);
    /// the cache is stale until that list is done.
    Relisting,
    /// The list or watch failed; the watcher tries again after the pause.
    Failed,
}

/// Why a list or watch failed, as far as its retry is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    /// 410 Gone: the resourceVersion is too old to resume from (compacted, or lost in a
    /// restart); the watcher lists again.
    Gone,
    /// The API server could not be reached: an outage.
    Unreachable,
    /// 429 Too Many Requests, once the client's own tries are spent.
    Throttled { retry_after: Duration },
    /// Anything else: a 5xx, a 403, a read timeout, a page that did not decode.
    Failed,
}

/// Why `error` happened, for its retry.
pub(crate) fn classify(error: &watcher::Error) -> Class {
    let status = match error {
        watcher::Error::WatchError(status) => Some(status.as_ref()),
        watcher::Error::InitialListFailed(kube::Error::Api(status))
        | watcher::Error::WatchStartFailed(kube::Error::Api(status)) => Some(status.as_ref()),
        _ => None,
    };
    match status {
        Some(status) if status.code == 410 => Class::Gone,
        Some(status) if status.code == 429 => Class::Throttled {
            retry_after: Duration::from_secs(
                (status.details.as_ref()).map_or(0, |d| u64::from(d.retry_after_seconds)),
            ),
        },
        _ if unreachable(error) => Class::Unreachable,
        _ => Class::Failed,
    }
}

/// Whether a watch failed because the API server could not be reached.
pub(crate) fn unreachable(error: &watcher::Error) -> bool {
    match error {
        watcher::Error::InitialListFailed(e)
        | watcher::Error::WatchStartFailed(e)
        | watcher::Error::WatchFailed(e) => is_unreachable(e),
        _ => false,
    }
}

/// The retry stage of a kind's watch: each failure classified, paused for and told (see the
/// module documentation); everything else handed on as it came.
pub(crate) fn retried<T, S>(
    kind: &'static str,
    events: S,
    outage: Arc<Outage>,
) -> impl Stream<Item = Watched<T>> + Send
where
    T: Send + 'static,
    S: Stream<Item = Result<watcher::Event<T>, watcher::Error>> + Send + 'static,
{
    let retry = Retry {
        kind,
        outage,
        backoff: DefaultBackoff::default(),
        gone: GoneBackoff::default(),
        streak: Streak::default(),
    };
    let start = (events.boxed(), retry, None::<(Duration, Class)>);
    futures::stream::unfold(start, |(mut events, mut retry, pause)| async move {
        if let Some((pause, class)) = pause {
            retry.wait(pause, class).await;
        }
        let watched = match events.next().await? {
            Ok(event) => {
                retry.delivered(&event);
                (Watched::Event(event), None)
            }
            Err(error) => retry.failed(&error),
        };
        Some((watched.0, (events, retry, watched.1)))
    })
}

/// One watch's retry state.
struct Retry {
    kind: &'static str,
    outage: Arc<Outage>,
    backoff: DefaultBackoff,
    gone: GoneBackoff,
    streak: Streak,
}

impl Retry {
    /// The watcher brought `event`: an object or a complete list says it works again. Only
    /// an object from the watch itself ends a run of 410s: a list that is answered and then
    /// a watch that answers 410 again did not help ([`GoneBackoff`]).
    fn delivered<T>(&mut self, event: &watcher::Event<T>) {
        if matches!(event, watcher::Event::Apply(_) | watcher::Event::Delete(_)) {
            self.gone.resumed();
        }
        if matches!(
            event,
            watcher::Event::Apply(_) | watcher::Event::Delete(_) | watcher::Event::InitDone
        ) {
            self.backoff.reset();
            if let Some((tries, lasted, told)) = self.streak.ended(Instant::now()) {
                let kind = self.kind;
                if told {
                    info!(
                        "watching {kind}s works again after {tries} failed tries over {lasted:.1?}"
                    );
                } else {
                    debug!(
                        "watching {kind}s works again after {tries} failed tries over {lasted:.1?}"
                    );
                }
            }
        }
    }

    /// The watcher failed with `error`: what to hand on, and the pause before its next try.
    fn failed<T>(&mut self, error: &watcher::Error) -> (Watched<T>, Option<(Duration, Class)>) {
        let class = classify(error);
        let kind = self.kind;
        if class == Class::Gone {
            let pause = self.gone.gone(Instant::now());
            debug!("watching {kind}s: resourceVersion too old; listing again in {pause:?}");
            return (Watched::Relisting, Some((pause, class)));
        }
        let pause = self.backoff.next().unwrap_or(MAX_PAUSE);
        let pause = match class {
            Class::Throttled { retry_after } => pause.max(retry_after),
            _ => pause,
        };
        if class == Class::Unreachable {
            // Said once, by the outage, for every watch and reconcile at once.
            self.outage.unreachable(None, error);
            self.streak.failed(Instant::now(), false);
            debug!(%error, "watching {kind}s failed: API server unreachable; trying again in {pause:.1?} or once it is back");
            return (Watched::Failed, Some((pause, class)));
        }
        match self.streak.failed(Instant::now(), true) {
            Tell::Started => {
                warn!(%error, "watching {kind}s failed; trying again in {pause:.1?}, then less often (up to every {:?}) while it fails", MAX_PAUSE)
            }
            Tell::Still { tries, lasted } => {
                warn!(%error, "watching {kind}s still fails: {tries} tries over {lasted:.0?}; next in {pause:.1?}")
            }
            Tell::Nothing => {
                debug!(%error, "watching {kind}s failed again; trying again in {pause:.1?}")
            }
        }
        (Watched::Failed, Some((pause, class)))
    }

    /// The pause before the watcher's next try; for an unreachable server, cut short when
    /// the outage's probe finds it back.
    async fn wait(&self, pause: Duration, class: Class) {
        if pause.is_zero() {
            return;
        }
        if class == Class::Unreachable {
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                _ = self.outage.reachable_again() => {}
            }
        } else {
            tokio::time::sleep(pause).await;
        }
    }
}

/// What the log says about one more failed try.
#[derive(Debug, PartialEq, Eq)]
enum Tell {
    Nothing,
    /// The first failure of a streak.
    Started,
    /// A failure that lasts, told again every [`TELL_EVERY`].
    Still {
        tries: u32,
        lasted: Duration,
    },
}

/// A run of failed tries, from the first to the next success.
#[derive(Debug, Default)]
struct Streak {
    /// When the first failure came, and when the streak was last told (`None`: not told,
    /// the outage told it).
    since: Option<(Instant, Option<Instant>)>,
    tries: u32,
}

impl Streak {
    /// One more failed try at `now`; `loud`: this watch tells it (not the outage).
    fn failed(&mut self, now: Instant, loud: bool) -> Tell {
        self.tries = self.tries.saturating_add(1);
        let (since, told) = self.since.get_or_insert((now, None));
        let since = *since;
        if !loud {
            return Tell::Nothing;
        }
        match told {
            None => {
                *told = Some(now);
                Tell::Started
            }
            Some(last) if now.duration_since(*last) >= TELL_EVERY => {
                *last = now;
                Tell::Still {
                    tries: self.tries,
                    lasted: now.duration_since(since),
                }
            }
            Some(_) => Tell::Nothing,
        }
    }

    /// The watch works again at `now`: how many tries failed, over how long, and whether
    /// the streak was told (then its end is told too). `None`: nothing had failed.
    fn ended(&mut self, now: Instant) -> Option<(u32, Duration, bool)> {
        let (since, told) = self.since.take()?;
        let tries = std::mem::take(&mut self.tries);
        Some((tries, now.duration_since(since), told.is_some()))
    }
}

/// The pause before the list that follows a 410. The first relists at once (after a
/// compaction or an apiserver restart the cache is stale until it does); a 410 again
/// before any watch event came through means the new list did not help (an apiserver or
/// proxy answering 410 to every watch), and each such list and its fan-out to every
/// controller then waits longer: 800 ms doubling up to 30 s, client-go's reflector backoff.
/// Two quiet minutes since the last 410 start the count again, as client-go's do.
#[derive(Debug, Default)]
pub(crate) struct GoneBackoff {
    /// 410s since a watch last delivered an event.
    in_a_row: u32,
    last: Option<Instant>,
}

const GONE_FIRST_PAUSE: Duration = Duration::from_millis(800);
const GONE_QUIET_RESET: Duration = Duration::from_secs(120);

impl GoneBackoff {
    /// A 410 at `now`: how long to wait before listing again.
    pub(crate) fn gone(&mut self, now: Instant) -> Duration {
        if self
            .last
            .is_some_and(|last| now.duration_since(last) > GONE_QUIET_RESET)
        {
            self.in_a_row = 0;
        }
        self.last = Some(now);
        self.in_a_row = self.in_a_row.saturating_add(1);
        gone_pause(self.in_a_row)
    }

    /// The watch delivered an event: it works again.
    pub(crate) fn resumed(&mut self) {
        self.in_a_row = 0;
    }
}

/// The pause before the list after the `in_a_row`th 410 in a row.
fn gone_pause(in_a_row: u32) -> Duration {
    match in_a_row {
        0 | 1 => Duration::ZERO,
        n => Exponential::new(GONE_FIRST_PAUSE, MAX_PAUSE).delay(n - 2, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::response::StatusDetails;

    fn status(code: u16, retry_after_seconds: u32) -> Box<kube::core::Status> {
        let mut status = kube::core::Status::failure("no", "Reason").with_code(code);
        let details = serde_json::json!({ "retryAfterSeconds": retry_after_seconds });
        status.details = serde_json::from_value::<StatusDetails>(details).ok();
        Box::new(status)
    }

    /// One watch whose connection breaks while the server is up (a proxy's idle timeout, a
    /// reset) is not an outage: the watcher reconnects, and reconciles go on. An outage shows
    /// as the reconnect (or a list) failing to reach the server. Before: a reset read was an
    /// outage, and every reconcile was put off until `GET /version` answered (issue 39).
    #[test]
    fn a_broken_watch_stream_is_not_an_outage_but_a_failed_connect_is() {
        let reset = || std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset by peer");
        let broken = watcher::Error::WatchFailed(kube::Error::ReadEvents(reset()));
        assert_eq!(classify(&broken), Class::Failed);
        let refused = kube::Error::Service(Box::new(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "connection refused",
        )));
        let refused = watcher::Error::WatchStartFailed(refused);
        assert_eq!(classify(&refused), Class::Unreachable);
    }

    #[test]
    fn errors_are_classed_by_what_their_retry_needs() {
        let gone = watcher::Error::WatchError(status(410, 0));
        assert_eq!(classify(&gone), Class::Gone);
        let listed = |code, after| {
            classify(&watcher::Error::InitialListFailed(kube::Error::Api(
                status(code, after),
            )))
        };
        assert_eq!(listed(410, 0), Class::Gone);
        assert_eq!(
            listed(429, 5),
            Class::Throttled {
                retry_after: Duration::from_secs(5)
            }
        );
        assert_eq!(listed(500, 0), Class::Failed);
        assert_eq!(listed(403, 0), Class::Failed);
    }

    /// A failure is told when it starts, then once a minute with its count, and its end once;
    /// a streak only the outage told ends quietly.
    #[test]
    fn a_lasting_failure_is_told_once_a_minute_with_its_count() {
        let start = Instant::now();
        let at = |secs: u64| start + Duration::from_secs(secs);
        let mut streak = Streak::default();
        assert_eq!(streak.failed(at(0), true), Tell::Started);
        let quiet: Vec<Tell> = (1..60).map(|s| streak.failed(at(s), true)).collect();
        assert!(quiet.iter().all(|t| *t == Tell::Nothing));
        assert_eq!(
            streak.failed(at(60), true),
            Tell::Still {
                tries: 61,
                lasted: Duration::from_secs(60)
            }
        );
        assert_eq!(
            streak.ended(at(70)),
            Some((61, Duration::from_secs(70), true))
        );
        assert_eq!(streak.ended(at(71)), None);
        assert_eq!(streak.failed(at(80), false), Tell::Nothing);
        assert_eq!(
            streak.ended(at(81)),
            Some((1, Duration::from_secs(1), false))
        );
    }

    #[test]
    fn a_first_410_relists_at_once_and_more_in_a_row_wait_longer() {
        let pauses: Vec<u64> = (1..=9).map(|n| gone_pause(n).as_millis() as u64).collect();
        assert_eq!(
            pauses,
            [0, 800, 1600, 3200, 6400, 12800, 25600, 30000, 30000]
        );
        assert_eq!(gone_pause(u32::MAX), MAX_PAUSE);
    }

    #[test]
    fn an_event_or_two_quiet_minutes_start_the_count_again() {
        let start = Instant::now();
        let mut backoff = GoneBackoff::default();
        assert_eq!(backoff.gone(start), Duration::ZERO);
        assert_eq!(backoff.gone(start), GONE_FIRST_PAUSE);
        backoff.resumed();
        assert_eq!(backoff.gone(start), Duration::ZERO);
        assert_eq!(
            backoff.gone(start + Duration::from_secs(1)),
            GONE_FIRST_PAUSE
        );
        let later = start + Duration::from_secs(200);
        assert_eq!(backoff.gone(later), Duration::ZERO);
    }
}
