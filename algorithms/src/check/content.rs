//! A buffer's content as the checker sees it: not values but the *origin*
//! of every byte (which rank's which buffer at which offset), kept as an
//! interval map, so a 1 MiB message costs a few pieces, not a million bytes.
//!
//! ```text
//!   offset  0         10            30             u64::MAX
//!           ├─────────┼─────────────┼──────────────┤
//!   origin  r0 D[0..] │ r1 D[100..] │ r0 D[30..]   │   (rank 0 after receiving
//!                                                        20 bytes of rank 1's
//!                                                        Data[100..] at 10)
//! ```

use std::collections::BTreeMap;
use std::fmt;

use crate::schedule::Buf;

/// Where a byte came from.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    pub rank: u32,
    pub buf: Buf,
    pub offset: u64,
}

impl Origin {
    fn shifted(self, by: u64) -> Origin {
        Origin {
            offset: self.offset + by,
            ..self
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rank {} {:?}[{}]", self.rank, self.buf, self.offset)
    }
}

/// A buffer's content: the origin of every byte, as disjoint pieces covering
/// `[0, u64::MAX)`; byte `x` of a piece starting at `s` holds `origin + (x - s)`.
#[derive(Clone, Debug)]
pub struct Content {
    pieces: BTreeMap<u64, (u64, Origin)>,
}

impl Content {
    /// Every byte is its own origin (what a rank holds before the call).
    pub fn identity(rank: u32, buf: Buf) -> Self {
        let mut pieces = BTreeMap::new();
        pieces.insert(
            0,
            (
                u64::MAX,
                Origin {
                    rank,
                    buf,
                    offset: 0,
                },
            ),
        );
        Content { pieces }
    }

    fn split_at(&mut self, at: u64) {
        if let Some((&s, &(e, o))) = self.pieces.range(..at).next_back() {
            if e > at {
                self.pieces.insert(s, (at, o));
                self.pieces.insert(at, (e, o.shifted(at - s)));
            }
        }
    }

    /// The origins of `[off, off + len)`, as (length, origin) runs.
    pub fn read(&self, off: u64, len: u64) -> Vec<(u64, Origin)> {
        let mut out = Vec::new();
        self.read_into(off, len, &mut out);
        out
    }

    /// As [`Content::read`], into a reused vector.
    pub fn read_into(&self, off: u64, len: u64, out: &mut Vec<(u64, Origin)>) {
        out.clear();
        let end = off + len;
        if len == 0 {
            return;
        }
        let first = self.pieces.range(..=off).next_back();
        let rest = self.pieces.range(off + 1..end);
        for (&s, &(e, o)) in first.into_iter().chain(rest) {
            let a = s.max(off);
            let b = e.min(end);
            if a < b {
                out.push((b - a, o.shifted(a - s)));
            }
        }
    }

    /// Overwrites `[off, ...)` with the runs.
    pub fn write(&mut self, off: u64, runs: &[(u64, Origin)]) {
        let len: u64 = runs.iter().map(|r| r.0).sum();
        if len == 0 {
            return;
        }
        self.split_at(off);
        self.split_at(off + len);
        while let Some((&s, _)) = self.pieces.range(off..off + len).next() {
            self.pieces.remove(&s);
        }
        let mut at = off;
        for &(l, o) in runs {
            if l > 0 {
                self.pieces.insert(at, (at + l, o));
                at += l;
            }
        }
    }

    /// The first byte of `[0, len)` whose origin is not `want + offset`.
    pub fn mismatch(&self, len: u64, rank: u32, buf: Buf) -> Option<(u64, Origin)> {
        self.mismatch_in(0, len, rank, buf)
    }

    /// The first byte of `[from, from + len)` whose origin is not `want +
    /// offset`.
    pub fn mismatch_in(&self, from: u64, len: u64, rank: u32, buf: Buf) -> Option<(u64, Origin)> {
        let mut at = from;
        for (l, o) in self.read(from, len) {
            if o.rank != rank || o.buf != buf || o.offset != at {
                return Some((at, o));
            }
            at += l;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_tracks_origins() {
        let mut c = Content::identity(0, Buf::Data);
        let other = Content::identity(1, Buf::Data);
        c.write(10, &other.read(100, 20));
        let runs = c.read(5, 30);
        assert_eq!(runs.len(), 3);
        assert_eq!(runs[1].1.offset, 100);
        assert_eq!(runs[2].1.offset, 30);
        assert_eq!(c.mismatch(10, 0, Buf::Data), None);
        assert_eq!(c.mismatch(11, 0, Buf::Data).map(|m| m.0), Some(10));
    }
}
