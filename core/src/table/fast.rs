//! A fast reader for the block-style YAML colltune writes, straight into
//! [`Table`] with the line of every entry and rule.
//!
//! Tables are read at `MPI_Init`, where every millisecond counts: the
//! general YAML parser takes about 5 ms for a 1,000-rule table, this one a
//! small fraction of that. It understands block mappings and sequences,
//! plain, single- and double-quoted scalars, `[]`-style flow sequences of
//! scalars, `~`/`null`, and comments. Anything else (anchors, flow
//! mappings, multi-line scalars, tabs) makes it step aside: [`parse`]
//! returns `None` and the caller uses the general parser, which accepts all
//! of YAML and reports its own errors. Both fill the same serde types, and a
//! test checks they agree.

use std::collections::BTreeMap;

use super::validate::Problem;
use super::{CommRules, Param, Provenance, Rule, Sweep, Table};

/// Line of each communicator entry and of each of its rules:
/// (collective name, entry index) -> (entry line, rule lines).
#[derive(Clone, Debug, Default)]
pub struct LineIndex {
    entries: BTreeMap<(&'static str, usize), (usize, Vec<usize>)>,
}

impl LineIndex {
    fn entry(&mut self, c: &'static str, comm: usize, line: usize) {
        self.entries.insert((c, comm), (line, Vec::new()));
    }

    fn rule(&mut self, c: &'static str, comm: usize, line: usize) {
        if let Some(e) = self.entries.get_mut(&(c, comm)) {
            e.1.push(line);
        }
    }

    pub fn get(&self, c: &'static str, comm: usize, rule: Option<usize>) -> Option<usize> {
        let e = self.entries.get(&(c, comm))?;
        match rule {
            None => Some(e.0),
            Some(r) => e.1.get(r).copied(),
        }
    }
}

#[derive(Debug)]
enum Node<'a> {
    Scalar {
        text: std::borrow::Cow<'a, str>,
        quoted: bool,
        line: usize,
    },
    Map(Vec<(&'a str, Node<'a>, usize)>),
    Seq(Vec<(Node<'a>, usize)>),
}

struct Line<'a> {
    no: usize,
    indent: usize,
    text: &'a str,
}

/// Not understood: let the general parser handle it.
struct Unsupported;

fn lines(text: &str) -> Result<Vec<Line<'_>>, Unsupported> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len() / 24);
    let (mut start, mut no) = (0usize, 0usize);
    while start < bytes.len() {
        no += 1;
        let end = bytes[start..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |p| start + p);
        let mut e = end;
        while e > start && matches!(bytes[e - 1], b' ' | b'\r') {
            e -= 1;
        }
        let mut b = start;
        while b < e && bytes[b] == b' ' {
            b += 1;
        }
        let next = end + 1;
        if b == e {
            start = next;
            continue;
        }
        match bytes[b] {
            b'#' => {
                start = next;
                continue;
            }
            b'\t' | b'&' | b'*' | b'!' | b'%' => return Err(Unsupported),
            _ => {}
        }
        let body = &text[b..e];
        if body == "---" {
            start = next;
            continue;
        }
        if body == "..." {
            return Err(Unsupported);
        }
        out.push(Line {
            no,
            indent: b - start,
            text: strip_comment(body),
        });
        start = next;
    }
    Ok(out)
}

/// Drops a trailing ` # comment` outside quotes.
fn strip_comment(s: &str) -> &str {
    if !s.as_bytes().contains(&b'#') {
        return s;
    }
    let (mut sq, mut dq) = (false, false);
    let b = s.as_bytes();
    for i in 0..b.len() {
        match b[i] {
            b'\'' if !dq => sq = !sq,
            b'"' if !sq => dq = !dq,
            b'#' if !sq && !dq && i > 0 && b[i - 1] == b' ' => return s[..i].trim_end(),
            _ => {}
        }
    }
    s
}

/// Splits `key: rest` (rest may be empty); None when the line is no mapping entry.
fn split_key(s: &str) -> Option<(&str, &str)> {
    if s.starts_with('"') || s.starts_with('\'') || s.starts_with('[') || s.starts_with('{') {
        return None;
    }
    let b = s.as_bytes();
    let i = (0..b.len()).find(|&i| b[i] == b':' && (i + 1 == b.len() || b[i + 1] == b' '))?;
    let key = &s[..i];
    if key.is_empty()
        || !key
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b' ' || c == b'-')
    {
        return None;
    }
    Some((key, s[i + 1..].trim_start()))
}

fn scalar(s: &str, line: usize) -> Result<Node<'_>, Unsupported> {
    if let Some(rest) = s.strip_prefix('"') {
        let body = rest.strip_suffix('"').ok_or(Unsupported)?;
        if !body.contains('\\') && !body.contains('"') {
            return Ok(Node::Scalar {
                text: body.into(),
                quoted: true,
                line,
            });
        }
        let mut out = String::new();
        let mut it = body.chars();
        while let Some(c) = it.next() {
            match c {
                '\\' => match it.next().ok_or(Unsupported)? {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    '"' => out.push('"'),
                    '\\' => out.push('\\'),
                    '/' => out.push('/'),
                    _ => return Err(Unsupported),
                },
                '"' => return Err(Unsupported),
                c => out.push(c),
            }
        }
        return Ok(Node::Scalar {
            text: out.into(),
            quoted: true,
            line,
        });
    }
    if let Some(rest) = s.strip_prefix('\'') {
        let body = rest.strip_suffix('\'').ok_or(Unsupported)?;
        return Ok(Node::Scalar {
            text: body.replace("''", "'").into(),
            quoted: true,
            line,
        });
    }
    if s.starts_with('{')
        || s.starts_with('|')
        || s.starts_with('>')
        || s.starts_with('&')
        || s.starts_with('*')
        || s.starts_with('!')
    {
        return Err(Unsupported);
    }
    if let Some(inner) = s.strip_prefix('[') {
        let inner = inner.strip_suffix(']').ok_or(Unsupported)?;
        let mut items = Vec::new();
        for part in inner.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            if part.starts_with('[') || part.starts_with('{') || part.contains(": ") {
                return Err(Unsupported);
            }
            items.push((scalar(part, line)?, line));
        }
        return Ok(Node::Seq(items));
    }
    Ok(Node::Scalar {
        text: s.into(),
        quoted: false,
        line,
    })
}

struct Parser<'a> {
    lines: Vec<Line<'a>>,
    pos: usize,
}

impl<'a> Parser<'a> {
    /// A block (mapping or sequence) whose lines are indented `indent`.
    fn block(&mut self, indent: usize) -> Result<Node<'a>, Unsupported> {
        let Some(first) = self.lines.get(self.pos) else {
            return Ok(Node::Map(Vec::new()));
        };
        if first.text.starts_with("- ") || first.text == "-" {
            self.seq(indent)
        } else {
            self.map(indent)
        }
    }

    fn map(&mut self, indent: usize) -> Result<Node<'a>, Unsupported> {
        let mut entries = Vec::with_capacity(10);
        while let Some(l) = self.lines.get(self.pos) {
            if l.indent < indent {
                break;
            }
            if l.indent > indent {
                return Err(Unsupported);
            }
            if l.text.starts_with("- ") {
                break;
            }
            let (key, rest) = split_key(l.text).ok_or(Unsupported)?;
            let (no, lind) = (l.no, l.indent);
            self.pos += 1;
            let value = self.value(rest, no, lind)?;
            entries.push((key, value, no));
        }
        Ok(Node::Map(entries))
    }

    /// The value after `key:` on a line of indent `indent`.
    fn value(&mut self, rest: &'a str, no: usize, indent: usize) -> Result<Node<'a>, Unsupported> {
        if !rest.is_empty() {
            return scalar(rest, no);
        }
        match self.lines.get(self.pos) {
            // A sequence may sit at the key's own indent ("key:\n- a").
            Some(n) if n.indent > indent || (n.indent == indent && n.text.starts_with("- ")) => {
                let ind = n.indent;
                self.block(ind)
            }
            _ => Ok(Node::Scalar {
                text: "".into(),
                quoted: false,
                line: no,
            }),
        }
    }

    fn seq(&mut self, indent: usize) -> Result<Node<'a>, Unsupported> {
        let mut items = Vec::new();
        while let Some(l) = self.lines.get(self.pos) {
            if l.indent != indent || !(l.text.starts_with("- ") || l.text == "-") {
                if l.indent > indent {
                    return Err(Unsupported);
                }
                break;
            }
            let no = l.no;
            let rest = l.text[1..].trim_start();
            if rest.is_empty() {
                self.pos += 1;
                let ind = self.lines.get(self.pos).map(|n| n.indent).unwrap_or(0);
                if ind <= indent {
                    return Err(Unsupported);
                }
                items.push((self.block(ind)?, no));
                continue;
            }
            match split_key(rest) {
                Some((key, val)) => {
                    // "- key: value": a mapping whose further keys are
                    // indented to where `key` starts.
                    let inner = indent + (l.text.len() - rest.len());
                    self.pos += 1;
                    let first = self.value(val, no, inner)?;
                    let mut entries = Vec::with_capacity(10);
                    entries.push((key, first, no));
                    while let Some(n) = self.lines.get(self.pos) {
                        if n.indent != inner || n.text.starts_with("- ") {
                            break;
                        }
                        let (k, rest) = split_key(n.text).ok_or(Unsupported)?;
                        let (kno, kind) = (n.no, n.indent);
                        self.pos += 1;
                        let v = self.value(rest, kno, kind)?;
                        entries.push((k, v, kno));
                    }
                    items.push((Node::Map(entries), no));
                }
                None => {
                    self.pos += 1;
                    items.push((scalar(rest, no)?, no));
                }
            }
        }
        Ok(Node::Seq(items))
    }
}

// ---- typed conversion, with serde's semantics (unknown fields refused) ----

struct Conv {
    problems: Vec<Problem>,
}

fn fix() -> String {
    "fix the YAML (see tuning-tables/README.md for the schema)".into()
}

impl Conv {
    fn bad(&mut self, line: usize, what: String) {
        self.problems.push(Problem {
            line: Some(line),
            what,
            fix: fix(),
        });
    }

    fn text(&mut self, n: &Node, field: &str) -> Option<String> {
        match n {
            Node::Scalar { text, .. } => Some(text.to_string()),
            _ => {
                self.bad(line_of(n), format!("{field}: expected a string"));
                None
            }
        }
    }

    fn opt_text(&mut self, n: &Node, field: &str) -> Option<Option<String>> {
        match n {
            Node::Scalar {
                text,
                quoted: false,
                ..
            } if is_null(text) => Some(None),
            _ => self.text(n, field).map(Some),
        }
    }

    fn uint(&mut self, n: &Node, field: &str) -> Option<u64> {
        match n {
            Node::Scalar {
                text,
                quoted: false,
                line,
            } => match text.parse::<u64>() {
                Ok(v) => Some(v),
                Err(_) => {
                    self.bad(
                        *line,
                        format!("{field}: invalid type: `{text}` is not an unsigned integer"),
                    );
                    None
                }
            },
            _ => {
                self.bad(line_of(n), format!("{field}: expected an unsigned integer"));
                None
            }
        }
    }

    fn u32(&mut self, n: &Node, field: &str) -> Option<u32> {
        let v = self.uint(n, field)?;
        match u32::try_from(v) {
            Ok(v) => Some(v),
            Err(_) => {
                self.bad(line_of(n), format!("{field}: {v} is too large"));
                None
            }
        }
    }

    fn opt_uint(&mut self, n: &Node, field: &str) -> Option<Option<u64>> {
        match n {
            Node::Scalar {
                text,
                quoted: false,
                ..
            } if is_null(text) => Some(None),
            _ => self.uint(n, field).map(Some),
        }
    }

    fn opt_float(&mut self, n: &Node, field: &str) -> Option<Option<f64>> {
        match n {
            Node::Scalar {
                text,
                quoted: false,
                ..
            } if is_null(text) => Some(None),
            Node::Scalar {
                text,
                quoted: false,
                line,
            } => match parse_float(text) {
                Some(v) => Some(Some(v)),
                None => {
                    self.bad(
                        *line,
                        format!("{field}: invalid type: `{text}` is not a number"),
                    );
                    None
                }
            },
            _ => {
                self.bad(line_of(n), format!("{field}: expected a number"));
                None
            }
        }
    }

    fn seq<'n, 'a>(&mut self, n: &'n Node<'a>, field: &str) -> Option<&'n [(Node<'a>, usize)]> {
        match n {
            Node::Seq(v) => Some(v),
            Node::Scalar {
                text,
                quoted: false,
                ..
            } if text.is_empty() => Some(&[]),
            _ => {
                self.bad(line_of(n), format!("{field}: expected a sequence"));
                None
            }
        }
    }

    /// A mapping; with `known` non-empty, unknown keys are reported.
    fn map<'n, 'a>(
        &mut self,
        n: &'n Node<'a>,
        field: &str,
        known: &[&str],
    ) -> Option<&'n [(&'a str, Node<'a>, usize)]> {
        match n {
            Node::Map(m) => {
                for (k, _, line) in m {
                    if !known.is_empty() && !known.contains(k) {
                        self.bad(
                            *line,
                            format!(
                                "{field}: unknown field `{k}`, expected one of {}",
                                known
                                    .iter()
                                    .map(|k| format!("`{k}`"))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                        );
                    }
                }
                Some(m)
            }
            _ => {
                self.bad(line_of(n), format!("{field}: expected a mapping"));
                None
            }
        }
    }
}

fn is_null(s: &str) -> bool {
    matches!(s, "" | "~" | "null" | "Null" | "NULL")
}

fn parse_float(s: &str) -> Option<f64> {
    match s {
        ".inf" | ".Inf" | ".INF" | "+.inf" => Some(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => Some(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => Some(f64::NAN),
        _ => s.parse().ok(),
    }
}

fn line_of(n: &Node) -> usize {
    match n {
        Node::Scalar { line, .. } => *line,
        Node::Map(m) => m.first().map(|e| e.2).unwrap_or(0),
        Node::Seq(s) => s.first().map(|e| e.1).unwrap_or(0),
    }
}

fn get<'n, 'a>(m: &'n [(&'a str, Node<'a>, usize)], key: &str) -> Option<&'n Node<'a>> {
    m.iter().find(|e| e.0 == key).map(|e| &e.1)
}

/// Parses the table, or `None` when the text uses YAML this reader leaves
/// to the general parser.
pub fn parse(text: &str) -> Option<Result<(Table, LineIndex), Vec<Problem>>> {
    let ls = lines(text).ok()?;
    let mut p = Parser { lines: ls, pos: 0 };
    let root = p.block(0).ok()?;
    if p.pos != p.lines.len() {
        return None;
    }
    let mut c = Conv {
        problems: Vec::new(),
    };
    let mut idx = LineIndex::default();
    let table = convert(&root, &mut c, &mut idx);
    Some(match table {
        Some(t) if c.problems.is_empty() => Ok((t, idx)),
        _ => Err(c.problems),
    })
}

fn missing(c: &mut Conv, line: usize, what: &str, field: &str) {
    c.bad(line, format!("{what}: missing field `{field}`"));
}

fn convert(root: &Node, c: &mut Conv, idx: &mut LineIndex) -> Option<Table> {
    let m = c.map(root, "table", &["schema", "provenance", "bcast", "swap"])?;
    let schema = match get(m, "schema") {
        Some(n) => c.u32(n, "schema"),
        None => {
            missing(c, 1, "table", "schema");
            None
        }
    };
    let provenance = match get(m, "provenance") {
        Some(n) => provenance(n, c),
        None => {
            missing(c, 1, "table", "provenance");
            None
        }
    };
    let mut comms = |name: &'static str, c: &mut Conv| -> Vec<CommRules> {
        let Some(n) = get(m, name) else {
            return Vec::new();
        };
        let Some(items) = c.seq(n, name) else {
            return Vec::new();
        };
        items
            .iter()
            .enumerate()
            .filter_map(|(ci, (item, line))| {
                idx.entry(name, ci, *line);
                comm_rules(item, *line, name, ci, c, idx)
            })
            .collect()
    };
    let bcast = comms("bcast", c);
    let swap = comms("swap", c);
    Some(Table {
        schema: schema?,
        provenance: provenance?,
        bcast,
        swap,
    })
}

fn provenance(n: &Node, c: &mut Conv) -> Option<Provenance> {
    let m = c.map(
        n,
        "provenance",
        &[
            "host", "cluster", "mpi", "date", "command", "colltune", "source", "sweep",
        ],
    )?;
    let line = line_of(n);
    let req = |key: &str, c: &mut Conv| match get(m, key) {
        Some(v) => c.text(v, key),
        None => {
            missing(c, line, "provenance", key);
            None
        }
    };
    let host = req("host", c);
    let mpi = req("mpi", c);
    let date = req("date", c);
    let command = req("command", c);
    let colltune = req("colltune", c);
    let source = req("source", c);
    let cluster = match get(m, "cluster") {
        Some(v) => c.opt_text(v, "cluster")?,
        None => None,
    };
    let sweep = match get(m, "sweep") {
        Some(v) => sweep(v, c),
        None => {
            missing(c, line, "provenance", "sweep");
            None
        }
    };
    Some(Provenance {
        host: host?,
        cluster,
        mpi: mpi?,
        date: date?,
        command: command?,
        colltune: colltune?,
        source: source?,
        sweep: sweep?,
    })
}

fn sweep(n: &Node, c: &mut Conv) -> Option<Sweep> {
    let m = c.map(
        n,
        "sweep",
        &[
            "mode",
            "sizes",
            "runs",
            "budget_ms",
            "executions",
            "cache",
            "root",
            "raw",
            "seconds",
            "points",
        ],
    )?;
    let mut s = Sweep::default();
    for (k, v, _) in m {
        match *k {
            "mode" => s.mode = c.text(v, k)?,
            "sizes" => {
                s.sizes = c
                    .seq(v, k)?
                    .iter()
                    .filter_map(|(x, _)| c.uint(x, k))
                    .collect()
            }
            "runs" => s.runs = c.u32(v, k)?,
            "budget_ms" => s.budget_ms = c.uint(v, k)?,
            "executions" => {
                s.executions = c
                    .seq(v, k)?
                    .iter()
                    .filter_map(|(x, _)| c.text(x, k))
                    .collect()
            }
            "cache" => s.cache = c.text(v, k)?,
            "root" => s.root = c.text(v, k)?,
            "raw" => {
                s.raw = c
                    .seq(v, k)?
                    .iter()
                    .filter_map(|(x, _)| c.text(x, k))
                    .collect()
            }
            "seconds" => s.seconds = c.opt_float(v, k)?,
            "points" => s.points = c.opt_uint(v, k)?,
            _ => {}
        }
    }
    if get(m, "mode").is_none() {
        missing(c, line_of(n), "sweep", "mode");
        return None;
    }
    Some(s)
}

fn comm_rules(
    n: &Node,
    line: usize,
    coll: &'static str,
    ci: usize,
    c: &mut Conv,
    idx: &mut LineIndex,
) -> Option<CommRules> {
    let m = c.map(n, coll, &["ranks", "ppn", "nodes", "rules"])?;
    let num = |key: &str, c: &mut Conv| match get(m, key) {
        Some(v) => c.u32(v, key),
        None => {
            missing(c, line, coll, key);
            None
        }
    };
    let ranks = num("ranks", c);
    let ppn = num("ppn", c);
    let nodes = num("nodes", c);
    let rules = match get(m, "rules") {
        Some(v) => {
            let items = c.seq(v, "rules")?;
            let mut out = Vec::with_capacity(items.len());
            for (ri, (item, rline)) in items.iter().enumerate() {
                let _ = ri;
                idx.rule(coll, ci, *rline);
                if let Some(r) = rule(item, *rline, c) {
                    out.push(r);
                }
            }
            Some(out)
        }
        None => {
            missing(c, line, coll, "rules");
            None
        }
    };
    Some(CommRules {
        ranks: ranks?,
        ppn: ppn?,
        nodes: nodes?,
        rules: rules?,
    })
}

const RULE_FIELDS: &[&str] = &[
    "min_bytes",
    "max_bytes",
    "algorithm",
    "params",
    "execution",
    "time_us",
    "at_bytes",
    "runner_up",
    "margin",
];

fn rule(n: &Node, line: usize, c: &mut Conv) -> Option<Rule> {
    // Unknown fields are caught in the match below (the hot path).
    let m = c.map(n, "rule", &[])?;
    let mut r = Rule {
        min_bytes: 0,
        max_bytes: None,
        algorithm: String::new(),
        params: BTreeMap::new(),
        execution: String::new(),
        time_us: None,
        at_bytes: None,
        runner_up: None,
        margin: None,
    };
    let mut seen = [false; 3];
    for (k, v, _) in m {
        match *k {
            "min_bytes" => {
                r.min_bytes = c.uint(v, k)?;
                seen[0] = true;
            }
            "max_bytes" => r.max_bytes = c.opt_uint(v, k)?,
            "algorithm" => {
                r.algorithm = c.text(v, k)?;
                seen[1] = true;
            }
            "execution" => {
                r.execution = c.text(v, k)?;
                seen[2] = true;
            }
            "time_us" => r.time_us = c.opt_float(v, k)?,
            "at_bytes" => r.at_bytes = c.opt_uint(v, k)?,
            "runner_up" => r.runner_up = c.opt_text(v, k)?,
            "margin" => r.margin = c.opt_float(v, k)?,
            "params" => {
                if let Node::Scalar {
                    text,
                    quoted: false,
                    ..
                } = v
                {
                    if is_null(text) {
                        continue;
                    }
                }
                let Node::Map(pm) = v else {
                    c.bad(line_of(v), "params: expected a mapping".into());
                    return None;
                };
                for (pk, pv, pline) in pm {
                    let p = match pv {
                        Node::Scalar {
                            text,
                            quoted: false,
                            ..
                        } => match text.parse::<u64>() {
                            Ok(i) => Param::Int(i),
                            Err(_) => Param::Text(text.to_string()),
                        },
                        Node::Scalar {
                            text, quoted: true, ..
                        } => Param::Text(text.to_string()),
                        _ => {
                            c.bad(*pline, format!("params.{pk}: expected a number or text"));
                            return None;
                        }
                    };
                    r.params.insert(pk.to_string(), p);
                }
            }
            other => {
                let line = line_of(v);
                c.bad(
                    line,
                    format!(
                        "rule: unknown field `{other}`, expected one of {}",
                        RULE_FIELDS
                            .iter()
                            .map(|k| format!("`{k}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                );
            }
        }
    }
    for (i, f) in ["min_bytes", "algorithm", "execution"].iter().enumerate() {
        if !seen[i] {
            missing(c, line, "rule", f);
            return None;
        }
    }
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serde(text: &str) -> Table {
        serde_yaml::from_str(text).unwrap()
    }

    #[test]
    fn agrees_with_the_general_parser_on_what_colltune_writes() {
        let text = r#"# a comment
schema: 1
provenance:
  host: vm
  mpi: Open MPI v4.1.4  # trailing comment
  date: 2026-11-30T13:54:00Z
  command: 'colltune tune --csv a.csv'
  colltune: 0.1.0
  source: measured
  sweep:
    mode: adaptive
    sizes:
    - 1
    - 2
    runs: 4
    executions: [blocking, nonblocking]
    seconds: 14.2
bcast:
- ranks: 4
  ppn: 4
  nodes: 1
  rules:
  - min_bytes: 0
    max_bytes: 5792
    algorithm: knomial
    params:
      radix: 4
      segment: "64K"
    execution: blocking
    time_us: 4.8
    runner_up: chain:fanout=4,segment=0 [blocking]
    margin: 0.001
  - min_bytes: 5793
    max_bytes: ~
    algorithm: hierarchical
    params:
      inter: pipeline(segment=65536)
      intra: linear
    execution: nonblocking
swap:
  - ranks: 2
    ppn: 1
    nodes: 2
    rules:
      - min_bytes: 0
        algorithm: "sendrecv"
        execution: blocking
"#;
        let (t, idx) = parse(text).unwrap().unwrap();
        assert_eq!(t, serde(text));
        assert_eq!(idx.get("bcast", 0, Some(1)), Some(33));
        assert_eq!(idx.get("swap", 0, None), Some(41));
        // what serde writes reads back the same way
        let again = t.to_yaml().unwrap();
        let (t2, _) = parse(&again).unwrap().unwrap();
        assert_eq!(t2, t);
    }

    #[test]
    fn steps_aside_for_yaml_it_does_not_read() {
        assert!(parse("schema: 1\nprovenance: {host: a}\n").is_none());
        assert!(parse("schema: &a 1\n").is_none());
        assert!(parse("schema: 1\ncommand: |\n  multi\n").is_none());
    }

    #[test]
    fn type_errors_and_unknown_fields_have_lines() {
        let text = "schema: 1\nprovenance:\n  host: a\n  mpi: b\n  date: c\n  command: d\n  colltune: e\n  source: f\n  colour: red\n  sweep:\n    mode: built\nbcast:\n- ranks: four\n  ppn: 1\n  nodes: 1\n  rules: []\n";
        let e = parse(text).unwrap().unwrap_err();
        let all: Vec<String> = e.iter().map(|p| p.to_string()).collect();
        assert!(
            all.iter()
                .any(|p| p.starts_with("line 9:") && p.contains("unknown field `colour`")),
            "{all:?}"
        );
        assert!(
            all.iter()
                .any(|p| p.starts_with("line 13:") && p.contains("ranks")),
            "{all:?}"
        );
    }
}
