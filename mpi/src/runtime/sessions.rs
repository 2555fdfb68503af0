//! MPI 4 sessions: a program that never calls `MPI_Init` (`MPI_Session_init`, a group from a process set, `MPI_Comm_create_from_group`) gets the table on each communicator's first call, set up and agreed there as `MPI_Init` sets up the world.
//!
//! ```text
//!  MPI_Session_init ──► the library's ──► colltune starts (local: the table read,
//!                                          keys made; no message)
//!  MPI_Comm_create_from_group              (the library's, untouched)
//!  MPI_Bcast(comm) first call ──► set_up: a private communicator and the node
//!                                  map (Comm::from_raw), agreed; the table agreed
//!                                  as at MPI_Init (select::load over comm:
//!                                  rank 0's where files differ, one warning)
//!  MPI_Bcast(comm) later calls ──► the state kept as comm's attribute
//!  last MPI_Session_finalize ──► colltune's state freed, then the library's
//! ```
//!
//! There is no `MPI_COMM_WORLD` to agree on once: each communicator is set up
//! as a world of its own, at its first call (collective, as the call is).
//! Every rank of it takes that same way, so the routes agree whatever each
//! process saw before. What that costs, once per communicator: a
//! communicator split, a shared-memory split, an allgather of the node labels
//! and a few allreduces (the table itself is sent only where the ranks read
//! different files). Private communicators are never shared between two
//! communicators (there are no world ranks to key the sharing by).
//!
//! Not under sessions: the handoff of library rules to Open MPI at start-up
//! (no world to agree on it; Open MPI's dynamic rules are turned on where a
//! rule needs them, and the rules run through the forced routes, as where
//! the handoff is off),
//! and the `ibcast` / `bcast_init` sections (agreeing on them needs a world:
//! the library's own decisions run). A program that also calls `MPI_Init`
//! keeps the session set-up if a session came first (its `MPI_COMM_WORLD`
//! then runs the library's broadcast), else the world's. Fortran's
//! `MPI_SESSION_INIT` has no entry here: MPICH's binding calls the C
//! `MPI_Session_init` (so the table applies); a binding that calls
//! `PMPI_Session_init` itself leaves the library's collectives throughout.

use super::*;

/// Sessions this process has open (through the interposed
/// `MPI_Session_init`, less those finalised).
static SESSIONS: AtomicUsize = AtomicUsize::new(0);

/// `MPI_Session_init` (the info and error handler handles as machine
/// words: pointers in Open MPI, ints in MPICH; passed on untouched).
type SessionInit = unsafe extern "C" fn(usize, usize, *mut c_void) -> c_int;
type SessionFinalize = unsafe extern "C" fn(*mut c_void) -> c_int;

/// `MPI_Session_init` of the interposition library: the library's, then
/// colltune's start (local) where nothing started it yet and `ours` (the
/// program runs the MPI family colltune was built for).
///
/// # Safety
/// As for `MPI_Session_init`.
pub unsafe fn mpi_session_init(
    info: usize,
    errhandler: usize,
    session: *mut c_void,
    ours: bool,
) -> c_int {
    let Some(f) = super::library_entry(c"PMPI_Session_init") else {
        report("MPI_Session_init: the MPI library has no PMPI_Session_init (MPI 4 sessions)");
        return ERR_OTHER;
    };
    // Before the library's first session: Open MPI reads its variables
    // when its components open.
    if ours && SESSIONS.load(Ordering::Acquire) == 0 && !cffi::initialized() {
        handoff::before_sessions();
    }
    // SAFETY: the library's MPI_Session_init, of this signature.
    let init: SessionInit = std::mem::transmute(f);
    let rc = init(info, errhandler, session);
    if rc == SUCCESS && ours {
        let _g = lock(&LIFECYCLE);
        SESSIONS.fetch_add(1, Ordering::AcqRel);
        if ACTIVE.load(Ordering::Acquire).is_null() && !cffi::initialized() {
            start();
        }
    }
    rc
}

/// `MPI_Session_finalize` of the interposition library: colltune's state
/// goes before the library's last session does (it frees MPI objects).
///
/// # Safety
/// As for `MPI_Session_finalize`.
pub unsafe fn mpi_session_finalize(session: *mut c_void) -> c_int {
    let Some(f) = super::library_entry(c"PMPI_Session_finalize") else {
        report(
            "MPI_Session_finalize: the MPI library has no PMPI_Session_finalize (MPI 4 sessions)",
        );
        return ERR_OTHER;
    };
    let last = {
        let _g = lock(&LIFECYCLE);
        SESSIONS.load(Ordering::Acquire) == 1
            && active().is_some_and(|g| matches!(g.base, Base::Sessions))
    };
    if last {
        finalize();
    }
    // SAFETY: the library's MPI_Session_finalize, of this signature.
    let fin: SessionFinalize = std::mem::transmute(f);
    let rc = fin(session);
    if rc == SUCCESS {
        let _g = lock(&LIFECYCLE);
        let _ = SESSIONS.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
    }
    rc
}

/// colltune's state for sessions (under [`LIFECYCLE`]; local, no message):
/// the table read for the communicators to agree on, the keys of their
/// attributes. Where a key cannot be made, colltune stays off: every call
/// is the library's.
fn start() {
    let keyval = cffi::comm_create_keyval(Some(copy_attr), Some(delete_attr::<CommState>));
    let Ok(keyval) = keyval else {
        report("warning: MPI sessions: no attribute key for colltune's state; the MPI library's collectives run");
        return;
    };
    crate::select::keep_for_sessions();
    // The settings every communicator's set-up reads again and agrees on;
    // kept here for what reads them outside one (traces).
    let settings = crate::select::RuntimeSettings::from_env().unwrap_or_default();
    let selector = Arc::new(Selector {
        settings,
        table: None,
        fallback: Some(
            "MPI sessions: each communicator agrees on its table at its first call".into(),
        ),
    });
    let world = Box::into_raw(Box::new(CommState::Library));
    let g = Box::into_raw(Box::new(Global {
        selector,
        keyval,
        self_keyval: None,
        world,
        base: Base::Sessions,
        nb: Default::default(),
        nb_keyval: None,
    }));
    hot::start();
    ACTIVE.store(g, Ordering::Release);
}

/// A communicator's set-up under sessions (collective over `comm`, a valid
/// intra-communicator): its private communicator and node map, then the
/// table, agreed by its ranks as `MPI_Init` agrees them over the world;
/// where either fails on any rank, the library's collectives on all.
///
/// # Safety
/// `comm` is a valid intra-communicator.
pub(super) unsafe fn set_up(comm: MPI_Comm) -> CommState {
    let size = cffi::comm_size(comm).unwrap_or(0);
    let made = Comm::from_raw(comm);
    let mine = made.as_ref().map(|_| ()).map_err(|e| e.to_string());
    let what = format!(
        "a communicator of {size} rank{} (MPI sessions)",
        if size == 1 { "" } else { "s" }
    );
    if !agree(comm, mine, &what) {
        return CommState::Library;
    }
    let Ok(c) = made else {
        return CommState::Library;
    };
    let selector = match crate::select::load(&c) {
        Ok(s) => Arc::new(s),
        Err(e) => {
            // COLLTUNE_STRICT=1: a bad table stops the job, as at MPI_Init.
            if c.rank() == 0 {
                crate::say(&format!(
                    "error: {e}\ncolltune: COLLTUNE_STRICT=1, so the job stops"
                ));
            }
            let _ = c.barrier();
            cffi::abort(comm, 3);
            return CommState::Library;
        }
    };
    CommState::colltune(crate::select::for_private(
        &selector,
        Private::session(private::unshared(c), comm),
    ))
}
