//! Resource quantities (`100m`, `1Gi`, `5G`, `1e3`).

/// A quantity held exactly in milli-units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Quantity {
    milli: i128,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)]
pub struct QuantityError;

impl Quantity {
    pub fn parse(_s: &str) -> Result<Self, QuantityError> {
        Err(QuantityError)
    }
    pub fn from_milli(milli: i128) -> Self {
        Quantity { milli }
    }
    pub fn milli(&self) -> i128 {
        self.milli
    }
}
