//! `colltune bench` (under mpirun): IMB-grade timing of every algorithm and
//! of the MPI library's own broadcast, raw samples to CSV.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use colltune_algorithms::Collective;

use super::args::{parse_root, Selected, Selection};
use super::{init_mpi, Code, UsageError};
use crate::progress::Reporter;
use colltune_core::method::{expand, CacheMode, Method, Pattern, Subject};
use colltune_core::mpich::check_label;
use colltune_core::ompi::{adapt, han, is_open_mpi, TUNED_BCAST};
use colltune_core::record::Writer;
use colltune_core::report::{comparison, imb_tables, series, spread_overall};
use colltune_mpi::bench::adapt::bcast_algorithms as adapt_algorithms;
use colltune_mpi::bench::han::{bcast_algorithms as han_algorithms, HanUnavailable};
use colltune_mpi::bench::mpich::{bcast_algorithms, fallback_error_value};
use colltune_mpi::bench::{llc_bytes, provenance, Measurer, Point, MAX_BYTES};
use colltune_mpi::transport::mpi::Comm;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    sel: Selection,
    /// Independent runs, interleaved.
    #[arg(long, default_value_t = 3)]
    runs: u32,
    /// Time budget per point and run, in milliseconds.
    #[arg(long, default_value_t = 50)]
    budget_ms: u64,
    /// Fewest repetitions per point and run.
    #[arg(long, default_value_t = 5)]
    min_reps: u32,
    /// Most repetitions per point and run.
    #[arg(long, default_value_t = 300)]
    max_reps: u32,
    /// Untimed calls before each point.
    #[arg(long, default_value_t = 2)]
    warmup: u32,
    /// Root: `rotate` (repetition i uses root i mod p; IMB-MPI1 before 2019) or a rank (IMB 2019 and later and OSU keep root 0).
    #[arg(long, default_value = "rotate")]
    root: String,
    /// Cache: `warm` (one buffer) or `off` (buffers rotated over twice the
    /// last-level cache).
    #[arg(long, default_value = "warm")]
    cache: String,
    /// How the ranks of a repetition start together: `barrier` (each after
    /// MPI_Barrier, timing from leaving it: IMB, OSU) or `window` (clocks
    /// synchronised to rank 0's, one agreed start instant per repetition:
    /// SKaMPI, ReproMPI; what `simulate` predicts).
    #[arg(long, default_value = "barrier")]
    sync: colltune_core::method::SyncMode,
    /// Call pattern: `synchronized` (each repetition one call, the ranks
    /// started together, the slowest rank's time: when the data is
    /// everywhere; what an application between computation phases pays),
    /// `back-to-back` (each repetition a block of calls in a row with the
    /// root rotating per call, timed as a block on each rank, the slowest
    /// rank's time per call: throughput) or `imb` (a barrier before each
    /// call, each rank timing its own call, the mean over ranks: exactly
    /// what IMB-MPI1 reports as t_avg and OSU as its average latency; use
    /// `--root 0` for their default fixed root).
    #[arg(long, default_value = "synchronized")]
    pattern: colltune_core::method::Pattern,
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
    #[arg(long, value_delimiter = ',')]
    baseline: Vec<String>,
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
    #[arg(long, value_delimiter = ',', default_value = "0", value_parser = parse_bytes)]
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

fn parse_bytes(s: &str) -> Result<u64, String> {
    colltune_algorithms::parse_size(s)
}

pub fn run(mut args: Args) -> anyhow::Result<Code> {
    if args.quick {
        args.sel
            .sizes
            .get_or_insert_with(|| "1,64,4K,64K,1M".into());
        args.runs = args.runs.min(2);
        args.budget_ms = args.budget_ms.min(10);
        args.max_reps = args.max_reps.min(200);
    }
    // Everything the user asked for is checked before MPI starts.
    let Selected {
        sizes,
        per_coll,
        sweeps,
        execs,
    } = args.sel.resolve()?;
    if let Some(&b) = sizes.iter().find(|&&b| b > MAX_BYTES) {
        return Err(UsageError(format!(
            "--sizes: {b} bytes is more than one MPI message can carry ({MAX_BYTES})"
        ))
        .into());
    }
    if args.runs == 0 || args.min_reps == 0 || args.max_reps < args.min_reps {
        return Err(UsageError(
            "--runs and --min-reps must be at least 1, --max-reps at least --min-reps".into(),
        )
        .into());
    }
    if args.iterations.contains(&0) || args.overlap_us.iter().any(|o| !o.is_finite() || *o < 0.0) {
        return Err(UsageError(
            "--iterations must be at least 1 and --overlap-us at least 0".into(),
        )
        .into());
    }
    if args.pattern == Pattern::Imb && args.sync != colltune_core::method::SyncMode::Barrier {
        return Err(UsageError(
            "--pattern imb with --sync window: IMB and OSU time each rank's call after a barrier; use --sync barrier".into(),
        )
        .into());
    }
    if args.pattern == Pattern::BackToBack && args.iterations != [1] {
        return Err(UsageError(
            "--iterations with --pattern back-to-back: that pattern sizes its blocks of calls itself; drop --iterations".into(),
        )
        .into());
    }
    let root = parse_root(&args.root)?;
    let cache = match args.cache.as_str() {
        "warm" => CacheMode::Warm,
        "off" => CacheMode::Off(2 * llc_bytes()),
        c => return Err(UsageError(format!("--cache `{c}`: use warm or off")).into()),
    };
    let baselines: Vec<String> = args
        .baseline
        .iter()
        .map(|b| b.to_ascii_lowercase())
        .collect();
    for b in &baselines {
        if ![
            "mpi",
            "ompi-tuned",
            "ompi-adapt",
            "ompi-han",
            "mpich-algorithms",
            "interposed",
            "none",
        ]
        .contains(&b.as_str())
        {
            return Err(UsageError(format!(
                "--baseline `{b}`: use mpi, ompi-tuned, ompi-adapt, ompi-han, mpich-algorithms, interposed or none"
            ))
            .into());
        }
    }
    let want_tuned = baselines.is_empty() || baselines.iter().any(|b| b == "ompi-tuned");
    let want_adapt = baselines.is_empty() || baselines.iter().any(|b| b == "ompi-adapt");
    let want_han = baselines.is_empty() || baselines.iter().any(|b| b == "ompi-han");
    let want_mpich = baselines.is_empty() || baselines.iter().any(|b| b == "mpich-algorithms");
    let want_mpi = baselines.is_empty() || baselines.iter().any(|b| b == "mpi");
    let want_interposed = baselines.iter().any(|b| b == "interposed");
    if let Some(l) = &args.baseline_label {
        check_label(l).map_err(|e| UsageError(format!("--baseline-label {e}")))?;
        if !want_mpi {
            return Err(UsageError(
                "--baseline-label names the `mpi` baseline: add --baseline mpi".into(),
            )
            .into());
        }
    }
    let has_bcast = per_coll.iter().any(|(c, _)| *c == Collective::Bcast);
    if want_tuned && has_bcast {
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
            if want_mpi {
                subjects.push(match &args.baseline_label {
                    Some(label) => Subject::LibraryLabelled {
                        label: label.clone(),
                    },
                    None => Subject::Library,
                });
            }
            if want_interposed {
                subjects.push(Subject::Interposed);
            }
            if want_tuned {
                if is_open_mpi(&prov.mpi) {
                    for t in TUNED_BCAST {
                        let segs: &[u64] = if t.segmented {
                            &args.ompi_segment
                        } else {
                            &[0]
                        };
                        for &segment in segs {
                            subjects.push(Subject::OmpiTuned { tuned: t, segment });
                        }
                    }
                } else if lead && !baselines.is_empty() {
                    eprintln!(
                        "colltune bench: {} is not Open MPI: no coll/tuned baselines",
                        prov.mpi
                    );
                }
            }
            if want_adapt {
                if is_open_mpi(&prov.mpi) {
                    // Every rank reads the same library: all agree.
                    match adapt_algorithms() {
                        Ok(offered) => {
                            let forced = adapt::baselines(&offered);
                            if lead {
                                outln!(
                                    "colltune bench: {} offers coll/adapt broadcasts through MPI_T ({}): {}; forced on a communicator made with {} = {}, the algorithm and {} written per point{}",
                                    prov.mpi,
                                    adapt::ALGORITHM,
                                    offered
                                        .iter()
                                        .map(|c| format!("{} ({})", c.name, c.id))
                                        .collect::<Vec<_>>()
                                        .join(", "),
                                    adapt::PRIORITY,
                                    adapt::FORCE_PRIORITY,
                                    adapt::SEGMENT,
                                    if forced.len() < offered.len() {
                                        format!("; not `{}`, which adapt does not implement", adapt::NOT_IMPLEMENTED)
                                    } else {
                                        String::new()
                                    }
                                );
                            }
                            for choice in forced {
                                for &segment in &args.ompi_segment {
                                    subjects.push(Subject::OmpiAdapt {
                                        choice: choice.clone(),
                                        segment,
                                    });
                                }
                            }
                        }
                        Err(e) => {
                            if lead {
                                eprintln!("colltune bench: no coll/adapt baselines: {e}");
                            }
                        }
                    }
                } else if lead && !baselines.is_empty() {
                    eprintln!(
                        "colltune bench: {} is not Open MPI: no coll/adapt baselines",
                        prov.mpi
                    );
                }
            }
            if want_han {
                if is_open_mpi(&prov.mpi) {
                    // Every rank reads the same library and layout: all agree.
                    match han_algorithms(&comm) {
                        Ok((forced, modules)) => {
                            if lead {
                                outln!(
                                    "colltune bench: {} offers coll/han broadcasts through MPI_T ({}): {}; forced on a communicator made with {} = {}, the algorithm (and for {} {}) written per point; {} = {}, {} = {} as MPI_Init read them (han reads them only there)",
                                    prov.mpi,
                                    han::ALGORITHM,
                                    forced
                                        .iter()
                                        .map(|c| format!("{} ({})", c.name, c.id))
                                        .collect::<Vec<_>>()
                                        .join(", "),
                                    han::PRIORITY,
                                    han::FORCE_PRIORITY,
                                    han::SEGMENTED.join(", "),
                                    han::SEGMENT,
                                    han::UP_MODULE,
                                    modules.up,
                                    han::LOW_MODULE,
                                    modules.low,
                                );
                            }
                            for choice in forced {
                                let segs: &[u64] = if choice.segmented() {
                                    &args.ompi_segment
                                } else {
                                    &[0]
                                };
                                for &segment in segs {
                                    subjects.push(Subject::OmpiHan {
                                        choice: choice.clone(),
                                        segment,
                                        modules: modules.clone(),
                                    });
                                }
                            }
                        }
                        // One node: said on Open MPI 5.0 (where han has the
                        // variable), whatever was asked; the rest only
                        // when asked for.
                        Err(e @ (HanUnavailable::OneNode | HanUnavailable::Imbalanced { .. })) => {
                            if lead {
                                outln!("colltune bench: no coll/han baselines: {e}");
                            }
                        }
                        Err(e) => {
                            if lead && !baselines.is_empty() {
                                eprintln!("colltune bench: no coll/han baselines: {e}");
                            }
                        }
                    }
                } else if lead && !baselines.is_empty() {
                    eprintln!(
                        "colltune bench: {} is not Open MPI: no coll/han baselines",
                        prov.mpi
                    );
                }
            }
            if want_mpich {
                if colltune_mpi::abi::runtime().family == colltune_mpi::abi::Family::Mpich {
                    // Every rank reads the same library: all agree.
                    match bcast_algorithms() {
                        Ok(offered) => {
                            if lead {
                                outln!(
                                    "colltune bench: {} offers {} through MPI_T: {}; set now: {} ({}), put back after each forced point; {}",
                                    prov.mpi,
                                    colltune_core::mpich::BCAST_CVAR,
                                    offered
                                        .all
                                        .iter()
                                        .map(|c| format!("{} ({})", c.name, c.value))
                                        .collect::<Vec<_>>()
                                        .join(", "),
                                    offered.current_name(),
                                    offered.current,
                                    match fallback_error_value() {
                                        Ok(_) => "before timing a point, one call under MPIR_CVAR_COLLECTIVE_FALLBACK=error checks that MPICH can apply it".to_string(),
                                        Err(why) => format!("whether MPICH can apply each one is not checked (MPIR_CVAR_COLLECTIVE_FALLBACK: {why}): where it cannot, it runs its own choice under that name"),
                                    }
                                );
                            }
                            for choice in offered.baselines() {
                                // MPICH's smp is its node-aware broadcast: on
                                // one node it cannot apply it, and MPICH 5.0.2
                                // hangs when its error fallback refuses it there.
                                if choice.name == "smp" && !multi_node {
                                    if lead {
                                        outln!("colltune bench: not forcing MPICH's smp: it needs ranks on several nodes (MPICH runs its own choice instead on one)");
                                    }
                                    continue;
                                }
                                subjects.push(Subject::Mpich { choice });
                            }
                        }
                        Err(e) => {
                            if lead {
                                eprintln!("colltune bench: no MPICH algorithm baselines: {e}");
                            }
                        }
                    }
                } else if lead && !baselines.is_empty() {
                    eprintln!(
                        "colltune bench: {} is not MPICH-derived: no MPICH algorithm baselines",
                        prov.mpi
                    );
                }
            }
        }
    }
    if subjects.is_empty() {
        return Err(UsageError(
            "nothing to measure: --baselines-only with no baseline for these collectives".into(),
        )
        .into());
    }

    let method = Method {
        budget: Duration::from_millis(args.budget_ms),
        min_reps: args.min_reps,
        max_reps: args.max_reps,
        warmup: args.warmup,
        root,
        cache,
        sync: args.sync,
        pattern: args.pattern,
    };
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
            args.cache,
            match args.sync {
                colltune_core::method::SyncMode::Barrier => "after a barrier",
                colltune_core::method::SyncMode::Window => "at synchronised instants",
            },
            args.pattern,
            args.budget_ms
        );
    }
    let mut progress = Reporter::new(points.len() as u64 * u64::from(args.runs), lead, "points");
    let mut measurer = Measurer::new(&comm, method, prov);
    let mut samples = Vec::new();
    let mut unavailable: Vec<String> = Vec::new();
    // Points a forced library algorithm cannot run: (label, sizes, why).
    let mut not_applicable: Vec<(String, Vec<u64>, String)> = Vec::new();
    for run in 1..=args.runs {
        for pt in &points {
            if unavailable.contains(&pt.subject.label()) {
                progress.inc(0);
                continue;
            }
            progress.set_message(format!(
                "run {run}/{} {} {} {} B",
                args.runs,
                pt.subject.collective(),
                pt.subject.label(),
                pt.bytes
            ));
            let got = match measurer.measure(pt, run) {
                Ok(g) => g,
                Err(e) if e.is_not_applicable() => {
                    let label = pt.subject.label();
                    match not_applicable.iter_mut().find(|(l, _, _)| *l == label) {
                        Some((_, sizes, _)) => {
                            if !sizes.contains(&pt.bytes) {
                                sizes.push(pt.bytes)
                            }
                        }
                        None => not_applicable.push((label, vec![pt.bytes], e.to_string())),
                    }
                    progress.inc(0);
                    continue;
                }
                Err(e) if e.is_unavailable() => {
                    if lead {
                        progress.println(&format!(
                            "colltune bench: skipping {}: {e}",
                            pt.subject.label()
                        ));
                    }
                    unavailable.push(pt.subject.label());
                    progress.inc(0);
                    continue;
                }
                Err(e) => {
                    return Err(anyhow::Error::new(e).context(format!(
                        "measuring {} at {} bytes",
                        pt.subject.label(),
                        pt.bytes
                    )))
                }
            };
            if let Some(w) = writer.as_mut() {
                w.write(&got)?;
            }
            samples.extend(got);
            progress.inc(0);
        }
    }
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
        for u in &unavailable {
            outln!("not measured (not available with this MPI and network): {u}");
        }
        for (label, sizes, why) in &not_applicable {
            outln!(
                "not measured where the library cannot apply it (it would run its own choice instead): {label} at {} B; first: {why}",
                sizes
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        if let Some(w) = &writer {
            outln!("raw samples: {}", w.path().display());
        }
    }
    Ok(Code::Ok)
}
