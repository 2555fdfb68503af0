//! The one reader behind every format: a file is lines of comments (`#`),
//! column headers and data rows, in tables one after another. Printed
//! benchmark output (OSU, IMB) and plain tables (CSV, TSV, aligned columns)
//! differ only in where their headers are and what they call the columns.

use super::{
    algorithm_of, flag_outliers, placement_of, BcastRow, Field, Imported, Options, P2pRow, P2pTest,
    Warning,
};
use crate::model::placement::{Level, Mapping};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Delim {
    Comma,
    Tab,
    /// Columns aligned with spaces: a header's names are split at two or
    /// more spaces (`Avg Latency(us)`), data at any.
    Spaces,
}

/// What the current table measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Bench {
    /// Not said by the file: the columns and options tell.
    Unknown,
    Bcast,
    Latency,
    Bandwidth,
    /// Another benchmark (IMB's `Allreduce`, `osu_allreduce`): its rows are
    /// skipped.
    Other,
}

struct Header {
    cols: Vec<Option<Field>>,
    names: Vec<String>,
    delim: Delim,
    line: usize,
    /// A wide broadcast table: (column, algorithm) for each column that
    /// holds one algorithm's times (`cores,basic_linear,chain,binary_tree`).
    wide: Vec<(usize, u32)>,
}

/// The algorithm a column's name names, if it names one: coll/tuned's
/// names and ids as [`algorithm_of`] reads them (through the label map),
/// spaces and hyphens read as underscores (`Basic Linear`, `binary-tree`).
/// None for any other column, and for a column labelled `skip`.
fn algorithm_column(name: &str, labels: &[(String, String)]) -> Option<u32> {
    if name.trim().is_empty() || is_number(name) {
        return None;
    }
    algorithm_of(name, labels).ok().flatten().or_else(|| {
        algorithm_of(&name.trim().replace([' ', '-'], "_"), labels)
            .ok()
            .flatten()
    })
}

impl Header {
    fn at(&self, f: Field) -> Option<usize> {
        self.cols.iter().position(|c| *c == Some(f))
    }
}

/// The warning of a row that holds a benchmark's `#` line (OSU's banner
/// or column header pasted into a CSV by a script).
const COMMENT_ROW: &str =
    "a benchmark's comment line (`#`) pasted into a row; skipped, nothing to do";

/// A column name as compared: lower case, no spaces or quotes.
fn norm(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_whitespace() && *c != '"' && *c != '\'')
        .flat_map(char::to_lowercase)
        .collect()
}

fn split(line: &str, d: Delim, header: bool) -> Vec<String> {
    let clean = |s: &str| s.trim().trim_matches('"').trim().to_string();
    match d {
        Delim::Comma => line.split(',').map(clean).collect(),
        Delim::Tab => line.split('\t').map(clean).collect(),
        Delim::Spaces if header => {
            // Two or more spaces part names; IMB's `#bytes #repetitions`
            // are single words.
            let mut out = Vec::new();
            let mut cur = String::new();
            let mut spaces = 0;
            for ch in line.trim().chars() {
                if ch == ' ' || ch == '\t' {
                    spaces += 1;
                    continue;
                }
                let word_break = spaces >= 2 || (spaces == 1 && ch == '#');
                if word_break && !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                } else if spaces > 0 && !cur.is_empty() {
                    cur.push(' ');
                }
                spaces = 0;
                cur.push(ch);
            }
            if !cur.is_empty() {
                out.push(cur);
            }
            out
        }
        Delim::Spaces => line.split_whitespace().map(clean).collect(),
    }
}

fn delim_of(line: &str) -> Delim {
    if line.contains('\t') {
        Delim::Tab
    } else if line.contains(',') {
        Delim::Comma
    } else {
        Delim::Spaces
    }
}

fn is_number(s: &str) -> bool {
    s.parse::<f64>().is_ok()
}

struct State<'o> {
    opts: &'o Options,
    algorithm: Option<u32>,
    ranks: Option<u32>,
    mapping: Option<Mapping>,
    placement: Option<Level>,
    bench: Bench,
    header: Option<Header>,
    out: Imported,
    /// The current table's rows of another benchmark, skipped.
    other_rows: usize,
}

/// Parses one file's text. Errors: (line, why), line 0 for the whole file.
pub fn parse(text: &str, opts: &Options) -> Result<Imported, (usize, String)> {
    let mut st = State {
        opts,
        algorithm: opts.algorithm,
        ranks: opts.ranks,
        mapping: opts.mapping,
        placement: opts.placement,
        bench: Bench::Unknown,
        header: None,
        out: Imported::default(),
        other_rows: 0,
    };
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let t = raw.trim();
        if t.is_empty() {
            continue;
        }
        if t.starts_with("#bytes") {
            // IMB's column header.
            st.header = Some(st.header_of(t, Delim::Spaces, line)?);
            continue;
        }
        if let Some(c) = t.strip_prefix('#') {
            st.comment(c.trim(), line)?;
            continue;
        }
        let d = st.header.as_ref().map_or_else(|| delim_of(t), |h| h.delim);
        let fields = split(t, d, false);
        if st.header.is_none() || !fields.iter().any(|f| is_number(f)) {
            let hd = delim_of(t);
            match st.header_of(t, hd, line) {
                Ok(h) => st.header = Some(h),
                Err(e) if st.header.is_none() => return Err(e),
                Err(_) if fields.iter().any(|f| f.starts_with('#')) => {
                    st.skip(line, COMMENT_ROW.into())
                }
                Err(_) => st.skip(
                    line,
                    format!("`{t}` is neither a data row nor a header (no number where the header has one); skipped: fix or delete the line if it holds data"),
                ),
            }
            continue;
        }
        st.row(&fields, line)?;
    }
    st.end_table();
    let mut out = st.out;
    if out.kept == 0 {
        let first = out
            .warnings
            .first()
            .map(|w| format!("; first problem: {w}"))
            .unwrap_or_default();
        return Err((
            0,
            format!("no data row could be read ({} skipped){first}", out.skipped),
        ));
    }
    // Outliers among the point-to-point rows of one placement and size.
    let keys: Vec<_> = out
        .p2p
        .iter()
        .map(|r| (r.placement, r.bytes, r.test == P2pTest::Latency))
        .collect();
    let times: Vec<f64> = out.p2p.iter().map(|r| r.time_us).collect();
    let flags = flag_outliers(&keys, &times);
    let mut n = 0;
    let mut first = None;
    for (r, f) in out.p2p.iter_mut().zip(flags) {
        r.outlier = f;
        if f {
            n += 1;
            first.get_or_insert(r.line);
        }
    }
    if let Some(line) = first {
        out.warnings.push(Warning {
            line,
            what: format!(
                "{n} point-to-point row(s) far from the others of their placement and size (outliers: kept, marked, left out of fits), the first here"
            ),
        });
    }
    Ok(out)
}

impl State<'_> {
    fn skip(&mut self, line: usize, what: String) {
        self.out.skipped += 1;
        self.out.warnings.push(Warning { line, what });
    }

    fn end_table(&mut self) {
        self.other_rows = 0;
    }

    fn origin(&mut self, o: &str) {
        if self.out.origin.is_empty() {
            self.out.origin = o.into();
        } else if !self.out.origin.split('+').any(|x| x == o) {
            self.out.origin = format!("{}+{o}", self.out.origin);
        }
    }

    /// A `#` line: a benchmark's banner, IMB's `#processes`, an OSU column
    /// header, an `mpirun` line echoed, or a remark.
    fn comment(&mut self, c: &str, line: usize) -> Result<(), (usize, String)> {
        let lower = c.to_ascii_lowercase();
        if lower.starts_with("osu mpi") {
            self.end_table();
            self.header = None;
            self.bench = if lower.contains("broadcast") || lower.contains("bcast") {
                Bench::Bcast
            } else if lower.contains("bi-directional") || lower.contains("multi") {
                Bench::Other
            } else if lower.contains("latency test") {
                Bench::Latency
            } else if lower.contains("bandwidth test") {
                Bench::Bandwidth
            } else {
                Bench::Other
            };
            let name = match self.bench {
                Bench::Bcast => "osu_bcast",
                Bench::Latency => "osu_latency",
                Bench::Bandwidth => "osu_bw",
                _ => "",
            };
            if name.is_empty() {
                self.out.warnings.push(Warning {
                    line,
                    what: format!("`{c}`: not a benchmark colltune imports; its rows are skipped"),
                });
            } else {
                self.origin(name);
            }
            return Ok(());
        }
        if let Some(b) = lower.strip_prefix("benchmarking") {
            self.end_table();
            self.header = None;
            let b = b.trim();
            self.bench = match b {
                "bcast" => Bench::Bcast,
                "pingpong" => Bench::Latency,
                _ => Bench::Other,
            };
            match self.bench {
                Bench::Bcast => self.origin("imb:Bcast"),
                Bench::Latency => self.origin("imb:PingPong"),
                _ => self.out.warnings.push(Warning {
                    line,
                    what: format!(
                        "IMB `{}`: not a benchmark colltune imports (Bcast, PingPong); its rows are skipped",
                        c.trim_start_matches(|ch: char| !ch.is_whitespace()).trim()
                    ),
                }),
            }
            return Ok(());
        }
        if let Some(n) = lower.strip_prefix("#processes =") {
            let n = n.trim().parse::<u32>().map_err(|_| {
                (
                    line,
                    format!("`#{c}`: the number of processes is not a whole number"),
                )
            })?;
            self.ranks = Some(n);
            return Ok(());
        }
        // An OSU column header: `# Size   Avg Latency(us) ...`.
        let names = split(c, Delim::Spaces, true);
        if names
            .first()
            .is_some_and(|n| Field::Bytes.known_headers().contains(&norm(n).as_str()))
            && names.len() >= 2
        {
            self.header = Some(self.header_of(c, Delim::Spaces, line)?);
            return Ok(());
        }
        self.mpirun_line(c, line);
        Ok(())
    }

    /// `mpirun -np 8 --map-by socket --mca coll_tuned_bcast_algorithm 5`
    /// (or `OMPI_MCA_coll_tuned_bcast_algorithm=5`) echoed into a comment:
    /// what the tables after it ran with.
    fn mpirun_line(&mut self, c: &str, line: usize) {
        let words: Vec<&str> = c
            .split(|ch: char| ch.is_whitespace() || ch == '=')
            .filter(|w| !w.is_empty())
            .collect();
        for (k, w) in words.iter().enumerate() {
            let next = words.get(k + 1).copied().unwrap_or("");
            match *w {
                "-np" | "-n" | "--np" => {
                    if let Ok(n) = next.parse() {
                        self.ranks = Some(n);
                    }
                }
                "--map-by" | "-map-by" => {
                    let what = next.split(':').next().unwrap_or("");
                    match Mapping::parse(what) {
                        Ok(m) => self.mapping = Some(m),
                        Err(e) => self.out.warnings.push(Warning {
                            line,
                            what: format!("--map-by {next}: {e}; the mapping is unchanged"),
                        }),
                    }
                }
                w if w.ends_with("coll_tuned_bcast_algorithm") => {
                    if let Ok(n) = next.parse::<u32>() {
                        if crate::libraries::ompi::tuned_by_id(n).is_some() {
                            self.algorithm = Some(n);
                        }
                    }
                }
                _ => {}
            }
        }
    }

    fn header_of(&self, t: &str, d: Delim, line: usize) -> Result<Header, (usize, String)> {
        let names = split(t, d, true);
        let normed: Vec<String> = names.iter().map(|n| norm(n)).collect();
        let mut cols: Vec<Option<Field>> = vec![None; names.len()];
        for (f, name) in &self.opts.columns {
            let at = normed
                .iter()
                .position(|n| *n == norm(name))
                .ok_or_else(|| {
                    (
                        line,
                        format!(
                            "--columns {}={name}: no column `{name}` in the header ({})",
                            f.name(),
                            names.join(", ")
                        ),
                    )
                })?;
            cols[at] = Some(*f);
        }
        for f in Field::ALL {
            if cols.contains(&Some(f)) || self.opts.columns.iter().any(|(g, _)| *g == f) {
                continue;
            }
            if let Some(at) = normed
                .iter()
                .enumerate()
                .position(|(k, n)| cols[k].is_none() && f.known_headers().contains(&n.as_str()))
            {
                cols[at] = Some(f);
            }
        }
        // No time column: a wide table, if columns name algorithms.
        let timed = cols.contains(&Some(Field::TimeUs)) || cols.contains(&Some(Field::Mbps));
        let wide = if timed {
            Vec::new()
        } else {
            names
                .iter()
                .enumerate()
                .filter(|(k, _)| cols[*k].is_none())
                .filter_map(|(k, n)| algorithm_column(n, &self.opts.labels).map(|a| (k, a)))
                .collect()
        };
        let h = Header {
            cols,
            names,
            delim: d,
            line,
            wide,
        };
        let hint = "; name the file's columns with --columns, e.g. --columns bytes=Size,time_us=\"Latency (us)\"";
        if h.at(Field::Bytes).is_none() && self.opts.bytes.is_none() {
            return Err((
                line,
                format!(
                    "no message-size column in the header ({}){hint}",
                    h.names.join(", ")
                ),
            ));
        }
        if h.at(Field::TimeUs).is_none() && h.at(Field::Mbps).is_none() && h.wide.is_empty() {
            return Err((
                line,
                format!(
                    "no time column (or bandwidth), nor columns named after algorithms (a wide table), in the header ({}){hint}",
                    h.names.join(", ")
                ),
            ));
        }
        Ok(h)
    }

    /// Whether the current table is a broadcast's (else point-to-point).
    fn is_bcast(&self, h: &Header) -> Result<bool, String> {
        match self.bench {
            Bench::Bcast => return Ok(true),
            Bench::Latency | Bench::Bandwidth => return Ok(false),
            _ => {}
        }
        let bcast =
            h.at(Field::Algorithm).is_some() || h.at(Field::Ranks).is_some() || !h.wide.is_empty();
        let p2p = h.at(Field::Placement).is_some()
            || (h.at(Field::CoreA).is_some() && h.at(Field::CoreB).is_some());
        match (bcast, p2p) {
            (true, false) => Ok(true),
            (false, true) => Ok(false),
            (true, true) => Err("the header has both broadcast (algorithm, ranks) and point-to-point (placement) columns; import them apart".into()),
            (false, false) => {
                match (
                    self.algorithm.is_some() || self.ranks.is_some(),
                    self.placement.is_some(),
                ) {
                    (true, false) => Ok(true),
                    (false, true) => Ok(false),
                    _ => Err("cannot tell a broadcast table from a point-to-point one: give --algorithm and --ranks (broadcast) or --placement (point-to-point), or columns algorithm,ranks / placement".into()),
                }
            }
        }
    }

    fn row(&mut self, f: &[String], line: usize) -> Result<(), (usize, String)> {
        if self.bench == Bench::Other {
            self.other_rows += 1;
            self.out.skipped += 1;
            return Ok(());
        }
        let h = self.header.as_ref().expect("a header before rows");
        if f.len() != h.names.len() {
            let why = format!(
                "{} fields, the header (line {}) has {}; row skipped",
                f.len(),
                h.line,
                h.names.len()
            );
            self.skip(line, why);
            return Ok(());
        }
        if f.iter().any(|x| x.trim_start().starts_with('#')) {
            self.skip(line, COMMENT_ROW.into());
            return Ok(());
        }
        if h.wide.is_empty() {
            return self.cell(f, line, None);
        }
        for (k, a) in h.wide.clone() {
            self.cell(f, line, Some((k, a)))?;
        }
        Ok(())
    }

    /// One row of the table, or of a wide table one algorithm's cell
    /// (`wide`: its column and algorithm).
    fn cell(
        &mut self,
        f: &[String],
        line: usize,
        wide: Option<(usize, u32)>,
    ) -> Result<(), (usize, String)> {
        if wide.is_some_and(|(k, _)| f[k].trim().is_empty()) {
            // An empty cell of a wide table: nothing measured there.
            return Ok(());
        }
        let h = self.header.as_ref().expect("a header before rows");
        let row = Fields { h, f };
        let is_bcast = self.is_bcast(h).map_err(|e| (h.line, e))?;
        let parsed = self.timing(&row, wide).and_then(|t| {
            if is_bcast {
                self.bcast_row(&row, wide, t, line)
            } else {
                self.p2p_row(&row, t, line)
            }
        });
        match parsed {
            Ok(Some(Parsed::Bcast(r))) => {
                if let Some(l) = &self.opts.layout {
                    if r.ranks as usize > l.cores() {
                        return Err((
                            line,
                            format!(
                                "{} ranks do not fit the layout {l} ({} cores, one rank per core); give the whole machine in --layout",
                                r.ranks,
                                l.cores()
                            ),
                        ));
                    }
                }
                self.out.bcast.push(r);
                self.out.kept += 1;
                if self.out.origin.is_empty() {
                    self.origin("table");
                }
            }
            Ok(Some(Parsed::P2p(r))) => {
                self.out.p2p.push(r);
                self.out.kept += 1;
                if self.out.origin.is_empty() {
                    self.origin("table");
                }
            }
            Ok(None) => {
                self.out.skipped += 1;
            }
            Err(why) => self.skip(line, format!("{why}; row skipped")),
        }
        Ok(())
    }

    /// What every row says: its size, its time (or its bandwidth), which
    /// test, the spread and the iterations.
    fn timing(&self, row: &Fields, wide: Option<(usize, u32)>) -> Result<Timing, String> {
        let bytes = row
            .num(Field::Bytes)?
            .or(self.opts.bytes.map(|b| b as f64))
            .ok_or("no message size")?;
        if bytes < 0.0 || bytes.fract() != 0.0 {
            return Err(format!(
                "message size `{bytes}` is not a whole number of bytes"
            ));
        }
        let bytes = bytes as u64;
        if bytes == 0 {
            return Err("a 0-byte row (colltune's sizes start at 1 byte)".into());
        }
        let timed = match wide {
            None => row.num(Field::TimeUs)?,
            Some((k, _)) => row.number(k)?,
        };
        let (time, test) = match (timed, row.num(Field::Mbps)?) {
            (Some(t), _) => (t, P2pTest::Latency),
            (None, Some(bw)) if bw > 0.0 => (bytes as f64 / bw, P2pTest::Bandwidth),
            (None, _) => return Err("no time".into()),
        };
        if time <= 0.0 {
            return Err(format!("time {time} us is not positive"));
        }
        // colltune's own point-to-point CSV says which test each row is.
        let said = row
            .h
            .names
            .iter()
            .position(|n| norm(n) == "test")
            .map(|k| row.f[k].eq_ignore_ascii_case("bandwidth"));
        let test = if self.bench == Bench::Bandwidth || said == Some(true) {
            P2pTest::Bandwidth
        } else {
            test
        };
        Ok(Timing {
            bytes,
            time,
            test,
            min_us: row.num(Field::MinUs)?,
            max_us: row.num(Field::MaxUs)?,
            iterations: row
                .num(Field::Iterations)?
                .filter(|x| *x >= 1.0 && x.fract() == 0.0)
                .map(|x| x as u32),
        })
    }

    /// A broadcast row: its algorithm (None: a label the import leaves
    /// out), ranks and mapping, from the row or the options.
    fn bcast_row(
        &self,
        row: &Fields,
        wide: Option<(usize, u32)>,
        t: Timing,
        line: usize,
    ) -> Result<Option<Parsed>, String> {
        let from_column = match wide {
            Some((_, a)) => Some(Some(a)),
            None => row
                .get(Field::Algorithm)
                .map(|v| algorithm_of(v, &self.opts.labels))
                .transpose()?,
        };
        let algorithm = match from_column {
            Some(Some(a)) => a,
            Some(None) => return Ok(None),
            None => self.algorithm.ok_or(
                "no algorithm: the output does not say which; give --algorithm (Open MPI's coll/tuned id, 0 for its own decision)",
            )?,
        };
        let ranks = match row.num(Field::Ranks)? {
            Some(r) if r >= 1.0 && r.fract() == 0.0 => r as u32,
            Some(r) => return Err(format!("ranks `{r}` is not a whole number")),
            None => self
                .ranks
                .ok_or("no rank count: the output does not say it; give --ranks")?,
        };
        let mapping = match row.get(Field::Mapping) {
            Some(v) if !v.is_empty() => Some(Mapping::parse(v)?),
            _ => self.mapping,
        };
        Ok(Some(Parsed::Bcast(BcastRow {
            algorithm,
            ranks,
            bytes: t.bytes,
            time_us: t.time,
            min_us: t.min_us,
            max_us: t.max_us,
            mapping,
            iterations: t.iterations,
            line,
        })))
    }

    /// A point-to-point row: what the two ranks share, named or from the
    /// two cores and `--layout` (None: a label the import leaves out).
    fn p2p_row(&self, row: &Fields, t: Timing, line: usize) -> Result<Option<Parsed>, String> {
        let pair = (row.num(Field::CoreA)?, row.num(Field::CoreB)?);
        let placement = match (row.get(Field::Placement), pair) {
            (Some(v), _) => match placement_of(v, &self.opts.labels)? {
                Some(p) => p,
                None => return Ok(None),
            },
            (None, (Some(a), Some(b))) => {
                let l = self.opts.layout.as_ref().ok_or(
                    "the rows name two cores, not what they share: give --layout (the machine, its cores numbered as the file numbers them) to say it",
                )?;
                let core = |c: f64| -> Result<usize, String> {
                    (c >= 0.0 && c.fract() == 0.0 && (c as usize) < l.cores())
                        .then_some(c as usize)
                        .ok_or_else(|| format!("core {c} is not a core of the layout {l} (0 to {})", l.cores() - 1))
                };
                let (a, b) = (core(a)?, core(b)?);
                if a == b {
                    return Err(format!("both ranks on core {a}: not a pair of cores"));
                }
                l.level_between(a, b)
            }
            _ => self.placement.ok_or(
                "no placement: the output does not say what the two ranks share; give --placement (cache, numa, socket, node, network)",
            )?,
        };
        Ok(Some(Parsed::P2p(P2pRow {
            placement,
            bytes: t.bytes,
            time_us: t.time,
            min_us: t.min_us,
            max_us: t.max_us,
            p50_us: row.num(Field::P50Us)?,
            test: t.test,
            outlier: false,
            line,
        })))
    }
}

/// One row's fields under its header.
struct Fields<'a> {
    h: &'a Header,
    f: &'a [String],
}

impl Fields<'_> {
    fn get(&self, fld: Field) -> Option<&str> {
        self.h.at(fld).map(|k| self.f[k].as_str())
    }

    /// Column k's value, empty as None.
    fn number(&self, k: usize) -> Result<Option<f64>, String> {
        match self.f[k].as_str() {
            "" => Ok(None),
            v => v
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .map(Some)
                .ok_or_else(|| format!("{} `{v}` is not a number", self.h.names[k])),
        }
    }

    fn num(&self, fld: Field) -> Result<Option<f64>, String> {
        self.h.at(fld).map_or(Ok(None), |k| self.number(k))
    }
}

/// What every row says ([`State::timing`]).
struct Timing {
    bytes: u64,
    time: f64,
    test: P2pTest,
    min_us: Option<f64>,
    max_us: Option<f64>,
    iterations: Option<u32>,
}

enum Parsed {
    Bcast(BcastRow),
    P2p(P2pRow),
}
