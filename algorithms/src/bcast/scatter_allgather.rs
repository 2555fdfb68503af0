//! Scatter-allgather broadcast (van de Geijn; MPICH's
//! `bcast_intra_scatter_recursive_doubling_allgather` and
//! `..._ring_allgather`).
//!
//! ```text
//!  scatter (binomial):   0:[ABCDEFGH] -> 4:[EFGH] -> 6:[GH] -> 7:[H] ...
//!  allgather, doubling:  pairs at distance 1, 2, 4 swap what they hold
//!  allgather, ring:      p-1 steps, each rank passes one chunk to the right
//! ```
//! The message is cut into p chunks of ceil(n/p) bytes. Scatter costs
//! log2(p) alpha + ((p-1)/p) n beta; recursive doubling adds
//! log2(p) alpha + ((p-1)/p) n beta, the ring (p-1) alpha + ((p-1)/p) n beta.
//! So about 2n beta in all, against log2(p) n beta for a binomial tree: the
//! long-message algorithm.
//!
//! Any p works. For recursive doubling with p not a power of two, the
//! p - 2^k extra ranks first hand their chunk to a partner among the first
//! 2^k, stay out of the doubling, and get the whole message back at the end.
//!
//! Parameters: none.

use crate::builder::Builder;
use crate::error::SpecError;
use crate::schedule::{Post, Region};
use crate::shape::Shape;
use crate::spec::AlgoSpec;
use crate::topo::{binomial_subtree_size, knomial_tree};

/// Bytes of chunks `[c0, c1)` (clipped to the message).
pub(crate) struct Chunks {
    n: u64,
    chunk: u64,
}

impl Chunks {
    pub(crate) fn new(n: u64, p: usize) -> Self {
        Chunks {
            n,
            chunk: n.div_ceil(p as u64),
        }
    }
    fn at(&self, c: usize) -> u64 {
        (c as u64 * self.chunk).min(self.n)
    }
    pub(crate) fn range(&self, c0: usize, c1: usize) -> Region {
        let (a, b) = (self.at(c0), self.at(c1.max(c0)));
        Region::data(a, b - a)
    }
}

fn scatter(sh: &Shape, ch: &Chunks, b: &mut Builder) {
    let (p, vr) = (sh.size, sh.vrank());
    let node = knomial_tree(vr, p, 2);
    if let Some(parent) = node.parent {
        let r = ch.range(vr, vr + binomial_subtree_size(vr, p));
        if r.len > 0 {
            b.recv(sh.real(parent), r, Post::Blocking);
        }
    }
    let mut sent = false;
    for &c in &node.children {
        let r = ch.range(c, c + binomial_subtree_size(c, p));
        if r.len > 0 {
            b.send(sh.real(c), r, Post::Immediate);
            sent = true;
        }
    }
    if sent {
        b.wait_all();
    }
}

pub fn build_doubling(sh: &Shape, _spec: &AlgoSpec, b: &mut Builder) -> Result<(), SpecError> {
    let (p, vr) = (sh.size, sh.vrank());
    let ch = Chunks::new(sh.bytes, p);
    scatter(sh, &ch, b);

    let pp = 1usize << (usize::BITS - 1 - p.leading_zeros()); // largest power of two <= p
    if vr >= pp {
        let partner = sh.real(vr - pp);
        let own = ch.range(vr, vr + 1);
        if own.len > 0 {
            b.send(partner, own, Post::Blocking);
        }
        for r in [ch.range(0, vr), ch.range(vr + 1, p)] {
            if r.len > 0 {
                b.recv(partner, r, Post::Blocking);
            }
        }
        return Ok(());
    }
    let extra = vr + pp;
    if extra < p {
        let r = ch.range(extra, extra + 1);
        if r.len > 0 {
            b.recv(sh.real(extra), r, Post::Blocking);
        }
    }
    let mut mask = 1;
    while mask < pp {
        let partner = vr ^ mask;
        let (g, gp) = (vr & !(mask - 1), partner & !(mask - 1));
        let real = sh.real(partner);
        b.exchange(real, ch.range(g, g + mask), real, ch.range(gp, gp + mask));
        let ex = |g: usize| ch.range((pp + g).min(p), (pp + g + mask).min(p));
        b.exchange(real, ex(g), real, ex(gp));
        mask <<= 1;
    }
    if extra < p {
        for r in [ch.range(0, extra), ch.range(extra + 1, p)] {
            if r.len > 0 {
                b.send(sh.real(extra), r, Post::Blocking);
            }
        }
    }
    Ok(())
}

pub fn build_ring(sh: &Shape, _spec: &AlgoSpec, b: &mut Builder) -> Result<(), SpecError> {
    let (p, vr) = (sh.size, sh.vrank());
    let ch = Chunks::new(sh.bytes, p);
    scatter(sh, &ch, b);
    let (right, left) = (sh.real((vr + 1) % p), sh.real((vr + p - 1) % p));
    for s in 0..p - 1 {
        let out = (vr + p - s) % p;
        let inn = (vr + 2 * p - s - 1) % p;
        b.exchange(right, ch.range(out, out + 1), left, ch.range(inn, inn + 1));
    }
    Ok(())
}
