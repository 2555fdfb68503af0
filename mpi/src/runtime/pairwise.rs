//! The pairwise swap through the C ABI (`colltune_swap`).

use super::*;

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
    let Some(state) = comm_state(g, comm) else {
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
pub(super) unsafe fn swap_bytes(
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
