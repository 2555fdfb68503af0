//! One rank's circulant schedule (`cargo bench --bench circulant`): the
//! receive and send schedules each MPI rank computes at run time
//! (`Circulant::recv_schedule`, `send_schedule`: O(log p) each) against
//! the walks they replaced (kept here only to be timed: a rank's receive
//! as q range queries down the sums of skips, O(log^2 p); its send as
//! round k of the receive of each target, about O(log^3 p)), at 526,848
//! ranks (Frontier's size; `--ranks N` for another). Each trial times
//! every one of 4,096 ranks spread over the communicator; prints the
//! median, min and max over the trials of the time per rank, and the
//! ratio of the medians. Old and new agree on every rank timed.

use std::hint::black_box;
use std::time::Instant;

use colltune_algorithms::bcast::circulant::Circulant;

const TRIALS: usize = 15;
const RANKS: usize = 4096;

/// The receive schedule before (its first `rounds` rounds): round k, the
/// largest free baseblock among ranks `(r - skip[k+1], r - skip[k]]`, one
/// range query each, else that of `r - skip[k+1]`.
fn walked_recv(c: &Circulant, r: usize, rounds: usize) -> Vec<i64> {
    let (p, q) = (c.p, c.q);
    let b = c.baseblock(r);
    let mut free = ((1u64 << (q + 1)) - 1) & !(1 << b);
    (0..rounds)
        .map(|k| {
            let lo = r + p - c.skip[k + 1];
            let here = c.baseblocks_in((lo + 1) % p, (r + p - c.skip[k]) % p) & free;
            let e = if here == 0 {
                c.baseblock(lo % p)
            } else {
                63 - here.leading_zeros() as usize
            };
            free &= !(1 << e);
            if e == q {
                b as i64
            } else {
                e as i64 - q as i64
            }
        })
        .collect()
}

/// The send schedule before: round k of the walked receive of r + skip[k].
fn walked_send(c: &Circulant, r: usize) -> Vec<i64> {
    (0..c.q)
        .map(|k| walked_recv(c, (r + c.skip[k]) % c.p, k + 1)[k])
        .collect()
}

/// Median, min and max of the per-rank times (ns) over the trials.
fn per_rank_ns(ranks: &[usize], f: impl Fn(usize) -> Vec<i64>) -> (f64, f64, f64) {
    let mut t: Vec<f64> = (0..TRIALS)
        .map(|_| {
            let start = Instant::now();
            for &r in ranks {
                black_box(f(black_box(r)));
            }
            start.elapsed().as_nanos() as f64 / ranks.len() as f64
        })
        .collect();
    t.sort_by(f64::total_cmp);
    (t[TRIALS / 2], t[0], t[TRIALS - 1])
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let p = args
        .iter()
        .position(|a| a == "--ranks")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(526_848usize);
    let c = Circulant::new(p);
    let ranks: Vec<usize> = (0..RANKS).map(|i| i * p / RANKS).collect();
    for &r in &ranks {
        assert_eq!(c.recv_schedule(r), walked_recv(&c, r, c.q), "rank {r}");
        assert_eq!(c.send_schedule(r), walked_send(&c, r), "rank {r} sends");
    }
    println!(
        "p = {p}, q = {}: per rank over {RANKS} ranks, {TRIALS} trials",
        c.q
    );
    let rows = [
        (
            "receive, O(log p)",
            per_rank_ns(&ranks, |r| c.recv_schedule(r)),
        ),
        (
            "receive, walked (before)",
            per_rank_ns(&ranks, |r| walked_recv(&c, r, c.q)),
        ),
        (
            "send, O(log p)",
            per_rank_ns(&ranks, |r| c.send_schedule(r)),
        ),
        (
            "send, walked (before)",
            per_rank_ns(&ranks, |r| walked_send(&c, r)),
        ),
    ];
    for (name, (med, lo, hi)) in rows {
        println!("{name:26} median {med:9.0} ns  (min {lo:.0}, max {hi:.0})");
    }
    println!(
        "walked / O(log p): receive {:.1}x, send {:.1}x (medians)",
        rows[1].1 .0 / rows[0].1 .0,
        rows[3].1 .0 / rows[2].1 .0
    );
}
