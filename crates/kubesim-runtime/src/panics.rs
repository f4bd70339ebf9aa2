//! What a caught panic said, for the log line of a loop or handler that
//! survives it.

use std::any::Any;

/// The message a panic carried (`panic!("...")` gives a `&str` or a
/// `String`).
pub fn panic_message(panic: &(dyn Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}
