//! A communicator's state: found per call (a per-thread cache, else its MPI attribute), set up collectively at its first call.

use super::*;

/// Per thread, the last few (communicator, state, generation) found, so a
/// call finds its communicator's state without asking MPI (an attribute
/// lookup is a hash lookup, under a lock where threads are on).
pub(super) const SEEN: usize = 4;
thread_local! {
    pub(super) static SEEN_COMMS: [Cell<(usize, usize, u64)>; SEEN] =
        const { [const { Cell::new((0, 0, u64::MAX)) }; SEEN] };
    pub(super) static SEEN_NEXT: Cell<usize> = const { Cell::new(0) };
}

/// The communicator's state, set up (collectively: this is its first
/// call on every rank) when it has none. None: the handle is not one MPI
/// knows (the library says so).
///
/// # Safety
/// `comm` is a communicator handle (valid or not: MPI checks); `g` is the
/// live [`Global`].
#[inline]
pub(super) unsafe fn comm_state(g: &Global, comm: MPI_Comm) -> Option<*const CommState> {
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
    let found = comm_state_from_attribute(g, comm)?;
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

/// [`comm_state`] through the communicator's attribute, setting it up when it
/// has none.
///
/// # Safety
/// As for [`comm_state`].
#[cold]
pub(super) unsafe fn comm_state_from_attribute(
    g: &Global,
    comm: MPI_Comm,
) -> Option<*const CommState> {
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
pub(super) fn active<'a>() -> Option<&'a Global> {
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
pub(super) unsafe fn set_up(g: &Global, comm: MPI_Comm) -> CommState {
    let (world_private, world_shape) = match &g.base {
        Base::World { private, shape } => (*private, shape),
        Base::Sessions => return super::sessions::set_up(comm),
    };
    let shape = Shape::of(comm, world_shape);
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
            Private::lazy(comm, s, world_private),
        )),
        _ => CommState::Library,
    }
}
