#![no_main]

use kubesim_load::measurement::prometheus::{self, Sample};
use libfuzzer_sys::fuzz_target;

fn same(a: &Sample, b: &Sample) -> bool {
    a.name == b.name
        && a.labels == b.labels
        && a.timestamp_ms == b.timestamp_ms
        && (a.value == b.value || (a.value.is_nan() && b.value.is_nan()))
}

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(e) = prometheus::parse(s) else {
        return;
    };
    // Every accepted sample renders to a line that parses back to it.
    for sample in &e.samples {
        let line = prometheus::render_sample(sample);
        match prometheus::parse(&line) {
            Ok(back) => {
                assert_eq!(back.samples.len(), 1, "{line:?}");
                assert!(same(&back.samples[0], sample), "{line:?} of {s:?}");
            }
            Err(err) => panic!("rendered {line:?} of {s:?} does not parse: {err}"),
        }
    }
    // The histogram arithmetic takes whatever the scrape holds.
    for family in e.types.keys() {
        for h in e.histograms(family).values() {
            let d = h.since(Some(h));
            let mut total = d.clone();
            total.add(h);
            for q in [0.0, 0.5, 0.99, 1.0] {
                let _ = total.quantile(q);
            }
            let _ = total.count_at_or_below(1.0);
        }
    }
});
