//! One JSON object per log line (`--log-format json`), for log shippers: `ts` (RFC 3339, UTC,
//! microseconds), `level`, `target`, `message`, then the event's fields (`error_id` on every
//! warning and error; see the list in docs/operator-guide.md).
//!
//! Owns only the shape of the line; `tracing-subscriber` filters, writes and tells the time
//! (its `SystemTime` timer: RFC 3339, UTC, microseconds).
//!
//! Why not `tracing-subscriber`'s own JSON format (feature `json`, which would add only
//! `tracing-serde`)? Its keys are fixed: the time is `timestamp`, not the `ts` that the docs
//! promise and shippers' parsers are set up for, and the event's fields go under `fields`
//! unless flattened. Renaming a documented key would break every site's log pipeline for a
//! saving of some thirty lines, so the line is built here.

use std::fmt;

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// The JSON-lines event format.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonLines;

/// Collects an event's fields as JSON values.
struct Fields(Map<String, Value>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name().to_owned(), Value::String(format!("{value:?}")));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), Value::String(value.to_owned()));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().to_owned(), Value::from(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_owned(), Value::from(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().to_owned(), Value::from(value));
    }
}

impl<S, N> FormatEvent<S, N> for JsonLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(&self, _ctx: &FmtContext<'_, S, N>, mut writer: Writer<'_>, event: &Event<'_>) -> fmt::Result {
        let mut ts = String::new();
        SystemTime.format_time(&mut Writer::new(&mut ts))?;
        let meta = event.metadata();
        let mut fields = Fields(Map::new());
        event.record(&mut fields);
        let mut line = Map::new();
        line.insert("ts".to_owned(), Value::String(ts));
        line.insert("level".to_owned(), Value::String(meta.level().to_string()));
        line.insert("target".to_owned(), Value::String(meta.target().to_owned()));
        if let Some(m) = fields.0.remove("message") {
            line.insert("message".to_owned(), m);
        }
        line.extend(fields.0);
        writeln!(writer, "{}", Value::Object(line))
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::{Arc, Mutex};

    use super::*;

    /// A writer the subscriber writes its lines into.
    #[derive(Clone, Default)]
    struct Lines(Arc<Mutex<Vec<u8>>>);

    impl Write for Lines {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().map_err(|_| std::io::Error::other("poisoned"))?.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn now() -> String {
        let mut s = String::new();
        SystemTime.format_time(&mut Writer::new(&mut s)).expect("formats");
        s
    }

    #[test]
    fn a_line_holds_the_promised_keys_and_an_rfc3339_utc_time() {
        let out = Lines::default();
        let sink = out.clone();
        let subscriber = tracing_subscriber::fmt().event_format(JsonLines).with_writer(move || sink.clone()).finish();
        let before = now();
        tracing::subscriber::with_default(subscriber, || {
            tracing::warn!(error_id = "engine-declined", count = 3u64, ok = true, "a \"quoted\" message");
        });
        let after = now();
        let text = String::from_utf8(out.0.lock().expect("lock").clone()).expect("utf-8");
        let v: Value = serde_json::from_str(text.trim_end()).expect("one JSON object");
        assert_eq!(v["level"], "WARN", "{text}");
        assert_eq!(v["target"], module_path!(), "{text}");
        assert_eq!(v["message"], "a \"quoted\" message", "{text}");
        assert_eq!(v["error_id"], "engine-declined", "{text}");
        assert_eq!(v["count"], 3, "{text}");
        assert_eq!(v["ok"], true, "{text}");
        // `2026-11-26T09:30:00.123456Z`: fixed width, so it sorts as it reads.
        let ts = v["ts"].as_str().expect("ts is a string");
        let shape: String = ts.chars().map(|c| if c.is_ascii_digit() { '9' } else { c }).collect();
        assert_eq!(shape, "9999-99-99T99:99:99.999999Z", "{ts}");
        assert!(before.as_str() <= ts && ts <= after.as_str(), "{before} <= {ts} <= {after}");
        assert_eq!(text.lines().count(), 1, "{text}");
    }
}
