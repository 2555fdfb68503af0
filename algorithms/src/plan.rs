//! A schedule with what every execution precomputes once: each op's
//! dependents, its position in its channel (peer, tag, direction), and the
//! ops without dependencies. Shared by the MPI executor and the simulator,
//! so both run exactly the same thing; built once per call shape and reused.
//! (The simulator's `simulate` derives the same from each schedule straight
//! into its own packed form, without making `Plan`s, channels numbered by
//! the same [`ChannelNumbering`](crate::channel::ChannelNumbering).)

use crate::channel::number_channels;
use crate::schedule::Schedule;

#[derive(Debug, Clone)]
pub struct Plan {
    pub schedule: Schedule,
    /// For each op, the ops that depend on it.
    pub dependents: Vec<Vec<u32>>,
    /// For each send or receive, (channel number, position in the channel),
    /// as [`number_channels`] gives them.
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
        let mut roots = Vec::new();
        for (i, op) in schedule.ops.iter().enumerate() {
            for &d in &op.deps {
                dependents[d as usize].push(i as u32);
            }
            if op.deps.is_empty() {
                roots.push(i as u32);
            }
        }
        let (chan, channels) = number_channels(&schedule.ops);
        Plan {
            schedule,
            dependents,
            chan,
            channels,
            roots,
        }
    }
}
