//! What a schedule must be before it runs: dependencies point backwards,
//! peers are other ranks of the communicator, every region lies inside its
//! buffer, and an exchange (`Post::ExchangeWithNext`) pairs a standard send
//! with a blocking receive. The walkers then assume all of it.

use super::CheckError;
use crate::schedule::{Buf, OpKind, Post, Region, Schedule, SendMode, SHARED_FLAGS};

/// Checks every op of every rank (`limits`: each buffer's length).
pub(super) fn validate(sched: &[Schedule], limits: [u64; 3]) -> Result<(), CheckError> {
    let p = sched.len() as u32;
    let shared_len = |r: usize| sched[r].buf_len[Buf::Shared.index()];
    for (rank, s) in sched.iter().enumerate() {
        // Per shared flag: its last signal so far (op, value).
        let mut last_signal: [Option<(u32, u32)>; SHARED_FLAGS as usize] = Default::default();
        for (op, o) in s.ops.iter().enumerate() {
            let mal = |why: String| CheckError::Malformed { rank, op, why };
            for &d in &o.deps {
                if d as usize >= op {
                    return Err(mal(format!("depends on later op {d}")));
                }
            }
            let mut regions: Vec<Region> = [o.kind.reads(), o.kind.writes()]
                .into_iter()
                .flatten()
                .collect();
            match &o.kind {
                OpKind::Send { to: peer, .. } | OpKind::Recv { from: peer, .. }
                    if (peer.0 >= p || peer.idx() == rank) =>
                {
                    return Err(mal(format!("peer {peer} is not another rank")));
                }
                OpKind::Put {
                    to,
                    src,
                    dst_offset,
                } => {
                    if to.0 >= p || to.idx() == rank {
                        return Err(mal(format!("put target {to} is not another rank")));
                    }
                    regions.push(Region::new(Buf::Window, *dst_offset, src.len));
                }
                OpKind::ExposeTo { group } | OpKind::AccessTo { group }
                    if group.iter().any(|g| g.0 >= p || g.idx() == rank) =>
                {
                    return Err(mal("epoch group names an invalid rank".into()));
                }
                OpKind::Load { from, src, dst } => {
                    if from.0 >= p || from.idx() == rank {
                        return Err(mal(format!("load from {from}, not another rank")));
                    }
                    if src.buf != Buf::Shared || dst.buf == Buf::Shared || src.len != dst.len {
                        return Err(mal(
                            "a load copies a peer's shared region into a local one of its length"
                                .into(),
                        ));
                    }
                    let limit = shared_len(from.idx());
                    if src.end() > limit {
                        return Err(CheckError::OutOfBounds {
                            rank,
                            op,
                            region: *src,
                            limit,
                        });
                    }
                }
                OpKind::Await { on, flag, .. }
                    if on.0 >= p || on.idx() == rank || *flag >= SHARED_FLAGS =>
                {
                    return Err(mal(format!("await of rank {on}'s flag {flag}")));
                }
                OpKind::Signal { flag, value } => {
                    if *flag >= SHARED_FLAGS {
                        return Err(mal(format!("signal of flag {flag}")));
                    }
                    if let Some((prev, v)) = last_signal[*flag as usize] {
                        if *value <= v || !o.deps.contains(&prev) {
                            return Err(mal(format!(
                                "flag {flag}'s signals must rise ({v} then {value}) and each                                  depend on the one before (op {prev})"
                            )));
                        }
                    }
                    last_signal[*flag as usize] = Some((op as u32, *value));
                }
                _ => {}
            }
            for region in regions {
                let limit = match region.buf {
                    Buf::Shared => shared_len(rank),
                    b => limits[b.index()],
                };
                if region.end() > limit {
                    return Err(CheckError::OutOfBounds {
                        rank,
                        op,
                        region,
                        limit,
                    });
                }
            }
            if o.post == Post::ExchangeWithNext {
                let next = s.ops.get(op + 1);
                let ok = matches!(
                    (&o.kind, next.map(|n| (&n.kind, n.post))),
                    (
                        OpKind::Send {
                            mode: SendMode::Standard,
                            ..
                        },
                        Some((OpKind::Recv { .. }, Post::Blocking)),
                    ) | (
                        OpKind::Recv { .. },
                        Some((
                            OpKind::Send {
                                mode: SendMode::Standard,
                                ..
                            },
                            Post::Blocking,
                        )),
                    )
                );
                if !ok {
                    return Err(mal(
                        "an exchange must be a standard send and a receive, the second blocking"
                            .into(),
                    ));
                }
            }
        }
    }
    Ok(())
}
