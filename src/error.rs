//! The errors a reconcile can end with.
//!
//! Every variant names what was being done to which object, so that a log line or a
//! condition message is enough to understand it without a backtrace.

/// Why a reconcile failed. The error policy backs off exponentially on all of them except
/// [`Error::is_conflict`], which is the normal outcome of two writers racing and is retried
/// at once and quietly.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API server refused or failed a request.
    #[error("{action} {kind} {namespace}/{name}: {source}")]
    Kube {
        action: &'static str,
        kind: &'static str,
        namespace: String,
        name: String,
        #[source]
        source: Box<kube::Error>,
    },
    /// An object came from the cache without a field the API server always sets.
    #[error("{kind} has no {field}; is it an object from the API server?")]
    MissingField {
        kind: &'static str,
        field: &'static str,
    },
    /// A reconcile asked for the cache of a kind the manager did not wire in (a bug of the
    /// wiring in `ops/manager.rs`, not of the cluster).
    #[error("no cache of {kind}s is wired in")]
    NotWired { kind: &'static str },
    /// A value could not be turned into JSON for a patch (a bug, not bad input).
    #[error("serializing a patch: {0}")]
    Serialize(#[from] serde_json::Error),
    /// A write to a child failed, and the status write after it failed too: both told, the
    /// child's first (why the children lag), then the status's (why the status is stale).
    #[error("{child}; and {status}")]
    AndStatus {
        child: Box<Error>,
        status: Box<Error>,
    },
}

impl Error {
    /// `child`'s failure, and the status write's after it: one error that tells both.
    pub fn and_status(child: Error, status: Error) -> Error {
        Error::AndStatus {
            child: Box::new(child),
            status: Box::new(status),
        }
    }

    /// The HTTP status the API server answered with, if it answered.
    pub fn status_code(&self) -> Option<u16> {
        match self {
            Error::Kube { source, .. } => match source.as_ref() {
                kube::Error::Api(status) => Some(status.code),
                _ => None,
            },
            _ => None,
        }
    }

    /// 409: somebody else wrote first (or the cache was behind). Not a failure a learner
    /// should see: the next reconcile reads the newer state and tries again.
    pub fn is_conflict(&self) -> bool {
        match self {
            Error::AndStatus { child, status } => child.is_conflict() && status.is_conflict(),
            _ => self.status_code() == Some(409),
        }
    }

    /// The API server could not be reached (an outage): retried fast and reported once,
    /// by [`crate::cluster::outage::Outage`], rather than backed off and logged per object.
    pub fn is_unreachable(&self) -> bool {
        match self {
            Error::Kube { source, .. } => is_unreachable(source),
            Error::AndStatus { child, status } => child.is_unreachable() || status.is_unreachable(),
            _ => false,
        }
    }

    /// A short label for metrics and logs.
    pub fn kind_label(&self) -> &'static str {
        match self {
            Error::Kube { .. } if self.is_conflict() => "conflict",
            Error::Kube { .. } if self.status_code().is_some() => "api",
            Error::Kube { .. } => "transport",
            Error::MissingField { .. } => "invalid_object",
            Error::NotWired { .. } => "not_wired",
            Error::Serialize(_) => "serialize",
            // A conflict is retried quietly; the other failure is the one to count.
            Error::AndStatus { child, status } if child.is_conflict() => status.kind_label(),
            Error::AndStatus { child, .. } => child.kind_label(),
        }
    }
}

/// Whether an error means the API server could not be reached (refused, reset, a connect
/// that timed out), rather than an answer from it.
///
/// A watch stream that breaks while it is read (`ReadEvents`: one connection reset, a
/// proxy's idle timeout) is not such news: the watcher reconnects, and only if that fails
/// is the server away. Counting it made one reset an outage that put every reconcile off
/// until `GET /version` answered. Nor is one request whose answer took longer than the read
/// timeout ([`read_timed_out`]): the server answers every other request, and that one is
/// retried with its object's backoff. Counting it made one slow answer an outage too.
pub fn is_unreachable(error: &kube::Error) -> bool {
    matches!(error, kube::Error::HyperError(_) | kube::Error::Service(_)) && !read_timed_out(error)
}

/// Whether a request failed because no byte of its answer came within the read timeout, on
/// a connection that was open: a timed-out read inside hyper's connection, not a connect
/// that timed out (hyper-timeout reports both as `TimedOut`, the connect outside hyper).
pub fn read_timed_out(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut in_connection = false;
    let mut cause = Some(error);
    while let Some(error) = cause {
        in_connection |= error.is::<hyper::Error>();
        if in_connection
            && let Some(io) = error.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::TimedOut
        {
            return true;
        }
        cause = error.source();
    }
    false
}

/// What every reconcile returns.
pub type Result<T, E = Error> = std::result::Result<T, E>;
