//! Instant queries (`GET /api/v1/query`) against a Prometheus server on
//! a loopback address, and the reading of their JSON answers.
//!
//! The server is one this process started on 127.0.0.1, so a plain
//! HTTP/1.0 exchange is all that is needed: Prometheus answers it without
//! chunked encoding and closes the connection at the end of the body.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use jiff::Timestamp;
use kubesim_runtime::Clock;
use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::measurement::prometheus::parse_value;

/// One element of an instant vector (or the lone value of a scalar, with
/// no labels).
#[derive(Debug, Clone, PartialEq)]
pub struct PromSample {
    pub metric: BTreeMap<String, String>,
    pub value: f64,
}

/// Runs PromQL at an instant. Errors are one line, fit to show a user.
#[async_trait::async_trait]
pub trait Querier: Send + Sync {
    async fn query(&self, promql: &str, at: Timestamp) -> Result<Vec<PromSample>, String>;
}

/// How long one query may take before it is given up.
const QUERY_TIMEOUT: Duration = Duration::from_secs(120);

/// A client of the Prometheus HTTP API at `addr`.
#[derive(Clone)]
pub struct QueryClient {
    pub addr: SocketAddr,
    pub clock: Clock,
}

impl QueryClient {
    /// A GET of `path_and_query`: the status code and the body.
    pub async fn get(&self, path_and_query: &str) -> Result<(u16, String), String> {
        let exchange = async {
            let mut s = tokio::net::TcpStream::connect(self.addr)
                .await
                .map_err(|e| format!("cannot connect to Prometheus at {}: {e}", self.addr))?;
            let req = format!(
                "GET {path_and_query} HTTP/1.0\r\nHost: {}\r\nAccept: application/json\r\n\r\n",
                self.addr
            );
            s.write_all(req.as_bytes())
                .await
                .map_err(|e| format!("cannot send a request to Prometheus: {e}"))?;
            let mut raw = Vec::new();
            s.read_to_end(&mut raw)
                .await
                .map_err(|e| format!("cannot read Prometheus's answer: {e}"))?;
            split_response(&raw)
        };
        self.clock
            .timeout(QUERY_TIMEOUT, exchange)
            .await
            .unwrap_or_else(|| {
                Err(format!(
                    "Prometheus at {} did not answer within {}s",
                    self.addr,
                    QUERY_TIMEOUT.as_secs()
                ))
            })
    }
}

#[async_trait::async_trait]
impl Querier for QueryClient {
    async fn query(&self, promql: &str, at: Timestamp) -> Result<Vec<PromSample>, String> {
        let path = query_path(promql, at);
        let (status, body) = self.get(&path).await?;
        parse_answer(status, &body)
    }
}

/// `/api/v1/query?query=…&time=…`, the time in Unix seconds with
/// milliseconds.
pub fn query_path(promql: &str, at: Timestamp) -> String {
    let ms = at.as_millisecond();
    format!(
        "/api/v1/query?query={}&time={}.{:03}",
        utf8_percent_encode(promql, NON_ALPHANUMERIC),
        ms.div_euclid(1000),
        ms.rem_euclid(1000)
    )
}

/// The status code and body of an HTTP/1.x response without chunking.
fn split_response(raw: &[u8]) -> Result<(u16, String), String> {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or("Prometheus's answer has no end of headers")?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse::<u16>().ok())
        .ok_or_else(|| format!("Prometheus's answer has no status line: {:.80}", head))?;
    Ok((status, body.to_string()))
}

/// Reads an answer of the query API: the samples of a vector or scalar,
/// else Prometheus's own error in one line.
pub fn parse_answer(status: u16, body: &str) -> Result<Vec<PromSample>, String> {
    let v: Value = serde_json::from_str(body).map_err(|_| {
        format!(
            "Prometheus answered {status} with something other than JSON: {:.120}",
            body.trim()
        )
    })?;
    if v.get("status").and_then(Value::as_str) != Some("success") {
        let kind = v
            .get("errorType")
            .and_then(Value::as_str)
            .unwrap_or("error");
        let msg = v
            .get("error")
            .and_then(Value::as_str)
            .unwrap_or("no message");
        return Err(format!(
            "Prometheus refused the query ({status} {kind}): {}",
            msg.replace('\n', " ")
        ));
    }
    let data = v.get("data").ok_or("Prometheus's answer has no data")?;
    let kind = data.get("resultType").and_then(Value::as_str).unwrap_or("");
    let result = data.get("result").unwrap_or(&Value::Null);
    match kind {
        "vector" => result
            .as_array()
            .ok_or("a vector answer without a result list")?
            .iter()
            .map(|s| {
                let metric = s
                    .get("metric")
                    .and_then(Value::as_object)
                    .map(|m| {
                        m.iter()
                            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                            .collect()
                    })
                    .unwrap_or_default();
                Ok(PromSample {
                    metric,
                    value: point(s.get("value"))?,
                })
            })
            .collect(),
        "scalar" => Ok(vec![PromSample {
            metric: BTreeMap::new(),
            value: point(Some(result))?,
        }]),
        other => Err(format!(
            "the query returned a {other}, not an instant vector or a scalar"
        )),
    }
}

/// `[<unix time>, "<value>"]`.
fn point(v: Option<&Value>) -> Result<f64, String> {
    v.and_then(|p| p.get(1))
        .and_then(Value::as_str)
        .and_then(parse_value)
        .ok_or_else(|| {
            format!(
                "a sample without a readable value: {}",
                v.unwrap_or(&Value::Null)
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_encodes_the_query_and_the_time() {
        let at: Timestamp = "2026-01-01T00:00:01.25Z".parse().unwrap();
        assert_eq!(
            query_path("sum(x{a=\"b\"})[5s:]", at),
            "/api/v1/query?query=sum%28x%7Ba%3D%22b%22%7D%29%5B5s%3A%5D&time=1767225601.250"
        );
    }

    #[test]
    fn vectors_and_scalars_are_read() {
        let body = r#"{"status":"success","data":{"resultType":"vector","result":[
            {"metric":{"verb":"GET"},"value":[1767225601.25,"3.5"]},
            {"metric":{},"value":[1767225601.25,"NaN"]},
            {"metric":{"x":"y"},"value":[1767225601.25,"+Inf"]}]}}"#;
        let s = parse_answer(200, body).unwrap();
        assert_eq!(s.len(), 3);
        assert_eq!(s[0].metric["verb"], "GET");
        assert_eq!(s[0].value, 3.5);
        assert!(s[1].value.is_nan());
        assert_eq!(s[2].value, f64::INFINITY);
        let scalar = r#"{"status":"success","data":{"resultType":"scalar","result":[1,"7"]}}"#;
        let s = parse_answer(200, scalar).unwrap();
        assert_eq!((s.len(), s[0].value), (1, 7.0));
        assert!(s[0].metric.is_empty());
    }

    #[test]
    fn errors_are_one_line() {
        let body =
            r#"{"status":"error","errorType":"bad_data","error":"1:5: parse error:\nunexpected"}"#;
        let e = parse_answer(400, body).unwrap_err();
        assert_eq!(
            e,
            "Prometheus refused the query (400 bad_data): 1:5: parse error: unexpected"
        );
        let e = parse_answer(502, "<html>bad gateway</html>").unwrap_err();
        assert!(e.contains("other than JSON"), "{e}");
        let m = r#"{"status":"success","data":{"resultType":"matrix","result":[]}}"#;
        assert!(parse_answer(200, m).unwrap_err().contains("matrix"));
        let bad = r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"x"]}]}}"#;
        assert!(parse_answer(200, bad)
            .unwrap_err()
            .contains("readable value"));
    }

    #[test]
    fn responses_split_at_the_headers() {
        let raw = b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{\"a\":1}";
        assert_eq!(split_response(raw).unwrap(), (200, "{\"a\":1}".into()));
        assert!(split_response(b"garbage").is_err());
        assert!(split_response(b"HTTP/1.0 OK\r\n\r\n").is_err());
    }
}
