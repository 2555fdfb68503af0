//! `colltune import FILE... --out OUT.csv`: other benchmarks' results
//! (OSU, IMB-MPI1, plain CSV, any table through a column map) into
//! colltune's raw-sample CSV (broadcast) or point-to-point CSV
//! ([`colltune_core::measure::import`]).

use std::path::PathBuf;

use super::{Code, UsageError};
use colltune_core::measure::import::{self, Options};
use colltune_core::model::placement::{Layout, Level, Mapping};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Files to read: osu_bcast / osu_latency / osu_bw or IMB-MPI1 output
    /// as printed, the plain CSV forms, or any table with --columns.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Where to write: broadcast rows as colltune's raw samples, point-to-point
    /// rows as its point-to-point CSV (whichever the files hold).
    #[arg(long, short, visible_alias = "output")]
    out: PathBuf,
    /// Where to write point-to-point rows when the files hold both kinds.
    #[arg(long)]
    p2p_out: Option<PathBuf>,
    /// Open MPI's coll/tuned broadcast algorithm of printed output that
    /// does not say it: an id (0 = the library's own decision, 1-9) or name.
    #[arg(long)]
    algorithm: Option<String>,
    /// Ranks of printed broadcast output that does not say them.
    #[arg(long)]
    ranks: Option<u32>,
    /// The message size of broadcast rows that do not say it (a file of
    /// one size: `1`, `64K`).
    #[arg(long, value_parser = colltune_algorithms::parse_size)]
    bytes: Option<u64>,
    /// How ranks were placed (mpirun --map-by): core, socket or node.
    #[arg(long)]
    mapping: Option<String>,
    /// What the two ranks of printed point-to-point output share: cache,
    /// numa, socket, node or network (two nodes).
    #[arg(long)]
    placement: Option<String>,
    /// The machine, coarsest first: node:2,socket:2,cache:16,core:4. With
    /// --mapping it gives each sample's nodes and ranks per node.
    #[arg(long)]
    layout: Option<String>,
    /// Column map: FIELD=COLUMN,... (fields: algorithm, ranks, bytes,
    /// time_us, min_us, max_us, mapping, iterations, placement, p50_us,
    /// mbps); quote names with spaces: time_us="Latency (us)".
    #[arg(long)]
    columns: Option<String>,
    /// Label map: LABEL=MEANING,... for algorithm names (broadcast_flat=1)
    /// and placements (core=socket); MEANING `skip` drops those rows.
    #[arg(long)]
    labels: Option<String>,
    /// The MPI library the figures come from, as samples record it.
    #[arg(long, default_value = "Open MPI")]
    mpi: String,
    /// Print every kind of warning (default: the first 8 kinds per file).
    #[arg(long)]
    all_warnings: bool,
}

fn usage<E: std::fmt::Display>(e: E) -> anyhow::Error {
    UsageError(e.to_string()).into()
}

pub fn run(a: Args) -> anyhow::Result<Code> {
    let layout = a
        .layout
        .as_deref()
        .map(Layout::parse)
        .transpose()
        .map_err(usage)?;
    let mapping = a
        .mapping
        .as_deref()
        .map(Mapping::parse)
        .transpose()
        .map_err(usage)?;
    let (columns, labels) =
        import::maps(a.columns.as_deref(), a.labels.as_deref()).map_err(usage)?;
    let opts = Options {
        algorithm: match a.algorithm.as_deref() {
            None => None,
            Some(v) => import::algorithm_id(v).map_err(|e| usage(format!("--algorithm: {e}")))?,
        },
        ranks: a.ranks,
        bytes: a.bytes,
        mapping,
        placement: a
            .placement
            .as_deref()
            .map(Level::parse)
            .transpose()
            .map_err(usage)?,
        columns,
        labels,
        layout: layout.clone(),
        mpi: Some(a.mpi.clone()),
    };
    let mut samples = Vec::new();
    let mut p2p = Vec::new();
    let (mut kept, mut skipped) = (0, 0);
    for f in &a.files {
        let got = import::read(f, &opts).map_err(usage)?;
        let name = f
            .file_name()
            .map_or_else(|| f.display().to_string(), |n| n.to_string_lossy().into());
        let source = format!("imported:{}:{name}", got.origin);
        samples.extend(
            import::to_samples(&got.bcast, layout.as_ref(), mapping, &a.mpi, &source)
                .map_err(|(line, why)| usage(format!("{}:{line}: {why}", f.display())))?,
        );
        p2p.extend(got.p2p.iter().cloned());
        kept += got.kept;
        skipped += got.skipped;
        outln!(
            "{}: {} ({} broadcast, {} point-to-point rows): kept {}, skipped {}",
            f.display(),
            got.origin,
            got.bcast.len(),
            got.p2p.len(),
            got.kept,
            got.skipped
        );
        // One line per kind of problem: its first line and how many more.
        let mut kinds: Vec<(&str, usize, usize)> = Vec::new();
        for w in &got.warnings {
            match kinds.iter_mut().find(|k| k.0 == w.what) {
                Some(k) => k.2 += 1,
                None => kinds.push((&w.what, w.line, 0)),
            }
        }
        let shown = if a.all_warnings { usize::MAX } else { 8 };
        for (what, line, more) in kinds.iter().take(shown) {
            let more = if *more > 0 {
                format!(" (and {more} more rows like it)")
            } else {
                String::new()
            };
            eprintln!("colltune: warning: {}:{line}: {what}{more}", f.display());
        }
        if kinds.len() > shown {
            eprintln!(
                "colltune: warning: {}: {} more kinds of warning (--all-warnings prints them)",
                f.display(),
                kinds.len() - shown
            );
        }
    }
    let (bcast_to, p2p_to) = match (samples.is_empty(), p2p.is_empty(), &a.p2p_out) {
        (false, false, None) => {
            return Err(usage(
                "the files hold broadcast and point-to-point rows: give --p2p-out for the point-to-point ones",
            ))
        }
        (_, _, Some(p)) => (&a.out, p),
        _ => (&a.out, &a.out),
    };
    if !samples.is_empty() {
        colltune_core::measure::record::Writer::open(bcast_to, false)
            .and_then(|mut w| w.write(&samples))
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        outln!(
            "wrote {} broadcast samples to {}",
            samples.len(),
            bcast_to.display()
        );
    }
    if !p2p.is_empty() {
        let mut buf = Vec::new();
        import::write_p2p(&mut buf, &p2p)?;
        std::fs::write(p2p_to, buf)
            .map_err(|e| anyhow::anyhow!("{}: cannot write: {e}", p2p_to.display()))?;
        outln!(
            "wrote {} point-to-point rows to {}",
            p2p.len(),
            p2p_to.display()
        );
    }
    outln!("kept {kept} rows, skipped {skipped}");
    Ok(Code::Ok)
}
