//! What kubesim reads and writes as the Go programs it stands in for do:
//! Go's `text/template` with sprig's functions, and kwok's and
//! ClusterLoader2's function sets for it (Stage templates, load-test
//! configs); `time.Duration` as text; cron schedules as robfig/cron
//! parses them for CronJobs; and a fast reader for the plain YAML those
//! templates render.
//!
//! One definition of each, so that kwok files, ClusterLoader2 configs, API
//! validation and the controllers accept and print exactly the same
//! things. Nothing here knows about objects, the API or a clock: the
//! callers hand in values, text, and the functions that need the cluster.

pub mod cron;
pub mod duration;
pub mod plain_yaml;
pub mod template;
