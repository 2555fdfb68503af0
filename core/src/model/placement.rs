//! Where ranks sit on a cluster: the machine's layout (`--layout
//! node:2,socket:2,cache:16,core:4`, optionally groups of nodes above:
//! `group:8,node:32,core:4`, a dragonfly's groups), how `mpirun --map-by core|socket|node`
//! places ranks on it, and what two ranks share (a cache, a NUMA domain, a
//! socket, a node, or nothing but the network): the distance levels of the
//! point-to-point model.

use std::fmt;

/// What two ranks share, finest first: the distance between them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// A last-level cache (the same core complex).
    Cache,
    /// A NUMA domain, not a cache.
    Numa,
    /// A socket, not a NUMA domain or cache.
    Socket,
    /// A node, not a socket (two sockets of one node).
    Node,
    /// Nothing: two nodes, through the network.
    Network,
}

impl Level {
    pub const ALL: [Level; 5] = [
        Level::Cache,
        Level::Numa,
        Level::Socket,
        Level::Node,
        Level::Network,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Level::Cache => "cache",
            Level::Numa => "numa",
            Level::Socket => "socket",
            Level::Node => "node",
            Level::Network => "network",
        }
    }

    /// Reads a placement label: what the two ranks share.
    pub fn parse(s: &str) -> Result<Level, String> {
        Level::ALL
            .into_iter()
            .find(|l| l.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| {
                format!(
                    "unknown placement `{s}`: write what the two ranks share, one of cache, numa, socket, node, network (different nodes)"
                )
            })
    }

    /// Whether both ranks are on one node.
    pub fn is_intra(self) -> bool {
        self != Level::Network
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The objects a layout nests, coarsest first.
const OBJECTS: [&str; 5] = ["node", "socket", "numa", "cache", "core"];

/// A machine: how many of each object the one above holds
/// (`node:2,socket:2,cache:16,core:4`: 2 nodes of 2 sockets of 16 caches of
/// 4 cores). Objects left out hold one of the next. Above the node, groups
/// of nodes (`group:8,node:32,core:4`: 8 groups of 32 nodes, 256 nodes in
/// all, numbered group by group): a dragonfly's groups, a fat tree's leaf
/// switches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Counts of node (per group where groups are named), socket, numa,
    /// cache, core (1 where not given).
    counts: [usize; 5],
    /// Which of the five the text named.
    named: [bool; 5],
    /// Groups of `counts[0]` nodes, where the text named them.
    groups: Option<usize>,
}

impl Layout {
    /// Reads `node:2,socket:2,cache:16,core:4`; objects coarsest first
    /// (group, node, socket, numa, cache, core), `node` and `core` required.
    pub fn parse(text: &str) -> Result<Layout, String> {
        let bad = |why: String| {
            format!(
                "layout `{text}`: {why}; write the objects coarsest first with their counts, e.g. node:2,socket:2,cache:16,core:4 (group, node, socket, numa, cache, core; group:8,node:32 is 8 groups of 32 nodes)"
            )
        };
        let mut counts = [1usize; 5];
        let mut named = [false; 5];
        let mut last = None;
        let mut groups = None;
        for (i, part) in text
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .enumerate()
        {
            let (obj, n) = part
                .split_once(':')
                .ok_or_else(|| bad(format!("`{part}` has no count")))?;
            if obj.trim().eq_ignore_ascii_case("group") {
                if i > 0 {
                    return Err(bad("`group` out of order: it comes first".into()));
                }
                let g = n.trim().parse().ok().filter(|&g: &usize| g >= 1);
                groups = Some(g.ok_or_else(|| {
                    bad(format!("count `{n}` of group is not a whole number >= 1"))
                })?);
                continue;
            }
            let k = OBJECTS
                .iter()
                .position(|o| o.eq_ignore_ascii_case(obj.trim()))
                .ok_or_else(|| bad(format!("unknown object `{obj}`")))?;
            if last.is_some_and(|l| k <= l) {
                return Err(bad(format!("`{obj}` out of order")));
            }
            let n: usize =
                n.trim().parse().ok().filter(|&n| n >= 1).ok_or_else(|| {
                    bad(format!("count `{n}` of {obj} is not a whole number >= 1"))
                })?;
            counts[k] = n;
            named[k] = true;
            last = Some(k);
        }
        if !named[0] || !named[4] {
            return Err(bad("node and core are required".into()));
        }
        Ok(Layout {
            counts,
            named,
            groups,
        })
    }

    /// Nodes in all (every group's).
    pub fn nodes(&self) -> usize {
        self.counts[0] * self.groups.unwrap_or(1)
    }

    /// Groups of nodes, and nodes per group, where the layout names them.
    pub fn groups(&self) -> Option<(usize, usize)> {
        self.groups.map(|g| (g, self.counts[0]))
    }

    /// The group of node `n` (0 for every node without groups).
    pub fn group_of_node(&self, n: usize) -> usize {
        match self.groups {
            Some(_) => n / self.counts[0],
            None => 0,
        }
    }
    /// Cores per node.
    pub fn cores_per_node(&self) -> usize {
        self.counts[1..].iter().product()
    }
    pub fn sockets_per_node(&self) -> usize {
        self.counts[1]
    }
    pub fn cores(&self) -> usize {
        self.nodes() * self.cores_per_node()
    }

    /// The distance levels this machine has, finest first (a level the
    /// layout does not name is absent: a layout without caches has no
    /// `cache` level).
    pub fn levels(&self) -> Vec<Level> {
        let mut out: Vec<Level> = (1..self.cores())
            .map(|c| self.level_between(0, c))
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Where global core `c` is: (node, socket, numa, cache) ids, each
    /// numbered over the whole machine.
    fn coords(&self, c: usize) -> [usize; 4] {
        let per = |from: usize| self.counts[from..].iter().product::<usize>();
        [c / per(1), c / per(2), c / per(3), c / per(4)]
    }

    /// What cores `a` and `b` share.
    pub fn level_between(&self, a: usize, b: usize) -> Level {
        let (x, y) = (self.coords(a), self.coords(b));
        if x[0] != y[0] {
            Level::Network
        } else if x[1] != y[1] {
            Level::Node
        } else if x[2] != y[2] {
            Level::Socket
        } else if x[3] != y[3] {
            if self.named[2] {
                Level::Numa
            } else {
                Level::Socket
            }
        } else if self.named[3] {
            Level::Cache
        } else if self.named[2] {
            Level::Numa
        } else {
            Level::Socket
        }
    }

    /// The group each core belongs to at `level` (cores sharing it have the
    /// same id): its cache, NUMA domain, socket or node.
    pub fn group_of(&self, core: usize, level: Level) -> usize {
        let x = self.coords(core);
        match level {
            Level::Cache if self.named[3] => x[3],
            Level::Cache | Level::Numa if self.named[2] => x[2],
            Level::Cache | Level::Numa | Level::Socket => x[1],
            Level::Node | Level::Network => x[0],
        }
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let groups = self.groups.map(|g| format!("group:{g}"));
        let parts: Vec<String> = groups
            .into_iter()
            .chain(
                (0..5)
                    .filter(|&k| self.named[k])
                    .map(|k| format!("{}:{}", OBJECTS[k], self.counts[k])),
            )
            .collect();
        f.write_str(&parts.join(","))
    }
}

/// How `mpirun --map-by` places ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mapping {
    /// Consecutive cores: a node filled before the next.
    Core,
    /// Round-robin over a node's sockets, a node filled before the next.
    Socket,
    /// Round-robin over the nodes and, inside each node, over its sockets:
    /// `--map-by node` maps to no object below the node, so Open MPI 4
    /// binds more than two ranks to sockets by default, each next rank of a
    /// node to its socket with the fewest ranks bound
    /// (`rmaps_base_binding.c`, `bind_downwards`), i.e. in turn.
    Node,
}

impl Mapping {
    pub const ALL: [Mapping; 3] = [Mapping::Core, Mapping::Socket, Mapping::Node];

    pub fn name(self) -> &'static str {
        match self {
            Mapping::Core => "core",
            Mapping::Socket => "socket",
            Mapping::Node => "node",
        }
    }

    pub fn parse(s: &str) -> Result<Mapping, String> {
        let t = s.trim().to_ascii_lowercase();
        let t = t.strip_prefix("by").unwrap_or(&t);
        Mapping::ALL
            .into_iter()
            .find(|m| m.name() == t || (t == "slot" && *m == Mapping::Core))
            .ok_or_else(|| {
                format!("unknown mapping `{s}`: write core, socket or node (mpirun --map-by)")
            })
    }

    /// The core each of `ranks` ranks runs on (one rank per core).
    pub fn place(self, layout: &Layout, ranks: usize) -> Result<Vec<usize>, String> {
        if ranks > layout.cores() {
            return Err(format!(
                "{ranks} ranks do not fit the layout {layout} ({} cores, one rank per core); give the whole machine in --layout",
                layout.cores()
            ));
        }
        let c = layout.cores_per_node();
        let n = layout.nodes();
        let s = layout.sockets_per_node();
        // The `i`-th rank of a node dealt round-robin over its sockets,
        // each socket's ranks on its cores in order.
        let over_sockets = |node: usize, i: usize| node * c + (i % s) * (c / s) + i / s;
        Ok((0..ranks)
            .map(|r| match self {
                Mapping::Core => r,
                Mapping::Socket => over_sockets(r / c, r % c),
                Mapping::Node => over_sockets(r % n, r / n),
            })
            .collect())
    }

    /// The nodes the ranks sit on (colltune's node map).
    pub fn node_map(
        self,
        layout: &Layout,
        ranks: usize,
    ) -> Result<colltune_algorithms::NodeMap, String> {
        let cores = self.place(layout, ranks)?;
        let labels: Vec<usize> = cores.iter().map(|&k| k / layout.cores_per_node()).collect();
        Ok(colltune_algorithms::NodeMap::from_labels(&labels))
    }
}

impl fmt::Display for Mapping {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn epyc() -> Layout {
        Layout::parse("node:2,socket:2,cache:16,core:4").unwrap()
    }

    #[test]
    fn layouts_read_and_say_what_is_wrong() {
        let l = epyc();
        assert_eq!((l.nodes(), l.cores_per_node(), l.cores()), (2, 128, 256));
        assert_eq!(l.to_string(), "node:2,socket:2,cache:16,core:4");
        assert_eq!(
            l.levels(),
            vec![Level::Cache, Level::Socket, Level::Node, Level::Network]
        );
        let thin = Layout::parse("node:2,socket:2,core:12").unwrap();
        assert_eq!(
            thin.levels(),
            vec![Level::Socket, Level::Node, Level::Network]
        );
        for bad in [
            "socket:2,core:4",
            "node:2",
            "node:2,core:0",
            "core:4,node:2",
            "node:2,die:3,core:2",
        ] {
            let e = Layout::parse(bad).unwrap_err();
            assert!(e.contains(bad) && e.contains("e.g."), "{e}");
        }
    }

    #[test]
    fn groups_of_nodes_read_above_the_node() {
        let l = Layout::parse("group:8,node:32,core:4").unwrap();
        assert_eq!((l.nodes(), l.cores_per_node(), l.cores()), (256, 4, 1024));
        assert_eq!(l.groups(), Some((8, 32)));
        assert_eq!(l.to_string(), "group:8,node:32,core:4");
        assert_eq!(
            (l.group_of_node(0), l.group_of_node(31), l.group_of_node(32)),
            (0, 0, 1)
        );
        // Core 4 * 32 is the first core of group 1's first node.
        assert_eq!(l.level_between(0, 127), Level::Network);
        assert_eq!(l.group_of(128, Level::Node), 32);
        assert_eq!(Mapping::Core.node_map(&l, 1024).unwrap().num_nodes(), 256);
        let flat = epyc();
        assert_eq!((flat.groups(), flat.group_of_node(1)), (None, 0));
        for bad in [
            "node:2,group:2,core:4",
            "group:0,node:2,core:4",
            "group:x,node:1,core:1",
        ] {
            let e = Layout::parse(bad).unwrap_err();
            assert!(e.contains(bad) && e.contains("group"), "{e}");
        }
    }

    #[test]
    fn levels_between_cores() {
        let l = epyc();
        assert_eq!(l.level_between(0, 3), Level::Cache);
        assert_eq!(l.level_between(0, 4), Level::Socket);
        assert_eq!(l.level_between(0, 63), Level::Socket);
        assert_eq!(l.level_between(0, 64), Level::Node);
        assert_eq!(l.level_between(5, 128 + 5), Level::Network);
        assert_eq!(l.group_of(70, Level::Socket), 1);
        assert_eq!(l.group_of(70, Level::Cache), 17);
        let n = Layout::parse("node:1,socket:1,numa:4,core:8").unwrap();
        assert_eq!(n.level_between(0, 7), Level::Numa);
        assert_eq!(n.level_between(0, 8), Level::Socket);
    }

    #[test]
    fn mappings_place_as_mpirun_does() {
        let l = epyc();
        assert_eq!(Mapping::Core.place(&l, 130).unwrap()[129], 129);
        let s = Mapping::Socket.place(&l, 130).unwrap();
        assert_eq!(&s[..4], &[0, 64, 1, 65]);
        assert_eq!(&s[128..], &[128, 192]);
        let n = Mapping::Node.place(&l, 6).unwrap();
        assert_eq!(n, vec![0, 128, 64, 192, 1, 129]);
        // Without sockets in the layout: a node's cores in order.
        let flat = Layout::parse("node:3,core:4").unwrap();
        assert_eq!(Mapping::Node.place(&flat, 5).unwrap(), vec![0, 4, 8, 1, 5]);
        let e = Mapping::Core.place(&l, 300).unwrap_err();
        assert!(e.contains("300 ranks") && e.contains("256 cores"), "{e}");
        assert_eq!(Mapping::Node.node_map(&l, 5).unwrap().to_string(), "3+2");
        assert_eq!(
            Mapping::parse("by-node"),
            Err("unknown mapping `by-node`: write core, socket or node (mpirun --map-by)".into())
        );
        assert_eq!(Mapping::parse("Socket"), Ok(Mapping::Socket));
    }
}
