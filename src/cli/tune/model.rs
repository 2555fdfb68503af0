//! `colltune tune --model`: the tuner's search over a simulated cluster.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use colltune_algorithms::{Collective, Execution};

use super::Args;
use crate::cli::{Code, UsageError};
use crate::progress::Reporter;
use colltune_core::measure::method::RootPolicy;
use colltune_core::measure::record::Writer;
use colltune_core::tables::table::{self, build::build_with, Provenance, Sweep};
use colltune_core::tune::{search_all, Settings};
use colltune_core::units::hms;

/// `tune --model`: the same search over a simulated cluster.
pub fn run(
    args: &Args,
    model: &std::path::Path,
    sizes: Vec<u64>,
    collectives: Vec<Collective>,
    executions: Vec<Execution>,
    root: RootPolicy,
) -> anyhow::Result<Code> {
    let m = colltune_core::model::sim::Model::load(model).map_err(|e| UsageError(e.to_string()))?;
    let world = args.cluster.nodes()?;
    let comms = comms_of(args, &world, root)?;
    let csv = args
        .csv
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("results/sim/{}-{}.csv", m.name, world)));
    let table_path = args
        .table
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("tuning-tables/sim-{}-{}.yaml", m.name, world)));
    if csv.metadata().map(|x| x.len() > 0).unwrap_or(false) {
        return Err(UsageError(format!(
            "{} already holds samples: name a new file with --csv (nothing was overwritten)",
            csv.display()
        ))
        .into());
    }
    let writer = Writer::open(&csv, false)?;
    let started = Instant::now();
    // Simulation is deterministic: one run each, no screening fraction.
    let settings = Settings {
        sizes: sizes.clone(),
        screen_runs: 1,
        full_runs: 1,
        screen_scale: 1.0,
        margin: args.margin,
        stride: args.stride as usize,
        brent_iters: 6,
        exhaustive: args.exhaustive,
        deadline: Some(started + Duration::from_secs_f64(args.budget * 60.0)),
        // Open MPI's own algorithms are measured beside colltune's (forced
        // through MPI_T on a duplicate); a model cannot simulate them.
        library_candidates: Vec::new(),
        min_gain: args.min_gain_setting(),
        extra_rounds: args.extra_rounds,
        focus: None,
    };
    let progress = Reporter::new(
        comms.len() as u64 * collectives.len() as u64 * 200,
        true,
        "simulations",
    );
    let mut oracle = colltune_core::tune::sim::SimOracle::new(
        &m,
        comms.clone(),
        root,
        Some(writer),
        Box::new(progress),
    );
    oracle.cutoff = !args.exhaustive;
    oracle.placed = args.cluster.mapping()?.is_some();
    let on: Vec<(usize, bool)> = comms
        .iter()
        .enumerate()
        .map(|(ci, nodes)| (ci, nodes.num_nodes() > 1))
        .collect();
    let campaign = search_all(
        &mut oracle,
        &settings,
        &on,
        &collectives,
        &executions,
        args.pairing.name(),
    )?;
    oracle.progress.finish();
    let seconds = started.elapsed().as_secs_f64();
    let mut table = build_with(
        &oracle.samples,
        Provenance::made_now(
            "simulator".into(),
            Some(format!("model {} ({})", m.name, world)),
            format!("model {}", m.name),
            format!("simulated:{}", m.name),
            Sweep {
                mode: if args.exhaustive {
                    "exhaustive"
                } else {
                    "adaptive"
                }
                .into(),
                sizes,
                runs: 1,
                budget_ms: 0,
                executions: executions.iter().map(|e| e.to_string()).collect(),
                cache: String::new(),
                root: args.timing.root.clone(),
                raw: vec![csv.display().to_string()],
                seconds: Some((seconds * 10.0).round() / 10.0),
                points: Some(oracle.simulated),
            },
        ),
        &args.compact(),
    );
    super::record_further(&mut table, &campaign);
    table.save(&table_path)?;
    out!("{}", table::summary(&table));
    outln!(
        "\ntuned over model {} on {} ranks ({}) in {} ({} simulations{}){}",
        m.name,
        world.size(),
        world,
        hms(seconds),
        oracle.simulated,
        if oracle.abandoned > 0 {
            format!(
                ", {} candidate-sizes abandoned past {}x the best",
                oracle.abandoned,
                colltune_core::tune::sim::CUTOFF
            )
        } else {
            String::new()
        },
        if campaign.cut_short {
            "; STOPPED EARLY (budget)"
        } else {
            ""
        }
    );
    let mut skipped = oracle.skipped.clone();
    skipped.sort();
    skipped.dedup();
    for why in &skipped {
        outln!("not a candidate here: {why}");
    }
    outln!(
        "table: {}\nraw samples: {}",
        table_path.display(),
        csv.display()
    );
    Ok(Code::Ok)
}

/// The simulated communicators: the whole cluster, then ranks 0..k-1 of
/// it for each `--comm-sizes` k; refuses a root or a size out of range.
fn comms_of(
    args: &Args,
    world: &colltune_algorithms::NodeMap,
    root: RootPolicy,
) -> anyhow::Result<Vec<colltune_algorithms::NodeMap>> {
    if let RootPolicy::Fixed(r) = root {
        if r >= world.size() {
            return Err(UsageError(format!(
                "--root {r}: the simulated communicator has ranks 0..{}",
                world.size() - 1
            ))
            .into());
        }
    }
    let mut comms = vec![world.clone()];
    for &k in &args.comm_sizes {
        if k == 0 || k as usize > world.size() {
            return Err(UsageError(format!(
                "--comm-sizes {k}: must be between 1 and {}",
                world.size()
            ))
            .into());
        }
        // ranks 0..k-1 of the simulated cluster
        let labels: Vec<usize> = (0..k as usize).map(|r| world.node_of(r)).collect();
        comms.push(colltune_algorithms::NodeMap::from_labels(&labels));
    }
    Ok(comms)
}
