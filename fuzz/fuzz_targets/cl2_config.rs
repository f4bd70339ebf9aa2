#![no_main]

use kubesim_load::config::{decode, lines, parse_yaml, schema, Validation};
use libfuzzer_sys::fuzz_target;

// A ClusterLoader2 config as it is after rendering: any text must decode
// to a config or to an error naming the file, never a panic; the line
// index that places errors must take any text too.
fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let index = lines::LineIndex::new(text);
    let _ = index.line_of(&[lines::Seg::Key("steps".into()), lines::Seg::Index(0)]);
    let Ok(value) = parse_yaml("config.yaml", text) else {
        return;
    };
    for validation in [Validation::Strict, Validation::Warn] {
        let doc = decode::Doc::new("config.yaml", text, validation);
        if let Ok(root) = doc.root(&value) {
            if let Err(e) = schema::config(root) {
                assert_eq!(e.file, "config.yaml");
            }
        }
    }
});
