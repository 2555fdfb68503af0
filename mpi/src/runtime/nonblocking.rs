//! `MPI_Ibcast` and `MPI_Bcast_init` (`MPIX_Bcast_init` in Open MPI 4.1)
//! through the table's `ibcast` and `bcast_init` rules: each call is the
//! library's own, with the algorithm a rule chooses forced around it
//! (`select::nonblocking`). `MPI_Start`, `MPI_Wait` and `MPI_Test` are not
//! interposed: a persistent broadcast is decided once, at
//! `MPI_Bcast_init`, and its starts and completions cost nothing more.
//!
//! ```text
//!  MPI_Ibcast / MPI_Bcast_init (preload/src/lib.rs)
//!   1. colltune not running, or the table has no nonblocking rules ─────> PMPI_   [one load, one test]
//!   2. this thread's last call again (communicator, predefined
//!      datatype, count, section; nothing freed since): its answer ──────> 5.
//!   3. null handles, negative count, an unknown type's size ────────────> PMPI_
//!   4. the communicator's decisions (its attribute; made at its first
//!      such call, locally: its shape from MPI_COMM_WORLD's node map),
//!      the rule for the signature's bytes
//!   5. the library's own ───────────────────────────────────────────────> PMPI_
//!      or one of its algorithms: written around the call under a lock ─> PMPI_
//! ```
//!
//! Every exit passes the caller's own arguments, so errors and error
//! handlers are the library's.

use super::*;
use crate::forcing::nonblocking::NbForcing;
use crate::select::nonblocking::CallDecisions;
use colltune_core::tables::decide::{Choice, Trace};
use colltune_core::tables::table::Section;

/// `PMPI_Bcast_init` (MPI 4) or `PMPIX_Bcast_init` (Open MPI 4.1's
/// extension), as the program's library has them.
pub type BcastInitFn =
    unsafe extern "C" fn(*mut c_void, c_int, usize, c_int, usize, usize, *mut c_void) -> c_int;

/// Which persistent broadcast the program called.
#[derive(Clone, Copy, Debug)]
pub enum InitName {
    /// `MPI_Bcast_init` (MPI 4: Open MPI 5, MPICH 4 and 5).
    Standard,
    /// `MPIX_Bcast_init` (Open MPI 4.1's `mpi-ext.h`).
    Extension,
}

impl InitName {
    /// The library's profiling entry for it; None where it has none.
    pub fn resolve(self) -> Option<BcastInitFn> {
        static FOUND: [std::sync::OnceLock<usize>; 2] =
            [std::sync::OnceLock::new(), std::sync::OnceLock::new()];
        let (i, name) = match self {
            InitName::Standard => (0, c"PMPI_Bcast_init"),
            InitName::Extension => (1, c"PMPIX_Bcast_init"),
        };
        // SAFETY: dlsym with a NUL-terminated name in the global scope.
        let p = *FOUND[i]
            .get_or_init(|| unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) } as usize);
        // SAFETY: the library's function of this signature (handles at
        // register width, as MPI_Bcast's).
        (p != 0).then(|| unsafe { std::mem::transmute::<usize, BcastInitFn>(p) })
    }
}

/// `MPI_Ibcast` through the table's `ibcast` rules.
///
/// # Safety
/// As for `MPI_Ibcast`.
pub unsafe fn ibcast(
    buffer: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    request: *mut cffi::MPI_Request,
) -> c_int {
    let call = || cffi::user_ibcast(buffer, count, datatype, root, comm, request);
    forcing(Section::Ibcast, count, datatype, root, comm)
        .unwrap_or(NbForcing::LIBRARY)
        .run(call)
}

/// `MPI_Bcast_init` (or `MPIX_Bcast_init`: `which`) through the table's
/// `bcast_init` rules: the algorithm forced while the library builds the
/// request's schedule, which every `MPI_Start` then runs.
///
/// # Safety
/// As for `MPI_Bcast_init`; `datatype`, `comm` and `info` are handles at
/// register width.
#[allow(clippy::too_many_arguments)]
pub unsafe fn bcast_init(
    which: InitName,
    buffer: *mut c_void,
    count: c_int,
    datatype: usize,
    root: c_int,
    comm: usize,
    info: usize,
    request: *mut c_void,
) -> c_int {
    let Some(init) = which.resolve() else {
        return ERR_OTHER;
    };
    let call = || init(buffer, count, datatype, root, comm, info, request);
    if crate::abi::foreign_family() {
        return call();
    }
    let (dt, c) = (
        crate::abi::datatype_from_reg(datatype),
        crate::abi::comm_from_reg(comm),
    );
    forcing(Section::BcastInit, count, dt, root, c)
        .unwrap_or(NbForcing::LIBRARY)
        .run(call)
}

/// How a call of section `s` runs: None where colltune leaves it alone
/// (not running, no nonblocking rules, arguments the library must judge).
///
/// A program posts the same call again and again (IMB-NBC, a halo
/// exchange's loop), so each thread keeps its last call's answer: the
/// same communicator, predefined datatype, count and section, with no
/// attribute of colltune's freed since (a freed handle may come back, and
/// the answer points into the communicator's decisions), cost four
/// compares and no call into MPI. Anything else takes [`forcing_slow`].
///
/// # Safety
/// As for `MPI_Ibcast` (handles valid or not: MPI checks).
#[inline]
unsafe fn forcing(
    s: Section,
    count: c_int,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> Option<NbForcing> {
    let g = active()?;
    if g.nb.is_empty() {
        return None;
    }
    let key = LastCall {
        comm: comm.0 as usize,
        datatype: datatype.0 as usize,
        count,
        section: s,
        generation: GENERATION.load(Ordering::Acquire),
    };
    let last = LAST_CALL.with(Cell::get);
    if last.key != Some(key) {
        return forcing_slow(g, key, root, comm, datatype);
    }
    if g.selector.settings.trace != Trace::Off {
        // SAFETY: the communicator's decisions live until its attribute is
        // freed, which moves the generation on (then no key matches).
        let (d, choice) = (&*last.decisions, &*last.choice);
        trace(g, s, comm, d, last.bytes, root, choice, &last.forced);
    }
    Some(last.forced)
}

/// [`forcing`]'s way when the thread's last call differs: the checks, the
/// communicator's decisions, the datatype's size and the rule; the answer
/// is kept for the next call where the datatype is predefined (its handle
/// never changes meaning).
///
/// # Safety
/// As for [`forcing`].
#[cold]
unsafe fn forcing_slow(
    g: &Global,
    key: LastCall,
    root: c_int,
    comm: MPI_Comm,
    datatype: MPI_Datatype,
) -> Option<NbForcing> {
    if comm == cffi::comm_null() || datatype == cffi::datatype_null() || key.count < 0 {
        return None;
    }
    let d = decisions(g, key.generation, comm)?;
    let (size, predefined) = match typecache::get(datatype) {
        Some((size, _)) => (size, true),
        None => {
            let size = cffi::type_size_raw(datatype)?;
            // A predefined type is remembered for good (as the blocking
            // path does), so its next call is answered without MPI.
            if cffi::type_combiner(datatype).is_ok_and(|c| c == Combiner::Named) {
                if let Ok(dense) = contiguous(datatype) {
                    typecache::put(datatype, size, dense);
                }
            }
            (size, false)
        }
    };
    let bytes = size.checked_mul(key.count as u64)?;
    let choice = d.choose(key.section, bytes);
    let forced = g.nb.of(choice);
    if predefined {
        LAST_CALL.with(|c| {
            c.set(Answer {
                key: Some(key),
                forced,
                decisions: d,
                choice,
                bytes,
            })
        });
    }
    trace(g, key.section, comm, d, bytes, root, choice, &forced);
    Some(forced)
}

/// What [`forcing`] compares a call with: the thread's last call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct LastCall {
    comm: usize,
    datatype: usize,
    count: c_int,
    section: Section,
    generation: u64,
}

/// The thread's last call ([`LastCall`]; None: none yet) and what it ran:
/// the forcing, and for the trace the communicator's decisions, the rule's
/// choice (inside them) and the signature's bytes.
#[derive(Clone, Copy)]
struct Answer {
    key: Option<LastCall>,
    forced: NbForcing,
    decisions: *const CallDecisions,
    choice: *const Choice,
    bytes: u64,
}

/// The communicator's decisions: its attribute, made at its first call.
///
/// # Safety
/// `comm` is a communicator handle (valid or not: MPI checks).
unsafe fn decisions(g: &Global, gen: u64, comm: MPI_Comm) -> Option<&CallDecisions> {
    let key = g.nb_keyval?;
    // The last communicator's decisions, per thread, while no attribute of
    // colltune's has been freed since (a freed handle may come back): a
    // program posting on one communicator asks MPI once, not per call.
    let (c, p, seen) = LAST.with(Cell::get);
    if c == comm.0 as usize && seen == gen && p != 0 {
        return Some(&*(p as *const CallDecisions));
    }
    let found = decisions_of(g, key, comm)?;
    LAST.with(|l| l.set((comm.0 as usize, found as *const _ as usize, gen)));
    Some(found)
}

thread_local! {
    /// [`decisions`]' last (communicator, decisions, generation).
    static LAST: Cell<(usize, usize, u64)> = const { Cell::new((0, 0, u64::MAX)) };
    /// [`forcing`]'s last call and what it ran.
    static LAST_CALL: Cell<Answer> = const {
        Cell::new(Answer {
            key: None,
            forced: NbForcing::LIBRARY,
            decisions: std::ptr::null(),
            choice: std::ptr::null(),
            bytes: 0,
        })
    };
}

/// [`decisions`] through the communicator's attribute, made at its first
/// call.
///
/// # Safety
/// As for [`decisions`].
#[cold]
unsafe fn decisions_of<'a>(g: &Global, key: c_int, comm: MPI_Comm) -> Option<&'a CallDecisions> {
    match cffi::comm_get_attr(comm, key) {
        Ok(Some(p)) => return Some(&*(p as *const CallDecisions)),
        Ok(None) => {}
        Err(_) => return None,
    }
    // Only what needs no message: an intercommunicator, or one with ranks
    // outside MPI_COMM_WORLD (sessions, spawned processes), gets the
    // library's own decision for every call.
    let shape = match (&g.base, cffi::comm_is_inter(comm)) {
        (Base::World { shape, .. }, Ok(false)) => match cffi::world_ranks(comm) {
            Ok(Some(_)) => Shape::of(comm, shape).ok(),
            _ => None,
        },
        _ => None,
    };
    let d = Box::into_raw(Box::new(CallDecisions::new(&g.selector, shape.as_ref())));
    if cffi::comm_set_attr(comm, key, d.cast()).is_err() {
        drop(Box::from_raw(d));
        return None;
    }
    Some(&*d)
}

/// With `COLLTUNE_TRACE`, one line per call saying what it ran.
#[allow(clippy::too_many_arguments)]
fn trace(
    g: &Global,
    s: Section,
    comm: MPI_Comm,
    d: &CallDecisions,
    bytes: u64,
    root: c_int,
    choice: &Choice,
    forced: &NbForcing,
) {
    let rank = || cffi::comm_rank(comm).unwrap_or(0);
    let on = match g.selector.settings.trace {
        Trace::Off => false,
        Trace::Lead => rank() == 0,
        Trace::All => true,
    };
    if !on {
        return;
    }
    use std::io::Write;
    let world = world_rank().map_or_else(
        || format!("pid {}", std::process::id()),
        |w| format!("rank {w}"),
    );
    let shape = match d.key() {
        Some(k) => k.to_string(),
        None => "a communicator whose shape is not known without messages".into(),
    };
    let what = match choice.library {
        Some(f) if forced.is_library() && !f.is_default() => {
            format!("{choice}; forcing is unavailable here: the MPI library's own decision")
        }
        _ => format!("{choice}{}", forced.how()),
    };
    let line = format!(
        "colltune trace: {world} (rank {} of {shape}) {} {bytes} B root {root}: {what}\n",
        rank(),
        s.name()
    );
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// Fortran `MPI_IBCAST` (`use mpi`, `mpif.h`, `mpi_f08`): handles
/// converted as the library's own binding converts them, the request
/// handed back as a Fortran handle.
///
/// # Safety
/// As for the Fortran binding: integer arguments by reference (`ierr` may
/// be null).
#[cfg(not(colltune_abi))]
pub unsafe fn fortran_ibcast(
    buffer: *mut c_void,
    count: *const c_int,
    datatype: *const c_int,
    root: *const c_int,
    comm: *const c_int,
    request: *mut c_int,
    ierr: *mut c_int,
) {
    let mut req = cffi::request_null();
    let rc = ibcast(
        fortran_buffer(buffer),
        *count,
        cffi::type_f2c(*datatype),
        *root,
        cffi::comm_f2c(*comm),
        &mut req,
    );
    if rc == SUCCESS {
        *request = cffi::request_c2f(req);
    }
    if !ierr.is_null() {
        *ierr = rc;
    }
}

/// Fortran `MPI_BCAST_INIT` (and `MPIX_BCAST_INIT`: `which`).
///
/// # Safety
/// As for [`fortran_ibcast`].
#[cfg(not(colltune_abi))]
#[allow(clippy::too_many_arguments)]
pub unsafe fn fortran_bcast_init(
    which: InitName,
    buffer: *mut c_void,
    count: *const c_int,
    datatype: *const c_int,
    root: *const c_int,
    comm: *const c_int,
    info: *const c_int,
    request: *mut c_int,
    ierr: *mut c_int,
) {
    let mut req = cffi::request_null();
    let rc = bcast_init(
        which,
        fortran_buffer(buffer),
        *count,
        crate::abi::to_reg(cffi::type_f2c(*datatype)),
        *root,
        crate::abi::to_reg(cffi::comm_f2c(*comm)),
        crate::abi::to_reg(cffi::info_f2c(*info)),
        (&mut req as *mut cffi::MPI_Request).cast(),
    );
    if rc == SUCCESS {
        *request = cffi::request_c2f(req);
    }
    if !ierr.is_null() {
        *ierr = rc;
    }
}

/// Fortran's `MPI_BOTTOM` as C's.
#[cfg(not(colltune_abi))]
fn fortran_buffer(buffer: *mut c_void) -> *mut c_void {
    if cffi::is_fortran_bottom(buffer) {
        std::ptr::null_mut()
    } else {
        buffer
    }
}
