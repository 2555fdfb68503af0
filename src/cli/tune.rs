//! `colltune tune` (under mpirun): the budgeted adaptive sweep that writes
//! the decision table and the raw CSV, and can be resumed.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use colltune_algorithms::{Collective, Execution};

use super::{init_mpi, parse_sizes, Code, UsageError};
use crate::progress::Reporter;
use colltune_core::method::{CacheMode, Method, RootPolicy};
use colltune_core::record::Writer;
use colltune_core::table::{self, build::build, Provenance, Sweep};
use colltune_core::tune::resume::{read_for_resume, TuneConfig};
use colltune_core::tune::{candidates, collectives_of, Search, Settings, SpaceOptions};
use colltune_core::units::hms;
use colltune_mpi::bench::{llc_bytes, provenance, MAX_BYTES};
use colltune_mpi::driver::MpiOracle;
use colltune_mpi::transport::mpi::{Comm, Control};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Collectives to tune: bcast, swap (default both).
    #[arg(long, value_delimiter = ',')]
    collective: Vec<Collective>,
    /// Message sizes: the grid (default 1..4M, powers of two).
    #[arg(long)]
    sizes: Option<String>,
    /// Sub-communicator sizes to tune besides the whole job (ranks 0..k-1).
    #[arg(long, value_delimiter = ',')]
    comm_sizes: Vec<u32>,
    /// Executions: blocking, nonblocking (default both).
    #[arg(long, value_delimiter = ',')]
    executions: Vec<Execution>,
    /// Swap pairing used while tuning swaps: neighbors or halves.
    #[arg(long, default_value = "neighbors")]
    pairing: String,
    /// Wall-time budget in minutes; the sweep stops there and writes the
    /// table from what it measured.
    #[arg(long, default_value_t = 60.0)]
    budget: f64,
    /// Measure every candidate and segment size at every size (reference).
    #[arg(long)]
    exhaustive: bool,
    /// Raw samples (default results/<host>/tune-np<ranks>.csv).
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Decision table to write (default tuning-tables/<host>.yaml).
    #[arg(long)]
    table: Option<PathBuf>,
    /// Continue the sweep recorded in --csv, measuring nothing twice.
    #[arg(long)]
    resume: bool,
    /// Screening runs per point (cheap, a fraction of the budget).
    #[arg(long, default_value_t = 2)]
    screen_runs: u32,
    /// Full-budget runs for the candidates that survive screening.
    #[arg(long, default_value_t = 2)]
    full_runs: u32,
    /// Time budget per point and run, milliseconds.
    #[arg(long, default_value_t = 50)]
    budget_ms: u64,
    /// A candidate is dominated when its best run median exceeds the
    /// leader's worst by more than this fraction.
    #[arg(long, default_value_t = 0.05)]
    margin: f64,
    /// Coarse sizes are every this many grid sizes.
    #[arg(long, default_value_t = 4)]
    stride: u32,
    #[arg(long, default_value_t = 5)]
    min_reps: u32,
    #[arg(long, default_value_t = 300)]
    max_reps: u32,
    /// Root: rotate or a rank.
    #[arg(long, default_value = "rotate")]
    root: String,
    /// Cache: warm or off.
    #[arg(long, default_value = "warm")]
    cache: String,
    /// Repetition start: `barrier` (MPI_Barrier) or `window` (synchronised
    /// clocks, one agreed start instant; see `colltune bench --help`).
    #[arg(long, default_value = "barrier")]
    sync: colltune_core::method::SyncMode,
    /// Tune over a network model instead of measuring (no MPI needed);
    /// give the simulated cluster with --ranks/--ppn or --layout.
    #[arg(long)]
    model: Option<PathBuf>,
    /// Simulated ranks (with --model).
    #[arg(long)]
    ranks: Option<usize>,
    /// Simulated ranks per node (with --model).
    #[arg(long)]
    ppn: Option<usize>,
    /// Simulated layout, e.g. 1024x4 (with --model).
    #[arg(long)]
    layout: Option<String>,
}

pub fn run(args: Args) -> anyhow::Result<Code> {
    let sizes = parse_sizes(args.sizes.as_deref().unwrap_or("1..4M"))?;
    if let Some(&b) = sizes.iter().find(|&&b| b > MAX_BYTES) {
        return Err(UsageError(format!(
            "--sizes: {b} bytes is more than one MPI message can carry"
        ))
        .into());
    }
    if args.budget.is_nan()
        || args.budget <= 0.0
        || args.screen_runs == 0
        || args.full_runs == 0
        || args.stride == 0
        || args.min_reps == 0
        || args.max_reps < args.min_reps
    {
        return Err(UsageError("--budget, --screen-runs, --full-runs, --stride and --min-reps must be positive, --max-reps at least --min-reps".into()).into());
    }
    if !["neighbors", "halves"].contains(&args.pairing.as_str()) {
        return Err(UsageError(format!(
            "--pairing `{}`: use neighbors or halves",
            args.pairing
        ))
        .into());
    }
    let root = super::args::parse_root(&args.root)?;
    let cache = match args.cache.as_str() {
        "warm" => CacheMode::Warm,
        "off" => CacheMode::Off(2 * llc_bytes()),
        c => return Err(UsageError(format!("--cache `{c}`: use warm or off")).into()),
    };
    let collectives = collectives_of(&args.collective);
    let executions = if args.executions.is_empty() {
        Execution::ALL.to_vec()
    } else {
        args.executions.clone()
    };
    if let Some(model) = args.model.clone() {
        return run_model(&args, &model, sizes, collectives, executions, root);
    }

    let _universe = init_mpi()?;
    let world = Comm::world().context("setting up MPI_COMM_WORLD")?;
    let lead = world.rank() == 0;
    let prov = provenance(&world)?;
    let host = prov.host.split('.').next().unwrap_or("host").to_string();
    let csv = args
        .csv
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("results/{host}/tune-np{}.csv", world.size())));
    let table_path = args
        .table
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("tuning-tables/{host}.yaml")));

    let mut comm_sizes: Vec<u32> = vec![world.size() as u32];
    for &k in &args.comm_sizes {
        if k == 0 || k as usize > world.size() {
            if lead {
                eprintln!(
                    "colltune: error: --comm-sizes {k}: must be between 1 and the job's {} ranks",
                    world.size()
                );
            }
            // The others exit once rank 0 has said why (see calibrate).
            world.barrier()?;
            return Ok(Code::Usage);
        }
        if !comm_sizes.contains(&k) {
            comm_sizes.push(k);
        }
    }
    let config = TuneConfig {
        colltune: env!("CARGO_PKG_VERSION").into(),
        mpi: prov.mpi.clone(),
        world_ranks: world.size() as u32,
        comm_sizes: comm_sizes.clone(),
        collectives: collectives.iter().map(|c| c.to_string()).collect(),
        sizes: sizes.clone(),
        executions: executions.iter().map(|e| e.to_string()).collect(),
        pairing: args.pairing.clone(),
        mode: if args.exhaustive {
            "exhaustive"
        } else {
            "adaptive"
        }
        .into(),
        screen_runs: args.screen_runs,
        full_runs: args.full_runs,
        screen_scale: 0.25,
        margin: args.margin,
        stride: args.stride,
        budget_ms: args.budget_ms,
        min_reps: args.min_reps,
        max_reps: args.max_reps,
        cache: args.cache.clone(),
        root: args.root.clone(),
        sync: args.sync.to_string(),
    };

    // Rank 0 checks the CSV (refusing to overwrite, or checking that a
    // resume matches) and tells everyone whether to go on.
    let mut resumed = Vec::new();
    let mut problem: Option<String> = None;
    if lead {
        match prepare_csv(&csv, &config, args.resume) {
            Ok(s) => resumed = s,
            Err(e) => problem = Some(e),
        }
    }
    let go = world.bcast(u64::from(problem.is_none()), 0)?;
    if go == 0 {
        if let Some(p) = problem {
            eprintln!("colltune: error: {p}");
        }
        world.barrier()?;
        return Ok(Code::Usage);
    }

    // Sub-communicators: ranks 0..k-1.
    let mut comms: Vec<Option<Comm>> = vec![Some(world)];
    for &k in &comm_sizes[1..] {
        comms.push(comms[0].as_ref().expect("world").prefix(k as usize)?);
    }

    let stop = Arc::new(AtomicBool::new(false));
    // SIGTERM (a batch system's time limit) stops the sweep after the
    // current point; the table is written from what was measured.
    let _ = signal_hook::flag::register(signal_hook::consts::SIGTERM, Arc::clone(&stop));
    let started = Instant::now();
    let settings = Settings {
        sizes: sizes.clone(),
        screen_runs: args.screen_runs,
        full_runs: args.full_runs,
        screen_scale: 0.25,
        margin: args.margin,
        stride: args.stride as usize,
        brent_iters: 6,
        exhaustive: args.exhaustive,
        deadline: Some(started + Duration::from_secs_f64(args.budget * 60.0)),
    };
    let method = Method {
        budget: Duration::from_millis(args.budget_ms),
        min_reps: args.min_reps,
        max_reps: args.max_reps,
        warmup: 2,
        root,
        cache,
        sync: args.sync,
    };
    let writer = if lead {
        Some(Writer::open(&csv, true)?)
    } else {
        None
    };
    let estimate = comm_sizes.len() as u64
        * collectives.len() as u64
        * sizes.len().div_ceil(args.stride as usize) as u64
        * 24
        * u64::from(args.screen_runs + 1);
    let progress = Reporter::new(estimate, lead, "points");
    let mut oracle = MpiOracle::new(
        &comms,
        method,
        prov.clone(),
        resumed,
        writer,
        Box::new(progress),
        Arc::clone(&stop),
    );

    if !lead {
        oracle.serve()?;
        return Ok(Code::Ok);
    }
    let mut cut_short = false;
    for (ci, c) in comms.iter().enumerate() {
        let Some(comm) = c else { continue };
        let opts = SpaceOptions {
            executions: executions.clone(),
            pairing: args.pairing.clone(),
            multi_node: comm.nodes().num_nodes() > 1,
        };
        for &coll in &collectives {
            let mut search = Search::new(&mut oracle, &settings, ci, candidates(coll, &opts));
            search.run()?;
            cut_short |= search.cut_short;
        }
    }
    oracle.finish()?;
    let seconds = started.elapsed().as_secs_f64();

    let table = build(
        &oracle.samples,
        Provenance {
            host: prov.host.clone(),
            cluster: None,
            mpi: prov.mpi.clone(),
            date: table::now_iso8601(),
            command: std::env::args().collect::<Vec<_>>().join(" "),
            colltune: env!("CARGO_PKG_VERSION").into(),
            source: prov.source.clone(),
            sweep: Sweep {
                mode: config.mode.clone(),
                sizes: sizes.clone(),
                runs: args.screen_runs + args.full_runs,
                budget_ms: args.budget_ms,
                executions: config.executions.clone(),
                cache: args.cache.clone(),
                root: args.root.clone(),
                raw: vec![csv.display().to_string()],
                seconds: Some((seconds * 10.0).round() / 10.0),
                points: Some(oracle.measured + oracle.reused),
            },
        },
    );
    table.save(&table_path)?;
    // A marker batch jobs check to decide whether to run again.
    let mut marker = csv.as_os_str().to_owned();
    marker.push(".incomplete");
    if cut_short {
        std::fs::write(
            &marker,
            "the sweep stopped early (budget or SIGTERM): run again with --resume to finish it\n",
        )?;
    } else {
        let _ = std::fs::remove_file(&marker);
    }
    print!("{}", table::summary(&table));
    println!(
        "\ntuned in {} ({} points measured, {} reused from the CSV){}",
        hms(seconds),
        oracle.measured,
        oracle.reused,
        if cut_short {
            "; STOPPED EARLY (budget or SIGTERM): sizes not reached have no measurements, resume with --resume"
        } else {
            ""
        }
    );
    println!(
        "table: {}\nraw samples: {}",
        table_path.display(),
        csv.display()
    );
    Ok(Code::Ok)
}

/// Checks the raw CSV before a tune: refuses to overwrite one, and for a
/// resume checks that it was made with the same configuration.
fn prepare_csv(
    csv: &std::path::Path,
    config: &TuneConfig,
    resume: bool,
) -> Result<Vec<colltune_core::record::Sample>, String> {
    let side = TuneConfig::sidecar(csv);
    let exists = csv.metadata().map(|m| m.len() > 0).unwrap_or(false);
    if !resume {
        if exists {
            return Err(format!(
                "{} already holds samples: continue that sweep with --resume, or name a new file with --csv (nothing was overwritten)",
                csv.display()
            ));
        }
        if let Some(d) = csv.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
        }
        let text = serde_yaml::to_string(config).map_err(|e| e.to_string())?;
        std::fs::write(&side, text).map_err(|e| format!("{}: {e}", side.display()))?;
        return Ok(Vec::new());
    }
    if !exists {
        return Err(format!(
            "--resume: {} does not exist or is empty: start without --resume",
            csv.display()
        ));
    }
    let text = std::fs::read_to_string(&side).map_err(|e| {
        format!("--resume: {} cannot be read ({e}): it records the sweep's settings; without it the CSV cannot be resumed safely", side.display())
    })?;
    let theirs: TuneConfig =
        serde_yaml::from_str(&text).map_err(|e| format!("{}: {e}", side.display()))?;
    let diff = config.differences(&theirs);
    if !diff.is_empty() {
        return Err(format!(
            "--resume: {} comes from a different configuration, so its samples cannot continue this sweep (nothing was changed):\n  {}\nresume with the same options, or start a new --csv",
            csv.display(),
            diff.join("\n  ")
        ));
    }
    read_for_resume(csv).map_err(|e| e.to_string())
}

/// `tune --model`: the same search over a simulated cluster.
fn run_model(
    args: &Args,
    model: &std::path::Path,
    sizes: Vec<u64>,
    collectives: Vec<Collective>,
    executions: Vec<Execution>,
    root: RootPolicy,
) -> anyhow::Result<Code> {
    let m = colltune_core::sim::Model::load(model).map_err(|e| UsageError(e.to_string()))?;
    let world = colltune_core::simulate::layout(args.ranks, args.ppn, args.layout.as_deref())
        .map_err(|e| UsageError(e.to_string()))?;
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
    let mut cut_short = false;
    for (ci, nodes) in comms.iter().enumerate() {
        let opts = SpaceOptions {
            executions: executions.clone(),
            pairing: args.pairing.clone(),
            multi_node: nodes.num_nodes() > 1,
        };
        for &coll in &collectives {
            let mut search = Search::new(&mut oracle, &settings, ci, candidates(coll, &opts));
            search.run()?;
            cut_short |= search.cut_short;
        }
    }
    oracle.progress.finish();
    let seconds = started.elapsed().as_secs_f64();
    let table = build(
        &oracle.samples,
        Provenance {
            host: "simulator".into(),
            cluster: Some(format!("model {} ({})", m.name, world)),
            mpi: format!("model {}", m.name),
            date: table::now_iso8601(),
            command: std::env::args().collect::<Vec<_>>().join(" "),
            colltune: env!("CARGO_PKG_VERSION").into(),
            source: format!("simulated:{}", m.name),
            sweep: Sweep {
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
                root: "0".into(),
                raw: vec![csv.display().to_string()],
                seconds: Some((seconds * 10.0).round() / 10.0),
                points: Some(oracle.simulated),
            },
        },
    );
    table.save(&table_path)?;
    print!("{}", table::summary(&table));
    println!(
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
        if cut_short {
            "; STOPPED EARLY (budget)"
        } else {
            ""
        }
    );
    let mut skipped = oracle.skipped.clone();
    skipped.sort();
    skipped.dedup();
    for why in &skipped {
        println!("not a candidate here: {why}");
    }
    let mut skipped = oracle.skipped.clone();
    skipped.sort();
    skipped.dedup();
    for why in &skipped {
        println!("not a candidate here: {why}");
    }
    println!(
        "table: {}\nraw samples: {}",
        table_path.display(),
        csv.display()
    );
    Ok(Code::Ok)
}
