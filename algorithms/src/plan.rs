//! A schedule with what every execution precomputes once: each op's
//! dependents, its position in its channel (peer, tag, direction), and the
//! ops without dependencies. Shared by the MPI executor and the simulator,
//! so both run exactly the same thing; built once per call shape and reused.
//! (The simulator's `simulate` derives the same from each schedule straight
//! into its own packed form, without making `Plan`s.)

use std::collections::HashMap;

use crate::schedule::{OpKind, Schedule, Tag};

#[derive(Debug, Clone)]
pub struct Plan {
    pub schedule: Schedule,
    /// For each op, the ops that depend on it.
    pub dependents: Vec<Vec<u32>>,
    /// For each send or receive, (channel id, position in the channel).
    pub chan: Vec<Option<(u32, u32)>>,
    /// Number of channels.
    pub channels: usize,
    /// Ops without dependencies, in program order.
    pub roots: Vec<u32>,
}

impl Plan {
    pub fn new(schedule: Schedule) -> Self {
        let n = schedule.ops.len();
        let mut dependents = vec![Vec::new(); n];
        let mut ids: HashMap<(bool, u32, Tag), (u32, u32)> = HashMap::new();
        let mut chan = vec![None; n];
        let mut roots = Vec::new();
        for (i, op) in schedule.ops.iter().enumerate() {
            for &d in &op.deps {
                dependents[d as usize].push(i as u32);
            }
            if op.deps.is_empty() {
                roots.push(i as u32);
            }
            let key = match &op.kind {
                OpKind::Send { to, tag, .. } => Some((true, to.0, *tag)),
                OpKind::Recv { from, tag, .. } => Some((false, from.0, *tag)),
                _ => None,
            };
            if let Some(k) = key {
                let next_id = ids.len() as u32;
                let e = ids.entry(k).or_insert((next_id, 0));
                chan[i] = Some((e.0, e.1));
                e.1 += 1;
            }
        }
        Plan {
            schedule,
            dependents,
            chan,
            channels: ids.len(),
            roots,
        }
    }
}
