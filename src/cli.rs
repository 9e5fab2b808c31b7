//! The command line, as a kubebuilder manager's flags would read.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};

use crate::health::BindAddress;
use crate::telemetry::LogFormat;

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
    /// Print the three CustomResourceDefinitions as YAML (or write them into a directory).
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
    #[arg(long, default_value_t = 16)]
    pub concurrency: u16,
    /// Where /metrics is served; 0 turns it off.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub metrics_bind_address: BindAddress,
    /// Where /healthz and /readyz are served; 0 turns them off.
    #[arg(long, default_value = "127.0.0.1:8081")]
    pub health_probe_bind_address: BindAddress,
    /// Hold a coordination.k8s.io Lease so that only one replica reconciles.
    #[arg(long)]
    pub leader_elect: bool,
    /// Namespace of the Lease (default: the pod's namespace, else the kubeconfig's).
    #[arg(long)]
    pub leader_election_namespace: Option<String>,
    /// Name of the Lease.
    #[arg(long, default_value = crate::leader::DEFAULT_LEASE_NAME)]
    pub leader_election_id: String,
    /// Reconcile every object again this often, whatever the watches say (±10 %): `600s`,
    /// `10m`, `1h`. A safety net that costs no write on a converged cluster.
    #[arg(long, default_value = "10m", value_parser = parse_duration)]
    pub sync_period: Duration,
    /// Log lines as text or JSON.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Path to a kubeconfig (default: $KUBECONFIG, ~/.kube/config, or in-cluster).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
}

/// A duration as `90`, `90s`, `10m` or `1h` (whole units, more than zero).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let (digits, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => text.split_at(i),
        None => (text, "s"),
    };
    let count: u64 = digits
        .parse()
        .map_err(|_| format!("`{text}` is not a duration like 90s, 10m or 1h"))?;
    let seconds = match unit {
        "s" => Some(count),
        "m" => count.checked_mul(60),
        "h" => count.checked_mul(3600),
        _ => None,
    }
    .filter(|s| *s > 0)
    .ok_or_else(|| format!("`{text}` is not a positive duration like 90s, 10m or 1h"))?;
    Ok(Duration::from_secs(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_people_write_them() {
        assert_eq!(parse_duration("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        for bad in ["", "0", "m", "10d", "-1s", "1.5m"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
