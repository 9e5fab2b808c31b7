//! client-go's request counter as controller-runtime v0.24 registers it
//! (`pkg/metrics/client_go_adapter.go`): `rest_client_requests_total{code,method,host}`,
//! every request of the manager's client by its answer's status code, the HTTP method and the
//! API server's host. The first thing one looks at when a controller misbehaves against the API
//! server: a rise of 409s, 429s or 5xx, by verb.
//!
//! client-go counts each try, inside its retry loop, with the code `<error>` when no answer
//! came (a refused connection, a timeout); so does the layer that feeds this
//! (`crate::ops::client`), which sits below the client's retry. The labels stay bounded:
//! codes and methods are few, and the host is the one API server.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

use super::help;

const REQUESTS: (&str, &str) = (
    "rest_client_requests",
    "Number of HTTP requests, partitioned by status code, method, and host.",
);

/// The code of a try that got no answer, as client-go writes it.
pub const NO_ANSWER: &str = "<error>";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
/// In client_golang's order (it sorts label names).
struct RequestLabels {
    code: String,
    host: String,
    method: String,
}

pub(super) struct RestClientSeries {
    requests: Family<RequestLabels, Counter>,
}

impl RestClientSeries {
    pub fn register(registry: &mut Registry) -> Self {
        let s = RestClientSeries {
            requests: Family::default(),
        };
        help::register(registry, REQUESTS, s.requests.clone());
        s
    }

    pub fn request(&self, code: &str, method: &str, host: &str) {
        let labels = RequestLabels {
            code: code.to_string(),
            host: host.to_string(),
            method: method.to_string(),
        };
        self.requests.get_or_create(&labels).inc();
    }
}
