//! Failures of leader election.

use std::time::Duration;

/// Failures of leader election.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The configuration cannot work (for example a renew deadline longer than the lease).
    #[error("invalid leader election configuration: {0}")]
    Config(String),
    /// Outside a cluster the Lease's namespace must be given.
    #[error(
        "--leader-elect outside a cluster needs --leader-election-namespace: the namespace of the Lease all replicas share (the Deployment's is math-system)"
    )]
    NamespaceRequired,
    /// The API server refused or failed a request on the Lease.
    #[error("lease {namespace}/{name}: {source}")]
    Api {
        /// The Lease's namespace.
        namespace: String,
        /// The Lease's name.
        name: String,
        /// What the client reported.
        #[source]
        source: kube::Error,
    },
    /// Releasing did not finish within the renew deadline.
    #[error("lease {namespace}/{name}: no answer within {timeout:?}")]
    Timeout {
        /// The Lease's namespace.
        namespace: String,
        /// The Lease's name.
        name: String,
        /// How long we waited.
        timeout: Duration,
    },
}
