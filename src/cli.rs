//! The command line, as a kubebuilder manager's flags would read.

use std::path::PathBuf;

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
    /// Log lines as text or JSON.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Path to a kubeconfig (default: $KUBECONFIG, ~/.kube/config, or in-cluster).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
}
