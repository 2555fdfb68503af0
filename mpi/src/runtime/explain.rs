//! What a call on a communicator would run, as a sentence (`colltune_explain`).

use super::*;

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
    match comm_state(g, comm).map(|s| &*s) {
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
