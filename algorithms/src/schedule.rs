//! Schedules: what one rank does in one collective call, as typed data.
//!
//! A [`Schedule`] is a list of [`Op`]s in *program order* (the order a blocking
//! execution issues them) where every op also carries its *dependencies* (the
//! earlier ops that must complete before it may start; what a dataflow
//! execution honours). Ops address byte ranges ([`Region`]s) of a small set of
//! buffers ([`Buf`]); peers are ranks of the communicator the schedule runs on.
//!
//! Nothing here knows about MPI: the transports in the `colltune` crate execute
//! schedules on MPI or on a network model, and [`crate::check`] executes them on
//! an exact symbolic model to prove them correct.

use std::fmt;

/// A rank of the communicator a schedule runs on.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Rank(pub u32);

impl Rank {
    pub fn idx(self) -> usize {
        self.0 as usize
    }
}

impl From<usize> for Rank {
    fn from(r: usize) -> Self {
        Rank(u32::try_from(r).expect("rank fits in u32"))
    }
}

impl fmt::Display for Rank {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A message or buffer size in bytes.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Bytes(pub u64);

impl Bytes {
    pub fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The buffers a schedule addresses.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Buf {
    /// The user's buffer: the broadcast buffer, or the swap's outgoing buffer.
    Data,
    /// The swap's incoming buffer.
    Recv,
    /// This rank's part of a one-sided window (exposed to `Put`).
    Window,
    /// This rank's part of its node's shared-memory window
    /// (`MPI_Win_allocate_shared`): the rank writes it with `Copy`, other
    /// ranks of its node read it directly with [`OpKind::Load`]. Every rank
    /// of a node has a part of the same length.
    Shared,
}

impl Buf {
    /// How many buffers there are.
    pub const COUNT: usize = 4;
    pub const ALL: [Buf; Buf::COUNT] = [Buf::Data, Buf::Recv, Buf::Window, Buf::Shared];

    pub fn index(self) -> usize {
        match self {
            Buf::Data => 0,
            Buf::Recv => 1,
            Buf::Window => 2,
            Buf::Shared => 3,
        }
    }
}

/// Flags each rank owns in its part of the shared-memory window: counters
/// only their owner writes ([`OpKind::Signal`]) and other ranks of the node
/// wait on ([`OpKind::Await`]). A flag's values rise within a call; the
/// executor stamps them with the call's number, so they rise across calls.
pub const SHARED_FLAGS: u8 = 4;

/// A byte range `[offset, offset + len)` of one buffer.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Region {
    pub buf: Buf,
    pub offset: u64,
    pub len: u64,
}

impl Region {
    pub fn new(buf: Buf, offset: u64, len: u64) -> Self {
        Region { buf, offset, len }
    }
    pub fn data(offset: u64, len: u64) -> Self {
        Region::new(Buf::Data, offset, len)
    }
    pub fn end(&self) -> u64 {
        self.offset + self.len
    }
    pub fn overlaps(&self, other: &Region) -> bool {
        self.buf == other.buf
            && self.len > 0
            && other.len > 0
            && self.offset < other.end()
            && other.offset < self.end()
    }
}

/// How a send is issued.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum SendMode {
    /// `MPI_Send` / `MPI_Isend`.
    Standard,
    /// `MPI_Rsend` / `MPI_Irsend`: the matching receive must already be posted.
    Ready,
}

/// Message tags a schedule may use; messages match first-in first-out per
/// (source, destination, tag), as MPI's non-overtaking rule guarantees.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Tag {
    /// Payload.
    Data,
    /// Zero-byte control messages (a ready-send go-ahead).
    Control,
}

/// How the *blocking* execution issues an op (the dataflow execution ignores it).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Post {
    /// Issue and complete before the next op (`MPI_Send`, `MPI_Recv`, ...).
    Blocking,
    /// Start it (`MPI_Isend`, `MPI_Irecv`, `MPI_Put`) and go on; it completes at
    /// the next [`OpKind::WaitAll`] or at the end of the schedule.
    Immediate,
    /// This op and the next one (one send, one receive) are issued together as
    /// one `MPI_Sendrecv`.
    ExchangeWithNext,
}

/// What an op does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OpKind {
    Send {
        to: Rank,
        src: Region,
        tag: Tag,
        mode: SendMode,
    },
    Recv {
        from: Rank,
        dst: Region,
        tag: Tag,
    },
    /// A local copy between two regions of equal length.
    Copy {
        src: Region,
        dst: Region,
    },
    /// One-sided write of `src` into the window of `to` at `dst_offset`.
    Put {
        to: Rank,
        src: Region,
        dst_offset: u64,
    },
    /// `MPI_Win_fence`: collective over the communicator; completes every put.
    Fence,
    /// `MPI_Win_post`: open an exposure epoch to `group`.
    ExposeTo {
        group: Vec<Rank>,
    },
    /// `MPI_Win_start`: open an access epoch to `group`.
    AccessTo {
        group: Vec<Rank>,
    },
    /// `MPI_Win_complete`: close the access epoch (puts are done at the origin).
    EndAccess,
    /// `MPI_Win_wait`: close the exposure epoch (puts from the group have landed).
    EndExposure,
    /// Complete every outstanding `Immediate` op (blocking execution only).
    WaitAll,
    /// Copies `src`, a region of rank `from`'s part of the node's shared
    /// window ([`Buf::Shared`]), into this rank's `dst` (a load from
    /// memory both ranks map: no message). Only safe once a [`OpKind::Await`]
    /// this op depends on saw `from` publish the bytes.
    Load {
        from: Rank,
        src: Region,
        dst: Region,
    },
    /// Publishes: stores `value` into this rank's flag `flag` once every op
    /// it depends on completed (a release: `MPI_Win_sync`, then an atomic
    /// store). A flag's signals rise strictly in program order, each
    /// depending on the one before.
    Signal {
        flag: u8,
        value: u32,
    },
    /// Waits until rank `on`'s flag `flag` holds at least `value` (an
    /// acquire: atomic loads, yielding the processor between polls, then
    /// `MPI_Win_sync`). `back` > 0: the value signalled `back` calls ago
    /// through the same window (1: the previous call; met at once while
    /// the window has seen fewer calls: there was none), so that a call can
    /// wait for what the ranks did in an earlier one without waiting for
    /// them to enter this one.
    Await {
        on: Rank,
        flag: u8,
        value: u32,
        back: u32,
    },
}

impl OpKind {
    /// The region this op reads, if any.
    pub fn reads(&self) -> Option<Region> {
        match self {
            OpKind::Send { src, .. } | OpKind::Copy { src, .. } | OpKind::Put { src, .. } => {
                Some(*src)
            }
            _ => None,
        }
    }
    /// The region this op writes locally, if any.
    pub fn writes(&self) -> Option<Region> {
        match self {
            OpKind::Recv { dst, .. } | OpKind::Copy { dst, .. } | OpKind::Load { dst, .. } => {
                Some(*dst)
            }
            _ => None,
        }
    }
    /// Window synchronisation ops order everything before and after them.
    pub fn is_sync(&self) -> bool {
        matches!(
            self,
            OpKind::Fence
                | OpKind::ExposeTo { .. }
                | OpKind::AccessTo { .. }
                | OpKind::EndAccess
                | OpKind::EndExposure
        )
    }
}

/// One step of a schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Op {
    pub kind: OpKind,
    pub post: Post,
    /// Indices of earlier ops that must complete before this one starts.
    pub deps: Vec<u32>,
}

/// What one rank does in one collective call.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Schedule {
    pub ops: Vec<Op>,
    /// Bytes each buffer must hold (indexed by [`Buf::index`]).
    pub buf_len: [u64; Buf::COUNT],
    /// Slots of the shared window taken in turn, one per call (None: the
    /// schedule's regions are where they say).
    pub ring: Option<Ring>,
}

/// Slots of the node's shared window ([`Buf::Shared`]) that calls take in
/// turn: a schedule names slot 0, `[base, base + stride)`, and call `k`
/// through the window (counted from 1, as the executor counts them) uses
/// slot `k % slots`, `stride` bytes per slot further on. So a root can run
/// `slots` calls ahead of its readers without a call's number in its
/// schedule (`shm`'s small messages).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Ring {
    pub base: u64,
    pub stride: u64,
    pub slots: u32,
}

impl Ring {
    /// Where `r` lies in call `call` (regions of other buffers, and of
    /// the shared window outside slot 0, do not move).
    pub fn place(&self, r: Region, call: u64) -> Region {
        if r.buf == Buf::Shared && r.offset >= self.base && r.end() <= self.base + self.stride {
            Region {
                offset: r.offset + (call % self.slots as u64) * self.stride,
                ..r
            }
        } else {
            r
        }
    }

    /// Bytes of the shared window the ring spans, from offset 0.
    pub fn end(&self) -> u64 {
        self.base + self.stride * self.slots as u64
    }
}

impl Schedule {
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }
    pub fn len(&self) -> usize {
        self.ops.len()
    }
    /// Whether any op uses a one-sided window.
    pub fn uses_window(&self) -> bool {
        self.buf_len[Buf::Window.index()] > 0
            || self.ops.iter().any(|o| {
                matches!(
                    o.kind,
                    OpKind::Put { .. }
                        | OpKind::Fence
                        | OpKind::ExposeTo { .. }
                        | OpKind::AccessTo { .. }
                )
            })
    }
    /// Whether any op uses the node's shared-memory window (its part of
    /// it, a peer's part, or flags). A rank whose schedule declares a
    /// [`Buf::Shared`] length but no such op (a rank alone on its node in
    /// a hierarchical call) still takes part in allocating the window.
    pub fn uses_shared(&self) -> bool {
        self.ops.iter().any(|o| {
            matches!(
                o.kind,
                OpKind::Load { .. } | OpKind::Signal { .. } | OpKind::Await { .. }
            )
        })
    }
    /// Messages and payload bytes this rank sends (sends and puts).
    pub fn sent(&self) -> (usize, u64) {
        self.ops.iter().fold((0, 0), |(n, b), op| match &op.kind {
            OpKind::Send { src, .. } | OpKind::Put { src, .. } => (n + 1, b + src.len),
            _ => (n, b),
        })
    }
}
