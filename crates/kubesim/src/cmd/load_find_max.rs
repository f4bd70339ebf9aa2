//! `kubesim load --find-max NAME=START..END[:STEP]`: the same test run
//! again with growing values of one parameter, each run a `kubesim load`
//! process of its own (a fresh in-process cluster each time, nothing left
//! over from the run before), until the highest value at which every SLO
//! holds is found.

use anyhow::{bail, Context};
use kubesim_load::report::find_max::{summary_html, Search, Trial};
use kubesim_load::report::margins::{slo_margins, summaries_in};

use super::LoadArgs;

pub fn run(args: &LoadArgs, spec: &str) -> anyhow::Result<()> {
    let search = Search::parse(spec).map_err(|e| anyhow::anyhow!("bad --find-max: {e}"))?;
    std::fs::create_dir_all(&args.report_dir)
        .with_context(|| format!("cannot create {}", args.report_dir.display()))?;
    let exe = std::env::current_exe()?;
    let mut trials: Vec<Trial> = Vec::new();
    let mut config_name = String::new();
    while let Some(value) = search.next(&trials) {
        let shown = search.format(value);
        let dir = args.report_dir.join(format!("{}={shown}", search.name));
        eprintln!("kubesim: --find-max: {}={shown}", search.name);
        let mut cmd = std::process::Command::new(&exe);
        cmd.arg("load")
            .arg("--config")
            .arg(&args.config)
            .arg("--report-dir")
            .arg(&dir)
            .args(["--validation", &format!("{:?}", args.validation)])
            .args(["--seed", &args.seed.to_string()])
            .env(&search.name, &shown);
        for o in &args.overrides {
            cmd.arg("--testoverrides").arg(o);
        }
        if let Some(kc) = &args.kubeconfig {
            cmd.arg("--kubeconfig").arg(kc);
        }
        if let Some(n) = args.nodes {
            cmd.args(["--nodes", &n.to_string()]);
        }
        // Each run has its own Prometheus, its data in the run's report.
        if args.prometheus {
            cmd.arg("--prometheus");
        }
        let status = cmd.status().context("cannot run kubesim load")?;
        // A run that wrote no report did not get to test anything (a bad
        // config, an unreachable cluster): the search cannot go on.
        if !dir.join("junit.xml").exists() {
            bail!(
                "the run at {}={shown} failed before testing ({status})",
                search.name
            );
        }
        let summaries = summaries_in(&dir)
            .with_context(|| format!("cannot read the report in {}", dir.display()))?;
        if config_name.is_empty() {
            config_name = config_name_in(&dir).unwrap_or_else(|| "test".into());
        }
        trials.push(Trial {
            value,
            passed: status.success(),
            margins: slo_margins(&summaries),
        });
    }
    let page = summary_html(&config_name, &search, &trials);
    let path = args.report_dir.join("summary.html");
    std::fs::write(&path, page).with_context(|| format!("cannot write {}", path.display()))?;
    match search.best(&trials) {
        Some(b) => println!(
            "highest {} at which every SLO held: {} ({} runs); plot in {}",
            search.name,
            search.format(b),
            trials.len(),
            path.display()
        ),
        None => println!(
            "no value of {} passed: the test failed at {}; see {}",
            search.name,
            search.format(search.start),
            path.display()
        ),
    }
    Ok(())
}

/// The config's name, from the `generatedConfig_<name>.yaml` a run writes.
fn config_name_in(dir: &std::path::Path) -> Option<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names.iter().find_map(|n| {
        n.strip_prefix("generatedConfig_")
            .and_then(|r| r.strip_suffix(".yaml"))
            .map(String::from)
    })
}
