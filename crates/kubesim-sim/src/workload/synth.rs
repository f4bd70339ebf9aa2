//! Synthetic Batsim workloads for what-if studies and benchmarks: jobs
//! drawn from an arrival process and distributions of run time and size,
//! with the arrival rate set to offer a target load to a given cluster.
//! The same options and seed give the same file.

use std::collections::BTreeMap;

use kubesim_runtime::Rng;
use serde_json::{json, Value};

/// When jobs arrive.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arrival {
    /// Exponential gaps (a Poisson process).
    Poisson,
    /// Equal gaps.
    Uniform,
    /// Every job at time 0.
    Burst,
}

/// A distribution of positive numbers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Dist {
    Fixed(f64),
    /// Uniform in [low, high].
    Uniform(f64, f64),
    /// Log-normal with this median and shape (sigma of the log).
    LogNormal {
        median: f64,
        sigma: f64,
    },
    /// Powers of two in [low, high], each exponent equally likely.
    Pow2(f64, f64),
}

impl Dist {
    /// Parses `fixed:X`, `uniform:A,B`, `lognormal:MEDIAN,SIGMA` or
    /// `pow2:A,B`.
    pub fn parse(s: &str) -> Result<Dist, String> {
        let (kind, args) = s.split_once(':').unwrap_or((s, ""));
        let nums: Vec<f64> = args
            .split(',')
            .filter(|a| !a.trim().is_empty())
            .map(|a| a.trim().parse::<f64>())
            .collect::<Result<_, _>>()
            .map_err(|_| format!("{s:?}: the parameters must be numbers"))?;
        let d = match (kind, nums.as_slice()) {
            ("fixed", [x]) => Dist::Fixed(*x),
            ("uniform", [a, b]) if a <= b => Dist::Uniform(*a, *b),
            ("lognormal", [m, s]) if *s >= 0.0 => Dist::LogNormal {
                median: *m,
                sigma: *s,
            },
            ("pow2", [a, b]) if a <= b && *a >= 1.0 => Dist::Pow2(*a, *b),
            _ => {
                return Err(format!(
                    "{s:?} is not fixed:X, uniform:A,B (A <= B), lognormal:MEDIAN,SIGMA or pow2:A,B"
                ))
            }
        };
        let positive = match d {
            Dist::Fixed(x) => x > 0.0,
            Dist::Uniform(a, _) | Dist::Pow2(a, _) => a > 0.0,
            Dist::LogNormal { median, .. } => median > 0.0,
        };
        if !positive {
            return Err(format!("{s:?}: values must be positive"));
        }
        Ok(d)
    }

    fn draw(&self, rng: &Rng) -> f64 {
        match *self {
            Dist::Fixed(x) => x,
            Dist::Uniform(a, b) => a + (b - a) * rng.unit(),
            Dist::LogNormal { median, sigma } => median * (sigma * standard_normal(rng)).exp(),
            Dist::Pow2(a, b) => {
                let (lo, hi) = (a.log2().ceil() as i32, b.log2().floor() as i32);
                let k = lo + rng.below((hi - lo + 1).max(1) as u64) as i32;
                2f64.powi(k)
            }
        }
    }
}

/// A standard normal draw (Box-Muller on two uniform draws).
fn standard_normal(rng: &Rng) -> f64 {
    let u1 = rng.unit().max(f64::MIN_POSITIVE);
    let u2 = rng.unit();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// How arrivals are spaced.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rate {
    /// This many seconds between arrivals on average.
    MeanGap(f64),
    /// Gaps chosen so that the jobs ask, on average, for this share of the
    /// cluster's cores over the span of their arrivals (1.0 saturates it).
    Load { factor: f64, cluster_cores: f64 },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    pub jobs: usize,
    pub arrival: Arrival,
    pub rate: Rate,
    /// Run time, in seconds.
    pub run_time: Dist,
    /// Run times are kept in [min, max].
    pub run_time_bounds: (f64, f64),
    /// Cores per job (Batsim `res`), rounded to a whole number.
    pub size: Dist,
    pub seed: u64,
}

/// The workload, as Batsim JSON (v4 `delay` profiles, one per distinct
/// run time, named `d<seconds>`).
pub fn generate(o: &Options) -> Result<Value, String> {
    if o.jobs == 0 {
        return Err("a workload needs at least one job".into());
    }
    let (lo, hi) = o.run_time_bounds;
    if !(lo > 0.0 && lo <= hi) {
        return Err("the run time bounds must be positive, min <= max".into());
    }
    let rng = Rng::seeded(o.seed);
    // Sizes and run times first: the load target sets the gaps from them.
    let mut drawn = Vec::with_capacity(o.jobs);
    for _ in 0..o.jobs {
        // Milliseconds, so that profile names and delays agree exactly.
        let run = (o.run_time.draw(&rng).clamp(lo, hi) * 1000.0).round() / 1000.0;
        let size = o.size.draw(&rng).round().max(1.0) as u64;
        drawn.push((run, size));
    }
    let mean_gap = match o.rate {
        Rate::MeanGap(g) if g >= 0.0 && g.is_finite() => g,
        Rate::MeanGap(_) => return Err("the mean gap must be a number of seconds".into()),
        Rate::Load {
            factor,
            cluster_cores,
        } => {
            if !(factor > 0.0 && cluster_cores > 0.0) {
                return Err("the load and the cluster's cores must be positive".into());
            }
            let work: f64 = drawn.iter().map(|(r, s)| r * *s as f64).sum();
            work / (o.jobs as f64 * factor * cluster_cores)
        }
    };
    let mut t = 0.0f64;
    let mut jobs = Vec::with_capacity(o.jobs);
    let mut profiles = BTreeMap::new();
    for (i, (run, size)) in drawn.into_iter().enumerate() {
        if i > 0 {
            t += match o.arrival {
                Arrival::Poisson => -mean_gap * (1.0 - rng.unit()).ln(),
                Arrival::Uniform => mean_gap,
                Arrival::Burst => 0.0,
            };
        }
        let name = format!("d{run}");
        profiles
            .entry(name.clone())
            .or_insert_with(|| json!({"type": "delay", "delay": run}));
        let submit = (t * 1000.0).round() / 1000.0;
        jobs.push(json!({"id": i.to_string(), "subtime": submit, "res": size, "profile": name}));
    }
    let nb_res = match o.rate {
        Rate::Load { cluster_cores, .. } => cluster_cores.round() as u64,
        Rate::MeanGap(_) => jobs
            .iter()
            .filter_map(|j| j["res"].as_u64())
            .max()
            .unwrap_or(1),
    };
    Ok(json!({
        "description": format!("kubesim workload synth, seed {}", o.seed),
        "nb_res": nb_res,
        "jobs": jobs,
        "profiles": profiles,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> Options {
        Options {
            jobs: 2000,
            arrival: Arrival::Poisson,
            rate: Rate::Load {
                factor: 0.5,
                cluster_cores: 1000.0,
            },
            run_time: Dist::LogNormal {
                median: 600.0,
                sigma: 1.5,
            },
            run_time_bounds: (10.0, 21600.0),
            size: Dist::Uniform(1.0, 8.0),
            seed: 7,
        }
    }

    #[test]
    fn same_seed_same_bytes_and_the_load_is_offered() {
        let a = generate(&opts()).unwrap();
        assert_eq!(a.to_string(), generate(&opts()).unwrap().to_string());
        let mut other = opts();
        other.seed = 8;
        assert_ne!(a.to_string(), generate(&other).unwrap().to_string());
        let jobs = a["jobs"].as_array().unwrap();
        let span = jobs.last().unwrap()["subtime"].as_f64().unwrap();
        let work: f64 = jobs
            .iter()
            .map(|j| {
                let p = &a["profiles"][j["profile"].as_str().unwrap()];
                p["delay"].as_f64().unwrap() * j["res"].as_f64().unwrap()
            })
            .sum();
        // Offered load: the work asked for over the arrival span, against
        // the cluster's cores; a Poisson span of 2,000 gaps is within a few
        // percent of its mean.
        let load = work / (span * 1000.0);
        assert!((load - 0.5).abs() < 0.05, "offered load {load}");
        for j in jobs {
            let r = j["res"].as_u64().unwrap();
            assert!((1..=8).contains(&r));
        }
    }

    #[test]
    fn distributions_parse_and_bounds_hold() {
        assert_eq!(Dist::parse("fixed:3"), Ok(Dist::Fixed(3.0)));
        assert_eq!(
            Dist::parse("lognormal:600,1.5"),
            Ok(Dist::LogNormal {
                median: 600.0,
                sigma: 1.5
            })
        );
        assert!(Dist::parse("uniform:5,1").is_err());
        assert!(Dist::parse("gaussian:1,2").is_err());
        assert!(Dist::parse("fixed:0").is_err());
        let rng = Rng::seeded(1);
        for _ in 0..1000 {
            let x = Dist::Pow2(1.0, 32.0).draw(&rng);
            assert!([1.0, 2.0, 4.0, 8.0, 16.0, 32.0].contains(&x));
        }
        let mut o = opts();
        o.arrival = Arrival::Burst;
        let w = generate(&o).unwrap();
        assert!(w["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|j| j["subtime"] == 0.0));
        for p in w["profiles"].as_object().unwrap().values() {
            let d = p["delay"].as_f64().unwrap();
            assert!((10.0..=21600.0).contains(&d));
        }
    }
}
