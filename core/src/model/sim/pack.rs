//! Packing: one rank's schedule into the engine's flat arrays, straight
//! from the builder (no [`Plan`] is made on the fast path): its ops as
//! 40-byte [`FOp`]s, its dependents (as [`Plan`] lists them), its channel
//! sides numbered in order of first use and each send or receive's
//! position in its channel (as [`Plan::chan`] numbers them); then every
//! send side is paired with the receive side it feeds.
//!
//! An engine made from [`Plan`]s takes each op's (channel, position) from
//! [`Plan::chan`]; [`simulate`](super::simulate) numbers them itself with
//! the same [`ChannelNumbering`] (a test checks they agree for every
//! algorithm) without [`Plan::new`]'s allocations.

use colltune_algorithms::{Channel, ChannelNumbering, Direction, Op, OpKind, Plan};

use super::engine::{u32_of, ChanSide, Engine, FOp, Rank, RankCold, St, Wait, K, NONE};

/// A window synchronisation's group: (start, length) in `Engine::groups`.
type WindowGroup = Option<(u32, u32)>;

/// Where the rank being packed starts in the engine's arrays.
struct Start {
    me: u32,
    op: usize,
    cs: usize,
    dep: usize,
    recv: usize,
    fence: u32,
}

impl Engine<'_> {
    /// Packs the next rank's schedule, its dependencies flat as
    /// [`Builder::finish_flat`] gives them, numbering its channels here.
    ///
    /// [`Builder::finish_flat`]: colltune_algorithms::Builder::finish_flat
    pub(super) fn add_rank(&mut self, ops: &[Op], deps: (&[u32], &[u32])) {
        self.pack_rank(ops, Some(deps), |ids, _, ch| ids.next(ch).0);
    }

    /// Packs the next rank's plan, its channels numbered as [`Plan::chan`]
    /// numbers them.
    pub(super) fn add_plan(&mut self, plan: &Plan) {
        let chan = &plan.chan;
        self.pack_rank(&plan.schedule.ops, None, |_, i, _| {
            chan[i].expect("a send or receive has a channel").0
        });
    }

    /// Packs the next rank's schedule: its ops, channels (numbering
    /// positions in them as [`Plan`] does) and, for the dataflow execution,
    /// dependents (as [`Plan`] lists them); counts its messages per tier.
    /// `deps`: every op's dependencies as [`Builder::finish_flat`] gives
    /// them, or None: in the ops. `number(numbering, i, channel)`: the
    /// number of op `i`'s channel (a send or receive), the next one if it
    /// is new. A generic: `simulate`'s packing tests nothing per op.
    ///
    /// [`Builder::finish_flat`]: colltune_algorithms::Builder::finish_flat
    pub(super) fn pack_rank(
        &mut self,
        ops: &[Op],
        deps: Option<(&[u32], &[u32])>,
        mut number: impl FnMut(&mut ChannelNumbering, usize, Channel) -> u32,
    ) {
        let deps_of = |i: usize| match deps {
            Some((flat, ends)) => {
                let lo = if i == 0 { 0 } else { ends[i - 1] as usize };
                &flat[lo..ends[i] as usize]
            }
            None => &ops[i].deps[..],
        };
        let at = Start {
            me: u32_of(self.ranks.len()),
            op: self.ops.len(),
            cs: self.cs.len(),
            dep: self.deps.len(),
            recv: self.recv_keys.len(),
            fence: u32_of(self.fence_list.len()),
        };
        let n = ops.len();
        let dataflow = self.exec == colltune_algorithms::Execution::Nonblocking;
        let mut sync = (None, None);
        self.channels.clear();
        // Dependents of each op are counted in `scratch` first.
        self.scratch.clear();
        self.scratch.resize(n + 1, 0);
        for (i, op) in ops.iter().enumerate() {
            let op_deps = deps_of(i);
            if self.dependents {
                for &d in op_deps {
                    self.scratch[d as usize + 1] += 1;
                }
            }
            let (kind, peer, len, cs, pos) = self.flat_op(i, op, &at, &mut sync, &mut number);
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
        self.lay_out_channels(&at, n);
        let n_deps = if self.dependents {
            self.pack_dependents(&at, n, deps_of)
        } else {
            0
        };
        self.ranks.push(Rank {
            op_base: at.op,
            dep_base: at.dep,
            cpu: 0.0,
            finish: 0.0,
            cs_base: u32_of(at.cs),
            n: u32_of(n),
            n_deps: u32_of(n_deps),
            pc: 0,
            done: 0,
            wait: Wait::None,
            seeded: false,
            blocked: false,
        });
        self.cold.push(RankCold {
            recv_base: at.recv,
            n_recv: u32_of(self.recv_keys.len() - at.recv),
            fence_base: at.fence,
            n_fences: u32_of(self.fence_list.len()) - at.fence,
            expose_group: sync.0,
            access_group: sync.1,
            puts: Vec::new(),
            fences: 0,
            exposed: None,
            accessed: Vec::new(),
            blocked_sync: None,
            signals: Vec::new(),
            waiters: Vec::new(),
        });
    }

    /// Op `i` of the rank being packed, flat: (kind, peer, length, channel
    /// or group, position) as [`FOp`] holds them. Opens its channel side if
    /// it is the first op of it, counts a message, records fences and
    /// window groups (`sync`: the first ExposeTo's group and the last
    /// AccessTo's).
    fn flat_op(
        &mut self,
        i: usize,
        op: &Op,
        at: &Start,
        sync: &mut (WindowGroup, WindowGroup),
        number: &mut impl FnMut(&mut ChannelNumbering, usize, Channel) -> u32,
    ) -> (K, u32, u64, u32, u32) {
        let (mut peer, mut len, mut cs, mut pos) = (NONE, 0, NONE, 0);
        let kind = match &op.kind {
            OpKind::Send { to, src, tag, .. } => {
                (peer, len) = (to.0, src.len);
                let ch = Channel {
                    dir: Direction::Send,
                    peer: *to,
                    tag: *tag,
                };
                (cs, pos) = self.chan_side(i, ch, at, number);
                K::Send
            }
            OpKind::Recv { from, tag, .. } => {
                peer = from.0;
                let ch = Channel {
                    dir: Direction::Recv,
                    peer: *from,
                    tag: *tag,
                };
                (cs, pos) = self.chan_side(i, ch, at, number);
                K::Recv
            }
            OpKind::Copy { src, .. } => {
                len = src.len;
                K::Copy
            }
            OpKind::Put { to, src, .. } => {
                (peer, len) = (to.0, src.len);
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
                    sync.0 = sync.0.or(Some((cs, pos)));
                    K::ExposeTo
                } else {
                    sync.1 = Some((cs, pos));
                    K::AccessTo
                }
            }
            OpKind::EndAccess => K::EndAccess,
            OpKind::EndExposure => K::EndExposure,
            OpKind::WaitAll => K::WaitAll,
            OpKind::Load { from, src, .. } => {
                (peer, len) = (from.0, src.len);
                K::Load
            }
            OpKind::Signal { flag, value } => {
                (cs, pos) = (*flag as u32, *value);
                K::Signal
            }
            // A one-call simulation has no earlier call to wait for
            // (a local op of no length: done when reached).
            OpKind::Await { back: 1.., .. } => K::Copy,
            OpKind::Await {
                on, flag, value, ..
            } => {
                (peer, cs, pos) = (on.0, *flag as u32, *value);
                K::Await
            }
        };
        if matches!(kind, K::Send | K::Put | K::Load) && (peer as usize) < self.net.ranks() {
            self.traffic.add(self.net.tier(at.me, peer), len);
        }
        (kind, peer, len, cs, pos)
    }

    /// The channel side of send or receive `i` on `ch`, opened if new:
    /// (its number among the rank's sides, the op's position in it).
    fn chan_side(
        &mut self,
        i: usize,
        ch: Channel,
        at: &Start,
        number: &mut impl FnMut(&mut ChannelNumbering, usize, Channel) -> u32,
    ) -> (u32, u32) {
        let next = u32_of(self.cs.len() - at.cs);
        let key = ch.key();
        // A channel is new when its number is the next one: both
        // numberings go in order of first use.
        let id = number(&mut self.channels, i, ch);
        debug_assert!(id <= next, "channels numbered in order of first use");
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
            if ch.dir == Direction::Recv {
                self.recv_keys.push((key, u32_of(at.cs) + id));
            } else {
                let to = (key >> 8) as u32;
                let back = (at.me as u64) << 8 | key & 0xff;
                self.send_keys.push((u32_of(at.cs) + id, to, back));
            }
        }
        let side = &mut self.cs[at.cs + id as usize];
        let pos = side.len;
        side.len += 1;
        (id, pos)
    }

    /// Lays the rank's channel sides' ops out by position (`cs_ops`), and
    /// sorts its receive sides for pairing.
    fn lay_out_channels(&mut self, at: &Start, n: usize) {
        let mut start = self.cs_ops.len();
        for side in &mut self.cs[at.cs..] {
            side.start = u32_of(start);
            start += side.len as usize;
        }
        self.cs_ops.resize(start, 0);
        for i in 0..n {
            let op = &self.ops[at.op + i];
            if matches!(op.kind, K::Send | K::Recv) {
                let side = &self.cs[at.cs + op.cs as usize];
                self.cs_ops[(side.start + op.pos) as usize] = i as u32;
            }
        }
        self.recv_keys[at.recv..].sort_unstable();
    }

    /// The rank's dependents, in the order [`Plan`] lists them, from the
    /// counts per op in `scratch`; how many.
    fn pack_dependents<'d>(
        &mut self,
        at: &Start,
        n: usize,
        deps_of: impl Fn(usize) -> &'d [u32],
    ) -> usize {
        let count = &mut self.scratch;
        for i in 0..n {
            count[i + 1] += count[i];
        }
        let n_deps = count[n] as usize;
        for (op, &off) in self.ops[at.op..].iter_mut().zip(count.iter()) {
            op.dep_off = off;
        }
        self.deps.resize(at.dep + n_deps, 0);
        for i in 0..n {
            for &d in deps_of(i) {
                let c = &mut count[d as usize];
                self.deps[at.dep + *c as usize] = i as u32;
                *c += 1;
            }
        }
        n_deps
    }

    /// Pairs every send channel side with the receive side it feeds.
    pub(super) fn link_channels(&mut self) {
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
}
