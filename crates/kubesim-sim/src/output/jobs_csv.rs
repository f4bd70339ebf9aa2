//! Batsim's `jobs.csv`: one row per job, the 17 columns in the order
//! Batsim writes them, so tools such as evalys read it unchanged.

use super::summary::{counted, times};
use crate::engine::{FinalState, Run};

pub const HEADER: &str = "job_id,workload_name,profile,submission_time,requested_number_of_resources,requested_time,success,final_state,starting_time,execution_time,finish_time,waiting_time,turnaround_time,stretch,allocated_resources,consumed_energy,metadata";

/// A CSV field: quoted when it holds a comma, quote or newline.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn f6(v: f64) -> String {
    format!("{v:.6}")
}

/// Batsim's interval-set text for a set of resource ids: `0-3 5`.
pub fn interval_set(ids: &[usize]) -> String {
    let mut ids = ids.to_vec();
    ids.sort_unstable();
    ids.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < ids.len() {
        let mut j = i;
        while j + 1 < ids.len() && ids[j + 1] == ids[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            ids[i].to_string()
        } else {
            format!("{}-{}", ids[i], ids[j])
        });
        i = j + 1;
    }
    parts.join(" ")
}

/// Rows for jobs that finished or were rejected, in input order; jobs
/// still running when the run stopped have no row (as in Batsim).
pub fn render(run: &Run) -> String {
    let mut out = String::from(HEADER);
    out.push('\n');
    for o in counted(run) {
        let j = &o.job;
        let requested = j.walltime.map(f6).unwrap_or_else(|| f6(-1.0));
        let head = format!(
            "{},{},{},{},{},{}",
            field(&j.id),
            field(&j.workload),
            field(&j.profile),
            f6(o.submitted.unwrap_or(j.submit)),
            j.res,
            requested
        );
        match (o.state, times(o)) {
            (FinalState::Rejected, _) => {
                out.push_str(&format!("{head},0,REJECTED,,,,,,,,-1.000000,\"\"\n"));
            }
            (state, Some((exec, wait, turn, slow))) => {
                let success = u8::from(state == FinalState::CompletedSuccessfully);
                let alloc = if o.hosts.is_empty() {
                    o.node.map(|n| interval_set(&[n])).unwrap_or_default()
                } else {
                    interval_set(&o.hosts)
                };
                out.push_str(&format!(
                    "{head},{success},{},{},{},{},{},{},{},{},-1.000000,\"\"\n",
                    state.as_str(),
                    f6(o.start.unwrap_or(0.0)),
                    f6(exec),
                    f6(o.finish.unwrap_or(0.0)),
                    f6(wait),
                    f6(turn),
                    f6(slow),
                    alloc
                ));
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_sets() {
        assert_eq!(interval_set(&[5, 0, 1, 2, 3, 7, 8]), "0-3 5 7-8");
        assert_eq!(interval_set(&[4]), "4");
        assert_eq!(interval_set(&[]), "");
    }

    #[test]
    fn fields_are_quoted_when_needed() {
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("x\"y"), "\"x\"\"y\"");
        assert_eq!(field("w0"), "w0");
    }
}
