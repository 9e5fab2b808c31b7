//! Logging: `tracing` to stderr, as text for a terminal or JSON for a log pipeline.
//! `RUST_LOG` picks the detail (default: `info` for the manager, `warn` for its libraries,
//! nothing from kube's per-request trace layer, which logs every failed request at ERROR,
//! nor its WARN for each watch cut: thousands of lines in an API server outage, which the
//! manager reports in a few).

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

/// Install the global subscriber. Calling it twice (tests) is harmless.
pub fn init(format: LogFormat) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    // Colours only for a terminal: escape codes in a log file or `kubectl logs` are noise.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi);
    let _ = match format {
        LogFormat::Text => builder.with_target(false).try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
}
