//! Logging: `tracing` to stderr, as text for a terminal or JSON for a log pipeline.
//!
//! Lines are written by a thread of their own (tracing-appender's non-blocking writer), never
//! by the runtime's one worker: a log pipe nobody reads (a stuck log shipper, a `kubectl logs`
//! pipeline paused) would otherwise stop that worker at the first full pipe, and with it the
//! probes, the lease renewal and the signals: the kubelet restarts a manager that was only
//! waiting to log. Lines that find the writer's queue full are dropped, not waited for, and
//! counted (`math_controller_log_lines_dropped_total`); what is queued is written at exit.
//!
//! `RUST_LOG` picks the detail (default: `info` for the manager, `warn` for its libraries,
//! nothing from kube's per-request trace layer, which logs every failed request at ERROR,
//! nor its WARN for each watch cut: thousands of lines in an API server outage, which the
//! manager reports in a few).

use tracing_appender::non_blocking::{ErrorCounter, NonBlockingBuilder, WorkerGuard};
use tracing_subscriber::EnvFilter;

/// The two log formats of `--log-format`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines, coloured when stderr is a terminal.
    #[default]
    Text,
    /// One JSON object per line, for log collectors in a cluster.
    Json,
}

/// The log filter without `RUST_LOG`.
pub const DEFAULT_FILTER: &str =
    "warn,math_controller=info,kube_client::client=error,kube_client::client::builder=off";

/// Lines waiting for the writer thread, at most; more are dropped. A few megabytes at a few
/// hundred bytes a line (tracing-appender's default, 128 000, could hold tens).
pub const QUEUED_LINES: usize = 8192;

/// The logging set up by [`init`]: keep it until the process exits, so that the lines still
/// queued are written (dropping it waits for that, a second at most).
pub struct Logging {
    _flush_on_drop: WorkerGuard,
    dropped: ErrorCounter,
}

impl Logging {
    /// Reads how many lines were dropped so far because the queue was full (stderr not read
    /// fast enough), for the metrics.
    pub fn dropped_counter(&self) -> impl Fn() -> u64 + Send + Sync + 'static {
        let dropped = self.dropped.clone();
        move || u64::try_from(dropped.dropped_lines()).unwrap_or(u64::MAX)
    }
}

/// Install the global subscriber, writing through a non-blocking writer. Calling it twice
/// (tests) is harmless: the second subscriber is not installed.
pub fn init(format: LogFormat) -> Logging {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    // Colours only for a terminal: escape codes in a log file or `kubectl logs` are noise.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let (writer, guard) = NonBlockingBuilder::default()
        .lossy(true)
        .buffered_lines_limit(QUEUED_LINES)
        .thread_name("log-writer")
        .finish(std::io::stderr());
    let dropped = writer.error_counter();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(ansi);
    let _ = match format {
        LogFormat::Text => builder.with_target(false).try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
    Logging {
        _flush_on_drop: guard,
        dropped,
    }
}
