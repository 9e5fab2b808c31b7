//! The two text formats `/metrics` speaks, chosen from the scraper's `Accept` header as
//! client_golang's `promhttp` chooses (`expfmt.NegotiateIncludingOpenMetrics`): OpenMetrics 1.0
//! when it is the acceptable format of highest quality, else the Prometheus text format 0.0.4,
//! which is also the answer to a request without `Accept` (curl) and to `*/*`.
//!
//! controller-runtime v0.24 builds its handler without `EnableOpenMetrics`, so it answers text
//! 0.0.4 even to an OpenMetrics request; we answer OpenMetrics then, as promhttp does with that
//! option on. Either way Prometheus stores the same series: the names, labels and values of the
//! two formats are the same, only the comment lines differ. The protobuf format, the third one
//! promhttp knows, is not served: a scraper that asks for it and accepts text gets text.
//!
//! `prometheus-client` writes OpenMetrics only; [`to_prometheus_text`] rewrites its comment
//! lines into the older format (a pure function, tested below). What is served comes from the
//! caller as an [`Encoder`]: this crate keeps no registry and names no series.

use std::fmt;
use std::sync::Arc;

/// What `/metrics` serves: the OpenMetrics text of every series, encoded at each scrape (a
/// manager's registry, e.g. `prometheus_client::encoding::text::encode`). The Prometheus text
/// format is derived from it.
#[derive(Clone)]
pub struct Encoder(Arc<dyn Fn() -> String + Send + Sync>);

impl Encoder {
    /// `encode` is called once per scrape and returns OpenMetrics text (ending in `# EOF`).
    pub fn new(encode: impl Fn() -> String + Send + Sync + 'static) -> Self {
        Encoder(Arc::new(encode))
    }

    /// Every series, now, in `format`.
    pub fn encode_as(&self, format: Format) -> String {
        let openmetrics = (self.0)();
        match format {
            Format::OpenMetrics => openmetrics,
            Format::PrometheusText => to_prometheus_text(&openmetrics),
        }
    }
}

impl fmt::Debug for Encoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Encoder")
    }
}

/// The content type of an OpenMetrics 1.0 answer.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The content type of a Prometheus text format answer, as promhttp writes it.
pub const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A text format of the metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// OpenMetrics 1.0 (`application/openmetrics-text`).
    OpenMetrics,
    /// The Prometheus text format 0.0.4 (`text/plain`).
    PrometheusText,
}

impl Format {
    /// The `Content-Type` of an answer in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => OPENMETRICS,
            Format::PrometheusText => PROMETHEUS_TEXT,
        }
    }
}

/// One media range of an `Accept` header: its type, its `version` parameter, its quality.
struct Range<'a> {
    media: String,
    version: Option<&'a str>,
    quality: f64,
}

fn parse_range(range: &str) -> Option<Range<'_>> {
    let mut parts = range.split(';').map(str::trim);
    let media = parts.next().filter(|m| !m.is_empty())?.to_ascii_lowercase();
    let (mut version, mut quality) = (None, 1.0);
    for param in parts {
        let Some((key, value)) = param.split_once('=') else {
            continue;
        };
        let value = value.trim().trim_matches('"');
        match key.trim().to_ascii_lowercase().as_str() {
            "version" => version = Some(value),
            "q" => quality = value.parse().unwrap_or(0.0),
            _ => {}
        }
    }
    Some(Range {
        media,
        version,
        quality,
    })
}

/// The format for a request's `Accept` header (`None`: no header). The ranges are tried by
/// quality, the first of equal quality first; the first one we can serve wins, else text.
pub fn negotiate(accept: Option<&str>) -> Format {
    let mut ranges: Vec<Range<'_>> = accept
        .unwrap_or_default()
        .split(',')
        .filter_map(parse_range)
        .filter(|r| r.quality > 0.0)
        .collect();
    // A stable sort: among equal qualities the header's order stands.
    ranges.sort_by(|a, b| b.quality.total_cmp(&a.quality));
    for range in ranges {
        match (range.media.as_str(), range.version) {
            ("application/openmetrics-text", None | Some("1.0.0") | Some("0.0.1")) => {
                return Format::OpenMetrics;
            }
            ("text/plain", None | Some("0.0.4")) => return Format::PrometheusText,
            _ => {}
        }
    }
    Format::PrometheusText
}

/// The Prometheus text format 0.0.4 of an OpenMetrics exposition: a counter family is named
/// by its sample (`x_total`), an info family becomes the gauge `x_info`, `# UNIT` and `# EOF`
/// lines go (the older format has neither). Samples pass unchanged.
pub fn to_prometheus_text(openmetrics: &str) -> String {
    let mut out = String::with_capacity(openmetrics.len());
    // Each family's HELP comes before its TYPE: both are renamed by the TYPE, so a family's
    // comment lines are held until its TYPE line is read.
    let mut help: Option<(&str, &str)> = None;
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# HELP ") {
            help = rest.split_once(' ').or(Some((rest, "")));
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, "unknown"));
            let (name, kind) = match kind {
                "counter" => (format!("{name}_total"), "counter"),
                "info" => (format!("{name}_info"), "gauge"),
                "gauge" | "histogram" | "summary" => (name.to_string(), kind),
                _ => (name.to_string(), "untyped"),
            };
            if let Some((_, text)) = help.take() {
                out.push_str(&format!("# HELP {name} {text}\n"));
            }
            out.push_str(&format!("# TYPE {name} {kind}\n"));
            continue;
        }
        if let Some((name, text)) = help.take() {
            // A HELP without a TYPE: kept as it was.
            out.push_str(&format!("# HELP {name} {text}\n"));
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What Prometheus 2.x/3.x sends by default: OpenMetrics first.
    const PROMETHEUS_SCRAPE: &str = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

    #[test]
    fn the_format_follows_the_accept_header_as_promhttp_negotiates() {
        assert_eq!(negotiate(Some(PROMETHEUS_SCRAPE)), Format::OpenMetrics);
        assert_eq!(negotiate(None), Format::PrometheusText);
        assert_eq!(negotiate(Some("*/*")), Format::PrometheusText);
        assert_eq!(negotiate(Some("text/plain")), Format::PrometheusText);
        assert_eq!(
            negotiate(Some("application/openmetrics-text")),
            Format::OpenMetrics
        );
        // Quality decides, not order.
        assert_eq!(
            negotiate(Some(
                "text/plain;version=0.0.4;q=0.9,application/openmetrics-text;version=1.0.0"
            )),
            Format::OpenMetrics
        );
        assert_eq!(
            negotiate(Some(
                "application/openmetrics-text;q=0.2,text/plain;version=0.0.4;q=0.5"
            )),
            Format::PrometheusText
        );
        // A version we do not speak, protobuf, and q=0 are passed over.
        assert_eq!(
            negotiate(Some("application/openmetrics-text;version=2.0.0")),
            Format::PrometheusText
        );
        assert_eq!(
            negotiate(Some(
                "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited,application/openmetrics-text;q=0.3"
            )),
            Format::OpenMetrics
        );
        assert_eq!(
            negotiate(Some("application/openmetrics-text;q=0")),
            Format::PrometheusText
        );
    }

    #[test]
    fn openmetrics_comments_become_the_prometheus_text_format() {
        let om = "# HELP a_reconcile Reconciles.\n# TYPE a_reconcile counter\n\
                  a_reconcile_total{controller=\"x\"} 3\n\
                  # HELP b_seconds Waits.\n# TYPE b_seconds histogram\n# UNIT b_seconds seconds\n\
                  b_seconds_bucket{le=\"+Inf\"} 1\nb_seconds_sum 0.5\nb_seconds_count 1\n\
                  # HELP build Version.\n# TYPE build info\nbuild_info{version=\"1\"} 1\n\
                  # HELP up Up.\n# TYPE up gauge\nup 1\n# EOF\n";
        assert_eq!(
            to_prometheus_text(om),
            "# HELP a_reconcile_total Reconciles.\n# TYPE a_reconcile_total counter\n\
             a_reconcile_total{controller=\"x\"} 3\n\
             # HELP b_seconds Waits.\n# TYPE b_seconds histogram\n\
             b_seconds_bucket{le=\"+Inf\"} 1\nb_seconds_sum 0.5\nb_seconds_count 1\n\
             # HELP build_info Version.\n# TYPE build_info gauge\nbuild_info{version=\"1\"} 1\n\
             # HELP up Up.\n# TYPE up gauge\nup 1\n"
        );
    }
}
