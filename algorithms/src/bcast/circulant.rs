//! Circulant-graph pipelined broadcast (J. L. Traff, "Optimal broadcast
//! schedules on circulant graphs", ACM TOPC 2025, doi 10.1145/3735139;
//! MPICH 5 ships one as `circ_graph`).
//!
//! ```text
//!  p = 17, q = ceil(log2 17) = 5, skips 1 2 3 5 9 (17)
//!  round i, k = i mod q:  every rank r sends one block to r + skip[k]
//!                         and receives one from r - skip[k]  (mod p)
//!  rank r's receive schedule R[0..q) and send schedule S[0..q) name the
//!  blocks; every q rounds they move q blocks on
//! ```
//! The message is cut into n blocks of `segment` bytes. The skips halve
//! from p: skip[q] = p, skip[k] = ceil(skip[k+1] / 2), skip[0] = 1 (powers
//! of two for p = 2^q). Rank r's *baseblock* is the last skip of r's greedy
//! sum of skips (the root's is q): r gets it, in the first q rounds, from
//! r - skip[K] (skip[K] <= r < skip[K+1]), a binomial-like tree. Its other
//! q - 1 receives of each q rounds take, round k, the largest baseblock not
//! yet taken among the ranks `(r - skip[k+1], r - skip[k]]` (the paper's
//! rule; the rank r - skip[k+1] itself only when none is left); those
//! blocks are one period of q behind. So each q rounds every rank receives
//! q different blocks, sends only blocks it received before, and the
//! broadcast of n blocks ends after n - 1 + q rounds, every rank sending
//! and receiving in every round: the lower bound for one-ported
//! pipelining, where a binary-tree pipeline takes about 2(n + log2 p) and
//! a chain n + p - 2. A block number past n - 1 is sent as block n - 1 (the
//! last q rounds), as before 0 nothing is sent.
//!
//! One rank's receive and send schedules, what each MPI rank computes at
//! run time, cost O(log p) each (`circulant/rank.rs`: r's rounds split by
//! its greedy sum of skips into levels, each round's window folded down
//! the levels to the circulant of skip[k+1] ranks, where it holds every
//! baseblock below k and one of k, k + 1: O(1) a round). The baseblocks
//! of a range of ranks are found by descending the greedy sums of skips
//! (a part `base + [0, len)` splits at the largest skip below `len`; a
//! part wholly inside the range holds `base`'s baseblock and every e with
//! `skip[e] < len`), as a bit mask: one walk down to where the range's
//! ends part, one walk to each end, O(q) steps; `rank.rs` asks it only on
//! the few smallest levels. (Before, a rank's receive schedule asked it
//! for each of its q rounds, O(log^2 p), and its send schedule took round
//! k of each of its q targets' receive schedules, about O(log^3 p). At
//! p = 526,848 `benches/circulant.rs` measured 0.25-0.37 us for a
//! receive schedule and 0.85-0.89 us for a send schedule, against
//! 5.5-5.9 us and 52-54 us before, on a shared machine.) A caller
//! that needs every rank's ([`Circulant::recv_all`], the closed form at
//! scale) slides each round's range by one from rank to rank with a count
//! per baseblock: O(log p) a rank. (A literal reading of MPICH 5's
//! depth-first search, which sums free skips rather than greedy ones,
//! fails the round-by-round test below at p = 33 and 65: a rank would send
//! a block in the round it receives it.)
//!
//! Cost: (n - 1 + q)(alpha + (m/n) beta), at best about
//! (sqrt(m beta) + sqrt((q - 1) alpha))^2 with n tuned.
//!
//! Parameters: `segment` (the block size in bytes; 0 = one block, which
//! makes it a binomial-like tree over the skips).

use crate::builder::Builder;
use crate::error::SpecError;
use crate::schedule::{Post, Region};
use crate::shape::Shape;
use crate::spec::AlgoSpec;

mod rank;

/// The skips and one rank's schedule over the q rounds of a period.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Circulant {
    pub p: usize,
    /// ceil(log2 p).
    pub q: usize,
    /// skip[0..=q]: skip[0] = 1, skip[q] = p.
    pub skip: Vec<usize>,
    /// drift[j]: how many of skip[1..=j] are odd (2 skip[i-1] - skip[i]
    /// summed), how far a window moves folding down to level j
    /// (`rank.rs`).
    drift: Vec<usize>,
}

/// One rank's blocks in the rounds of one period (k = 0..q): the block
/// received from r - skip[k] and sent to r + skip[k], as offsets to add to
/// the period's first block number (negative: an earlier period).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankSchedule {
    pub recv: Vec<i64>,
    pub send: Vec<i64>,
}

/// Ranks `base..base + len` of the greedy sums of skips: `base` (whose
/// baseblock is `base_b`) plus sums of skips below `skip[j]`.
#[derive(Clone, Copy, Debug)]
struct Part {
    base: usize,
    base_b: usize,
    len: usize,
    j: usize,
}

/// Every rank's receive schedule, computed together ([`Circulant::recv_all`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllRecv {
    q: usize,
    /// Rank r's entry of round k at `r * q + k` (|entry| <= q < 64).
    flat: Vec<i8>,
}

impl AllRecv {
    /// Rank `r`'s receive schedule, as [`Circulant::recv_schedule`] gives it.
    pub fn rank(&self, r: usize) -> impl Iterator<Item = i64> + '_ {
        self.flat[r * self.q..(r + 1) * self.q]
            .iter()
            .map(|&e| i64::from(e))
    }

    /// Rank `r`'s entry of round `k`.
    pub fn at(&self, r: usize, k: usize) -> i64 {
        i64::from(self.flat[r * self.q + k])
    }
}

impl Circulant {
    pub fn new(p: usize) -> Self {
        let q = p.next_power_of_two().trailing_zeros() as usize;
        let mut skip = vec![0; q + 1];
        skip[q] = p;
        for k in (0..q).rev() {
            skip[k] = skip[k + 1].div_ceil(2);
        }
        let mut drift = vec![0; q + 1];
        for j in 1..=q {
            drift[j] = drift[j - 1] + 2 * skip[j - 1] - skip[j];
        }
        Circulant { p, q, skip, drift }
    }

    /// The last skip of `r`'s greedy sum of skips (q for the root).
    pub fn baseblock(&self, r: usize) -> usize {
        self.base_at(self.q, r as i64)
    }

    /// The baseblocks a rank whose own is `b` has still to receive.
    fn all_free(&self, b: usize) -> u64 {
        ((1u64 << (self.q + 1)) - 1) & !(1 << b)
    }

    /// One round's receive: the largest baseblock both `here` (in the
    /// round's ranks) and `free`, else `fallback`'s; taken from `free`, as
    /// the schedule's entry (`b`, the rank's own, for the root's q).
    fn take(&self, here: u64, free: &mut u64, fallback: impl FnOnce() -> usize, b: usize) -> i64 {
        let m = here & *free;
        let e = if m == 0 {
            fallback()
        } else {
            63 - m.leading_zeros() as usize
        };
        *free &= !(1 << e);
        if e == self.q {
            b as i64
        } else {
            e as i64 - self.q as i64
        }
    }

    /// The baseblocks of a whole part: its base's, and every e with
    /// skip[e] < len (u = skip[e]).
    fn whole(&self, part: Part) -> u64 {
        let below = self.skip.partition_point(|&s| s < part.len);
        (1 << part.base_b) | ((1u64 << below) - 1)
    }

    /// A part's two sides, at the largest skip below its length: ranks
    /// below it, and that skip plus the rest (whose base has it as its
    /// baseblock).
    fn split(&self, mut part: Part) -> (Part, Part) {
        while self.skip[part.j] >= part.len {
            part.j -= 1;
        }
        let s = self.skip[part.j];
        let right = Part {
            base: part.base + s,
            base_b: part.j,
            len: part.len - s,
            j: part.j,
        };
        (Part { len: s, ..part }, right)
    }

    /// The baseblocks of ranks `x..=y` of the circulant of skip[level]
    /// ranks (bit e set: some rank there has baseblock e): down the greedy
    /// sums of skips to the part where x and y part, then one walk each
    /// way to them, every part wholly inside taken whole. O(level) steps.
    fn present(&self, level: usize, x: usize, y: usize) -> u64 {
        let mut part = Part {
            base: 0,
            base_b: level,
            len: self.skip[level],
            j: level,
        };
        loop {
            if x <= part.base && y + 1 >= part.base + part.len {
                return self.whole(part);
            }
            let (left, right) = self.split(part);
            if y < right.base {
                part = left;
            } else if x >= right.base {
                part = right;
            } else {
                return self.from(left, x) | self.upto(right, y);
            }
        }
    }

    /// The baseblocks of a part's ranks from `x` on.
    fn from(&self, mut part: Part, x: usize) -> u64 {
        let mut m = 0;
        while x > part.base {
            let (left, right) = self.split(part);
            if x >= right.base {
                part = right;
            } else {
                m |= self.whole(right);
                part = left;
            }
        }
        m | self.whole(part)
    }

    /// The baseblocks of a part's ranks up to `y`.
    fn upto(&self, mut part: Part, y: usize) -> u64 {
        let mut m = 0;
        while y + 1 < part.base + part.len {
            let (left, right) = self.split(part);
            if y < right.base {
                part = left;
            } else {
                m |= self.whole(left);
                part = right;
            }
        }
        m | self.whole(part)
    }

    /// Every rank's receive schedule, for a caller that needs them all
    /// (the closed form at scale): the same rule as
    /// [`Circulant::recv_schedule`], but each round's ranks are a window
    /// that moves by one from rank to rank, so a count per baseblock and
    /// round keeps what is in it: O(q) a rank (two counts and one pick per
    /// round), O(p q) in all, against O(q^2) a rank apart.
    pub fn recv_all(&self) -> AllRecv {
        let (p, q) = (self.p, self.q);
        let base: Vec<u8> = (0..p).map(|r| self.baseblock(r) as u8).collect();
        // count[k][e]: ranks of round k's window with baseblock e; here[k]
        // the baseblocks counted there. Rank 0's windows first.
        let mut count = vec![[0u32; 64]; q];
        let mut here = vec![0u64; q];
        for k in 0..q {
            for &e in &base[p - self.skip[k + 1] + 1..=p - self.skip[k]] {
                let e = e as usize;
                count[k][e] += 1;
                here[k] |= 1 << e;
            }
        }
        let mut flat = Vec::with_capacity(p * q);
        for r in 0..p {
            if r > 0 {
                // The windows move on by one: in r - skip[k], out
                // r - skip[k+1].
                for k in 0..q {
                    let (inn, out) = (
                        base[(r + p - self.skip[k]) % p] as usize,
                        base[(r + p - self.skip[k + 1]) % p] as usize,
                    );
                    count[k][inn] += 1;
                    here[k] |= 1 << inn;
                    count[k][out] -= 1;
                    if count[k][out] == 0 {
                        here[k] &= !(1 << out);
                    }
                }
            }
            let b = base[r] as usize;
            let mut free = self.all_free(b);
            for (k, &h) in here.iter().enumerate() {
                let fallback = || base[(r + p - self.skip[k + 1]) % p] as usize;
                flat.push(self.take(h, &mut free, fallback, b) as i8);
            }
        }
        AllRecv { q, flat }
    }

    /// Rank `r`'s receive and send schedules (`rank.rs`, O(log p) each):
    /// what it sends in round k is what `r + skip[k]` receives then.
    pub fn schedule(&self, r: usize) -> RankSchedule {
        RankSchedule {
            recv: self.recv_schedule(r),
            send: self.send_schedule(r),
        }
    }

    /// The rounds of a broadcast of `n` blocks: for round i (0-based) its
    /// k and the offset added to a schedule entry (the first rounds of the
    /// first period are skipped so that the last round ends a period).
    pub fn rounds(&self, n: u64) -> impl Iterator<Item = (usize, i64)> {
        let q = self.q as u64;
        let x = (q - (n - 1) % q) % q;
        (x..x + n - 1 + q).map(move |i| ((i % q) as usize, ((i / q) * q) as i64 - x as i64))
    }
}

pub fn build(sh: &Shape, spec: &AlgoSpec, b: &mut Builder) -> Result<(), SpecError> {
    let (p, vr) = (sh.size, sh.vrank());
    let seg = spec.int("segment")?;
    let block = if seg == 0 { sh.bytes } else { seg };
    let n = sh.bytes.div_ceil(block);
    let c = Circulant::new(p);
    let s = c.schedule(vr);
    let region = |blk: i64| {
        let o = blk.min(n as i64 - 1) as u64 * block;
        Region::data(o, block.min(sh.bytes - o))
    };
    // One port: each send waits for the one before, so that the dataflow
    // execution keeps to the rounds instead of sharing the link between
    // blocks of several rounds (the receives are posted early).
    let mut last_send = None;
    for (k, offset) in c.rounds(n) {
        let (to, from) = ((vr + c.skip[k]) % p, (vr + p - c.skip[k]) % p);
        let (out, inn) = (s.send[k] + offset, s.recv[k] + offset);
        let give = (out >= 0 && to != 0).then(|| region(out));
        let take = (inn >= 0 && vr != 0).then(|| region(inn));
        let post = if take.is_some() {
            Post::ExchangeWithNext
        } else {
            Post::Blocking
        };
        if let Some(g) = give {
            let id = b.send(sh.real(to), g, post);
            if let Some(prev) = last_send {
                b.depend(id, prev);
            }
            last_send = Some(id);
        }
        if let Some(t) = take {
            b.recv(sh.real(from), t, Post::Blocking);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the schedules of all ranks round by round: every rank sends
    /// only blocks it holds, and ends with all n blocks after n - 1 + q
    /// rounds.
    fn simulate(p: usize, n: u64) {
        let c = Circulant::new(p);
        let all: Vec<RankSchedule> = (0..p).map(|r| c.schedule(r)).collect();
        let mut has = vec![vec![false; n as usize]; p];
        has[0].iter_mut().for_each(|h| *h = true);
        let clamp = |b: i64| b.min(n as i64 - 1) as usize;
        let mut rounds = 0;
        for (k, offset) in c.rounds(n) {
            rounds += 1;
            let mut got = Vec::new();
            for r in 1..p {
                let from = (r + p - c.skip[k]) % p;
                let blk = all[r].recv[k] + offset;
                assert_eq!(all[from].send[k], all[r].recv[k], "p {p} r {r} k {k}");
                if blk >= 0 {
                    assert!(
                        has[from][clamp(blk)],
                        "p {p} n {n}: rank {from} sends block {blk} it lacks"
                    );
                    got.push((r, clamp(blk)));
                }
            }
            for (r, blk) in got {
                has[r][blk] = true;
            }
        }
        assert_eq!(rounds, n - 1 + c.q as u64);
        for (r, h) in has.iter().enumerate() {
            assert!(h.iter().all(|&x| x), "p {p} n {n}: rank {r} misses a block");
        }
    }

    #[test]
    fn n_blocks_in_n_minus_1_plus_ceil_log2_p_rounds() {
        for p in 2..=200 {
            for n in [1, 2, 3, 4, 5, 7, 8, 13, 20] {
                simulate(p, n);
            }
        }
        for p in [255, 256, 257, 511, 1000, 1023, 1025] {
            for n in [1, 9, 31] {
                simulate(p, n);
            }
        }
    }

    /// The rule read literally, over every rank of each round's range:
    /// O(p) a round.
    fn by_the_rule(c: &Circulant, r: usize) -> Vec<i64> {
        let (p, q) = (c.p, c.q);
        let b = c.baseblock(r);
        let mut free: Vec<bool> = (0..=q).map(|e| e != b).collect();
        (0..q)
            .map(|k| {
                let lo = r + p - c.skip[k + 1];
                let e = (lo + 1..=r + p - c.skip[k])
                    .map(|u| c.baseblock(u % p))
                    .filter(|&e| free[e])
                    .max()
                    .unwrap_or_else(|| c.baseblock(lo % p));
                free[e] = false;
                if e == q {
                    b as i64
                } else {
                    e as i64 - q as i64
                }
            })
            .collect()
    }

    #[test]
    fn both_ways_of_computing_the_schedule_are_the_rules() {
        let sizes = (1..=300).chain([511, 512, 513, 1000, 1023, 1025, 3000, 4097]);
        for p in sizes {
            let c = Circulant::new(p);
            let all = c.recv_all();
            for r in 0..p {
                let want = by_the_rule(&c, r);
                assert_eq!(c.recv_schedule(r), want, "p {p} rank {r}");
                assert_eq!(all.rank(r).collect::<Vec<_>>(), want, "p {p} rank {r}");
            }
        }
    }

    #[test]
    fn the_baseblocks_of_a_range_are_its_ranks() {
        for p in (1..=70).chain([129, 200]) {
            let c = Circulant::new(p);
            for x in 0..p {
                for y in x..p {
                    let want = (x..=y).fold(0u64, |m, u| m | 1 << c.baseblock(u));
                    assert_eq!(c.present(c.q, x, y), want, "p {p} ranks {x}..={y}");
                }
            }
        }
    }

    /// One rank's schedules, computed alone (`rank.rs`), against every
    /// rank's computed together: the receives rank by rank, the sends as
    /// the receives of r + skip[k].
    /// Also bounds the targets whose receive the send schedule walks (b's
    /// and those where adding the skip carries: at most 6 seen).
    fn alone_is_together(c: &Circulant, all: &AllRecv, r: usize) {
        let p = c.p;
        assert_eq!(
            c.recv_schedule(r),
            all.rank(r).collect::<Vec<_>>(),
            "p {p} rank {r}"
        );
        let (send, walked) = c.sends(r);
        let want: Vec<i64> = (0..c.q).map(|k| all.at((r + c.skip[k]) % p, k)).collect();
        assert_eq!(send, want, "p {p} rank {r} sends");
        assert!(walked <= 6, "p {p} rank {r}: {walked} targets walked");
    }

    #[test]
    fn one_ranks_schedule_alone_is_the_rule_for_every_rank_to_1100() {
        for p in 1..=1100 {
            let c = Circulant::new(p);
            let all = c.recv_all();
            for r in 0..p {
                alone_is_together(&c, &all, r);
            }
        }
    }

    #[test]
    fn one_ranks_schedule_alone_is_the_rule_at_scale() {
        let c = Circulant::new(65_537);
        let all = c.recv_all();
        for r in 0..c.p {
            alone_is_together(&c, &all, r);
        }
        for p in [4095, 4096, 4097, 65535, 526_848, 1_048_577] {
            let c = Circulant::new(p);
            let all = c.recv_all();
            // Every rank near 0, near a skip or near p, and a spread.
            let near = c
                .skip
                .iter()
                .flat_map(|&s| s.saturating_sub(3)..(s + 3).min(p));
            let spread = (0..p).step_by(p / 1500 + 1);
            for r in (0..40.min(p)).chain(near).chain(spread) {
                alone_is_together(&c, &all, r);
            }
        }
    }

    /// The folded mask of a window is what the walk down the sums of skips
    /// reads there, wherever it claims to know it.
    #[test]
    fn the_folded_window_holds_what_the_walk_finds() {
        let mut known = 0;
        for p in (17..=700).chain([1025, 4097]) {
            let c = Circulant::new(p);
            for k in 4..c.q {
                let len = (c.skip[k + 1] - c.skip[k]) as i64;
                for x in 1 - c.skip[k + 1] as i64..c.skip[k] as i64 {
                    if let Some(m) = c.folded(k, x) {
                        known += 1;
                        assert_eq!(m, c.present_mod(k + 1, x + 1, x + len), "p {p} k {k} x {x}");
                    }
                }
            }
        }
        assert!(known > 100_000, "{known} windows folded");
    }

    #[test]
    fn skips_halve() {
        let c = Circulant::new(17);
        assert_eq!(c.skip, vec![1, 2, 3, 5, 9, 17]);
        assert_eq!(Circulant::new(16).skip, vec![1, 2, 4, 8, 16]);
    }

    #[test]
    fn one_ranks_schedule_needs_no_o_p_work() {
        // 2^20 + 7 ranks: a rank's schedule alone, for a spread of ranks,
        // well under what touching every rank would cost.
        let p = (1 << 20) + 7;
        let c = Circulant::new(p);
        let ranks = [0, 1, 2, 12345, p / 2, p - 1];
        let start = std::time::Instant::now();
        for r in ranks {
            let s = c.schedule(r);
            assert_eq!((s.recv.len(), s.send.len()), (21, 21));
        }
        let took = start.elapsed();
        // Against touching every rank once (each one's baseblock), timed
        // here on the same machine: six schedules cost a small part of it.
        let start = std::time::Instant::now();
        let sum: usize = (0..p).map(|r| c.baseblock(r)).sum();
        let every = start.elapsed();
        assert!(sum > 0);
        eprintln!("six schedules at p = {p}: {took:?}; every rank's baseblock: {every:?}");
        assert!(
            took * 10 < every,
            "six schedules took {took:?}, O(p) work {every:?}"
        );
    }
}
