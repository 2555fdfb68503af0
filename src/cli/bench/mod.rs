//! `colltune bench` (under mpirun): IMB-grade timing of every algorithm and
//! of the MPI library's own broadcast, raw samples to CSV.

use std::path::PathBuf;

use anyhow::Context;
use colltune_algorithms::Collective;

use super::args::{Selected, Selection, Timing};
use super::measure::{measure_runs, skipped_lines};
use super::{init_mpi, Code, UsageError};
use crate::progress::Reporter;
use colltune_core::libraries::mpich::check_label;
use colltune_core::measure::method::{expand, Pattern, RootPolicy, Subject, SyncMode};
use colltune_core::measure::record::Writer;
use colltune_core::measure::report::{comparison, imb_tables, series, spread_overall};
use colltune_mpi::bench::{llc_bytes, provenance, Measurer, Point, Skips, MAX_BYTES};
use colltune_mpi::transport::mpi::Comm;

mod baselines;
mod wanted;
use wanted::{Baseline, Wanted};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    sel: Selection,
    /// Independent runs, interleaved.
    #[arg(long, default_value_t = 3)]
    runs: u32,
    #[command(flatten)]
    timing: Timing,
    /// Untimed calls before each point.
    #[arg(long, default_value_t = 2)]
    warmup: u32,
    /// Calls per repetition (swap study: 1 and k).
    #[arg(long, value_delimiter = ',', default_value = "1")]
    iterations: Vec<u32>,
    /// Computation between starting and waiting for each call, microseconds.
    #[arg(long, value_delimiter = ',', default_value = "0")]
    overlap_us: Vec<f64>,
    /// Baselines: `mpi` (the library's own MPI_Bcast), `ompi-tuned` (each
    /// Open MPI coll/tuned algorithm forced), `ompi-adapt` (each Open MPI
    /// coll/adapt algorithm, adapt selected and its algorithm written
    /// through MPI_T: Open MPI 5.0), `ompi-han` (each Open MPI 5.0
    /// coll/han broadcast, han selected and coll_han_use_bcast_algorithm
    /// written through MPI_T: across nodes only), `mpich-algorithms` (each
    /// algorithm MPICH's MPIR_CVAR_BCAST_INTRA_ALGORITHM offers, forced
    /// through MPI_T), `interposed` (MPI_Bcast through its MPI_ symbol, as
    /// an application calls it: under LD_PRELOAD of colltune's drop-in, the
    /// drop-in itself, beside the forced algorithms in one run;
    /// benches/dropin-bench.sh), `none`. Default: `mpi` and the library's
    /// forced algorithms (ompi-tuned, and ompi-adapt and ompi-han where
    /// MPI_T can force them, on Open MPI; mpich-algorithms on MPICH).
    #[arg(long, value_enum, value_delimiter = ',', ignore_case = true)]
    baseline: Vec<Baseline>,
    /// Record the `mpi` baseline under this spec instead of `mpi`: the
    /// library's MPI_Bcast under an algorithm chosen outside the process,
    /// e.g. `impi:I_MPI_ADJUST_BCAST=3,name=ring` with I_MPI_ADJUST_BCAST=3
    /// set (jobs/library-baselines.sh).
    #[arg(long)]
    baseline_label: Option<String>,
    /// Measure only the baselines, none of colltune's algorithms.
    #[arg(long)]
    baselines_only: bool,
    /// Segment sizes for the forced Open MPI algorithms that segment
    /// (coll/tuned's segmented ones, every coll/adapt one, coll/han's
    /// intra).
    #[arg(long, value_delimiter = ',', default_value = "0", value_parser = colltune_algorithms::parse_size)]
    ompi_segment: Vec<u64>,
    /// Raw samples go here (CSV, streamed as they are taken).
    #[arg(long)]
    csv: Option<PathBuf>,
    /// A short run: sizes 1, 64, 4K, 64K, 1M; 2 runs; 10 ms per point.
    #[arg(long)]
    quick: bool,
    /// Print only the comparison, not the per-algorithm tables.
    #[arg(long)]
    summary_only: bool,
}

pub fn run(mut args: Args) -> anyhow::Result<Code> {
    if args.quick {
        args.sel
            .sizes
            .get_or_insert_with(|| "1,64,4K,64K,1M".into());
        args.runs = args.runs.min(2);
        args.timing.budget_ms = args.timing.budget_ms.min(10);
        args.timing.max_reps = args.timing.max_reps.min(200);
    }
    // Everything the user asked for is checked before MPI starts.
    let Selected {
        sizes,
        per_coll,
        sweeps,
        execs,
    } = args.sel.resolve()?;
    let (root, want) = check(&args, &sizes)?;
    let has_bcast = per_coll.iter().any(|(c, _)| *c == Collective::Bcast);
    if want.tuned && has_bcast {
        // Open MPI reads this when MPI starts; with nothing forced it keeps
        // its fixed decision, so the `mpi` baseline is unchanged.
        std::env::set_var("OMPI_MCA_coll_tuned_use_dynamic_rules", "1");
    }

    let _universe = init_mpi()?;
    let comm = Comm::world().context("setting up MPI_COMM_WORLD")?;
    let lead = comm.rank() == 0;
    let prov = provenance(&comm)?;
    let multi_node = comm.nodes().num_nodes() > 1;

    let mut subjects: Vec<Subject> = Vec::new();
    for (c, specs) in &per_coll {
        if !args.baselines_only {
            subjects.extend(
                expand(*c, specs, &sweeps, &execs, multi_node)
                    .map_err(|e| UsageError(e.to_string()))?,
            );
        }
        if *c == Collective::Bcast {
            subjects.extend(baselines::subjects(&args, &want, &comm, &prov)?);
        }
    }
    if subjects.is_empty() {
        return Err(UsageError(
            "nothing to measure: --baselines-only with no baseline for these collectives".into(),
        )
        .into());
    }

    let method = args.timing.method(root, args.warmup, llc_bytes());
    let mut writer = match (&args.csv, lead) {
        (Some(p), true) => Some(Writer::open(p, false)?),
        _ => None,
    };
    let mut points = Vec::new();
    for s in &subjects {
        for &bytes in &sizes {
            for &iterations in &args.iterations {
                for &overlap_us in &args.overlap_us {
                    points.push(Point {
                        subject: s,
                        bytes,
                        iterations,
                        overlap_us,
                    });
                }
            }
        }
    }
    // Interleave subjects within each size so drifts hit all alike.
    points.sort_by_key(|p| p.bytes);
    if lead {
        outln!(
            "colltune bench: {} ranks (nodes {}), {}, {} subjects x {} sizes x {} runs = {} points; root {:?}; cache {}; start {}; pattern {}; budget {} ms/point",
            comm.size(),
            comm.nodes(),
            prov.mpi,
            subjects.len(),
            sizes.len(),
            args.runs,
            points.len() as u64 * u64::from(args.runs),
            root,
            args.timing.cache,
            match args.timing.sync {
                SyncMode::Barrier => "after a barrier",
                SyncMode::Window => "at synchronised instants",
            },
            args.timing.pattern,
            args.timing.budget_ms
        );
    }
    let mut progress = Reporter::new(points.len() as u64 * u64::from(args.runs), lead, "points");
    let mut measurer = Measurer::new(&comm, method, prov);
    let mut skips = Skips::default();
    let samples = measure_runs(
        &mut measurer,
        &points,
        args.runs,
        writer.as_mut(),
        &mut progress,
        "bench",
        &mut skips,
    )?;
    progress.finish();
    if lead {
        let all = series(&samples);
        if !args.summary_only {
            out!("{}", imb_tables(&all));
        }
        out!("{}", comparison(&all));
        if let Some((med, max)) = spread_overall(&all) {
            outln!(
                "run-to-run spread (largest/smallest run median per point): median {med:.2}x, worst {max:.2}x"
            );
        }
        for line in skipped_lines(&skips) {
            outln!("{line}");
        }
        if let Some(w) = &writer {
            outln!("raw samples: {}", w.path().display());
        }
    }
    Ok(Code::Ok)
}

/// Refuses what cannot be measured as asked (before MPI starts): the
/// root policy and the baselines wanted.
fn check(args: &Args, sizes: &[u64]) -> anyhow::Result<(RootPolicy, Wanted)> {
    if let Some(&b) = sizes.iter().find(|&&b| b > MAX_BYTES) {
        return Err(UsageError(format!(
            "--sizes: {b} bytes is more than one MPI message can carry ({MAX_BYTES})"
        ))
        .into());
    }
    if args.runs == 0 {
        return Err(UsageError("--runs must be at least 1".into()).into());
    }
    let root = args.timing.check()?;
    if args.iterations.contains(&0) || args.overlap_us.iter().any(|o| !o.is_finite() || *o < 0.0) {
        return Err(UsageError(
            "--iterations must be at least 1 and --overlap-us at least 0".into(),
        )
        .into());
    }
    if args.timing.pattern == Pattern::BackToBack && args.iterations != [1] {
        return Err(UsageError(
            "--iterations with --pattern back-to-back: that pattern sizes its blocks of calls itself; drop --iterations".into(),
        )
        .into());
    }
    let want = Wanted::of(&args.baseline);
    if let Some(l) = &args.baseline_label {
        check_label(l).map_err(|e| UsageError(format!("--baseline-label {e}")))?;
        if !want.mpi {
            return Err(UsageError(
                "--baseline-label names the `mpi` baseline: add --baseline mpi".into(),
            )
            .into());
        }
    }
    Ok((root, want))
}
