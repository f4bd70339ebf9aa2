//! The Prometheus text exposition format (what an API server's `/metrics`
//! returns), parsed into samples, and the histogram arithmetic that
//! ClusterLoader2's PromQL queries do: the increase of a histogram between
//! two scrapes and `histogram_quantile`.
//!
//! The text comes from whatever cluster the runner points at, so the parser
//! reports malformed input as an error with its line number and never
//! panics.

use std::collections::BTreeMap;
use std::fmt::Write;

pub type Labels = BTreeMap<String, String>;

#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: Labels,
    pub value: f64,
    /// Milliseconds since the Unix epoch, when the line carries one.
    pub timestamp_ms: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricType {
    Counter,
    Gauge,
    Histogram,
    Summary,
    Untyped,
}

/// One scrape.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Exposition {
    pub samples: Vec<Sample>,
    /// `# TYPE` lines by family name.
    pub types: BTreeMap<String, MetricType>,
    /// `# HELP` lines by family name, unescaped.
    pub help: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct ParseError {
    /// 1-based.
    pub line: usize,
    pub message: String,
}

pub fn parse(text: &str) -> Result<Exposition, ParseError> {
    let mut out = Exposition::default();
    for (i, raw) in text.split('\n').enumerate() {
        // Tolerate CRLF line ends; a lone CR inside a label value stays.
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let err = |message: String| ParseError {
            line: i + 1,
            message,
        };
        let mut c = Cursor { s: line, pos: 0 };
        c.blanks();
        if c.at_end() {
            continue;
        }
        if c.peek() == Some('#') {
            c.pos += 1;
            comment(&mut c, &mut out).map_err(err)?;
        } else {
            out.samples.push(sample(&mut c).map_err(err)?);
        }
    }
    Ok(out)
}

struct Cursor<'a> {
    s: &'a str,
    pos: usize,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<char> {
        self.s[self.pos..].chars().next()
    }
    fn at_end(&self) -> bool {
        self.pos >= self.s.len()
    }
    fn blanks(&mut self) -> usize {
        let start = self.pos;
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.pos += 1;
        }
        self.pos - start
    }
    /// A run of characters up to the next blank.
    fn token(&mut self) -> &str {
        let start = self.pos;
        while let Some(ch) = self.peek() {
            if ch == ' ' || ch == '\t' {
                break;
            }
            self.pos += ch.len_utf8();
        }
        &self.s[start..self.pos]
    }
    /// `[a-zA-Z_:][a-zA-Z0-9_:]*` for metric names, without `:` for labels.
    fn name(&mut self, colon: bool) -> Result<&str, String> {
        let start = self.pos;
        while let Some(ch) = self.peek() {
            let ok = ch.is_ascii_alphabetic()
                || ch == '_'
                || (colon && ch == ':')
                || (self.pos > start && ch.is_ascii_digit());
            if !ok {
                break;
            }
            self.pos += 1;
        }
        if self.pos == start {
            let what = if colon { "metric" } else { "label" };
            return Err(format!("expected a {what} name at column {}", start + 1));
        }
        Ok(&self.s[start..self.pos])
    }
    fn expect(&mut self, ch: char) -> Result<(), String> {
        if self.peek() == Some(ch) {
            self.pos += 1;
            Ok(())
        } else {
            Err(format!("expected {ch:?} at column {}", self.pos + 1))
        }
    }
}

fn comment(c: &mut Cursor, out: &mut Exposition) -> Result<(), String> {
    c.blanks();
    let keyword = c.token();
    if keyword != "HELP" && keyword != "TYPE" {
        return Ok(()); // an ordinary comment
    }
    let keyword = keyword.to_string();
    if c.blanks() == 0 {
        return Err(format!("expected a metric name after # {keyword}"));
    }
    let name = c.name(true)?.to_string();
    if keyword == "HELP" {
        if out.help.contains_key(&name) {
            return Err(format!("second HELP line for {name}"));
        }
        // One blank separates the name from the text; the rest is the text.
        if matches!(c.peek(), Some(' ' | '\t')) {
            c.pos += 1;
        } else if !c.at_end() {
            return Err(format!("expected a blank after {name}"));
        }
        out.help.insert(name, unescape_help(&c.s[c.pos..]));
        return Ok(());
    }
    c.blanks();
    let t = match c.token() {
        "counter" => MetricType::Counter,
        "gauge" => MetricType::Gauge,
        "histogram" => MetricType::Histogram,
        "summary" => MetricType::Summary,
        "untyped" => MetricType::Untyped,
        other => return Err(format!("unknown metric type {other:?} for {name}")),
    };
    c.blanks();
    if !c.at_end() {
        return Err(format!("unexpected text after the type of {name}"));
    }
    if out.types.insert(name.clone(), t).is_some() {
        return Err(format!("second TYPE line for {name}"));
    }
    Ok(())
}

/// HELP text escapes only `\\` and `\n`; any other backslash is literal.
fn unescape_help(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(ch) = chars.next() {
        if ch == '\\' {
            match chars.peek() {
                Some('\\') => {
                    out.push('\\');
                    chars.next();
                }
                Some('n') => {
                    out.push('\n');
                    chars.next();
                }
                _ => out.push('\\'),
            }
        } else {
            out.push(ch);
        }
    }
    out
}

fn sample(c: &mut Cursor) -> Result<Sample, String> {
    let name = c.name(true)?.to_string();
    let mut labels = Labels::new();
    let mut blank = c.blanks() > 0;
    if c.peek() == Some('{') {
        c.pos += 1;
        label_set(c, &mut labels)?;
        // The closing brace ends the name as well as a blank would.
        blank = true;
    }
    c.blanks();
    if !blank && !c.at_end() {
        return Err(format!(
            "expected a blank before the value at column {}",
            c.pos + 1
        ));
    }
    let v = c.token();
    if v.is_empty() {
        return Err(format!("{name} has no value"));
    }
    let value = parse_value(v).ok_or_else(|| format!("{v:?} is not a number"))?;
    c.blanks();
    let mut timestamp_ms = None;
    if !c.at_end() {
        let t = c.token();
        timestamp_ms = Some(
            t.parse::<i64>()
                .map_err(|_| format!("{t:?} is not a timestamp"))?,
        );
        c.blanks();
        if !c.at_end() {
            return Err(format!("unexpected text at column {}", c.pos + 1));
        }
    }
    Ok(Sample {
        name,
        labels,
        value,
        timestamp_ms,
    })
}

/// After `{`: `name="value"` pairs separated by commas (a trailing comma
/// allowed), through the closing `}`.
fn label_set(c: &mut Cursor, labels: &mut Labels) -> Result<(), String> {
    loop {
        c.blanks();
        if c.peek() == Some('}') {
            c.pos += 1;
            return Ok(());
        }
        let name = c.name(false)?.to_string();
        c.blanks();
        c.expect('=')?;
        c.blanks();
        c.expect('"')?;
        let value = label_value(c)?;
        if labels.insert(name.clone(), value).is_some() {
            return Err(format!("label {name} repeated"));
        }
        c.blanks();
        match c.peek() {
            Some(',') => c.pos += 1,
            Some('}') => {}
            _ => return Err(format!("expected ',' or '}}' at column {}", c.pos + 1)),
        }
    }
}

/// After the opening quote, through the closing one: `\\`, `\"` and `\n`
/// are the only escapes.
fn label_value(c: &mut Cursor) -> Result<String, String> {
    let mut out = String::new();
    loop {
        let Some(ch) = c.peek() else {
            return Err("unterminated label value".into());
        };
        c.pos += ch.len_utf8();
        match ch {
            '"' => return Ok(out),
            '\\' => {
                let esc = c.peek().ok_or("unterminated label value")?;
                c.pos += esc.len_utf8();
                match esc {
                    '\\' => out.push('\\'),
                    '"' => out.push('"'),
                    'n' => out.push('\n'),
                    other => return Err(format!("invalid escape \\{other} in a label value")),
                }
            }
            _ => out.push(ch),
        }
    }
}

/// A sample value: a float, `+Inf`/`-Inf` or `NaN` (any case, as Go's
/// ParseFloat takes them).
pub fn parse_value(s: &str) -> Option<f64> {
    // Rust also reads "infinity" and "nan" case-insensitively, as Go does;
    // only the digit forms need no special care.
    s.parse::<f64>().ok()
}

/// A value the parser reads back to the same number.
pub fn format_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v == f64::INFINITY {
        "+Inf".into()
    } else if v == f64::NEG_INFINITY {
        "-Inf".into()
    } else if v != 0.0 && (v.abs() >= 1e21 || v.abs() < 1e-7) {
        // Plain notation would spell out hundreds of zeros.
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// One sample line in the text format, without the line end.
pub fn render_sample(s: &Sample) -> String {
    let mut out = s.name.clone();
    if !s.labels.is_empty() {
        out.push('{');
        for (i, (k, v)) in s.labels.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(out, "{k}=\"");
            for ch in v.chars() {
                match ch {
                    '\\' => out.push_str("\\\\"),
                    '"' => out.push_str("\\\""),
                    '\n' => out.push_str("\\n"),
                    _ => out.push(ch),
                }
            }
            out.push('"');
        }
        out.push('}');
    }
    out.push(' ');
    out.push_str(&format_value(s.value));
    if let Some(t) = s.timestamp_ms {
        let _ = write!(out, " {t}");
    }
    out
}

/// One upper bound of a histogram and the observations at or below it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bucket {
    pub le: f64,
    pub count: f64,
}

/// One series of a histogram family: cumulative buckets sorted by bound
/// (`+Inf` last when present), `_count` and `_sum`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Histogram {
    pub buckets: Vec<Bucket>,
    pub count: f64,
    pub sum: f64,
}

impl Exposition {
    /// Whether the scrape declares or carries the family at all.
    pub fn has_family(&self, family: &str) -> bool {
        self.types.contains_key(family)
            || self.samples.iter().any(|s| {
                s.name
                    .strip_prefix(family)
                    .is_some_and(|rest| matches!(rest, "" | "_bucket" | "_count" | "_sum"))
            })
    }

    /// The histograms of `family` by their labels (without `le`).
    pub fn histograms(&self, family: &str) -> BTreeMap<Labels, Histogram> {
        let mut out: BTreeMap<Labels, Histogram> = BTreeMap::new();
        let mut has_count: BTreeMap<Labels, bool> = BTreeMap::new();
        for s in &self.samples {
            let Some(suffix) = s.name.strip_prefix(family) else {
                continue;
            };
            match suffix {
                "_bucket" => {
                    let Some(le) = s.labels.get("le").and_then(|v| parse_value(v)) else {
                        continue; // a bucket without a readable bound says nothing
                    };
                    let mut key = s.labels.clone();
                    key.remove("le");
                    out.entry(key)
                        .or_default()
                        .buckets
                        .push(Bucket { le, count: s.value });
                }
                "_count" => {
                    out.entry(s.labels.clone()).or_default().count = s.value;
                    has_count.insert(s.labels.clone(), true);
                }
                "_sum" => out.entry(s.labels.clone()).or_default().sum = s.value,
                _ => {}
            }
        }
        for (key, h) in out.iter_mut() {
            h.buckets.retain(|b| !b.le.is_nan());
            h.buckets.sort_by(|a, b| a.le.total_cmp(&b.le));
            h.buckets.dedup_by(|later, kept| {
                let same = later.le == kept.le;
                if same {
                    kept.count = kept.count.max(later.count);
                }
                same
            });
            if !has_count.contains_key(key) {
                if let Some(inf) = h.buckets.last().filter(|b| b.le == f64::INFINITY) {
                    h.count = inf.count;
                }
            }
        }
        out
    }
}

impl Histogram {
    /// What was observed after `earlier` (a previous scrape of the same
    /// series): the whole of `self` when the series is new or its counters
    /// went down (the server restarted), as Prometheus's `increase` does.
    pub fn since(&self, earlier: Option<&Histogram>) -> Histogram {
        let Some(e) = earlier else {
            return self.clone();
        };
        let reset = self.count < e.count
            || self.buckets.iter().any(|b| {
                e.buckets
                    .iter()
                    .any(|eb| eb.le == b.le && b.count < eb.count)
            });
        if reset {
            return self.clone();
        }
        let buckets = self
            .buckets
            .iter()
            .map(|b| {
                let before = e
                    .buckets
                    .iter()
                    .find(|eb| eb.le == b.le)
                    .map_or(0.0, |eb| eb.count);
                Bucket {
                    le: b.le,
                    count: b.count - before,
                }
            })
            .collect();
        Histogram {
            buckets,
            count: self.count - e.count,
            sum: self.sum - e.sum,
        }
    }

    /// Adds `other` bucket by bucket, as `sum by (le)` does: equal bounds
    /// add up, a bound only one side has keeps that side's count.
    pub fn add(&mut self, other: &Histogram) {
        let mut merged: Vec<Bucket> =
            Vec::with_capacity(self.buckets.len().max(other.buckets.len()));
        let (mut i, mut j) = (0, 0);
        while i < self.buckets.len() || j < other.buckets.len() {
            let a = self.buckets.get(i);
            let b = other.buckets.get(j);
            match (a, b) {
                (Some(a), Some(b)) if a.le == b.le => {
                    merged.push(Bucket {
                        le: a.le,
                        count: a.count + b.count,
                    });
                    i += 1;
                    j += 1;
                }
                (Some(a), Some(b)) if a.le.total_cmp(&b.le).is_lt() => {
                    merged.push(*a);
                    i += 1;
                }
                (Some(_), Some(b)) | (None, Some(b)) => {
                    merged.push(*b);
                    j += 1;
                }
                (Some(a), None) => {
                    merged.push(*a);
                    i += 1;
                }
                (None, None) => break,
            }
        }
        self.buckets = merged;
        self.count += other.count;
        self.sum += other.sum;
    }

    pub fn quantile(&self, q: f64) -> f64 {
        histogram_quantile(q, &self.buckets)
    }

    /// Observations at or below `bound`: the bucket with that bound, else
    /// the nearest smaller one (a lower estimate), else none.
    pub fn count_at_or_below(&self, bound: f64) -> f64 {
        self.buckets
            .iter()
            .rev()
            .find(|b| b.le <= bound)
            .map_or(0.0, |b| b.count)
    }
}

/// Prometheus's `histogram_quantile` over cumulative buckets: linear
/// interpolation inside the bucket holding rank `q * total`, the first
/// bucket starting at 0 (or its bound when that is not positive), and the
/// `+Inf` bucket answering with the largest finite bound. NaN when there is
/// no `+Inf` bucket, fewer than two buckets or no observation.
pub fn histogram_quantile(q: f64, buckets: &[Bucket]) -> f64 {
    if q.is_nan() {
        return f64::NAN;
    }
    if q < 0.0 {
        return f64::NEG_INFINITY;
    }
    if q > 1.0 {
        return f64::INFINITY;
    }
    let mut b: Vec<Bucket> = buckets.iter().filter(|b| !b.le.is_nan()).copied().collect();
    b.sort_by(|x, y| x.le.total_cmp(&y.le));
    if b.last().is_none_or(|l| l.le != f64::INFINITY) {
        return f64::NAN;
    }
    // Equal bounds (e.g. "1" and "1.0" from different series) are one bucket.
    b.dedup_by(|later, kept| {
        let same = later.le == kept.le;
        if same {
            kept.count += later.count;
        }
        same
    });
    // Buckets scraped at slightly different moments may decrease; Prometheus
    // makes them monotonic before interpolating.
    let mut max = f64::NEG_INFINITY;
    for x in b.iter_mut() {
        if x.count < max {
            x.count = max;
        }
        max = x.count;
    }
    let n = b.len();
    if n < 2 {
        return f64::NAN;
    }
    let observations = b[n - 1].count;
    if observations == 0.0 || observations.is_nan() {
        return f64::NAN;
    }
    let mut rank = q * observations;
    let i = b[..n - 1]
        .iter()
        .position(|x| x.count >= rank)
        .unwrap_or(n - 1);
    if i == n - 1 {
        return b[n - 2].le;
    }
    if i == 0 && b[0].le <= 0.0 {
        return b[0].le;
    }
    let end = b[i].le;
    let mut count = b[i].count;
    let mut start = 0.0;
    if i > 0 {
        start = b[i - 1].le;
        count -= b[i - 1].count;
        rank -= b[i - 1].count;
    }
    start + (end - start) * (rank / count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const TEXT: &str = r#"# HELP req_seconds Latency with \\ and \n escapes.
# TYPE req_seconds histogram
req_seconds_bucket{verb="GET",le="0.1"} 10
req_seconds_bucket{verb="GET",le="0.5"} 50
req_seconds_bucket{verb="GET",le="1"} 90
req_seconds_bucket{verb="GET",le="+Inf"} 100
req_seconds_sum{verb="GET"} 42.5
req_seconds_count{verb="GET"} 100
# a plain comment
req_seconds_bucket{verb="LIST",le="1"} 3
req_seconds_bucket{verb="LIST",le="+Inf"} 4
odd{path="a\"b\\c\nd", empty=""} NaN 1700000000000
up +Inf
down -Inf
"#;

    #[test]
    fn parses_help_type_labels_and_special_values() {
        let e = parse(TEXT).expect("parses");
        assert_eq!(e.types.get("req_seconds"), Some(&MetricType::Histogram));
        assert_eq!(
            e.help.get("req_seconds").map(String::as_str),
            Some("Latency with \\ and \n escapes.")
        );
        assert_eq!(e.samples.len(), 11);
        let odd = &e.samples[8];
        assert_eq!(odd.name, "odd");
        assert_eq!(odd.labels["path"], "a\"b\\c\nd");
        assert_eq!(odd.labels["empty"], "");
        assert!(odd.value.is_nan());
        assert_eq!(odd.timestamp_ms, Some(1_700_000_000_000));
        assert_eq!(e.samples[9].value, f64::INFINITY);
        assert_eq!(e.samples[10].value, f64::NEG_INFINITY);
    }

    #[test]
    fn malformed_lines_name_their_line() {
        let cases = [
            ("ok 1\nbad{a=\"x} 1", 2, "unterminated"),
            ("m{a=\"\\q\"} 1", 1, "invalid escape"),
            ("m{a=\"1\",a=\"2\"} 1", 1, "repeated"),
            ("m", 1, "no value"),
            ("m one", 1, "not a number"),
            ("m 1 2 3", 1, "unexpected text"),
            ("m 1 soon", 1, "not a timestamp"),
            ("9m 1", 1, "metric name"),
            ("# TYPE m fancy", 1, "unknown metric type"),
            ("# TYPE m gauge\n# TYPE m gauge", 2, "second TYPE"),
            ("m{a=\"1\" b=\"2\"} 1", 1, "expected ','"),
        ];
        for (text, line, msg) in cases {
            let e = parse(text).expect_err(text);
            assert_eq!(e.line, line, "{text}");
            assert!(e.message.contains(msg), "{text}: {}", e.message);
        }
    }

    #[test]
    fn blank_lines_crlf_and_trailing_commas_are_fine() {
        let e = parse("\r\n  \nm{a=\"1\",} 2\r\n").expect("parses");
        assert_eq!(e.samples.len(), 1);
        assert_eq!(e.samples[0].value, 2.0);
    }

    #[test]
    fn histograms_group_by_labels_without_le() {
        let e = parse(TEXT).expect("parses");
        assert!(e.has_family("req_seconds"));
        assert!(!e.has_family("req"));
        let h = e.histograms("req_seconds");
        assert_eq!(h.len(), 2);
        let get = &h[&Labels::from([("verb".to_string(), "GET".to_string())])];
        assert_eq!(get.buckets.len(), 4);
        assert_eq!(get.buckets[3].le, f64::INFINITY);
        assert_eq!((get.count, get.sum), (100.0, 42.5));
        // Without _count, the +Inf bucket is the count.
        let list = &h[&Labels::from([("verb".to_string(), "LIST".to_string())])];
        assert_eq!(list.count, 4.0);
    }

    fn hist(b: &[(f64, f64)], count: f64, sum: f64) -> Histogram {
        Histogram {
            buckets: b.iter().map(|&(le, count)| Bucket { le, count }).collect(),
            count,
            sum,
        }
    }

    #[test]
    fn since_subtracts_and_restarts_on_reset() {
        let before = hist(&[(1.0, 5.0), (f64::INFINITY, 6.0)], 6.0, 3.0);
        let after = hist(&[(1.0, 9.0), (f64::INFINITY, 12.0)], 12.0, 10.0);
        assert_eq!(
            after.since(Some(&before)),
            hist(&[(1.0, 4.0), (f64::INFINITY, 6.0)], 6.0, 7.0)
        );
        assert_eq!(after.since(None), after);
        let restarted = hist(&[(1.0, 1.0), (f64::INFINITY, 2.0)], 2.0, 0.5);
        assert_eq!(restarted.since(Some(&before)), restarted);
    }

    #[test]
    fn add_sums_equal_bounds() {
        let mut a = hist(&[(1.0, 1.0), (f64::INFINITY, 2.0)], 2.0, 1.0);
        a.add(&hist(
            &[(0.5, 1.0), (1.0, 2.0), (f64::INFINITY, 3.0)],
            3.0,
            2.0,
        ));
        assert_eq!(
            a,
            hist(&[(0.5, 1.0), (1.0, 3.0), (f64::INFINITY, 5.0)], 5.0, 3.0)
        );
        assert_eq!(a.count_at_or_below(1.0), 3.0);
        assert_eq!(a.count_at_or_below(0.7), 1.0);
        assert_eq!(a.count_at_or_below(0.1), 0.0);
    }

    #[test]
    fn quantiles_interpolate_like_prometheus() {
        let h = hist(
            &[
                (0.1, 10.0),
                (0.5, 50.0),
                (1.0, 90.0),
                (f64::INFINITY, 100.0),
            ],
            100.0,
            0.0,
        );
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        assert!(close(h.quantile(0.5), 0.5));
        assert!(close(h.quantile(0.25), 0.25));
        assert!(close(h.quantile(0.05), 0.05));
        assert!(close(h.quantile(0.9), 1.0));
        // Rank in the +Inf bucket: the largest finite bound.
        assert_eq!(h.quantile(0.99), 1.0);
        assert_eq!(h.quantile(-0.1), f64::NEG_INFINITY);
        assert_eq!(h.quantile(1.5), f64::INFINITY);
        assert!(h.quantile(f64::NAN).is_nan());
    }

    #[test]
    fn quantile_edge_cases() {
        let empty = hist(&[(1.0, 0.0), (f64::INFINITY, 0.0)], 0.0, 0.0);
        assert!(empty.quantile(0.5).is_nan());
        assert!(hist(&[(1.0, 3.0)], 3.0, 0.0).quantile(0.5).is_nan());
        assert!(hist(&[(f64::INFINITY, 3.0)], 3.0, 0.0)
            .quantile(0.5)
            .is_nan());
        // A first bound at or below zero is the answer for its bucket.
        let neg = hist(&[(-1.0, 5.0), (0.0, 8.0), (f64::INFINITY, 10.0)], 10.0, 0.0);
        assert_eq!(neg.quantile(0.2), -1.0);
        // Non-monotonic buckets are made monotonic first.
        let bumpy = hist(&[(1.0, 6.0), (2.0, 4.0), (f64::INFINITY, 8.0)], 8.0, 0.0);
        assert!((bumpy.quantile(0.5) - 4.0 / 6.0).abs() < 1e-12);
    }

    fn same(a: &Sample, b: &Sample) -> bool {
        a.name == b.name
            && a.labels == b.labels
            && a.timestamp_ms == b.timestamp_ms
            && (a.value == b.value || (a.value.is_nan() && b.value.is_nan()))
    }

    fn arb_sample() -> impl Strategy<Value = Sample> {
        (
            "[a-zA-Z_:][a-zA-Z0-9_:]{0,12}",
            proptest::collection::btree_map("[a-zA-Z_][a-zA-Z0-9_]{0,8}", any::<String>(), 0..4),
            prop_oneof![
                any::<f64>(),
                Just(f64::NAN),
                Just(f64::INFINITY),
                Just(f64::NEG_INFINITY),
                Just(0.0),
                Just(1e300),
                Just(5e-324),
            ],
            proptest::option::of(any::<i64>()),
        )
            .prop_map(|(name, labels, value, timestamp_ms)| Sample {
                name,
                labels,
                value,
                timestamp_ms,
            })
    }

    proptest! {
        #[test]
        fn never_panics_on_text(s in ".*") {
            let _ = parse(&s);
        }

        #[test]
        fn never_panics_on_bytes(b in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = parse(&String::from_utf8_lossy(&b));
        }

        #[test]
        fn never_panics_on_near_misses(
            s in r#"[a-z_]{1,4}(\{([a-z]{1,3}="([^"\\]|\\[\\n"q])*"?,?){0,3}\}?)? ?[-+0-9.eInfa]{0,6}( [0-9]{0,4})?"#
        ) {
            let _ = parse(&s);
        }

        #[test]
        fn rendered_samples_parse_back(samples in proptest::collection::vec(arb_sample(), 0..8)) {
            let text: Vec<String> = samples.iter().map(render_sample).collect();
            let parsed = parse(&text.join("\n")).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(parsed.samples.len(), samples.len());
            for (a, b) in parsed.samples.iter().zip(&samples) {
                prop_assert!(same(a, b), "{:?} != {:?}", a, b);
            }
        }
    }
}
