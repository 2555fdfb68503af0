//! The broadcast's way through colltune, from the application's
//! `MPI_Bcast` to the library's `PMPI_Bcast` or one of colltune's
//! algorithms. Every exit below is taken alike on every rank of the
//! communicator (it depends only on what the ranks share: the communicator,
//! the root, the signature's bytes), except where a rank's own arguments
//! are wrong (the library then reports them).
//!
//! ```text
//!  MPI_Bcast (preload/src/lib.rs) -> preload::bcast
//!  (Fortran: preload::fortran_bcast, its own lines in step 1
//!   (hot::fortran_call_if_handed_off), then fortran::fortran_bcast: 2-7)
//!   1. hot::handed_off_target: the call's line (communicator, datatype)
//!      says its count is one the library runs ──────────────> PMPI_Bcast  [exit A]
//!   2. preload::bcast_cold: hot::cached_state_and_type, the line's state
//!      and datatype (then straight to 4); else (and the C ABI's bcast)
//!      handoff::pass_if_handed_off: Open MPI's rules file runs it > PMPI_Bcast [exit A]
//!   3. bcast_full_path: colltune not active, null handles, negative count,
//!      MPI_IN_PLACE, no state (an unknown handle) ──────────> PMPI_Bcast  [exit B]
//!      (the state: state::comm_state; the datatype: types::datatype;
//!       then hot::fill_line writes the call's line for the next call)
//!   4. bcast_with_state: an intercommunicator or a failed set-up (CommState::
//!      Library), a root out of range, arguments the library rejects,
//!      more than MAX_BYTES ─────────────────────────────────> PMPI_Bcast  [exit B]
//!   5. Routes::route_for (select/route.rs) looks the route up:
//!      Library, handed off or the library's own decision ─> PMPI_Bcast    [exit C]
//!      Library, one of its algorithms forced ──> PMPI_Bcast on a forced
//!                                                communicator (forced_bcast) [exit D]
//!   6. a GPU's memory (device::is_device) ─────────────────> PMPI_Bcast  [exit E]
//!   7. bcast_bytes: packed where the datatype is not its signature's
//!      bytes in order; run_route: Direct (a tree of plain messages) or
//!      Plan (a prepared schedule, under the communicator's lock) ─> colltune
//! ```
//!
//! Exits A-C and E pass the caller's own arguments, so errors and error
//! handlers are the library's; colltune's own errors (exit D on a forced
//! communicator, step 7) go to the communicator's error handler with their
//! MPI error class (`error_code`).
//!
//! The caches on the way, and why each is needed (none answers for
//! another: each serves a call the others cannot):
//!
//! - the hot lines (`hot.rs`, 4 C + 4 Fortran, the interposition library's
//!   only): step 1 in one cache line, and step 2's state and datatype
//!   without a lookup; absent in `libcolltune.so`, too few for every pair.
//! - the handoff table (`handoff.rs`, byte ranges per communicator size):
//!   what the lines' counts are made from, and step 2 for a call no line
//!   holds (a first call, an evicted line, the C ABI), before any state.
//! - `SEEN_COMMS` (`state.rs`, per thread, 4 communicators): the state
//!   without MPI's attribute lookup (a hash lookup, locked with threads)
//!   where no line holds it: `libcolltune.so`, the swap, a missed line.
//! - the type cache (`types.rs`, predefined datatypes, process-wide): size
//!   and layout without 3-5 library calls where no line holds them, and
//!   for `handoff::pass_if_handed_off`'s size; never invalidated.
//! - the communicator attribute (`state.rs`): not a copy but the owner of
//!   the state the others point to (MPI frees it with the communicator);
//!   the lines' own attribute empties them when a handle is freed.
//! - in the routes (`select/route.rs`): the last rule used (a hint for the
//!   binary search) and each rule's forced communicator, made once.

use super::*;

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
    if let Some(rc) = handoff::pass_if_handed_off(buffer, count, datatype, root, comm) {
        return rc;
    }
    bcast_full_path(buffer, count, datatype, root, comm, false)
}

/// [`bcast`] for a call the handoff does not take (its cache said so, or
/// [`handoff::pass_if_handed_off`] did). `fills_line`: the interposition library's call,
/// which looks in [`hot`] first, so the communicator's state goes there
/// for the next call.
///
/// # Safety
/// As for `MPI_Bcast`.
pub(super) unsafe fn bcast_full_path(
    buffer: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    fills_line: bool,
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
    let Some(state) = comm_state(g, comm) else {
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
            hot::cached_state_and_type(crate::abi::to_reg(datatype), crate::abi::to_reg(comm))
                .map(|(_, info)| info)
        });
    if let (true, None, CommState::Colltune { routes, .. }) = (fills_line, known, &*state) {
        let Some((size, dense)) = self::datatype(buffer, count, datatype, routes.probe_comm())
        else {
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
    if let (true, Some(info)) = (fills_line, known) {
        if !hot::holds_state(comm, datatype, state) {
            // The sizes the library runs unchanged: those handed off, and
            // those whose rule is the library's own decision (all of them
            // without a table, or on a communicator colltune leaves alone).
            let (handed, plain) = match &*state {
                CommState::Colltune { routes, .. } => (
                    handoff::passed_ranges(routes.size()),
                    routes.library_default_ranges(),
                ),
                CommState::Library => (&[][..], vec![(0, u64::MAX)]),
            };
            let ranges = hot::union(handed, &plain);
            hot::fill_line(
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
    bcast_with_state(&*state, known, buffer, count, datatype, root, comm)
}

/// [`bcast_full_path`] once the communicator's `state` is known (and, from
/// [`hot`] or [`typecache`], the predefined datatype's classification:
/// found once, carried from there on).
///
/// # Safety
/// As for `MPI_Bcast`; `count` >= 0; `state` is `comm`'s, alive.
pub(super) unsafe fn bcast_with_state(
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
                    && cffi::check_message(buffer, count, datatype, routes.probe_comm()).is_err())
            {
                return library();
            }
            Some((size, dense))
        }
        None => self::datatype(buffer, count, datatype, routes.probe_comm()),
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
    let route = routes.route_for(bytes);
    if let Route::Library(choice, slot) = route {
        // Traced (else `handoff::pass_if_handed_off` took it): Open MPI's rules file runs
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
pub(super) unsafe fn forced_bcast(
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
pub(super) unsafe fn run_route(
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
            routes.run_direct(tree, buf, root)?;
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
pub(super) unsafe fn bcast_bytes(
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
    let dup = routes.probe_comm();
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
