//! Traffic per level of the network: how many messages, and how many bytes,
//! a simulated call moves within a node, between nodes of one group, and
//! between groups. Where an algorithm saves traffic (a tree whose partners
//! are near each other sends fewer bytes over the global links) shows here
//! before it shows in a time.
//!
//! ```text
//!   group 0                         group 1
//!   +--------+   +--------+         +--------+
//!   | r0  r1 |---| r2  r3 |=========| r4  r5 |
//!   +--------+   +--------+         +--------+
//!     Node         Group              Global
//!   (r0 -> r1)   (r1 -> r2)         (r3 -> r4)
//! ```
//!
//! What counts: every point-to-point send and one-sided put is one message
//! of its bytes, at the tier between its two ranks; a load out of a peer's
//! shared memory (the `shm` broadcast) is one message within the node. A
//! rendezvous message is one message, whatever its protocol's handshake.
//! The counts are the schedules' and the same in both executions; a model
//! without a group level has one group, so its traffic between nodes is all
//! `Group`. Counting costs one comparison per op, while the call is packed.

/// How far apart a message's two ranks are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tier {
    /// One node: shared memory.
    Node,
    /// Two nodes of one group.
    Group,
    /// Two groups (a dragonfly's global links).
    Global,
}

impl Tier {
    pub const ALL: [Tier; 3] = [Tier::Node, Tier::Group, Tier::Global];

    pub fn name(self) -> &'static str {
        match self {
            Tier::Node => "node",
            Tier::Group => "group",
            Tier::Global => "global",
        }
    }

    /// What the tier holds, in words (a table's legend).
    pub fn describe(self) -> &'static str {
        match self {
            Tier::Node => "within a node",
            Tier::Group => "between nodes of one group",
            Tier::Global => "between groups",
        }
    }
}

/// Messages and bytes of one call per [`Tier`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Traffic {
    pub messages: [u64; 3],
    pub bytes: [u64; 3],
}

impl Traffic {
    /// Counts one message of `bytes` at `tier`.
    #[inline]
    pub fn add(&mut self, tier: Tier, bytes: u64) {
        self.messages[tier as usize] += 1;
        self.bytes[tier as usize] += bytes;
    }

    pub fn messages_at(&self, tier: Tier) -> u64 {
        self.messages[tier as usize]
    }

    pub fn bytes_at(&self, tier: Tier) -> u64 {
        self.bytes[tier as usize]
    }

    pub fn total_messages(&self) -> u64 {
        self.messages.iter().sum()
    }

    pub fn total_bytes(&self) -> u64 {
        self.bytes.iter().sum()
    }
}

/// Which tier each pair of ranks is at: their nodes, and the nodes'
/// groups (`Model::node_groups`).
pub(super) struct Tiers<'a> {
    nodes: &'a colltune_algorithms::NodeMap,
    groups: Vec<u32>,
}

impl<'a> Tiers<'a> {
    pub(super) fn new(nodes: &'a colltune_algorithms::NodeMap, groups: Vec<u32>) -> Self {
        Tiers { nodes, groups }
    }

    /// The tier between ranks `a` and `b`.
    pub(super) fn of(&self, a: usize, b: usize) -> Tier {
        let (na, nb) = (self.nodes.node_of(a), self.nodes.node_of(b));
        if na == nb {
            Tier::Node
        } else if self.groups[na] == self.groups[nb] {
            Tier::Group
        } else {
            Tier::Global
        }
    }
}

#[cfg(test)]
mod tests {
    use colltune_algorithms::{AlgoSpec, Collective, Execution, NodeMap};

    use super::super::tests::model;
    use super::super::{simulate_counted, GroupLevel, Model};
    use super::{Tier, Traffic};

    fn count(
        m: &Model,
        spec: &str,
        exec: Execution,
        nodes: &NodeMap,
        bytes: u64,
    ) -> (f64, Traffic) {
        let (t, tr) = simulate_counted(
            m,
            Collective::Bcast,
            &AlgoSpec::parse(spec).unwrap(),
            exec,
            nodes,
            bytes,
            0,
            f64::INFINITY,
        )
        .unwrap();
        (t.unwrap(), tr)
    }

    fn grouped(nodes: usize) -> Model {
        let mut m = model();
        let mut link = m.inter.clone();
        link.latency_us += 3.0;
        m.group = Some(GroupLevel {
            nodes,
            link,
            global_gbs: None,
        });
        m
    }

    #[test]
    fn binomial_on_two_nodes_of_two_counts_by_hand() {
        // Ranks 0,1 on node 0 and 2,3 on node 1; the binomial tree from 0
        // is 0 -> 2, 0 -> 1, 2 -> 3: two messages inside nodes, one between.
        let nodes = NodeMap::blocks(&[2, 2]).unwrap();
        for exec in Execution::ALL {
            let (_, t) = count(&model(), "binomial", exec, &nodes, 1000);
            assert_eq!(t.messages, [2, 1, 0], "{exec:?}");
            assert_eq!(t.bytes, [2000, 1000, 0], "{exec:?}");
            // A group per node: the one message between nodes is global.
            let (_, t) = count(&grouped(1), "binomial", exec, &nodes, 1000);
            assert_eq!((t.messages, t.bytes), ([2, 0, 1], [2000, 0, 1000]));
        }
    }

    #[test]
    fn linear_over_two_groups_of_two_nodes_counts_by_hand() {
        // One rank a node, groups {0,1} and {2,3}: the root's three sends
        // are one inside its group and two to the other group.
        let nodes = NodeMap::blocks(&[1; 4]).unwrap();
        let (_, t) = count(&grouped(2), "linear", Execution::Blocking, &nodes, 777);
        assert_eq!(t.messages, [0, 1, 2]);
        assert_eq!(t.bytes, [0, 777, 1554]);
        assert_eq!((t.total_messages(), t.total_bytes()), (3, 3 * 777));
        assert_eq!(t.messages_at(Tier::Global), 2);
        // scatter_allgather moves more bytes than the message in all,
        // every one of them counted once.
        let (_, t) = count(
            &model(),
            "scatter_allgather",
            Execution::Blocking,
            &nodes,
            4096,
        );
        assert_eq!(t.messages[0], 0);
        assert!(t.total_bytes() > 4096 && t.bytes[2] == 0, "{t:?}");
    }

    /// Four nodes of group 0 each send 1 MB to a node of group 1 (linear
    /// from a root rank per node would serialise on the root's port:
    /// scatter_allgather's exchanges between the halves run at once): with
    /// the groups' global links shared at the bandwidth of one node's port,
    /// the exchanges take turns, and the call is slower than with them
    /// unshared.
    #[test]
    fn global_links_shared_by_a_group_queue_its_messages() {
        let eight = NodeMap::blocks(&[1; 8]).unwrap();
        // Whether a node's port queues its transfers or shares its rate
        // among them (the model's shared_ports), the global links queue.
        for ports in [false, true] {
            let mut free = grouped(4);
            free.shared_ports = ports;
            let mut shared = free.clone();
            let g = shared.group.as_mut().unwrap();
            g.global_gbs = Some(g.link.bandwidth_gbs);
            let spec = "scatter_allgather";
            let (a, ta) = count(&free, spec, Execution::Blocking, &eight, 1 << 20);
            let (b, tb) = count(&shared, spec, Execution::Blocking, &eight, 1 << 20);
            assert_eq!(ta, tb, "the same messages");
            assert!(ta.messages_at(Tier::Global) >= 4, "{ta:?}");
            assert!(
                b > a * 1.2,
                "ports shared {ports}: global links shared {b} vs free {a}"
            );
            // small messages hardly notice
            let (c, _) = count(&free, spec, Execution::Blocking, &eight, 64);
            let (d, _) = count(&shared, spec, Execution::Blocking, &eight, 64);
            assert!(d < c * 1.05, "{d} vs {c}");
        }
    }

    #[test]
    fn a_message_between_groups_costs_the_group_link() {
        let two = NodeMap::blocks(&[1, 1]).unwrap();
        let plain = model();
        let (near, _) = count(&plain, "linear", Execution::Blocking, &two, 1000);
        let (far, tr) = count(&grouped(1), "linear", Execution::Blocking, &two, 1000);
        assert_eq!(tr.messages, [0, 0, 1]);
        // The group link's latency is 3 us more.
        assert!((far - near - 3.0).abs() < 1e-9, "{near} {far}");
        // Groups of two nodes hold both: as without groups.
        let (same, tr) = count(&grouped(2), "linear", Execution::Blocking, &two, 1000);
        assert_eq!((same, tr.messages), (near, [0, 1, 0]));
    }
}
