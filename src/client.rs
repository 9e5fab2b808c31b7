//! The manager's `kube::Client` settings that kube's defaults leave out: a read timeout.
//!
//! kube 5 sets no read timeout (`Config::read_timeout` is `None`), so a request the API server
//! accepted but never answers (a hung connection, a load balancer that dropped it silently)
//! blocks its reconcile for good, and with it a shutdown. The read timeout is a socket-level
//! inactivity timeout (hyper-timeout): the request fails when no byte has arrived for that long,
//! and the error policy retries it. It applies to every connection, watches included, so the
//! watches ask the API server to end them (`timeoutSeconds`, see [`watch_timeout_seconds`])
//! before a quiet one could be cut; the watcher then resumes from its last resourceVersion
//! without a relist, and a watch on a dead connection is noticed within the read timeout.

use std::time::Duration;

/// How long a request may wait for its next byte from the API server.
pub const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// kube-runtime's server-side watch timeout when nothing else is asked for.
const KUBE_WATCH_TIMEOUT_SECONDS: u32 = 290;

/// `config` with a read timeout. The timer restarts when a request is written
/// (`reset_reader_on_write`), so the time a pooled connection sat idle does not count against
/// the next response on it.
pub fn with_read_timeout(mut config: kube::Config, read_timeout: Duration) -> kube::Config {
    config.read_timeout = Some(read_timeout);
    config.reset_reader_on_write = true;
    config
}

/// The `timeoutSeconds` a watch asks for: five sixths of the read timeout (25 s for 30 s), so
/// that the server ends a quiet watch before the client would cut it; kube-runtime's 290 s
/// without a read timeout.
pub fn watch_timeout_seconds(read_timeout: Option<Duration>) -> u32 {
    match read_timeout {
        None => KUBE_WATCH_TIMEOUT_SECONDS,
        Some(timeout) => {
            let seconds = timeout.as_secs().saturating_mul(5) / 6;
            u32::try_from(seconds)
                .unwrap_or(u32::MAX)
                .clamp(1, KUBE_WATCH_TIMEOUT_SECONDS)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watches_end_before_the_read_timeout() {
        assert_eq!(watch_timeout_seconds(Some(DEFAULT_READ_TIMEOUT)), 25);
        assert_eq!(watch_timeout_seconds(Some(Duration::from_secs(2))), 1);
        assert_eq!(watch_timeout_seconds(Some(Duration::from_secs(3600))), 290);
        assert_eq!(watch_timeout_seconds(None), 290);
        for seconds in 2..400 {
            let t = watch_timeout_seconds(Some(Duration::from_secs(seconds)));
            assert!(u64::from(t) < seconds, "{t} for {seconds}");
        }
    }

    #[test]
    fn the_read_timeout_counts_from_the_request() {
        let config = with_read_timeout(
            kube::Config::new("http://127.0.0.1:1".parse().unwrap()),
            DEFAULT_READ_TIMEOUT,
        );
        assert_eq!(config.read_timeout, Some(DEFAULT_READ_TIMEOUT));
        assert!(config.reset_reader_on_write);
    }
}
