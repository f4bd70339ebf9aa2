//! IntOrString values (`maxSurge: 25%`, `maxUnavailable: 1`) scaled
//! against a replica count.

use kubesim_core::ApiError;
use serde_json::Value;

/// `v` as a count out of `total`. Percentages are `total * p / 100`,
/// rounded up or down as the caller asks; absent values are `default`.
pub fn scaled(
    v: Option<&Value>,
    total: i64,
    round_up: bool,
    default: i64,
) -> Result<i64, ApiError> {
    match v {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Number(n)) => n
            .as_i64()
            .ok_or_else(|| ApiError::bad_request(format!("invalid value {n}"))),
        Some(Value::String(s)) => {
            if let Some(p) = s.strip_suffix('%') {
                let p: i64 = p
                    .parse()
                    .map_err(|_| ApiError::bad_request(format!("invalid value {s:?}")))?;
                let num = total * p;
                Ok(if round_up {
                    (num + 99).div_euclid(100)
                } else {
                    num.div_euclid(100)
                })
            } else {
                s.parse()
                    .map_err(|_| ApiError::bad_request(format!("invalid value {s:?}")))
            }
        }
        Some(other) => Err(ApiError::bad_request(format!("invalid value {other}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn percentages_round_as_asked() {
        // 25% of 10 is 2.5: 3 rounded up, 2 rounded down.
        assert_eq!(scaled(Some(&json!("25%")), 10, true, 0).unwrap(), 3);
        assert_eq!(scaled(Some(&json!("25%")), 10, false, 0).unwrap(), 2);
        assert_eq!(scaled(Some(&json!(4)), 10, false, 0).unwrap(), 4);
        assert_eq!(scaled(Some(&json!("7")), 10, false, 0).unwrap(), 7);
        assert_eq!(scaled(None, 10, false, 1).unwrap(), 1);
        assert!(scaled(Some(&json!("x%")), 10, false, 0).is_err());
    }
}
