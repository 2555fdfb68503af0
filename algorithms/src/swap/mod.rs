//! Pairwise swap: partners exchange equal-size buffers. Each rank sends its
//! data buffer and receives its partner's into its receive buffer. Pairing is
//! a parameter: `neighbors` (0-1, 2-3, ...) or `halves` (i with i + p/2); with
//! an odd number of ranks one rank has no partner and idles.
//!
//! The variants reproduce the Origin2000 study of ordered swaps: how the same
//! exchange behaves when issued as ordered blocking calls, one sendrecv,
//! nonblocking send or receive or both, ready-mode sends, or one-sided puts.

pub mod nonblocking;
pub mod ordered;
pub mod put;
pub mod rsend;
pub mod sendrecv;

use crate::error::SpecError;
use crate::schedule::{Buf, Region};
use crate::shape::Shape;
use crate::spec::AlgoSpec;

/// The partner of `rank`, or `None` for the odd rank out.
pub fn partner(rank: usize, size: usize, pairing: &str) -> Option<usize> {
    match pairing {
        "halves" => {
            let h = size / 2;
            if rank < h {
                Some(rank + h)
            } else if rank < 2 * h {
                Some(rank - h)
            } else {
                None
            }
        }
        _ => {
            let p = rank ^ 1;
            (p < size).then_some(p)
        }
    }
}

/// This rank's partner and the regions it sends and receives.
pub(crate) struct Pair {
    pub partner: Option<usize>,
    pub out: Region,
    pub inn: Region,
}

pub(crate) fn pair(sh: &Shape, spec: &AlgoSpec) -> Result<Pair, SpecError> {
    Ok(Pair {
        partner: partner(sh.rank, sh.size, spec.word("pairing")?),
        out: Region::new(Buf::Data, 0, sh.bytes),
        inn: Region::new(Buf::Recv, 0, sh.bytes),
    })
}

#[cfg(test)]
mod tests {
    use super::partner;

    #[test]
    fn pairings_are_involutions() {
        for size in 1..40 {
            for pairing in ["neighbors", "halves"] {
                let mut idle = 0;
                for r in 0..size {
                    match partner(r, size, pairing) {
                        Some(q) => {
                            assert_ne!(q, r);
                            assert_eq!(partner(q, size, pairing), Some(r));
                        }
                        None => idle += 1,
                    }
                }
                assert_eq!(idle, size % 2, "{pairing} {size}");
            }
        }
    }
}
