//! Riding out an API server outage: telling "the API server is unreachable" apart from a
//! failed request (with [`is_unreachable`], kept with the errors), logging it as a few lines
//! instead of one per request, and the fast, jittered retry delays that bring the watches and
//! the reconciles back within about a second of the server's return.
//!
//! During a control-plane restart every request fails with a connection error. Each of
//! them is the same news, so the watches and the error policy report here, and this
//! module says it once ("unreachable since ...; N reconciles waiting"), at most every
//! [`REPORT_EVERY`] while it lasts, and once more when a request succeeds again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use tracing::{info, warn};

use crate::cluster::backoff::Exponential;
use crate::error::is_unreachable;

/// How often a continuing outage is reported again.
pub const REPORT_EVERY: Duration = Duration::from_secs(10);
/// The longest a watch or a reconcile waits between two attempts while the server is away:
/// the delay between its return and the manager noticing.
pub const RETRY_MAX: Duration = Duration::from_secs(1);
const RETRY_MIN: Duration = Duration::from_millis(100);

/// The outage in progress, if any: shared by the watches and the error policy.
///
/// An outage begins with the first request that cannot reach the server, and ends when a
/// probe (`GET /version`, retried every [`retry_delay`]) gets an answer: the one judge of
/// "reachable again", since reconciles that succeed without a request prove nothing.
pub struct Outage {
    client: kube::Client,
    state: Mutex<State>,
    /// Whether an outage is in progress, for those who wait for its end
    /// ([`Outage::reachable_again`]).
    down: tokio::sync::watch::Sender<bool>,
}

#[derive(Default)]
struct State {
    /// When the first request failed to reach the server (`None`: reachable).
    since: Option<(Instant, SystemTime)>,
    /// The objects whose reconcile failed for it and is waiting to run again, with how many
    /// times each has waited: the outage's own retry count, forgotten when it ends, so that
    /// the error policy's backoff for ordinary failures starts afresh after it.
    waiting: HashMap<String, u32>,
    last_report: Option<Instant>,
    /// When the last outage ended.
    back: Option<Instant>,
}

impl Outage {
    pub fn new(client: kube::Client) -> Arc<Outage> {
        Arc::new(Outage {
            client,
            state: Mutex::default(),
            down: tokio::sync::watch::Sender::new(false),
        })
    }

    /// A request failed to reach the API server; `key` names the reconcile that made it
    /// (`None`: a watch). Logs the first failure and then at most every [`REPORT_EVERY`].
    /// Answers how many times `key` has waited for this outage.
    pub fn unreachable(self: &Arc<Self>, key: Option<&str>, error: &dyn std::fmt::Display) -> u32 {
        let Ok(mut s) = self.state.lock() else {
            return 0;
        };
        let now = Instant::now();
        let attempt = match key {
            Some(key) => s.wait(key),
            None => 0,
        };
        let new = s.since.is_none();
        let (started, wall) = *s.since.get_or_insert((now, SystemTime::now()));
        if !new && s.last_report.is_some_and(|t| now - t < REPORT_EVERY) {
            return attempt;
        }
        s.last_report = Some(now);
        let since = humantime_utc(wall);
        let waiting = s.waiting.len();
        if new {
            self.down.send_replace(true);
            tokio::spawn(self.clone().probe());
            warn!(%error, "API server unreachable since {since}; {waiting} reconciles waiting; retrying every second at most");
        } else {
            warn!(
                "API server still unreachable since {since} ({:.0?}); {waiting} reconciles waiting",
                now - started
            );
        }
        attempt
    }

    /// A reconcile put off until the server is back; answers how many times `key` has
    /// waited for this outage.
    pub fn waiting(&self, key: &str) -> u32 {
        self.state.lock().map(|mut s| s.wait(key)).unwrap_or(0)
    }

    /// A reconcile succeeded: it no longer waits for the server.
    pub fn reconciled(&self, key: &str) {
        if let Ok(mut s) = self.state.lock()
            && !s.waiting.is_empty()
        {
            s.waiting.remove(key);
        }
    }

    /// Knocks until the server answers, then ends the outage with one line.
    async fn probe(self: Arc<Self>) {
        let mut attempt = 0;
        while let Err(error) = self.client.apiserver_version().await {
            if !is_unreachable(&error) {
                break;
            }
            tokio::time::sleep(retry_delay(attempt, random())).await;
            attempt += 1;
        }
        self.reachable();
    }

    fn reachable(&self) {
        let Ok(mut s) = self.state.lock() else { return };
        if let Some((started, _)) = s.since.take() {
            info!(
                "API server reachable again after {:.1?}; {} reconciles retrying",
                started.elapsed(),
                s.waiting.len()
            );
            s.last_report = None;
            s.back = Some(Instant::now());
            s.waiting.clear();
            self.down.send_replace(false);
        }
    }

    /// Resolves once no outage is in progress: at once when there is none, else when the
    /// probe gets its answer. A watch waiting out its backoff goes on then.
    pub async fn reachable_again(&self) {
        let mut down = self.down.subscribe();
        let _ = down.wait_for(|down| !down).await;
    }

    /// When the last outage ended, if there was one.
    pub fn back_since(&self) -> Option<Instant> {
        self.state.lock().ok().and_then(|s| s.back)
    }

    /// Whether an outage is in progress.
    pub fn is_down(&self) -> bool {
        self.state.lock().is_ok_and(|s| s.since.is_some())
    }
}

impl State {
    /// One more wait of `key` for the server; answers the count.
    fn wait(&mut self, key: &str) -> u32 {
        let count = self.waiting.entry(key.to_string()).or_default();
        *count = count.saturating_add(1);
        *count
    }
}

/// A wall-clock time as `HH:MM:SS UTC`, enough for a log line.
fn humantime_utc(t: SystemTime) -> String {
    let secs = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
        % 86_400;
    format!(
        "{:02}:{:02}:{:02} UTC",
        secs / 3600,
        (secs / 60) % 60,
        secs % 60
    )
}

/// The delay before the next attempt while the server is unreachable: doubling from
/// 100 ms to [`RETRY_MAX`], each drawn in its upper half at random so that a thousand
/// waiting reconciles and three watches do not knock at the same instant.
pub fn retry_delay(attempt: u32, random: u64) -> Duration {
    Exponential::new(RETRY_MIN, RETRY_MAX)
        .jittered()
        .delay(attempt, random)
}

/// A random number for jitter (see [`crate::cluster::backoff::random`]).
pub(crate) use crate::cluster::backoff::random;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_delays_grow_fast_to_a_second_and_stay_jittered() {
        assert_eq!(retry_delay(0, 0), Duration::from_millis(50));
        assert!(retry_delay(0, 999) < Duration::from_millis(100));
        for attempt in [4, 10, u32::MAX] {
            for r in [0, 500, 999, u64::MAX] {
                let d = retry_delay(attempt, r);
                assert!(d >= RETRY_MAX / 2 && d <= RETRY_MAX, "{d:?}");
            }
        }
    }
}
