//! The simulator: runs the very schedules the MPI transport runs (the same
//! [`Plan`]s, in the blocking or the dataflow execution) on a LogGP network
//! model with contention, as a discrete-event simulation. MPI-free.
//!
//! What a message costs: the sender's CPU is busy `o`; between nodes the
//! bytes then occupy the sender node's outgoing link for `n G` (and at least
//! `g`), fly for `L`, and occupy the receiver node's incoming link for `n G`
//! (a node's messages queue on its link: contention); inside a node they take
//! `L + n G` of the shared-memory link. Messages up to the eager limit leave
//! at once; larger ones wait for their receive plus one `L` (rendezvous). A
//! receive completes `o` after both it is posted and its data has arrived.
//! Copies take `n / copy bandwidth`; window synchronisation completes the
//! puts it closes. The call's time is the slowest rank's finish.
//!
//! Speed: a call of 16,384 ranks runs about a million ops, and a decision
//! table some hundreds of calls, so the engine keeps ops flat and touches
//! little memory per event. [`simulate`] builds one rank's schedule at a
//! time with one reused [`Builder`] and packs it at once into one array of
//! 40-byte ops (with what [`Plan`] derives: dependents, positions in
//! channels); no schedule is kept. Messages match by their position in
//! their channel (MPI's non-overtaking rule: the k-th send of a channel
//! meets its k-th receive), so a channel is a counter per side. The dataflow
//! execution keeps only the ops it can start now in a heap and parks ready
//! ops waiting for their turn in a channel on the channel. Events wait in a
//! radix heap (times never go back). The packed call is kept for its other
//! execution, which the tuner asks for next. These speed-ups were checked,
//! when made, to give bit for bit the times of a straightforward engine (a
//! heap of events, a queue per channel, a scan of the ready ops); the
//! model has changed since (roots, time-ordered rendezvous, shared-memory
//! copies), each change with its own test.

pub mod model;

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

use colltune_algorithms::registry::build_into;
use colltune_algorithms::{
    build_resolved, resolve, AlgoSpec, BuildError, Builder, Collective, Execution, NodeMap, Op,
    OpKind, Plan, Post, Shape,
};

pub use model::{Link, Model, ModelError};

/// A simulated time as a key with the order of `f64::total_cmp`.
#[inline]
fn time_key(t: f64) -> u64 {
    let b = t.to_bits();
    if b >> 63 == 1 {
        !b
    } else {
        b | 1 << 63
    }
}

#[inline]
fn key_time(k: u64) -> f64 {
    f64::from_bits(if k >> 63 == 1 { k & !(1 << 63) } else { !k })
}

/// What an event does: wake the rank, or complete op `ev` of it, or (with
/// this bit) start rendezvous transfer number `ev - RDV` (rank: the sender).
const WAKE: u32 = u32::MAX;
const RDV: u32 = 1 << 31;

/// A pending event, ordered by (time, sequence number): the earliest first,
/// and among equal times the one pushed first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Event {
    key: u64,
    seq: u64,
    r: u32,
    ev: u32,
}

/// The pending events, popped in (time, sequence number) order: a radix heap
/// over the time keys (every event is pushed for the time being handled or
/// later), bucket 0 holding the events of the current time in push order;
/// an event pushed for an earlier time (none is, but nothing breaks if one
/// is) waits in a plain heap that is always emptied first.
struct Events {
    /// Bucket `b` > 0: keys whose highest bit differing from `last` is `b - 1`.
    buckets: Vec<Vec<Event>>,
    /// Bucket 0 is popped from here on.
    head: usize,
    /// The key of bucket 0: the smallest key pending in the buckets.
    last: u64,
    /// Buckets that hold events (bit `b` for bucket `b`; bucket 0 aside).
    full: u128,
    late: BinaryHeap<Reverse<Event>>,
    seq: u64,
}

impl Default for Events {
    fn default() -> Self {
        Events {
            buckets: (0..65).map(|_| Vec::new()).collect(),
            head: 0,
            last: 0,
            full: 0,
            late: BinaryHeap::new(),
            seq: 0,
        }
    }
}

impl Events {
    #[inline]
    fn bucket(&self, key: u64) -> usize {
        64 - (key ^ self.last).leading_zeros() as usize
    }

    #[inline]
    fn push(&mut self, t: f64, r: u32, ev: u32) {
        self.seq += 1;
        let e = Event {
            key: time_key(t),
            seq: self.seq,
            r,
            ev,
        };
        if e.key < self.last {
            self.late.push(Reverse(e));
            return;
        }
        let b = self.bucket(e.key);
        self.buckets[b].push(e);
        self.full |= 1 << b;
    }

    #[inline]
    fn pop(&mut self) -> Option<Event> {
        if let Some(Reverse(e)) = self.late.pop() {
            return Some(e);
        }
        if self.head == self.buckets[0].len() {
            self.refill()?;
        }
        let e = self.buckets[0][self.head];
        self.head += 1;
        Some(e)
    }

    /// Bucket 0 is spent: moves the smallest key's events into it.
    fn refill(&mut self) -> Option<()> {
        self.buckets[0].clear();
        self.head = 0;
        self.full &= !1;
        if self.full == 0 {
            return None;
        }
        let b = self.full.trailing_zeros() as usize;
        let mut from = std::mem::take(&mut self.buckets[b]);
        self.full &= !(1 << b);
        self.last = from.iter().map(|e| e.key).min().expect("full bucket");
        for &e in &from {
            let d = self.bucket(e.key);
            self.buckets[d].push(e);
            self.full |= 1 << d;
        }
        from.clear();
        self.buckets[b] = from;
        // Events of one time leave in the order they were pushed.
        self.buckets[0].sort_unstable_by_key(|e| e.seq);
        Some(())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    Pending,
    /// Dataflow: its dependencies are done, it has not started.
    Ready,
    Active,
    Done,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum K {
    Send,
    Recv,
    Copy,
    Put,
    Fence,
    ExposeTo,
    AccessTo,
    EndAccess,
    EndExposure,
    WaitAll,
}

/// "No channel side" / "no peer".
const NONE: u32 = u32::MAX;

/// One op, flat: what it does and its state in the call (40 bytes).
#[derive(Clone, Copy, Debug)]
struct FOp {
    kind: K,
    post: Post,
    st: St,
    /// Send, Put: destination; Recv: source.
    peer: u32,
    /// Bytes it moves (Send, Copy, Put).
    len: u64,
    /// Send, Recv: its channel (index among its rank's channel sides) and
    /// its position there. ExposeTo, AccessTo: the group's start and length
    /// in `Engine::groups`.
    cs: u32,
    pos: u32,
    /// Dataflow: dependencies not yet done.
    remaining: u32,
    /// Dataflow: start of its dependents in its rank's part of `Engine::deps`.
    dep_off: u32,
    /// Recv: when it was posted. Send: when its data arrives (eager), or
    /// when it was posted (rendezvous).
    t: f64,
}

/// One direction of a (source, destination, tag) channel, as one rank sees it.
#[derive(Clone, Copy, Debug)]
struct ChanSide {
    /// This side's ops, by position: `Engine::cs_ops[start..start + len]`.
    start: u32,
    len: u32,
    /// The other side (a receive channel of the destination, or a send
    /// channel of the source); NONE while no op of it exists.
    peer: u32,
    /// Ops of this side posted so far (also: the position whose turn it is).
    posted: u32,
    /// The op posted last, its `FOp::t` and bytes: what the other side
    /// needs when it matches it (as it mostly does), at hand.
    last: u32,
    t: f64,
    bytes: u64,
}

/// What a rank touches at every event (one cache line).
#[repr(C, align(64))]
struct Rank {
    /// First op and dependent of this rank in the flat arrays.
    op_base: usize,
    dep_base: usize,
    cpu: f64,
    finish: f64,
    /// First channel side of this rank.
    cs_base: u32,
    n: u32,
    n_deps: u32,
    pc: u32,
    done: u32,
    wait: Wait,
    /// Dataflow: whether its roots have been offered yet.
    seeded: bool,
    /// Whether a sync op waits on peers (`RankCold::blocked_sync`).
    blocked: bool,
}

/// The rest of a rank: window synchronisation, channel lookup.
struct RankCold {
    /// Its receive channel sides, by (source, tag): `Engine::recv_keys[..]`.
    recv_base: usize,
    n_recv: u32,
    /// Its fence ops: `Engine::fence_list[fence_base..][..n_fences]`.
    fence_base: u32,
    n_fences: u32,
    /// Group of the first ExposeTo and of the last AccessTo: (start, len).
    expose_group: Option<(u32, u32)>,
    access_group: Option<(u32, u32)>,
    /// Puts started and not yet closed: (op, target, inject end, arrival).
    puts: Vec<(u32, u32, f64, f64)>,
    fences: usize,
    exposed: Option<f64>,
    /// EndAccess times of origins, as seen by this target.
    accessed: Vec<(u32, f64)>,
    /// Blocked sync op waiting on peers: (op, entered at).
    blocked_sync: Option<(u32, f64)>,
}

/// What a blocking rank waits for before it goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wait {
    None,
    /// This op.
    One(u32),
    /// This op and the next.
    Two(u32),
    /// Every op before this WaitAll.
    Below(u32),
}

/// Numbers a rank's channels in order of first use: a small open-addressing
/// table from (direction, peer, tag) to the channel's number.
#[derive(Default)]
struct ChanIds {
    /// (key, number); key u64::MAX: empty.
    slots: Vec<(u64, u32)>,
    used: Vec<u32>,
}

impl ChanIds {
    fn clear(&mut self) {
        for &u in &self.used {
            self.slots[u as usize].0 = u64::MAX;
        }
        self.used.clear();
    }

    /// The number of `key`, `next` (and then added) if it is new.
    fn id(&mut self, key: u64, next: u32) -> u32 {
        if (self.used.len() + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut h = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize & mask;
        loop {
            let s = &mut self.slots[h];
            if s.0 == key {
                return s.1;
            }
            if s.0 == u64::MAX {
                *s = (key, next);
                self.used.push(h as u32);
                return next;
            }
            h = (h + 1) & mask;
        }
    }

    fn grow(&mut self) {
        let old: Vec<(u64, u32)> = self.used.iter().map(|&u| self.slots[u as usize]).collect();
        let cap = (self.slots.len() * 2).max(64);
        self.slots = vec![(u64::MAX, 0); cap];
        self.used.clear();
        for (k, v) in old {
            self.id(k, v);
        }
    }
}

/// One simulated call.
pub struct Engine<'a> {
    /// The model's figures.
    intra: Link,
    inter: Link,
    copy_gbs: f64,
    node_of: Vec<u32>,
    nodes: usize,
    exec: Execution,
    /// Plans it was made from, if any (to name an op in an error).
    plans: Option<&'a [Plan]>,
    ranks: Vec<Rank>,
    cold: Vec<RankCold>,
    ops: Vec<FOp>,
    cs: Vec<ChanSide>,
    /// Ops of each channel side, by position (indices within the rank).
    cs_ops: Vec<u32>,
    /// Per rank, its receive channel sides: ((source, tag) as a key, side).
    recv_keys: Vec<(u64, u32)>,
    /// Send channel sides to pair: (side, destination, (self, tag) as a key).
    send_keys: Vec<(u32, u32, u64)>,
    /// Dependents of each op (indices within the rank), per rank.
    deps: Vec<u32>,
    groups: Vec<u32>,
    /// The fence ops of each rank.
    fence_list: Vec<u32>,
    events: Events,
    /// Dataflow: ops of the current rank that may start now.
    startable: BinaryHeap<Reverse<u32>>,
    nic_out: Vec<f64>,
    nic_in: Vec<f64>,
    /// Token buckets (`burst_bytes`): bytes of credit each port had when it
    /// was last free (`nic_out`/`nic_in`); full at the start.
    tok_out: Vec<f64>,
    tok_in: Vec<f64>,
    /// Per rank: when its shared-memory copies out (sending) and in
    /// (receiving) are free: one process copies one message at a time.
    shm_out: Vec<f64>,
    shm_in: Vec<f64>,
    fence_entries: Vec<(usize, f64)>,
    fence_ops: Vec<Vec<u32>>,
    /// Rendezvous transfers waiting for their start event: (send rank, send
    /// op, bytes still to move, receive rank, receive op, receive posted).
    rdv: Vec<(u32, u32, u64, u32, u32, f64)>,
    /// Whether ops' dependents are packed (the dataflow execution needs them).
    dependents: bool,
    /// Scratch for packing a rank.
    chan_ids: ChanIds,
    scratch: Vec<u32>,
}

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error(transparent)]
    Build(#[from] BuildError),
    #[error("the simulated call did not finish: {0}")]
    Stuck(String),
    #[error(
        "too large to simulate: about {ops} million operations on {ranks} ranks \
         (this simulator holds at most {max} million, some {gb} GB); \
         leave this algorithm out (-a) or simulate fewer ranks"
    )]
    TooLarge {
        ops: u64,
        ranks: usize,
        max: u64,
        gb: u64,
    },
}

/// The most operations (all ranks together) one simulated call may hold:
/// some 64 bytes each, 9.6 GB.
pub const MAX_OPS: u64 = 150_000_000;

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

/// A link's token-bucket size in bytes (0: none).
fn burst(l: &Link) -> f64 {
    l.burst_bytes.map_or(0.0, |b| b as f64)
}

fn u32_of(n: usize) -> u32 {
    u32::try_from(n).expect("simulated call too large")
}

impl<'a> Engine<'a> {
    /// An engine for the call the plans describe (rank `r` runs `plans[r]`).
    pub fn new(m: &'a Model, nodes: &NodeMap, plans: &'a [Plan], exec: Execution) -> Self {
        let mut e = Engine::empty(m, nodes, exec, exec == Execution::Nonblocking);
        for pl in plans {
            e.add_rank(&pl.schedule.ops, None);
        }
        e.link_channels();
        e.plans = Some(plans);
        e
    }

    /// An engine with no rank yet; `dependents`: pack them (for the dataflow
    /// execution) even if `exec` is blocking.
    fn empty(m: &Model, nodes: &NodeMap, exec: Execution, dependents: bool) -> Self {
        let p = nodes.size();
        Engine {
            intra: m.intra.clone(),
            inter: m.inter.clone(),
            copy_gbs: m.copy_gbs,
            node_of: (0..p).map(|r| nodes.node_of(r) as u32).collect(),
            nodes: nodes.num_nodes(),
            exec,
            plans: None,
            ranks: Vec::with_capacity(p),
            cold: Vec::with_capacity(p),
            ops: Vec::new(),
            cs: Vec::new(),
            cs_ops: Vec::new(),
            recv_keys: Vec::new(),
            send_keys: Vec::new(),
            deps: Vec::new(),
            groups: Vec::new(),
            fence_list: Vec::new(),
            events: Events::default(),
            startable: BinaryHeap::new(),
            nic_out: vec![0.0; nodes.num_nodes()],
            nic_in: vec![0.0; nodes.num_nodes()],
            tok_out: vec![burst(&m.inter); nodes.num_nodes()],
            tok_in: vec![burst(&m.inter); nodes.num_nodes()],
            shm_out: vec![0.0; p],
            shm_in: vec![0.0; p],
            fence_entries: Vec::new(),
            rdv: Vec::new(),
            fence_ops: Vec::new(),
            dependents: dependents || exec == Execution::Nonblocking,
            chan_ids: ChanIds::default(),
            scratch: Vec::new(),
        }
    }

    /// Packs the next rank's schedule: its ops, channels (numbering
    /// positions in them as [`Plan`] does) and, for the dataflow execution,
    /// dependents (as [`Plan`] lists them).
    /// `deps`: every op's dependencies as [`Builder::finish_flat`] gives
    /// them, or None: in the ops.
    fn add_rank(&mut self, ops: &[Op], deps: Option<(&[u32], &[u32])>) {
        let deps_of = |i: usize| match deps {
            Some((flat, ends)) => {
                let lo = if i == 0 { 0 } else { ends[i - 1] as usize };
                &flat[lo..ends[i] as usize]
            }
            None => &ops[i].deps[..],
        };
        let me = u32_of(self.ranks.len());
        let op_base = self.ops.len();
        let cs_base = self.cs.len();
        let dep_base = self.deps.len();
        let recv_base = self.recv_keys.len();
        let fence_base = u32_of(self.fence_list.len());
        let n = ops.len();
        let dataflow = self.exec == Execution::Nonblocking;
        let mut expose_group = None;
        let mut access_group = None;
        self.chan_ids.clear();
        // Channel sides of this rank: their ops are counted in `len` first.
        let count = &mut self.scratch;
        count.clear();
        count.resize(n + 1, 0);
        for (i, op) in ops.iter().enumerate() {
            let op_deps = deps_of(i);
            if self.dependents {
                for &d in op_deps {
                    count[d as usize + 1] += 1;
                }
            }
            let (mut peer, mut len, mut cs, mut pos) = (NONE, 0, NONE, 0);
            let mut chan = |key: u64, cs: &mut u32, pos: &mut u32| {
                let next = u32_of(self.cs.len() - cs_base);
                let id = self.chan_ids.id(key, next);
                if id == next {
                    self.cs.push(ChanSide {
                        start: 0,
                        len: 0,
                        peer: NONE,
                        posted: 0,
                        last: NONE,
                        t: 0.0,
                        bytes: 0,
                    });
                    if key >> 40 == 0 {
                        self.recv_keys.push((key, u32_of(cs_base) + id));
                    } else {
                        let to = (key >> 8) as u32;
                        let back = (me as u64) << 8 | key & 0xff;
                        self.send_keys.push((u32_of(cs_base) + id, to, back));
                    }
                }
                let side = &mut self.cs[cs_base + id as usize];
                *cs = id;
                *pos = side.len;
                side.len += 1;
            };
            let kind = match &op.kind {
                OpKind::Send { to, src, tag, .. } => {
                    peer = to.0;
                    len = src.len;
                    chan(
                        1 << 40 | (to.0 as u64) << 8 | *tag as u8 as u64,
                        &mut cs,
                        &mut pos,
                    );
                    K::Send
                }
                OpKind::Recv { from, tag, .. } => {
                    peer = from.0;
                    chan((from.0 as u64) << 8 | *tag as u8 as u64, &mut cs, &mut pos);
                    K::Recv
                }
                OpKind::Copy { src, .. } => {
                    len = src.len;
                    K::Copy
                }
                OpKind::Put { to, src, .. } => {
                    peer = to.0;
                    len = src.len;
                    K::Put
                }
                OpKind::Fence => {
                    self.fence_list.push(i as u32);
                    K::Fence
                }
                OpKind::ExposeTo { group } | OpKind::AccessTo { group } => {
                    cs = u32_of(self.groups.len());
                    pos = u32_of(group.len());
                    self.groups.extend(group.iter().map(|g| g.0));
                    if matches!(op.kind, OpKind::ExposeTo { .. }) {
                        expose_group = expose_group.or(Some((cs, pos)));
                        K::ExposeTo
                    } else {
                        access_group = Some((cs, pos));
                        K::AccessTo
                    }
                }
                OpKind::EndAccess => K::EndAccess,
                OpKind::EndExposure => K::EndExposure,
                OpKind::WaitAll => K::WaitAll,
            };
            self.ops.push(FOp {
                kind,
                post: op.post,
                st: if dataflow && op_deps.is_empty() {
                    St::Ready
                } else {
                    St::Pending
                },
                peer,
                len,
                cs,
                pos,
                remaining: op_deps.len() as u32,
                dep_off: 0,
                t: 0.0,
            });
        }
        // Lay the channel sides' ops out by position.
        let mut start = self.cs_ops.len();
        for side in &mut self.cs[cs_base..] {
            side.start = u32_of(start);
            start += side.len as usize;
        }
        self.cs_ops.resize(start, 0);
        for i in 0..n {
            let op = &self.ops[op_base + i];
            if matches!(op.kind, K::Send | K::Recv) {
                let side = &self.cs[cs_base + op.cs as usize];
                self.cs_ops[(side.start + op.pos) as usize] = i as u32;
            }
        }
        self.recv_keys[recv_base..].sort_unstable();
        // Dependents, in the order Plan lists them.
        let mut n_deps = 0;
        if self.dependents {
            let count = &mut self.scratch;
            for i in 0..n {
                count[i + 1] += count[i];
            }
            n_deps = count[n] as usize;
            for (op, &off) in self.ops[op_base..].iter_mut().zip(count.iter()) {
                op.dep_off = off;
            }
            self.deps.resize(dep_base + n_deps, 0);
            for i in 0..n {
                for &d in deps_of(i) {
                    let c = &mut count[d as usize];
                    self.deps[dep_base + *c as usize] = i as u32;
                    *c += 1;
                }
            }
        }
        self.ranks.push(Rank {
            op_base,
            dep_base,
            cpu: 0.0,
            finish: 0.0,
            cs_base: u32_of(cs_base),
            n: u32_of(n),
            n_deps: u32_of(n_deps),
            pc: 0,
            done: 0,
            wait: Wait::None,
            seeded: false,
            blocked: false,
        });
        self.cold.push(RankCold {
            recv_base,
            n_recv: u32_of(self.recv_keys.len() - recv_base),
            fence_base,
            n_fences: u32_of(self.fence_list.len()) - fence_base,
            expose_group,
            access_group,
            puts: Vec::new(),
            fences: 0,
            exposed: None,
            accessed: Vec::new(),
            blocked_sync: None,
        });
    }

    /// Pairs every send channel side with the receive side it feeds.
    fn link_channels(&mut self) {
        let p = self.ranks.len();
        for &(c, to, want) in &self.send_keys {
            if to as usize >= p {
                continue;
            }
            let d = &self.cold[to as usize];
            let recvs = &self.recv_keys[d.recv_base..d.recv_base + d.n_recv as usize];
            if let Ok(k) = recvs.binary_search_by_key(&want, |&(key, _)| key) {
                let rc = recvs[k].1;
                self.cs[c as usize].peer = rc;
                self.cs[rc as usize].peer = c;
            }
        }
        self.send_keys = Vec::new();
        self.recv_keys = Vec::new();
    }

    #[inline]
    fn push(&mut self, t: f64, r: u32, ev: u32) {
        self.events.push(t, r, ev);
    }

    #[inline]
    fn link(&self, a: u32, b: u32) -> &Link {
        if self.node_of[a as usize] == self.node_of[b as usize] {
            &self.intra
        } else {
            &self.inter
        }
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
            // (a root sending to 31 ranks of its node copies 31 times).
            let l = &self.intra;
            let wire = bytes as f64 * rate(l, bytes, rdv);
            let (ra, rb) = (a as usize, b as usize);
            let start = t.max(self.shm_out[ra]);
            let out_end = start + wire;
            self.shm_out[ra] = out_end;
            let land_start = (start + l.latency_us).max(self.shm_in[rb]);
            let arrival = land_start + wire;
            self.shm_in[rb] = arrival;
            return (out_end, arrival);
        }
        let l = &self.inter;
        let per_byte = rate(l, bytes, rdv);
        let start = t.max(self.nic_out[na]);
        let land_start = (start + l.latency_us).max(self.nic_in[nb]);
        let Some(cap) = l.burst_bytes.map(|b| b as f64) else {
            let wire = bytes as f64 * per_byte;
            let inject_end = start + wire;
            self.nic_out[na] = inject_end.max(start + l.gap_us);
            let arrival = land_start + wire;
            self.nic_in[nb] = arrival;
            return (inject_end, arrival);
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
        self.nic_in[nb] = arrival;
        (inject_end, arrival)
    }

    #[inline]
    fn op(&self, r: u32, i: u32) -> &FOp {
        &self.ops[self.ranks[r as usize].op_base + i as usize]
    }

    #[inline]
    fn op_mut(&mut self, r: u32, i: u32) -> &mut FOp {
        let b = self.ranks[r as usize].op_base;
        &mut self.ops[b + i as usize]
    }

    /// Posts send or receive `op` (number `i` of rank `r`, its `FOp::t`
    /// being `t`) on its channel and matches it with the other side's op of
    /// the same position (MPI's non-overtaking rule), if that is posted.
    fn post(&mut self, r: u32, i: u32, op: &FOp, t: f64) {
        let c = self.ranks[r as usize].cs_base as usize + op.cs as usize;
        let side = &mut self.cs[c];
        debug_assert_eq!(side.posted, op.pos);
        side.posted += 1;
        side.last = i;
        side.t = t;
        side.bytes = op.len;
        let peer = side.peer;
        if peer == NONE {
            return;
        }
        let other = &self.cs[peer as usize];
        if other.posted <= op.pos {
            return;
        }
        let (j, jt, jbytes) = if other.posted == op.pos + 1 {
            (other.last, other.t, other.bytes)
        } else {
            let j = self.cs_ops[(other.start + op.pos) as usize];
            let o = self.op(op.peer, j);
            (j, o.t, o.len)
        };
        if op.kind == K::Send {
            self.deliver(r, i, op.len, t, op.peer, j, jt);
        } else {
            self.deliver(op.peer, j, jbytes, jt, r, i, t);
        }
    }

    /// Send `si` of rank `src` (`bytes`, its `FOp::t` being `s_t`) meets
    /// receive `ri` of rank `dst` (posted at `r_post`).
    #[allow(clippy::too_many_arguments)]
    fn deliver(&mut self, src: u32, si: u32, bytes: u64, s_t: f64, dst: u32, ri: u32, r_post: f64) {
        let l = self.link(src, dst);
        if bytes <= l.eager_limit {
            let o_r = l.overhead_us;
            self.push(s_t.max(r_post) + o_r, dst, ri);
        } else {
            // Rendezvous: the data leaves once the receive is known, and
            // takes its turn on the links when it leaves (an event then),
            // not when the match was found: links serve in time order.
            let t0 = s_t.max(r_post) + l.latency_us;
            let rest = bytes - l.rendezvous_first_bytes.unwrap_or(0).min(bytes);
            let k = u32_of(self.rdv.len());
            assert!(k < RDV - 1, "simulated call too large");
            self.rdv.push((src, si, rest, dst, ri, r_post));
            self.push(t0, src, RDV | k);
        }
    }

    /// Rendezvous transfer `k` leaves at `t`.
    fn start_rdv(&mut self, k: u32, t: f64) {
        let (src, si, bytes, dst, ri, r_post) = self.rdv[k as usize];
        let o_r = self.link(src, dst).overhead_us;
        let (free, arr) = self.transfer(src, dst, bytes, t, true);
        self.push(free, src, si);
        self.push(arr.max(r_post) + o_r, dst, ri);
    }

    fn start(&mut self, r: u32, i: u32, t: f64) {
        let op = {
            let op = self.op_mut(r, i);
            op.st = St::Active;
            *op
        };
        let ts = t.max(self.ranks[r as usize].cpu);
        match op.kind {
            K::Send => {
                let to = op.peer;
                let l = self.link(r, to);
                let t_post = ts + l.overhead_us;
                let eager = op.len <= l.eager_limit;
                let first = l.rendezvous_first_bytes;
                self.ranks[r as usize].cpu = t_post;
                let t = if eager {
                    let (free, arr) = self.transfer(r, to, op.len, t_post, false);
                    self.push(free, r, i);
                    arr
                } else if let Some(first) = first {
                    // The request carries a first fragment: it is matched
                    // when that has arrived.
                    let first = first.min(op.len);
                    self.transfer(r, to, first, t_post, true).1
                } else {
                    t_post
                };
                self.op_mut(r, i).t = t;
                self.post(r, i, &op, t);
            }
            K::Recv => {
                self.op_mut(r, i).t = ts;
                self.post(r, i, &op, ts);
            }
            K::Copy => {
                let end = ts + op.len as f64 * 1e-3 / self.copy_gbs;
                self.ranks[r as usize].cpu = end;
                self.push(end, r, i);
            }
            K::Put => {
                let to = op.peer;
                let o = self.link(r, to).overhead_us;
                let t_post = ts + o;
                self.ranks[r as usize].cpu = t_post;
                let (free, arr) = self.transfer(r, to, op.len, t_post, false);
                self.cold[r as usize].puts.push((i, to, free, arr));
            }
            K::Fence => {
                let k = self.cold[r as usize].fences;
                self.cold[r as usize].fences += 1;
                if self.fence_entries.len() <= k {
                    self.fence_entries.resize(k + 1, (0, 0.0));
                    self.fence_ops.resize(k + 1, Vec::new());
                }
                let puts_done = self.cold[r as usize]
                    .puts
                    .iter()
                    .map(|p| p.3)
                    .fold(ts, f64::max);
                let e = &mut self.fence_entries[k];
                e.0 += 1;
                e.1 = e.1.max(puts_done);
                self.fence_ops[k].push(r);
                if e.0 == self.ranks.len() {
                    let t_all = e.1 + self.barrier_cost();
                    let members = std::mem::take(&mut self.fence_ops[k]);
                    for q in members {
                        let f = self.fence_op(q, k);
                        let puts = std::mem::take(&mut self.cold[q as usize].puts);
                        for (op, ..) in puts {
                            self.push(t_all, q, op);
                        }
                        self.push(t_all, q, f);
                    }
                }
            }
            K::ExposeTo => {
                self.cold[r as usize].exposed = Some(ts);
                for g in op.cs..op.cs + op.pos {
                    let g = self.groups[g as usize];
                    self.push(ts, g, WAKE);
                }
                self.push(ts, r, i);
            }
            K::AccessTo | K::EndExposure => {
                self.cold[r as usize].blocked_sync = Some((i, ts));
                self.ranks[r as usize].blocked = true;
                self.try_sync(r);
            }
            K::EndAccess => {
                let puts = std::mem::take(&mut self.cold[r as usize].puts);
                let mut end = ts;
                let mut notify: Vec<(u32, f64)> = Vec::new();
                for &(op, target, free, arr) in &puts {
                    end = end.max(free);
                    self.push(free.max(ts), r, op);
                    let lat = self.link(r, target).latency_us;
                    match notify.iter_mut().find(|n| n.0 == target) {
                        Some(n) => n.1 = n.1.max(arr.max(ts + lat)),
                        None => notify.push((target, arr.max(ts + lat))),
                    }
                }
                // Targets of this epoch with no put still hear of its end.
                if let Some((g0, gn)) = self.cold[r as usize].access_group {
                    for g in g0..g0 + gn {
                        let g = self.groups[g as usize];
                        if !notify.iter().any(|n| n.0 == g) {
                            let lat = self.link(r, g).latency_us;
                            notify.push((g, ts + lat));
                        }
                    }
                }
                for (target, at) in notify {
                    self.cold[target as usize].accessed.push((r, at));
                    self.push(at, target, WAKE);
                }
                self.push(end, r, i);
            }
            K::WaitAll => {
                if self.exec == Execution::Blocking {
                    self.ranks[r as usize].wait = Wait::Below(i);
                }
                self.push(ts, r, i);
            }
        }
    }

    fn fence_op(&self, r: u32, k: usize) -> u32 {
        let c = &self.cold[r as usize];
        assert!(k < c.n_fences as usize, "k-th fence");
        self.fence_list[c.fence_base as usize + k]
    }

    fn barrier_cost(&self) -> f64 {
        let log = |n: usize| (n.max(1) as f64).log2().ceil();
        let ppn = (self.ranks.len() / self.nodes.max(1)).max(1);
        2.0 * (log(self.nodes) * (self.inter.latency_us + 2.0 * self.inter.overhead_us)
            + log(ppn) * (self.intra.latency_us + 2.0 * self.intra.overhead_us))
    }

    /// Completes a blocked AccessTo / EndExposure once its peers allow.
    fn try_sync(&mut self, r: u32) {
        if !self.ranks[r as usize].blocked {
            return;
        }
        let Some((i, ts)) = self.cold[r as usize].blocked_sync else {
            return;
        };
        let op = *self.op(r, i);
        let done_at = match op.kind {
            K::AccessTo => {
                let mut at = ts;
                for g in op.cs..op.cs + op.pos {
                    let g = self.groups[g as usize];
                    match self.cold[g as usize].exposed {
                        Some(e) => at = at.max(e + self.link(g, r).latency_us),
                        None => return,
                    }
                }
                at
            }
            K::EndExposure => {
                let c = &self.cold[r as usize];
                let (g0, gn) = c.expose_group.unwrap_or((0, 0));
                let mut at = ts;
                for g in g0..g0 + gn {
                    let g = self.groups[g as usize];
                    match c.accessed.iter().find(|a| a.0 == g) {
                        Some(a) => at = at.max(a.1),
                        None => return,
                    }
                }
                at
            }
            _ => return,
        };
        self.cold[r as usize].blocked_sync = None;
        self.ranks[r as usize].blocked = false;
        self.push(done_at, r, i);
    }

    fn advance(&mut self, r: u32, t: f64) {
        match self.exec {
            Execution::Blocking => self.advance_blocking(r, t),
            Execution::Nonblocking => self.advance_dataflow(r, t),
        }
    }

    #[inline]
    fn is_done(&self, r: u32, i: u32) -> bool {
        self.op(r, i).st == St::Done
    }

    fn advance_blocking(&mut self, r: u32, t: f64) {
        loop {
            let rs = &self.ranks[r as usize];
            let clear = match rs.wait {
                Wait::None => true,
                Wait::One(a) => self.is_done(r, a),
                Wait::Two(a) => self.is_done(r, a) && self.is_done(r, a + 1),
                // Ops after the WaitAll have not started: the ops before it
                // are done when all done ops but itself are.
                Wait::Below(i) => rs.done - self.is_done(r, i) as u32 == i,
            };
            if !clear {
                return;
            }
            let rs = &mut self.ranks[r as usize];
            rs.wait = Wait::None;
            if rs.pc >= rs.n || rs.blocked {
                return;
            }
            let pc = rs.pc;
            let op = self.ops[rs.op_base + pc as usize];
            match op.post {
                Post::ExchangeWithNext => {
                    rs.pc += 2;
                    rs.wait = Wait::Two(pc);
                    self.start(r, pc, t);
                    self.start(r, pc + 1, t);
                }
                Post::Immediate => {
                    rs.pc += 1;
                    self.start(r, pc, t);
                }
                Post::Blocking => {
                    rs.pc += 1;
                    if op.kind != K::WaitAll {
                        rs.wait = Wait::One(pc);
                    }
                    self.start(r, pc, t);
                }
            }
        }
    }

    /// Dataflow: whether ready op `op` may start now (a send or receive
    /// only in its turn in its channel); if not, it waits for that turn.
    #[inline]
    fn may_start(&self, r: u32, op: &FOp) -> bool {
        !matches!(op.kind, K::Send | K::Recv)
            || self.cs[self.ranks[r as usize].cs_base as usize + op.cs as usize].posted == op.pos
    }

    /// Starts every ready op that may start, in program order (a channel's
    /// next op, once parked, may start as soon as its predecessor has).
    fn advance_dataflow(&mut self, r: u32, t: f64) {
        if !self.ranks[r as usize].seeded {
            let rs = &mut self.ranks[r as usize];
            rs.seeded = true;
            let (b, n) = (rs.op_base, rs.n as usize);
            for i in 0..n {
                let op = &self.ops[b + i];
                if op.st == St::Ready && self.may_start(r, op) {
                    self.startable.push(Reverse(i as u32));
                }
            }
        }
        while let Some(Reverse(i)) = self.startable.pop() {
            self.start(r, i, t);
            let op = *self.op(r, i);
            if matches!(op.kind, K::Send | K::Recv) {
                let c = &self.cs[self.ranks[r as usize].cs_base as usize + op.cs as usize];
                if op.pos + 1 < c.len {
                    let j = self.cs_ops[(c.start + op.pos + 1) as usize];
                    if self.op(r, j).st == St::Ready {
                        self.startable.push(Reverse(j));
                    }
                }
            }
        }
    }

    fn complete(&mut self, r: u32, i: u32, t: f64) {
        let rs = &mut self.ranks[r as usize];
        let (b, db) = (rs.op_base, rs.dep_base);
        let op = &mut self.ops[b + i as usize];
        if op.st == St::Done {
            return;
        }
        op.st = St::Done;
        rs.done += 1;
        rs.finish = rs.finish.max(t);
        if self.exec == Execution::Nonblocking {
            let lo = db + op.dep_off as usize;
            let hi = if i + 1 < rs.n {
                db + self.ops[b + i as usize + 1].dep_off as usize
            } else {
                db + rs.n_deps as usize
            };
            for k in lo..hi {
                let d = self.deps[k];
                let dop = &mut self.ops[b + d as usize];
                dop.remaining -= 1;
                if dop.remaining == 0 {
                    dop.st = St::Ready;
                    let dop = *dop;
                    if self.may_start(r, &dop) {
                        self.startable.push(Reverse(d));
                    }
                }
            }
        }
    }

    /// Runs the call; the slowest rank's finish time, microseconds.
    pub fn run(mut self) -> Result<f64, SimError> {
        let plans = self.plans;
        self.run_inner(f64::INFINITY).map_err(|(r, first)| {
            let kind = plans.map(|p| &p[r].schedule.ops[first].kind);
            stuck(r, first, kind)
        })
    }

    /// Makes the engine, packed and possibly run, ready to run the same call
    /// again, on model `m` in execution `exec` (it must have dependents for
    /// the dataflow execution).
    fn reset(&mut self, m: &Model, exec: Execution) {
        let dataflow = exec == Execution::Nonblocking;
        assert!(self.dependents || !dataflow, "no dependents packed");
        self.intra = m.intra.clone();
        self.inter = m.inter.clone();
        self.copy_gbs = m.copy_gbs;
        self.exec = exec;
        for (rs, c) in self.ranks.iter_mut().zip(&mut self.cold) {
            let ops = &mut self.ops[rs.op_base..rs.op_base + rs.n as usize];
            for op in ops.iter_mut() {
                op.remaining = 0;
            }
            if self.dependents {
                for &d in &self.deps[rs.dep_base..rs.dep_base + rs.n_deps as usize] {
                    ops[d as usize].remaining += 1;
                }
            }
            for op in ops.iter_mut() {
                op.st = if dataflow && op.remaining == 0 {
                    St::Ready
                } else {
                    St::Pending
                };
                op.t = 0.0;
            }
            rs.cpu = 0.0;
            rs.finish = 0.0;
            rs.pc = 0;
            rs.done = 0;
            rs.wait = Wait::None;
            rs.seeded = false;
            rs.blocked = false;
            c.puts.clear();
            c.fences = 0;
            c.exposed = None;
            c.accessed.clear();
            c.blocked_sync = None;
        }
        for side in &mut self.cs {
            side.posted = 0;
        }
        self.events = Events::default();
        self.startable.clear();
        self.nic_out.fill(0.0);
        self.nic_in.fill(0.0);
        self.tok_out.fill(burst(&m.inter));
        self.tok_in.fill(burst(&m.inter));
        self.shm_out.fill(0.0);
        self.shm_in.fill(0.0);
        self.fence_entries.clear();
        self.rdv.clear();
        self.fence_ops.clear();
    }

    /// Runs the call; on a deadlock, the first rank that did not finish and
    /// its first op not done. Gives up once simulated time passes `limit`
    /// (then returns a time above it).
    fn run_inner(&mut self, limit: f64) -> Result<f64, (usize, usize)> {
        for r in 0..self.ranks.len() as u32 {
            self.push(0.0, r, WAKE);
        }
        while let Some(e) = self.events.pop() {
            let t = key_time(e.key);
            if t > limit {
                self.events = Events::default();
                return Ok(t);
            }
            if e.ev != WAKE && e.ev & RDV != 0 {
                self.start_rdv(e.ev & !RDV, t);
                continue;
            }
            if e.ev != WAKE {
                self.complete(e.r, e.ev, t);
            }
            self.try_sync(e.r);
            self.advance(e.r, t);
        }
        let mut worst = 0f64;
        for (r, rs) in self.ranks.iter().enumerate() {
            if rs.done < rs.n {
                let ops = &self.ops[rs.op_base..rs.op_base + rs.n as usize];
                let first = ops.iter().position(|o| o.st != St::Done).unwrap_or(0);
                return Err((r, first));
            }
            worst = worst.max(rs.finish);
        }
        Ok(worst)
    }
}

fn stuck(r: usize, first: usize, kind: Option<&OpKind>) -> SimError {
    SimError::Stuck(match kind {
        Some(k) => format!("rank {r} at op {first} ({k:?})"),
        None => format!("rank {r} at op {first}"),
    })
}

/// The last call simulated on this thread, packed, kept until it has run in
/// the other execution too (the tuner asks for both in turn) or another call
/// is simulated: at most one call's engine is kept, and it is dropped before
/// another is built.
struct Last {
    c: Collective,
    spec: AlgoSpec,
    bytes: u64,
    root: usize,
    nodes: NodeMap,
    /// Executions it has run in (by `Execution::ALL` order).
    ran: [bool; 2],
    engine: Engine<'static>,
}

thread_local! {
    static LAST: RefCell<Option<Last>> = const { RefCell::new(None) };
}

/// Drops the call [`simulate`] keeps on this thread for its other execution,
/// if any (frees its memory; the next call builds afresh).
pub fn drop_kept_call() {
    LAST.with(|l| l.borrow_mut().take());
}

/// Simulates one call of `spec` with root 0 on `nodes`; microseconds.
pub fn simulate(
    m: &Model,
    c: Collective,
    spec: &AlgoSpec,
    exec: Execution,
    nodes: &NodeMap,
    bytes: u64,
) -> Result<f64, SimError> {
    simulate_at(m, c, spec, exec, nodes, bytes, 0)
}

/// The roots whose times stand for a rotating root (a benchmark's
/// repetition i broadcasting from rank i mod p), each for an equal share of
/// the ranks: every rank up to 8 ranks; on equal nodes of
/// consecutive ranks (`256x64`), rotating the root by a whole node maps the
/// cluster onto itself, so only the root's place inside its node matters:
/// ranks 0..ppn, or 8 of them evenly spread; otherwise 8 ranks evenly
/// spread. Swap has no root: rank 0 alone.
pub fn rotation_roots(c: Collective, nodes: &NodeMap) -> Vec<usize> {
    const MOST: usize = 8;
    let p = nodes.size();
    if c == Collective::Swap || p <= 1 {
        return vec![0];
    }
    if p <= MOST {
        return (0..p).collect();
    }
    let k = nodes.max_ppn();
    let consecutive = nodes.is_uniform()
        && (0..nodes.num_nodes()).all(|n| {
            nodes
                .ranks_on(n)
                .iter()
                .enumerate()
                .all(|(i, &r)| r as usize == n * k + i)
        });
    let span = if consecutive { k } else { p };
    if span <= MOST {
        return (0..span).collect();
    }
    (0..MOST).map(|i| i * span / MOST).collect()
}

/// Simulates one call of `spec` from `root` on `nodes`; microseconds.
///
/// Builds the ranks' schedules one at a time (as [`build_all`] would) and
/// packs each into the engine at once, so that no more than one schedule is
/// ever held. The packed call is kept until it has been simulated in the
/// other execution as well, which then skips building (see [`Last`] and
/// [`drop_kept_call`]).
///
/// [`build_all`]: colltune_algorithms::build_all
pub fn simulate_at(
    m: &Model,
    c: Collective,
    spec: &AlgoSpec,
    exec: Execution,
    nodes: &NodeMap,
    bytes: u64,
    root: usize,
) -> Result<f64, SimError> {
    simulate_within(m, c, spec, exec, nodes, bytes, root, f64::INFINITY)
        .map(|t| t.expect("no limit"))
}

/// [`simulate_at`], giving up (`None`) once the call has taken longer than
/// `limit` microseconds: what a tuner that already knows a faster candidate
/// needs to know of a slow one, for a fraction of its cost.
#[allow(clippy::too_many_arguments)]
pub fn simulate_within(
    m: &Model,
    c: Collective,
    spec: &AlgoSpec,
    exec: Execution,
    nodes: &NodeMap,
    bytes: u64,
    root: usize,
    limit: f64,
) -> Result<Option<f64>, SimError> {
    let spec = resolve(c, spec).map_err(BuildError::from)?;
    let shape = |rank| Shape {
        rank,
        size: nodes.size(),
        root,
        bytes,
        nodes,
    };
    let which = Execution::ALL
        .iter()
        .position(|&x| x == exec)
        .expect("an execution");
    // Take the kept call; drop it at once unless it is this one.
    let last = LAST.with(|l| l.borrow_mut().take()).filter(|l| {
        l.c == c && l.bytes == bytes && l.root == root && l.spec == spec && l.nodes == *nodes
    });
    if last.is_none() && nodes.size() > 1024 {
        // A whole call is held at once: estimate it from a few ranks (the
        // median, so that one root's many sends do not count for all).
        let mut b = Builder::new();
        let p = nodes.size();
        let mut counts = Vec::new();
        for k in 0..5 {
            let rank = (root + 1 + k * (p - 1) / 5) % p;
            b.clear();
            build_into(c, &spec, &shape(rank), &mut b).map_err(BuildError::from)?;
            counts.push(b.len() as u64);
        }
        counts.sort_unstable();
        let ops = counts[2].saturating_mul(p as u64);
        if ops > MAX_OPS {
            return Err(SimError::TooLarge {
                ops: ops / 1_000_000,
                ranks: p,
                max: MAX_OPS / 1_000_000,
                gb: MAX_OPS * 64 / 1_000_000_000,
            });
        }
    }
    let (mut engine, mut ran) = match last {
        Some(l) => {
            let mut e = l.engine;
            e.reset(m, exec);
            (e, l.ran)
        }
        None => {
            let mut e = Engine::empty(m, nodes, exec, true);
            // One builder for all ranks: what `build_resolved` does, keeping
            // the builder's memory and taking the dependencies flat.
            let mut b = Builder::new();
            let (mut deps, mut ends) = (Vec::new(), Vec::new());
            for rank in 0..nodes.size() {
                b.clear();
                build_into(c, &spec, &shape(rank), &mut b).map_err(BuildError::from)?;
                let ops = b.finish_flat(&mut deps, &mut ends);
                e.add_rank(ops, Some((&deps, &ends)));
            }
            e.link_channels();
            (e, [false; 2])
        }
    };
    let t = engine.run_inner(limit).map_err(|(r, first)| {
        match build_resolved(c, &spec, &shape(r)) {
            Ok(s) => stuck(r, first, Some(&s.ops[first].kind)),
            Err(b) => b.into(),
        }
    })?;
    ran[which] = true;
    if ran.contains(&false) {
        let nodes = nodes.clone();
        LAST.with(|l| {
            *l.borrow_mut() = Some(Last {
                c,
                spec,
                bytes,
                root,
                nodes,
                ran,
                engine,
            })
        });
    }
    Ok((t <= limit).then_some(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    pub fn model() -> Model {
        Model {
            name: "test".into(),
            source: "test".into(),
            intra: Link {
                latency_us: 0.5,
                overhead_us: 0.2,
                gap_us: 0.1,
                bandwidth_gbs: 10.0,
                eager_limit: 8192,
                eager_bandwidth_gbs: None,
                burst_bytes: None,
                rendezvous_first_bytes: None,
            },
            inter: Link {
                latency_us: 2.0,
                overhead_us: 0.5,
                gap_us: 0.3,
                bandwidth_gbs: 1.0,
                eager_limit: 8192,
                eager_bandwidth_gbs: None,
                burst_bytes: None,
                rendezvous_first_bytes: None,
            },
            copy_gbs: 10.0,
        }
    }

    fn sim(spec: &str, c: Collective, exec: Execution, nodes: &NodeMap, bytes: u64) -> f64 {
        simulate(
            &model(),
            c,
            &AlgoSpec::parse(spec).unwrap(),
            exec,
            nodes,
            bytes,
        )
        .unwrap()
    }

    #[test]
    fn a_single_message_costs_the_model() {
        let m = model();
        let two = NodeMap::blocks(&[1, 1]).unwrap();
        // 1 KiB between nodes: o + n G (leave) + L, then o at the receiver
        let t = sim("linear", Collective::Bcast, Execution::Blocking, &two, 1000);
        let want = m.inter.overhead_us
            + 1000.0 * m.inter.per_byte()
            + m.inter.latency_us
            + m.inter.overhead_us;
        assert!((t - want).abs() < 1e-6, "{t} vs {want}");
        // inside a node it is cheaper
        let one = NodeMap::single(2);
        assert!(sim("linear", Collective::Bcast, Execution::Blocking, &one, 1000) < t);
    }

    #[test]
    fn a_token_bucket_lets_its_burst_leave_at_once() {
        let mut m = model();
        m.inter.burst_bytes = Some(2000);
        let two = NodeMap::blocks(&[1, 1]).unwrap();
        let bcast = |m: &Model, nodes: &NodeMap, bytes| {
            simulate(
                m,
                Collective::Bcast,
                &AlgoSpec::parse("linear").unwrap(),
                Execution::Blocking,
                nodes,
                bytes,
            )
            .unwrap()
        };
        let (o, l, g) = (m.inter.overhead_us, m.inter.latency_us, m.inter.per_byte());
        // within the burst: no byte is paid for; past it, the rest is
        let t = bcast(&m, &two, 1000);
        assert!((t - (2.0 * o + l)).abs() < 1e-6, "{t}");
        let t = bcast(&m, &two, 3000);
        assert!((t - (2.0 * o + l + 1000.0 * g)).abs() < 1e-6, "{t}");
        // The root's port sends three 1000-byte messages to three nodes on
        // a slow link (0.1 us a byte, a few bytes of refill between sends):
        // a 3000-byte bucket covers all three, a 2000-byte one the first
        // two, and the third pays for its bytes.
        m.inter.bandwidth_gbs = 0.01;
        let four = NodeMap::blocks(&[1, 1, 1, 1]).unwrap();
        let plain = {
            let mut p = m.clone();
            p.inter.burst_bytes = None;
            bcast(&p, &four, 1000)
        };
        let small = bcast(&m, &four, 1000);
        m.inter.burst_bytes = Some(3000);
        let big = bcast(&m, &four, 1000);
        let pay = 1000.0 * m.inter.per_byte();
        assert!(
            (plain - big - 3.0 * pay).abs() < 0.02 * pay,
            "{plain} {big}"
        );
        assert!((small - big - pay).abs() < 0.02 * pay, "{small} {big}");
    }

    #[test]
    fn a_first_fragment_goes_with_the_request_and_the_rest_waits_its_turn() {
        // Open MPI's ob1 over TCP: 64 KiB segments are just above the eager
        // limit; each request carries all but 32 bytes.
        let mut m = model();
        m.inter.eager_limit = 65520;
        m.inter.rendezvous_first_bytes = Some(65504);
        let run = |m: &Model, spec: &str, exec, nodes: &NodeMap, bytes| {
            simulate(
                m,
                Collective::Bcast,
                &AlgoSpec::parse(spec).unwrap(),
                exec,
                nodes,
                bytes,
            )
            .unwrap()
        };
        // One message: request and first fragment (L), answer (L), rest (L).
        let two = NodeMap::blocks(&[1, 1]).unwrap();
        let l = &m.inter;
        let want = 2.0 * l.overhead_us + 3.0 * l.latency_us + 65536.0 * l.per_byte();
        let t = run(&m, "linear", Execution::Blocking, &two, 65536);
        assert!((t - want).abs() < 1e-6, "{t} vs {want}");
        // A relay: posting every segment's send at once (the dataflow
        // execution) queues the first fragments of later segments before
        // the rest of the earlier ones, so a segment is complete, and
        // forwarded, only once nearly all have crossed: store and forward.
        // One segment at a time (blocking) keeps the pipeline.
        let three = NodeMap::blocks(&[1, 1, 1]).unwrap();
        let spec = "pipeline:segment=65536";
        let blocking = run(&m, spec, Execution::Blocking, &three, 1 << 20);
        let dataflow = run(&m, spec, Execution::Nonblocking, &three, 1 << 20);
        let wire = (1u64 << 20) as f64 * l.per_byte();
        assert!(blocking < 1.3 * wire, "{blocking} vs {wire}");
        assert!(dataflow > 1.8 * wire, "{dataflow} vs {wire}");
        // Without first fragments both pipeline.
        m.inter.rendezvous_first_bytes = None;
        let dataflow = run(&m, spec, Execution::Nonblocking, &three, 1 << 20);
        assert!(dataflow < 1.3 * wire, "{dataflow} vs {wire}");
    }

    #[test]
    fn contention_on_a_node_link_serialises_its_messages() {
        // root on node 0 sends 1 MB to 3 ranks of node 1: they share links.
        let nodes = NodeMap::blocks(&[1, 3]).unwrap();
        let t = sim(
            "linear",
            Collective::Bcast,
            Execution::Blocking,
            &nodes,
            1_000_000,
        );
        let wire = 1_000_000.0 * model().inter.per_byte();
        assert!(t > 3.0 * wire, "{t} <= 3 x {wire}");
        // the hierarchical broadcast crosses the link once
        let h = sim(
            "hierarchical:inter=linear,intra=linear",
            Collective::Bcast,
            Execution::Blocking,
            &nodes,
            1_000_000,
        );
        assert!(h < 0.5 * t, "{h} vs {t}");
    }

    #[test]
    fn a_process_copies_one_shared_memory_message_at_a_time() {
        // root sends 1 MB to 7 ranks of its own node: seven copies out of
        // the root's process, one after another.
        let nodes = NodeMap::single(8);
        let wire = 1_000_000.0 * model().intra.per_byte();
        for exec in Execution::ALL {
            let t = sim("linear", Collective::Bcast, exec, &nodes, 1_000_000);
            assert!(t > 7.0 * wire, "{exec}: {t} <= 7 x {wire}");
            assert!(t < 7.0 * wire + 50.0, "{exec}: {t}");
        }
        // a binomial tree copies log2(8) = 3 times on its longest path
        let b = sim(
            "binomial",
            Collective::Bcast,
            Execution::Blocking,
            &nodes,
            1_000_000,
        );
        assert!(b < 0.5 * 7.0 * wire, "{b}");
    }

    #[test]
    fn a_limit_gives_up_on_slower_calls_only() {
        let nodes = NodeMap::blocks(&[4, 4, 4]).unwrap();
        let spec = AlgoSpec::parse("scatter_allgather_ring").unwrap();
        for exec in Execution::ALL {
            let at = |root, limit| {
                simulate_within(
                    &model(),
                    Collective::Bcast,
                    &spec,
                    exec,
                    &nodes,
                    1 << 20,
                    root,
                    limit,
                )
                .unwrap()
            };
            let t =
                simulate_at(&model(), Collective::Bcast, &spec, exec, &nodes, 1 << 20, 1).unwrap();
            assert_eq!(at(1, t * 0.5), None, "{exec}");
            // the kept call, abandoned half-way, runs again in full
            assert_eq!(at(1, t * 1.01), Some(t), "{exec}");
            assert_eq!(at(1, f64::INFINITY), Some(t), "{exec}");
        }
    }

    #[test]
    fn a_call_too_large_to_hold_is_refused_before_it_is_built() {
        // The ring sends O(p^2) messages: 16,384 ranks would need some 537
        // million ops; a linear broadcast on as many ranks is small.
        let nodes = NodeMap::blocks(&[64; 256]).unwrap();
        let ring = AlgoSpec::parse("scatter_allgather_ring").unwrap();
        match simulate(
            &model(),
            Collective::Bcast,
            &ring,
            Execution::Blocking,
            &nodes,
            1 << 20,
        ) {
            Err(SimError::TooLarge { ops, ranks, .. }) => {
                assert!(ops > 400 && ops < 700, "{ops}");
                assert_eq!(ranks, 16384);
            }
            other => panic!("{other:?}"),
        }
        let linear = AlgoSpec::parse("linear").unwrap();
        assert!(simulate(
            &model(),
            Collective::Bcast,
            &linear,
            Execution::Blocking,
            &nodes,
            8
        )
        .is_ok());
    }

    #[test]
    fn pipelining_needs_the_dataflow_execution() {
        let nodes = NodeMap::blocks(&[1; 8]).unwrap();
        let b = sim(
            "pipeline:segment=65536",
            Collective::Bcast,
            Execution::Blocking,
            &nodes,
            4 << 20,
        );
        let n = sim(
            "pipeline:segment=65536",
            Collective::Bcast,
            Execution::Nonblocking,
            &nodes,
            4 << 20,
        );
        let whole = sim(
            "pipeline:segment=0",
            Collective::Bcast,
            Execution::Nonblocking,
            &nodes,
            4 << 20,
        );
        assert!(n < whole / 2.0, "segmented {n} vs whole {whole}");
        assert!(n <= b, "dataflow {n} vs blocking {b}");
    }

    #[test]
    fn a_deadlock_names_the_first_stuck_op() {
        use colltune_algorithms::{Builder, Region};
        // Both ranks receive first: neither send is ever reached.
        let plans: Vec<Plan> = (0..2)
            .map(|r| {
                let mut b = Builder::new();
                b.recv(1 - r, Region::data(0, 8), Post::Blocking);
                b.send(1 - r, Region::data(0, 8), Post::Blocking);
                Plan::new(b.finish())
            })
            .collect();
        let nodes = NodeMap::single(2);
        for exec in Execution::ALL {
            match Engine::new(&model(), &nodes, &plans, exec).run() {
                Err(SimError::Stuck(why)) => {
                    assert!(why.starts_with("rank 0 at op 0 (Recv {"), "{exec}: {why}")
                }
                other => panic!("{exec}: {other:?}"),
            }
        }
    }

    #[test]
    fn rotating_roots_are_sampled_where_they_differ() {
        let b = |s: &[usize]| NodeMap::blocks(s).unwrap();
        assert_eq!(
            rotation_roots(Collective::Bcast, &b(&[2, 2])),
            vec![0, 1, 2, 3]
        );
        assert_eq!(rotation_roots(Collective::Bcast, &b(&[1; 1024])), vec![0]);
        assert_eq!(
            rotation_roots(Collective::Bcast, &b(&[4; 64])),
            vec![0, 1, 2, 3]
        );
        assert_eq!(
            rotation_roots(Collective::Bcast, &b(&[64; 4])),
            vec![0, 8, 16, 24, 32, 40, 48, 56]
        );
        assert_eq!(
            rotation_roots(Collective::Bcast, &b(&[7, 6, 7])),
            vec![0, 2, 5, 7, 10, 12, 15, 17]
        );
        assert_eq!(rotation_roots(Collective::Swap, &b(&[2, 2])), vec![0]);
        // Round-robin placement is not rotation-symmetric by whole nodes.
        assert_eq!(
            rotation_roots(Collective::Bcast, &NodeMap::round_robin(16, 4)).len(),
            8
        );
    }

    #[test]
    fn moving_the_root_by_a_whole_node_changes_no_time() {
        // What rotation_roots relies on: on equal nodes of consecutive
        // ranks, every algorithm costs the same from root r and r + ppn.
        let nodes = NodeMap::blocks(&[3, 3, 3, 3]).unwrap();
        let mut seen = 0;
        for a in colltune_algorithms::algorithms(Collective::Bcast) {
            for spec in colltune_algorithms::variants(a, 65536) {
                for exec in Execution::ALL {
                    for bytes in [1, 100_000] {
                        let at = |r| {
                            simulate_at(&model(), Collective::Bcast, &spec, exec, &nodes, bytes, r)
                                .unwrap()
                        };
                        for r in [1, 2] {
                            let (t0, t1) = (at(r), at(r + 3));
                            assert!(
                                (t0 - t1).abs() <= 1e-9 * t0,
                                "{spec} [{exec}] {bytes} B: root {r} {t0} us, root {} {t1} us",
                                r + 3
                            );
                            seen += 1;
                        }
                    }
                }
            }
        }
        assert!(seen > 40, "{seen}");
    }

    #[test]
    fn every_algorithm_finishes_in_both_executions() {
        let nodes = NodeMap::blocks(&[3, 2, 3]).unwrap();
        for c in Collective::ALL {
            for a in colltune_algorithms::algorithms(c) {
                for spec in colltune_algorithms::variants(a, 65536) {
                    for exec in Execution::ALL {
                        for bytes in [0, 1, 100_000, 1 << 20] {
                            let t = simulate(&model(), c, &spec, exec, &nodes, bytes)
                                .unwrap_or_else(|e| panic!("{c} {spec} {exec} {bytes}: {e}"));
                            assert!(t.is_finite() && t >= 0.0);
                            if bytes > 0 {
                                assert!(t > 0.0, "{spec} {bytes}");
                            }
                        }
                    }
                }
            }
        }
    }
}
