//! Datatypes: whether a type's bytes are its signature's in order, the process-wide cache of predefined types, the library's own checks of a call's datatype and buffer.

use super::*;

/// Whether elements of `dt` are their type signature's bytes, in order,
/// back to back from the buffer: predefined types without padding (size ==
/// extent, lower bounds 0, true extent == size) and chains of contiguous
/// or dup types over them. Anything else is packed, even when its size,
/// extent and true extent agree with lower bound 0: an indexed type with
/// displacements {1, 0} holds its elements out of order.
pub(super) fn contiguous(dt: MPI_Datatype) -> Result<bool, MpiError> {
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

pub(super) fn packed_all(pos: usize, n: usize) -> Result<(), MpiError> {
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
pub(super) fn error_code(comm: MPI_Comm, e: &TransportError) -> c_int {
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
pub(super) mod typecache {
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
pub(super) unsafe fn datatype(
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
