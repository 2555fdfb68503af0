//! The MPI transport: executes schedules on a communicator.
//!
//! Everything unsafe in colltune lives in this crate, and the raw MPI calls
//! in this module: `ffi` wraps them (every return code checked, nothing
//! more), [`exec`] runs schedules with raw pointers into the caller's
//! buffers, [`Comm`] owns the private communicator, its node map
//! (computed once) and its one-sided window. Safe layers above `ffi`:
//! [`control`] (the control plane: barrier, one generic reduction,
//! broadcasts, gathers, sub-communicators) and [`p2p`] (point-to-point
//! messages between two ranks, and the one ping-pong).

pub mod control;
pub mod exec;
pub(crate) mod ffi;
pub mod p2p;
pub mod small;

use std::cell::{Cell, RefCell};
use std::fmt;
use std::rc::Rc;

use colltune_algorithms::{
    lookup, AlgoSpec, BuildError, Collective, NodeMap, ParamValue, Restriction, ShapeError,
    SHARED_FLAGS,
};
use thiserror::Error;

pub use control::{Control, Element};
pub use exec::{execute, start, Buffers, Pending};
pub use ffi::{cvar_write_int, processor_name, wtime};

/// Keeps one MPI_T session open until the process ends: colltune's own
/// programs call it after `MPI_Init` (`ffi::MpiT::hold_for_process`).
pub fn hold_mpi_t_for_process() {
    ffi::MpiT::hold_for_process();
}
pub use p2p::{Batch, Peer};

use control::CommHandle;

/// A reduction operation (the control plane's, which `ffi` maps to MPI's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Min,
    Max,
    Sum,
}

/// A failed MPI call.
#[derive(Debug, Clone, Error)]
#[error("{call} failed: {message}")]
pub struct MpiError {
    pub call: &'static str,
    pub code: i32,
    pub message: String,
}

/// Anything that stops a schedule from running.
#[derive(Debug, Error)]
pub enum TransportError {
    #[error(transparent)]
    Mpi(#[from] MpiError),
    #[error(transparent)]
    Build(#[from] BuildError),
    #[error("the {buffer} buffer holds {have} bytes but this call needs {need}")]
    BufferTooSmall {
        buffer: &'static str,
        have: usize,
        need: u64,
    },
    #[error("COLLTUNE_NODES={text}: {why}")]
    NodeOverride { text: String, why: String },
    #[error("intercommunicators are not supported: colltune tunes intra-communicator collectives")]
    InterCommunicator,
    #[error("rank {rank} reaches rank {peer} through shared memory, but they share no node: a shared-memory algorithm (shm) runs only among ranks of one node")]
    NotSharedMemory { rank: usize, peer: usize },
    /// Why a shared-memory algorithm cannot run here, on every rank alike:
    /// what [`Comm::shared_memory_fits`] refused (the layout), or the
    /// library's refusal of the shared window ([`Comm`]'s first call that
    /// needs it).
    #[error("{0}")]
    SharedMemoryUnfit(String),
}

impl From<ShapeError> for TransportError {
    fn from(e: ShapeError) -> Self {
        TransportError::Build(e.into())
    }
}

struct Window {
    win: ffi::MPI_Win,
    base: *mut u8,
    len: u64,
}

/// Bytes between two flags at the head of a rank's part of the shared
/// window: one cache line each, so that flags of different owners never
/// share a line.
pub(crate) const FLAG_STRIDE: usize = 64;
/// Bytes at the head of every part that hold its owner's flags.
pub(crate) const FLAGS_BYTES: usize = SHARED_FLAGS as usize * FLAG_STRIDE;

/// The node's shared-memory window (`MPI_Win_allocate_shared` over the
/// ranks that share this rank's node), in one passive epoch
/// (`MPI_Win_lock_all`) for its whole life.
pub(crate) struct SharedWindow {
    pub(crate) win: ffi::MPI_Win,
    /// The ranks of this rank's node.
    node: CommHandle,
    /// Data bytes of every part (after its flags).
    len: u64,
    /// Per rank of the communicator: its part (flags, then data) as mapped
    /// in this process; None for a rank of another node.
    pub(crate) parts: Vec<Option<*mut u8>>,
    /// `MPI_WIN_UNIFIED`: one copy of the memory, so a flag's release store
    /// and acquire load order the data around it (as in any shared-memory
    /// program) and signals and awaits need no `MPI_Win_sync`; under
    /// `MPI_WIN_SEPARATE` every signal and met await calls it.
    pub(crate) unified: bool,
}

impl SharedWindow {
    /// Collective over the communicator `comm` (the window itself over the
    /// ranks of this rank's node). Where the library cannot allocate it on
    /// some rank (`MPI_Win_allocate_shared` fails: too little shared
    /// memory, no shared-memory one-sided component), every rank learns it
    /// and gets [`TransportError::SharedMemoryUnfit`], so that all take the
    /// same fallback.
    fn new(comm: &CommHandle, rank: usize, size: usize, len: u64) -> Result<Self, TransportError> {
        // SAFETY: the communicator just split off, kept (and freed) here.
        let node = unsafe { CommHandle::own(ffi::comm_split_shared(comm.raw(), rank)?) };
        let part = FLAGS_BYTES as u64 + len;
        let made = ffi::win_allocate_shared(part, node.raw());
        // Agreed: first within the node (whose ranks can free a window they
        // all have together), then over the communicator.
        let node_failed = node.allreduce(i32::from(made.is_err()), Op::Max)?;
        let any_failed = comm.allreduce(node_failed, Op::Max)?;
        let (win, base) = match made {
            Ok(made) if any_failed == 0 => made,
            Ok((mut win, _)) => {
                if node_failed == 0 {
                    ffi::win_free(&mut win)?;
                }
                // Else left to MPI_Finalize: a collective free would wait
                // for ranks of the node that have no window.
                return Err(TransportError::SharedMemoryUnfit(format!(
                    "the MPI library could not allocate colltune's shared-memory window ({part} bytes per rank) on another rank"
                )));
            }
            Err(e) => {
                return Err(TransportError::SharedMemoryUnfit(format!(
                    "the MPI library could not allocate colltune's shared-memory window ({part} bytes per rank): {e}"
                )))
            }
        };
        // SAFETY: this rank's part holds at least FLAGS_BYTES bytes; no
        // other rank reads its flags before the barrier below.
        unsafe { std::ptr::write_bytes(base, 0, FLAGS_BYTES) };
        let mut w = SharedWindow {
            win,
            node,
            len,
            parts: vec![None; size],
            unified: ffi::win_unified(win)?,
        };
        ffi::win_lock_all(win)?;
        ffi::win_sync(win)?;
        ffi::barrier(w.node.raw())?;
        ffi::win_sync(win)?;
        let members = w.node.allgather(rank as i32)?;
        for (node_rank, &r) in members.iter().enumerate() {
            let (p, _) = ffi::win_shared_query(win, node_rank)?;
            w.parts[r as usize] = Some(p);
        }
        Ok(w)
    }

    /// Collective over the node, as `new`.
    fn free(mut self) -> Result<(), MpiError> {
        // Nobody may still read a part: every rank of the node is here.
        ffi::barrier(self.node.raw())?;
        ffi::win_unlock_all(self.win)?;
        ffi::win_free(&mut self.win)
        // The node's communicator goes with `self`.
    }
}

/// Where a communicator's ranks are: its size, this process's rank, and
/// which ranks share a node, found once (no private communicator needed).
#[derive(Clone, Debug)]
pub struct Shape {
    rank: usize,
    size: usize,
    /// Per rank, the lowest rank on the same shared-memory node.
    labels: Vec<u32>,
    /// Per rank, its socket (physical package) where it is bound inside
    /// one (`placed::own_socket`), else None.
    sockets: Vec<Option<u32>>,
    nodes: NodeMap,
    shared: NodeMap,
}

impl Shape {
    /// From the shared-memory labels; `COLLTUNE_NODES` (`2x3`, `3+2`)
    /// overrides the layout, for testing node-aware algorithms on one
    /// machine.
    fn new(
        rank: usize,
        size: usize,
        (labels, sockets): (Vec<u32>, Vec<Option<u32>>),
    ) -> Result<Shape, TransportError> {
        let nodes = match std::env::var("COLLTUNE_NODES") {
            Ok(text) if !text.trim().is_empty() => {
                let m = NodeMap::parse(&text).map_err(|e| TransportError::NodeOverride {
                    text: text.clone(),
                    why: e.to_string(),
                })?;
                if m.size() != size {
                    return Err(TransportError::NodeOverride {
                        text,
                        why: format!(
                            "it lays out {} ranks, the communicator has {size}",
                            m.size()
                        ),
                    });
                }
                m
            }
            _ => NodeMap::from_labels(&labels),
        };
        Ok(Shape {
            rank,
            size,
            shared: NodeMap::from_labels(&labels),
            labels,
            sockets,
            nodes,
        })
    }

    /// The shape of `comm`, from `world`'s (`MPI_COMM_WORLD`'s) node labels where every rank of
    /// `comm` is in `MPI_COMM_WORLD` (`world_ranks`, local: no
    /// communication, no communicator); else found on `comm` itself with
    /// one shared-memory split (collective over `comm`; every rank takes
    /// the same way, since they share the same world or none).
    ///
    /// # Safety
    /// `comm` is a valid intra-communicator.
    pub unsafe fn of(comm: ffi::MPI_Comm, world: &Shape) -> Result<Shape, TransportError> {
        if ffi::comm_is_inter(comm)? {
            return Err(TransportError::InterCommunicator);
        }
        let rank = ffi::comm_rank(comm)?;
        let size = ffi::comm_size(comm)?;
        let labels = match ffi::world_ranks(comm)? {
            Some(w) => {
                let node = |r: i32| world.labels.get(r as usize).copied();
                let nodes: Vec<Option<u32>> = w.iter().map(|&r| node(r)).collect();
                let sockets = w
                    .iter()
                    .map(|&r| world.sockets.get(r as usize).copied().flatten())
                    .collect();
                let labels = nodes
                    .iter()
                    .map(|n| nodes.iter().position(|m| m == n).unwrap_or(0) as u32)
                    .collect();
                (labels, sockets)
            }
            None => {
                // SAFETY: the caller's communicator; only read here.
                let h = CommHandle::own(comm);
                let l = node_labels(&h, rank);
                std::mem::forget(h);
                l?
            }
        };
        Shape::new(rank, size, labels)
    }

    pub fn rank(&self) -> usize {
        self.rank
    }
    pub fn size(&self) -> usize {
        self.size
    }
    pub fn nodes(&self) -> &NodeMap {
        &self.nodes
    }
    /// How its ranks sit on the nodes ([`Shape::nodes`], so
    /// `COLLTUNE_NODES` where set) and on each node's sockets (where every
    /// rank is bound inside one socket): found from what [`Shape::of`]
    /// gathered, no communication.
    pub fn placement(&self) -> colltune_core::model::placed::Detected {
        let node_of: Vec<usize> = (0..self.size).map(|r| self.nodes.node_of(r)).collect();
        let sockets: Option<Vec<u32>> = self.sockets.iter().copied().collect();
        colltune_core::model::placed::detect(&node_of, sockets.as_deref())
    }
    /// Whether a resolved algorithm runs here: one that goes through
    /// shared memory needs the communicator on one node (the library's
    /// nodes), or as a phase inside nodes, each node of [`Shape::nodes`]
    /// inside one of the library's. Err: why not. The same answer on every
    /// rank.
    pub fn shared_memory_fits(&self, c: Collective, spec: &AlgoSpec) -> Result<(), String> {
        shared_memory_fits(c, spec, &self.nodes, &self.shared)
    }
}

/// A communicator as colltune uses it: a private communicator of the
/// user's ranks (so colltune's messages never meet the application's; made
/// with `MPI_Comm_create_group`, so no attribute of the application's is
/// copied), errors returned rather than fatal, the rank-to-node map
/// computed once, and a one-sided window grown on demand. Create one per
/// communicator and keep it: nothing here is rebuilt per call.
pub struct Comm {
    handle: CommHandle,
    shape: Shape,
    window: RefCell<Option<Window>>,
    /// The node's shared-memory window, made at the first call that needs
    /// it and grown collectively (over the node) when a call needs more.
    shared_window: RefCell<Option<Rc<SharedWindow>>>,
    /// Calls that used the shared window so far: flags hold this count in
    /// their upper half, so a flag left by an earlier call never satisfies
    /// a wait of this one. The same on every rank of a node: they make the
    /// same calls.
    shared_calls: Cell<u64>,
    /// Per rank and flag of the shared window (`rank * SHARED_FLAGS +
    /// flag`): the highest value an await saw there. Flags only rise, so an
    /// await of at most that is met without touching the owner's cache
    /// line (the small-message root's wait for the call 16 back, say,
    /// loads the readers' flags once per 16 calls or so, not per call).
    flags_seen: RefCell<Vec<u64>>,
    /// The smallest part the library refused to allocate (on some rank)
    /// and why: calls that need as much fall back without asking again.
    shared_refused: RefCell<Option<(u64, String)>>,
}

impl fmt::Debug for Comm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Comm")
            .field("rank", &self.shape.rank)
            .field("size", &self.shape.size)
            .field("nodes", &self.shape.nodes.to_string())
            .finish()
    }
}

impl Comm {
    /// A private communicator of `comm`'s ranks (collective over it), and
    /// which ranks share a node (`MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)`).
    /// `COLLTUNE_NODES` (`2x3`, `3+2`) overrides the layout, for testing
    /// node-aware algorithms on one machine.
    ///
    /// # Safety
    /// `comm` must be a valid intra-communicator of an initialised MPI.
    pub unsafe fn from_raw(comm: ffi::MPI_Comm) -> Result<Comm, TransportError> {
        if ffi::comm_is_inter(comm)? {
            return Err(TransportError::InterCommunicator);
        }
        let handle = CommHandle::private_of(comm)?;
        let rank = ffi::comm_rank(handle.raw())?;
        let size = ffi::comm_size(handle.raw())?;
        let labels = node_labels(&handle, rank)?;
        Ok(Comm::assemble(handle, Shape::new(rank, size, labels)?))
    }

    /// A private communicator of `of`'s ranks made on `parent` (see
    /// [`CommHandle::private_from`]), of a shape found before.
    pub(crate) fn create(
        parent: ffi::MPI_Comm,
        of: ffi::MPI_Comm,
        shape: Shape,
    ) -> Result<Comm, MpiError> {
        Ok(Comm::assemble(CommHandle::private_from(parent, of)?, shape))
    }

    fn assemble(handle: CommHandle, shape: Shape) -> Comm {
        Comm {
            handle,
            shape,
            window: RefCell::new(None),
            shared_window: RefCell::new(None),
            shared_calls: Cell::new(0),
            flags_seen: RefCell::new(Vec::new()),
            shared_refused: RefCell::new(None),
        }
    }

    /// Its shape (rank, size, nodes).
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// `MPI_COMM_WORLD`.
    pub fn world() -> Result<Comm, TransportError> {
        // SAFETY: the world communicator is valid once MPI is initialised;
        // callers hold an rsmpi Universe (or the C ABI checked MPI_Initialized).
        unsafe { Comm::from_raw(ffi::comm_world()) }
    }

    /// Any rsmpi communicator.
    pub fn of<C: mpi::raw::AsRaw<Raw = ffi::MPI_Comm>>(c: &C) -> Result<Comm, TransportError> {
        // SAFETY: rsmpi communicators are valid handles.
        unsafe { Comm::from_raw(c.as_raw()) }
    }

    pub fn rank(&self) -> usize {
        self.shape.rank
    }
    pub fn size(&self) -> usize {
        self.shape.size
    }
    pub fn nodes(&self) -> &NodeMap {
        &self.shape.nodes
    }
    /// Which ranks share memory (`MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)`),
    /// as the MPI library's own node-aware components see them:
    /// [`Comm::nodes`] without the `COLLTUNE_NODES` override.
    pub fn shared_memory_nodes(&self) -> &NodeMap {
        &self.shape.shared
    }
    /// The private communicator.
    pub(crate) fn raw(&self) -> ffi::MPI_Comm {
        self.handle.raw()
    }

    /// The private communicator, as a bare handle.
    pub(crate) fn handle(&self) -> &CommHandle {
        &self.handle
    }

    /// Ranks `0..size` of this communicator as a communicator of their own
    /// (set up as [`Comm::from_raw`] does: a private communicator, its node map found);
    /// `None` on the other ranks. Collective over this communicator.
    pub fn prefix(&self, size: usize) -> Result<Option<Comm>, TransportError> {
        let member = self.rank() < size;
        let split = ffi::comm_split(self.raw(), member.then_some(0), self.rank())?;
        if !member {
            return Ok(None);
        }
        // SAFETY: the communicator just split off, freed only here.
        let split = unsafe { CommHandle::own(split) };
        // SAFETY: a valid intra-communicator of an initialised MPI.
        let comm = unsafe { Comm::from_raw(split.raw()) }?;
        split.free()?;
        Ok(Some(comm))
    }

    /// The communicator's window, at least `len` bytes (collective when it
    /// must grow; every rank asks for the same length in the same call).
    fn window(&self, len: u64) -> Result<(ffi::MPI_Win, *mut u8), MpiError> {
        let mut w = self.window.borrow_mut();
        if let Some(cur) = w.as_ref() {
            if cur.len >= len {
                return Ok((cur.win, cur.base));
            }
        }
        if let Some(mut old) = w.take() {
            ffi::win_free(&mut old.win)?;
        }
        let (win, base) = ffi::win_allocate(len.max(1), self.raw())?;
        *w = Some(Window { win, base, len });
        Ok((win, base))
    }
}

impl Drop for Comm {
    fn drop(&mut self) {
        if ffi::finalized() {
            return;
        }
        if let Some(mut w) = self.window.borrow_mut().take() {
            let _ = ffi::win_free(&mut w.win);
        }
        if let Some(w) = self.shared_window.borrow_mut().take() {
            if let Ok(w) = Rc::try_unwrap(w) {
                let _ = w.free();
            }
        }
        // The handle frees the communicator after this.
    }
}

impl Comm {
    /// The node's shared window, each part at least `len` data bytes
    /// (collective over the communicator when it is made or must grow:
    /// every rank asks for the same length in the same call). Where the
    /// library refuses it, [`TransportError::SharedMemoryUnfit`] on every
    /// rank, and at once for any later call that needs as much.
    pub(crate) fn shared_window(&self, len: u64) -> Result<Rc<SharedWindow>, TransportError> {
        // Parts grow in steps of 64 KiB: fewer collective regrowths, and a
        // rank that erroneously passed a few bytes more or less than the
        // root (on the other side of shm's small-message limit, say) asks
        // for the same window as the others instead of growing it alone.
        const GRAIN: u64 = 64 << 10;
        let len = len.div_ceil(GRAIN) * GRAIN;
        let mut w = self.shared_window.borrow_mut();
        if let Some(cur) = w.as_ref() {
            if cur.len >= len {
                return Ok(Rc::clone(cur));
            }
        }
        // A length the library refused before: refused again without
        // asking (every rank alike: they asked for the same).
        if let Some((refused, why)) = &*self.shared_refused.borrow() {
            if len >= *refused {
                return Err(TransportError::SharedMemoryUnfit(why.clone()));
            }
        }
        if let Some(old) = w.take() {
            match Rc::try_unwrap(old) {
                Ok(old) => old.free()?,
                Err(_) => {
                    return Err(MpiError {
                        call: "colltune shared window",
                        code: -1,
                        message: "the window must grow while a call still uses it".into(),
                    }
                    .into())
                }
            }
        }
        let fresh = match SharedWindow::new(&self.handle, self.shape.rank, self.shape.size, len) {
            Ok(fresh) => Rc::new(fresh),
            Err(TransportError::SharedMemoryUnfit(why)) => {
                *self.shared_refused.borrow_mut() = Some((len, why.clone()));
                return Err(TransportError::SharedMemoryUnfit(why));
            }
            Err(e) => return Err(e),
        };
        *w = Some(Rc::clone(&fresh));
        // Flags of a fresh window start at 0: calls count from there (an
        // await of the previous call is met at once in its first).
        self.shared_calls.set(0);
        *self.flags_seen.borrow_mut() = vec![0; self.shape.size * SHARED_FLAGS as usize];
        Ok(fresh)
    }

    /// The highest value an await saw in rank `r`'s flag `f` of the
    /// current shared window.
    pub(crate) fn flag_seen(&self, r: usize, f: u8) -> u64 {
        self.flags_seen.borrow()[r * SHARED_FLAGS as usize + f as usize]
    }

    /// Records that rank `r`'s flag `f` held `v`.
    pub(crate) fn saw_flag(&self, r: usize, f: u8, v: u64) {
        self.flags_seen.borrow_mut()[r * SHARED_FLAGS as usize + f as usize] = v;
    }

    /// Counts a call that uses the shared window; its number (from 1).
    pub(crate) fn next_shared_call(&self) -> u64 {
        let n = self.shared_calls.get() + 1;
        self.shared_calls.set(n);
        n
    }

    /// Whether a resolved algorithm runs here: one that goes through
    /// shared memory needs the communicator on one node (the library's
    /// nodes, [`Comm::shared_memory_nodes`]), or as a phase inside nodes,
    /// each node of [`Comm::nodes`] inside one of the library's. Err: why
    /// not. The same answer on every rank.
    pub fn shared_memory_fits(&self, c: Collective, spec: &AlgoSpec) -> Result<(), String> {
        self.shape.shared_memory_fits(c, spec)
    }
}

/// [`Comm::shared_memory_fits`] for a layout `nodes` on the library's
/// shared-memory nodes `shared`.
fn shared_memory_fits(
    c: Collective,
    spec: &AlgoSpec,
    nodes: &NodeMap,
    shared: &NodeMap,
) -> Result<(), String> {
    let Ok(info) = lookup(c, &spec.name) else {
        return Ok(());
    };
    if info.has(Restriction::SharedMemory) && shared.num_nodes() > 1 {
        return Err(format!(
            "{} needs ranks that share a node, and this communicator's {} ranks are on {} nodes",
            spec.name,
            shared.size(),
            shared.num_nodes()
        ));
    }
    for v in spec.params.values() {
        let inner = match v {
            ParamValue::Algo(a) => a.name.as_str(),
            ParamValue::Word(w) => w.as_str(),
            _ => continue,
        };
        let nested = lookup(c, inner).is_ok_and(|i| i.has(Restriction::SharedMemory));
        let split = (0..nodes.num_nodes()).any(|n| {
            let on = nodes.ranks_on(n);
            on.iter()
                .any(|&r| shared.node_of(r as usize) != shared.node_of(on[0] as usize))
        });
        if nested && split {
            return Err(format!(
                "{inner} inside each node needs each node's ranks to share memory, \
                 and COLLTUNE_NODES lays out nodes across the library's nodes"
            ));
        }
    }
    Ok(())
}

impl control::Raw for Comm {
    fn raw_handle(&self) -> ffi::MPI_Comm {
        self.raw()
    }
}

impl Control for Comm {}

/// For every rank of `comm`, the lowest rank of `comm` on the same
/// shared-memory node (a node label computed with one split and two small
/// collectives) and its socket where it is bound inside one (gathered in
/// the same word).
fn node_labels(comm: &CommHandle, rank: usize) -> Result<(Vec<u32>, Vec<Option<u32>>), MpiError> {
    // SAFETY: the communicator just split off, freed only here.
    let shared = unsafe { CommHandle::own(ffi::comm_split_shared(comm.raw(), rank)?) };
    let leader = shared.allreduce(rank as i32, Op::Min);
    shared.free()?;
    let socket = colltune_core::model::placed::own_socket().map_or(0, |s| u64::from(s) + 1);
    let both = comm.allgather((u64::from(leader? as u32) << 32) | socket)?;
    Ok(both
        .into_iter()
        .map(|w| ((w >> 32) as u32, (w as u32).checked_sub(1)))
        .unzip())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_memory_algorithms_fit_only_ranks_that_share_memory() {
        let spec = |t: &str| AlgoSpec::parse(t).unwrap();
        let one = NodeMap::single(5);
        let two = NodeMap::blocks(&[3, 2]).unwrap();
        let fits = |s: &str, nodes: &NodeMap, shared: &NodeMap| {
            shared_memory_fits(Collective::Bcast, &spec(s), nodes, shared)
        };
        assert!(fits("shm", &one, &one).is_ok());
        // Emulated nodes on one machine: shm on its own still shares memory.
        assert!(fits("shm", &two, &one).is_ok());
        assert!(fits("shm", &two, &two).unwrap_err().contains("2 nodes"));
        assert!(fits("hierarchical:intra=shm", &two, &two).is_ok());
        assert!(fits("hierarchical:intra=shm", &two, &one).is_ok());
        // A layout node across two of the library's nodes.
        let across = NodeMap::blocks(&[2, 3]).unwrap();
        assert!(fits("hierarchical:intra=shm", &across, &two).is_err());
        assert!(fits("hierarchical:intra=linear", &across, &two).is_ok());
        assert!(fits("binomial", &two, &two).is_ok());
    }
}
