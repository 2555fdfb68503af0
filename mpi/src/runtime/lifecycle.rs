//! colltune's lifetime: `MPI_Init` (the handoff before it, the agreement and the table after it), `MPI_Finalize`, and the attribute callbacks that tie a communicator's state to it.

use super::*;

/// The copy callback of colltune's attribute keys (communicators,
/// datatypes): a duplicate gets nothing of the original's.
pub(super) unsafe extern "C" fn copy_attr<H>(
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

/// The delete callback of colltune's communicator attributes (the state,
/// `CommState`; the nonblocking decisions): the box goes, after the
/// generation moves on so that no thread's cache hands it out again.
pub(super) unsafe extern "C" fn delete_attr<T>(
    _comm: MPI_Comm,
    _key: c_int,
    val: *mut c_void,
    _extra: *mut c_void,
) -> c_int {
    if !val.is_null() {
        GENERATION.fetch_add(1, Ordering::AcqRel);
        drop(Box::from_raw(val as *mut T));
    }
    SUCCESS
}

/// `MPI_COMM_SELF`'s attribute goes first thing in `MPI_Finalize`: colltune
/// finalises then if the application did not.
pub(super) unsafe extern "C" fn delete_self_attr(
    _comm: MPI_Comm,
    _key: c_int,
    _val: *mut c_void,
    _extra: *mut c_void,
) -> c_int {
    finalize();
    SUCCESS
}

/// Whether `mine` succeeded on every rank of `comm` (the user's
/// communicator: the one every rank surely has); one allreduce. The lowest
/// rank that failed says why (`what` failed).
pub(super) fn agree(comm: MPI_Comm, mine: Result<(), String>, what: &str) -> bool {
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
            let who = match world_rank() {
                Some(w) => format!("rank {w}"),
                None => format!("rank {rank} of {size}"),
            };
            report(&format!(
                "warning: {who} could not set up {what}: {why}; the MPI library's collectives run there"
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
    let keyval = cffi::comm_create_keyval(Some(copy_attr), Some(delete_attr::<CommState>));
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
    // The table's choices for MPI_Ibcast and MPI_Bcast_init: forced on
    // every rank or on none (one allreduce per choice, only where the table
    // has such rules).
    let nb_keyval = cffi::comm_create_keyval(
        Some(copy_attr),
        Some(delete_attr::<crate::select::nonblocking::CallDecisions>),
    );
    let nb = crate::select::nonblocking::Forcings::agree(
        &selector,
        world_private,
        world.rank(),
        nb_keyval.is_ok(),
    );
    let nb_keyval = nb_keyval.ok();
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
        self_keyval: Some(self_keyval),
        world,
        base: Base::World {
            private: world_private,
            shape: world_shape,
        },
        nb,
        nb_keyval,
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
        for k in [g.self_keyval.as_mut(), g.nb_keyval.as_mut()]
            .into_iter()
            .flatten()
        {
            let _ = cffi::comm_free_keyval(k);
        }
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
