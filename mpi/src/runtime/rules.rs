//! Open MPI coll/tuned's classic rules file (MPI-free): read, merged with
//! the handoff's broadcast rules, written.
//!
//! The format Open MPI 4.1 reads (and 5.0, which also takes an optional
//! `rule-file-version-2` first line adding a fifth number, the maximum
//! requests, to a message rule's line): numbers separated by white space,
//! `#` starting a comment to the end of its line:
//!
//! ```text
//! NCOL                        number of collectives
//!   ID                        collective id (allgather 0, allreduce 2, bcast 7, ...)
//!   NCOMSIZES                 number of communicator sizes
//!     COMSIZE                 communicator size
//!     NMSGSIZES               number of message sizes
//!       MSGSIZE ALG FANINOUT SEGSIZE [MAXREQ]   the first MSGSIZE is 0
//! ```
//!
//! Open MPI gives a communicator the rules of the last listed size, in the
//! file's order, not above its size before the first one above it (the
//! first listed size where every one is above: [`RulesFile::lookup`]);
//! within them, a message the rule of the largest `MSGSIZE` not above its
//! byte count.
//!
//! Where the site's own rules file is active (dynamic rules on by the
//! site's or the user's choice), the handoff's file replaces it in Open
//! MPI's variable, so [`merge`] keeps every other collective's rules as
//! they are and the site's broadcast rules wherever the table does not
//! speak (communicator sizes it has no handed-off rule for), and says
//! which of them the table's rules supersede.

use std::fmt::Write as _;

/// Open MPI's collective ids (`COLLTYPE_T`); `COLLCOUNT` is their number.
const NAMES: [&str; 22] = [
    "allgather",
    "allgatherv",
    "allreduce",
    "alltoall",
    "alltoallv",
    "alltoallw",
    "barrier",
    "bcast",
    "exscan",
    "gather",
    "gatherv",
    "reduce",
    "reduce_scatter",
    "reduce_scatter_block",
    "scan",
    "scatter",
    "scatterv",
    "neighbor_allgather",
    "neighbor_allgatherv",
    "neighbor_alltoall",
    "neighbor_alltoallv",
    "neighbor_alltoallw",
];

/// Broadcast's collective id.
pub const BCAST: u64 = 7;

/// One message-size rule: from `from` bytes up to the next rule's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MsgRule {
    pub from: u64,
    pub alg: u64,
    pub faninout: u64,
    pub segment: u64,
    /// The fifth number (`rule-file-version-2` only).
    pub max_requests: Option<u64>,
}

/// One communicator size's message rules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommSize {
    pub ranks: u64,
    pub rules: Vec<MsgRule>,
    /// The line of its size in the file it was read from (0: made here).
    pub line: usize,
}

/// One collective's communicator sizes, in the file's order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Collective {
    pub id: u64,
    pub sizes: Vec<CommSize>,
}

/// A whole rules file.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct RulesFile {
    /// 1 (no header) or 2 (`rule-file-version-2`).
    pub version: u32,
    pub collectives: Vec<Collective>,
}

/// Why a rules file cannot be read: `file:line: what`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub file: String,
    pub line: usize,
    pub what: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.what)
    }
}

/// A collective's name: `allreduce (2)`.
pub fn name(id: u64) -> String {
    match NAMES.get(id as usize) {
        Some(n) => format!("{n} ({id})"),
        None => format!("collective {id}"),
    }
}

/// A number as Open MPI's `%li` reads it: decimal, `0x` hexadecimal, or
/// octal with a leading 0.
fn number(tok: &str) -> Option<u64> {
    let t = tok.strip_prefix('+').unwrap_or(tok);
    if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else if t.len() > 1 && t.starts_with('0') {
        u64::from_str_radix(&t[1..], 8).ok()
    } else {
        t.parse().ok()
    }
}

struct Tokens<'a> {
    file: &'a str,
    /// (line, number) in order.
    toks: Vec<(usize, u64)>,
    at: usize,
    last_line: usize,
}

impl Tokens<'_> {
    fn err(&self, line: usize, what: String) -> ParseError {
        ParseError {
            file: self.file.to_string(),
            line,
            what,
        }
    }

    fn next(&mut self, what: &str) -> Result<(usize, u64), ParseError> {
        match self.toks.get(self.at) {
            Some(&t) => {
                self.at += 1;
                Ok(t)
            }
            None => Err(self.err(
                self.last_line,
                format!("the file ends where {what} was expected"),
            )),
        }
    }

    /// The next number where it is on `line` (a message rule's fifth).
    fn on_line(&mut self, line: usize) -> Option<u64> {
        match self.toks.get(self.at) {
            Some(&(l, v)) if l == line => {
                self.at += 1;
                Some(v)
            }
            _ => None,
        }
    }
}

/// Reads a classic rules file's text (`file` names it in errors). Refuses,
/// naming the line, what Open MPI would refuse (a collective id it does not
/// have, a first message rule not from 0 bytes) and what colltune could not
/// write back faithfully (anything but numbers and comments, a collective
/// listed twice, numbers after the last collective, a JSON file).
pub fn parse(text: &str, file: &str) -> Result<RulesFile, ParseError> {
    let err = |line: usize, what: String| ParseError {
        file: file.to_string(),
        line,
        what,
    };
    let mut body = text;
    let mut version = 1;
    if let Some(rest) = text.strip_prefix("rule-file-version-") {
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        version = digits.parse().map_err(|_| {
            err(
                1,
                "`rule-file-version-` is not followed by a version number".into(),
            )
        })?;
        if !(1..=2).contains(&version) {
            return Err(err(
                1,
                format!("rule-file-version-{version}: colltune knows versions 1 and 2"),
            ));
        }
        body = &rest[digits.len()..];
    } else if text.trim_start().starts_with('{') {
        return Err(err(
            1,
            "a JSON rules file (Open MPI 6.0's format): colltune merges only the classic format"
                .into(),
        ));
    }
    let mut toks = Vec::new();
    let mut last_line = 1;
    for (i, line) in body.lines().enumerate() {
        let code = line.split('#').next().unwrap_or("");
        for tok in code.split_whitespace() {
            let v = number(tok).ok_or_else(|| {
                err(
                    i + 1,
                    format!("`{tok}` is not a number (only numbers and # comments belong in a rules file)"),
                )
            })?;
            toks.push((i + 1, v));
        }
        last_line = i + 1;
    }
    let mut t = Tokens {
        file,
        toks,
        at: 0,
        last_line,
    };
    let (line, ncol) = t.next("the number of collectives")?;
    if ncol > NAMES.len() as u64 {
        return Err(t.err(
            line,
            format!(
                "{ncol} collectives: Open MPI has {} (it would ignore the whole file)",
                NAMES.len()
            ),
        ));
    }
    let mut collectives: Vec<Collective> = Vec::new();
    for _ in 0..ncol {
        let (line, id) = t.next("a collective id")?;
        if id >= NAMES.len() as u64 {
            return Err(t.err(
                line,
                format!(
                    "collective id {id}: Open MPI's ids are 0-{} (it would ignore the whole file)",
                    NAMES.len() - 1
                ),
            ));
        }
        if collectives.iter().any(|c| c.id == id) {
            return Err(t.err(line, format!("{} is listed twice", name(id))));
        }
        let (_, nsizes) = t.next(&format!("{}'s number of communicator sizes", name(id)))?;
        let mut sizes = Vec::new();
        for _ in 0..nsizes {
            let (line, ranks) = t.next(&format!("a communicator size of {}", name(id)))?;
            let (_, nmsg) = t.next(&format!(
                "{}'s number of message sizes for {ranks} ranks",
                name(id)
            ))?;
            let mut rules = Vec::new();
            for k in 0..nmsg {
                let what = format!("{}'s message rule for {ranks} ranks", name(id));
                let (mline, from) = t.next(&what)?;
                if k == 0 && from != 0 {
                    return Err(t.err(
                        mline,
                        format!("{}'s first message rule for {ranks} ranks starts at {from} bytes: Open MPI needs it from 0 (it would ignore the whole file)", name(id)),
                    ));
                }
                let (_, alg) = t.next(&what)?;
                let (_, faninout) = t.next(&what)?;
                let (sline, segment) = t.next(&what)?;
                let max_requests = if version > 1 { t.on_line(sline) } else { None };
                rules.push(MsgRule {
                    from,
                    alg,
                    faninout,
                    segment,
                    max_requests,
                });
            }
            sizes.push(CommSize { ranks, rules, line });
        }
        collectives.push(Collective { id, sizes });
    }
    if let Some(&(line, v)) = t.toks.get(t.at) {
        return Err(t.err(
            line,
            format!("`{v}` after the last of the {ncol} collectives the file announces (Open MPI would ignore it; colltune does not guess)"),
        ));
    }
    Ok(RulesFile {
        version,
        collectives,
    })
}

impl RulesFile {
    pub fn collective(&self, id: u64) -> Option<&Collective> {
        self.collectives.iter().find(|c| c.id == id)
    }

    /// The rules Open MPI gives a communicator of `ranks` for collective
    /// `id`: the last listed size not above `ranks` before the first one
    /// above it, in the file's order (the first listed where that is the
    /// first); None: Open MPI's fixed decision.
    pub fn lookup(&self, id: u64, ranks: u64) -> Option<&CommSize> {
        let sizes = &self.collective(id)?.sizes;
        let mut best = sizes.first()?;
        for s in sizes {
            if s.ranks > ranks {
                break;
            }
            best = s;
        }
        Some(best)
    }

    /// The file's text (a first comment line saying where it comes from).
    pub fn write(&self, first: &str) -> String {
        let mut out = String::new();
        if self.version > 1 {
            let _ = writeln!(out, "rule-file-version-{}", self.version);
        }
        let _ = writeln!(
            out,
            "{} # number of collectives ({first})",
            self.collectives.len()
        );
        for c in &self.collectives {
            let _ = writeln!(out, "{} # collective id: {}", c.id, name(c.id));
            let _ = writeln!(out, "{} # number of communicator sizes", c.sizes.len());
            for s in &c.sizes {
                let _ = writeln!(out, "{} # communicator size", s.ranks);
                let _ = writeln!(out, "{} # number of message sizes", s.rules.len());
                for r in &s.rules {
                    let _ = write!(out, "{} {} {} {}", r.from, r.alg, r.faninout, r.segment);
                    if let (Some(m), true) = (r.max_requests, self.version > 1) {
                        let _ = write!(out, " {m}");
                    }
                    out.push('\n');
                }
            }
        }
        out
    }
}

/// A site's broadcast rules the table's rules take the place of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Superseded {
    /// The communicator size the table covers.
    pub ranks: u64,
    /// The site's entry Open MPI would have used there, and its line.
    pub entry: u64,
    pub line: usize,
}

/// The site's rules file with the handoff's broadcast rules for the
/// communicator sizes `covered` (the handoff's own file gives them):
/// every other collective as the site has it, the site's broadcast rules
/// for every other size (the handoff's entries for a size right after a
/// covered one say Open MPI's fixed decision, which is not what the site
/// runs there), and, where the site has no broadcast rule for a size,
/// Open MPI's fixed decision (algorithm 0), including sizes below the
/// smallest listed one (where Open MPI would take the first listed
/// size's rules). Also which of the site's broadcast rules are superseded.
pub fn merge(
    site: &RulesFile,
    handoff: &RulesFile,
    covered: &[u64],
) -> (RulesFile, Vec<Superseded>) {
    let fixed = || {
        vec![MsgRule {
            from: 0,
            alg: 0,
            faninout: 0,
            segment: 0,
            max_requests: None,
        }]
    };
    let mut points: Vec<u64> = vec![0];
    if let Some(c) = site.collective(BCAST) {
        points.extend(c.sizes.iter().map(|s| s.ranks));
    }
    for &c in covered {
        points.push(c);
        if !covered.contains(&(c + 1)) {
            points.push(c + 1);
        }
    }
    points.sort_unstable();
    points.dedup();
    let mut sizes: Vec<CommSize> = Vec::new();
    let mut superseded = Vec::new();
    for p in points {
        let site_rules = site.lookup(BCAST, p);
        let rules = if covered.contains(&p) {
            if let Some(s) = site_rules {
                superseded.push(Superseded {
                    ranks: p,
                    entry: s.ranks,
                    line: s.line,
                });
            }
            handoff
                .lookup(BCAST, p)
                .map_or_else(fixed, |s| s.rules.clone())
        } else {
            site_rules.map_or_else(fixed, |s| s.rules.clone())
        };
        if sizes.last().is_some_and(|l| l.rules == rules) {
            continue;
        }
        sizes.push(CommSize {
            ranks: p,
            rules,
            line: 0,
        });
    }
    let bcast = Collective { id: BCAST, sizes };
    let mut collectives: Vec<Collective> = Vec::new();
    let mut placed = false;
    for c in &site.collectives {
        if c.id == BCAST {
            collectives.push(bcast.clone());
            placed = true;
        } else {
            collectives.push(c.clone());
        }
    }
    if !placed {
        collectives.push(bcast);
    }
    (
        RulesFile {
            version: site.version.max(1),
            collectives,
        },
        superseded,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const SITE: &str = "\
# the site's rules
2 # collectives
2 # allreduce
2 # sizes
0 # from 0 ranks
1
0 3 0 0
8
2
0 1 0 0
0x1000 4 0 0 # 4 KiB up: ring
7 # bcast
2
2
1
0 6 0 0
16
1
0 5 0 8192
";

    fn strip(mut f: RulesFile) -> RulesFile {
        for c in &mut f.collectives {
            for s in &mut c.sizes {
                s.line = 0;
            }
        }
        f
    }

    #[test]
    fn reads_open_mpi_numbers_and_round_trips() {
        let f = parse(SITE, "site.rules").unwrap();
        assert_eq!(f.version, 1);
        assert_eq!(f.collectives.len(), 2);
        let ar = f.collective(2).unwrap();
        assert_eq!(ar.sizes[1].ranks, 8);
        assert_eq!(ar.sizes[1].rules[1].from, 4096);
        assert_eq!(ar.sizes[1].line, 8);
        let again = parse(&f.write("test"), "again").unwrap();
        assert_eq!(strip(again), strip(f.clone()));
        // Octal like Open MPI's %li; version 2's fifth number on its line.
        let v2 = "rule-file-version-2\n1\n3\n1\n010\n2\n0 1 0 0 4\n100 2 0 0\n";
        let f2 = parse(v2, "v2").unwrap();
        let s = &f2.collective(3).unwrap().sizes[0];
        assert_eq!(s.ranks, 8);
        assert_eq!(s.rules[0].max_requests, Some(4));
        assert_eq!(s.rules[1].max_requests, None);
        assert_eq!(strip(parse(&f2.write("t"), "t").unwrap()), strip(f2));
    }

    #[test]
    fn open_mpi_lookup_takes_the_first_size_below_the_smallest() {
        let f = parse(SITE, "site.rules").unwrap();
        // bcast lists 2 and 16: 1 rank gets 2's rules (the first listed).
        assert_eq!(f.lookup(BCAST, 1).unwrap().ranks, 2);
        assert_eq!(f.lookup(BCAST, 15).unwrap().ranks, 2);
        assert_eq!(f.lookup(BCAST, 16).unwrap().ranks, 16);
        assert_eq!(f.lookup(BCAST, 1000).unwrap().ranks, 16);
        assert!(f.lookup(3, 4).is_none());
    }

    #[test]
    fn malformed_files_name_the_file_and_line() {
        let cases = [
            ("1\n7\n1\n4\n1\n0 6 0 zero\n", 6, "`zero` is not a number"),
            ("1\n7\n1\n4\n1\n16 6 0 0\n", 6, "from 0"),
            ("1\n7\n1\n4\n2\n0 6 0 0\n", 6, "the file ends"),
            ("1\n30\n", 2, "collective id 30"),
            ("2\n7\n0\n7\n0\n", 4, "listed twice"),
            ("1\n7\n0\n5\n", 4, "after the last"),
            ("rule-file-version-3\n0\n", 1, "versions 1 and 2"),
            ("{\"rule_file_version\": 3}", 1, "JSON"),
            ("", 1, "the number of collectives"),
        ];
        for (text, line, what) in cases {
            let e = parse(text, "/etc/site.rules").unwrap_err();
            assert_eq!(e.line, line, "{text:?}: {e}");
            assert!(
                e.to_string()
                    .starts_with(&format!("/etc/site.rules:{line}: ")),
                "{e}"
            );
            assert!(e.what.contains(what), "{text:?}: {e}");
        }
    }

    #[test]
    fn merge_keeps_the_site_everywhere_the_table_is_silent() {
        let site = parse(SITE, "site.rules").unwrap();
        // The handoff's file for 4 ranks (and 5: fixed), as core writes it.
        let handoff = parse(
            "1\n7\n2\n4\n2\n0 1 0 0\n1024 6 0 0\n5\n1\n0 0 0 0\n",
            "handoff",
        )
        .unwrap();
        let (m, sup) = merge(&site, &handoff, &[4]);
        let again = strip(parse(&m.write("merged"), "merged").unwrap());
        assert_eq!(again, strip(m.clone()));
        // Allreduce untouched.
        assert_eq!(m.collective(2), site.collective(2));
        for ranks in 0..40u64 {
            let got = m.lookup(BCAST, ranks).map(|s| s.rules.clone());
            let want = if ranks == 4 {
                handoff.lookup(BCAST, 4).map(|s| s.rules.clone())
            } else {
                site.lookup(BCAST, ranks).map(|s| s.rules.clone())
            };
            assert_eq!(got, want, "{ranks} ranks");
        }
        assert_eq!(
            sup,
            [Superseded {
                ranks: 4,
                entry: 2,
                line: 14
            }]
        );
        // No site file: the handoff alone, with sizes below the smallest
        // covered one at Open MPI's fixed decision (not 4's rules).
        let (alone, none) = merge(&RulesFile::default(), &handoff, &[4]);
        assert!(none.is_empty());
        assert_eq!(alone.lookup(BCAST, 3).unwrap().rules[0].alg, 0);
        assert_eq!(alone.lookup(BCAST, 4).unwrap().rules[1].alg, 6);
        assert_eq!(alone.lookup(BCAST, 9).unwrap().rules[0].alg, 0);
        assert_eq!(alone.collectives.len(), 1);
    }
}
