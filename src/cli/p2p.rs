//! Point-to-point results for `calibrate --p2p` and `predict`: reading
//! them (any form `import` reads; `PLACEMENT=FILE` for printed output that
//! does not say what the two ranks share) and fitting the levels' model.

use std::path::{Path, PathBuf};

use super::UsageError;
use colltune_core::measure::import::{self, Options, P2pRow};
use colltune_core::model::levels::{fit_model, LevelsFit};
use colltune_core::model::placement::{Layout, Level};

/// The options the point-to-point files share on the command line.
#[derive(clap::Args, Debug, Clone)]
pub struct P2pArgs {
    /// Point-to-point results: colltune's point-to-point CSV, the plain
    /// `placement,bytes,time_us` CSV, osu_latency / osu_bw / IMB PingPong
    /// output (then PLACEMENT=FILE: cache, numa, socket, node or network),
    /// or any table with --p2p-columns.
    #[arg(long, value_name = "[PLACEMENT=]FILE", num_args = 1..)]
    pub p2p: Vec<String>,
    /// Column map for the point-to-point files (as import's --columns).
    #[arg(long)]
    pub p2p_columns: Option<String>,
    /// Label map for the point-to-point files' placements (as import's
    /// --labels): core=socket,socket=node,node=network.
    #[arg(long)]
    pub p2p_labels: Option<String>,
    /// What all shared-memory copies into one socket move together, GB/s
    /// (e.g. from a multi-pair bandwidth test); default: the fastest
    /// single-pair copy.
    #[arg(long)]
    pub memory_copy_gbs: Option<f64>,
    /// Inside a node, the reads of one sender's buffer in progress at once
    /// share its rate (k started together each end k reads later) instead
    /// of queueing on it: the model's `shared_reads` (off by default; see
    /// docs/real-clusters.md).
    #[arg(long)]
    pub shared_reads: bool,
}

fn usage<E: std::fmt::Display>(e: E) -> anyhow::Error {
    UsageError(e.to_string()).into()
}

/// Reads every point-to-point file; warnings go to standard error.
pub fn read(a: &P2pArgs) -> anyhow::Result<Vec<P2pRow>> {
    let (columns, labels) =
        import::maps(a.p2p_columns.as_deref(), a.p2p_labels.as_deref()).map_err(usage)?;
    let mut rows = Vec::new();
    for spec in &a.p2p {
        let (placement, file) = match spec.split_once('=') {
            Some((p, f)) if !Path::new(spec).exists() => (
                Some(Level::parse(p).map_err(|e| usage(format!("--p2p {spec}: {e}")))?),
                PathBuf::from(f),
            ),
            _ => (None, PathBuf::from(spec)),
        };
        let opts = Options {
            placement,
            columns: columns.clone(),
            labels: labels.clone(),
            ..Options::default()
        };
        let got = import::read(&file, &opts).map_err(usage)?;
        if !got.bcast.is_empty() {
            return Err(usage(format!(
                "{}: broadcast rows where point-to-point results were expected",
                file.display()
            )));
        }
        warn_first(&file, &got);
        rows.extend(got.p2p);
    }
    Ok(rows)
}

/// Prints a file's first import warning and how many there were
/// (`colltune import` lists them all).
pub fn warn_first(file: &Path, got: &import::Imported) {
    if let Some(w) = got.warnings.first() {
        eprintln!(
            "colltune: warning: {}:{}: {} ({} warnings in all; `colltune import` lists them)",
            file.display(),
            w.line,
            w.what,
            got.warnings.len()
        );
    }
}

/// Fits the levels' model, warning of each level the data does not
/// measure.
pub fn fit(rows: &[P2pRow], layout: &Layout, name: &str, a: &P2pArgs) -> anyhow::Result<LevelsFit> {
    let mut f = fit_model(rows, layout, name, a.memory_copy_gbs).map_err(usage)?;
    f.model.shared_reads = a.shared_reads;
    for (missing, by) in &f.stand_ins {
        eprintln!(
            "colltune: warning: the layout {layout} has ranks that share a {missing} level but no measured pair does; the {by} level's figures stand in for it"
        );
    }
    Ok(f)
}

/// `calibrate --p2p FILE... --layout L --out MODEL.yaml`: the model from
/// published ping-pong alone (no MPI). (`calibrate` is a command of the
/// MPI build; `predict --p2p` fits the same model in any build.)
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub fn calibrate(
    a: &P2pArgs,
    layout: Option<&str>,
    name: Option<&str>,
    out: &Path,
) -> anyhow::Result<super::Code> {
    let layout = layout
        .ok_or_else(|| usage("--p2p needs --layout (e.g. node:2,socket:2,cache:16,core:4)"))
        .and_then(|l| Layout::parse(l).map_err(usage))?;
    let rows = read(a)?;
    let name = name.unwrap_or("from-p2p");
    let f = fit(&rows, &layout, name, a)?;
    for (level, lf) in &f.fits {
        let l = &lf.link;
        outln!(
            "{level:>8}: L {:.3} us, o {:.3} us, eager up to {} B at {:.2} GB/s, then {:.2} GB/s; error median {:.1}%, worst {:.1}%",
            l.latency_us,
            l.overhead_us,
            l.eager_limit,
            l.eager_bandwidth_gbs.unwrap_or(l.bandwidth_gbs),
            l.bandwidth_gbs,
            100.0 * lf.median_rel_error,
            100.0 * lf.max_rel_error
        );
    }
    if let Some(b) = f.model.memory_copy_gbs {
        outln!("  memory: a socket's shared-memory copies together at most {b:.1} GB/s");
    }
    if let Some(k) = f.model.intra_load_per_rank {
        outln!(
            "    load: a message inside a node costs {:.2}% more per rank of the node in the call beyond two (assumed, not in the ping-pong)",
            100.0 * k
        );
    }
    std::fs::write(out, f.model.to_yaml())
        .map_err(|e| anyhow::anyhow!("{}: cannot write: {e}", out.display()))?;
    outln!("wrote {}", out.display());
    Ok(super::Code::Ok)
}
