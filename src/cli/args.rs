//! Argument groups shared by several subcommands: what to measure or
//! simulate ([`Selection`]), parsed into what the libraries take.

use colltune_algorithms::{lookup, AlgoSpec, Collective, Execution};
use colltune_core::method::{parse_sweeps, RootPolicy};

use super::{parse_sizes, UsageError};

/// What to time (bench) or simulate (simulate): collectives, algorithms,
/// parameter sweeps, executions and sizes.
#[derive(clap::Args, Debug)]
pub struct Selection {
    /// Collectives: bcast, swap (default both).
    #[arg(long, value_delimiter = ',')]
    collective: Vec<Collective>,
    /// Algorithms (repeatable), e.g. `pipeline:segment=8K`; default every
    /// algorithm at its default parameters (node-aware ones only when the
    /// ranks span several nodes).
    #[arg(long = "algorithm", short = 'a')]
    algorithms: Vec<String>,
    /// Vary a parameter over values for every algorithm that has it
    /// (repeatable): `segment=8K,64K`, `radix=2,4,8`, `fanout=1,2`,
    /// `inter=binomial,pipeline`, `pairing=neighbors,halves`.
    #[arg(long = "sweep")]
    sweeps: Vec<String>,
    /// Executions: blocking, nonblocking (default both).
    #[arg(long, value_delimiter = ',')]
    executions: Vec<Execution>,
    /// Message sizes: a list (`1,7,64K`) or a range of powers of two
    /// (`1..4M`, the default).
    #[arg(long)]
    pub sizes: Option<String>,
}

/// A [`Selection`], parsed and checked.
pub struct Selected {
    pub sizes: Vec<u64>,
    /// Per collective, the requested algorithms that belong to it (empty:
    /// every algorithm); only collectives with some, when any was named.
    pub per_coll: Vec<(Collective, Vec<AlgoSpec>)>,
    pub sweeps: Vec<(String, Vec<String>)>,
    pub execs: Vec<Execution>,
}

impl Selection {
    /// Parses and checks everything; an algorithm no selected collective
    /// has is an error naming it.
    pub fn resolve(&self) -> Result<Selected, UsageError> {
        let sizes = parse_sizes(self.sizes.as_deref().unwrap_or("1..4M"))?;
        let collectives = if self.collective.is_empty() {
            Collective::ALL.to_vec()
        } else {
            self.collective.clone()
        };
        let execs = if self.executions.is_empty() {
            Execution::ALL.to_vec()
        } else {
            self.executions.clone()
        };
        let requested: Vec<AlgoSpec> = self
            .algorithms
            .iter()
            .map(|t| AlgoSpec::parse(t).map_err(|e| UsageError(format!("--algorithm: {e}"))))
            .collect::<Result<_, _>>()?;
        let sweeps = parse_sweeps(&self.sweeps).map_err(|e| UsageError(format!("--sweep {e}")))?;
        let mut per_coll: Vec<(Collective, Vec<AlgoSpec>)> = Vec::new();
        for &c in &collectives {
            let mine: Vec<AlgoSpec> = requested
                .iter()
                .filter(|s| lookup(c, &s.name).is_ok())
                .cloned()
                .collect();
            per_coll.push((c, mine));
        }
        for s in &requested {
            if !collectives.iter().any(|&c| lookup(c, &s.name).is_ok()) {
                let e = lookup(collectives[0], &s.name).expect_err("unknown");
                return Err(UsageError(format!("--algorithm {s}: {e}")));
            }
        }
        if !requested.is_empty() {
            per_coll.retain(|(_, specs)| !specs.is_empty());
        }
        Ok(Selected {
            sizes,
            per_coll,
            sweeps,
            execs,
        })
    }
}

/// `--root`: `rotate` or a rank.
pub fn parse_root(r: &str) -> Result<RootPolicy, UsageError> {
    r.parse().map_err(|e| UsageError(format!("--root {e}")))
}
