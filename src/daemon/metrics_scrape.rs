//! One scrape of the SM's metrics: its families as samples read at the scrape, and their text.
//! The leaf that `metrics` (the SM's figures) and `metrics_ports` (the performance manager's
//! per-port families) both fill.
//!
//! The model and the text are the official `prometheus-client` crate's (a [`Registry`] and its
//! Prometheus text encoder: names, `_total` on counters, HELP and TYPE lines, label escaping).
//! The figures live in the core and are read at each scrape, so each family here is a list of
//! samples taken then ([`Samples`], in the core's order), not a live counter that the SM would
//! have to update as it runs.

use std::fmt;

use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet, prometheus_text};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

/// A sample's labels: `(name, value)` pairs, in order.
pub(crate) type Labels = Vec<(&'static str, String)>;

/// One family's samples as read at a scrape, in the order they were read.
#[derive(Debug)]
enum Samples {
    /// A counter's samples.
    Counter(Vec<(Labels, u64)>),
    /// A gauge's samples, whole numbers.
    Gauge(Vec<(Labels, u64)>),
    /// A gauge's samples in seconds.
    Seconds(Vec<(Labels, f64)>),
}

impl EncodeMetric for Samples {
    fn encode(&self, mut encoder: MetricEncoder<'_>) -> fmt::Result {
        match self {
            Samples::Counter(samples) => {
                for (labels, v) in samples {
                    encoder.encode_family(labels)?.encode_counter::<NoLabelSet, _, u64>(v, None)?;
                }
            }
            Samples::Gauge(samples) => {
                for (labels, v) in samples {
                    encoder.encode_family(labels)?.encode_gauge(v)?;
                }
            }
            Samples::Seconds(samples) => {
                for (labels, v) in samples {
                    encoder.encode_family(labels)?.encode_gauge(v)?;
                }
            }
        }
        Ok(())
    }

    fn metric_type(&self) -> MetricType {
        match self {
            Samples::Counter(_) => MetricType::Counter,
            Samples::Gauge(_) | Samples::Seconds(_) => MetricType::Gauge,
        }
    }
}

/// The families of one scrape. Names are given without the `ibsm_` prefix and, for counters,
/// without `_total` (the encoder adds both); help without its final full stop (the registry
/// adds it).
pub(crate) struct Scrape(Registry);

impl Scrape {
    /// An empty scrape.
    pub(crate) fn new() -> Scrape {
        Scrape(Registry::with_prefix("ibsm"))
    }

    /// The families in Prometheus text format, in the order they were added.
    pub(crate) fn finish(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_text::encode(&mut out, &self.0);
        out
    }

    pub(crate) fn counter(&mut self, name: &str, help: &str, samples: Vec<(Labels, u64)>) {
        self.0.register(name, help, Samples::Counter(samples));
    }
    pub(crate) fn gauge(&mut self, name: &str, help: &str, samples: Vec<(Labels, u64)>) {
        self.0.register(name, help, Samples::Gauge(samples));
    }
    pub(crate) fn seconds(&mut self, name: &str, help: &str, samples: Vec<(Labels, f64)>) {
        self.0.register(name, help, Samples::Seconds(samples));
    }
}
