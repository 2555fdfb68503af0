//! Raw samples: one CSV row per timed repetition, written as they are taken
//! and read back (with errors naming the file, line and column) by `fit`,
//! `report`, `plot`, `table build` and the tuner's resume.
//!
//! Columns, in order:
//!
//! | column      | meaning |
//! |-------------|---------|
//! | collective  | `bcast` or `swap` |
//! | algorithm   | registry name; `mpi` for the MPI library's own call; `ompi_tuned` for an Open MPI coll/tuned algorithm forced through its MCA variables |
//! | spec        | canonical specification: `pipeline:segment=65536`, `mpi`, `ompi_tuned:algorithm=6,segment=0` |
//! | execution   | `blocking`, `nonblocking`, or `library` (the MPI library's own call) |
//! | ranks       | communicator size |
//! | ppn         | ranks per node (the largest node's count) |
//! | nodes       | nodes the communicator spans |
//! | layout      | node layout: `4`, `2x2`, `3+2` |
//! | bytes       | message bytes (swap: each partner's buffer) |
//! | root        | root of this repetition (`-1` for swaps) |
//! | cache       | `warm` (one buffer) or `off` (buffers rotated over more than the last-level cache) |
//! | iterations  | calls per repetition; `time_us` is per call |
//! | overlap_us  | computation placed between starting and waiting for each call |
//! | pattern     | `synchronized` (ranks started together before each repetition) or `back-to-back` (a repetition is a block of `iterations` calls in a row, IMB style; the root rotates per call); optional when reading: CSVs from before it were all `synchronized` |
//! | run         | independent run, from 1 |
//! | rep         | repetition within the run, from 1 |
//! | time_us     | the slowest rank's time for one call in this repetition, microseconds |
//! | outlier     | 1 if the modified z-score (median absolute deviation) of this sample within its run exceeds 3.5, or (window-synchronised) a rank reached the repetition's start late |
//! | mpi         | MPI library and version |
//! | host        | the host rank 0 ran on |
//! | source      | `measured` (each repetition after `MPI_Barrier`), `measured:window` (synchronised clocks, one agreed start per repetition), or `simulated:<model>` |
//! | colltune    | colltune version |
//! | placement   | the communicator's placement class (`block/cyclic`, ...: `colltune_core::model::placed`), empty where not known; optional when reading, and left out of rows appended to a CSV whose header has no such column |
//! | call        | the broadcast call timed: `bcast` (`MPI_Bcast`, and every swap), `ibcast` (`MPI_Ibcast` then `MPI_Wait`), `bcast_init` (`MPI_Start` then `MPI_Wait` on a request `MPI_Bcast_init` made before the timing); optional when reading (`bcast`) |
//! | overlap     | nonblocking calls measured with computation (`overlap_us` > 0, set to the median time of the same call without it): the overlap achieved, `1 - (time_us - overlap_us) / t_pure` clamped to [0, 1] where `t_pure` is that median; empty otherwise; optional when reading |

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use colltune_algorithms::Collective;

/// Column names in order (the CSV header).
pub const COLUMNS: &[&str] = &[
    "collective",
    "algorithm",
    "spec",
    "execution",
    "ranks",
    "ppn",
    "nodes",
    "layout",
    "bytes",
    "root",
    "cache",
    "iterations",
    "overlap_us",
    "pattern",
    "run",
    "rep",
    "time_us",
    "outlier",
    "mpi",
    "host",
    "source",
    "colltune",
    "placement",
    "call",
    "overlap",
];

/// One timed repetition.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub collective: String,
    pub algorithm: String,
    pub spec: String,
    pub execution: String,
    pub ranks: u32,
    pub ppn: u32,
    pub nodes: u32,
    pub layout: String,
    pub bytes: u64,
    pub root: i64,
    pub cache: String,
    pub iterations: u32,
    pub overlap_us: f64,
    /// `synchronized` or `back-to-back` (absent in older CSVs:
    /// `synchronized`, the only pattern measured then).
    #[serde(default = "synchronized")]
    pub pattern: String,
    pub run: u32,
    pub rep: u32,
    pub time_us: f64,
    pub outlier: u8,
    pub mpi: String,
    pub host: String,
    pub source: String,
    pub colltune: String,
    /// The communicator's placement class ([`crate::model::placed::Placement`]),
    /// empty where not known (absent in older CSVs).
    #[serde(default)]
    pub placement: String,
    /// The broadcast call timed (`bcast`, `ibcast`, `bcast_init`:
    /// [`Call`]); absent in older CSVs: `bcast`.
    #[serde(default = "blocking_call")]
    pub call: String,
    /// The overlap achieved by a nonblocking call measured with computation
    /// ([`overlap_achieved`]); None otherwise (and in older CSVs).
    #[serde(default)]
    pub overlap: Option<f64>,
}

/// Columns a reader accepts as absent (older CSVs), with their default.
pub const OPTIONAL_COLUMNS: &[&str] = &["pattern", "placement", "call", "overlap"];

fn synchronized() -> String {
    crate::measure::method::Pattern::Synchronized.name().into()
}

fn blocking_call() -> String {
    Call::Bcast.name().into()
}

pub use crate::measure::method::Call;

/// The overlap a nonblocking call achieved: it ran `t_pure` us alone
/// (post then wait), and `t_with` us with `t_compute` us of computation
/// between post and wait. Full overlap hides the call behind the
/// computation (`t_with == t_compute`: 1); none adds it (`t_with ==
/// t_compute + t_pure`: 0). Clamped to [0, 1]; None without a positive
/// `t_pure`.
pub fn overlap_achieved(t_pure: f64, t_compute: f64, t_with: f64) -> Option<f64> {
    if !(t_pure > 0.0 && t_pure.is_finite() && t_with.is_finite()) {
        return None;
    }
    Some((1.0 - (t_with - t_compute) / t_pure).clamp(0.0, 1.0))
}

impl Sample {
    /// What was measured: (collective, spec, execution).
    pub fn subject(&self) -> (String, String, String) {
        (
            self.collective.clone(),
            self.spec.clone(),
            self.execution.clone(),
        )
    }
    /// A readable name: `pipeline:segment=65536 [nonblocking]`.
    pub fn label(&self) -> String {
        colltune_algorithms::label(&self.spec, &self.execution)
    }
    /// The communicator the sample was taken on: (ranks, ppn, nodes).
    pub fn comm_key(&self) -> (u32, u32, u32) {
        (self.ranks, self.ppn, self.nodes)
    }
    /// The communicator's placement class, where the sample says it (a
    /// value that does not read as one is checked by [`check`]).
    pub fn placement(&self) -> Option<crate::model::placed::Placement> {
        crate::model::placed::Placement::parse(&self.placement).ok()
    }
    pub fn collective(&self) -> Option<Collective> {
        self.collective.parse().ok()
    }
    pub fn is_library(&self) -> bool {
        self.execution == "library"
    }
    /// Whether a table may choose what the sample measured: colltune's
    /// algorithms and the library's forced ones a table can name
    /// (`ompi_tuned`, `ompi_adapt`, `mpich`: [`crate::libraries::library`]), not the
    /// library's default `MPI_Bcast` (a baseline only) nor an algorithm a
    /// table could not say (an MPICH name it does not document).
    pub fn is_choice(&self) -> bool {
        !self.is_library()
            || (crate::libraries::library::is_table_name(&self.algorithm)
                && colltune_algorithms::AlgoSpec::parse(&self.spec)
                    .is_ok_and(|s| crate::libraries::library::LibraryChoice::from_spec(&s).is_ok()))
    }
}

/// A bad raw-sample file.
#[derive(Debug, Error)]
pub enum RecordError {
    #[error("{path}: cannot open: {source}")]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: cannot write: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: line {line}: {why}")]
    Bad {
        path: PathBuf,
        line: u64,
        why: String,
    },
    #[error(
        "{path}: missing column(s) {missing}; a colltune raw CSV starts with the header: {header}"
    )]
    MissingColumns {
        path: PathBuf,
        missing: String,
        header: String,
    },
    #[error("{path}: no samples (an empty file or only a header)")]
    Empty { path: PathBuf },
}

/// Reads every sample of a raw CSV, checking columns and values.
pub fn read(path: &Path) -> Result<Vec<Sample>, RecordError> {
    let file = File::open(path).map_err(|source| RecordError::Open {
        path: path.into(),
        source,
    })?;
    read_from(path, file)
}

/// As [`read`], for one launch of a tune that may have died half-way: a
/// last line cut off mid-row (no newline after it) is dropped and named;
/// the samples before it count. Any other bad line is an error.
pub fn read_launch(path: &Path) -> Result<(Vec<Sample>, Option<String>), RecordError> {
    let bytes = std::fs::read(path).map_err(|source| RecordError::Open {
        path: path.into(),
        source,
    })?;
    let cut = match bytes.last() {
        Some(b'\n') | None => None,
        Some(_) => bytes.iter().rposition(|&b| b == b'\n'),
    };
    match read_from(path, bytes.as_slice()) {
        Err(RecordError::Bad { line, .. }) if cut.is_some() => {
            let last = bytes.iter().filter(|&&b| b == b'\n').count() as u64 + 1;
            if line != last {
                return read_from(path, bytes.as_slice()).map(|s| (s, None));
            }
            let head = &bytes[..=cut.expect("checked")];
            let samples = read_from(path, head)?;
            let n = samples.len();
            Ok((
                samples,
                Some(format!(
                    "{}: line {last} cut off mid-row (the launch died while writing): the {} samples before it count",
                    path.display(),
                    n
                )),
            ))
        }
        other => other.map(|s| (s, None)),
    }
}

fn read_from(path: &Path, input: impl std::io::Read) -> Result<Vec<Sample>, RecordError> {
    let mut rdr = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .from_reader(input);
    let headers = rdr
        .headers()
        .map_err(|e| RecordError::Bad {
            path: path.into(),
            line: 1,
            why: e.to_string(),
        })?
        .clone();
    let missing: Vec<&str> = COLUMNS
        .iter()
        .copied()
        .filter(|c| !OPTIONAL_COLUMNS.contains(c) && !headers.iter().any(|h| h == *c))
        .collect();
    if !missing.is_empty() {
        return Err(RecordError::MissingColumns {
            path: path.into(),
            missing: missing.join(", "),
            header: COLUMNS.join(","),
        });
    }
    let mut out = Vec::new();
    for rec in rdr.deserialize::<Sample>() {
        let s = rec.map_err(|e| {
            let line = e.position().map(|p| p.line()).unwrap_or(0);
            let why = match e.kind() {
                csv::ErrorKind::Deserialize { err, .. } => match err.field() {
                    Some(f) => format!(
                        "column `{}`: {}",
                        headers.get(f as usize).unwrap_or("?"),
                        err.kind()
                    ),
                    None => err.kind().to_string(),
                },
                csv::ErrorKind::UnequalLengths {
                    expected_len, len, ..
                } => format!("{len} fields where the header has {expected_len}"),
                _ => e.to_string(),
            };
            RecordError::Bad {
                path: path.into(),
                line,
                why,
            }
        })?;
        validate(&s).map_err(|why| RecordError::Bad {
            path: path.into(),
            line: out.len() as u64 + 2,
            why,
        })?;
        out.push(s);
    }
    if out.is_empty() {
        return Err(RecordError::Empty { path: path.into() });
    }
    Ok(out)
}

fn validate(s: &Sample) -> Result<(), String> {
    if s.collective.parse::<Collective>().is_err() {
        return Err(format!(
            "column `collective`: `{}` is not bcast or swap",
            s.collective
        ));
    }
    if !["blocking", "nonblocking", "library"].contains(&s.execution.as_str()) {
        return Err(format!(
            "column `execution`: `{}` is not blocking, nonblocking or library",
            s.execution
        ));
    }
    if let Err(e) = s.pattern.parse::<crate::measure::method::Pattern>() {
        return Err(format!("column `pattern`: {e}"));
    }
    if !s.placement.is_empty() {
        if let Err(e) = crate::model::placed::Placement::parse(&s.placement) {
            return Err(format!("column `placement`: {e}; or leave it empty"));
        }
    }
    if let Err(e) = s.call.parse::<Call>() {
        return Err(format!("column `call`: {e}; or leave the column out"));
    }
    if let Some(o) = s.overlap.filter(|o| !(0.0..=1.0).contains(o)) {
        return Err(format!(
            "column `overlap`: {o} is not a fraction in [0, 1]; or leave it empty"
        ));
    }
    if !(s.time_us.is_finite() && s.time_us >= 0.0) {
        return Err(format!(
            "column `time_us`: {} is not a time in microseconds",
            s.time_us
        ));
    }
    if s.ranks == 0 || s.iterations == 0 {
        return Err("columns `ranks` and `iterations` must be at least 1".into());
    }
    Ok(())
}

/// Appends samples to a CSV as they are taken, flushing after each batch so
/// that a killed run loses nothing already measured.
pub struct Writer {
    path: PathBuf,
    inner: csv::Writer<BufWriter<File>>,
    /// Appending to a CSV whose header has fewer columns (written before
    /// `placement`, `call`, `overlap`): rows keep only its columns.
    legacy: Option<usize>,
}

impl Writer {
    /// Creates (or, with `append`, continues) a raw CSV.
    pub fn open(path: &Path, append: bool) -> Result<Writer, RecordError> {
        let exists = append && path.metadata().map(|m| m.len() > 0).unwrap_or(false);
        // The columns of the header found, where fewer than ours (each
        // added column was appended at the end).
        let legacy = match exists.then(|| first_line(path)).flatten() {
            Some(h) => {
                let n = h.trim_end().split(',').count();
                (n < COLUMNS.len()).then_some(n)
            }
            None => None,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| RecordError::Write {
                path: path.into(),
                source,
            })?;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(append)
            .write(true)
            .truncate(!append)
            .open(path)
            .map_err(|source| RecordError::Open {
                path: path.into(),
                source,
            })?;
        let inner = csv::WriterBuilder::new()
            .has_headers(!exists)
            .from_writer(BufWriter::new(file));
        Ok(Writer {
            path: path.into(),
            inner,
            legacy,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes a batch and flushes it to the file.
    pub fn write(&mut self, samples: &[Sample]) -> Result<(), RecordError> {
        let err = |e: std::io::Error| RecordError::Write {
            path: self.path.clone(),
            source: e,
        };
        for s in samples {
            let done = if let Some(keep) = self.legacy {
                let mut rec = csv::StringRecord::new();
                let mut one = csv::WriterBuilder::new()
                    .has_headers(false)
                    .from_writer(Vec::new());
                let bytes = one.serialize(s).and_then(|_| {
                    one.into_inner()
                        .map_err(|e| csv::Error::from(std::io::Error::other(e.to_string())))
                });
                bytes.and_then(|b| {
                    let mut r = csv::ReaderBuilder::new()
                        .has_headers(false)
                        .from_reader(b.as_slice());
                    r.read_record(&mut rec)?;
                    let old: Vec<&str> = rec.iter().take(keep).collect();
                    self.inner.write_record(old)
                })
            } else {
                self.inner.serialize(s)
            };
            done.map_err(|e| err(std::io::Error::other(e)))?;
        }
        self.inner.flush().map_err(err)?;
        self.inner.get_ref().get_ref().sync_data().map_err(err)
    }
}

/// The first line of a file, if it can be read.
fn first_line(path: &Path) -> Option<String> {
    use std::io::BufRead;
    let mut line = String::new();
    std::io::BufReader::new(File::open(path).ok()?)
        .read_line(&mut line)
        .ok()?;
    Some(line)
}

impl Drop for Writer {
    fn drop(&mut self) {
        let _ = self.inner.flush();
    }
}

/// Writes samples to any writer (tests, stdout).
pub fn write_to(w: impl Write, samples: &[Sample]) -> csv::Result<()> {
    let mut c = csv::Writer::from_writer(w);
    for s in samples {
        c.serialize(s)?;
    }
    c.flush()?;
    Ok(())
}

/// A one-repetition sample of `spec` under `exec` on 4 ranks of one node
/// (a swap when the spec names a pairing), for tests and examples of the
/// commands that read samples.
pub fn sample(spec: &str, exec: &str, bytes: u64, run: u32, time_us: f64) -> Sample {
    Sample {
        collective: if spec.contains("pairing") {
            "swap"
        } else {
            "bcast"
        }
        .into(),
        algorithm: spec.split(':').next().unwrap_or(spec).into(),
        spec: spec.into(),
        execution: exec.into(),
        ranks: 4,
        ppn: 4,
        nodes: 1,
        layout: "4".into(),
        bytes,
        root: 0,
        cache: "warm".into(),
        iterations: 1,
        overlap_us: 0.0,
        pattern: synchronized(),
        run,
        rep: 1,
        time_us,
        outlier: 0,
        mpi: "Open MPI v4.1.4".into(),
        host: "test".into(),
        source: "measured".into(),
        colltune: env!("CARGO_PKG_VERSION").into(),
        placement: String::new(),
        call: crate::measure::record::Call::Bcast.name().into(),
        overlap: None,
    }
}

#[cfg(test)]
mod launch_tests {
    use super::*;

    #[test]
    fn a_launch_cut_off_mid_row_counts_for_what_it_wrote() {
        let dir = std::env::temp_dir().join(format!("colltune-cut-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("cut.csv");
        let rows: Vec<Sample> = (1..=3)
            .map(|r| sample("linear", "blocking", 8, r, 1.0))
            .collect();
        let mut text = Vec::new();
        write_to(&mut text, &rows).unwrap();
        text.extend_from_slice(b"bcast,linear,lin");
        std::fs::write(&p, &text).unwrap();
        assert!(read(&p).is_err());
        let (got, note) = read_launch(&p).unwrap();
        assert_eq!(got.len(), 3);
        assert!(note.unwrap().contains("line 5 cut off mid-row"));
        // a bad row in the middle is still an error
        let mut mid = Vec::new();
        write_to(&mut mid, &rows[..1]).unwrap();
        mid.extend_from_slice(b"bcast,x\n");
        write_to(&mut Vec::new(), &rows).unwrap();
        std::fs::write(&p, [mid.clone(), b"bcast,lin".to_vec()].concat()).unwrap();
        assert!(read_launch(&p).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("colltune-test-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d.join(name)
    }

    #[test]
    fn overlap_is_the_share_of_the_call_hidden_behind_computation() {
        // Alone 10 us; with 10 us of computation: 10 (all hidden), 20
        // (none), 15 (half); beyond either end clamped.
        assert_eq!(overlap_achieved(10.0, 10.0, 10.0), Some(1.0));
        assert_eq!(overlap_achieved(10.0, 10.0, 20.0), Some(0.0));
        assert_eq!(overlap_achieved(10.0, 10.0, 15.0), Some(0.5));
        assert_eq!(overlap_achieved(10.0, 10.0, 35.0), Some(0.0));
        assert_eq!(overlap_achieved(10.0, 10.0, 8.0), Some(1.0));
        assert_eq!(overlap_achieved(0.0, 10.0, 8.0), None);
        assert_eq!(overlap_achieved(f64::NAN, 1.0, 1.0), None);
    }

    #[test]
    fn csvs_without_call_and_overlap_read_as_blocking() {
        let dir = std::env::temp_dir().join(format!("ct-nbcols-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("old.csv");
        let mut s = sample("binomial", "blocking", 8, 1, 5.0);
        s.call = "ibcast".into();
        s.overlap = Some(0.5);
        let mut buf = Vec::new();
        write_to(&mut buf, &[s]).unwrap();
        let text = String::from_utf8(buf).unwrap();
        // The same rows with the two last columns cut off (an older CSV).
        let old: String = text
            .lines()
            .map(|l| l.rsplitn(3, ',').nth(2).unwrap().to_string() + "\n")
            .collect();
        std::fs::write(&path, &old).unwrap();
        let back = read(&path).unwrap();
        assert_eq!(back[0].call, "bcast");
        assert_eq!(back[0].overlap, None);
        // Appending to it keeps its columns.
        let mut w = Writer::open(&path, true).unwrap();
        w.write(&[sample("binomial", "blocking", 16, 1, 6.0)])
            .unwrap();
        drop(w);
        assert_eq!(read(&path).unwrap().len(), 2);
        // A bad call or overlap is refused with its column named.
        let bad = text.replace(",ibcast,0.5", ",jbcast,0.5");
        std::fs::write(&path, bad).unwrap();
        assert!(read(&path).unwrap_err().to_string().contains("call"));
        let bad = text.replace(",ibcast,0.5", ",ibcast,1.5");
        std::fs::write(&path, bad).unwrap();
        assert!(read(&path).unwrap_err().to_string().contains("overlap"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn write_append_and_read_back() {
        let p = tmp("raw.csv");
        let a = sample("binomial:segment=0", "blocking", 8, 1, 3.5);
        let b = sample("linear", "nonblocking", 8, 1, 2.5);
        Writer::open(&p, false)
            .unwrap()
            .write(std::slice::from_ref(&a))
            .unwrap();
        Writer::open(&p, true)
            .unwrap()
            .write(std::slice::from_ref(&b))
            .unwrap();
        let back = read(&p).unwrap();
        assert_eq!(back, vec![a, b]);
        let header = std::fs::read_to_string(&p).unwrap();
        assert_eq!(header.lines().next().unwrap(), COLUMNS.join(","));
        assert_eq!(header.matches("collective").count(), 1, "one header only");
    }

    #[test]
    fn rows_appended_to_a_csv_from_before_placement_keep_its_columns() {
        let p = tmp("old.csv");
        let placement = COLUMNS.iter().position(|c| *c == "placement").unwrap();
        let old_header = COLUMNS[..placement].join(",");
        let mut a = sample("linear", "blocking", 8, 1, 2.5);
        std::fs::write(&p, format!("{old_header}\n")).unwrap();
        a.placement = "cyclic/block".into();
        Writer::open(&p, true).unwrap().write(&[a.clone()]).unwrap();
        let back = read(&p).unwrap();
        a.placement = String::new();
        assert_eq!(back, vec![a]);
        let mut b = sample("linear", "blocking", 8, 1, 2.5);
        b.placement = "block/cyclic".into();
        let q = tmp("new.csv");
        Writer::open(&q, false)
            .unwrap()
            .write(&[b.clone()])
            .unwrap();
        assert_eq!(read(&q).unwrap(), vec![b]);
    }

    #[test]
    fn the_pattern_is_recorded_and_old_csvs_read_as_synchronized() {
        let p = tmp("pattern.csv");
        let mut a = sample("linear", "blocking", 8, 1, 3.5);
        a.pattern = "back-to-back".into();
        Writer::open(&p, false)
            .unwrap()
            .write(std::slice::from_ref(&a))
            .unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.lines().next().unwrap().contains(",pattern,"), "{text}");
        assert!(text.contains(",back-to-back,"), "{text}");
        assert_eq!(read(&p).unwrap(), vec![a.clone()]);

        // A CSV written before the column existed: no `pattern` column.
        let mut rows = text.lines();
        let header: Vec<&str> = rows.next().unwrap().split(',').collect();
        let at = header.iter().position(|h| *h == "pattern").unwrap();
        let drop_col = |line: &str| {
            let mut f: Vec<&str> = line.split(',').collect();
            f.remove(at);
            f.join(",")
        };
        let old = format!(
            "{}\n{}\n",
            drop_col(&header.join(",")),
            drop_col(rows.next().unwrap())
        );
        assert!(!old.contains("pattern"));
        std::fs::write(&p, old).unwrap();
        let back = read(&p).unwrap();
        assert_eq!(back[0].pattern, "synchronized");
        assert_eq!(back[0].time_us, 3.5);
    }

    #[test]
    fn garbled_files_name_line_and_column() {
        let p = tmp("bad.csv");
        std::fs::write(&p, "collective,bytes\nbcast,1\n").unwrap();
        let e = read(&p).unwrap_err().to_string();
        assert!(
            e.contains("missing column(s)") && e.contains("time_us"),
            "{e}"
        );

        let mut good = Vec::new();
        write_to(&mut good, &[sample("linear", "blocking", 8, 1, 1.0)]).unwrap();
        let text = String::from_utf8(good).unwrap();
        let broken = text.replace(",8,0,warm", ",eight,0,warm");
        std::fs::write(&p, &broken).unwrap();
        let e = read(&p).unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("column `bytes`"), "{e}");

        let short = text.lines().next().unwrap().to_string() + "\nbcast,linear\n";
        std::fs::write(&p, short).unwrap();
        let e = read(&p).unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("fields"), "{e}");

        std::fs::write(&p, text.replace(",blocking,", ",sideways,")).unwrap();
        let e = read(&p).unwrap_err().to_string();
        assert!(e.contains("column `execution`"), "{e}");

        std::fs::write(&p, text.replace(",synchronized,", ",sideways,")).unwrap();
        let e = read(&p).unwrap_err().to_string();
        assert!(
            e.contains("line 2") && e.contains("column `pattern`"),
            "{e}"
        );

        std::fs::write(&p, text.lines().next().unwrap()).unwrap();
        assert!(matches!(read(&p), Err(RecordError::Empty { .. })));
        assert!(matches!(
            read(Path::new("/nonexistent/raw.csv")),
            Err(RecordError::Open { .. })
        ));
    }
}
