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

use std::collections::BTreeSet;
use std::ffi::{c_char, c_int, c_void};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::select::{CommSelector, Selector};
use crate::transport::mpi::ffi::{self as cffi, Combiner, Datatype};
use crate::transport::mpi::{Comm, Control, MpiError, Op, TransportError};
use colltune_algorithms::{swap, Collective};
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
enum CommState {
    /// colltune's selector on the private duplicate.
    Colltune(Mutex<CommSelector>),
    /// The library's collectives only: an intercommunicator, or a
    /// communicator whose set-up failed on some rank.
    Library,
}

struct Global {
    selector: Arc<Selector>,
    keyval: c_int,
    /// `MPI_COMM_WORLD`'s state (set up by `init`).
    world: WorldState,
}

/// `MPI_COMM_WORLD`'s state, owned as attribute values are (a box turned
/// into a raw pointer, handed out to calls), freed by `finalize`.
struct WorldState(*mut CommState);

// SAFETY: MPI handles are process-wide and the selector inside is behind
// its mutex; attribute values of other communicators are shared the same
// way.
unsafe impl Send for WorldState {}

static GLOBAL: Mutex<Option<Global>> = Mutex::new(None);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

unsafe extern "C" fn copy_attr(
    _old: MPI_Comm,
    _key: c_int,
    _extra: *mut c_void,
    _val_in: *mut c_void,
    _val_out: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    // A duplicate gets its own state at its first call.
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
        drop(Box::from_raw(val as *mut CommState));
    }
    SUCCESS
}

/// Prints `colltune: MSG` on stderr, each distinct message once per
/// process.
fn report(msg: &str) {
    static SEEN: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
    if lock(&SEEN).insert(msg.to_string()) {
        eprintln!("colltune: {msg}");
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
    let mut g = lock(&GLOBAL);
    if g.is_some() {
        return SUCCESS;
    }
    if !cffi::initialized() || cffi::finalized() {
        report("colltune_init: MPI is not initialised: call it after MPI_Init");
        return ERR_OTHER;
    }
    let keyval = cffi::comm_create_keyval(Some(copy_attr), Some(delete_attr));
    let world = Comm::world();
    let mine = match (&keyval, &world) {
        (Ok(_), Ok(_)) => Ok(()),
        (Err(e), _) => Err(e.to_string()),
        (_, Err(e)) => Err(e.to_string()),
    };
    if !agree(cffi::comm_world(), mine, "MPI_COMM_WORLD") {
        if let Ok(mut k) = keyval {
            let _ = cffi::comm_free_keyval(&mut k);
        }
        return ERR_OTHER;
    }
    let (Ok(keyval), Ok(world)) = (keyval, world) else {
        return ERR_OTHER;
    };
    let selector = match crate::select::load(&world) {
        Ok(s) => Arc::new(s),
        Err(e) => {
            // COLLTUNE_STRICT=1: a bad table is fatal, on every rank alike.
            if world.rank() == 0 {
                use std::io::Write;
                let _ = writeln!(
                    std::io::stderr(),
                    "colltune: error: {e}\ncolltune: COLLTUNE_STRICT=1, so the job stops"
                );
                let _ = std::io::stderr().flush();
            }
            // Every rank fails alike; wait until rank 0 has said why, since
            // the first abort kills the others.
            let _ = world.barrier();
            cffi::abort(cffi::comm_world(), 3);
            return ERR_OTHER;
        }
    };
    let world = WorldState(Box::into_raw(Box::new(CommState::Colltune(Mutex::new(
        crate::select::for_comm(&selector, world),
    )))));
    *g = Some(Global {
        selector,
        keyval,
        world,
    });
    SUCCESS
}

/// Frees colltune's state (before `MPI_Finalize`).
pub fn finalize() -> c_int {
    let g = lock(&GLOBAL).take();
    if let Some(mut g) = g {
        if !cffi::finalized() {
            // Communicators still alive keep their state until MPI frees
            // them; the key goes once they do.
            let _ = cffi::comm_free_keyval(&mut g.keyval);
        }
        // SAFETY: the box init made; no call is running (MPI_Finalize and
        // colltune_finalize are called once every call has returned).
        drop(unsafe { Box::from_raw(g.world.0) });
    }
    SUCCESS
}

/// `MPI_Init` of the interposition library: the library's, then colltune's.
///
/// # Safety
/// As for `MPI_Init`.
pub unsafe fn mpi_init(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int {
    let rc = cffi::user_init(argc, argv);
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
    let rc = cffi::user_init_thread(argc, argv, required, provided);
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

/// The communicator's state, set up (collectively: this is its first
/// call on every rank) when it has none. None: colltune is not running, or
/// the handle is not one MPI knows (the library says so).
///
/// # Safety
/// `comm` is a communicator handle (valid or not: MPI checks).
unsafe fn state(comm: MPI_Comm) -> Option<*const CommState> {
    let (selector, keyval, world) = {
        let g = lock(&GLOBAL);
        let g = g.as_ref()?;
        (
            Arc::clone(&g.selector),
            g.keyval,
            g.world.0 as *const CommState,
        )
    };
    if comm == cffi::comm_world() {
        return Some(world);
    }
    match cffi::comm_get_attr(comm, keyval) {
        Ok(Some(p)) => return Some(p as *const CommState),
        Ok(None) => {}
        Err(_) => return None,
    }
    let st = match cffi::comm_is_inter(comm) {
        // colltune tunes intra-communicator collectives
        Ok(true) => CommState::Library,
        Ok(false) => set_up(&selector, comm),
        Err(_) => return None,
    };
    let raw = Box::into_raw(Box::new(st));
    if cffi::comm_set_attr(comm, keyval, raw.cast()).is_err() {
        drop(Box::from_raw(raw));
        return None;
    }
    Some(raw)
}

/// Sets colltune up on an intra-communicator (collective): the private
/// duplicate and node map, agreed by every rank; where it failed on any
/// rank, the library's collectives on all (the duplicate freed).
///
/// # Safety
/// `comm` is a valid intra-communicator.
unsafe fn set_up(selector: &Arc<Selector>, comm: MPI_Comm) -> CommState {
    let built = Comm::from_raw(comm);
    let size = cffi::comm_size(comm).unwrap_or(0);
    let mine = built.as_ref().map(|_| ()).map_err(|e| e.to_string());
    let what = format!(
        "a communicator of {size} rank{}",
        if size == 1 { "" } else { "s" }
    );
    let agreed = agree(comm, mine, &what);
    match built {
        Ok(c) if agreed => CommState::Colltune(Mutex::new(crate::select::for_comm(selector, c))),
        // Dropping a set-up that succeeded here frees its duplicate.
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

/// `MPI_Bcast` through colltune, or the library's where it decides
/// (see the module documentation).
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
    let library = move || cffi::user_bcast(buffer, count, datatype, root, comm);
    // Outside MPI's lifetime, and arguments the library rejects before any
    // communication: its own MPI_Bcast reports them.
    if !cffi::initialized()
        || cffi::finalized()
        || comm == cffi::comm_null()
        || datatype == cffi::datatype_null()
        || count < 0
        || buffer == cffi::in_place()
    {
        return library();
    }
    let Some(state) = state(comm) else {
        return library();
    };
    let CommState::Colltune(sel) = &*state else {
        return library();
    };
    let sel = lock(sel);
    let Some(root) = usize::try_from(root)
        .ok()
        .filter(|&r| r < sel.comm().size())
    else {
        return library();
    };
    // The library's own checks of the datatype and buffer (committed,
    // valid, data where the buffer says), without a message.
    if cffi::check_message(buffer, count, datatype, sel.comm().raw()).is_err() {
        return library();
    }
    let Some(bytes) = cffi::type_size(datatype)
        .ok()
        .and_then(|s| s.checked_mul(count as u64))
    else {
        return library();
    };
    // From here only what every rank shares decides: the bytes, the root,
    // the communicator.
    if bytes > MAX_BYTES {
        sel.trace(
            "bcast",
            bytes,
            Some(root),
            &"the MPI library's own collective (more than 2^31 - 1 bytes)",
        );
        return library();
    }
    let choice = sel.choose(Collective::Bcast, bytes);
    if choice.algorithm.is_none() {
        sel.trace("bcast", bytes, Some(root), choice);
        return library();
    }
    match bcast_bytes(&sel, buffer, count, datatype, bytes, root) {
        Ok(()) => SUCCESS,
        Err(e) => error_code(comm, &e),
    }
}

/// Runs the chosen algorithm on the call's `bytes`: in the user's buffer
/// when its datatype lays them out in signature order, else in a packed
/// copy (packed at the root, unpacked elsewhere).
///
/// # Safety
/// `buffer` holds `count` elements of `dt`, `bytes` of signature.
unsafe fn bcast_bytes(
    sel: &CommSelector,
    buffer: *mut c_void,
    count: c_int,
    dt: MPI_Datatype,
    bytes: u64,
    root: usize,
) -> Result<(), TransportError> {
    let n = bytes as usize;
    if n == 0 {
        sel.bcast(&mut [], root)?;
        return Ok(());
    }
    if !buffer.is_null() && contiguous(dt)? {
        sel.bcast(std::slice::from_raw_parts_mut(buffer.cast(), n), root)?;
        return Ok(());
    }
    let mut packed = vec![0u8; n];
    let dup = sel.comm().raw();
    let at_root = sel.comm().rank() == root;
    if at_root {
        packed_all(cffi::pack(buffer, count, dt, &mut packed, dup)?, n)?;
    }
    sel.bcast(&mut packed, root)?;
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
    let rc = bcast(buffer, *count, c_type, *root, c_comm);
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
    if !cffi::initialized()
        || cffi::finalized()
        || comm == cffi::comm_null()
        || datatype == cffi::datatype_null()
        || count < 0
    {
        return library();
    }
    let Some(state) = state(comm) else {
        return library();
    };
    let CommState::Colltune(sel) = &*state else {
        return library();
    };
    let sel = lock(sel);
    if cffi::check_message(sendbuf, count, datatype, sel.comm().raw()).is_err() {
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
    let dup = sel.comm().raw();
    let (mut out, mut inn) = (vec![0u8; n], vec![0u8; n]);
    packed_all(cffi::pack(sendbuf, count, dt, &mut out, dup)?, n)?;
    sel.swap(&mut out, &mut inn, pairing)?;
    // The odd rank out receives nothing.
    if swap::partner(sel.comm().rank(), sel.comm().size(), pairing).is_some() {
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
    match state(comm).map(|s| &*s) {
        None => format!("colltune is not initialised: {library}"),
        Some(CommState::Library) => format!(
            "an intercommunicator, or one colltune could not set up on every rank: {library}"
        ),
        Some(_) if bytes > MAX_BYTES => format!("more than 2^31 - 1 bytes: {library}"),
        Some(CommState::Colltune(s)) => {
            let g = lock(s);
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
