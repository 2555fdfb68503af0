//! `colltune simulate`: times per algorithm and size on a network model, in
//! the raw CSV format of `colltune bench`, so every inspection command
//! (fit, report, plot, table build) works on simulated data.

use std::path::PathBuf;

use colltune_algorithms::{AlgoSpec, Collective, Execution, NodeMap};

use super::bench::{parse_sweeps, subjects_for};
use super::{parse_sizes, Code, UsageError};
use crate::bench::report::{comparison, imb_tables, series};
use crate::bench::Subject;
use crate::record::{Sample, Writer};
use crate::sim::{simulate, Model};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The network model (YAML; see tuning-tables/models/).
    #[arg(long)]
    pub model: PathBuf,
    /// Ranks of the simulated communicator.
    #[arg(long)]
    pub ranks: Option<usize>,
    /// Ranks per node (default: all on one node).
    #[arg(long)]
    pub ppn: Option<usize>,
    /// Or an explicit layout: `256x64`, `3+2`.
    #[arg(long)]
    pub layout: Option<String>,
    #[arg(long, value_delimiter = ',')]
    collective: Vec<Collective>,
    #[arg(long = "algorithm", short = 'a')]
    algorithms: Vec<String>,
    #[arg(long = "sweep")]
    sweeps: Vec<String>,
    #[arg(long, value_delimiter = ',')]
    executions: Vec<Execution>,
    /// Message sizes (default 1..4M).
    #[arg(long)]
    sizes: Option<String>,
    /// Raw samples (one simulated repetition per point).
    #[arg(long)]
    csv: Option<PathBuf>,
    #[arg(long)]
    summary_only: bool,
}

/// The simulated cluster's layout from --ranks/--ppn or --layout.
pub fn layout(
    ranks: Option<usize>,
    ppn: Option<usize>,
    layout: Option<&str>,
) -> Result<NodeMap, UsageError> {
    if let Some(l) = layout {
        return NodeMap::parse(l).map_err(|e| UsageError(format!("--layout: {e}")));
    }
    let ranks = ranks.ok_or_else(|| UsageError("give --ranks (and --ppn) or --layout".into()))?;
    let ppn = ppn.unwrap_or(ranks);
    if ranks == 0 || ppn == 0 {
        return Err(UsageError("--ranks and --ppn must be at least 1".into()));
    }
    let mut sizes = vec![ppn; ranks / ppn];
    if ranks % ppn != 0 {
        sizes.push(ranks % ppn);
    }
    NodeMap::blocks(&sizes).map_err(|e| UsageError(e.to_string()))
}

/// One simulated sample row.
pub fn sample(m: &Model, nodes: &NodeMap, s: &Subject, bytes: u64, run: u32, t: f64) -> Sample {
    Sample {
        collective: s.collective().to_string(),
        algorithm: s.algorithm(),
        spec: s.spec(),
        execution: s.execution().into(),
        ranks: nodes.size() as u32,
        ppn: nodes.max_ppn() as u32,
        nodes: nodes.num_nodes() as u32,
        layout: nodes.to_string(),
        bytes,
        root: if s.collective() == Collective::Swap {
            -1
        } else {
            0
        },
        cache: "warm".into(),
        iterations: 1,
        overlap_us: 0.0,
        run,
        rep: 1,
        time_us: t,
        outlier: 0,
        mpi: format!("model {}", m.name),
        host: "simulator".into(),
        source: format!("simulated:{}", m.name),
        colltune: env!("CARGO_PKG_VERSION").into(),
    }
}

pub fn run(a: Args) -> anyhow::Result<Code> {
    let m = Model::load(&a.model).map_err(|e| UsageError(e.to_string()))?;
    let nodes = layout(a.ranks, a.ppn, a.layout.as_deref())?;
    let sizes = parse_sizes(a.sizes.as_deref().unwrap_or("1..4M"))?;
    let colls = if a.collective.is_empty() {
        Collective::ALL.to_vec()
    } else {
        a.collective.clone()
    };
    let execs = if a.executions.is_empty() {
        Execution::ALL.to_vec()
    } else {
        a.executions.clone()
    };
    let sweeps = parse_sweeps(&a.sweeps)?;
    let requested: Vec<AlgoSpec> = a
        .algorithms
        .iter()
        .map(|t| AlgoSpec::parse(t).map_err(|e| UsageError(format!("--algorithm: {e}"))))
        .collect::<Result<_, _>>()?;
    let mut writer = match &a.csv {
        Some(p) => Some(Writer::open(p, false)?),
        None => None,
    };
    let mut samples = Vec::new();
    let t0 = std::time::Instant::now();
    for c in colls {
        let mine: Vec<AlgoSpec> = requested
            .iter()
            .filter(|s| colltune_algorithms::lookup(c, &s.name).is_ok())
            .cloned()
            .collect();
        if !requested.is_empty() && mine.is_empty() {
            continue;
        }
        for s in subjects_for(c, &mine, &sweeps, &execs, nodes.num_nodes() > 1)? {
            let Subject::Ours { spec, exec, .. } = &s else {
                continue;
            };
            for &b in &sizes {
                let t = simulate(&m, c, spec, *exec, &nodes, b)?;
                let row = sample(&m, &nodes, &s, b, 1, t);
                if let Some(w) = writer.as_mut() {
                    w.write(std::slice::from_ref(&row))?;
                }
                samples.push(row);
            }
        }
    }
    let all = series(&samples);
    if !a.summary_only {
        print!("{}", imb_tables(&all));
    }
    print!("{}", comparison(&all));
    println!(
        "simulated {} points on {} ranks ({}) with model {} in {:.2} s",
        samples.len(),
        nodes.size(),
        nodes,
        m.name,
        t0.elapsed().as_secs_f64()
    );
    if let Some(w) = &writer {
        println!("raw samples: {}", w.path().display());
    }
    Ok(Code::Ok)
}
