//! The flat arrays' element types the engine runs on (`engine.rs`) and
//! packing fills (`pack.rs`): an op, a channel side, a rank's hot and cold
//! state, what a blocked rank waits for.

use colltune_algorithms::Post;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum St {
    Pending,
    /// Dataflow: its dependencies are done, it has not started.
    Ready,
    Active,
    Done,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum K {
    Send,
    Recv,
    Copy,
    Put,
    Fence,
    ExposeTo,
    AccessTo,
    EndAccess,
    EndExposure,
    WaitAll,
    Load,
    Signal,
    Await,
}

/// "No channel side" / "no peer".
pub(super) const NONE: u32 = u32::MAX;

/// One op, flat: what it does and its state in the call (40 bytes).
#[derive(Clone, Copy, Debug)]
pub(super) struct FOp {
    pub(super) kind: K,
    pub(super) post: Post,
    pub(super) st: St,
    /// Send, Put: destination; Recv: source; Load: the rank whose shared
    /// memory it reads; Await: the rank whose flag it waits on.
    pub(super) peer: u32,
    /// Bytes it moves (Send, Copy, Put, Load).
    pub(super) len: u64,
    /// Send, Recv: its channel (index among its rank's channel sides) and
    /// its position there. ExposeTo, AccessTo: the group's start and length
    /// in `Engine::groups`. Signal, Await: the flag and the value.
    pub(super) cs: u32,
    pub(super) pos: u32,
    /// Dataflow: dependencies not yet done.
    pub(super) remaining: u32,
    /// Dataflow: start of its dependents in its rank's part of `Engine::deps`.
    pub(super) dep_off: u32,
    /// Recv: when it was posted. Send: when the receiver can match it
    /// ([`SendPosted::t`](super::network::SendPosted): its data's arrival
    /// if eager, else its request's with a first fragment, or its posting).
    pub(super) t: f64,
}

/// One direction of a (source, destination, tag) channel, as one rank sees it.
#[derive(Clone, Copy, Debug)]
pub(super) struct ChanSide {
    /// This side's ops, by position: `Engine::cs_ops[start..start + len]`.
    pub(super) start: u32,
    pub(super) len: u32,
    /// The other side (a receive channel of the destination, or a send
    /// channel of the source); NONE while no op of it exists.
    pub(super) peer: u32,
    /// Ops of this side posted so far (also: the position whose turn it is).
    pub(super) posted: u32,
    /// The op posted last, its `FOp::t` and bytes: what the other side
    /// needs when it matches it (as it mostly does), at hand.
    pub(super) last: u32,
    pub(super) t: f64,
    pub(super) bytes: u64,
}

/// What a rank touches at every event (one cache line).
#[repr(C, align(64))]
pub(super) struct Rank {
    /// First op and dependent of this rank in the flat arrays.
    pub(super) op_base: usize,
    pub(super) dep_base: usize,
    pub(super) cpu: f64,
    pub(super) finish: f64,
    /// First channel side of this rank.
    pub(super) cs_base: u32,
    pub(super) n: u32,
    pub(super) n_deps: u32,
    pub(super) pc: u32,
    pub(super) done: u32,
    pub(super) wait: Wait,
    /// Dataflow: whether its roots have been offered yet.
    pub(super) seeded: bool,
    /// Whether a sync op waits on peers (`RankCold::blocked_sync`).
    pub(super) blocked: bool,
}

/// The rest of a rank: window synchronisation, channel lookup.
pub(super) struct RankCold {
    /// Its receive channel sides, by (source, tag): `Engine::recv_keys[..]`.
    pub(super) recv_base: usize,
    pub(super) n_recv: u32,
    /// Its fence ops: `Engine::fence_list[fence_base..][..n_fences]`.
    pub(super) fence_base: u32,
    pub(super) n_fences: u32,
    /// Group of the first ExposeTo and of the last AccessTo: (start, len).
    pub(super) expose_group: Option<(u32, u32)>,
    pub(super) access_group: Option<(u32, u32)>,
    /// Puts started and not yet closed: (op, target, inject end, arrival).
    pub(super) puts: Vec<(u32, u32, f64, f64)>,
    pub(super) fences: usize,
    pub(super) exposed: Option<f64>,
    /// EndAccess times of origins, as seen by this target.
    pub(super) accessed: Vec<(u32, f64)>,
    /// Blocked sync op waiting on peers: (op, entered at).
    pub(super) blocked_sync: Option<(u32, f64)>,
    /// Its shared flags' signals so far: (flag, value, when).
    pub(super) signals: Vec<(u32, u32, f64)>,
    /// Awaits of other ranks on its flags, not yet satisfied: (rank, op,
    /// started at).
    pub(super) waiters: Vec<(u32, u32, f64)>,
}

/// What a blocking rank waits for before it goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Wait {
    None,
    /// This op.
    One(u32),
    /// This op and the next.
    Two(u32),
    /// Every op before this WaitAll.
    Below(u32),
}
