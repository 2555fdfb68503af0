//! The C-facing side of the runtime selector, shared by the C ABI
//! (`capi/`: `libcolltune.so`, `colltune.h`) and the interposition library
//! (`preload/`), whose exported functions only forward here: `MPI_Init`,
//! `MPI_Init_thread`, `MPI_Bcast`, `MPI_Finalize` and their Fortran
//! bindings.
//!
//! A call runs colltune or the library's own `MPI_Bcast`, and every rank of
//! the communicator must take the same path (a rank in the library and
//! another in colltune wait for each other forever). So the path depends
//! only on what the ranks share: the communicator (its state is agreed by
//! all its ranks when it is set up), the root, and the bytes of the call's
//! type signature (count x `MPI_Type_size`). Never on a rank's own
//! datatype, buffer or count: MPI lets ranks describe the same signature
//! differently (a strided vector at the root, plain ints elsewhere;
//! `MPI_BOTTOM` and absolute addresses; another lower bound). Where a
//! rank's datatype does not lay its bytes out in signature order, the call
//! packs them into a scratch buffer (`MPI_Pack` at the root, `MPI_Unpack`
//! elsewhere) and the same algorithm runs on that.
//!
//! Calls the library handles (its own choice, arguments it rejects, more
//! than [`MAX_BYTES`], intercommunicators, communicators colltune could
//! not set up, before `MPI_Init` and after `MPI_Finalize`) go to
//! `PMPI_Bcast` with the user's own arguments, so errors, error classes
//! and error handlers are the library's.
//!
//! Per-communicator state hangs off the communicator itself as an MPI
//! attribute (`MPI_Comm_create_keyval`): created at the first call on that
//! communicator (collective, as the call is), freed by MPI when the
//! communicator is freed, never copied by `MPI_Comm_dup`. So a freed and
//! recycled handle never finds stale state, and nothing is rebuilt per call.
//! `MPI_COMM_WORLD`'s is set up by [`init`] and kept until [`finalize`].

mod broadcast;
mod device;
mod explain;
mod fortran;
mod handoff;
pub mod heap;
pub mod hot;
pub mod layers;
mod lifecycle;
pub mod nonblocking;
mod pairwise;
pub mod preload;
mod rules;
mod sessions;
mod site;
mod state;
mod types;

pub use broadcast::*;
pub use explain::*;
pub use fortran::*;
pub use lifecycle::*;
pub use pairwise::*;
use state::*;
use types::*;

use std::cell::Cell;
use std::collections::BTreeSet;
use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::select::{private, CommSelector, Private, Route, Routes, Selector};
use crate::transport::mpi::ffi::{self as cffi, Combiner, Datatype};
use crate::transport::mpi::{Comm, Control, MpiError, Op, Shape, TransportError};
use colltune_algorithms::{swap, Collective};
use hot::TypeInfo;
use mpi::ffi::{MPI_Comm, MPI_Datatype};

const SUCCESS: c_int = mpi::ffi::MPI_SUCCESS as c_int;
const ERR_OTHER: c_int = mpi::ffi::MPI_ERR_OTHER as c_int;
const ERR_INTERN: c_int = mpi::ffi::MPI_ERR_INTERN as c_int;

/// The most bytes one call moves through colltune's algorithms: they send
/// a segment, or the whole buffer, as one MPI message of bytes, at most
/// 2^31 - 1. Larger calls go to the library (every rank alike: the bytes
/// are the signature's).
pub const MAX_BYTES: u64 = i32::MAX as u64;

/// A communicator's state, the same on all its ranks (always boxed: an
/// attribute value).
#[allow(clippy::large_enum_variant)]
pub(crate) enum CommState {
    /// colltune's selector (its private communicator made when needed): `routes` decides and
    /// runs the direct path without a lock; `sel` (prepared schedules, the
    /// general executor, swaps, traces) is locked per call that needs it.
    Colltune {
        routes: Routes,
        sel: Mutex<CommSelector>,
    },
    /// The library's collectives only: an intercommunicator, or a
    /// communicator whose set-up failed on some rank.
    Library,
}

impl CommState {
    fn colltune(sel: CommSelector) -> CommState {
        CommState::Colltune {
            routes: sel.routes(),
            sel: Mutex::new(sel),
        }
    }
}

/// colltune's process state between [`init`] and [`finalize`]; found per
/// call through [`ACTIVE`] (one atomic load, no lock).
struct Global {
    selector: Arc<Selector>,
    keyval: c_int,
    /// The key of the `MPI_COMM_SELF` attribute whose deletion (at the
    /// start of `MPI_Finalize`) runs [`finalize`] when the application did
    /// not (`libcolltune.so` users); None under sessions (no
    /// `MPI_COMM_SELF`: the last `MPI_Session_finalize` runs it).
    self_keyval: Option<c_int>,
    /// `MPI_COMM_WORLD`'s state (set up by `init`; under sessions the
    /// library's: the world is not colltune's to use), owned as attribute
    /// values are (a box turned into a raw pointer), freed by `finalize`.
    world: *mut CommState,
    /// What other communicators are set up from.
    base: Base,
    /// The table's nonblocking and persistent choices, agreed at init
    /// (`select::nonblocking`), and the key of each communicator's
    /// decisions for them.
    nb: crate::select::nonblocking::Forcings,
    nb_keyval: Option<c_int>,
}

/// What a communicator's set-up starts from.
enum Base {
    /// The world model (`MPI_Init`): every rank agreed on one table and
    /// one node map at init.
    World {
        /// colltune's private `MPI_COMM_WORLD` (owned by `world`'s state):
        /// where the other communicators' private ones are made, and the
        /// communicator of local argument checks.
        private: MPI_Comm,
        /// `MPI_COMM_WORLD`'s shape: the node map others' shapes come from.
        shape: Shape,
    },
    /// MPI 4 sessions (`MPI_Session_init`, no `MPI_Init`): no world to
    /// agree on, so each communicator is set up as a world of its own at
    /// its first call (`sessions::set_up`).
    Sessions,
}

/// The live [`Global`] (a box turned into a raw pointer), or null before
/// [`init`] and from [`finalize`] on: then every call is the library's
/// (which reports calls outside MPI's lifetime). Written only under
/// [`LIFECYCLE`]; MPI forbids calls concurrent with `MPI_Finalize`.
static ACTIVE: AtomicPtr<Global> = AtomicPtr::new(std::ptr::null_mut());

/// Serialises [`init`] and [`finalize`].
static LIFECYCLE: Mutex<()> = Mutex::new(());

/// Bumped whenever a communicator's state is freed: per-thread caches of
/// (communicator, state) made before are stale (the handle may be reused).
static GENERATION: AtomicU64 = AtomicU64::new(0);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Prints `colltune: MSG` on stderr, each distinct message once per
/// process.
fn report(msg: &str) {
    static SEEN: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
    if lock(&SEEN).insert(msg.to_string()) {
        crate::say(msg);
    }
}

/// The library's entry `name` (a `PMPI_` function), found at run time:
/// for MPI 4's calls (sessions, large counts), which a library of MPI 3
/// (Open MPI 4.1) lacks and colltune must still link to.
fn library_entry(name: &std::ffi::CStr) -> Option<*mut c_void> {
    // SAFETY: dlsym with a NUL-terminated name in the global scope.
    let f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    (!f.is_null()).then_some(f)
}

/// This process's rank in `MPI_COMM_WORLD`, for messages; None under
/// sessions (no world model: `MPI_COMM_WORLD` may not be used).
fn world_rank() -> Option<usize> {
    cffi::world_rank()
}
