//! Cron schedules: parsing any text must not panic, and a schedule that
//! parses must yield a next time strictly after the given one (or none).
#![no_main]

use jiff::tz::TimeZone;
use jiff::Timestamp;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(schedule) = kubesim_gocompat::cron::parse(text) else {
        return;
    };
    // The last bytes pick the starting instant so runs cover many dates.
    let secs = data
        .iter()
        .rev()
        .take(4)
        .fold(0i64, |a, b| a * 256 + i64::from(*b));
    let after = Timestamp::from_second(1_700_000_000 + secs).unwrap_or(Timestamp::UNIX_EPOCH);
    if let Some(next) = schedule.next(after, &TimeZone::UTC) {
        assert!(next > after, "{text:?}: {next} is not after {after}");
    }
});
