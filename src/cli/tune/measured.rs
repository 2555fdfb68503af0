//! `colltune tune` measured under mpirun: rank 0 checks the CSV, every rank
//! joins the search's measurements (`colltune_mpi::driver`), rank 0 writes
//! the table.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use colltune_algorithms::{Collective, Execution};
use colltune_core::method::RootPolicy;
use colltune_core::record::Writer;
use colltune_core::table::{self, build::build_with, Provenance, Sweep};
use colltune_core::tune::resume::{read_for_resume, TuneConfig};
use colltune_core::tune::{search_all, Settings};
use colltune_core::units::hms;
use colltune_mpi::bench::{llc_bytes, provenance};
use colltune_mpi::driver::MpiOracle;
use colltune_mpi::transport::mpi::{Comm, Control};

use super::{library, Args};
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
    // A further launch: the open points of the earlier launches (rank 0
    // reads them; the others only serve its measurements).
    let mut sizes = sizes;
    let focus = if args.focus.is_empty() {
        None
    } else {
        let f = if lead {
            match focus_of(&args.focus, &prov, args, &comm_sizes, &sizes) {
                Ok(f) => Some(f),
                Err(e) => {
                    eprintln!("colltune: error: {e}");
                    None
                }
            }
        } else {
            None
        };
        // 0: refused (said why), 1: measure, 2: nothing is open.
        let go = match &f {
            Some(f) if f.is_empty() => 2,
            Some(_) => 1,
            None => u64::from(!lead),
        };
        match world.bcast(go, 0)? {
            0 => {
                world.barrier()?;
                return Ok(Code::Usage);
            }
            2 => {
                if lead {
                    outln!(
                    "colltune tune: nothing is open in {} earlier launch(es) ({} point(s) of other communicator sizes): no further launch needed; nothing written",
                    args.focus.len(),
                        f.as_ref().map_or(0, |f| f.elsewhere)
                    );
                }
                return Ok(Code::Ok);
            }
            _ => {}
        }
        if let Some(f) = &f {
            sizes = f.sizes();
            outln!(
                "colltune tune: a further launch at {} open point(s) of {} earlier launch(es), sizes {}{}",
                f.len(),
                args.focus.len(),
                sizes.iter().map(u64::to_string).collect::<Vec<_>>().join(","),
                if f.elsewhere > 0 {
                    format!(
                        " ({} open point(s) of communicator sizes this tune does not measure left as they are)",
                        f.elsewhere
                    )
                } else {
                    String::new()
                }
            );
        }
        f
    };
    let config = TuneConfig {
        colltune: env!("CARGO_PKG_VERSION").into(),
        mpi: prov.mpi.clone(),
        world_ranks: world.size() as u32,
        comm_sizes: comm_sizes.clone(),
        collectives: collectives.iter().map(|c| c.to_string()).collect(),
        sizes: sizes.clone(),
        executions: executions.iter().map(|e| e.to_string()).collect(),
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
    let campaign = search_all(
        &mut oracle,
        &settings,
        &on,
        &collectives,
        &executions,
        args.pairing.name(),
    )?;
    oracle.finish()?;
    let seconds = started.elapsed().as_secs_f64();

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
                sizes: sizes.clone(),
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
    super::record_further(&mut table, &campaign);
    table.save(&table_path)?;
    // A marker batch jobs check to decide whether to run again.
    let marker = TuneConfig::incomplete_marker(&csv);
    if campaign.cut_short {
        std::fs::write(
            &marker,
            "the sweep stopped early (budget or SIGTERM): run again with --resume to finish it\n",
        )?;
    } else {
        let _ = std::fs::remove_file(&marker);
    }
    out!("{}", table::summary(&table));
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

/// The open points of the earlier launches `csv` (`tune --focus`), which
/// must come from this library, host and call pattern.
fn focus_of(
    csv: &[PathBuf],
    prov: &colltune_core::method::Origin,
    args: &Args,
    comm_sizes: &[u32],
    grid: &[u64],
) -> Result<colltune_core::tune::focus::Focus, String> {
    let pattern = args.timing.pattern.to_string();
    let mut launches = Vec::new();
    for p in csv {
        let (got, _) =
            colltune_core::record::read_launch(p).map_err(|e| format!("--focus: {e}"))?;
        // (Not the host: a batch job's later launch may land on other
        // nodes of the same cluster.)
        if let Some(s) = got.iter().find(|s| s.mpi != prov.mpi) {
            return Err(format!(
                "--focus: {} was measured with {}, this launch runs {}: a further launch continues a tune of this library",
                p.display(),
                s.mpi,
                prov.mpi
            ));
        }
        if let Some(s) = got.iter().find(|s| s.pattern != pattern) {
            return Err(format!(
                "--focus: {} holds samples of the {} call pattern, this launch measures {pattern}: give the same --pattern",
                p.display(),
                s.pattern
            ));
        }
        launches.push(got);
    }
    let per: Vec<&[colltune_core::record::Sample]> = launches.iter().map(Vec::as_slice).collect();
    Ok(colltune_core::tune::focus::Focus::from_launches(
        &per,
        args.min_gain,
        comm_sizes,
        grid,
    ))
}
