//! Where ranks sit on a cluster: the machine's layout (`--layout
//! node:2,socket:2,cache:16,core:4`, optionally groups of nodes above:
//! `group:8,node:32,core:4`, a dragonfly's groups), how `mpirun --map-by core|socket|node`
//! places ranks on it, and what two ranks share (a cache, a NUMA domain, a
//! socket, a node, or nothing but the network): the distance levels of the
//! point-to-point model. A job's allocation (`--alloc`, [`super::alloc`])
//! replaces the layout's nodes and groups with the nodes the ranks ran on
//! ([`Layout::with_allocation`]): each rank on its real node, each node in
//! its real group, the ranks of a node placed inside it by the mapping.

use std::fmt;
use std::sync::Arc;

use super::alloc::{AllocError, Allocation, GroupRule};

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
    /// Where an allocation put the nodes and ranks (None: the counts'
    /// nodes in order, ranks placed by the mapping alone).
    sites: Option<Arc<Sites>>,
}

/// An allocation laid on a layout: each allocated node's index among the
/// layout's nodes (group by group, a group's nodes in allocation order,
/// groups padded to the largest), and each rank's allocated node where the
/// allocation names them.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Sites {
    node_index: Vec<usize>,
    rank_node: Option<Vec<usize>>,
    names: Vec<String>,
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
            sites: None,
        })
    }

    /// This layout's node internals (sockets, caches, cores) on the nodes
    /// of an allocation, grouped by `rule`: the layout's own `group` and
    /// `node` counts are replaced by the allocation's (`--alloc` in place
    /// of the node part of `--layout`).
    /// `rule` None: no grouping of its own (the model's, over the
    /// allocation's nodes in order, applies); `one`: a single group.
    pub fn with_allocation(
        &self,
        a: &Allocation,
        rule: Option<&GroupRule>,
    ) -> Result<Layout, AllocError> {
        let group = a.groups(rule.unwrap_or(&GroupRule::One))?;
        let g = group.iter().map(|&x| x + 1).max().unwrap_or(1);
        let mut filled = vec![0usize; g];
        let node_index_in: Vec<(usize, usize)> = group
            .iter()
            .map(|&x| {
                filled[x] += 1;
                (x, filled[x] - 1)
            })
            .collect();
        let per = filled.iter().copied().max().unwrap_or(1).max(1);
        let mut counts = self.counts;
        counts[0] = per;
        let mut named = self.named;
        named[0] = true;
        Ok(Layout {
            counts,
            named,
            groups: rule.map(|_| g),
            sites: Some(Arc::new(Sites {
                node_index: node_index_in.iter().map(|&(x, i)| x * per + i).collect(),
                rank_node: a.rank_node.clone(),
                names: a.nodes.clone(),
            })),
        })
    }

    /// `--layout` as `--alloc ARG --group-by RULE` change it: the
    /// allocation read (a file or a node list) and laid on this layout.
    pub fn with_alloc_arg(&self, alloc: &str, group_by: Option<&str>) -> Result<Layout, String> {
        let rule = group_by
            .map(GroupRule::parse)
            .transpose()
            .map_err(|e| e.to_string())?;
        let a = Allocation::read(alloc).map_err(|e| format!("--alloc {e}"))?;
        self.with_allocation(&a, rule.as_ref())
            .map_err(|e| format!("--alloc {alloc}: {e}"))
    }

    /// The allocation this layout holds: (its nodes, the ranks it names,
    /// if it names them).
    pub fn allocation(&self) -> Option<(usize, Option<usize>)> {
        self.sites
            .as_ref()
            .map(|s| (s.names.len(), s.rank_node.as_ref().map(Vec::len)))
    }

    /// The group of each node of a communicator whose ranks sit on `cores`,
    /// nodes numbered as [`colltune_algorithms::NodeMap::from_labels`]
    /// numbers them (by first appearance); None without groups (the
    /// model's own grouping then applies).
    pub fn node_groups(&self, cores: &[usize]) -> Option<Vec<u32>> {
        self.groups?;
        let cpn = self.cores_per_node();
        let mut seen: Vec<usize> = Vec::new();
        let mut out = Vec::new();
        for &c in cores {
            let n = c / cpn;
            if !seen.contains(&n) {
                seen.push(n);
                out.push(self.group_of_node(n) as u32);
            }
        }
        Some(out)
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
        if let Some(s) = &layout.sites {
            return self.place_on(layout, s, ranks);
        }
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

    /// The cores of `ranks` ranks on an allocation's nodes: each rank on
    /// the node the allocation names (else the mapping deals them over the
    /// listed nodes, as over a layout's), the `i`-th rank of a node on its
    /// `i`-th core (`core`) or dealt over its sockets (`socket`, `node`).
    fn place_on(self, layout: &Layout, s: &Sites, ranks: usize) -> Result<Vec<usize>, String> {
        let c = layout.cores_per_node();
        let k = layout.sockets_per_node();
        let within = |i: usize| match self {
            Mapping::Core => i,
            _ => (i % k) * (c / k) + i / k,
        };
        let n = s.node_index.len();
        let Some(rn) = &s.rank_node else {
            if ranks > n * c {
                return Err(format!(
                    "{ranks} ranks do not fit the allocation's {n} nodes of {c} cores (one rank per core); give each node's cores in --layout"
                ));
            }
            return Ok((0..ranks)
                .map(|r| {
                    let (pos, i) = match self {
                        Mapping::Node => (r % n, r / n),
                        _ => (r / c, r % c),
                    };
                    s.node_index[pos] * c + within(i)
                })
                .collect());
        };
        if ranks > rn.len() {
            return Err(format!(
                "{ranks} ranks, but the allocation names {} ranks: predict at most its ranks, or give the allocation of the larger job",
                rn.len()
            ));
        }
        let mut on = vec![0usize; n];
        rn[..ranks]
            .iter()
            .map(|&pos| {
                let i = on[pos];
                on[pos] += 1;
                if i >= c {
                    return Err(format!(
                        "the allocation puts more than {c} ranks on node {}, which the layout gives {c} cores: give each node's cores in --layout",
                        s.names[pos]
                    ));
                }
                Ok(s.node_index[pos] * c + within(i))
            })
            .collect()
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

    #[test]
    fn an_allocation_places_each_rank_on_its_node_and_group() {
        use crate::model::alloc::{Allocation, GroupRule};
        // ranks 0, 2 on n0005 (group 0), 1 on n0400 (group 2), 3 on n0200
        // (group 1): non-contiguous, groups by nodes:180
        let a = Allocation::parse(
            "MPI_Rank,allocation\n0,n0005\n1,n0400\n2,n0005\n3,n0200\n",
            "alloc.csv",
        )
        .unwrap();
        let base = Layout::parse("node:1,socket:2,core:2").unwrap();
        let rule = GroupRule::parse("nodes:180").unwrap();
        let l = base.with_allocation(&a, Some(&rule)).unwrap();
        assert_eq!(l.groups(), Some((3, 1)));
        assert_eq!(l.to_string(), "group:3,node:1,socket:2,core:2");
        assert_eq!(l.allocation(), Some((3, Some(4))));
        // by core: a node's ranks on its cores in order; by socket: dealt
        let cores = Mapping::Core.place(&l, 4).unwrap();
        assert_eq!(cores, vec![0, 8, 1, 4]);
        assert_eq!(Mapping::Socket.place(&l, 4).unwrap(), vec![0, 8, 2, 4]);
        assert_eq!(l.node_groups(&cores), Some(vec![0, 2, 1]));
        assert_eq!(l.level_between(0, 1), Level::Socket);
        assert_eq!(l.level_between(0, 8), Level::Network);
        assert_eq!(Mapping::Core.node_map(&l, 4).unwrap().num_nodes(), 3);
        let e = Mapping::Core.place(&l, 5).unwrap_err();
        assert!(e.contains("the allocation names 4 ranks"), "{e}");
        let one = Layout::parse("node:1,core:1")
            .unwrap()
            .with_allocation(&a, Some(&rule))
            .unwrap();
        let e = Mapping::Core.place(&one, 3).unwrap_err();
        assert!(e.contains("more than 1 ranks on node n0005"), "{e}");
        // a node list: the mapping deals ranks over the listed nodes
        let list = Allocation::read("n[0001-0002],n0181").unwrap();
        let l = base.with_allocation(&list, Some(&rule)).unwrap();
        assert_eq!(l.groups(), Some((2, 2)));
        assert_eq!(Mapping::Node.place(&l, 4).unwrap(), vec![0, 4, 8, 2]);
        assert_eq!(Mapping::Core.place(&l, 5).unwrap(), vec![0, 1, 2, 3, 4]);
        assert!(Mapping::Core.place(&l, 13).is_err());
        // one group: every node in it; no rule: the model's grouping
        let one = base.with_allocation(&list, Some(&GroupRule::One)).unwrap();
        assert_eq!((one.groups(), one.nodes()), (Some((1, 3)), 3));
        assert_eq!(one.node_groups(&[0, 4]), Some(vec![0, 0]));
        let flat = base.with_allocation(&list, None).unwrap();
        assert_eq!((flat.groups(), flat.nodes()), (None, 3));
        assert_eq!(flat.node_groups(&[0, 4]), None);
    }
}
