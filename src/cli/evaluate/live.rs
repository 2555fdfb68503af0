//! `colltune evaluate TABLE` under mpirun: the quality of a table's
//! choices, measured. At each size (by default off the tuning grid) every
//! candidate of the tuning space, the table's choice and the MPI library's
//! own broadcast are measured in one run; regret = the choice's median /
//! the best median measured there.

use std::time::Duration;

use anyhow::Context;
use colltune_algorithms::{resolve, Collective, Execution, Variant};

use super::Args;
use crate::cli::measure::measure_runs;
use crate::cli::{init_mpi, parse_sizes, Code, UsageError};
use crate::progress::Reporter;
use colltune_core::measure::method::{Method, RootPolicy, Subject};
use colltune_core::measure::record::Writer;
use colltune_core::measure::report::{series, SeriesKey};
use colltune_core::measure::stats::geomean;
use colltune_core::tables::table::{self, CommKey};
use colltune_core::tune::{candidates, segment_grid, Candidate, SpaceOptions};
use colltune_mpi::bench::{provenance, Measurer, Point, Skips};
use colltune_mpi::transport::mpi::Comm;

/// Measured under mpirun.
pub fn run(args: Args) -> anyhow::Result<Code> {
    let sizes = parse_sizes(&args.sizes)?;
    let table = table::load(&args.table).map_err(|e| UsageError(e.to_string()))?;
    let _u = init_mpi()?;
    let comm = Comm::world().context("setting up MPI_COMM_WORLD")?;
    let lead = comm.rank() == 0;
    let n = comm.nodes();
    // Its placement: the table's entry for it is judged.
    let key = CommKey {
        placement: comm.shape().placement().placement(),
        ..CommKey::shape(comm.size() as u32, n.max_ppn() as u32, n.num_nodes() as u32)
    };
    let placed = colltune_core::model::placed::Detected::of(key.placement);
    let prov = provenance(&comm)?;
    let mut m = Measurer::new(
        &comm,
        Method {
            budget: Duration::from_millis(args.budget_ms),
            root: RootPolicy::Rotate,
            ..Method::default()
        },
        prov,
    );
    let colls: Vec<Collective> = if args.collective.is_empty() {
        Collective::ALL.to_vec()
    } else {
        args.collective.clone()
    };
    let mut writer = match (&args.csv, lead) {
        (Some(p), true) => Some(Writer::open(p, false)?),
        _ => None,
    };
    let mut samples = Vec::new();
    let mut skips = Skips::default();
    let mut progress = Reporter::new(0, lead, "points");
    let mut choices: Vec<(Collective, u64, String)> = Vec::new();
    for &c in &colls {
        if table.placed_rules(c, key, &placed).is_none() {
            if lead && !args.collective.is_empty() {
                eprintln!(
                    "colltune evaluate: {} has no {c} rules for {key}",
                    args.table.display()
                );
            }
            continue;
        }
        let opts = SpaceOptions {
            executions: Execution::ALL.to_vec(),
            pairing: "neighbors".into(),
            multi_node: n.num_nodes() > 1,
        };
        for &bytes in &sizes {
            let (subjects, label) = subjects_at(&args, &table, (c, key, &placed), bytes, &opts)?;
            choices.push((c, bytes, label));
            let points: Vec<Point> = subjects
                .iter()
                .map(|subject| Point {
                    subject,
                    bytes,
                    iterations: 1,
                    overlap_us: 0.0,
                })
                .collect();
            samples.extend(measure_runs(
                &mut m,
                &points,
                args.runs,
                writer.as_mut(),
                &mut progress,
                "evaluate",
                &mut skips,
            )?);
        }
    }
    progress.finish();
    if !lead {
        return Ok(Code::Ok);
    }
    print_regret(&samples, &choices);
    Ok(Code::Ok)
}

/// What is measured at one size: every candidate of the tuning space
/// (with `--segments` each segmented one at every segment size of the
/// grid), the table's choice, and for a broadcast the library's own; and
/// the choice's label.
fn subjects_at(
    args: &Args,
    table: &table::Table,
    (c, key, placed): (Collective, CommKey, &colltune_core::model::placed::Detected),
    bytes: u64,
    opts: &SpaceOptions,
) -> anyhow::Result<(Vec<Subject>, String)> {
    let rule = table
        .lookup_placed(c, key, placed, bytes)
        .expect("validated tables cover every size");
    let spec = resolve(c, &rule.spec().map_err(|e| UsageError(e.to_string()))?)
        .map_err(|e| UsageError(e.to_string()))?;
    let choice = Candidate(Variant {
        collective: c,
        spec,
        exec: rule.execution().map_err(UsageError)?,
    });
    let mut set = candidates(c, opts);
    if args.segments {
        for cand in set.clone() {
            if cand.segment().is_some() {
                set.extend(
                    segment_grid(bytes)
                        .into_iter()
                        .map(|g| cand.with_segment(g)),
                );
            }
        }
    }
    if !set.contains(&choice) {
        set.push(choice.clone());
    }
    let mut subjects: Vec<Subject> = set.into_iter().map(|x| Subject::Ours(x.0)).collect();
    if c == Collective::Bcast {
        subjects.push(Subject::Library);
    }
    Ok((subjects, choice.label()))
}

/// The table's choice at each size against the best measured there
/// (regret) and against the library's own broadcast, with their
/// geometric means.
fn print_regret(
    samples: &[colltune_core::measure::record::Sample],
    choices: &[(Collective, u64, String)],
) {
    let all = series(samples);
    let mut regrets = Vec::new();
    let mut vs_mpi = Vec::new();
    outln!(
        "{:<6} {:>10}  {:<46} {:>10} {:<46} {:>10} {:>8} {:>10} {:>8}",
        "coll",
        "bytes",
        "table's choice",
        "t_med",
        "best measured",
        "t_med",
        "regret",
        "mpi",
        "ours/mpi"
    );
    for (c, bytes, label) in choices {
        let at = |k: &SeriesKey| all.get(k).and_then(|p| p.get(bytes)).map(|s| s.median);
        let mine: Vec<(&SeriesKey, f64)> = all
            .keys()
            .filter(|k| k.collective == c.name())
            .filter_map(|k| at(k).map(|t| (k, t)))
            .collect();
        let Some(choice) = mine.iter().find(|(k, _)| k.label() == *label) else {
            continue;
        };
        let best = mine
            .iter()
            .filter(|(k, _)| !k.is_library())
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .expect("choice measured");
        let regret = choice.1 / best.1;
        regrets.push(regret);
        let mpi = mine.iter().find(|(k, _)| k.is_native()).map(|x| x.1);
        if let Some(mp) = mpi {
            vs_mpi.push((choice.1 / mp, *bytes));
        }
        outln!(
            "{:<6} {:>10}  {:<46} {:>10.2} {:<46} {:>10.2} {:>7.3}x {:>10} {:>8}",
            c.name(),
            bytes,
            label,
            choice.1,
            best.0.label(),
            best.1,
            regret,
            mpi.map(|x| format!("{x:.2}")).unwrap_or_else(|| "-".into()),
            mpi.map(|x| format!("{:.2}x", choice.1 / x))
                .unwrap_or_else(|| "-".into())
        );
    }
    if !regrets.is_empty() {
        outln!("regret (table's choice / best measured): geometric mean {:.3}x, worst {:.3}x over {} points",
            geomean(&regrets), regrets.iter().copied().fold(0.0, f64::max), regrets.len());
    }
    if !vs_mpi.is_empty() {
        let worst = vs_mpi
            .iter()
            .copied()
            .fold((0.0, 0), |a, b| if b.0 > a.0 { b } else { a });
        outln!("table's choice / MPI library default (bcast): geometric mean {:.3}x, worst {:.2}x at {} B",
            geomean(&vs_mpi.iter().map(|x| x.0).collect::<Vec<_>>()), worst.0, worst.1);
    }
}
