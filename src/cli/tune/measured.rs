//! `colltune tune` measured under mpirun: rank 0 checks the CSV and the
//! focus ([`super::launch`]), every rank joins the search's measurements
//! (`colltune_mpi::driver`), rank 0 writes the table.
//!
//! ```text
//! comm sizes -> further launch? -> CSV checked -> communicators
//!     -> search (rank 0 leads, the others serve) -> table, marker
//! ```

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use colltune_algorithms::{Collective, Execution};
use colltune_core::measure::method::{Origin, RootPolicy};
use colltune_core::measure::record::{Call, Writer};
use colltune_core::tables::table::build::{build_with, calls};
use colltune_core::tables::table::{self, Provenance, Sweep};
use colltune_core::tune::resume::TuneConfig;
use colltune_core::tune::{search_all, Campaign, Settings};
use colltune_core::units::hms;
use colltune_mpi::bench::{llc_bytes, provenance};
use colltune_mpi::driver::MpiOracle;
use colltune_mpi::transport::mpi::Comm;

use super::{launch, library, Args};
use crate::cli::{init_mpi, Code};
use crate::progress::Reporter;

/// `tune` on MPI: the sweep measured on this job's communicators.
pub fn run(
    args: &Args,
    sizes: Vec<u64>,
    collectives: Vec<Collective>,
    executions: Vec<Execution>,
    root: RootPolicy,
) -> anyhow::Result<Code> {
    let want_library = !args.no_library_candidates && collectives.contains(&Collective::Bcast);
    if want_library {
        // Open MPI reads this when MPI starts (it cannot be written later);
        // with nothing forced it keeps its fixed decision. Forcing an
        // algorithm on a duplicate needs it (see `bench --baseline ompi-tuned`).
        std::env::set_var("OMPI_MCA_coll_tuned_use_dynamic_rules", "1");
    }
    let _universe = init_mpi()?;
    let world = Comm::world().context("setting up MPI_COMM_WORLD")?;
    let lead = world.rank() == 0;
    let prov = provenance(&world)?;
    // The library's own algorithms it lets colltune force (every rank reads
    // the same library, so all agree).
    let (library_candidates, mpich_offered) = if want_library {
        library::candidates(&world, &prov, args.comm_sizes.is_empty())
    } else {
        (Vec::new(), Vec::new())
    };
    let host = prov.host.split('.').next().unwrap_or("host").to_string();
    let csv = args
        .csv
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("results/{host}/tune-np{}.csv", world.size())));
    let table_path = args
        .table
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("tuning-tables/{host}.yaml")));
    let Some(comm_sizes) = launch::comm_sizes_of(args, &world)? else {
        return Ok(Code::Usage);
    };
    // A further launch: the open points of the earlier launches (rank 0
    // reads them; the others only serve its measurements).
    let (sizes, focus) = match launch::further(args, &world, &prov, &comm_sizes, sizes)? {
        Ok(f) => f,
        Err(code) => return Ok(code),
    };
    let what = Covered {
        comm_sizes: &comm_sizes,
        collectives: &collectives,
        sizes: &sizes,
        executions: &executions,
    };
    let config = tune_config(args, &prov, world.size() as u32, &what);
    let Some(mut resumed) = launch::check_csv(&world, &csv, &config, args.resume)? else {
        return Ok(Code::Usage);
    };

    // Sub-communicators: ranks 0..k-1.
    let mut comms: Vec<Option<Comm>> = vec![Some(world)];
    for &k in &comm_sizes[1..] {
        comms.push(comms[0].as_ref().expect("world").prefix(k as usize)?);
    }

    // Samples resumed from a CSV written before the placement column ran
    // on these communicators: the table's entries hold for their placement.
    for s in resumed.iter_mut().filter(|s| s.placement.is_empty()) {
        if let Some(c) = comms.iter().flatten().find(|c| c.size() as u32 == s.ranks) {
            s.placement = c
                .shape()
                .placement()
                .placement()
                .map_or_else(String::new, |p| p.to_string());
        }
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
        // Open MPI's own algorithms are measured beside colltune's (forced
        // through MPI_T on a duplicate); a model cannot simulate them.
        library_candidates,
        min_gain: args.min_gain_setting(),
        extra_rounds: args.extra_rounds,
        focus,
    };
    let method = args.timing.method(root, 2, llc_bytes());
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
    oracle.mpich_offered = mpich_offered;

    if !lead {
        oracle.serve()?;
        return Ok(Code::Ok);
    }
    let on: Vec<(usize, bool)> = comms
        .iter()
        .enumerate()
        .filter_map(|(ci, c)| c.as_ref().map(|c| (ci, c.nodes().num_nodes() > 1)))
        .collect();
    // `--calls` without bcast: the blocking broadcast is not searched.
    let searched: Vec<Collective> = collectives
        .iter()
        .copied()
        .filter(|c| *c != Collective::Bcast || args.calls.contains(&Call::Bcast))
        .collect();
    let campaign = search_all(
        &mut oracle,
        &settings,
        &on,
        &searched,
        &executions,
        args.pairing.name(),
    )?;
    super::calls::sweep(args, &mut oracle, &on, &sizes)?;
    oracle.finish()?;
    let seconds = started.elapsed().as_secs_f64();
    let written = Written {
        csv: &csv,
        table: &table_path,
        seconds,
    };
    write_table(args, &oracle, &campaign, &prov, &config, &written)
}

/// What the sweep covers.
struct Covered<'a> {
    comm_sizes: &'a [u32],
    collectives: &'a [Collective],
    sizes: &'a [u64],
    executions: &'a [Execution],
}

/// The settings a resume must match (the CSV's sidecar).
fn tune_config(args: &Args, prov: &Origin, world_ranks: u32, what: &Covered) -> TuneConfig {
    TuneConfig {
        colltune: env!("CARGO_PKG_VERSION").into(),
        mpi: prov.mpi.clone(),
        world_ranks,
        comm_sizes: what.comm_sizes.to_vec(),
        collectives: what.collectives.iter().map(|c| c.to_string()).collect(),
        sizes: what.sizes.to_vec(),
        executions: what.executions.iter().map(|e| e.to_string()).collect(),
        pairing: args.pairing.name().into(),
        mode: if args.exhaustive {
            "exhaustive"
        } else if !args.focus.is_empty() {
            "further"
        } else {
            "adaptive"
        }
        .into(),
        screen_runs: args.screen_runs,
        full_runs: args.full_runs,
        screen_scale: 0.25,
        margin: args.margin,
        stride: args.stride,
        budget_ms: args.timing.budget_ms,
        min_reps: args.timing.min_reps,
        max_reps: args.timing.max_reps,
        cache: args.timing.cache.to_string(),
        root: args.timing.root.clone(),
        sync: args.timing.sync.to_string(),
        pattern: args.timing.pattern.to_string(),
    }
}

/// Where a tune writes, and how long it took.
struct Written<'a> {
    csv: &'a Path,
    table: &'a Path,
    seconds: f64,
}

/// Rank 0, after the sweep: the table built from the samples, saved, the
/// incomplete marker set or cleared, the summary printed.
fn write_table(
    args: &Args,
    oracle: &MpiOracle,
    campaign: &Campaign,
    prov: &Origin,
    config: &TuneConfig,
    w: &Written,
) -> anyhow::Result<Code> {
    let (csv, table_path, seconds) = (w.csv, w.table, w.seconds);
    let mut made = Provenance::made_now(
        prov.host.clone(),
        None,
        prov.mpi.clone(),
        prov.source.clone(),
        Sweep::default(),
    );
    made.pattern = args.timing.pattern.to_string();
    let mut table = build_with(
        &oracle.samples,
        Provenance {
            sweep: Sweep {
                mode: config.mode.clone(),
                sizes: config.sizes.clone(),
                runs: args.screen_runs + args.full_runs,
                budget_ms: args.timing.budget_ms,
                executions: config.executions.clone(),
                cache: args.timing.cache.to_string(),
                root: args.timing.root.clone(),
                raw: vec![csv.display().to_string()],
                seconds: Some((seconds * 10.0).round() / 10.0),
                points: Some(oracle.measured + oracle.reused),
            },
            ..made
        },
        &args.compact(),
    );
    super::record_further(&mut table, campaign);
    table.save(table_path)?;
    // A marker batch jobs check to decide whether to run again.
    let marker = TuneConfig::incomplete_marker(csv);
    if campaign.cut_short {
        std::fs::write(
            &marker,
            "the sweep stopped early (budget or SIGTERM): run again with --resume to finish it\n",
        )?;
    } else {
        let _ = std::fs::remove_file(&marker);
    }
    out!("{}{}", table::summary(&table), calls::sections_text(&table));
    outln!(
        "\ntuned in {} ({} points measured, {} reused from the CSV){}",
        hms(seconds),
        oracle.measured,
        oracle.reused,
        if campaign.cut_short {
            "; STOPPED EARLY (budget or SIGTERM): sizes not reached have no measurements, resume with --resume"
        } else {
            ""
        }
    );
    outln!(
        "table: {}\nraw samples: {}",
        table_path.display(),
        csv.display()
    );
    Ok(Code::Ok)
}
