//! The command line, as a kubebuilder manager's flags read: kubebuilder's names
//! (`--metrics-bind-address`, `--health-probe-bind-address`, `--leader-elect`,
//! `--metrics-secure`, `--metrics-cert-path`, `--metrics-cert-name`, `--metrics-cert-key`,
//! `--enable-http2`), their booleans also written Go's way (`--metrics-secure=false`), beside
//! ours. Our defaults differ where `cargo run` on a laptop wants them to: plain metrics on
//! loopback (kubebuilder's: none, or HTTPS); `deploy/` passes kubebuilder's.

use std::path::PathBuf;
use std::time::Duration;

use clap::builder::BoolishValueParser;
use clap::{Parser, Subcommand};

use crate::ops::telemetry::LogFormat;
use serving::health::BindAddress;

/// The ClusterRole of `deploy/` that grants `get` on `/metrics`: a `--metrics-secure` 403 tells
/// its reader to bind it.
pub const METRICS_READER_ROLE: &str = "math-controller-metrics-reader";

/// math-controller: Number, Tuple and Fermat, reconciled by one manager.
#[derive(Debug, Parser)]
#[command(version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the three CustomResourceDefinitions as YAML (or write them, with the kustomization
    /// that lists them, into a directory).
    Crds {
        /// Write one file per CRD into this directory instead of printing.
        #[arg(long)]
        dir: Option<PathBuf>,
    },
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Watch and reconcile only this namespace (default: all namespaces).
    #[arg(long, short = 'n', env = "WATCH_NAMESPACE")]
    pub namespace: Option<String>,
    /// How many objects of each kind are reconciled at once (0: no limit).
    #[arg(long, default_value_t = crate::ops::manager::CONCURRENCY)]
    pub concurrency: u16,
    /// How many write and Event requests are open at the API server at once, across all
    /// reconciles (0: no limit); each is a connection of its own.
    #[arg(long, default_value_t = crate::ops::manager::REQUESTS_IN_FLIGHT)]
    pub requests_in_flight: u16,
    /// While several namespaces are busy at once, each holds at most its share of
    /// --requests-in-flight and of each controller's --concurrency, so that a small object's
    /// requests do not queue at the API server behind a big one's, nor its reconciles behind
    /// the big one's (false: one namespace may hold them all).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub flow_shares: bool,
    /// Where /metrics is served; 0 turns it off [default: 127.0.0.1:8080, or 127.0.0.1:8443
    /// with --metrics-secure].
    #[arg(long)]
    pub metrics_bind_address: Option<BindAddress>,
    /// Serve /metrics over HTTPS, only to bearer tokens the cluster allows to get /metrics
    /// (TokenReview and SubjectAccessReview), as a kubebuilder v4 manager does
    /// (`--metrics-secure=false`: plain HTTP).
    #[arg(long, num_args = 0..=1, default_missing_value = "true", default_value = "false", value_parser = BoolishValueParser::new())]
    pub metrics_secure: bool,
    /// Directory with the certificate and key for --metrics-secure, re-read when they change
    /// (default: a self-signed certificate generated at start). Also --metrics-cert-dir.
    #[arg(long, visible_alias = "metrics-cert-dir", requires = "metrics_secure")]
    pub metrics_cert_path: Option<PathBuf>,
    /// The certificate's file name in --metrics-cert-path.
    #[arg(long, default_value = serving::secure_metrics::tls::CERT_FILE)]
    pub metrics_cert_name: String,
    /// The key's file name in --metrics-cert-path.
    #[arg(long, default_value = serving::secure_metrics::tls::KEY_FILE)]
    pub metrics_cert_key: String,
    /// HTTP/2 for the metrics server: off, as kubebuilder's default, and only off here (the
    /// servers speak HTTP/1.1, out of reach of HTTP/2's stream-cancellation and rapid-reset
    /// attacks); `true` is refused with a line that says so.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", default_value = "false", value_parser = parse_enable_http2)]
    pub enable_http2: bool,
    /// Where /healthz and /readyz are served; 0 turns them off.
    #[arg(long, default_value = "127.0.0.1:8081")]
    pub health_probe_bind_address: BindAddress,
    /// Hold a coordination.k8s.io Lease so that only one replica reconciles
    /// (`--leader-elect=false`: do not).
    #[arg(long, num_args = 0..=1, default_missing_value = "true", default_value = "false", value_parser = BoolishValueParser::new())]
    pub leader_elect: bool,
    /// Namespace of the Lease (default in a cluster: the pod's namespace; required outside one).
    #[arg(long)]
    pub leader_election_namespace: Option<String>,
    /// Name of the Lease.
    #[arg(long, default_value = crate::ops::leader::DEFAULT_LEASE_NAME)]
    pub leader_election_id: String,
    /// Reconcile every object again this often, whatever the watches say (±10 %): `600s`,
    /// `10m`, `1h`. A safety net that costs no write on a converged cluster.
    #[arg(long, default_value = "10m", value_parser = parse_sync_period)]
    pub sync_period: Duration,
    /// How long a shutdown (SIGTERM, Ctrl-C) waits for the reconciles in flight before it stops
    /// them half-way; keep it below the pod's terminationGracePeriodSeconds. A second Ctrl-C
    /// stops at once.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub shutdown_timeout: Duration,
    /// How long a request to the API server may wait for its next byte before it fails and is
    /// retried (watches are ended by the server before this; at least 2s).
    #[arg(long, default_value = "30s", value_parser = parse_read_timeout)]
    pub api_read_timeout: Duration,
    /// How long to wait for an unreachable API server at startup (a control-plane restart,
    /// a minikube still starting) before giving up with an error; `0s` gives up at once.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub startup_timeout: Duration,
    /// Log lines as text or JSON.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Path to a kubeconfig (default: $KUBECONFIG, ~/.kube/config, or in-cluster).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
}

impl RunArgs {
    /// Where /metrics is served: the flag, else 127.0.0.1 on 8080 (plain) or 8443 (secure);
    /// `None` when turned off.
    pub fn metrics_address(&self) -> Option<std::net::SocketAddr> {
        match self.metrics_bind_address {
            Some(BindAddress(address)) => address,
            None if self.metrics_secure => {
                Some(([127, 0, 0, 1], serving::secure_metrics::SECURE_PORT).into())
            }
            None => Some(([127, 0, 0, 1], 8080).into()),
        }
    }

    /// The `--metrics-secure` set-up, if asked for.
    pub fn metrics_security(&self) -> Option<serving::secure_metrics::SecureMetrics> {
        self.metrics_secure
            .then(|| serving::secure_metrics::SecureMetrics {
                cert_dir: self.metrics_cert_path.clone(),
                cert_name: self.metrics_cert_name.clone(),
                key_name: self.metrics_cert_key.clone(),
                reader_role: Some(METRICS_READER_ROLE.to_string()),
                ..Default::default()
            })
    }
}

/// A duration as people write it on a command line: `500ms`, `10s`, `2m`, `1h`, or bare
/// seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("`{text}` is not a duration such as 500ms, 10s, 2m or 1h"))?;
    let too_long = || format!("`{text}` is too long");
    match unit {
        "ms" => Ok(Duration::from_millis(n)),
        "" | "s" => Ok(Duration::from_secs(n)),
        "m" => n
            .checked_mul(60)
            .map(Duration::from_secs)
            .ok_or_else(too_long),
        "h" => n
            .checked_mul(3600)
            .map(Duration::from_secs)
            .ok_or_else(too_long),
        _ => Err(format!(
            "`{text}`: unknown unit `{unit}` (use ms, s, m or h)"
        )),
    }
}

/// `--enable-http2`: a boolean as Go's flags write it, and false.
fn parse_enable_http2(text: &str) -> Result<bool, String> {
    match text.to_ascii_lowercase().as_str() {
        "false" | "f" | "0" | "no" | "off" => Ok(false),
        "true" | "t" | "1" | "yes" | "on" => Err("HTTP/2 is not served: the metrics and probe \
                                                  servers speak HTTP/1.1 only (kubebuilder's \
                                                  default, --enable-http2=false)"
            .to_string()),
        _ => Err(format!("`{text}` is not true or false")),
    }
}

/// The resync period: a duration, and more than zero (zero would reconcile in a busy loop).
fn parse_sync_period(text: &str) -> Result<Duration, String> {
    let period = parse_duration(text)?;
    if period.is_zero() {
        return Err(format!(
            "`{text}` is not a positive duration like 90s, 10m or 1h"
        ));
    }
    Ok(period)
}

/// The read timeout: at least 2 s, so that a watch can be ended by the server before it.
fn parse_read_timeout(text: &str) -> Result<Duration, String> {
    let timeout = parse_duration(text)?;
    if timeout < Duration::from_secs(2) {
        return Err(format!(
            "`{text}` is too short: a watch needs at least 1 s before the read timeout"
        ));
    }
    Ok(timeout)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn durations_parse_as_written() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("7"), Ok(Duration::from_secs(7)));
        assert_eq!(parse_duration("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        for bad in ["", "s", "m", "10d", "-1s", "1.5m"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert!(parse_sync_period("0").is_err());
        assert_eq!(parse_sync_period("10m"), Ok(Duration::from_secs(600)));
    }

    #[test]
    fn the_default_shutdown_timeout_is_the_managers() {
        let cli = Cli::try_parse_from(["math-controller"]).unwrap();
        assert_eq!(
            cli.run.shutdown_timeout,
            crate::ops::manager::DEFAULT_SHUTDOWN_TIMEOUT
        );
        assert_eq!(
            cli.run.api_read_timeout,
            crate::ops::client::DEFAULT_READ_TIMEOUT
        );
        assert!(Cli::try_parse_from(["math-controller", "--api-read-timeout=1s"]).is_err());
    }

    fn run(args: &[&str]) -> RunArgs {
        Cli::try_parse_from(std::iter::once("math-controller").chain(args.iter().copied()))
            .unwrap()
            .run
    }

    #[test]
    fn metrics_default_to_plain_http_on_loopback_8080_and_secure_to_8443() {
        let plain = run(&[]);
        assert_eq!(plain.metrics_address(), Some(([127, 0, 0, 1], 8080).into()));
        assert!(plain.metrics_security().is_none());
        let secure = run(&["--metrics-secure"]);
        assert_eq!(
            secure.metrics_address(),
            Some(([127, 0, 0, 1], 8443).into())
        );
        assert_eq!(secure.metrics_security().unwrap().cert_dir, None);
        let deployed = run(&[
            "--metrics-secure",
            "--metrics-bind-address=:8443",
            "--metrics-cert-path=/certs",
        ]);
        assert_eq!(
            deployed.metrics_address(),
            Some(([0, 0, 0, 0], 8443).into())
        );
        assert_eq!(
            deployed.metrics_security().unwrap().cert_dir,
            Some(PathBuf::from("/certs"))
        );
        assert_eq!(run(&["--metrics-bind-address=0"]).metrics_address(), None);
        assert!(
            Cli::try_parse_from(["math-controller", "--metrics-cert-dir=/certs"]).is_err(),
            "a certificate directory without --metrics-secure is a mistake"
        );
    }

    /// kubebuilder's flags as its scaffolded `cmd/main.go` declares them, booleans written Go's
    /// way too; ours stay as aliases.
    #[test]
    fn kubebuilders_flag_names_are_accepted() {
        let kubebuilder = run(&[
            "--metrics-bind-address=:8443",
            "--health-probe-bind-address=:8081",
            "--leader-elect=true",
            "--leader-election-namespace=math-system",
            "--metrics-secure=true",
            "--metrics-cert-path=/tmp/k8s-metrics-server/metrics-certs",
            "--metrics-cert-name=server.crt",
            "--metrics-cert-key=server.key",
            "--enable-http2=false",
        ]);
        assert!(kubebuilder.leader_elect);
        let secure = kubebuilder.metrics_security().unwrap();
        let dir = PathBuf::from("/tmp/k8s-metrics-server/metrics-certs");
        assert_eq!(secure.cert_dir, Some(dir));
        assert_eq!(
            (secure.cert_name.as_str(), secure.key_name.as_str()),
            ("server.crt", "server.key")
        );
        assert_eq!(
            kubebuilder.health_probe_bind_address.0,
            Some(([0, 0, 0, 0], 8081).into())
        );
        let plain = run(&["--metrics-secure=false", "--leader-elect=false"]);
        assert!(plain.metrics_security().is_none() && !plain.leader_elect);
        let defaults = run(&["--metrics-secure"]).metrics_security().unwrap();
        assert_eq!(
            (defaults.cert_name.as_str(), defaults.key_name.as_str()),
            ("tls.crt", "tls.key")
        );
        let ours = run(&["--metrics-secure", "--metrics-cert-dir=/certs"]);
        assert_eq!(ours.metrics_cert_path, Some(PathBuf::from("/certs")));
        let http2 = Cli::try_parse_from(["math-controller", "--enable-http2"]).unwrap_err();
        assert!(
            http2.to_string().contains("HTTP/2 is not served"),
            "{http2}"
        );
    }
}
