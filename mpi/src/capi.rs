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

mod device;
mod handoff;
pub mod hot;
pub mod preload;
mod rules;
mod site;

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
    /// not (`libcolltune.so` users).
    self_keyval: c_int,
    /// `MPI_COMM_WORLD`'s state (set up by `init`), owned as attribute
    /// values are (a box turned into a raw pointer), freed by `finalize`.
    world: *mut CommState,
    /// colltune's private `MPI_COMM_WORLD` (owned by `world`'s state):
    /// where the other communicators' private ones are made, and the
    /// communicator of local argument checks.
    world_private: MPI_Comm,
    /// `MPI_COMM_WORLD`'s shape: the node map others' shapes come from.
    world_shape: Shape,
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

/// The copy callback of colltune's attribute keys (communicators,
/// datatypes): a duplicate gets nothing of the original's.
unsafe extern "C" fn copy_attr<H>(
    _old: H,
    _key: c_int,
    _extra: *mut c_void,
    _val_in: *mut c_void,
    _val_out: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    // A duplicate gets its own state (and cache lines) at its first call.
    *flag = 0;
    SUCCESS
}

unsafe extern "C" fn delete_attr(
    _comm: MPI_Comm,
    _key: c_int,
    val: *mut c_void,
    _extra: *mut c_void,
) -> c_int {
    if !val.is_null() {
        // Before the free: no thread's cache may hand this state out again.
        GENERATION.fetch_add(1, Ordering::AcqRel);
        drop(Box::from_raw(val as *mut CommState));
    }
    SUCCESS
}

/// `MPI_COMM_SELF`'s attribute goes first thing in `MPI_Finalize`: colltune
/// finalises then if the application did not.
unsafe extern "C" fn delete_self_attr(
    _comm: MPI_Comm,
    _key: c_int,
    _val: *mut c_void,
    _extra: *mut c_void,
) -> c_int {
    finalize();
    SUCCESS
}

/// Prints `colltune: MSG` on stderr, each distinct message once per
/// process.
fn report(msg: &str) {
    static SEEN: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
    if lock(&SEEN).insert(msg.to_string()) {
        crate::say(msg);
    }
}

fn world_rank() -> usize {
    cffi::comm_rank(cffi::comm_world()).unwrap_or(0)
}

/// Whether `mine` succeeded on every rank of `comm` (the user's
/// communicator: the one every rank surely has); one allreduce. The lowest
/// rank that failed says why (`what` failed).
fn agree(comm: MPI_Comm, mine: Result<(), String>, what: &str) -> bool {
    let (rank, size) = match (cffi::comm_rank(comm), cffi::comm_size(comm)) {
        (Ok(r), Ok(s)) => (r as i32, s as i32),
        (Err(e), _) | (_, Err(e)) => {
            report(&format!("warning: {what}: {e}"));
            return false;
        }
    };
    let vote = if mine.is_ok() { size } else { rank };
    let mut first = -1i32;
    // SAFETY: one int in, one out; comm is the caller's valid communicator.
    let agreed = unsafe {
        cffi::allreduce(
            (&vote as *const i32).cast(),
            (&mut first as *mut i32).cast(),
            1,
            Datatype::I32,
            Op::Min,
            comm,
        )
    };
    match (agreed, mine) {
        (Err(e), _) => {
            report(&format!("warning: {what}: {e}"));
            false
        }
        (Ok(()), Err(why)) if first == rank => {
            report(&format!(
                "warning: rank {} could not set up {what}: {why}; the MPI library's collectives run there",
                world_rank()
            ));
            false
        }
        (Ok(()), _) => first == size,
    }
}

/// Loads the table (`COLLTUNE_TABLE`) and settings and sets up
/// `MPI_COMM_WORLD`; collective over it. Idempotent. Every rank uses
/// colltune or none does (one allreduce agrees on the set-up). With
/// `COLLTUNE_STRICT=1` a bad table aborts the job with its message;
/// otherwise it is a warning and the library's own collectives run.
pub fn init() -> c_int {
    let _g = lock(&LIFECYCLE);
    if !ACTIVE.load(Ordering::Acquire).is_null() {
        return SUCCESS;
    }
    if !cffi::initialized() || cffi::finalized() {
        report("colltune_init: MPI is not initialised: call it after MPI_Init");
        return ERR_OTHER;
    }
    // First, whatever else fails: whether the rules handed to Open MPI at
    // MPI_Init are the same on every rank (where not, colltune's own
    // routes wherever the library's broadcast could differ).
    handoff::agree();
    let keyval = cffi::comm_create_keyval(Some(copy_attr), Some(delete_attr));
    let self_keyval = cffi::comm_create_keyval(Some(copy_attr), Some(delete_self_attr));
    let world = Comm::world();
    let mine = match (&keyval, &self_keyval, &world) {
        (Ok(_), Ok(_), Ok(_)) => Ok(()),
        (Err(e), _, _) | (_, Err(e), _) => Err(e.to_string()),
        (_, _, Err(e)) => Err(e.to_string()),
    };
    let free_keys = |keyval: Result<c_int, MpiError>, self_keyval: Result<c_int, MpiError>| {
        for mut k in [keyval, self_keyval].into_iter().flatten() {
            let _ = cffi::comm_free_keyval(&mut k);
        }
    };
    if !agree(cffi::comm_world(), mine, "MPI_COMM_WORLD") {
        free_keys(keyval, self_keyval);
        return ERR_OTHER;
    }
    let (Ok(keyval), Ok(self_keyval), Ok(world)) = (keyval, self_keyval, world) else {
        return ERR_OTHER;
    };
    let selector = match crate::select::load(&world) {
        Ok(s) => Arc::new(s),
        Err(e) => {
            // COLLTUNE_STRICT=1: a bad table is fatal, on every rank alike.
            if world.rank() == 0 {
                crate::say(&format!(
                    "error: {e}\ncolltune: COLLTUNE_STRICT=1, so the job stops"
                ));
            }
            // Every rank fails alike; wait until rank 0 has said why, since
            // the first abort kills the others.
            let _ = world.barrier();
            cffi::abort(cffi::comm_world(), 3);
            return ERR_OTHER;
        }
    };
    let world_private = world.raw();
    let world_shape = world.shape().clone();
    let world = Box::into_raw(Box::new(CommState::colltune(crate::select::for_private(
        &selector,
        Private::world(private::world(world)),
    ))));
    // A local call; where it fails, colltune_finalize / MPI_Finalize of the
    // preload still finalise.
    // SAFETY: MPI_COMM_SELF is valid; the callback ignores the value.
    let _ = unsafe { cffi::comm_set_attr(cffi::comm_self(), self_keyval, std::ptr::null_mut()) };
    let g = Box::into_raw(Box::new(Global {
        selector,
        keyval,
        self_keyval,
        world,
        world_private,
        world_shape,
    }));
    hot::start();
    ACTIVE.store(g, Ordering::Release);
    SUCCESS
}

/// Frees colltune's state (before `MPI_Finalize`, or first thing in it).
pub fn finalize() -> c_int {
    let _l = lock(&LIFECYCLE);
    handoff::retire();
    hot::clear();
    let g = ACTIVE.swap(std::ptr::null_mut(), Ordering::AcqRel);
    if g.is_null() {
        return SUCCESS;
    }
    GENERATION.fetch_add(1, Ordering::AcqRel);
    // SAFETY: the box init made, taken out of ACTIVE above; no call is
    // running (MPI_Finalize and colltune_finalize are called once every
    // call has returned).
    let mut g = unsafe { Box::from_raw(g) };
    if !cffi::finalized() {
        // Communicators still alive keep their state until MPI frees
        // them; the key goes once they do. (Freeing the MPI_COMM_SELF key
        // from its own delete callback is allowed: the attribute goes on.)
        let _ = cffi::comm_free_keyval(&mut g.keyval);
        let _ = cffi::comm_free_keyval(&mut g.self_keyval);
    }
    // SAFETY: as above.
    drop(unsafe { Box::from_raw(g.world) });
    SUCCESS
}

/// `MPI_Init` of the interposition library: the library's, then colltune's.
///
/// # Safety
/// As for `MPI_Init`.
pub unsafe fn mpi_init(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int {
    handoff::before_init();
    let rc = cffi::user_init(argc, argv);
    handoff::after_init();
    if rc == SUCCESS {
        init();
    }
    rc
}

/// `MPI_Init_thread` of the interposition library.
///
/// # Safety
/// As for `MPI_Init_thread`.
pub unsafe fn mpi_init_thread(
    argc: *mut c_int,
    argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    handoff::before_init();
    let rc = cffi::user_init_thread(argc, argv, required, provided);
    handoff::after_init();
    if rc == SUCCESS {
        init();
    }
    rc
}

/// `MPI_Finalize` of the interposition library: colltune's state, then the
/// library's.
pub fn mpi_finalize() -> c_int {
    finalize();
    cffi::user_finalize()
}

/// Per thread, the last few (communicator, state, generation) found, so a
/// call finds its communicator's state without asking MPI (an attribute
/// lookup is a hash lookup, under a lock where threads are on).
const SEEN: usize = 4;
thread_local! {
    static SEEN_COMMS: [Cell<(usize, usize, u64)>; SEEN] =
        const { [const { Cell::new((0, 0, u64::MAX)) }; SEEN] };
    static SEEN_NEXT: Cell<usize> = const { Cell::new(0) };
}

/// The communicator's state, set up (collectively: this is its first
/// call on every rank) when it has none. None: the handle is not one MPI
/// knows (the library says so).
///
/// # Safety
/// `comm` is a communicator handle (valid or not: MPI checks); `g` is the
/// live [`Global`].
#[inline]
unsafe fn state(g: &Global, comm: MPI_Comm) -> Option<*const CommState> {
    if comm == cffi::comm_world() {
        return Some(g.world);
    }
    let gen = GENERATION.load(Ordering::Acquire);
    let key = comm.0 as usize;
    let hit = SEEN_COMMS.with(|seen| {
        seen.iter().find_map(|e| {
            let (c, p, g) = e.get();
            (c == key && g == gen).then_some(p as *const CommState)
        })
    });
    if hit.is_some() {
        return hit;
    }
    let found = state_slow(g, comm)?;
    SEEN_COMMS.with(|seen| {
        let k = SEEN_NEXT.with(|n| {
            let k = n.get();
            n.set((k + 1) % SEEN);
            k
        });
        seen[k].set((key, found as usize, gen));
    });
    Some(found)
}

/// [`state`] through the communicator's attribute, setting it up when it
/// has none.
///
/// # Safety
/// As for [`state`].
#[cold]
unsafe fn state_slow(g: &Global, comm: MPI_Comm) -> Option<*const CommState> {
    match cffi::comm_get_attr(comm, g.keyval) {
        Ok(Some(p)) => return Some(p as *const CommState),
        Ok(None) => {}
        Err(_) => return None,
    }
    let st = match cffi::comm_is_inter(comm) {
        // colltune tunes intra-communicator collectives
        Ok(true) => CommState::Library,
        Ok(false) => set_up(g, comm),
        Err(_) => return None,
    };
    let raw = Box::into_raw(Box::new(st));
    if cffi::comm_set_attr(comm, g.keyval, raw.cast()).is_err() {
        drop(Box::from_raw(raw));
        return None;
    }
    Some(raw)
}

/// The live [`Global`], if colltune is running.
#[inline]
fn active<'a>() -> Option<&'a Global> {
    // SAFETY: non-null only between init and finalize, which frees it only
    // once no call is running.
    unsafe { ACTIVE.load(Ordering::Acquire).as_ref() }
}

/// Sets colltune up on an intra-communicator (collective): its shape
/// (ranks, nodes; no communicator made: its private communicator is made
/// at its first call that runs one of colltune's algorithms,
/// `select::private`), agreed by every rank; where it failed on any rank,
/// the library's collectives on all.
///
/// # Safety
/// `comm` is a valid intra-communicator.
unsafe fn set_up(g: &Global, comm: MPI_Comm) -> CommState {
    let shape = Shape::of(comm, &g.world_shape);
    let size = cffi::comm_size(comm).unwrap_or(0);
    let mine = shape.as_ref().map(|_| ()).map_err(|e| e.to_string());
    let what = format!(
        "a communicator of {size} rank{}",
        if size == 1 { "" } else { "s" }
    );
    let agreed = agree(comm, mine, &what);
    match shape {
        Ok(s) if agreed => CommState::colltune(crate::select::for_private(
            &g.selector,
            Private::lazy(comm, s, g.world_private),
        )),
        _ => CommState::Library,
    }
}

/// Whether elements of `dt` are their type signature's bytes, in order,
/// back to back from the buffer: predefined types without padding (size ==
/// extent, lower bounds 0, true extent == size) and chains of contiguous
/// or dup types over them. Anything else is packed, even when its size,
/// extent and true extent agree with lower bound 0: an indexed type with
/// displacements {1, 0} holds its elements out of order.
fn contiguous(dt: MPI_Datatype) -> Result<bool, MpiError> {
    // A derived type obtained from MPI_Type_get_contents is ours to free.
    fn release(t: &mut Option<MPI_Datatype>) {
        if let Some(mut d) = t.take() {
            if cffi::type_combiner(d).is_ok_and(|c| c != Combiner::Named) {
                let _ = cffi::type_free(&mut d);
            }
        }
    }
    fn dense(t: MPI_Datatype) -> Result<bool, MpiError> {
        let size = cffi::type_size(t)? as isize;
        let (lb, ext) = cffi::type_extent(t)?;
        let (tlb, text) = cffi::type_true_extent(t)?;
        Ok(lb == 0 && tlb == 0 && ext == size && text == size)
    }
    let mut t = dt;
    let mut owned = None;
    let out = loop {
        match cffi::type_combiner(t) {
            Err(e) => break Err(e),
            Ok(Combiner::Named) => break dense(t),
            Ok(Combiner::Other) => break Ok(false),
            Ok(c @ (Combiner::Dup | Combiner::Contiguous)) => match cffi::type_inner(t, c) {
                Err(e) => break Err(e),
                Ok(inner) => {
                    release(&mut owned);
                    owned = Some(inner);
                    t = inner;
                }
            },
        }
    };
    release(&mut owned);
    out
}

fn packed_all(pos: usize, n: usize) -> Result<(), MpiError> {
    if pos == n {
        return Ok(());
    }
    Err(MpiError {
        call: "MPI_Pack",
        code: ERR_INTERN,
        message: format!("packed {pos} bytes of a type signature of {n} bytes"),
    })
}

/// Reports `e` and hands its code to `comm`'s error handler, as the
/// library does with its own errors (by default the job ends).
fn error_code(comm: MPI_Comm, e: &TransportError) -> c_int {
    report(&format!("error: {e}"));
    let code = match e {
        TransportError::Mpi(m) if m.code > 0 => m.code,
        _ => ERR_OTHER,
    };
    cffi::comm_call_errhandler(comm, code);
    code
}

/// What colltune caches of a predefined datatype: its size and whether
/// its elements are their signature's bytes back to back. Predefined
/// datatypes live as long as MPI and never change, so the cache is
/// process-wide and never invalidated; derived ones (whose handles are
/// reused once freed) are asked about per call.
mod typecache {
    use super::*;

    const SLOTS: usize = 32;
    const EMPTY: usize = 0;
    const BUSY: usize = usize::MAX;
    const CONTIGUOUS: u64 = 1 << 63;

    /// Write-once slots: a handle (EMPTY, BUSY while being written, then
    /// the handle for good) and its properties, written before the handle.
    static TYPES: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(EMPTY) }; SLOTS];
    static PROPS: [AtomicU64; SLOTS] = [const { AtomicU64::new(0) }; SLOTS];

    fn key(dt: MPI_Datatype) -> usize {
        dt.0 as usize
    }

    /// (size, contiguous) of a predefined datatype seen before.
    #[inline]
    pub fn get(dt: MPI_Datatype) -> Option<(u64, bool)> {
        let k = key(dt);
        for (t, p) in TYPES.iter().zip(&PROPS) {
            match t.load(Ordering::Acquire) {
                EMPTY => return None,
                x if x == k => {
                    let v = p.load(Ordering::Relaxed);
                    return Some((v & !CONTIGUOUS, v & CONTIGUOUS != 0));
                }
                _ => {}
            }
        }
        None
    }

    /// Remembers a predefined datatype (once the library accepted it).
    pub fn put(dt: MPI_Datatype, size: u64, contiguous: bool) {
        let k = key(dt);
        if k == EMPTY || k == BUSY || size >= CONTIGUOUS {
            return;
        }
        for (t, p) in TYPES.iter().zip(&PROPS) {
            match t.compare_exchange(EMPTY, BUSY, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => {
                    p.store(
                        size | if contiguous { CONTIGUOUS } else { 0 },
                        Ordering::Relaxed,
                    );
                    t.store(k, Ordering::Release);
                    return;
                }
                Err(x) if x == k => return,
                Err(_) => {}
            }
        }
    }
}

/// The bytes of one element of `dt` and, when known cheaply, whether its
/// elements lie in signature order (None: ask [`contiguous`]); None when the
/// library would not take `count` elements of `dt` at `buffer` as a message
/// (then it handles the call). Predefined datatypes are answered from
/// [`typecache`] (the library's check is only redone for a null buffer);
/// others through the library per call: its own checks with a message to
/// `MPI_PROC_NULL` on `comm` (colltune's private world: nothing reaches the
/// user's error handler), `MPI_Type_size_x`, `MPI_Type_get_envelope`.
///
/// # Safety
/// `comm` is a valid communicator.
#[inline]
unsafe fn datatype(
    buffer: *mut c_void,
    count: c_int,
    dt: MPI_Datatype,
    comm: MPI_Comm,
) -> Option<(u64, Option<bool>)> {
    let probe = || cffi::check_message(buffer, count, dt, comm).is_ok();
    if let Some((size, contiguous)) = typecache::get(dt) {
        // The library's type checks passed once and hold for good; its
        // buffer check only concerns a null buffer.
        if (buffer.is_null() && count > 0) && !probe() {
            return None;
        }
        return Some((size, Some(contiguous)));
    }
    if !probe() {
        return None;
    }
    let size = cffi::type_size(dt).ok()?;
    if cffi::type_combiner(dt).ok()? != Combiner::Named {
        return Some((size, None));
    }
    let dense = contiguous(dt).ok()?;
    typecache::put(dt, size, dense);
    Some((size, Some(dense)))
}

/// `MPI_Bcast` through colltune, or the library's where it decides
/// (see the module documentation).
///
/// The call path, lean for calls repeated on one communicator: one atomic
/// load (colltune running), the communicator's state from a per-thread
/// cache (the attribute lookup only the first time a thread meets it), the
/// datatype from a process-wide cache (predefined types), the decision (a
/// binary search) and one match on its [`Route`]; the library's choice,
/// and a tree that fits one segment ([`Route::Direct`]: plain sends and
/// receives), take no lock and allocate nothing. Only [`Route::Plan`]
/// locks the communicator's selector for its prepared schedules.
///
/// # Safety
/// As for `MPI_Bcast`: `buffer` holds `count` elements of `datatype`.
pub unsafe fn bcast(
    buffer: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    // Open MPI runs this call's rule itself (the handoff): one size check.
    if let Some(rc) = handoff::pass(buffer, count, datatype, root, comm) {
        return rc;
    }
    bcast_kept(buffer, count, datatype, root, comm, false)
}

/// [`bcast`] for a call the handoff does not take (its cache said so, or
/// [`handoff::pass`] did). `remember`: the interposition library's call,
/// which looks in [`hot`] first, so the communicator's state goes there
/// for the next call.
///
/// # Safety
/// As for `MPI_Bcast`.
unsafe fn bcast_kept(
    buffer: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    remember: bool,
) -> c_int {
    let library = move || cffi::user_bcast(buffer, count, datatype, root, comm);
    // Outside colltune's lifetime (so outside MPI's), and arguments the
    // library rejects before any communication: its own MPI_Bcast reports
    // them.
    let Some(g) = active() else {
        return library();
    };
    if comm == cffi::comm_null()
        || datatype == cffi::datatype_null()
        || count < 0
        || buffer == cffi::in_place()
    {
        return library();
    }
    let Some(state) = state(g, comm) else {
        return library();
    };
    // A predefined datatype met before: classified once, for good; else
    // what its line says (written by the handoff's check of this call),
    // else, for the interposition's call, classified here once (after the
    // library's own checks of the call) for this call and the line.
    let mut probed = false;
    let mut known = typecache::get(datatype)
        .map(|(size, dense)| TypeInfo {
            size,
            dense: Some(dense),
            derived: false,
        })
        .or_else(|| {
            hot::kept(crate::abi::to_reg(datatype), crate::abi::to_reg(comm)).map(|(_, info)| info)
        });
    if let (true, None, CommState::Colltune { routes, .. }) = (remember, known, &*state) {
        let Some((size, dense)) = self::datatype(buffer, count, datatype, routes.raw()) else {
            return library();
        };
        let derived = dense.is_none();
        let dense = match dense {
            Some(d) => Some(d),
            None => contiguous(datatype).ok(),
        };
        known = Some(TypeInfo {
            size,
            dense,
            derived,
        });
        probed = true;
    }
    if let (true, Some(info)) = (remember, known) {
        if !hot::holds(comm, datatype, state) {
            // The sizes the library runs unchanged: those handed off, and
            // those whose rule is the library's own decision (all of them
            // without a table, or on a communicator colltune leaves alone).
            let (handed, plain) = match &*state {
                CommState::Colltune { routes, .. } => {
                    (handoff::ranges_of(routes.size()), routes.plain())
                }
                CommState::Library => (&[][..], vec![(0, u64::MAX)]),
            };
            let ranges = hot::union(handed, &plain);
            hot::fill(
                comm,
                datatype,
                info.size,
                Some(info),
                &ranges,
                handed,
                state,
            );
        }
    }
    // A derived type's checks just ran (in `datatype`): not again.
    let known = known.map(|k| TypeInfo {
        derived: k.derived && !probed,
        ..k
    });
    bcast_on(&*state, known, buffer, count, datatype, root, comm)
}

/// [`bcast_kept`] once the communicator's `state` is known (and, from
/// [`hot`] or [`typecache`], the predefined datatype's classification:
/// found once, carried from there on).
///
/// # Safety
/// As for `MPI_Bcast`; `count` >= 0; `state` is `comm`'s, alive.
unsafe fn bcast_on(
    state: &CommState,
    known: Option<TypeInfo>,
    buffer: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    let library = move || cffi::user_bcast(buffer, count, datatype, root, comm);
    let CommState::Colltune { routes, sel } = state else {
        return library();
    };
    let Some(root) = usize::try_from(root).ok().filter(|&r| r < routes.size()) else {
        return library();
    };
    // The library's own checks of the datatype and buffer (committed,
    // valid, data where the buffer says), without a message: those of a
    // predefined type passed once and hold for good, so only a null
    // buffer is checked again; a derived type's run at every call (its
    // size and layout, classified once, are the handle's).
    let checked = match known {
        Some(TypeInfo {
            size,
            dense,
            derived,
        }) => {
            if buffer == cffi::in_place()
                || ((derived || (buffer.is_null() && count > 0))
                    && cffi::check_message(buffer, count, datatype, routes.raw()).is_err())
            {
                return library();
            }
            Some((size, dense))
        }
        None => self::datatype(buffer, count, datatype, routes.raw()),
    };
    let Some((size, dense)) = checked else {
        return library();
    };
    let Some(bytes) = size.checked_mul(count as u64) else {
        return library();
    };
    // From here only what every rank shares decides: the bytes, the root,
    // the communicator.
    if bytes > MAX_BYTES {
        if routes.tracing() {
            lock(sel).trace(
                "bcast",
                bytes,
                Some(root),
                &"the MPI library's own collective (more than 2^31 - 1 bytes)",
            );
        }
        return library();
    }
    let route = routes.bcast(bytes);
    if let Route::Library(choice, slot) = route {
        // Traced (else `handoff::pass` took it): Open MPI's rules file runs
        // this rule on the user's communicator.
        if handoff::covers(routes.size(), bytes) {
            if routes.tracing() {
                let why = choice.handed_off();
                lock(sel).trace("bcast", bytes, Some(root), &why);
            }
            return library();
        }
        if let Some(f) = choice.library.filter(|f| !f.is_default()) {
            // The forced communicator, once made: one atomic load.
            if let (Some(forced), false) = (slot.get(), routes.tracing()) {
                return forced_bcast(forced, buffer, count, datatype, root, comm);
            }
            let forced = {
                let sel = lock(sel);
                let forced = slot.set(sel.library_comm(f));
                if routes.tracing() {
                    let why = if forced.is_some() {
                        format!("{choice}")
                    } else {
                        format!("{choice}; forcing is unavailable here: the MPI library's default")
                    };
                    sel.trace("bcast", bytes, Some(root), &why);
                }
                forced
            };
            return forced_bcast(forced, buffer, count, datatype, root, comm);
        }
        if routes.tracing() {
            lock(sel).trace("bcast", bytes, Some(root), choice);
        }
        return library();
    }
    // colltune's own route reads and writes the buffer from the host: a
    // GPU's memory goes to the (GPU-aware) library instead, unchanged.
    if bytes > 0 && device::is_device(buffer) {
        if routes.tracing() {
            let why = format!(
                "the MPI library's own collective (the buffer is {} device memory, which colltune's routes do not touch)",
                device::runtime().unwrap_or("GPU")
            );
            lock(sel).trace("bcast", bytes, Some(root), &why);
        }
        return library();
    }
    match bcast_bytes(
        routes, sel, route, buffer, count, datatype, dense, bytes, root,
    ) {
        Ok(()) => SUCCESS,
        Err(e) => error_code(comm, &e),
    }
}

/// A table's choice of the library's own algorithm (`ompi_tuned`,
/// `ompi_adapt`, `mpich`): the user's own arguments to `PMPI_Bcast`, as the
/// rule's [`Forcing`](crate::select::Forcing) runs it (set up at the rule's
/// first call, collectively): on a private communicator of its ranks with the
/// algorithm forced, and/or with the library's variables written around
/// the call; the library's default on the user's communicator where
/// forcing is unavailable (None, warned once). Errors on a forced one go to
/// the user's communicator's handler, as the library's own would.
///
/// # Safety
/// As for `MPI_Bcast`.
#[inline]
unsafe fn forced_bcast(
    forced: Option<crate::select::Forcing>,
    buffer: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    root: usize,
    comm: MPI_Comm,
) -> c_int {
    let Some(forced) = forced else {
        return cffi::user_bcast(buffer, count, datatype, root as c_int, comm);
    };
    let rc = forced.run(comm, |c| {
        cffi::user_bcast(buffer, count, datatype, root as c_int, c)
    });
    if rc != SUCCESS && forced.comm().is_some() {
        cffi::comm_call_errhandler(comm, rc);
    }
    rc
}

/// Runs `route` on `buf`: [`Route::Direct`] without a lock, [`Route::Plan`]
/// through the communicator's selector.
///
/// # Safety
/// `routes` belong to `sel`'s communicator, which is alive.
unsafe fn run_route(
    routes: &Routes,
    sel: &Mutex<CommSelector>,
    route: Route<'_>,
    buf: &mut [u8],
    root: usize,
) -> Result<(), TransportError> {
    match route {
        Route::Direct(choice, tree) => {
            if routes.tracing() {
                let what = format_args!("{choice}; direct path");
                lock(sel).trace("bcast", buf.len() as u64, Some(root), &what);
            }
            routes.direct(tree, buf, root)?;
        }
        Route::Plan(_) | Route::Library(..) => {
            lock(sel).bcast(buf, root)?;
        }
    }
    Ok(())
}

/// Runs the chosen algorithm on the call's `bytes`: in the user's buffer
/// when its datatype lays them out in signature order, else in a packed
/// copy (packed at the root, unpacked elsewhere).
///
/// # Safety
/// `buffer` holds `count` elements of `dt`, `bytes` of signature; `dense`
/// is whether `dt` is contiguous, where known.
#[allow(clippy::too_many_arguments)]
unsafe fn bcast_bytes(
    routes: &Routes,
    sel: &Mutex<CommSelector>,
    route: Route<'_>,
    buffer: *mut c_void,
    count: c_int,
    dt: MPI_Datatype,
    dense: Option<bool>,
    bytes: u64,
    root: usize,
) -> Result<(), TransportError> {
    let n = bytes as usize;
    if n == 0 {
        return run_route(routes, sel, route, &mut [], root);
    }
    if !buffer.is_null()
        && match dense {
            Some(d) => d,
            None => contiguous(dt)?,
        }
    {
        let buf = std::slice::from_raw_parts_mut(buffer.cast(), n);
        return run_route(routes, sel, route, buf, root);
    }
    let mut packed = vec![0u8; n];
    let dup = routes.raw();
    let at_root = routes.rank() == root;
    if at_root {
        packed_all(cffi::pack(buffer, count, dt, &mut packed, dup)?, n)?;
    }
    run_route(routes, sel, route, &mut packed, root)?;
    if !at_root {
        cffi::unpack(&packed, buffer, count, dt, dup)?;
    }
    Ok(())
}

/// `MPI_Bcast` from Open MPI's Fortran bindings (`mpi_bcast_`,
/// `mpi_bcast_f08`, ...), as the library's own Fortran binding does it:
/// handles converted with `MPI_Comm_f2c` / `MPI_Type_f2c`, Fortran's
/// `MPI_BOTTOM` turned into C's, the return code into `ierr` (when given).
///
/// # Safety
/// As for Fortran's `MPI_BCAST`: integer arguments by reference.
pub unsafe fn fortran_bcast(
    buffer: *mut c_void,
    count: *const c_int,
    datatype: *const c_int,
    root: *const c_int,
    comm: *const c_int,
    ierr: *mut c_int,
) {
    let c_comm = cffi::comm_f2c(*comm);
    let c_type = cffi::type_f2c(*datatype);
    let buffer = if cffi::is_fortran_bottom(buffer) {
        std::ptr::null_mut() // MPI_BOTTOM
    } else {
        buffer
    };
    // As the interposition library's C entry: a call whose C line knows
    // the communicator's state and the datatype goes straight to the
    // decision; else the full path writes that line (`remember`; nothing
    // is written where no lines are attached), which the Fortran line is
    // made from.
    let line = hot::kept(crate::abi::to_reg(c_type), crate::abi::to_reg(c_comm));
    let rc = match line.and_then(|(state, info)| Some((state.as_ref()?, info))) {
        Some((state, info)) => bcast_on(state, Some(info), buffer, *count, c_type, *root, c_comm),
        None => match handoff::pass(buffer, *count, c_type, *root, c_comm) {
            Some(rc) => rc,
            None => bcast_kept(buffer, *count, c_type, *root, c_comm, true),
        },
    };
    // The next such call: straight from its own line, where handed off.
    hot::fill_fortran(*comm, *datatype, c_comm, c_type);
    if !ierr.is_null() {
        *ierr = rc;
    }
}

/// `MPI_INIT` from Fortran (`mpi_init_`, `mpi_init_f08`, ...): the
/// library's with no command line, as its own Fortran binding does.
///
/// # Safety
/// `ierr` is null or writable.
pub unsafe fn fortran_init(ierr: *mut c_int) {
    let (mut argc, mut argv): (c_int, *mut *mut c_char) = (0, std::ptr::null_mut());
    let rc = mpi_init(&mut argc, &mut argv);
    if !ierr.is_null() {
        *ierr = rc;
    }
}

/// `MPI_INIT_THREAD` from Fortran.
///
/// # Safety
/// `required` is readable, `provided` writable, `ierr` null or writable.
pub unsafe fn fortran_init_thread(required: *const c_int, provided: *mut c_int, ierr: *mut c_int) {
    let (mut argc, mut argv): (c_int, *mut *mut c_char) = (0, std::ptr::null_mut());
    let mut got: c_int = 0;
    let rc = mpi_init_thread(&mut argc, &mut argv, *required, &mut got);
    if !provided.is_null() {
        *provided = got;
    }
    if !ierr.is_null() {
        *ierr = rc;
    }
}

/// `MPI_FINALIZE` from Fortran.
///
/// # Safety
/// `ierr` is null or writable.
pub unsafe fn fortran_finalize(ierr: *mut c_int) {
    let rc = mpi_finalize();
    if !ierr.is_null() {
        *ierr = rc;
    }
}

/// Pairwise swap (`colltune_swap`); `pairing` 0: neighbours, 1: halves.
/// Decided as [`bcast`] is: by the communicator and the bytes only.
///
/// # Safety
/// `sendbuf` and `recvbuf` each hold `count` elements of `datatype`.
pub unsafe fn swap_call(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    pairing: c_int,
    comm: MPI_Comm,
) -> c_int {
    let pairing = if pairing == 1 { "halves" } else { "neighbors" };
    let library = move || {
        let rank = cffi::comm_rank(comm).unwrap_or(0);
        let size = cffi::comm_size(comm).unwrap_or(0);
        match swap::partner(rank, size, pairing) {
            Some(q) => {
                cffi::user_sendrecv(sendbuf, recvbuf, count, datatype, q as c_int, 0x5A, comm)
            }
            None => SUCCESS,
        }
    };
    let Some(g) = active() else {
        return library();
    };
    if comm == cffi::comm_null() || datatype == cffi::datatype_null() || count < 0 {
        return library();
    }
    let Some(state) = state(g, comm) else {
        return library();
    };
    let CommState::Colltune { sel, .. } = &*state else {
        return library();
    };
    let sel = lock(sel);
    if cffi::check_message(sendbuf, count, datatype, sel.private().probe()).is_err() {
        return library();
    }
    let Some(bytes) = cffi::type_size(datatype)
        .ok()
        .and_then(|s| s.checked_mul(count as u64))
        .filter(|&b| b <= MAX_BYTES)
    else {
        return library();
    };
    match swap_bytes(&sel, sendbuf, recvbuf, count, datatype, bytes, pairing) {
        Ok(()) => SUCCESS,
        Err(e) => error_code(comm, &e),
    }
}

/// # Safety
/// As for [`swap_call`].
unsafe fn swap_bytes(
    sel: &CommSelector,
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    dt: MPI_Datatype,
    bytes: u64,
    pairing: &str,
) -> Result<(), TransportError> {
    let n = bytes as usize;
    if n == 0 {
        sel.swap(&mut [], &mut [], pairing)?;
        return Ok(());
    }
    if !sendbuf.is_null() && !recvbuf.is_null() && contiguous(dt)? {
        // The schedule only reads the outgoing buffer.
        let out = std::slice::from_raw_parts_mut(sendbuf as *mut u8, n);
        let inn = std::slice::from_raw_parts_mut(recvbuf.cast(), n);
        sel.swap(out, inn, pairing)?;
        return Ok(());
    }
    let dup = sel.private().probe();
    let (mut out, mut inn) = (vec![0u8; n], vec![0u8; n]);
    packed_all(cffi::pack(sendbuf, count, dt, &mut out, dup)?, n)?;
    sel.swap(&mut out, &mut inn, pairing)?;
    // The odd rank out receives nothing.
    if swap::partner(sel.shape().rank(), sel.shape().size(), pairing).is_some() {
        cffi::unpack(&inn, recvbuf, count, dt, dup)?;
    }
    Ok(())
}

/// What colltune would run for `bytes` on `comm` (collective the first
/// time a communicator is seen).
///
/// # Safety
/// `comm` is a valid communicator.
pub unsafe fn explain(comm: MPI_Comm, bytes: u64) -> String {
    let library = "the MPI library's own collectives";
    if !cffi::initialized() || cffi::finalized() || comm == cffi::comm_null() {
        return format!("MPI is not running: {library}");
    }
    let Some(g) = active() else {
        return format!("colltune is not initialised: {library}");
    };
    match state(g, comm).map(|s| &*s) {
        None => format!("colltune is not initialised: {library}"),
        Some(CommState::Library) => format!(
            "an intercommunicator, or one colltune could not set up on every rank: {library}"
        ),
        Some(_) if bytes > MAX_BYTES => format!("more than 2^31 - 1 bytes: {library}"),
        Some(CommState::Colltune { sel, .. }) => {
            let g = lock(sel);
            format!(
                "bcast: {}; swap: {}",
                g.choose(Collective::Bcast, bytes),
                g.choose(Collective::Swap, bytes)
            )
        }
    }
}

/// `colltune_explain`: [`explain`] written into `out` (at most `len` bytes,
/// NUL-terminated).
///
/// # Safety
/// `out` is null or holds `len` bytes.
pub unsafe fn explain_into(comm: MPI_Comm, bytes: i64, out: *mut c_char, len: c_int) -> c_int {
    let text = explain(comm, bytes.max(0) as u64);
    if !out.is_null() && len > 0 {
        let b = text.as_bytes();
        let n = b.len().min(len as usize - 1);
        std::ptr::copy_nonoverlapping(b.as_ptr(), out as *mut u8, n);
        *out.add(n) = 0;
    }
    SUCCESS
}

/// Per-layer cost of the call path, for `benches/callpath.rs` (not an API).
/// Each layer is timed on its own over `iters` calls, `trials` times; the
/// local layers (no communication) loop on each rank alone, the whole call
/// back to back on every rank of `MPI_COMM_WORLD`'s duplicate. Times in
/// nanoseconds per call, one `Vec` of trials per layer.
#[doc(hidden)]
pub mod layers {
    use super::*;
    use crate::transport::mpi::Buffers;
    use std::hint::black_box;
    use std::time::Instant;

    /// (layer name, per-trial ns per call).
    pub type Times = Vec<(&'static str, Vec<f64>)>;

    fn time(iters: usize, mut f: impl FnMut()) -> f64 {
        let t = Instant::now();
        for _ in 0..iters {
            f();
        }
        t.elapsed().as_nanos() as f64 / iters as f64
    }

    /// Runs `f` on rank 0 of `comm` while the others sleep (polling for
    /// its end every 200 us), so they do not spin on the cores it uses.
    unsafe fn quiet(comm: MPI_Comm, me: usize, f: impl FnOnce()) {
        let mut byte = 0u8;
        if me == 0 {
            f();
            let n = cffi::comm_size(comm).unwrap_or(1);
            for r in 1..n {
                let _ = cffi::send(
                    &byte,
                    1,
                    r,
                    77,
                    colltune_algorithms::SendMode::Standard,
                    comm,
                );
            }
        } else {
            let Ok(mut req) = cffi::irecv(&mut byte, 1, 0, 77, comm) else {
                return;
            };
            loop {
                let mut flag: c_int = 0;
                mpi::ffi::PMPI_Test(&mut req, &mut flag, mpi::ffi::RSMPI_STATUS_IGNORE);
                if flag != 0 {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
        }
    }

    /// # Safety
    /// MPI and colltune are initialised (`mpi_init`).
    pub unsafe fn measure(bytes: usize, iters: usize, trials: usize) -> Times {
        let mut comm = cffi::comm_null();
        // A communicator of the application's own (as IMB's), not the world.
        let world = cffi::comm_world();
        assert_eq!(
            mpi::ffi::PMPI_Comm_dup(world, &mut comm),
            SUCCESS,
            "MPI_Comm_dup"
        );
        let dt = mpi::ffi::RSMPI_UINT8_T;
        let mut buf = vec![0u8; bytes.max(1)];
        let p = buf.as_mut_ptr().cast::<c_void>();
        let count = bytes as c_int;
        // First call sets the communicator up (collective).
        bcast(p, count, dt, 0, comm);
        let g = active().expect("colltune initialised");
        let st = state(g, comm).expect("colltune initialised");
        let CommState::Colltune { routes, sel } = &*st else {
            panic!("the communicator was not set up")
        };
        let mut out: Times = Vec::new();
        let mut add = |name: &'static str, v: f64| match out.iter_mut().find(|(n, _)| *n == name) {
            Some((_, t)) => t.push(v),
            None => out.push((name, vec![v])),
        };
        let me = cffi::comm_rank(comm).unwrap_or(0);
        let route = routes.bcast(bytes as u64);
        // A communicator of one rank: the library's broadcast sends nothing,
        // so colltune's call against the library's is the interposition's
        // own cost, without the noise of communication.
        let mut single = cffi::comm_null();
        assert_eq!(
            mpi::ffi::PMPI_Comm_dup(cffi::comm_self(), &mut single),
            SUCCESS,
            "MPI_Comm_dup"
        );
        bcast(p, count, dt, 0, single);
        for _ in 0..trials {
            // The local layers on rank 0 alone, the other ranks asleep (not
            // spinning in MPI on the same cores).
            quiet(comm, me, || {
                add(
                    "attribute lookup (per-thread cache)",
                    time(iters, || {
                        black_box(state(g, black_box(comm)));
                    }),
                );
                add(
                    "attribute lookup (MPI_Comm_get_attr)",
                    time(iters, || {
                        black_box(state_slow(g, black_box(comm)));
                    }),
                );
                add(
                    "datatype (cache; probe, size, envelope)",
                    time(iters, || {
                        black_box(datatype(p, count, black_box(dt), routes.raw()));
                    }),
                );
                add(
                    "decision and route",
                    time(iters, || {
                        black_box(routes.bcast(black_box(bytes as u64)));
                    }),
                );
                let ours = time(iters, || {
                    black_box(bcast(p, count, dt, 0, black_box(single)));
                });
                let theirs = time(iters, || {
                    black_box(cffi::user_bcast(p, count, dt, 0, black_box(single)));
                });
                add("1 rank: MPI_Bcast through colltune", ours);
                add("1 rank: PMPI_Bcast", theirs);
                add("1 rank: colltune's own cost (difference)", ours - theirs);
                add(
                    "plan lookup (general path: lock + cache)",
                    time(iters, || {
                        let _ = black_box(lock(sel).bench_plan(black_box(bytes as u64), 0));
                    }),
                );
            });
            let _ = cffi::barrier(comm);
            if let Route::Direct(_, tree) = route {
                let b = &mut buf[..bytes];
                add(
                    "executor, direct path (back to back)",
                    time(iters, || {
                        let _ = routes.direct(tree, b, 0);
                    }),
                );
                let _ = cffi::barrier(comm);
            }
            let g = lock(sel);
            if let (Ok(Some((plan, exec))), Some(c)) =
                (&g.bench_plan(bytes as u64, 0), g.private().get())
            {
                let b = &mut buf[..bytes];
                add(
                    "executor, general plan (back to back)",
                    time(iters, || {
                        let _ = crate::transport::mpi::execute(c, plan, *exec, Buffers::bcast(b));
                    }),
                );
            }
            drop(g);
            let _ = cffi::barrier(comm);
            add(
                "MPI_Bcast through colltune (back to back)",
                time(iters, || {
                    black_box(bcast(p, count, dt, 0, comm));
                }),
            );
            let _ = cffi::barrier(comm);
            add(
                "PMPI_Bcast, the library (back to back)",
                time(iters, || {
                    black_box(cffi::user_bcast(p, count, dt, 0, comm));
                }),
            );
            let _ = cffi::barrier(comm);
            // A rule naming one of the library's algorithms: the same call
            // on the duplicate it runs on, without colltune in front.
            if let Route::Library(_, slot) = route {
                if let Some(Some(dup)) = slot.get().map(|f| f.and_then(|f| f.comm())) {
                    add(
                        "PMPI_Bcast on the rule's forced duplicate (back to back)",
                        time(iters, || {
                            black_box(cffi::user_bcast(p, count, dt, 0, dup));
                        }),
                    );
                    let _ = cffi::barrier(comm);
                }
            }
        }
        let _ = mpi::ffi::PMPI_Comm_free(&mut single);
        out
    }
}
