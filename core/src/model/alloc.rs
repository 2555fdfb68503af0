//! Where a job's ranks really ran: an allocation, read from the file a
//! benchmark wrote (pico's `alloc.csv`: each rank's node) or from a Slurm
//! node list (`SLURM_JOB_NODELIST` syntax, `lrdn[0001-0004,0010],lrdn0100`),
//! and the naming rule that puts each node in a group of nodes (a
//! dragonfly's group, a fat tree's leaf switch): the levels above the node
//! that a layout's counts (`group:8,node:32`) can only guess.
//!
//! ```text
//!   alloc.csv            MPI_Rank,allocation      node list
//!   0,lrdn0005.leonardo.local                     lrdn[0005-0006,0019]
//!   1,lrdn0006.leonardo.local          or             (ranks placed by
//!   ...                                                --mapping over it)
//!        \                                        /
//!         nodes in order of first appearance (rank -> node)
//!                 |  --group-by nodes:180 | field:K | one
//!                 v
//!   node -> group (dense, by the group key's order) -> Layout::with_allocation
//! ```
//!
//! **Group rules** (`--group-by`), on the node's short name (up to its
//! first `.`):
//! - `nodes:N` (optionally `nodes:N,first:K`): nodes numbered by the last
//!   run of digits in the name, `N` consecutive numbers to a group counted
//!   from `K` (default 1: `lrdn0001` is the first): for machines whose
//!   names number nodes in cabling order with a fixed group size.
//! - `field:K`: the K-th run of digits in the name (1: the first) is the
//!   group (`r03n07` by `field:1` is rack 3; HPE Cray's `x1000c3s2b0n1` by
//!   `field:1` is cabinet 1000): for names that carry the rack or cell.
//! - `topology:FILE`: the groups a site writes itself, in Slurm's
//!   topology.conf form: one `SwitchName=g0 Nodes=lrdn[0001-0180]` line a
//!   group (a Slurm cluster's own topology.conf gives its leaf switches).
//! - `one`: every node in one group (no level above the node).
//!
//! Groups are numbered densely in the order of their keys; nodes of a
//! group keep their order in the allocation. Nothing here panics on bad
//! input: each error names the file (and line) and what to write.

use std::collections::BTreeMap;
use std::path::Path;

/// The most nodes a node list may expand to (a typo such as
/// `n[1-99999999]` is an error, not an exhausted memory).
pub const MAX_NODES: usize = 1 << 20;

/// An allocation that cannot be read, with where and what to write.
#[derive(Debug, thiserror::Error)]
pub enum AllocError {
    #[error("{path}: {why}")]
    File { path: String, why: String },
    #[error("{path}:{line}: {why}")]
    Line {
        path: String,
        line: usize,
        why: String,
    },
    #[error(
        "node list `{text}`: {why}; write it as Slurm does, e.g. lrdn[0001-0004,0010],lrdn0100"
    )]
    NodeList { text: String, why: String },
    #[error("--group-by `{text}`: {why}; write nodes:N (N consecutive node numbers to a group, nodes:N,first:K to count from K), field:K (the K-th run of digits in the name), topology:FILE (a group per SwitchName=... Nodes=LIST line) or one")]
    Rule { text: String, why: String },
    #[error("--group-by {rule}: node `{node}` {why}")]
    Name {
        rule: String,
        node: String,
        why: String,
    },
}

/// The nodes of a job and, where the file says, each rank's node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Allocation {
    /// Node names in order of first appearance (or as listed).
    pub nodes: Vec<String>,
    /// Each rank's node (an index into `nodes`), rank by rank; None for a
    /// node list, whose ranks the mapping places.
    pub rank_node: Option<Vec<usize>>,
}

impl Allocation {
    /// Reads `--alloc`: a file (an `alloc.csv` with a header naming a rank
    /// and a node column, or a file holding a node list), or where no such
    /// file exists, the text itself as a node list.
    pub fn read(arg: &str) -> Result<Allocation, AllocError> {
        let p = Path::new(arg);
        if !p.exists() {
            if arg.contains('/') || arg.ends_with(".csv") {
                return Err(AllocError::File {
                    path: arg.into(),
                    why: "no such file (give pico's alloc.csv, a file with a Slurm node list, or the node list itself)".into(),
                });
            }
            return Ok(Allocation {
                nodes: expand_nodelist(arg)?,
                rank_node: None,
            });
        }
        let text = std::fs::read_to_string(p).map_err(|e| AllocError::File {
            path: arg.into(),
            why: format!("cannot be read: {e}"),
        })?;
        Allocation::parse(&text, arg)
    }

    /// Reads a file's text (`path` for messages): a rank/node CSV where
    /// its first line names the columns, else a node list (lines joined).
    pub fn parse(text: &str, path: &str) -> Result<Allocation, AllocError> {
        let lines: Vec<(usize, &str)> = text
            .lines()
            .enumerate()
            .map(|(i, l)| (i + 1, l.trim()))
            .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
            .collect();
        let Some(&(_, head)) = lines.first() else {
            return Err(AllocError::File {
                path: path.into(),
                why: "empty: no ranks or nodes".into(),
            });
        };
        if head.contains(',') && head.split(',').any(|c| rank_column(c) || node_column(c)) {
            return rank_csv(&lines, path);
        }
        let joined: Vec<&str> = lines.iter().map(|l| l.1).collect();
        let nodes = expand_nodelist(&joined.join(",")).map_err(|e| AllocError::File {
            path: path.into(),
            why: format!("{e} (or a CSV whose first line names a rank and a node column, as pico's MPI_Rank,allocation)"),
        })?;
        Ok(Allocation {
            nodes,
            rank_node: None,
        })
    }

    /// Each node's group under `rule`, numbered densely in the order of
    /// the group keys.
    pub fn groups(&self, rule: &GroupRule) -> Result<Vec<usize>, AllocError> {
        let keys: Vec<u64> = self
            .nodes
            .iter()
            .map(|n| rule.key(n))
            .collect::<Result<_, _>>()?;
        let mut dense: BTreeMap<u64, usize> = keys.iter().map(|&k| (k, 0)).collect();
        for (i, v) in dense.values_mut().enumerate() {
            *v = i;
        }
        Ok(keys.iter().map(|k| dense[k]).collect())
    }
}

fn rank_column(c: &str) -> bool {
    let c = c.trim().to_ascii_lowercase();
    c == "rank" || c == "mpi_rank"
}

fn node_column(c: &str) -> bool {
    let c = c.trim().to_ascii_lowercase();
    ["allocation", "node", "host", "hostname", "nodename"].contains(&c.as_str())
}

/// `MPI_Rank,allocation` rows: every rank 0..n-1 once, in any order.
fn rank_csv(lines: &[(usize, &str)], path: &str) -> Result<Allocation, AllocError> {
    let at = |line: usize, why: String| AllocError::Line {
        path: path.into(),
        line,
        why,
    };
    let (hl, head) = lines[0];
    let cols: Vec<&str> = head.split(',').collect();
    let find = |f: fn(&str) -> bool, what: &str| {
        cols.iter().position(|c| f(c)).ok_or_else(|| {
            at(
                hl,
                format!("no {what} column in `{head}` (name it rank or MPI_Rank, and node, host or allocation)"),
            )
        })
    };
    let (rc, nc) = (find(rank_column, "rank")?, find(node_column, "node")?);
    let mut by_rank: BTreeMap<usize, (usize, String)> = BTreeMap::new();
    for &(ln, l) in &lines[1..] {
        let f: Vec<&str> = l.split(',').map(str::trim).collect();
        if f.len() != cols.len() {
            return Err(at(
                ln,
                format!("{} fields where the header has {}", f.len(), cols.len()),
            ));
        }
        let rank: usize = f[rc]
            .parse()
            .map_err(|_| at(ln, format!("rank `{}` is not a whole number >= 0", f[rc])))?;
        if f[nc].is_empty() {
            return Err(at(ln, format!("rank {rank} has no node")));
        }
        if let Some((first, _)) = by_rank.insert(rank, (ln, f[nc].to_string())) {
            return Err(at(ln, format!("rank {rank} again (first on line {first})")));
        }
    }
    if by_rank.is_empty() {
        return Err(at(hl, "a header and no ranks".into()));
    }
    let n = by_rank.len();
    if let Some((&r, &(ln, _))) = by_rank.iter().next_back().filter(|(&r, _)| r >= n) {
        let missing = (0..n).find(|k| !by_rank.contains_key(k)).unwrap_or(0);
        return Err(at(
            ln,
            format!(
                "rank {r} among {n} ranks: rank {missing} is missing (ranks are 0..{})",
                n - 1
            ),
        ));
    }
    let mut nodes: Vec<String> = Vec::new();
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    let mut rank_node = Vec::with_capacity(n);
    for (_, (_, name)) in by_rank {
        let k = *index.entry(name.clone()).or_insert_with(|| {
            nodes.push(name);
            nodes.len() - 1
        });
        rank_node.push(k);
    }
    Ok(Allocation {
        nodes,
        rank_node: Some(rank_node),
    })
}

/// Expands a Slurm node list (`lrdn[0001-0003,0010],login1`,
/// `r[1-2]n[01-02]`), the zero padding of each range's lower bound kept.
pub fn expand_nodelist(text: &str) -> Result<Vec<String>, AllocError> {
    let bad = |why: String| AllocError::NodeList {
        text: text.into(),
        why,
    };
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    let mut items = Vec::new();
    for (i, ch) in text.char_indices() {
        match ch {
            '[' if depth > 0 => return Err(bad("a `[` inside brackets".into())),
            '[' => depth += 1,
            ']' if depth == 0 => {
                return Err(bad(format!("a `]` without its `[` at character {}", i + 1)))
            }
            ']' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&text[start..i]);
                start = i + 1;
            }
            c if c.is_whitespace() && depth == 0 => {
                items.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(bad("a `[` without its `]`".into()));
    }
    items.push(&text[start..]);
    for item in items.into_iter().map(str::trim).filter(|s| !s.is_empty()) {
        let mut names = vec![String::new()];
        let mut rest = item;
        while let Some(open) = rest.find('[') {
            let close = open + rest[open..].find(']').unwrap_or(rest.len() - open);
            let choices =
                ranges(&rest[open + 1..close]).map_err(|w| bad(format!("`{item}`: {w}")))?;
            let lit = &rest[..open];
            if names.len().saturating_mul(choices.len()) + out.len() > MAX_NODES {
                return Err(bad(format!("more than {MAX_NODES} nodes")));
            }
            names = names
                .iter()
                .flat_map(|n| choices.iter().map(move |c| format!("{n}{lit}{c}")))
                .collect();
            rest = &rest[close + 1..];
        }
        out.extend(names.into_iter().map(|n| format!("{n}{rest}")));
        if out.len() > MAX_NODES {
            return Err(bad(format!("more than {MAX_NODES} nodes")));
        }
    }
    if out.is_empty() {
        return Err(bad("no nodes".into()));
    }
    let mut seen = std::collections::BTreeSet::new();
    if let Some(d) = out.iter().find(|n| !seen.insert(n.as_str())) {
        return Err(bad(format!("node {d} twice")));
    }
    Ok(out)
}

/// `0001-0004,0010`: the numbers, each as wide as its range's lower bound.
fn ranges(inside: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for part in inside.split(',').map(str::trim) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let num = |s: &str| -> Result<u64, String> {
            if s.is_empty() || !s.bytes().all(|c| c.is_ascii_digit()) {
                return Err(format!("`{part}` is not a number or a range a-b"));
            }
            s.parse().map_err(|_| format!("`{s}` is too large"))
        };
        let (lo, hi) = (num(a.trim())?, num(b.trim())?);
        if hi < lo {
            return Err(format!("range `{part}` runs backwards"));
        }
        if hi - lo >= MAX_NODES as u64 {
            return Err(format!("range `{part}` is more than {MAX_NODES} nodes"));
        }
        let width = a.trim().len();
        out.extend((lo..=hi).map(|n| format!("{n:0width$}")));
    }
    Ok(out)
}

/// How a node's name says its group (the module documentation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GroupRule {
    /// `nodes:N,first:K`: node number (the name's last digits) - K, over N.
    Nodes { per: u64, first: u64 },
    /// `field:K`: the K-th run of digits (1-based).
    Field(usize),
    /// `one`: a single group.
    One,
    /// `topology:FILE`: Slurm's topology.conf form, a group per
    /// `SwitchName=... Nodes=LIST` line (in file order); node -> group.
    Map {
        path: String,
        group: BTreeMap<String, u64>,
    },
}

impl GroupRule {
    pub fn parse(text: &str) -> Result<GroupRule, AllocError> {
        let bad = |why: &str| AllocError::Rule {
            text: text.into(),
            why: why.into(),
        };
        let t = text.trim().to_ascii_lowercase();
        if t == "one" {
            return Ok(GroupRule::One);
        }
        let num = |s: &str, what: &str| -> Result<u64, AllocError> {
            s.trim()
                .parse()
                .map_err(|_| bad(&format!("{what} `{s}` is not a whole number")))
        };
        if let Some(rest) = t.strip_prefix("nodes:") {
            let (n, first) = match rest.split_once(',') {
                Some((n, f)) => {
                    let f = f
                        .trim()
                        .strip_prefix("first:")
                        .ok_or_else(|| bad("after nodes:N only first:K"))?;
                    (n, num(f, "first")?)
                }
                None => (rest, 1),
            };
            let per = num(n, "nodes per group")?;
            if per == 0 {
                return Err(bad("nodes per group must be at least 1"));
            }
            return Ok(GroupRule::Nodes { per, first });
        }
        if text.trim().starts_with("topology:") {
            let path = text.trim()["topology:".len()..].to_string();
            return topology(&path);
        }
        if let Some(k) = t.strip_prefix("field:") {
            let k = num(k, "field")?;
            if k == 0 {
                return Err(bad("fields count from 1"));
            }
            return Ok(GroupRule::Field(k as usize));
        }
        Err(bad("unknown rule"))
    }

    /// The group key of a node's name.
    pub fn key(&self, name: &str) -> Result<u64, AllocError> {
        let short = name.split('.').next().unwrap_or(name);
        let runs: Vec<&str> = short
            .split(|c: char| !c.is_ascii_digit())
            .filter(|s| !s.is_empty())
            .collect();
        let err = |why: String| AllocError::Name {
            rule: self.to_string(),
            node: name.into(),
            why,
        };
        let parse = |s: &str| {
            s.parse::<u64>()
                .map_err(|_| err(format!("has a number `{s}` too large")))
        };
        match self {
            GroupRule::One => Ok(0),
            GroupRule::Nodes { per, first } => {
                let last = runs
                    .last()
                    .ok_or_else(|| err("has no digits to number it by".into()))?;
                let n = parse(last)?;
                if n < *first {
                    return Err(err(format!("is numbered {n}, below the first, {first}")));
                }
                Ok((n - first) / per)
            }
            GroupRule::Map { group, .. } => group
                .get(name)
                .or_else(|| group.get(short))
                .copied()
                .ok_or_else(|| err("is on no switch line of the file".into())),
            GroupRule::Field(k) => {
                let f = runs
                    .get(k - 1)
                    .ok_or_else(|| err(format!("has {} run(s) of digits, not {k}", runs.len())))?;
                parse(f)
            }
        }
    }
}

/// Reads a `topology:FILE` rule: each line `SwitchName=S Nodes=LIST` a
/// group (Slurm's topology.conf: a fat tree's leaf switches; a site writes
/// one line per dragonfly group), lines without `Nodes=` (upper switches)
/// and `#` comments skipped.
fn topology(path: &str) -> Result<GroupRule, AllocError> {
    let text = std::fs::read_to_string(path).map_err(|e| AllocError::File {
        path: path.into(),
        why: format!("cannot be read: {e} (--group-by topology:FILE, Slurm's topology.conf form)"),
    })?;
    let mut group = BTreeMap::new();
    let mut g = 0u64;
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        let Some(list) = line.split_whitespace().find_map(|w| {
            w.strip_prefix("Nodes=")
                .or_else(|| w.strip_prefix("nodes="))
        }) else {
            continue;
        };
        let at = |why: String| AllocError::Line {
            path: path.into(),
            line: i + 1,
            why,
        };
        for n in expand_nodelist(list).map_err(|e| at(e.to_string()))? {
            if group.insert(n.clone(), g).is_some() {
                return Err(at(format!("node {n} on a second switch line")));
            }
        }
        g += 1;
    }
    if group.is_empty() {
        return Err(AllocError::File {
            path: path.into(),
            why: "no `SwitchName=... Nodes=LIST` line: write one per group".into(),
        });
    }
    Ok(GroupRule::Map {
        path: path.into(),
        group,
    })
}

impl std::fmt::Display for GroupRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GroupRule::Nodes { per, first: 1 } => write!(f, "nodes:{per}"),
            GroupRule::Nodes { per, first } => write!(f, "nodes:{per},first:{first}"),
            GroupRule::Field(k) => write!(f, "field:{k}"),
            GroupRule::One => f.write_str("one"),
            GroupRule::Map { path, .. } => write!(f, "topology:{path}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_lists_expand_as_slurm_writes_them() {
        let n = expand_nodelist("lrdn[0001-0003,0010],lrdn0100").unwrap();
        assert_eq!(
            n,
            ["lrdn0001", "lrdn0002", "lrdn0003", "lrdn0010", "lrdn0100"]
        );
        let n = expand_nodelist("r[1-2]n[08-09]").unwrap();
        assert_eq!(n, ["r1n08", "r1n09", "r2n08", "r2n09"]);
        assert_eq!(expand_nodelist(" login1 ").unwrap(), ["login1"]);
        for (bad, says) in [
            ("lrdn[0001-0003", "without its `]`"),
            ("lrdn0001]", "without its `[`"),
            ("lrdn[0003-0001]", "runs backwards"),
            ("lrdn[a-b]", "not a number"),
            ("lrdn[1-99999999]", "more than"),
            ("n[1-2],n1", "node n1 twice"),
            ("n[[1]]", "inside brackets"),
            ("", "no nodes"),
        ] {
            let e = expand_nodelist(bad).unwrap_err().to_string();
            assert!(e.contains(says) && e.contains("e.g."), "{bad}: {e}");
        }
    }

    #[test]
    fn rank_files_read_with_line_numbers() {
        let a =
            Allocation::parse("MPI_Rank,allocation\n1,b.x\n0,a.x\n2,a.x\n", "alloc.csv").unwrap();
        assert_eq!(a.nodes, ["a.x", "b.x"]);
        assert_eq!(a.rank_node, Some(vec![0, 1, 0]));
        for (text, says) in [
            (
                "MPI_Rank,allocation\n0,a\n0,b\n",
                "alloc.csv:3: rank 0 again (first on line 2)",
            ),
            ("MPI_Rank,allocation\n0,a\nx,b\n", "alloc.csv:3: rank `x`"),
            (
                "MPI_Rank,allocation\n0,a\n2,b\n",
                "alloc.csv:3: rank 2 among 2 ranks: rank 1 is missing",
            ),
            ("MPI_Rank,allocation\n0,a,c\n", "alloc.csv:2: 3 fields"),
            (
                "MPI_Rank,allocation\n0,\n",
                "alloc.csv:2: rank 0 has no node",
            ),
            ("rank,where\n0,a\n", "alloc.csv:1: no node column"),
            (
                "MPI_Rank,allocation\n",
                "alloc.csv:1: a header and no ranks",
            ),
            ("\n# nothing\n", "alloc.csv: empty"),
        ] {
            let e = Allocation::parse(text, "alloc.csv")
                .unwrap_err()
                .to_string();
            assert!(e.starts_with(says), "{text:?}: {e}");
        }
        // a file holding a node list
        let a = Allocation::parse("# SLURM_JOB_NODELIST\nn[1-2]\nn7\n", "nodes.txt").unwrap();
        assert_eq!((a.nodes.len(), a.rank_node), (3, None));
        let e = Allocation::parse("n[1-2\n", "nodes.txt")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("nodes.txt: node list") && e.contains("MPI_Rank"),
            "{e}"
        );
        let e = Allocation::read("/nonexistent/alloc.csv")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no such file"), "{e}");
        assert_eq!(Allocation::read("c[1-3]").unwrap().nodes.len(), 3);
    }

    #[test]
    fn group_rules_read_names() {
        let r = GroupRule::parse("nodes:180").unwrap();
        assert_eq!(r, GroupRule::Nodes { per: 180, first: 1 });
        assert_eq!(r.key("lrdn0180.leonardo.local").unwrap(), 0);
        assert_eq!(r.key("lrdn0181").unwrap(), 1);
        let r0 = GroupRule::parse("nodes:4,first:0").unwrap();
        assert_eq!((r0.key("n3").unwrap(), r0.key("n4").unwrap()), (0, 1));
        assert_eq!(r0.to_string(), "nodes:4,first:0");
        let f = GroupRule::parse("field:1").unwrap();
        assert_eq!(f.key("x1000c3s2b0n1").unwrap(), 1000);
        assert_eq!(f.key("r03n07.site").unwrap(), 3);
        assert_eq!(GroupRule::parse("one").unwrap().key("anything").unwrap(), 0);
        for bad in ["nodes:0", "nodes:x", "field:0", "rack", "nodes:4,from:1"] {
            let e = GroupRule::parse(bad).unwrap_err().to_string();
            assert!(e.contains(bad) && e.contains("write nodes:N"), "{e}");
        }
        let e = r.key("login").unwrap_err().to_string();
        assert!(e.contains("`login` has no digits"), "{e}");
        let e = GroupRule::parse("field:3")
            .unwrap()
            .key("r03n07")
            .unwrap_err()
            .to_string();
        assert!(e.contains("2 run(s) of digits, not 3"), "{e}");
        let e = r.key("n0").unwrap_err().to_string();
        assert!(e.contains("below the first"), "{e}");
        // a site's own groups, in topology.conf's form
        let dir = std::env::temp_dir().join(format!("colltune-topo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("topology.conf");
        std::fs::write(&f, "# cells\nSwitchName=c1 Nodes=n[1-2]\nSwitchName=top Switches=c[1-2]\nSwitchName=c2 Nodes=n[3-4]\n").unwrap();
        let t = GroupRule::parse(&format!("topology:{}", f.display())).unwrap();
        assert_eq!((t.key("n2.site").unwrap(), t.key("n3").unwrap()), (0, 1));
        let e = t.key("n9").unwrap_err().to_string();
        assert!(e.contains("`n9` is on no switch line"), "{e}");
        std::fs::write(&f, "SwitchName=a Nodes=n[1-2]\nSwitchName=b Nodes=n2\n").unwrap();
        let e = GroupRule::parse(&format!("topology:{}", f.display()))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("topology.conf:2: node n2 on a second switch line"),
            "{e}"
        );
        std::fs::write(&f, "SwitchName=a Nodes=n[1-\n").unwrap();
        let e = GroupRule::parse(&format!("topology:{}", f.display()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("topology.conf:1: node list"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
        // dense groups in key order
        let a = Allocation {
            nodes: vec!["n0400".into(), "n0005".into(), "n0006".into()],
            rank_node: None,
        };
        assert_eq!(a.groups(&r).unwrap(), vec![1, 0, 0]);
    }
}
