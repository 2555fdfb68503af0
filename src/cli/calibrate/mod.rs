//! `colltune calibrate` (under mpirun, on the cluster to model): measures
//! ping-pong between two ranks of one node and between two nodes, the
//! overhead of a send and a receive call, the message gap of a stream, and
//! one core's copy bandwidth ([`colltune_mpi::calibrate`]); fits the
//! simulator's link parameters ([`colltune_core::model::calibrate`]) and writes
//! MODEL.yaml with the fit's errors in its `source`, and every measured run
//! to CSV.

use std::io::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;

mod collectives;
mod model;
mod report;

use super::{init_mpi, parse_sizes, Code, UsageError};
use colltune_core::measure::fit::human_bytes;
use colltune_core::model::calibrate::{fit_link, Protocol};
use colltune_core::model::sim::Model;
use colltune_mpi::calibrate::STREAM_MIN_BYTES;
use colltune_mpi::calibrate::{copy_bandwidth, measure_link, Pair, Pairs};
use colltune_mpi::transport::mpi::{processor_name, Comm, Control};
use report::Measured;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The model to write (YAML).
    #[arg(long, short, visible_alias = "output")]
    out: PathBuf,
    /// The model's name (default: calibrated-<host of rank 0>).
    #[arg(long)]
    name: Option<String>,
    /// Ping-pong message sizes.
    #[arg(long, default_value = "1..4M")]
    sizes: String,
    /// Timed runs per size; the median run counts, the spread is reported.
    #[arg(long, default_value_t = 7)]
    runs: u32,
    /// Time per size and link, milliseconds (split over the runs).
    #[arg(long, default_value_t = 150)]
    budget_ms: u64,
    /// Take the links this job cannot measure (no two ranks on one node, or
    /// only one node) from this model instead of failing; with
    /// --collectives, the model the fit starts from.
    #[arg(long)]
    base: Option<PathBuf>,
    /// Every measured run (link, what, bytes, run, iterations, microseconds).
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Open MPI's ob1 protocol limits of a link, `inter=EAGER/FIRST` or
    /// `intra=EAGER/FIRST`: the transport's `btl_*_eager_limit` and
    /// `btl_*_rndv_eager_limit` (`ompi_info --param btl tcp --level 9`;
    /// vader inside a node). Messages up to EAGER less ob1's 16-byte header
    /// are eager; a larger one carries FIRST less its 32-byte header with
    /// its request, the rest after the answer. Without it, the eager limit
    /// is fitted and a rendezvous sends everything after the answer.
    #[arg(long = "ob1", value_name = "LINK=EAGER/FIRST")]
    ob1: Vec<String>,
    /// Fit the model to published point-to-point results instead of
    /// measuring (no MPI): one link per level of distance they measure.
    #[command(flatten)]
    p2p: super::p2p::P2pArgs,
    /// The machine, for --p2p and --collectives: node:2,socket:2,cache:16,core:4.
    #[arg(long)]
    layout: Option<String>,
    /// Fit the model to measured broadcasts instead (no MPI): osu_bcast /
    /// IMB output, pico's per-call files (a folder or an archive), the
    /// plain broadcast CSV or colltune's CSV; starts from --p2p's model,
    /// --base, or generic figures.
    #[arg(long, num_args = 1..)]
    collectives: Vec<PathBuf>,
    /// For --collectives: how ranks were placed where a file does not say
    /// (core, socket or node).
    #[arg(long)]
    mapping: Option<String>,
    /// For --collectives: the job's allocation, as `predict --alloc`
    /// takes it (pico's alloc.csv, a Slurm node list, or a file holding
    /// one); its nodes and groups replace --layout's (docs/model-tables.md).
    #[arg(long)]
    alloc: Option<String>,
    /// With --alloc: how a node's name says its group (nodes:N, field:K,
    /// topology:FILE, one), as `predict --group-by`.
    #[arg(long)]
    group_by: Option<String>,
    /// For --collectives: column map (as import's --columns).
    #[arg(long)]
    columns: Option<String>,
    /// For --collectives: label map (as import's --labels).
    #[arg(long)]
    labels: Option<String>,
    /// For --collectives: hold every fitted figure out against the fit's
    /// points it was not fitted on (5 folds; ~5x the fit's time): a figure
    /// that predicts them no better goes back to the start's, the rest are
    /// shrunk toward it as far as those points say.
    #[arg(long)]
    cross_validate: bool,
}

/// ob1's match header (eager messages) and rendezvous header, bytes.
const OB1_MATCH_HDR: u64 = 16;
const OB1_RNDV_HDR: u64 = 32;

/// `--ob1 inter=65536/65536`: (link, protocol).
fn parse_ob1(s: &str) -> Result<(String, Protocol), UsageError> {
    let bad = || {
        UsageError(format!(
            "--ob1 `{s}`: write LINK=EAGER/FIRST with LINK intra or inter, e.g. inter=64K/64K"
        ))
    };
    let (link, limits) = s.split_once('=').ok_or_else(bad)?;
    let (eager, first) = limits.split_once('/').ok_or_else(bad)?;
    let size = |v: &str| colltune_algorithms::parse_size(v.trim()).map_err(|_| bad());
    let (eager, first) = (size(eager)?, size(first)?);
    if !matches!(link, "intra" | "inter") || eager <= OB1_MATCH_HDR || first < OB1_RNDV_HDR {
        return Err(bad());
    }
    Ok((
        link.to_string(),
        Protocol {
            eager_limit: eager - OB1_MATCH_HDR,
            first_bytes: first - OB1_RNDV_HDR,
        },
    ))
}

pub fn run(a: Args) -> anyhow::Result<Code> {
    if !a.collectives.is_empty() {
        return collectives::run(collectives::Inputs {
            files: &a.collectives,
            layout: a.layout.as_deref(),
            mapping: a.mapping.as_deref(),
            alloc: a.alloc.as_deref(),
            group_by: a.group_by.as_deref(),
            columns: a.columns.as_deref(),
            labels: a.labels.as_deref(),
            base: a.base.as_deref(),
            p2p: &a.p2p,
            name: a.name.as_deref(),
            out: &a.out,
            cross_validate: a.cross_validate,
        });
    }
    if !a.p2p.p2p.is_empty() {
        return super::p2p::calibrate(&a.p2p, a.layout.as_deref(), a.name.as_deref(), &a.out);
    }
    let sizes = parse_sizes(&a.sizes)?;
    let ob1 = a
        .ob1
        .iter()
        .map(|s| parse_ob1(s))
        .collect::<Result<Vec<_>, _>>()?;
    let known = |what: &str| ob1.iter().rev().find(|(l, _)| l == what).map(|(_, p)| *p);
    if a.runs == 0 {
        return Err(UsageError("--runs must be at least 1".into()).into());
    }
    let base = match &a.base {
        Some(p) => Some(Model::load(p).map_err(|e| UsageError(e.to_string()))?),
        None => None,
    };
    let _u = init_mpi()?;
    let comm = Comm::world().context("setting up MPI_COMM_WORLD")?;
    let lead = comm.rank() == 0;
    let nodes = comm.nodes().clone();
    if comm.size() < 2 {
        return Err(UsageError(
            "calibrate needs two ranks or more: run it under mpirun with ranks on two nodes \
             (and two on one node), e.g. mpirun -np 4 --map-by ppr:2:node"
                .into(),
        )
        .into());
    }
    let pairs = Pairs::of(&comm);
    let links = [("intra", pairs.intra), ("inter", pairs.inter)];
    for (what, pair) in links {
        if pair.is_none() && base.is_none() {
            // Every rank sees the same layout; rank 0 says why, and the
            // others wait for that (mpirun ends the job at the first
            // non-zero exit, which could cut the message off).
            if lead {
                let (on, fix) = match what {
                    "intra" => (
                        "on one node",
                        "place two ranks on one node (--map-by ppr:2:node)",
                    ),
                    _ => ("on different nodes", "run on two nodes or more"),
                };
                eprintln!(
                    "colltune: error: no two ranks of this job are {on}: cannot measure the {what} \
                     link ({nodes}); {fix}, or give --base MODEL.yaml to take it from there"
                );
            }
            comm.barrier()?;
            return Ok(Code::Usage);
        }
    }
    let host = processor_name();
    let t0 = Instant::now();
    let mut measured: Vec<Option<Measured>> = Vec::new();
    for (what, pair) in links {
        let Some(pair) = pair else {
            measured.push(None);
            continue;
        };
        if lead {
            outln!(
                "measuring {what}-node link: ranks {} and {} ({} sizes)...",
                pair.leader,
                pair.follower,
                sizes.len()
            );
            let _ = std::io::stdout().flush();
        }
        measured.push(Some(measure_one(
            &comm,
            what,
            pair,
            &sizes,
            &a,
            known(what),
        )?));
    }
    let copy_gbs = copy_bandwidth();
    comm.barrier()?;
    if !lead {
        return Ok(Code::Ok);
    }
    let model = model::model_of(
        &a,
        (&host, comm.size(), &nodes),
        &sizes,
        &measured,
        base.as_ref(),
        copy_gbs,
    );
    model
        .check()
        .map_err(|e| anyhow::anyhow!("the fitted model is not valid: {e}"))?;
    // Measured before written: the CSV first, so nothing is lost if the
    // model cannot be written.
    if let Some(p) = &a.csv {
        report::write_raw(p, &measured)?;
        outln!("raw runs: {}", p.display());
    }
    for m in measured.iter().flatten() {
        report::print_link(m);
    }
    outln!("copy bandwidth (one core): {copy_gbs:.2} GB/s");
    std::fs::write(&a.out, model.to_yaml())
        .with_context(|| format!("writing the model to {}", a.out.display()))?;
    outln!(
        "\nmodel {} written to {} in {:.1} s",
        model.name,
        a.out.display(),
        t0.elapsed().as_secs_f64()
    );
    Ok(Code::Ok)
}

/// Measures the link between `pair`'s ranks (every rank joins) and fits
/// it: a token bucket allowed only between nodes (shaped ports).
fn measure_one(
    comm: &Comm,
    what: &'static str,
    pair: Pair,
    sizes: &[u64],
    a: &Args,
    known: Option<Protocol>,
) -> anyhow::Result<Measured> {
    let data = measure_link(comm, pair, sizes, a.runs, a.budget_ms)
        .with_context(|| format!("measuring the {what} link"))?;
    let fit = |stream, bucket| {
        fit_link(
            &data.points,
            data.overhead_us,
            data.gap_us,
            stream,
            bucket,
            known,
        )
        .map_err(|e| anyhow::anyhow!("fitting the {what} link: {e}"))
    };
    // Only links between nodes may be token buckets (shaped ports).
    let (fit, free) = (
        fit(data.stream_per_byte, what == "inter")?,
        fit(None, false)?,
    );
    let note = match data.stream_per_byte {
        Some(_) => format!(
            "  rendezvous bandwidth from a stream of back-to-back {} messages: {:.3} GB/s \
             (the ping-pong alone fits {:.3} GB/s to every size)",
            human_bytes(*sizes.last().expect("sizes")),
            fit.link.bandwidth_gbs,
            free.link.bandwidth_gbs
        ),
        None => format!(
            "  bandwidth from the ping-pong (sizes below {} measure no stream)",
            human_bytes(STREAM_MIN_BYTES)
        ),
    };
    Ok(Measured {
        what,
        pair,
        data,
        fit,
        note,
    })
}
