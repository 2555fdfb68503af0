//! Reading other benchmarks' results (`colltune import`): a site's
//! acceptance-test figures, as people have them, into colltune's own files.
//!
//! What is read ([`read`]; the format is found from the text, not the name):
//! - the benchmarks' printed output: `osu_bcast`, `osu_latency`, `osu_bw`
//!   (with their `#` header lines, `-f` full statistics, several tables in
//!   one file) and IMB-MPI1's `Bcast` and `PingPong` (each `# Benchmarking`
//!   table with its `#processes`); where the output does not say the
//!   algorithm, ranks, mapping or placement, [`Options`] does, and an
//!   `mpirun` line echoed into a `#` comment (`-np 8 --map-by socket --mca
//!   coll_tuned_bcast_algorithm 5`) says them for the tables after it;
//! - two plain CSV forms: broadcast `algorithm,ranks,bytes,time_us`
//!   (optional `min_us,max_us,mapping,iterations`; `algorithm` = Open MPI's
//!   coll/tuned id, 0 for the library's own decision, or its name) and
//!   point-to-point `placement,bytes,time_us` (optional
//!   `min_us,max_us,p50_us`; `placement` = what the two ranks share:
//!   `cache`, `numa`, `socket`, `node`, or `network`);
//! - any other table (CSV, TSV, or columns aligned with spaces) through a
//!   column map ([`Options::columns`]: `bytes=Size,time_us="Latency (us)"`)
//!   and a label map ([`Options::labels`]: `broadcast_flat=1`,
//!   `core=socket`, `scatter_flat=skip`);
//! - per-call samples as the pico benchmark writes them, one file per size
//!   and algorithm (`512_binomial_ompi_int32.csv`, header `highest`, one
//!   call's slowest rank per line in ns, `alloc.csv` beside them saying the
//!   ranks and their nodes): one row per file, the median over its calls
//!   ([`percall`]).
//!
//! Broadcast rows become raw samples ([`crate::measure::record`]) of Open MPI's
//! algorithms (`ompi_tuned:algorithm=5,name=binary_tree,segment=0`, and
//! `algorithm=0` for the library's own decision; pico's `*_over` rows
//! colltune's own, `bine:segment=0`), one sample per row, a key
//! measured twice (a rerun) two runs; point-to-point rows become
//! [`P2pRow`]s, written as the point-to-point CSV ([`write_p2p`]) that
//! `calibrate --p2p` and `predict` read. Bad rows are skipped with a warning
//! naming the file and line; a file with no good row is an error. Every
//! import says how many rows it kept and skipped.

mod percall;
mod text;

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::libraries::ompi;
use crate::measure::record::Sample;
use crate::model::own;
use crate::model::placement::{Layout, Level, Mapping};

pub use text::parse;

/// A column colltune reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Field {
    Algorithm,
    Ranks,
    Bytes,
    TimeUs,
    MinUs,
    MaxUs,
    Mapping,
    Iterations,
    Placement,
    P50Us,
    /// A bandwidth in MB/s (10^6 bytes per second), as `osu_bw` prints it.
    Mbps,
    /// The two cores of a point-to-point pair, numbered as the layout
    /// numbers them (`--layout`): their placement is what the two share.
    CoreA,
    CoreB,
}

impl Field {
    pub const ALL: [Field; 13] = [
        Field::Algorithm,
        Field::Ranks,
        Field::Bytes,
        Field::TimeUs,
        Field::MinUs,
        Field::MaxUs,
        Field::Mapping,
        Field::Iterations,
        Field::Placement,
        Field::P50Us,
        Field::Mbps,
        Field::CoreA,
        Field::CoreB,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Field::Algorithm => "algorithm",
            Field::Ranks => "ranks",
            Field::Bytes => "bytes",
            Field::TimeUs => "time_us",
            Field::MinUs => "min_us",
            Field::MaxUs => "max_us",
            Field::Mapping => "mapping",
            Field::Iterations => "iterations",
            Field::Placement => "placement",
            Field::P50Us => "p50_us",
            Field::Mbps => "mbps",
            Field::CoreA => "core_a",
            Field::CoreB => "core_b",
        }
    }

    pub fn parse(s: &str) -> Result<Field, String> {
        Field::ALL
            .into_iter()
            .find(|f| f.name() == s.trim())
            .ok_or_else(|| {
                format!(
                    "unknown field `{s}` in --columns; the fields are {}",
                    Field::ALL.map(Field::name).join(", ")
                )
            })
    }

    /// The column names the benchmarks print for this field (compared
    /// without case or spaces).
    pub(crate) fn known_headers(self) -> &'static [&'static str] {
        match self {
            Field::Algorithm => &["algorithm"],
            Field::Ranks => &["ranks", "np", "processes", "cores", "nprocs", "procs"],
            Field::Bytes => &[
                "bytes",
                "size",
                "#bytes",
                "msg_size",
                "messagesize",
                "message_size",
                "msgsize",
            ],
            // OSU and IMB report microseconds: a bare `latency` is theirs.
            Field::TimeUs => &[
                "time_us",
                "avglatency(us)",
                "latency(us)",
                "t_avg[usec]",
                "t[usec]",
                "latency_us",
                "latency",
                "avg_latency",
            ],
            Field::MinUs => &[
                "min_us",
                "minlatency(us)",
                "t_min[usec]",
                "minlatency",
                "min_latency",
            ],
            Field::MaxUs => &[
                "max_us",
                "maxlatency(us)",
                "t_max[usec]",
                "maxlatency",
                "max_latency",
            ],
            Field::Mapping => &["mapping"],
            Field::Iterations => &["iterations", "#repetitions"],
            Field::Placement => &["placement"],
            Field::CoreA => &["core_a", "core1", "core_1", "corea", "cpu1", "cpu_a"],
            Field::CoreB => &["core_b", "core2", "core_2", "coreb", "cpu2", "cpu_b"],
            Field::P50Us => &["p50_us", "p50taillat(us)", "p50"],
            Field::Mbps => &["bandwidth(mb/s)", "mbytes/sec"],
        }
    }
}

/// What the command line says where a file does not.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// coll/tuned's algorithm (0: the library's own decision) of printed
    /// broadcast output.
    pub algorithm: Option<u32>,
    pub ranks: Option<u32>,
    /// The message size of broadcast rows that do not say it.
    pub bytes: Option<u64>,
    pub mapping: Option<Mapping>,
    /// What the two ranks of printed point-to-point output share.
    pub placement: Option<Level>,
    /// Column map: (field, the file's column name).
    pub columns: Vec<(Field, String)>,
    /// Label map: (a label in the file, what it means): `broadcast_flat=1`,
    /// `core=socket`; `skip` drops the rows with that label.
    pub labels: Vec<(String, String)>,
    /// The machine; with a mapping it gives each sample's nodes and ranks
    /// per node, and rows with more ranks than it holds are errors.
    pub layout: Option<Layout>,
    /// The MPI library, as samples record it.
    pub mpi: Option<String>,
}

/// The column and label maps from their command-line texts (absent:
/// empty).
#[allow(clippy::type_complexity)]
pub fn maps(
    columns: Option<&str>,
    labels: Option<&str>,
) -> Result<(Vec<(Field, String)>, Vec<(String, String)>), String> {
    Ok((
        columns.map(parse_columns).transpose()?.unwrap_or_default(),
        labels.map(parse_labels).transpose()?.unwrap_or_default(),
    ))
}

/// Reads `--columns bytes=Size,time_us="Latency (us)"`.
pub fn parse_columns(text: &str) -> Result<Vec<(Field, String)>, String> {
    pairs(text, "--columns", "bytes=Size,time_us=\"Latency (us)\"")?
        .into_iter()
        .map(|(k, v)| Ok((Field::parse(&k)?, v)))
        .collect()
}

/// Reads `--labels broadcast_flat=1,core=socket,scatter_flat=skip`.
pub fn parse_labels(text: &str) -> Result<Vec<(String, String)>, String> {
    pairs(text, "--labels", "broadcast_flat=1,core=socket")
}

/// `a=b,c="d e"`: pairs, values optionally quoted (a quoted value may hold
/// commas).
fn pairs(text: &str, flag: &str, example: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        let (k, after) = rest
            .split_once('=')
            .ok_or_else(|| format!("{flag} `{text}`: `{rest}` has no `=`; write e.g. {example}"))?;
        let after = after.trim_start();
        let (v, next) = if let Some(q) = after.strip_prefix('"') {
            let end = q
                .find('"')
                .ok_or_else(|| format!("{flag} `{text}`: a quote is not closed"))?;
            let tail = q[end + 1..].trim_start();
            (&q[..end], tail.strip_prefix(',').unwrap_or(tail))
        } else {
            match after.split_once(',') {
                Some((v, n)) => (v, n),
                None => (after, ""),
            }
        };
        let k = k.trim();
        if k.is_empty() || v.trim().is_empty() {
            return Err(format!(
                "{flag} `{text}`: an empty name or value; write e.g. {example}"
            ));
        }
        out.push((k.to_string(), v.trim().to_string()));
        rest = next.trim();
    }
    Ok(out)
}

/// One measured broadcast point.
#[derive(Clone, Debug, PartialEq)]
pub struct BcastRow {
    /// coll/tuned's algorithm id; 0: the library's own decision; from
    /// [`own::FIRST`] on, colltune's own (pico's `*_over` files).
    pub algorithm: u32,
    pub ranks: u32,
    pub bytes: u64,
    pub time_us: f64,
    pub min_us: Option<f64>,
    pub max_us: Option<f64>,
    pub mapping: Option<Mapping>,
    pub iterations: Option<u32>,
    /// The line it was read from.
    pub line: usize,
}

/// What a point-to-point row measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum P2pTest {
    /// Half a ping-pong's round trip (`osu_latency`, IMB `PingPong`).
    Latency,
    /// A window of back-to-back messages (`osu_bw`): `time_us` is bytes
    /// over the bandwidth.
    Bandwidth,
}

impl P2pTest {
    pub fn name(self) -> &'static str {
        match self {
            P2pTest::Latency => "latency",
            P2pTest::Bandwidth => "bandwidth",
        }
    }
}

/// One measured point-to-point point.
#[derive(Clone, Debug, PartialEq)]
pub struct P2pRow {
    pub placement: Level,
    pub bytes: u64,
    pub time_us: f64,
    pub min_us: Option<f64>,
    pub max_us: Option<f64>,
    pub p50_us: Option<f64>,
    pub test: P2pTest,
    /// An outlier among the rows of its placement and size (see
    /// [`flag_outliers`]).
    pub outlier: bool,
    pub line: usize,
}

/// A row the import could not use, or a doubt about one it kept.
#[derive(Clone, Debug, PartialEq)]
pub struct Warning {
    pub line: usize,
    pub what: String,
}

/// What one file held.
#[derive(Clone, Debug, Default)]
pub struct Imported {
    pub bcast: Vec<BcastRow>,
    pub p2p: Vec<P2pRow>,
    /// Data rows read and kept, and skipped (each with a warning; rows of
    /// another benchmark in the same file are skipped too).
    pub kept: usize,
    pub skipped: usize,
    pub warnings: Vec<Warning>,
    /// The benchmark the rows came from (`osu_bcast`, `imb:Bcast`, `csv`).
    pub origin: String,
}

/// A file that cannot be imported.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("{path}: cannot read: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{line}: {why}")]
    Bad {
        path: PathBuf,
        line: usize,
        why: String,
    },
    #[error("{path}: {why}")]
    File { path: PathBuf, why: String },
}

/// Reads one file.
pub fn read(path: &Path, opts: &Options) -> Result<Imported, ImportError> {
    let text = std::fs::read_to_string(path).map_err(|source| ImportError::Read {
        path: path.into(),
        source,
    })?;
    let got = match percall::read(path, &text, opts) {
        Some(got) => got,
        None => parse(&text, opts),
    };
    got.map_err(|(line, why)| match line {
        0 => ImportError::File {
            path: path.into(),
            why,
        },
        line => ImportError::Bad {
            path: path.into(),
            line,
            why,
        },
    })
}

/// Reads an algorithm given on the command line: coll/tuned's id (0-9) or
/// name.
pub fn algorithm_id(v: &str) -> Result<Option<u32>, String> {
    algorithm_of(v, &[])
}

/// What label `v` means through the label map (itself where the map does
/// not name it); None where the map says `skip`.
fn meaning<'a>(v: &'a str, labels: &'a [(String, String)]) -> Option<&'a str> {
    match labels.iter().find(|(k, _)| k.eq_ignore_ascii_case(v)) {
        Some((_, m)) if m.eq_ignore_ascii_case("skip") => None,
        Some((_, m)) => Some(m),
        None => Some(v),
    }
}

/// Reads an algorithm label: a label map's meaning first, then coll/tuned's
/// id (0-9) or name (`binomial`, `basic_linear`, `default`, colltune's
/// `linear`), then colltune's own the model knows ([`own`]: `bine`). `Ok(None)`: the label map says `skip`.
pub(crate) fn algorithm_of(v: &str, labels: &[(String, String)]) -> Result<Option<u32>, String> {
    let v = v.trim();
    let Some(w) = meaning(v, labels) else {
        return Ok(None);
    };
    let by_num = w
        .parse::<f64>()
        .ok()
        .filter(|x| x.fract() == 0.0 && *x >= 0.0)
        .and_then(|x| ompi::tuned_by_id(x as u32));
    let found = by_num.or_else(|| {
        if w.eq_ignore_ascii_case(ompi::TUNED_DEFAULT.name) {
            return Some(&ompi::TUNED_DEFAULT);
        }
        ompi::TUNED_BCAST
            .iter()
            .find(|t| t.name.eq_ignore_ascii_case(w) || t.ours.eq_ignore_ascii_case(w))
    });
    found
        .map(|t| t.id)
        .or_else(|| own::by_name(w).map(|o| o.id))
        .map(Some)
        .ok_or_else(|| {
            format!(
                "unknown algorithm `{v}`: give Open MPI's coll/tuned id (0 = its own decision, 1-9) or name, colltune's bine, or map the label with --labels {v}=ID (or {v}=skip)"
            )
        })
}

/// Reads a placement label through the label map.
pub(crate) fn placement_of(v: &str, labels: &[(String, String)]) -> Result<Option<Level>, String> {
    let v = v.trim();
    let Some(w) = meaning(v, labels) else {
        return Ok(None);
    };
    Level::parse(w)
        .map(Some)
        .map_err(|e| format!("{e}, or map the label with --labels {v}=LEVEL (or {v}=skip)"))
}

/// Marks as outliers the times far from the others of their group (same
/// key): a modified z-score (median absolute deviation) above 3.5, as
/// colltune's own samples do, among 3 or more. Returns how many.
pub fn flag_outliers<K: std::hash::Hash + Eq>(keys: &[K], times: &[f64]) -> Vec<bool> {
    let mut groups: HashMap<&K, Vec<usize>> = HashMap::new();
    for (i, k) in keys.iter().enumerate() {
        groups.entry(k).or_default().push(i);
    }
    let mut out = vec![false; times.len()];
    for idx in groups.values().filter(|g| g.len() >= 3) {
        let mut v: Vec<f64> = idx.iter().map(|&i| times[i]).collect();
        v.sort_by(f64::total_cmp);
        let med = crate::measure::stats::median_sorted(&v);
        let mut dev: Vec<f64> = v.iter().map(|t| (t - med).abs()).collect();
        dev.sort_by(f64::total_cmp);
        let mad = crate::measure::stats::median_sorted(&dev);
        for &i in idx {
            let z = if mad > 0.0 {
                0.6745 * (times[i] - med).abs() / mad
            } else {
                0.0
            };
            out[i] = z > 3.5 && (times[i] - med).abs() > 0.05 * med;
        }
    }
    out
}

/// The broadcast rows as raw samples: Open MPI's algorithm forced (or its
/// own decision, algorithm 0), one sample per row, the n-th row of a key
/// (algorithm, ranks, bytes, mapping) its run n. With a layout and a mapping
/// (the row's, else `mapping`) the samples say the nodes and ranks per node
/// the mapping gives; without, one node. `source`: `imported:<origin>:<file>`.
pub fn to_samples(
    rows: &[BcastRow],
    layout: Option<&Layout>,
    mapping: Option<Mapping>,
    mpi: &str,
    source: &str,
) -> Result<Vec<Sample>, (usize, String)> {
    let keys: Vec<_> = rows
        .iter()
        .map(|r| (r.algorithm, r.ranks, r.bytes, r.mapping.or(mapping)))
        .collect();
    let times: Vec<f64> = rows.iter().map(|r| r.time_us).collect();
    let outliers = flag_outliers(&keys, &times);
    let mut runs: HashMap<_, u32> = HashMap::new();
    let mut out = Vec::with_capacity(rows.len());
    for ((r, key), outlier) in rows.iter().zip(&keys).zip(outliers) {
        let run = runs.entry(*key).or_insert(0);
        *run += 1;
        // The mapping's placement class: found on the layout where one is
        // given, else the class the mapping gives on several sockets.
        let placement = match (layout, key.3) {
            (Some(l), Some(m)) => crate::model::placed::of_layout(l, m, r.ranks as usize)
                .map_err(|e| (r.line, e))?
                .placement(),
            (None, Some(m)) => Some(crate::model::placed::Placement::of_mapping(m)),
            _ => None,
        };
        let (ppn, nodes, lay) = match (layout, key.3) {
            (Some(l), Some(m)) => {
                let map = m.node_map(l, r.ranks as usize).map_err(|e| (r.line, e))?;
                (
                    map.max_ppn() as u32,
                    map.num_nodes() as u32,
                    map.to_string(),
                )
            }
            (Some(l), None) if r.ranks as usize > l.cores() => {
                return Err((
                    r.line,
                    format!(
                        "{} ranks do not fit the layout {l} ({} cores)",
                        r.ranks,
                        l.cores()
                    ),
                ))
            }
            _ => (r.ranks, 1, r.ranks.to_string()),
        };
        let (algorithm, spec, execution) = subject(r.algorithm);
        out.push(Sample {
            collective: "bcast".into(),
            algorithm,
            spec,
            execution,
            ranks: r.ranks,
            ppn,
            nodes,
            layout: lay,
            bytes: r.bytes,
            root: 0,
            cache: "warm".into(),
            iterations: r.iterations.unwrap_or(1),
            overlap_us: 0.0,
            pattern: crate::measure::method::Pattern::Synchronized.name().into(),
            run: *run,
            rep: 1,
            time_us: r.time_us,
            outlier: u8::from(outlier),
            mpi: mpi.into(),
            host: "-".into(),
            source: match key.3 {
                Some(m) => format!("{source}:map-by-{m}"),
                None => source.into(),
            },
            colltune: env!("CARGO_PKG_VERSION").into(),
            placement: placement.map(|p| p.to_string()).unwrap_or_default(),
            call: crate::measure::record::Call::Bcast.name().into(),
            overlap: None,
        });
    }
    Ok(out)
}

/// A row's subject: Open MPI's algorithm `id` forced (0: its decision), or
/// colltune's own ([`own`], from [`own::FIRST`] on) run blocking.
fn subject(id: u32) -> (String, String, String) {
    match own::of(id) {
        Some(o) => (
            o.name().into(),
            o.resolved().to_string(),
            colltune_algorithms::Execution::Blocking.name().into(),
        ),
        None => (
            ompi::TABLE_NAME.into(),
            ompi::Forced { id, segment: 0 }.spec().to_string(),
            ompi::LIBRARY_EXECUTION.into(),
        ),
    }
}

/// The point-to-point CSV's columns, in order (`calibrate --p2p` and
/// `predict` read it, and the plain form `placement,bytes,time_us`).
pub const P2P_COLUMNS: &[&str] = &[
    "placement",
    "bytes",
    "time_us",
    "min_us",
    "max_us",
    "p50_us",
    "test",
    "outlier",
];

/// Writes point-to-point rows as colltune's point-to-point CSV.
pub fn write_p2p(out: &mut impl std::io::Write, rows: &[P2pRow]) -> std::io::Result<()> {
    writeln!(out, "{}", P2P_COLUMNS.join(","))?;
    let opt = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
    for r in rows {
        writeln!(
            out,
            "{},{},{},{},{},{},{},{}",
            r.placement,
            r.bytes,
            r.time_us,
            opt(r.min_us),
            opt(r.max_us),
            opt(r.p50_us),
            r.test.name(),
            u8::from(r.outlier)
        )?;
    }
    Ok(())
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.what)
    }
}

#[cfg(test)]
mod tests;
