//! What the shared-memory proof knows (see `shared`): each rank's
//! [`Proof`] (derived once from its schedule: the awaits every op depends
//! on, the first signal of each flag that depends on it) and the state of
//! the run (flags, each part's pieces with their writer and readers).

use std::collections::BTreeMap;

use crate::schedule::{OpKind, Schedule, SHARED_FLAGS};

pub(super) const NONE: u32 = u32::MAX;
pub(super) const F: usize = SHARED_FLAGS as usize;

/// What one rank's schedule says about its shared-memory ops, derived once.
#[derive(Default)]
pub(super) struct Proof {
    /// Per op: the awaits it depends on (itself included), as the highest
    /// value awaited per (rank, flag), sorted: op i's are
    /// `know[know_end[i - 1]..know_end[i]]`.
    know: Vec<(u32, u8, u32)>,
    know_end: Vec<u32>,
    /// Per op and flag: the first signal of the flag depending on the op
    /// (itself included), or NONE.
    first_signal: Vec<[u32; F]>,
    /// Per signal op: the value of the flag's signal before it (-1: none).
    prev_value: Vec<i64>,
}

impl Proof {
    pub(super) fn new(s: &Schedule) -> Proof {
        let n = s.ops.len();
        let mut know = Vec::new();
        let mut know_end = Vec::with_capacity(n);
        let mut prev_value = vec![-1i64; n];
        let mut last = [-1i64; F];
        let (mut acc, mut tmp) = (Vec::new(), Vec::new());
        for (i, op) in s.ops.iter().enumerate() {
            acc.clear();
            for &d in &op.deps {
                let d = d as usize;
                let lo = if d == 0 { 0 } else { know_end[d - 1] as usize };
                merge_max(&mut acc, &know[lo..know_end[d] as usize], &mut tmp);
            }
            match op.kind {
                // An await of the previous call proves nothing about this
                // one (`calls` turns it into a plain await when it proves
                // several calls in a row).
                OpKind::Await {
                    on,
                    flag,
                    value,
                    back: 0,
                } => merge_max(&mut acc, &[(on.0, flag, value)], &mut tmp),
                OpKind::Signal { flag, value } => {
                    prev_value[i] = last[flag as usize];
                    last[flag as usize] = value as i64;
                }
                _ => {}
            }
            know.extend_from_slice(&acc);
            know_end.push(u32::try_from(know.len()).expect("fits u32"));
        }
        // Dependencies point back: by the time op i is reached, every op
        // depending on it has passed its first signals on to it.
        let mut first_signal = vec![[NONE; F]; n];
        for i in (0..n).rev() {
            if let OpKind::Signal { flag, .. } = s.ops[i].kind {
                first_signal[i][flag as usize] = i as u32;
            }
            let fs = first_signal[i];
            for &d in &s.ops[i].deps {
                let t = &mut first_signal[d as usize];
                for f in 0..F {
                    t[f] = t[f].min(fs[f]);
                }
            }
        }
        Proof {
            know,
            know_end,
            first_signal,
            prev_value,
        }
    }

    /// The highest value of rank `r`'s flag `f` that op `i` awaited, if any.
    pub(super) fn awaited(&self, i: u32, r: u32, f: u8) -> Option<u32> {
        let lo = if i == 0 {
            0
        } else {
            self.know_end[i as usize - 1] as usize
        };
        let k = &self.know[lo..self.know_end[i as usize] as usize];
        k.binary_search_by_key(&(r, f), |&(kr, kf, _)| (kr, kf))
            .ok()
            .map(|at| k[at].2)
    }

    /// Per flag: the value an await must exceed to be sure op `i` of this
    /// rank happened before (None: no signal of that flag follows it).
    pub(super) fn thresholds(&self, i: u32) -> [Option<i64>; F] {
        self.first_signal[i as usize].map(|s| match s {
            NONE => None,
            s => Some(self.prev_value[s as usize]),
        })
    }
}

/// Merges `b` into `a` (both sorted by (rank, flag)), keeping the higher
/// value of a (rank, flag) in both; `tmp` is scratch.
fn merge_max(a: &mut Vec<(u32, u8, u32)>, b: &[(u32, u8, u32)], tmp: &mut Vec<(u32, u8, u32)>) {
    if b.is_empty() {
        return;
    }
    if a.is_empty() {
        a.extend_from_slice(b);
        return;
    }
    tmp.clear();
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i], b[j]);
        match (x.0, x.1).cmp(&(y.0, y.1)) {
            std::cmp::Ordering::Less => {
                tmp.push(x);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                tmp.push(y);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                tmp.push((x.0, x.1, x.2.max(y.2)));
                i += 1;
                j += 1;
            }
        }
    }
    tmp.extend_from_slice(&a[i..]);
    tmp.extend_from_slice(&b[j..]);
    std::mem::swap(a, tmp);
}

/// A piece of a rank's shared part: its last writer in this call (NONE:
/// not written yet) and the loads since, as (rank, op).
#[derive(Clone, Debug)]
pub(super) struct Piece {
    pub(super) end: u64,
    pub(super) writer: u32,
    pub(super) readers: Vec<(u32, u32)>,
}

/// The checker's shared-memory state.
#[derive(Default)]
pub(super) struct SharedState {
    pub(super) proofs: Vec<Proof>,
    /// Per rank and flag: its value (None: not signalled in this call).
    pub(super) flags: Vec<[Option<u32>; F]>,
    /// Per rank: awaits on its flags not met yet: (rank, op, flag, value).
    pub(super) blocked: Vec<Vec<(u32, u32, u8, u32)>>,
    /// Scratch: awaits a signal just met.
    pub(super) released: Vec<(u32, u32)>,
    /// Per rank: its part, as pieces by start.
    pub(super) parts: Vec<BTreeMap<u64, Piece>>,
}

impl SharedState {
    pub(super) fn new(sched: &[Schedule]) -> SharedState {
        let p = sched.len();
        let mut st = SharedState {
            proofs: Vec::with_capacity(p),
            flags: vec![[None; F]; p],
            blocked: vec![Vec::new(); p],
            released: Vec::new(),
            parts: vec![BTreeMap::new(); p],
        };
        for (r, s) in sched.iter().enumerate() {
            let uses = s.uses_shared();
            st.proofs.push(if uses {
                Proof::new(s)
            } else {
                Proof::default()
            });
            // A fresh window: nothing written or read in it before (calls
            // in a row are proven as one schedule, see `calls`).
            st.parts[r].insert(
                0,
                Piece {
                    end: u64::MAX,
                    writer: NONE,
                    readers: Vec::new(),
                },
            );
        }
        st
    }
}

pub(super) fn split_at(part: &mut BTreeMap<u64, Piece>, at: u64) {
    if let Some((_, piece)) = part.range_mut(..at).next_back() {
        if piece.end > at {
            let right = Piece {
                end: piece.end,
                ..piece.clone()
            };
            piece.end = at;
            part.insert(at, right);
        }
    }
}
