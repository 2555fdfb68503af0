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
    /// dependents (as [`Plan`] lists them).
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
        let me = u32_of(self.ranks.len());
        let op_base = self.ops.len();
        let cs_base = self.cs.len();
        let dep_base = self.deps.len();
        let recv_base = self.recv_keys.len();
        let fence_base = u32_of(self.fence_list.len());
        let n = ops.len();
        let dataflow = self.exec == colltune_algorithms::Execution::Nonblocking;
        let mut expose_group = None;
        let mut access_group = None;
        self.channels.clear();
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
            let mut chan = |ch: Channel, cs: &mut u32, pos: &mut u32| {
                let next = u32_of(self.cs.len() - cs_base);
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
                    let ch = Channel {
                        dir: Direction::Send,
                        peer: *to,
                        tag: *tag,
                    };
                    chan(ch, &mut cs, &mut pos);
                    K::Send
                }
                OpKind::Recv { from, tag, .. } => {
                    peer = from.0;
                    let ch = Channel {
                        dir: Direction::Recv,
                        peer: *from,
                        tag: *tag,
                    };
                    chan(ch, &mut cs, &mut pos);
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
                OpKind::Load { from, src, .. } => {
                    peer = from.0;
                    len = src.len;
                    K::Load
                }
                OpKind::Signal { flag, value } => {
                    cs = *flag as u32;
                    pos = *value;
                    K::Signal
                }
                // A one-call simulation has no earlier call to wait for
                // (a local op of no length: done when reached).
                OpKind::Await { back: 1.., .. } => K::Copy,
                OpKind::Await {
                    on, flag, value, ..
                } => {
                    peer = on.0;
                    cs = *flag as u32;
                    pos = *value;
                    K::Await
                }
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
            signals: Vec::new(),
            waiters: Vec::new(),
        });
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
