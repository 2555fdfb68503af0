//! Building schedules: algorithms emit ops in program order; the builder maps
//! virtual ranks to communicator ranks (for composition) and derives every
//! op's dependencies from the regions it reads and writes.

use std::collections::BTreeMap;

use crate::schedule::{
    Buf, Op, OpKind, Post, Rank, Region, Ring, Schedule, SendMode, Tag, SHARED_FLAGS,
};

/// Index of an op in the schedule being built.
pub type OpId = u32;

/// Collects one rank's ops.
#[derive(Debug, Default)]
pub struct Builder {
    ops: Vec<Op>,
    /// Maps the ranks an algorithm speaks of to communicator ranks. Empty: identity.
    map: Vec<usize>,
    buf_len: [u64; Buf::COUNT],
    /// Slots of the shared window taken in turn, one per call.
    ring: Option<Ring>,
    /// The last signal of each shared flag (the next one depends on it).
    last_signal: [Option<OpId>; SHARED_FLAGS as usize],
    /// Scratch of [`Builder::finish_flat`].
    derive: Derive,
}

impl Builder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs `f` with ranks translated through `map` (virtual rank `v` is
    /// `map[v]` of the current view), so that an algorithm written for a
    /// communicator of `map.len()` ranks can run over a subset of this one.
    pub fn with_map<R>(&mut self, map: &[usize], f: impl FnOnce(&mut Builder) -> R) -> R {
        let outer = std::mem::take(&mut self.map);
        self.map = map
            .iter()
            .map(|&v| if outer.is_empty() { v } else { outer[v] })
            .collect();
        let r = f(self);
        self.map = outer;
        r
    }

    fn real(&self, v: usize) -> Rank {
        Rank::from(if self.map.is_empty() { v } else { self.map[v] })
    }

    /// Declares that buffer `buf` holds at least `len` bytes.
    pub fn need(&mut self, buf: Buf, len: u64) {
        let l = &mut self.buf_len[buf.index()];
        *l = (*l).max(len);
    }

    /// Regions of the shared window in `ring`'s slot 0 move to call `k`'s
    /// slot in call `k` (see [`Ring`]); the window holds the whole ring.
    pub fn ring(&mut self, ring: Ring) {
        self.need(Buf::Shared, ring.end());
        self.ring = Some(ring);
    }

    /// The bytes buffer `buf` must hold, as declared so far.
    pub fn needs(&self, buf: Buf) -> u64 {
        self.buf_len[buf.index()]
    }

    fn push(&mut self, kind: OpKind, post: Post) -> OpId {
        for r in [kind.reads(), kind.writes()].into_iter().flatten() {
            self.need(r.buf, r.end());
        }
        if let OpKind::Put {
            src, dst_offset, ..
        } = &kind
        {
            // The target's window has the same shape as ours.
            self.need(Buf::Window, dst_offset + src.len);
        }
        if let OpKind::Load { src, .. } = &kind {
            // Every part of the node's shared window has the same length.
            self.need(Buf::Shared, src.end());
        }
        self.ops.push(Op {
            kind,
            post,
            deps: Vec::new(),
        });
        (self.ops.len() - 1) as OpId
    }

    pub fn send(&mut self, to: usize, src: Region, post: Post) -> OpId {
        let to = self.real(to);
        self.push(
            OpKind::Send {
                to,
                src,
                tag: Tag::Data,
                mode: SendMode::Standard,
            },
            post,
        )
    }

    pub fn send_tagged(
        &mut self,
        to: usize,
        src: Region,
        tag: Tag,
        mode: SendMode,
        post: Post,
    ) -> OpId {
        let to = self.real(to);
        self.push(OpKind::Send { to, src, tag, mode }, post)
    }

    pub fn recv(&mut self, from: usize, dst: Region, post: Post) -> OpId {
        self.recv_tagged(from, dst, Tag::Data, post)
    }

    pub fn recv_tagged(&mut self, from: usize, dst: Region, tag: Tag, post: Post) -> OpId {
        let from = self.real(from);
        self.push(OpKind::Recv { from, dst, tag }, post)
    }

    /// Sends `src` to `to` and receives `dst` from `from` in one `MPI_Sendrecv`
    /// (blocking execution). Either side may be empty (length 0): it is then
    /// left out, and a plain blocking send or receive remains.
    pub fn exchange(&mut self, to: usize, src: Region, from: usize, dst: Region) {
        match (src.len > 0, dst.len > 0) {
            (true, true) => {
                self.send(to, src, Post::ExchangeWithNext);
                self.recv(from, dst, Post::Blocking);
            }
            (true, false) => {
                self.send(to, src, Post::Blocking);
            }
            (false, true) => {
                self.recv(from, dst, Post::Blocking);
            }
            (false, false) => {}
        }
    }

    pub fn copy(&mut self, src: Region, dst: Region) -> OpId {
        debug_assert_eq!(src.len, dst.len);
        self.push(OpKind::Copy { src, dst }, Post::Blocking)
    }

    pub fn put(&mut self, to: usize, src: Region, dst_offset: u64) -> OpId {
        let to = self.real(to);
        self.push(
            OpKind::Put {
                to,
                src,
                dst_offset,
            },
            Post::Immediate,
        )
    }

    pub fn fence(&mut self) -> OpId {
        self.need(Buf::Window, 0);
        self.push(OpKind::Fence, Post::Blocking)
    }

    pub fn expose_to(&mut self, group: &[usize]) -> OpId {
        let group = group.iter().map(|&g| self.real(g)).collect();
        self.push(OpKind::ExposeTo { group }, Post::Blocking)
    }

    pub fn access_to(&mut self, group: &[usize]) -> OpId {
        let group = group.iter().map(|&g| self.real(g)).collect();
        self.push(OpKind::AccessTo { group }, Post::Blocking)
    }

    pub fn end_access(&mut self) -> OpId {
        self.push(OpKind::EndAccess, Post::Blocking)
    }

    pub fn end_exposure(&mut self) -> OpId {
        self.push(OpKind::EndExposure, Post::Blocking)
    }

    pub fn wait_all(&mut self) -> OpId {
        self.push(OpKind::WaitAll, Post::Blocking)
    }

    /// Copies `src` of rank `from`'s part of the node's shared window into
    /// this rank's `dst`, once `after` (the [`Builder::await_flag`] that saw
    /// `from` publish it) completed.
    pub fn load(&mut self, from: usize, src: Region, dst: Region, after: OpId) -> OpId {
        debug_assert_eq!(src.buf, Buf::Shared);
        debug_assert_eq!(src.len, dst.len);
        let from = self.real(from);
        let id = self.push(OpKind::Load { from, src, dst }, Post::Blocking);
        self.depend(id, after);
        id
    }

    /// Stores `value` into this rank's shared flag `flag` once every op of
    /// `after` completed (and the flag's previous signal: signals of one
    /// flag happen in program order).
    pub fn signal(&mut self, flag: u8, value: u32, after: &[OpId]) -> OpId {
        let f = flag as usize;
        let id = self.push(OpKind::Signal { flag, value }, Post::Blocking);
        let prev = self.last_signal[f];
        for &a in after.iter().chain(prev.as_ref()) {
            self.depend(id, a);
        }
        self.last_signal[f] = Some(id);
        id
    }

    /// Waits until rank `on`'s shared flag `flag` holds at least `value`.
    pub fn await_flag(&mut self, on: usize, flag: u8, value: u32) -> OpId {
        self.await_back(on, flag, value, 0)
    }

    /// Waits until rank `on`'s shared flag `flag` held at least `value` in
    /// the previous call through the window (at once in the first call).
    pub fn await_previous(&mut self, on: usize, flag: u8, value: u32) -> OpId {
        self.await_back(on, flag, value, 1)
    }

    /// Waits until rank `on`'s shared flag `flag` held at least `value`
    /// `back` calls ago through the window (0: in this call; at once while
    /// the window has seen fewer calls).
    pub fn await_back(&mut self, on: usize, flag: u8, value: u32, back: u32) -> OpId {
        let on = self.real(on);
        let kind = OpKind::Await {
            on,
            flag,
            value,
            back,
        };
        self.push(kind, Post::Blocking)
    }

    /// Adds a dependency the regions do not show (a control message, say).
    pub fn depend(&mut self, op: OpId, on: OpId) {
        debug_assert!(on < op);
        self.ops[op as usize].deps.push(on);
    }

    /// Number of ops so far.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Derives data dependencies (read after write, write after read, write
    /// after write, over overlapping regions) and window-epoch ordering, and
    /// returns the schedule.
    pub fn finish(mut self) -> Schedule {
        derive(&mut self.ops, &mut Derive::default(), |op, deps| {
            // One allocation at most (most ops have few deps).
            op.deps.clear();
            op.deps.extend_from_slice(deps);
        });
        Schedule {
            ops: self.ops,
            buf_len: self.buf_len,
            ring: self.ring,
        }
    }

    /// What [`Builder::finish`] derives, without building the schedule: the
    /// ops, each with only the dependencies added by [`Builder::depend`], and
    /// every op's dependencies (those [`Builder::finish`] gives it) in one
    /// list: op `i`'s are `deps[ends[i - 1]..ends[i]]` (from 0 for op 0).
    /// Then [`Builder::clear`] makes the builder ready for another schedule,
    /// keeping its memory: for callers that build many schedules and keep
    /// none (the simulator).
    pub fn finish_flat(&mut self, deps: &mut Vec<OpId>, ends: &mut Vec<u32>) -> &[Op] {
        deps.clear();
        ends.clear();
        let mut scratch = std::mem::take(&mut self.derive);
        derive(&mut self.ops, &mut scratch, |_, d| {
            deps.extend_from_slice(d);
            ends.push(u32::try_from(deps.len()).expect("dependencies fit u32"));
        });
        self.derive = scratch;
        &self.ops
    }

    /// Forgets every op (and buffer size) so far; keeps allocated memory.
    pub fn clear(&mut self) {
        self.ops.clear();
        self.map.clear();
        self.buf_len = [0; Buf::COUNT];
        self.ring = None;
        self.last_signal = [None; SHARED_FLAGS as usize];
    }
}

/// Scratch for deriving dependencies, reusable from schedule to schedule.
#[derive(Debug, Default)]
struct Derive {
    access: [AccessMap; Buf::COUNT],
    readers: Readers,
    since_sync: Vec<OpId>,
    deps: Vec<OpId>,
}

/// Derives every op's dependencies in program order and hands them, sorted
/// and without repeats, to `emit` with the op (whose `deps` still holds only
/// the ones added by [`Builder::depend`]).
fn derive(ops: &mut [Op], d: &mut Derive, mut emit: impl FnMut(&mut Op, &[OpId])) {
    for a in &mut d.access {
        a.pieces.clear();
    }
    d.readers.nodes.clear();
    d.since_sync.clear();
    let mut last_sync: Option<OpId> = None;
    let deps = &mut d.deps;
    for (i, op) in ops.iter_mut().enumerate() {
        let id = i as OpId;
        deps.clear();
        deps.extend_from_slice(&op.deps);
        if op.kind.is_sync() {
            deps.append(&mut d.since_sync);
            deps.extend(last_sync);
            last_sync = Some(id);
        } else {
            deps.extend(last_sync);
            // A put is completed by the sync op that closes its epoch, so
            // that op cannot wait for it; ready ops start in program
            // order, so the put is started before the epoch closes.
            if !matches!(op.kind, OpKind::WaitAll | OpKind::Put { .. }) {
                d.since_sync.push(id);
            }
        }
        if let Some(r) = op.kind.reads() {
            d.access[r.buf.index()].read(r, id, deps, &mut d.readers);
        }
        if let Some(w) = op.kind.writes() {
            d.access[w.buf.index()].write(w, id, deps, &d.readers);
        }
        deps.sort_unstable();
        deps.dedup();
        emit(op, deps);
    }
}

/// "No op" / "end of a list".
const NIL: u32 = u32::MAX;

/// Lists of readers, shared by the pieces of all buffers: a list is the index
/// of its newest node; a node is never changed once made, so a piece split
/// in two keeps one list for both halves.
#[derive(Debug, Default)]
struct Readers {
    /// (reader, index of the next node or NIL)
    nodes: Vec<(OpId, u32)>,
}

impl Readers {
    fn push(&mut self, list: u32, id: OpId) -> u32 {
        self.nodes.push((id, list));
        (self.nodes.len() - 1) as u32
    }

    fn iter(&self, mut list: u32) -> impl Iterator<Item = OpId> + '_ {
        std::iter::from_fn(move || {
            let &(id, next) = self.nodes.get(list as usize)?;
            list = next;
            Some(id)
        })
    }
}

/// Per buffer: disjoint pieces, each with its last writer and the readers
/// since; bytes in no piece have neither.
#[derive(Debug, Default)]
struct AccessMap {
    /// start -> piece covering [start, end)
    pieces: BTreeMap<u64, Piece>,
    /// Scratch: gaps to fill, pieces to drop.
    scratch: Vec<(u64, u64)>,
}

#[derive(Debug, Clone, Copy)]
struct Piece {
    end: u64,
    /// The last writer, or NIL.
    writer: OpId,
    /// Readers since the last write (a list in [`Readers`]).
    readers: u32,
}

impl AccessMap {
    /// Splits pieces so that `at` is a boundary.
    fn split_at(&mut self, at: u64) {
        let Some((_, piece)) = self.pieces.range_mut(..at).next_back() else {
            return;
        };
        if piece.end > at {
            let right = Piece {
                end: piece.end,
                ..*piece
            };
            piece.end = at;
            self.pieces.insert(at, right);
        }
    }

    fn read(&mut self, r: Region, id: OpId, deps: &mut Vec<OpId>, readers: &mut Readers) {
        if r.len == 0 {
            return;
        }
        // The last piece starting before the region's end tells the two
        // common cases apart with one lookup: it is the region exactly (a
        // segment or chunk moves again), or it ends before (so does every
        // other: the region is touched for the first time).
        match self.pieces.range_mut(..r.end()).next_back() {
            Some((&s, p)) if s == r.offset && p.end == r.end() => {
                if p.writer != NIL {
                    deps.push(p.writer);
                }
                p.readers = readers.push(p.readers, id);
                return;
            }
            Some((_, p)) if p.end > r.offset => {}
            _ => {
                let only = readers.push(NIL, id);
                self.pieces.insert(
                    r.offset,
                    Piece {
                        end: r.end(),
                        writer: NIL,
                        readers: only,
                    },
                );
                return;
            }
        }
        self.split_at(r.offset);
        self.split_at(r.end());
        self.scratch.clear();
        let mut pos = r.offset;
        for (&s, p) in self.pieces.range_mut(r.offset..r.end()) {
            if s > pos {
                self.scratch.push((pos, s));
            }
            if p.writer != NIL {
                deps.push(p.writer);
            }
            p.readers = readers.push(p.readers, id);
            pos = p.end;
        }
        if pos < r.end() {
            self.scratch.push((pos, r.end()));
        }
        if !self.scratch.is_empty() {
            // Untouched bytes: read by `id` alone (one list for all gaps).
            let only = readers.push(NIL, id);
            for &(s, e) in &self.scratch {
                self.pieces.insert(
                    s,
                    Piece {
                        end: e,
                        writer: NIL,
                        readers: only,
                    },
                );
            }
        }
    }

    fn write(&mut self, w: Region, id: OpId, deps: &mut Vec<OpId>, readers: &Readers) {
        if w.len == 0 {
            return;
        }
        let new = Piece {
            end: w.end(),
            writer: id,
            readers: NIL,
        };
        // As in `read`.
        match self.pieces.range_mut(..w.end()).next_back() {
            Some((&s, p)) if s == w.offset && p.end == w.end() => {
                if p.writer != NIL {
                    deps.push(p.writer);
                }
                deps.extend(readers.iter(p.readers).filter(|&r| r != id));
                *p = new;
                return;
            }
            Some((_, p)) if p.end > w.offset => {}
            _ => {
                self.pieces.insert(w.offset, new);
                return;
            }
        }
        self.split_at(w.offset);
        self.split_at(w.end());
        self.scratch.clear();
        for (&s, p) in self.pieces.range(w.offset..w.end()) {
            if p.writer != NIL {
                deps.push(p.writer);
            }
            deps.extend(readers.iter(p.readers).filter(|&r| r != id));
            if s != w.offset {
                self.scratch.push((s, 0));
            }
        }
        for &(s, _) in &self.scratch {
            self.pieces.remove(&s);
        }
        self.pieces.insert(w.offset, new);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_dependencies_follow_regions() {
        let mut b = Builder::new();
        let r0 = b.recv(1, Region::data(0, 10), Post::Blocking);
        let r1 = b.recv(1, Region::data(10, 10), Post::Blocking);
        let s0 = b.send(2, Region::data(0, 10), Post::Immediate);
        let s_all = b.send(3, Region::data(0, 20), Post::Immediate);
        let w = b.recv(4, Region::data(5, 10), Post::Blocking);
        let s = b.finish();
        assert!(s.ops[r0 as usize].deps.is_empty());
        assert!(s.ops[r1 as usize].deps.is_empty());
        assert_eq!(s.ops[s0 as usize].deps, vec![r0]);
        assert_eq!(s.ops[s_all as usize].deps, vec![r0, r1]);
        // write after read and write after write
        assert_eq!(s.ops[w as usize].deps, vec![r0, r1, s0, s_all]);
        assert_eq!(s.buf_len[Buf::Data.index()], 20);
    }

    #[test]
    fn composition_maps_ranks() {
        let mut b = Builder::new();
        b.with_map(&[5, 7, 9], |b| {
            b.with_map(&[2, 0], |b| {
                b.send(0, Region::data(0, 1), Post::Blocking);
            });
        });
        let s = b.finish();
        match &s.ops[0].kind {
            OpKind::Send { to, .. } => assert_eq!(*to, Rank(9)),
            k => panic!("unexpected {k:?}"),
        }
    }

    #[test]
    fn sync_ops_order_epochs() {
        let mut b = Builder::new();
        let f0 = b.fence();
        let p = b.put(1, Region::data(0, 4), 0);
        let f1 = b.fence();
        let c = b.copy(Region::new(Buf::Window, 0, 4), Region::new(Buf::Recv, 0, 4));
        let s = b.finish();
        assert_eq!(s.ops[p as usize].deps, vec![f0]);
        assert_eq!(s.ops[f1 as usize].deps, vec![f0]);
        assert!(p < f1);
        assert_eq!(s.ops[c as usize].deps, vec![f1]);
    }
}
