#![no_main]

use kubesim_core::selector::LabelSelector;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(sel) = LabelSelector::parse(s) {
        // The canonical form must parse back to the same selector.
        let text = sel.to_string();
        match LabelSelector::parse(&text) {
            Ok(back) => assert_eq!(back, sel, "{text:?}"),
            Err(e) => panic!("canonical form {text:?} of {s:?} does not parse: {e}"),
        }
        let _ = sel.matches(&|k| if k.len() % 2 == 0 { Some("1") } else { None });
    }
});
