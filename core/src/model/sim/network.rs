//! The network: what moving bytes costs and which resources it holds.
//!
//! Between nodes, a node's network port is one resource per direction: a
//! message occupies the sender node's outgoing port for `n G` (and at least
//! `g`), flies for `L`, and occupies the receiver node's incoming port for
//! `n G` (and at least `g`: LogP's gap is between two sends or two receives
//! of a port), so a node's messages queue on its ports (contention), and
//! the ranks of a node share its message rate `1/g`. A port may be
//! a token bucket (`burst_bytes`): credit that refills at the link's rate
//! while the port is free, spent before any per-byte cost. Inside a node an
//! eager message is copied out by the sender's process into its own shared
//! segment at the copy bandwidth and in by the receiver's at the link's
//! rate, each process one message at a time; a rendezvous message is read
//! by its receiver straight out of the sender's buffer at the link's rate,
//! the reads of one buffer queued on it (the sender's side held as long),
//! or, where the model says so (`shared_reads`), in progress at once and
//! sharing its rate (`share.rs`). Messages up to the eager limit leave when
//! posted; larger ones (rendezvous) leave `L` after their receive is posted,
//! the request optionally carrying a first fragment. Two nodes of different
//! groups (the model's `group` level: a dragonfly's groups) talk over the
//! group link, through the same node ports and, where the model gives
//! `global_gbs`, through their groups' global links, shared by every node
//! of the group. The engine asks here for times
//! and never looks at a [`Link`]'s figures itself.

use std::collections::BTreeMap;
use std::ops::Bound::{Excluded, Included, Unbounded};

use colltune_algorithms::NodeMap;

use super::model::{Link, Model};
use super::share::{Joined, Read, Shares};
use super::traffic::Tier;

/// The links, the ports and copy resources of one simulated call, and when
/// each is free.
pub(super) struct Network {
    intra: Link,
    inter: Link,
    /// Between nodes of different groups (`inter` where the model has no
    /// group level), and each node's group.
    global: Link,
    group_of: Vec<u32>,
    /// The model's closer levels inside a node, finest first, and per level
    /// each rank's group (empty until [`Network::place`]).
    levels: Vec<Link>,
    groups: Vec<Vec<u32>>,
    copy_gbs: f64,
    node_of: Vec<u32>,
    nodes: usize,
    /// Per node: when its outgoing and incoming ports are free.
    nic_out: Vec<f64>,
    nic_in: Vec<f64>,
    /// Token buckets (`burst_bytes`): bytes of credit each port had when it
    /// was last free (`nic_out`/`nic_in`); full at the start.
    tok_out: Vec<f64>,
    tok_in: Vec<f64>,
    /// Per rank: when its copies out (sending: into shared memory, or an
    /// eager message for the network card) and in (receiving, from shared
    /// memory) are free: one process copies one message at a time.
    shm_out: Vec<f64>,
    shm_in: Vec<f64>,
    /// Rendezvous reads inside a node in progress, per sender's buffer,
    /// where they share it (the model's `shared_reads`: `share.rs`).
    shared_reads: bool,
    shares: Shares,
    shared_ports: bool,
    /// Microseconds per byte of all shared-memory copies into one memory
    /// domain together (0: no limit); each rank's domain (its node, or its
    /// socket once placed) and when each domain is free of the copies
    /// queued on it.
    mem_per_byte: f64,
    mem_of: Vec<u32>,
    mem_free: Vec<Calendar>,
    /// Per level (as `levels`): whether its ranks share a cache, whose
    /// copies between them stay in it and do not queue on the memory
    /// domain.
    in_cache: Vec<bool>,
    /// How many ranks of the call the busiest node has ([`load`]).
    busiest: usize,
    /// Microseconds per byte of a group's global links together (0: not
    /// shared, `group.global_gbs` absent) and, per group, when its links
    /// out and in are free.
    glob_per_byte: f64,
    glob_out: Vec<Calendar>,
    glob_in: Vec<Calendar>,
}

fn global_per_byte(m: &Model) -> f64 {
    m.group
        .as_ref()
        .and_then(|g| g.global_gbs)
        .map_or(0.0, |b| 1e-3 / b)
}

/// A send just posted.
pub(super) struct SendPosted {
    /// When the sender's CPU is free again.
    pub cpu: f64,
    /// Eager: when the send completes (its buffer is free again); None for
    /// a rendezvous send (it completes when its data has left).
    pub free: Option<f64>,
    /// When the receiver can match it: an eager message's arrival, a
    /// rendezvous request's (with its first fragment, if any), or else when
    /// it was posted.
    pub t: f64,
}

/// What happens once a send has met its receive.
pub(super) enum Matched {
    /// The receive completes then.
    Eager { recv_done: f64 },
    /// The data (`rest` bytes of it: all but the first fragment) leaves
    /// then, taking its turn on the links at that time
    /// ([`Network::rendezvous_data`]).
    Rendezvous { at: f64, rest: u64 },
}

/// Microseconds per byte of `bytes` moved on `l`, as part of a rendezvous
/// message (`rdv`) or as a whole message.
#[inline]
fn rate(l: &Link, bytes: u64, rdv: bool) -> f64 {
    if rdv {
        l.per_byte()
    } else {
        l.per_byte_for(bytes)
    }
}

/// Per level of `m`: whether its ranks share a cache.
fn cache_levels(m: &Model) -> Vec<bool> {
    let cache = crate::model::placement::Level::Cache.name();
    m.levels.iter().map(|l| l.shares == cache).collect()
}

/// The model's links inside a node (`intra`, then `levels`) with their
/// latency and overhead `load` times what two ranks alone pay.
fn loaded(m: &Model, load: f64) -> (Link, Vec<Link>) {
    let scale = |l: &Link| Link {
        latency_us: l.latency_us * load,
        overhead_us: l.overhead_us * load,
        ..l.clone()
    };
    (
        scale(&m.intra),
        m.levels.iter().map(|l| scale(&l.link)).collect(),
    )
}

/// What a message inside a node costs over two ranks' (1: as much) when
/// the busiest node has `busiest` ranks in the call: 1 + the model's
/// `intra_load_per_rank` for each of them beyond two.
fn load(m: &Model, busiest: usize) -> f64 {
    m.intra_load_per_rank
        .map_or(1.0, |k| 1.0 + k * busiest.saturating_sub(2) as f64)
}

/// The link between nodes of different groups: the model's group link, or
/// `inter` where it has none.
fn global_link(m: &Model) -> Link {
    m.group.as_ref().map_or(&m.inter, |g| &g.link).clone()
}

/// A link's token-bucket size in bytes (0: none).
fn burst(l: &Link) -> f64 {
    l.burst_bytes.map_or(0.0, |b| b as f64)
}

impl Network {
    /// Model `m` on `nodes`, every port and copy resource free at time 0.
    pub fn new(m: &Model, nodes: &NodeMap) -> Self {
        let p = nodes.size();
        let busiest = nodes.max_ppn();
        let (intra, levels) = loaded(m, load(m, busiest));
        Network {
            busiest,
            intra,
            inter: m.inter.clone(),
            global: global_link(m),
            group_of: m.node_groups(nodes.num_nodes()),
            levels,
            groups: Vec::new(),
            copy_gbs: m.copy_gbs,
            node_of: (0..p).map(|r| nodes.node_of(r) as u32).collect(),
            nodes: nodes.num_nodes(),
            nic_out: vec![0.0; nodes.num_nodes()],
            nic_in: vec![0.0; nodes.num_nodes()],
            tok_out: vec![burst(&m.inter); nodes.num_nodes()],
            tok_in: vec![burst(&m.inter); nodes.num_nodes()],
            shm_out: vec![0.0; p],
            shm_in: vec![0.0; p],
            shared_reads: m.shared_reads,
            shares: Shares::new(p + nodes.num_nodes()),
            shared_ports: m.shared_ports,
            mem_per_byte: m.memory_copy_gbs.map_or(0.0, |b| 1e-3 / b),
            mem_of: (0..p).map(|r| nodes.node_of(r) as u32).collect(),
            mem_free: vec![Calendar::default(); nodes.num_nodes()],
            in_cache: cache_levels(m),
            glob_per_byte: global_per_byte(m),
            glob_out: Vec::new(),
            glob_in: Vec::new(),
        }
    }

    /// The same nodes on model `m`, everything free at time 0 again.
    pub fn reset(&mut self, m: &Model) {
        (self.intra, self.levels) = loaded(m, load(m, self.busiest));
        self.inter = m.inter.clone();
        self.global = global_link(m);
        self.copy_gbs = m.copy_gbs;
        self.nic_out.fill(0.0);
        self.nic_in.fill(0.0);
        self.tok_out.fill(burst(&m.inter));
        self.tok_in.fill(burst(&m.inter));
        self.shm_out.fill(0.0);
        self.shm_in.fill(0.0);
        self.shared_reads = m.shared_reads;
        self.shared_ports = m.shared_ports;
        self.shares.clear();
        self.mem_per_byte = m.memory_copy_gbs.map_or(0.0, |b| 1e-3 / b);
        self.mem_free.iter_mut().for_each(Calendar::clear);
        self.in_cache = cache_levels(m);
        self.glob_per_byte = global_per_byte(m);
        self.glob_out.iter_mut().for_each(Calendar::clear);
        self.glob_in.iter_mut().for_each(Calendar::clear);
    }

    /// A message between groups `na`'s and `nb`'s (nodes) takes its turn
    /// on both groups' global links, leaving at `start`: when it has
    /// arrived, no sooner than `arrival` (the ports' figure).
    fn global_turn(&mut self, na: usize, nb: usize, bytes: u64, start: f64, arrival: f64) -> f64 {
        let (ga, gb) = (self.group_of[na] as usize, self.group_of[nb] as usize);
        if self.glob_per_byte <= 0.0 || ga == gb {
            return arrival;
        }
        let n = ga.max(gb) + 1;
        if self.glob_out.len() < n {
            self.glob_out.resize(n, Calendar::default());
            self.glob_in.resize(n, Calendar::default());
        }
        let d = bytes as f64 * self.glob_per_byte;
        let out = self.glob_out[ga].reserve(start, d);
        let inn = self.glob_in[gb].reserve(out - d + self.global.latency_us, d);
        arrival.max(inn)
    }

    /// Where each rank sits: `groups[k][r]` is rank r's group at the
    /// model's level k (two ranks of one node in the same group talk over
    /// that level's link, the finest level first).
    /// `memory[r]`: rank r's memory domain (its socket).
    pub fn place(&mut self, groups: Vec<Vec<u32>>, memory: Vec<u32>) {
        self.groups = groups;
        let domains = memory.iter().map(|&d| d as usize + 1).max().unwrap_or(0);
        self.mem_of = memory;
        self.mem_free = vec![Calendar::default(); domains];
    }

    /// Which group each node is in (`group[n]`), where it is not the
    /// model's grouping of consecutive nodes (a layout's, an allocation's).
    pub fn place_groups(&mut self, group: Vec<u32>) {
        assert_eq!(group.len(), self.nodes, "a group per node");
        self.group_of = group;
    }

    /// Ranks in the call.
    pub fn ranks(&self) -> usize {
        self.node_of.len()
    }

    /// How far apart ranks `a` and `b` are: one node, one group, or two
    /// groups.
    #[inline]
    pub fn tier(&self, a: u32, b: u32) -> Tier {
        let (na, nb) = (self.node_of[a as usize], self.node_of[b as usize]);
        if na == nb {
            Tier::Node
        } else if self.group_of[na as usize] == self.group_of[nb as usize] {
            Tier::Group
        } else {
            Tier::Global
        }
    }

    /// The link between nodes `na` and `nb` (two nodes).
    #[inline]
    fn between(&self, na: usize, nb: usize) -> &Link {
        if self.group_of[na] == self.group_of[nb] {
            &self.inter
        } else {
            &self.global
        }
    }

    #[inline]
    fn link(&self, a: u32, b: u32) -> &Link {
        let (na, nb) = (self.node_of[a as usize], self.node_of[b as usize]);
        if na != nb {
            return self.between(na as usize, nb as usize);
        }
        for (l, g) in self.levels.iter().zip(&self.groups) {
            if g[a as usize] == g[b as usize] {
                return l;
            }
        }
        &self.intra
    }

    /// Whether ranks `a` and `b` (of one node) share a cache.
    #[inline]
    fn share_cache(&self, a: u32, b: u32) -> bool {
        self.groups
            .iter()
            .zip(&self.in_cache)
            .any(|(g, &c)| c && g[a as usize] == g[b as usize])
    }

    /// L between ranks `a` and `b`.
    #[inline]
    pub fn latency(&self, a: u32, b: u32) -> f64 {
        self.link(a, b).latency_us
    }

    /// Moves `bytes` from rank `a` to rank `b` starting at `t`: (when the
    /// sender's buffer is free again, when the data has arrived). `rdv`:
    /// part of a rendezvous message (its bytes move at the rendezvous rate).
    fn transfer(&mut self, a: u32, b: u32, bytes: u64, t: f64, rdv: bool) -> (f64, f64) {
        let (na, nb) = (
            self.node_of[a as usize] as usize,
            self.node_of[b as usize] as usize,
        );
        if na == nb {
            // Shared memory: the sender's process copies the message out
            // and the receiver's copies it in, each one message at a time
            // (a root sending to 31 ranks of its node copies 31 times). An
            // eager message is copied into a buffer of the sender's own
            // shared segment (Open MPI's vader takes its fragments from the
            // sender's segment), a local copy at the copy bandwidth; the
            // receiver's copy out of it crosses the distance at the link's
            // rate (what a ping-pong's slope measures). A rendezvous
            // message is read by the receiver straight from the sender's
            // buffer (single copy), and reads from one process queue on it
            // (the kernel pins the source's pages under its memory map's
            // lock): the sender's side is held as long. (With the model's
            // `shared_reads` all but a first fragment go to `read_join`.)
            let l = self.link(a, b);
            let (wire, lat) = (bytes as f64 * rate(l, bytes, rdv), l.latency_us);
            let copy_out = if rdv || bytes > l.eager_limit {
                wire
            } else {
                bytes as f64 * 1e-3 / self.copy_gbs
            };
            let (ra, rb) = (a as usize, b as usize);
            let start = t.max(self.shm_out[ra]);
            let out_end = start + copy_out;
            self.shm_out[ra] = out_end;
            let land_start = (start + lat).max(self.shm_in[rb]);
            let mut arrival = land_start + wire;
            if self.mem_per_byte > 0.0 && !self.share_cache(a, b) {
                // The node's memory moves its copies at an aggregate rate:
                // they take their turns on it (as messages on a network
                // port); a copy between two cores of one cache stays in
                // that cache.
                let d = bytes as f64 * self.mem_per_byte;
                let end = self.mem_free[self.mem_of[rb] as usize].reserve(land_start, d);
                arrival = arrival.max(end);
            }
            self.shm_in[rb] = arrival;
            return (out_end, arrival);
        }
        let l = if self.group_of[na] == self.group_of[nb] {
            &self.inter
        } else {
            &self.global
        };
        let per_byte = rate(l, bytes, rdv);
        let mut start = t.max(self.nic_out[na]);
        if !rdv && bytes <= l.eager_limit {
            // An eager message is copied by the sender's process into a
            // buffer the network card reads: its copies, to its node and to
            // the network, take turns.
            let ra = a as usize;
            start = start.max(self.shm_out[ra]);
            self.shm_out[ra] = start + bytes as f64 * 1e-3 / self.copy_gbs;
        }
        let land_start = (start + l.latency_us).max(self.nic_in[nb]);
        // A node's port is one bucket whichever group a message goes to.
        let Some(cap) = self.inter.burst_bytes.map(|b| b as f64) else {
            let wire = bytes as f64 * per_byte;
            let inject_end = start + wire;
            // The cards are held at the wire's rate (the link's sustained
            // one); an eager regime's slower rate is the copies at the ends,
            // which the card does not wait for.
            let occupy = bytes as f64 * per_byte.min(l.per_byte());
            self.nic_out[na] = (start + occupy).max(start + l.gap_us);
            let arrival = land_start + wire;
            self.nic_in[nb] = (land_start + occupy).max(land_start + l.gap_us);
            return (inject_end, self.global_turn(na, nb, bytes, start, arrival));
        };
        // Token buckets: each port's credit grew at the link's rate while it
        // was free, up to `cap`; the bytes it covers leave at once.
        let refill = l.per_byte();
        let n = bytes as f64;
        let credit_out = (self.tok_out[na] + (start - self.nic_out[na]) / refill).min(cap);
        let inject_end = start + (n - credit_out).max(0.0) * per_byte;
        self.tok_out[na] = (credit_out - n).max(0.0);
        self.nic_out[na] = inject_end.max(start + l.gap_us);
        let credit_in = (self.tok_in[nb] + (land_start - self.nic_in[nb]) / refill).min(cap);
        let arrival =
            (land_start + (n - credit_in).max(0.0) * per_byte).max(inject_end + l.latency_us);
        self.tok_in[nb] = (credit_in - n).max(0.0);
        self.nic_in[nb] = arrival.max(land_start + l.gap_us);
        (inject_end, self.global_turn(na, nb, bytes, start, arrival))
    }

    /// Rank `a`, its CPU free at `ts`, posts a send of `bytes` to rank `b`:
    /// it spends `o`; an eager message then goes on the links, a rendezvous
    /// request carries its first fragment (if the link has one) through
    /// them.
    pub fn post_send(&mut self, a: u32, b: u32, bytes: u64, ts: f64) -> SendPosted {
        let l = self.link(a, b);
        let t_post = ts + l.overhead_us;
        let eager = bytes <= l.eager_limit;
        let first = l.rendezvous_first_bytes;
        if eager {
            let (free, arr) = self.transfer(a, b, bytes, t_post, false);
            SendPosted {
                cpu: t_post,
                free: Some(free),
                t: arr,
            }
        } else if let Some(first) = first {
            // The request carries a first fragment: it is matched when
            // that has arrived.
            let first = first.min(bytes);
            let t = self.transfer(a, b, first, t_post, true).1;
            SendPosted {
                cpu: t_post,
                free: None,
                t,
            }
        } else {
            SendPosted {
                cpu: t_post,
                free: None,
                t: t_post,
            }
        }
    }

    /// A send of `bytes` from rank `src` (matchable at `s_t`) meets its
    /// receive on rank `dst` (posted at `r_post`).
    pub fn matched(&self, src: u32, dst: u32, bytes: u64, s_t: f64, r_post: f64) -> Matched {
        let l = self.link(src, dst);
        if bytes <= l.eager_limit {
            Matched::Eager {
                recv_done: s_t.max(r_post) + l.overhead_us,
            }
        } else {
            // Rendezvous: the data leaves once the receive is known.
            Matched::Rendezvous {
                at: s_t.max(r_post) + l.latency_us,
                rest: bytes - l.rendezvous_first_bytes.unwrap_or(0).min(bytes),
            }
        }
    }

    /// A rendezvous message's `bytes` (still to move) leave rank `src` for
    /// `dst` at `t`, its receive posted at `r_post`: (when the send
    /// completes, when the receive does).
    pub fn rendezvous_data(
        &mut self,
        src: u32,
        dst: u32,
        bytes: u64,
        t: f64,
        r_post: f64,
    ) -> (f64, f64) {
        let o_r = self.link(src, dst).overhead_us;
        let (free, arr) = self.transfer(src, dst, bytes, t, true);
        (free, arr.max(r_post) + o_r)
    }

    /// Whether a rendezvous message from `src` to `dst` is read out of
    /// `src`'s buffer sharing it with the other reads of it
    /// ([`Network::read_join`]): the model says reads share, and the two
    /// share a node. Otherwise the reads of one buffer queue on it
    /// ([`Network::rendezvous_data`]).
    #[inline]
    pub fn read_shared(&self, src: u32, dst: u32) -> bool {
        let same = self.node_of[src as usize] == self.node_of[dst as usize];
        (self.shared_reads && same) || (self.shared_ports && !same)
    }

    /// The share a rendezvous message from `src` to `dst` joins: `src`'s
    /// buffer inside a node, its node's port between nodes.
    pub fn share_key(&self, src: u32, dst: u32) -> u32 {
        let (na, nb) = (self.node_of[src as usize], self.node_of[dst as usize]);
        if na == nb {
            src
        } else {
            (self.shm_out.len() + na as usize) as u32
        }
    }

    /// Rendezvous message `k`'s `bytes` (still to move) inside a node start
    /// to be read out of `src`'s buffer by `dst` at `now`: they take the
    /// link's rate alone, a share of it beside the buffer's other reads
    /// (`share.rs`); later if `dst` is copying in another message.
    pub fn read_join(&mut self, src: u32, dst: u32, k: u32, bytes: u64, now: f64) -> Joined {
        let l = self.link(src, dst);
        let (work, lat) = (bytes as f64 * rate(l, bytes, true), l.latency_us);
        let key = self.share_key(src, dst);
        if key != src {
            return self.shares.join(key, dst, k, bytes, work, now);
        }
        let busy = self.shm_in[dst as usize] - lat;
        if busy > now {
            return Joined::Later(busy);
        }
        self.shares.join(src, dst, k, bytes, work, now)
    }

    /// At `now`, the event of version `version` of `src`'s buffer: None if
    /// stale; else the reads that ended (into `done`) and the buffer's next
    /// event.
    pub fn read_step(
        &mut self,
        src: u32,
        version: u32,
        now: f64,
        done: &mut Vec<Read>,
    ) -> Option<Option<(f64, u32)>> {
        self.shares.step(src, version, now, done)
    }

    /// Read `r` out of `src`'s buffer ended at `end` (its receive posted
    /// at `r_post`): (when the send completes, when the receive does). The
    /// data lands a latency later, and no sooner than the receiver's
    /// memory domain has moved it (its turn among the node's copies).
    pub fn read_landed(&mut self, src: u32, r: &Read, end: f64, r_post: f64) -> (f64, f64) {
        let l = self.link(src, r.dst);
        let (lat, o_r) = (l.latency_us, l.overhead_us);
        let mut arrival = end + lat;
        if self.share_key(src, r.dst) != src {
            // A node's port shared: between groups the data then takes its
            // turn on the groups' global links, as a queued message does.
            let (na, nb) = (
                self.node_of[src as usize] as usize,
                self.node_of[r.dst as usize] as usize,
            );
            let arrival = self.global_turn(na, nb, r.bytes, r.start, arrival);
            return (end, arrival.max(r_post) + o_r);
        }
        if self.mem_per_byte > 0.0 && !self.share_cache(src, r.dst) {
            let d = r.bytes as f64 * self.mem_per_byte;
            let m = self.mem_of[r.dst as usize] as usize;
            arrival = arrival.max(self.mem_free[m].reserve(r.start + lat, d));
        }
        self.shm_in[r.dst as usize] = arrival;
        (end, arrival.max(r_post) + o_r)
    }

    /// Rank `a`, its CPU free at `ts`, puts `bytes` into rank `b`'s window:
    /// (when its CPU is free again, when its buffer is, when the data has
    /// arrived).
    pub fn put(&mut self, a: u32, b: u32, bytes: u64, ts: f64) -> (f64, f64, f64) {
        let t_post = ts + self.link(a, b).overhead_us;
        let (free, arr) = self.transfer(a, b, bytes, t_post, false);
        (t_post, free, arr)
    }

    /// Rank `r` loads `bytes` out of its node's shared memory from `ts`:
    /// when it is done. Its process copies at the copy bandwidth, one load
    /// at a time, and the load queues on its memory domain's aggregate rate
    /// (`memory_copy_gbs`) with every other shared-memory copy into it.
    pub fn shared_load(&mut self, r: u32, ts: f64, bytes: u64) -> f64 {
        let start = ts.max(self.shm_in[r as usize]);
        let mut end = self.copy_end(start, bytes);
        if self.mem_per_byte > 0.0 {
            let d = bytes as f64 * self.mem_per_byte;
            end = end.max(self.mem_free[self.mem_of[r as usize] as usize].reserve(start, d));
        }
        self.shm_in[r as usize] = end;
        end
    }

    /// What a flag raised in shared memory takes to be seen by another
    /// rank of the node: one cache line between cores, the link's latency.
    pub fn flag_latency(&self) -> f64 {
        self.intra.latency_us
    }

    /// When a copy of `bytes` started at `ts` ends.
    #[inline]
    pub fn copy_end(&self, ts: f64, bytes: u64) -> f64 {
        ts + bytes as f64 * 1e-3 / self.copy_gbs
    }

    /// What a barrier of `ranks` ranks costs (window fences): log2 steps of
    /// `L + 2o` across the nodes and log2 steps inside a node, each way.
    pub fn barrier_cost(&self, ranks: usize) -> f64 {
        let log = |n: usize| (n.max(1) as f64).log2().ceil();
        let ppn = (ranks / self.nodes.max(1)).max(1);
        2.0 * (log(self.nodes) * (self.inter.latency_us + 2.0 * self.inter.overhead_us)
            + log(ppn) * (self.intra.latency_us + 2.0 * self.intra.overhead_us))
    }
}

/// A resource's busy intervals, reserved in any order: the simulation
/// lets a blocking rank run ahead through its program (a root posts all
/// its sends at once), so copies are not booked in time order; a
/// first-come queue then made a copy that landed earlier wait behind one
/// booked earlier that landed later. Each reservation takes the earliest
/// gap from its time that holds it.
#[derive(Clone, Debug, Default)]
pub(super) struct Calendar {
    /// start -> end, disjoint and not touching; a start as its f64 bits
    /// (times are >= 0, whose bits order as the times do).
    busy: BTreeMap<u64, f64>,
}

impl Calendar {
    pub(super) fn clear(&mut self) {
        self.busy.clear();
    }

    /// Books `dur` at the earliest time from `at` when the resource is free
    /// that long; when it ends.
    pub(super) fn reserve(&mut self, at: f64, dur: f64) -> f64 {
        let key = |t: f64| t.max(0.0).to_bits();
        let mut s = at.max(0.0);
        if let Some((_, &e)) = self.busy.range(..=key(s)).next_back() {
            s = s.max(e);
        }
        while let Some((&k, &e)) = self.busy.range((Excluded(key(s)), Unbounded)).next() {
            if f64::from_bits(k) >= s + dur {
                break;
            }
            s = e;
        }
        let end = s + dur;
        if dur <= 0.0 {
            return end;
        }
        // merge with the intervals it touches
        let (mut lo, mut hi) = (s, end);
        if let Some((&k, &e)) = self.busy.range(..=key(s)).next_back() {
            if e >= s {
                lo = f64::from_bits(k);
                hi = hi.max(e);
                self.busy.remove(&k);
            }
        }
        let touching: Vec<u64> = self
            .busy
            .range((Included(key(s)), Included(key(end))))
            .map(|(&k, _)| k)
            .collect();
        for k in touching {
            if let Some(e) = self.busy.remove(&k) {
                hi = hi.max(e);
            }
        }
        self.busy.insert(key(lo), hi);
        end
    }
}

#[cfg(test)]
mod calendar_tests {
    use super::Calendar;

    #[test]
    fn reservations_take_the_earliest_gap_in_any_order() {
        let mut c = Calendar::default();
        // booked first, later in time
        assert_eq!(c.reserve(10.0, 2.0), 12.0);
        // booked next, earlier: it fits before, and is not pushed behind
        assert_eq!(c.reserve(1.0, 3.0), 4.0);
        // 4..10 is free and 6 long: it fits
        assert_eq!(c.reserve(4.0, 5.0), 9.0);
        // 9..10 is too short for 2: after 12
        assert_eq!(c.reserve(8.5, 2.0), 14.0);
        // from inside a busy interval: its end
        assert_eq!(c.reserve(2.0, 0.5), 9.5);
        // zero length: at its time where free, else at the busy end
        assert_eq!(c.reserve(20.0, 0.0), 20.0);
        assert_eq!(c.reserve(11.0, 0.0), 14.0);
        // everything booked is disjoint
        let v: Vec<(f64, f64)> = c
            .busy
            .iter()
            .map(|(&k, &e)| (f64::from_bits(k), e))
            .collect();
        assert!(v.windows(2).all(|w| w[0].1 < w[1].0), "{v:?}");
        c.clear();
        assert_eq!(c.reserve(0.0, 1.0), 1.0);
    }
}
