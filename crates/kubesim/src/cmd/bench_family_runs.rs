//! `kubesim bench simulate --family --runs N [--against BIN]`: each member
//! run `N` times, round after round, so that a slow spell of the machine
//! touches every member alike; the table gives each member's median and
//! spread. With `--against`, every run of a member sits next to a run of
//! the same member by another kubesim binary (first one, then the other,
//! in turns), and the table adds the ratio of each such pair: on a
//! machine whose speed drifts by a tenth within minutes, paired ratios
//! show a gain of a few percent that medians of separate runs hide.

use std::path::Path;

/// One member's row, as its child process printed it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Row {
    pub name: String,
    pub nodes: String,
    pub wall: f64,
    pub cpu: f64,
    pub days: String,
    pub utilisation: String,
    pub rss_mib: f64,
}

impl Row {
    /// Parses `| name | nodes | wall | cpu | µs a job | days | util | rss |`.
    pub(super) fn parse(line: &str) -> Option<Row> {
        let cells: Vec<&str> = line
            .trim()
            .strip_prefix('|')?
            .strip_suffix('|')?
            .split('|')
            .map(str::trim)
            .collect();
        let [name, nodes, wall, cpu, _per_job, days, utilisation, rss] = cells[..] else {
            return None;
        };
        Some(Row {
            name: name.to_string(),
            nodes: nodes.to_string(),
            wall: wall.parse().ok()?,
            cpu: cpu.parse().ok()?,
            days: days.to_string(),
            utilisation: utilisation.to_string(),
            rss_mib: rss.parse().ok()?,
        })
    }
}

/// The median of `v` (the mean of the middle two for an even count).
fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

/// `median (min-max)` of `v`, with `digits` decimals.
fn spread(v: &[f64], digits: usize) -> String {
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("{:.d$} ({:.d$}-{:.d$})", median(v), min, max, d = digits)
}

/// Runs the members `chosen` (places in the family) `runs` times each,
/// one round over all of them after another, through `row` (a member's
/// place and the binary to run it with), and prints the table; with
/// `against`, each run is paired with one by that binary.
pub(super) fn run(
    jobs: usize,
    chosen: &[usize],
    runs: u32,
    against: Option<&Path>,
    row: &dyn Fn(usize, &Path) -> anyhow::Result<Row>,
) -> anyhow::Result<()> {
    let this = std::env::current_exe()?;
    // Per member: this binary's rows, the other's.
    let mut rows: Vec<(Vec<Row>, Vec<Row>)> = vec![(Vec::new(), Vec::new()); chosen.len()];
    for round in 0..runs {
        for (k, &i) in chosen.iter().enumerate() {
            match against {
                None => rows[k].0.push(row(i, &this)?),
                Some(other) => {
                    // Which goes first alternates, so neither always
                    // follows the other's warm caches or cold start.
                    if round % 2 == 0 {
                        rows[k].0.push(row(i, &this)?);
                        rows[k].1.push(row(i, other)?);
                    } else {
                        rows[k].1.push(row(i, other)?);
                        rows[k].0.push(row(i, &this)?);
                    }
                }
            }
        }
    }
    println!("simulate --family: {jobs} jobs per member, {runs} runs of each, medians (range)");
    match against {
        None => print_runs(jobs, &rows),
        Some(other) => print_pairs(other, &rows),
    }
    Ok(())
}

/// The header of the family's table, one row a member.
pub(super) const HEADER: &str = "| member | nodes | wall s | CPU s | µs per job | simulated days | utilisation | peak RSS MiB |\n|---|---|---|---|---|---|---|---|";

/// One figure of each of `rows`.
fn column(rows: &[Row], figure: fn(&Row) -> f64) -> Vec<f64> {
    rows.iter().map(figure).collect()
}

fn print_runs(jobs: usize, rows: &[(Vec<Row>, Vec<Row>)]) {
    println!("{HEADER}");
    let mut medians = Vec::new();
    for (mine, _) in rows {
        let Some(first) = mine.first() else { continue };
        let wall = column(mine, |r| r.wall);
        medians.push(median(&wall));
        let (cpu, rss) = (column(mine, |r| r.cpu), column(mine, |r| r.rss_mib));
        println!(
            "| {} | {} | {} | {:.1} | {:.0} | {} | {} | {} |",
            first.name,
            first.nodes,
            spread(&wall, 2),
            median(&cpu),
            median(&wall) * 1e6 / jobs.max(1) as f64,
            first.days,
            first.utilisation,
            spread(&rss, 0)
        );
    }
    println!("median member: {:.2} s", median(&medians));
}

fn print_pairs(other: &Path, rows: &[(Vec<Row>, Vec<Row>)]) {
    println!("other: {}", other.display());
    println!("| member | this: wall s | other: wall s | other / this, paired | peak RSS MiB, this / other |");
    println!("|---|---|---|---|---|");
    let (mut mine_medians, mut other_medians, mut all_ratios) =
        (Vec::new(), Vec::new(), Vec::new());
    for (mine, theirs) in rows {
        let Some(first) = mine.first() else { continue };
        let ratios: Vec<f64> = mine
            .iter()
            .zip(theirs)
            .map(|(a, b)| b.wall / a.wall)
            .collect();
        all_ratios.extend(&ratios);
        let (a, b) = (column(mine, |r| r.wall), column(theirs, |r| r.wall));
        mine_medians.push(median(&a));
        other_medians.push(median(&b));
        let rss = |r: &[Row]| median(&column(r, |x| x.rss_mib));
        println!(
            "| {} | {} | {} | {} | {:.0} / {:.0} |",
            first.name,
            spread(&a, 2),
            spread(&b, 2),
            spread(&ratios, 3),
            rss(mine),
            rss(theirs)
        );
    }
    println!(
        "median member: this {:.2} s, other {:.2} s; other / this over all pairs: {}",
        median(&mine_medians),
        median(&other_medians),
        spread(&all_ratios, 3)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_parse_as_the_child_prints_them() {
        let r = Row::parse("| 10,000 nodes | 10000 | 12.64 | 12.7 | 1264 | 0.3 | 1.1 % | 490 |")
            .unwrap();
        assert_eq!(r.name, "10,000 nodes");
        assert_eq!((r.wall, r.cpu, r.rss_mib), (12.64, 12.7, 490.0));
        assert_eq!(r.utilisation, "1.1 %");
        assert_eq!(Row::parse("| member | nodes |"), None);
        assert_eq!(Row::parse("machine: x"), None);
    }

    #[test]
    fn medians_and_spreads() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
        assert_eq!(spread(&[7.5, 7.25, 8.0], 2), "7.50 (7.25-8.00)");
    }

    #[test]
    fn runs_go_round_by_round_and_pairs_alternate_their_order() {
        let calls = std::cell::RefCell::new(Vec::new());
        let this = std::env::current_exe().unwrap();
        let other = Path::new("other-kubesim");
        let row = |i: usize, bin: &Path| {
            let who = if bin == other { "other" } else { "this" };
            calls.borrow_mut().push((i, who));
            let wall = if bin == this { 10.0 } else { 11.0 };
            Ok(Row::parse(&format!(
                "| m{i} | 1000 | {wall} | {wall} | 1 | 0.1 | 1.0 % | 100 |"
            ))
            .unwrap())
        };
        run(10, &[0, 2], 2, Some(other), &row).unwrap();
        assert_eq!(
            *calls.borrow(),
            [
                (0, "this"),
                (0, "other"),
                (2, "this"),
                (2, "other"),
                (0, "other"),
                (0, "this"),
                (2, "other"),
                (2, "this")
            ]
        );
        calls.borrow_mut().clear();
        run(10, &[1], 3, None, &row).unwrap();
        assert_eq!(*calls.borrow(), [(1, "this"), (1, "this"), (1, "this")]);
    }
}
