#![no_main]

use kubesim_core::quantity::Quantity;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(q) = Quantity::parse(s) {
        let text = q.to_string();
        match Quantity::parse(&text) {
            Ok(back) => assert_eq!(back.to_string(), text, "{s:?}"),
            Err(e) => panic!("canonical form {text:?} of {s:?} does not parse: {e}"),
        }
        let _ = (q.value(), q.milli_value(), q.as_f64(), q + q, q - q);
    }
});
