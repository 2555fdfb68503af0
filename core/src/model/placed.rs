//! How a communicator's ranks sit on the nodes and on each node's sockets:
//! its placement class, what a table's rule set may be keyed on beside the
//! communicator's shape.
//!
//! Two levels, each in one of two orders:
//! - nodes: `block` (consecutive ranks share a node, a node filled before
//!   the next: `mpirun --map-by core`, `slot`, `socket`) or `cyclic`
//!   (ranks dealt round-robin over the nodes: `--map-by node`);
//! - sockets, inside each node: `block` (a socket filled before the next)
//!   or `cyclic` (the node's ranks dealt round-robin over its sockets:
//!   `--map-by socket`, and `--map-by node`, whose ranks Open MPI binds
//!   to a node's sockets in turn: [`Mapping::Node`]).
//!
//! Written `nodes` or `nodes/sockets`: `block/block` (`--map-by core`),
//! `block/cyclic` (`--map-by socket`), `cyclic/cyclic` (`--map-by node`);
//! `block` alone holds whatever the sockets' order. Each published mapping
//! is a distinct class, found from the ranks' node and socket ids alone
//! ([`detect`]), so the runtime finds the class a table was tuned for.
//!
//! Degenerate cases, decided so each mapping keeps its class at every rank
//! count: one group (one node, or a node's ranks on one socket) is `block`;
//! groups of one rank each in turn (`0,1`) are `cyclic`; at the socket
//! level a node whose ranks sit on one socket says nothing, so a
//! `--map-by socket` run that put one rank on its last node stays `cyclic`,
//! and where no node says anything, one rank per node on several nodes is
//! `cyclic` at both levels (`--map-by node`), anything else a `block`.

use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;

use super::placement::{Layout, Level, Mapping};

/// The order of ranks over the groups (nodes, or a node's sockets) of one
/// level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Order {
    /// Consecutive ranks share a group; a group filled before the next.
    Block,
    /// Ranks dealt round-robin over the groups.
    Cyclic,
}

impl Order {
    pub fn name(self) -> &'static str {
        match self {
            Order::Block => "block",
            Order::Cyclic => "cyclic",
        }
    }

    fn parse(s: &str) -> Option<Order> {
        [Order::Block, Order::Cyclic]
            .into_iter()
            .find(|o| o.name() == s)
    }
}

/// The placement a table's rule set holds for: the nodes' order and,
/// optionally, the sockets' (None: any).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Placement {
    pub nodes: Order,
    pub sockets: Option<Order>,
}

/// What a communicator's placement was found to be: per level its order,
/// None where the ranks follow neither (or, for sockets, where the sockets
/// are not known).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Detected {
    pub nodes: Option<Order>,
    pub sockets: Option<Order>,
}

/// The placements a table may name, as written.
pub const NAMES: &str = "block, cyclic, block/block, block/cyclic, cyclic/block or cyclic/cyclic (nodes, then sockets inside each node)";

impl Placement {
    /// Reads `block`, `cyclic`, `block/cyclic`, ...; the mapping names
    /// `core`, `socket`, `node` (`--map-by`) as their class.
    pub fn parse(text: &str) -> Result<Placement, String> {
        let t = text.trim().to_ascii_lowercase();
        if let Ok(m) = Mapping::parse(&t) {
            return Ok(Placement::of_mapping(m));
        }
        let (n, s) = match t.split_once('/') {
            Some((n, s)) => (n.trim(), Some(s.trim())),
            None => (t.as_str(), None),
        };
        let nodes = Order::parse(n);
        let sockets = s.map(Order::parse);
        match (nodes, sockets) {
            (Some(nodes), None) => Ok(Placement {
                nodes,
                sockets: None,
            }),
            (Some(nodes), Some(Some(s))) => Ok(Placement {
                nodes,
                sockets: Some(s),
            }),
            _ => Err(format!(
                "unknown placement `{text}`: write {NAMES}, or the mpirun mapping core, socket or node"
            )),
        }
    }

    /// The class `mpirun --map-by m` gives on a machine of several sockets
    /// per node.
    pub fn of_mapping(m: Mapping) -> Placement {
        let (nodes, sockets) = match m {
            Mapping::Core => (Order::Block, Order::Block),
            Mapping::Socket => (Order::Block, Order::Cyclic),
            Mapping::Node => (Order::Cyclic, Order::Cyclic),
        };
        Placement {
            nodes,
            sockets: Some(sockets),
        }
    }

    /// Whether a rule set for this placement applies to a communicator
    /// found to be placed as `d`.
    pub fn holds_for(&self, d: &Detected) -> bool {
        d.nodes == Some(self.nodes) && self.sockets.is_none_or(|s| d.sockets == Some(s))
    }

    /// How well it fits a communicator placed as `d` (higher wins, None:
    /// not at all): the sockets' order too (3), the nodes' alone (2); a set
    /// naming the sockets' order where the sockets are not known (an
    /// unbound process) is taken last, after one without a placement (1),
    /// so a table tuned on pinned ranks still serves unpinned ones.
    pub fn fit(&self, d: &Detected) -> Option<u8> {
        if d.nodes != Some(self.nodes) {
            return None;
        }
        match (self.sockets, d.sockets) {
            (None, _) => Some(2),
            (Some(s), Some(t)) if s == t => Some(3),
            (Some(_), Some(_)) => None,
            (Some(_), None) => Some(0),
        }
    }
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.nodes.name())?;
        if let Some(s) = self.sockets {
            write!(f, "/{}", s.name())?;
        }
        Ok(())
    }
}

impl std::str::FromStr for Placement {
    type Err = String;
    fn from_str(s: &str) -> Result<Placement, String> {
        Placement::parse(s)
    }
}

impl TryFrom<String> for Placement {
    type Error = String;
    fn try_from(s: String) -> Result<Placement, String> {
        Placement::parse(&s)
    }
}

impl From<Placement> for String {
    fn from(p: Placement) -> String {
        p.to_string()
    }
}

impl serde::Serialize for Placement {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Placement {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Placement, D::Error> {
        let s = String::deserialize(d)?;
        Placement::parse(&s).map_err(serde::de::Error::custom)
    }
}

impl Detected {
    /// A communicator known by its placement class (None: neither order
    /// over the nodes).
    pub fn of(p: Option<Placement>) -> Detected {
        Detected {
            nodes: p.map(|p| p.nodes),
            sockets: p.and_then(|p| p.sockets),
        }
    }

    /// The placement a rule set tuned on this communicator holds for: the
    /// nodes' order and the sockets' where known; None where the nodes
    /// follow neither order.
    pub fn placement(&self) -> Option<Placement> {
        self.nodes.map(|nodes| Placement {
            nodes,
            sockets: self.sockets,
        })
    }
}

impl fmt::Display for Detected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.nodes, self.sockets) {
            (None, _) => f.write_str("irregular"),
            (Some(n), None) => write!(f, "{} (sockets' order not known)", n.name()),
            (Some(n), Some(s)) => write!(f, "{}/{}", n.name(), s.name()),
        }
    }
}

/// The order of a sequence of group ids (one per rank, in rank order): one
/// group is block; the groups in turn, each seen first in the first round,
/// cyclic; each group's ranks consecutive, block; else None. Linear in the
/// ranks.
pub fn order_of<T: Eq + Hash>(groups: &[T]) -> Option<Order> {
    // Each group's index in order of first appearance.
    let mut first: HashMap<&T, usize> = HashMap::new();
    let ids: Vec<usize> = groups
        .iter()
        .map(|g| {
            let n = first.len();
            *first.entry(g).or_insert(n)
        })
        .collect();
    let k = first.len();
    if k <= 1 {
        return Some(Order::Block);
    }
    if ids.iter().enumerate().all(|(i, &g)| g == i % k) {
        return Some(Order::Cyclic);
    }
    // Block: a group never comes back once left, so the ids (numbered by
    // first appearance) never go down.
    ids.windows(2).all(|w| w[0] <= w[1]).then_some(Order::Block)
}

/// The placement of ranks whose node is `node_of[r]` and, where known, whose
/// socket is `socket_of[r]` (ids comparable within a node). The sockets'
/// order is each node's ranks' (a node whose ranks share one socket says
/// nothing); None where nodes disagree or one follows neither order.
pub fn detect<N: Eq + Hash, S: Eq + Hash>(node_of: &[N], socket_of: Option<&[S]>) -> Detected {
    let nodes = order_of(node_of);
    let sockets = socket_of
        .filter(|s| s.len() == node_of.len())
        .and_then(|s| {
            // Each node's ranks' sockets, in rank order.
            let mut per: HashMap<&N, Vec<&S>> = HashMap::new();
            for (n, x) in node_of.iter().zip(s) {
                per.entry(n).or_default().push(x);
            }
            let mut agreed: Option<Order> = None;
            for on in per.values() {
                if on.iter().all(|x| *x == on[0]) {
                    continue; // one socket: either order
                }
                let o = order_of(on)?;
                if agreed.is_some_and(|a| a != o) {
                    return None;
                }
                agreed = Some(o);
            }
            // No node says (one rank each, or each node's on one socket):
            // one rank per node is dealt round-robin at both levels, as
            // `--map-by node` deals them; otherwise a block.
            let one_each = per.values().all(|on| on.len() == 1);
            Some(
                agreed.unwrap_or(if one_each && nodes == Some(Order::Cyclic) {
                    Order::Cyclic
                } else {
                    Order::Block
                }),
            )
        });
    Detected { nodes, sockets }
}

/// The CPUs of a Linux CPU list (`0-3,8,10-11`, as `Cpus_allowed_list`
/// writes them); None where it does not read as one.
pub fn parse_cpu_list(text: &str) -> Option<Vec<usize>> {
    let mut out = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.trim().is_empty()) {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.trim().parse().ok()?, b.trim().parse().ok()?),
            None => {
                let a: usize = part.trim().parse().ok()?;
                (a, a)
            }
        };
        if b < a || b - a > 1 << 16 {
            return None;
        }
        out.extend(a..=b);
    }
    (!out.is_empty()).then_some(out)
}

/// The socket (physical package) this process runs on, where every CPU it
/// may run on is in one (a process bound to a core, or to a socket), from
/// `/proc/self/status` and `/sys/devices/system/cpu/cpuN/topology`, no
/// hwloc; None where it may run on several sockets (unbound) or the files
/// are not there (not Linux).
pub fn own_socket() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
    let mut socket = None;
    for cpu in parse_cpu_list(list)? {
        let path = format!("/sys/devices/system/cpu/cpu{cpu}/topology/physical_package_id");
        let id: u32 = std::fs::read_to_string(path).ok()?.trim().parse().ok()?;
        if socket.is_some_and(|s| s != id) {
            return None;
        }
        socket = Some(id);
    }
    socket
}

/// The placement `mpirun --map-by m` gives `ranks` ranks on `layout`.
pub fn of_layout(layout: &Layout, m: Mapping, ranks: usize) -> Result<Detected, String> {
    let cores = m.place(layout, ranks)?;
    let node: Vec<usize> = cores
        .iter()
        .map(|&c| layout.group_of(c, Level::Node))
        .collect();
    let socket: Vec<usize> = cores
        .iter()
        .map(|&c| layout.group_of(c, Level::Socket))
        .collect();
    Ok(detect(&node, Some(&socket)))
}

/// The rule set of those given (`(index, its placement)`) a communicator
/// placed as `d` uses: the best fit ([`Placement::fit`]; one without a
/// placement fits any), the first of equals.
pub fn best<'a>(
    sets: impl IntoIterator<Item = (usize, Option<&'a Placement>)>,
    d: &Detected,
) -> Option<usize> {
    sets.into_iter()
        .filter_map(|(i, p)| match p {
            None => Some((1u8, i)),
            Some(p) => p.fit(d).map(|f| (f, i)),
        })
        .max_by_key(|&(fit, i)| (fit, std::cmp::Reverse(i)))
        .map(|(_, i)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Placement {
        Placement::parse(s).unwrap()
    }

    #[test]
    fn placements_read_and_write() {
        for s in [
            "block",
            "cyclic",
            "block/block",
            "block/cyclic",
            "cyclic/block",
            "cyclic/cyclic",
        ] {
            assert_eq!(p(s).to_string(), s);
        }
        assert_eq!(p("core"), p("block/block"));
        assert_eq!(p("Socket"), p("block/cyclic"));
        assert_eq!(p("bynode"), p("cyclic/cyclic"));
        let e = Placement::parse("blok").unwrap_err();
        assert!(e.contains("`blok`") && e.contains("block/cyclic"), "{e}");
        assert!(Placement::parse("block/").is_err());
        assert!(Placement::parse("block/cyclic/block").is_err());
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11\n"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_cpu_list("5"), Some(vec![5]));
        assert_eq!(parse_cpu_list(""), None);
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("a-b"), None);
    }

    #[test]
    fn orders_of_group_sequences() {
        assert_eq!(order_of::<u8>(&[]), Some(Order::Block));
        assert_eq!(order_of(&[3, 3, 3]), Some(Order::Block));
        assert_eq!(order_of(&[0, 0, 1, 1, 1]), Some(Order::Block));
        assert_eq!(order_of(&[0, 1]), Some(Order::Cyclic));
        assert_eq!(order_of(&[0, 1, 2, 0, 1]), Some(Order::Cyclic));
        assert_eq!(order_of(&[5, 2, 5, 2]), Some(Order::Cyclic));
        assert_eq!(order_of(&[0, 1, 1]), Some(Order::Block));
        assert_eq!(order_of(&[0, 1, 0, 0]), None);
        assert_eq!(order_of(&[0, 0, 1, 0]), None);
        assert_eq!(order_of(&[0, 1, 1, 0]), None);
    }

    #[test]
    fn every_mapping_is_its_own_class_at_every_rank_count() {
        // EPYC: 2 nodes x 2 sockets x 64 cores; THIN: 2 x 2 x 12.
        for (text, max) in [
            ("node:2,socket:2,cache:16,core:4", 256),
            ("node:2,socket:2,core:12", 48),
        ] {
            let l = Layout::parse(text).unwrap();
            for m in Mapping::ALL {
                for ranks in 2..=max {
                    let d = of_layout(&l, m, ranks).unwrap();
                    assert_eq!(
                        d.placement(),
                        Some(Placement::of_mapping(m)),
                        "{text} {m} {ranks}"
                    );
                }
            }
        }
    }

    #[test]
    fn detection_from_node_and_socket_ids() {
        // 2 nodes of 2 sockets, 8 ranks.
        let rr = [0, 1, 0, 1, 0, 1, 0, 1];
        let blocks = [0, 0, 0, 0, 1, 1, 1, 1];
        assert_eq!(detect::<_, u8>(&rr, None).nodes, Some(Order::Cyclic));
        assert_eq!(detect::<_, u8>(&rr, None).sockets, None);
        assert_eq!(
            detect(&blocks, Some(&[0, 1, 0, 1, 2, 3, 2, 3][..])).placement(),
            Some(p("block/cyclic"))
        );
        assert_eq!(
            detect(&blocks, Some(&[0, 0, 1, 1, 2, 2, 3, 3][..])).placement(),
            Some(p("block/block"))
        );
        // Nodes disagree on the sockets' order.
        assert_eq!(
            detect(&blocks, Some(&[0, 1, 0, 1, 2, 2, 3, 3][..])).sockets,
            None
        );
        // Neither order over the nodes: no placement, only rules without one hold.
        let odd = [0, 1, 1, 0];
        let d = detect::<_, u8>(&odd, None);
        assert_eq!(d.placement(), None);
        assert_eq!(d.to_string(), "irregular");
        // Linear in the ranks: 16,384 ranks, one per node, dealt in turn.
        let wide: Vec<usize> = (0..16_384).collect();
        assert_eq!(detect::<_, u8>(&wide, None).nodes, Some(Order::Cyclic));
        // A socket list of the wrong length is not known.
        assert_eq!(detect(&blocks, Some(&[0, 1][..])).sockets, None);
    }

    #[test]
    fn the_most_specific_rule_set_that_holds_wins() {
        let sets = [
            None,
            Some(p("block")),
            Some(p("block/cyclic")),
            Some(p("cyclic")),
        ];
        let pick = |d: Detected| best(sets.iter().enumerate().map(|(i, s)| (i, s.as_ref())), &d);
        let d = |n, s| Detected {
            nodes: n,
            sockets: s,
        };
        assert_eq!(pick(d(Some(Order::Block), Some(Order::Cyclic))), Some(2));
        assert_eq!(pick(d(Some(Order::Block), Some(Order::Block))), Some(1));
        assert_eq!(pick(d(Some(Order::Block), None)), Some(1));
        assert_eq!(pick(d(Some(Order::Cyclic), None)), Some(3));
        assert_eq!(pick(d(Some(Order::Cyclic), Some(Order::Cyclic))), Some(3));
        assert_eq!(pick(d(None, None)), Some(0));
        // Sockets unknown (unbound): a set naming them serves, after one without a placement.
        let pinned = [Some(p("block/cyclic")), Some(p("block/block")), None];
        let pick2 = |d: Detected, n: usize| {
            best(
                pinned
                    .iter()
                    .take(n)
                    .enumerate()
                    .map(|(i, s)| (i, s.as_ref())),
                &d,
            )
        };
        assert_eq!(pick2(d(Some(Order::Block), None), 3), Some(2));
        assert_eq!(pick2(d(Some(Order::Block), None), 2), Some(0));
        assert_eq!(pick2(d(Some(Order::Block), Some(Order::Block)), 2), Some(1));
        assert_eq!(pick2(d(Some(Order::Cyclic), None), 2), None);
        // No set without a placement: an irregular communicator gets none.
        let placed = [Some(p("block")), Some(p("cyclic"))];
        assert_eq!(
            best(
                placed.iter().enumerate().map(|(i, s)| (i, s.as_ref())),
                &d(None, None)
            ),
            None
        );
    }
}
