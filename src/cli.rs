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
    /// Where /metrics is served; 0 turns it off [default: 127.0.0.1:8080, or 127.0.0.1:8443
    /// with --metrics-secure].
    #[arg(long)]
    pub metrics_bind_address: Option<BindAddress>,
    /// Serve /metrics over HTTPS, only to bearer tokens the cluster allows to get /metrics
    /// (TokenReview and SubjectAccessReview), as a kubebuilder v4 manager does.
    #[arg(long)]
    pub metrics_secure: bool,
    /// Directory with tls.crt and tls.key for --metrics-secure, re-read when they change
    /// (default: a self-signed certificate generated at start).
    #[arg(long, requires = "metrics_secure")]
    pub metrics_cert_dir: Option<PathBuf>,
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

impl RunArgs {
    /// Where /metrics is served: the flag, else 127.0.0.1 on 8080 (plain) or 8443 (secure);
    /// `None` when turned off.
    pub fn metrics_address(&self) -> Option<std::net::SocketAddr> {
        match self.metrics_bind_address {
            Some(BindAddress(address)) => address,
            None if self.metrics_secure => {
                Some(([127, 0, 0, 1], crate::metrics_auth::SECURE_PORT).into())
            }
            None => Some(([127, 0, 0, 1], 8080).into()),
        }
    }

    /// The `--metrics-secure` set-up, if asked for.
    pub fn metrics_security(&self) -> Option<crate::metrics_auth::SecureMetrics> {
        self.metrics_secure
            .then(|| crate::metrics_auth::SecureMetrics {
                cert_dir: self.metrics_cert_dir.clone(),
                ..Default::default()
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            "--metrics-cert-dir=/certs",
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
}
