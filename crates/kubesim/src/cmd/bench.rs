//! `kubesim bench`: measurements for the README's performance table.

#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// What to measure: api.
    pub what: String,
}

pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    anyhow::bail!("unknown benchmark {:?}: available: api", args.what)
}
