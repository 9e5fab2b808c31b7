//! controller-runtime's certificate watcher series (`pkg/certwatcher/metrics/metrics.go` of
//! kubernetes-sigs/controller-runtime v0.24): every read of the metrics certificate's files
//! and the reads that failed. A kubebuilder manager registers them whether or not it serves a
//! certificate of files, so they are here from the start, at 0 until `--metrics-secure` reads
//! a `--metrics-cert-path` (the `serving` crate reads the files at start and then on a
//! handshake, at most once a second; a read that fails, or gives a pair that does not parse,
//! is an error and the previous certificate stays).

use prometheus_client::metrics::counter::Counter;
use prometheus_client::registry::Registry;

use super::help;

const READS: (&str, &str) = (
    "certwatcher_read_certificate",
    "Total number of certificate reads",
);
const ERRORS: (&str, &str) = (
    "certwatcher_read_certificate_errors",
    "Total number of certificate read errors",
);

/// The two counters; cheap to clone, handed to the metrics server's certificate.
#[derive(Clone, Debug, Default)]
pub struct CertificateReads {
    reads: Counter,
    errors: Counter,
}

impl CertificateReads {
    pub(super) fn register(registry: &mut Registry) -> Self {
        let s = CertificateReads::default();
        help::register(registry, READS, s.reads.clone());
        help::register(registry, ERRORS, s.errors.clone());
        s
    }

    /// The files were read once more; `ok` is whether they gave a certificate to serve.
    pub fn read(&self, ok: bool) {
        self.reads.inc();
        if !ok {
            self.errors.inc();
        }
    }
}
