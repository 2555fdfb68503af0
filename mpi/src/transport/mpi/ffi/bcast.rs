//! Barrier and the broadcasts of colltune's own control plane: the library's, through the `MPI_` symbol, or a tree of plain messages where ranks' library broadcasts may differ.

use super::*;

pub fn barrier(comm: MPI_Comm) -> Result<(), MpiError> {
    // SAFETY: valid communicator.
    check(unsafe { ffi::PMPI_Barrier(comm) }, "MPI_Barrier")
}

/// The MPI library's own `MPI_Bcast` of `len` bytes.
///
/// # Safety
/// `buf` must be valid for reads and writes of `len` bytes.
pub unsafe fn library_bcast(
    buf: *mut u8,
    len: u64,
    root: usize,
    comm: MPI_Comm,
) -> Result<(), MpiError> {
    bytes_bcast(ffi::PMPI_Bcast, buf, len, root, comm)
}

/// Whether colltune's own control-plane broadcasts (on its private
/// communicators) avoid the library's `MPI_Bcast`: set where Open MPI's
/// broadcast rules differ between ranks (a rules file some ranks loaded and
/// others did not), where the library's broadcast could run different
/// algorithms on different ranks.
static P2P_BCASTS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// See [`P2P_BCASTS`].
pub fn set_p2p_bcasts() {
    P2P_BCASTS.store(true, std::sync::atomic::Ordering::Release);
}

/// See [`P2P_BCASTS`].
pub fn p2p_bcasts() -> bool {
    P2P_BCASTS.load(std::sync::atomic::Ordering::Acquire)
}

/// The tag of [`tree_bcast`]'s messages.
const TREE_TAG: c_int = 0x7c18;

/// A binomial-tree broadcast of `len` bytes from `root` with plain sends
/// and receives (for colltune's control plane on its private
/// communicators, [`P2P_BCASTS`]).
///
/// # Safety
/// `buf` holds `len` bytes on every rank.
pub unsafe fn tree_bcast(
    buf: *mut u8,
    len: u64,
    root: usize,
    comm: MPI_Comm,
) -> Result<(), MpiError> {
    let (rank, size) = (comm_rank(comm)?, comm_size(comm)?);
    let rel = (rank + size - root) % size;
    let mut mask = 1usize;
    while mask < size {
        if rel & mask != 0 {
            recv(buf, len, (rel - mask + root) % size, TREE_TAG, comm)?;
            break;
        }
        mask <<= 1;
    }
    mask >>= 1;
    while mask > 0 {
        if rel + mask < size {
            send(
                buf,
                len,
                (rel + mask + root) % size,
                TREE_TAG,
                SendMode::Standard,
                comm,
            )?;
        }
        mask >>= 1;
    }
    Ok(())
}

/// `MPI_Bcast`'s signature, for [`bytes_bcast`].
type BcastFn =
    unsafe extern "C" fn(*mut c_void, c_int, ffi::MPI_Datatype, c_int, MPI_Comm) -> c_int;

/// A broadcast of `len` bytes through `f` (`PMPI_Bcast` or `MPI_Bcast`).
///
/// # Safety
/// As [`library_bcast`].
unsafe fn bytes_bcast(
    f: BcastFn,
    buf: *mut u8,
    len: u64,
    root: usize,
    comm: MPI_Comm,
) -> Result<(), MpiError> {
    check(
        f(buf_ptr(buf, len), count(len)?, byte(), root as c_int, comm),
        "MPI_Bcast",
    )
}

/// `MPI_Bcast` of `len` bytes through the `MPI_` symbol, which a PMPI tool
/// in the process (the drop-in under `LD_PRELOAD`) intercepts.
///
/// # Safety
/// As [`library_bcast`].
pub unsafe fn interposed_bcast(
    buf: *mut u8,
    len: u64,
    root: usize,
    comm: MPI_Comm,
) -> Result<(), MpiError> {
    bytes_bcast(ffi::MPI_Bcast, buf, len, root, comm)
}
