//! Hazards: an op may not write a region an active op of its rank reads or
//! writes, nor read a region an active op writes (what MPI forbids for a
//! buffer in flight).

use super::machine::Machine;
use super::CheckError;
use crate::schedule::Region;

impl Machine<'_> {
    pub(super) fn hazard_check(&self, r: usize, i: u32) -> Result<(), CheckError> {
        let kind = self.op(r, i);
        let (reads, writes) = (kind.reads(), kind.writes());
        for &a in &self.ranks[r].active {
            let other = self.op(r, a);
            let (or, ow) = (other.reads(), other.writes());
            let clash = |x: Option<Region>, y: Option<Region>| match (x, y) {
                (Some(x), Some(y)) if x.overlaps(&y) => Some(x),
                _ => None,
            };
            if let Some(region) = clash(writes, or).or(clash(writes, ow)).or(clash(reads, ow)) {
                return Err(CheckError::Hazard {
                    rank: r,
                    op: i as usize,
                    other: a as usize,
                    region,
                });
            }
        }
        Ok(())
    }
}
