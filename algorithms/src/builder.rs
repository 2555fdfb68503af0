//! Building schedules: algorithms emit ops in program order; the builder maps
//! virtual ranks to communicator ranks (for composition) and derives every
//! op's dependencies from the regions it reads and writes.

use std::collections::BTreeMap;

use crate::schedule::{Buf, Op, OpKind, Post, Rank, Region, Schedule, SendMode, Tag};

/// Index of an op in the schedule being built.
pub type OpId = u32;

/// Collects one rank's ops.
#[derive(Debug, Default)]
pub struct Builder {
    ops: Vec<Op>,
    /// Maps the ranks an algorithm speaks of to communicator ranks. Empty: identity.
    map: Vec<usize>,
    buf_len: [u64; 3],
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
        let mut access: [AccessMap; 3] = Default::default();
        let mut last_sync: Option<OpId> = None;
        let mut since_sync: Vec<OpId> = Vec::new();
        for i in 0..self.ops.len() {
            let id = i as OpId;
            let kind = self.ops[i].kind.clone();
            let mut deps = std::mem::take(&mut self.ops[i].deps);
            if kind.is_sync() {
                deps.append(&mut since_sync);
                deps.extend(last_sync);
                last_sync = Some(id);
            } else {
                deps.extend(last_sync);
                // A put is completed by the sync op that closes its epoch, so
                // that op cannot wait for it; ready ops start in program
                // order, so the put is started before the epoch closes.
                if !matches!(kind, OpKind::WaitAll | OpKind::Put { .. }) {
                    since_sync.push(id);
                }
            }
            if let Some(r) = kind.reads() {
                access[r.buf.index()].read(r, id, &mut deps);
            }
            if let Some(w) = kind.writes() {
                access[w.buf.index()].write(w, id, &mut deps);
            }
            deps.sort_unstable();
            deps.dedup();
            self.ops[i].deps = deps;
        }
        Schedule {
            ops: self.ops,
            buf_len: self.buf_len,
        }
    }
}

/// Per buffer: disjoint pieces, each with its last writer and the readers since.
#[derive(Debug, Default)]
struct AccessMap {
    /// start -> piece covering [start, end)
    pieces: BTreeMap<u64, Piece>,
}

#[derive(Debug, Clone)]
struct Piece {
    end: u64,
    writer: Option<OpId>,
    readers: Vec<OpId>,
}

impl AccessMap {
    /// Splits pieces so that `at` is a boundary.
    fn split_at(&mut self, at: u64) {
        let Some((&start, piece)) = self.pieces.range(..at).next_back() else {
            return;
        };
        if piece.end > at {
            let mut right = piece.clone();
            let left_end = at;
            right.end = piece.end;
            self.pieces.get_mut(&start).expect("piece").end = left_end;
            self.pieces.insert(at, right);
        }
    }

    /// Ensures [r.offset, r.end) is covered by pieces (filling gaps with
    /// untouched ones) split at its bounds; returns the starts inside it.
    fn cover(&mut self, r: Region) -> Vec<u64> {
        self.split_at(r.offset);
        self.split_at(r.end());
        let mut starts = Vec::new();
        let mut pos = r.offset;
        let inside: Vec<(u64, u64)> = self
            .pieces
            .range(r.offset..r.end())
            .map(|(&s, p)| (s, p.end))
            .collect();
        for (s, e) in inside {
            if s > pos {
                self.pieces.insert(
                    pos,
                    Piece {
                        end: s,
                        writer: None,
                        readers: Vec::new(),
                    },
                );
                starts.push(pos);
            }
            starts.push(s);
            pos = e;
        }
        if pos < r.end() {
            self.pieces.insert(
                pos,
                Piece {
                    end: r.end(),
                    writer: None,
                    readers: Vec::new(),
                },
            );
            starts.push(pos);
        }
        starts
    }

    fn read(&mut self, r: Region, id: OpId, deps: &mut Vec<OpId>) {
        if r.len == 0 {
            return;
        }
        for s in self.cover(r) {
            let p = self.pieces.get_mut(&s).expect("covered piece");
            deps.extend(p.writer);
            p.readers.push(id);
        }
    }

    fn write(&mut self, w: Region, id: OpId, deps: &mut Vec<OpId>) {
        if w.len == 0 {
            return;
        }
        for s in self.cover(w) {
            let p = self.pieces.remove(&s).expect("covered piece");
            deps.extend(p.writer);
            deps.extend(p.readers.iter().copied().filter(|&r| r != id));
        }
        self.pieces.insert(
            w.offset,
            Piece {
                end: w.end(),
                writer: Some(id),
                readers: Vec::new(),
            },
        );
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
