#![no_main]

use kubesim_core::selector::FieldSelector;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(sel) = FieldSelector::parse(s) {
        let text = sel.to_string();
        match FieldSelector::parse(&text) {
            Ok(back) => assert_eq!(back, sel, "{text:?}"),
            Err(e) => panic!("canonical form {text:?} of {s:?} does not parse: {e}"),
        }
        let _ = sel.matches(&|k| if k.len() % 2 == 0 { Some("") } else { None });
    }
});
