//! One-sided communication: windows (plain and shared), puts and their synchronisation; progress.

use super::*;

/// Allocates a window of at least `len` bytes on every rank of `comm`
/// (collective), in whole pages: Debian's MPICH 4.0.2 (ch4:ucx) loses puts
/// into windows of some sizes (1, 7, 8, 65537 bytes; 64 and 4096 work), as
/// `tests/c/win_sizes.c` shows.
pub fn win_allocate(len: u64, comm: MPI_Comm) -> Result<(MPI_Win, *mut u8), MpiError> {
    let mut base: *mut u8 = ptr::null_mut();
    let mut win = win_null();
    let len = len.max(1).div_ceil(4096).saturating_mul(4096);
    let size = ffi::MPI_Aint::try_from(len).map_err(|_| MpiError {
        call: "MPI_Win_allocate",
        code: -1,
        message: format!("{len} bytes is too large a window"),
    })?;
    // SAFETY: base receives a pointer to `len` bytes owned by the window.
    check(
        unsafe {
            ffi::PMPI_Win_allocate(
                size,
                1,
                ffi::RSMPI_INFO_NULL,
                comm,
                (&mut base as *mut *mut u8).cast::<c_void>(),
                &mut win,
            )
        },
        "MPI_Win_allocate",
    )?;
    Ok((win, base))
}

pub fn win_free(win: &mut MPI_Win) -> Result<(), MpiError> {
    // SAFETY: win was created by win_allocate.
    check(unsafe { ffi::PMPI_Win_free(win) }, "MPI_Win_free")
}

/// # Safety
/// `buf` must stay valid for reads of `len` bytes until the epoch closes.
pub unsafe fn put(
    buf: *const u8,
    len: u64,
    to: usize,
    disp: u64,
    win: MPI_Win,
) -> Result<(), MpiError> {
    let n = count(len)?;
    check(
        ffi::PMPI_Put(
            buf_ptr(buf, len),
            n,
            byte(),
            to as c_int,
            disp as ffi::MPI_Aint,
            n,
            byte(),
            win,
        ),
        "MPI_Put",
    )
}

pub fn win_fence(win: MPI_Win) -> Result<(), MpiError> {
    // SAFETY: valid window handle.
    check(unsafe { ffi::PMPI_Win_fence(0, win) }, "MPI_Win_fence")
}

/// `MPI_Win_post`: exposes the window to these ranks.
pub fn win_post(ranks: &[usize], comm: MPI_Comm, win: MPI_Win) -> Result<(), MpiError> {
    with_group(ranks, comm, |g| {
        // SAFETY: g and win are valid handles.
        check(unsafe { ffi::PMPI_Win_post(g, 0, win) }, "MPI_Win_post")
    })
}

/// `MPI_Win_start`: opens an access epoch to these ranks.
pub fn win_start(ranks: &[usize], comm: MPI_Comm, win: MPI_Win) -> Result<(), MpiError> {
    with_group(ranks, comm, |g| {
        // SAFETY: g and win are valid handles.
        check(unsafe { ffi::PMPI_Win_start(g, 0, win) }, "MPI_Win_start")
    })
}

/// Runs `f` with the group of these ranks of `comm`, freed afterwards.
fn with_group<R>(
    ranks: &[usize],
    comm: MPI_Comm,
    f: impl FnOnce(MPI_Group) -> Result<R, MpiError>,
) -> Result<R, MpiError> {
    let mut g = group_of(ranks, comm)?;
    let out = f(g);
    // SAFETY: g was created by group_of.
    unsafe { ffi::PMPI_Group_free(&mut g) };
    out
}

pub fn win_complete(win: MPI_Win) -> Result<(), MpiError> {
    // SAFETY: valid window handle.
    check(unsafe { ffi::PMPI_Win_complete(win) }, "MPI_Win_complete")
}

pub fn win_wait(win: MPI_Win) -> Result<(), MpiError> {
    // SAFETY: valid window handle.
    check(unsafe { ffi::PMPI_Win_wait(win) }, "MPI_Win_wait")
}

/// `MPI_Win_allocate_shared`: this rank's part of `len` bytes (whole
/// pages) of a window every rank of `comm` (ranks of one node) maps;
/// collective. Returns the window and this rank's part.
pub fn win_allocate_shared(len: u64, comm: MPI_Comm) -> Result<(MPI_Win, *mut u8), MpiError> {
    let mut base: *mut u8 = ptr::null_mut();
    let mut win = win_null();
    let len = len.div_ceil(4096).saturating_mul(4096);
    let size = ffi::MPI_Aint::try_from(len).map_err(|_| MpiError {
        call: "MPI_Win_allocate_shared",
        code: -1,
        message: format!("{len} bytes is too large a window"),
    })?;
    // SAFETY: base receives a pointer to `len` bytes owned by the window.
    check(
        unsafe {
            ffi::PMPI_Win_allocate_shared(
                size,
                1,
                ffi::RSMPI_INFO_NULL,
                comm,
                (&mut base as *mut *mut u8).cast::<c_void>(),
                &mut win,
            )
        },
        "MPI_Win_allocate_shared",
    )?;
    Ok((win, base))
}

/// `MPI_Win_shared_query`: where rank `rank` (of the window's
/// communicator) has its part, in this process, and its length.
pub fn win_shared_query(win: MPI_Win, rank: usize) -> Result<(*mut u8, u64), MpiError> {
    let mut base: *mut u8 = ptr::null_mut();
    let mut size: ffi::MPI_Aint = 0;
    let mut unit: c_int = 0;
    // SAFETY: valid window and out pointers.
    check(
        unsafe {
            ffi::PMPI_Win_shared_query(
                win,
                rank as c_int,
                &mut size,
                &mut unit,
                (&mut base as *mut *mut u8).cast::<c_void>(),
            )
        },
        "MPI_Win_shared_query",
    )?;
    Ok((base, size.max(0) as u64))
}

/// `MPI_Win_lock_all(MPI_MODE_NOCHECK)`: one passive-target epoch to every
/// rank, kept open for the window's life (the MPI-3 unified model's way of
/// making loads, stores and `MPI_Win_sync` legal at any time).
pub fn win_lock_all(win: MPI_Win) -> Result<(), MpiError> {
    // SAFETY: valid window handle.
    check(
        unsafe { ffi::PMPI_Win_lock_all(ffi::MPI_MODE_NOCHECK as c_int, win) },
        "MPI_Win_lock_all",
    )
}

pub fn win_unlock_all(win: MPI_Win) -> Result<(), MpiError> {
    // SAFETY: valid window handle.
    check(
        unsafe { ffi::PMPI_Win_unlock_all(win) },
        "MPI_Win_unlock_all",
    )
}

/// `MPI_Win_sync`: a memory barrier between this process's view of the
/// window and the window's memory.
/// Whether `win`'s memory model is `MPI_WIN_UNIFIED` (public and private
/// copies are one memory: what Open MPI 4.1's shared-memory windows
/// report).
pub fn win_unified(win: MPI_Win) -> Result<bool, MpiError> {
    let mut val: *mut c_int = ptr::null_mut();
    let mut flag: c_int = 0;
    // SAFETY: valid window; MPI stores a pointer to the model's int in val.
    check(
        unsafe {
            ffi::PMPI_Win_get_attr(
                win,
                ffi::MPI_WIN_MODEL as c_int,
                (&mut val as *mut *mut c_int).cast(),
                &mut flag,
            )
        },
        "MPI_Win_get_attr",
    )?;
    // MPICH's window models are a named enum: bindgen prefixes its constants.
    #[cfg(colltune_win_model_enum)]
    let unified = ffi::MPIR_Win_model_MPI_WIN_UNIFIED as c_int;
    #[cfg(not(colltune_win_model_enum))]
    let unified = ffi::MPI_WIN_UNIFIED as c_int;
    // SAFETY: when set, the attribute points at an int the window owns.
    Ok(flag != 0 && !val.is_null() && unsafe { *val } == unified)
}

pub fn win_sync(win: MPI_Win) -> Result<(), MpiError> {
    // SAFETY: valid window handle.
    check(unsafe { ffi::PMPI_Win_sync(win) }, "MPI_Win_sync")
}

/// One turn of MPI's progress engine on `comm` (`MPI_Iprobe` for any
/// message, which receives nothing): for a rank waiting on shared memory
/// while its own messages are in flight.
pub fn progress(comm: MPI_Comm) -> Result<(), MpiError> {
    let mut flag: c_int = 0;
    // SAFETY: valid communicator and out pointer; the status is ignored.
    check(
        unsafe {
            ffi::PMPI_Iprobe(
                ffi::RSMPI_ANY_SOURCE,
                ffi::RSMPI_ANY_TAG,
                comm,
                &mut flag,
                ffi::RSMPI_STATUS_IGNORE,
            )
        },
        "MPI_Iprobe",
    )
}
