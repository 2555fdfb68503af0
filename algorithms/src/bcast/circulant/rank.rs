//! One rank's circulant schedule in O(log p): what an MPI rank computes
//! at run time (issue 45), the same schedule as the rule of the parent
//! module (its tests hold every rank of every p to `recv_all`).
//!
//! ```text
//!  r = skip[e1] + ... + skip[em], e1 > ... > em = b   (its greedy sum; e0 = q)
//!
//!  round k              takes, from the circulant of skip[t] ranks
//!  k < em               t = em:      round k of its root
//!  k = e_i              t = e_(i-1): baseblock t (its rank 0)
//!  e_i < k < e_(i-1)    t = e_(i-1): round k of its rank x = skip[e_i] + ... + skip[em]
//!
//!  such a round k folded down the levels t, t-1, ..., k+1 (x -= odd[j]
//!  each): in the circulant of skip[k+1] ranks, the ranks
//!     [ x + 1 .. x + skip[k+1] - skip[k] ]   hold 0..k-1, and k or k+1
//! ```
//! Why: r's windows of the rounds below e1 hold the baseblocks that those
//! of rank r - skip[e1] of the circulant of skip[e1] ranks hold (that
//! circulant's rank 0 standing for rank skip[e1], both baseblock e1), so
//! those rounds are that rank's, and so on down r's sum; round e_i's
//! window holds rank 0 of the circulant of skip[e_(i-1)] ranks, whose
//! baseblock e_(i-1) is the largest there and still free. The rounds
//! above e_i (the *high* rounds) wrap past that rank 0. A high round's
//! window lies in the upper half of the circulant, which is the
//! circulant of skip[t-1] ranks shifted by skip[t-1] and cut short by
//! odd[t] = 2 skip[t-1] - skip[t]: one level down the window is the same
//! one with x less odd[t] (`drift` counts them). Folded to skip[k+1]
//! ranks the window is about half of them, so it holds every baseblock
//! below k and one of k, k+1 (the `folded` mask, k >= 4); the pick is the
//! largest still free, O(1) with a bit mask. Where x has run far below 0
//! (the last few levels, at most 2q + 2 ranks) the fold stops and the
//! parent's walk down the sums of skips (`present`) reads the window.
//!
//! A send goes to r + skip[k], which receives in round k what this rule
//! gives it: when adding skip[k] to r carries into no level, k joins r's
//! sum and the block is the next larger baseblock; when r's sum has k
//! (and k is not b) it is baseblock k of the period before; else the
//! target's receive rounds are walked (for b, and where skip[k] carries:
//! at most 6 targets a rank). The bound of 6 and the rule for k in r's
//! sum are measured, not proven: the tests hold every rank to p = 1,100
//! and of p = 65,537, and sampled ones to 1,048,577; once, every rank of
//! p = 526,848, 786,433, 1,000,003 and 1,048,577 (at most 6 walked).
//!
//! Cost: O(q) a rank for the receive schedule (q rounds, O(1) each; the
//! levels where the fold stops are O(log q) of O(log q) each); the send
//! schedule O(q) plus O(q) per walked target. `Circulant::new` keeps the
//! running count of odd skips (`drift`), O(q) once.

use super::Circulant;

/// The level round k belongs to: its circulant (`top`: skip[top] ranks),
/// the rank there (`tail`: r's skips below the level), and the highest
/// level the fold cannot pass (`stop`, 0 when it passes them all).
struct Level {
    top: usize,
    tail: usize,
    stop: usize,
}

impl Circulant {
    /// `r`'s greedy sum of skips as a bit set (bit e: skip[e] taken); 0
    /// for the root.
    pub(super) fn skips_of(&self, r: usize) -> u64 {
        let mut rest = r;
        let mut taken = 0;
        for k in (0..self.q).rev() {
            if rest >= self.skip[k] {
                rest -= self.skip[k];
                taken |= 1 << k;
            }
        }
        taken
    }

    /// The baseblock of rank `pos` (mod skip[j]) of the circulant of
    /// skip[j] ranks (j for its rank 0).
    pub(super) fn base_at(&self, j: usize, pos: i64) -> usize {
        let mut rest = pos.rem_euclid(self.skip[j] as i64) as usize;
        if rest == 0 {
            return j;
        }
        for k in (0..j).rev() {
            if rest >= self.skip[k] {
                rest -= self.skip[k];
                if rest == 0 {
                    return k;
                }
            }
        }
        j
    }

    /// The blocks `r` receives in rounds 0..q of a period (see the module
    /// doc): round k, the largest baseblock still free among ranks
    /// `(r - skip[k+1], r - skip[k]]`, else that of `r - skip[k+1]`.
    /// O(log p).
    pub fn recv_schedule(&self, r: usize) -> Vec<i64> {
        let mut out = Vec::with_capacity(self.q);
        self.receives(r, self.q, |e| out.push(e));
        out
    }

    /// What `r` receives in round `k` alone.
    fn receive_at(&self, r: usize, k: usize) -> i64 {
        let mut last = 0;
        self.receives(r, k + 1, |e| last = e);
        last
    }

    /// `r`'s receive schedule over its first `rounds` rounds, entry by
    /// entry.
    fn receives(&self, r: usize, rounds: usize, mut out: impl FnMut(i64)) {
        let q = self.q;
        let taken = self.skips_of(r);
        let b = if taken == 0 {
            q
        } else {
            taken.trailing_zeros() as usize
        };
        let mut free = self.all_free(b);
        let mut level: Option<Level> = None;
        let mut tail = 0;
        for k in 0..rounds {
            let above = taken >> (k + 1);
            let top = if above == 0 {
                q
            } else {
                k + 1 + above.trailing_zeros() as usize
            };
            let e = if (taken >> k) & 1 == 1 {
                tail += self.skip[k];
                level = None;
                top
            } else {
                let lv = level.get_or_insert_with(|| self.level(top, tail));
                self.pick(k, lv, free)
            };
            free &= !(1 << e);
            out(if e == q {
                b as i64
            } else {
                e as i64 - q as i64
            });
        }
    }

    /// A level's circulant and rank, and where folding its windows down
    /// stops: level j folds into j - 1 while the rank there, `tail` less
    /// the odd skips between, leaves rank 0 and the one below the window
    /// out of the upper half (>= 1 - (skip[j] - skip[j-1])). That fails
    /// for the lowest levels only (the bound grows with skip[j]), so the
    /// search runs up from level 1.
    fn level(&self, top: usize, tail: usize) -> Level {
        let over = self.drift[top] as i64 - tail as i64;
        let mut stop = 0;
        while stop < top && ((self.skip[stop] + self.drift[stop]) as i64 - 1) < over {
            stop += 1;
        }
        Level { top, tail, stop }
    }

    /// Round k's receive at its level: the window folded down to the
    /// circulant of skip[j] ranks (j = k + 1, or where folding stops),
    /// the largest free baseblock there, else that of the rank below it.
    fn pick(&self, k: usize, lv: &Level, free: u64) -> usize {
        let j = if lv.stop >= k + 2 {
            lv.stop.min(lv.top)
        } else {
            k + 1
        };
        let x = lv.tail as i64 - (self.drift[lv.top] - self.drift[j]) as i64;
        let below = x + (self.skip[j] - self.skip[k + 1]) as i64;
        let len = (self.skip[k + 1] - self.skip[k]) as i64;
        let folded = if j == k + 1 { self.folded(k, x) } else { None };
        let here = folded.unwrap_or_else(|| self.present_mod(j, below + 1, below + len));
        let m = here & free;
        if m == 0 {
            self.base_at(j, below)
        } else {
            63 - m.leading_zeros() as usize
        }
    }

    /// The baseblocks of ranks `[x + 1, x + skip[k+1] - skip[k]]` of the
    /// circulant of skip[k+1] ranks, for k >= 4 and x not far below 0
    /// (else None). Its lower half (ranks 1..skip[k], every baseblock
    /// below k, those below k - 1 at skip[e] and skip[k-1] + skip[e])
    /// and upper half (skip[k], then the lower half again, one rank short
    /// when skip[k+1] is odd) give: for x >= 0, every baseblock below k
    /// but the one at x when it is k - 1 and the upper half is short, and
    /// k unless x = 0 and it is short; for x in [-len, -1], every one
    /// below k, and k + 1 (rank 0).
    pub(super) fn folded(&self, k: usize, x: i64) -> Option<u64> {
        if k < 4 {
            return None;
        }
        let short = 2 * self.skip[k] - self.skip[k + 1];
        let below_k = (1u64 << k) - 1;
        if x >= 0 {
            let x = x as usize;
            if x >= self.skip[k] {
                return None;
            }
            let mut m = below_k;
            if x >= short {
                m |= 1 << k;
            }
            if short == 1 && x == self.skip[k - 1] {
                m &= !(1 << (k - 1));
            }
            Some(m)
        } else if -x <= (self.skip[k + 1] - self.skip[k]) as i64 {
            Some(below_k | (1 << (k + 1)))
        } else {
            None
        }
    }

    /// The baseblocks of ranks `a..=c` (mod p, fewer than p; bit e set:
    /// some rank there has baseblock e), O(log p).
    pub fn baseblocks_in(&self, a: usize, c: usize) -> u64 {
        self.present_mod(self.q, a as i64, c as i64)
    }

    /// The baseblocks of ranks `a..=c` (mod skip[j], fewer than skip[j])
    /// of the circulant of skip[j] ranks.
    pub(super) fn present_mod(&self, j: usize, a: i64, c: i64) -> u64 {
        let n = self.skip[j] as i64;
        let (x, y) = (a.rem_euclid(n) as usize, c.rem_euclid(n) as usize);
        if x <= y {
            self.present(j, x, y)
        } else {
            self.present(j, x, n as usize - 1) | self.present(j, 0, y)
        }
    }

    /// The blocks `r` sends in rounds 0..q of a period: round k, what
    /// `r + skip[k]` receives then. O(log p) but for the targets whose
    /// receive is walked (see the module doc).
    pub fn send_schedule(&self, r: usize) -> Vec<i64> {
        self.sends(r).0
    }

    /// [`Circulant::send_schedule`], and how many targets' receives it
    /// walked.
    pub(super) fn sends(&self, r: usize) -> (Vec<i64>, usize) {
        let (p, q) = (self.p, self.q);
        if r == 0 {
            return ((0..q as i64).collect(), 0);
        }
        let taken = self.skips_of(r);
        let b = taken.trailing_zeros() as usize;
        let mut send = vec![0; q];
        // room: min over the levels l above k that r's sum skips (and q,
        // the wrap) of skip[l] - 1 - (r's skips below l); adding skip[k]
        // carries nowhere while skip[k] <= room.
        let mut room = p - 1 - r;
        let mut high = 0;
        let mut walked = 0;
        let mut walk = |k: usize| {
            walked += 1;
            self.receive_at((r + self.skip[k]) % p, k)
        };
        for k in (0..q).rev() {
            if (taken >> k) & 1 == 1 {
                send[k] = if k == b { walk(k) } else { k as i64 - q as i64 };
                high += self.skip[k];
            } else {
                send[k] = if self.skip[k] <= room {
                    let above = taken >> (k + 1);
                    if above == 0 {
                        b as i64
                    } else {
                        (k + 1 + above.trailing_zeros() as usize) as i64 - q as i64
                    }
                } else {
                    walk(k)
                };
                room = room.min(self.skip[k] - 1 - (r - high));
            }
        }
        (send, walked)
    }
}
