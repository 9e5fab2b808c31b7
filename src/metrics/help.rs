//! Registering a family under its help text exactly as client_golang writes it.
//!
//! prometheus-client's `Registry::register` appends a full stop to every help text, so a
//! controller-runtime help that has none ("Total number of reconciliations per controller")
//! gained one, and one that ends in a full stop ("… from workqueue takes.") showed `..`. A
//! scraper that compares help texts, or a person reading them side by side with a kubebuilder
//! manager's, saw two dialects. A family registered through [`register`] is encoded by a
//! collector that writes the descriptor itself, so its help text is the one given, unchanged.

use std::fmt;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::registry::Registry;

/// A family and the name and help text it is exposed under.
struct AsWritten<M> {
    name: &'static str,
    help: &'static str,
    metric: M,
}

impl<M> fmt::Debug for AsWritten<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AsWritten")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl<M: EncodeMetric + Send + Sync + 'static> Collector for AsWritten<M> {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), fmt::Error> {
        let metric =
            encoder.encode_descriptor(self.name, self.help, None, self.metric.metric_type())?;
        self.metric.encode(metric)
    }
}

/// Registers `metric` as `name` (a counter without its `_total`, which the encoder adds) with
/// `help` exactly as given.
pub(super) fn register<M>(
    registry: &mut Registry,
    (name, help): (&'static str, &'static str),
    metric: M,
) where
    M: EncodeMetric + Send + Sync + 'static,
{
    registry.register_collector(Box::new(AsWritten { name, help, metric }));
}
