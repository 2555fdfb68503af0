//! Checked raw MPI calls: every return code becomes a `Result`, and
//! nothing more (the safe layers are [`control`](super::control),
//! [`p2p`](super::p2p) and [`exec`](super::exec)).
//!
//! rsmpi has no dynamic request sets over borrowed sub-ranges of one buffer,
//! no `MPI_Rsend`, no one-sided windows, and it ignores return codes; the
//! executors need all four, so they call MPI here. Communicators used through
//! this module carry `MPI_ERRORS_RETURN`, so failures come back as codes.
//! Crate-private: nothing outside colltune-mpi calls MPI raw.
//!
//! Every call goes to the MPI library's profiling entry points (`PMPI_`):
//! what colltune sends, receives and sets up for itself is not the
//! application's traffic, so a profiling tool (which defines the `MPI_`
//! names) never counts it, and the interposition library never calls
//! itself. The last section holds what the C-facing layer
//! ([`capi`](crate::capi)) needs: the user's own call passed to the library
//! unchanged, datatype inspection, packing, attributes, error handlers,
//! Fortran handles.

use std::ffi::{c_int, c_void};
use std::ptr;

use mpi::ffi;
pub use mpi::ffi::{MPI_Comm, MPI_Group, MPI_Request, MPI_Win};

use colltune_algorithms::SendMode;

use super::{MpiError, Op};

/// Turns an MPI return code into a `Result` naming the call. The success
/// test is inlined at every call site (one compare; it was a call of 22
/// instructions, four per root of a linear broadcast: issue 28), the
/// error's message built out of line.
#[inline]
pub fn check(code: c_int, call: &'static str) -> Result<(), MpiError> {
    if code == ffi::MPI_SUCCESS as c_int {
        return Ok(());
    }
    Err(error(code, call))
}

/// The error of a failed MPI call: its code, the call and the library's
/// message for the code.
#[cold]
#[inline(never)]
fn error(code: c_int, call: &'static str) -> MpiError {
    let mut buf = vec![0u8; ffi::MPI_MAX_ERROR_STRING as usize + 1];
    let mut len: c_int = 0;
    // SAFETY: buf holds MPI_MAX_ERROR_STRING bytes as MPI_Error_string requires.
    let rc = unsafe { ffi::PMPI_Error_string(code, buf.as_mut_ptr().cast(), &mut len) };
    let message = if rc == ffi::MPI_SUCCESS as c_int {
        String::from_utf8_lossy(&buf[..len.max(0) as usize]).into_owned()
    } else {
        format!("error code {code}")
    };
    MpiError {
        call,
        code,
        message,
    }
}

fn byte() -> ffi::MPI_Datatype {
    // SAFETY: reading an immutable MPI handle exported by the MPI library.
    unsafe { ffi::RSMPI_UINT8_T }
}

/// A buffer pointer MPI can take. Rust's empty slices point at address 1,
/// which is Open MPI's `MPI_IN_PLACE`: for zero bytes, point at a real byte.
fn buf_ptr<T>(p: *const T, len: u64) -> *mut c_void {
    static EMPTY: [u8; 8] = [0; 8];
    if len == 0 {
        EMPTY.as_ptr() as *mut c_void
    } else {
        p as *mut c_void
    }
}

fn count(len: u64) -> Result<c_int, MpiError> {
    c_int::try_from(len).map_err(|_| MpiError {
        call: "count",
        code: -1,
        message: format!("{len} bytes exceed one MPI message (2^31 - 1 bytes)"),
    })
}

pub fn comm_world() -> MPI_Comm {
    // SAFETY: reading an immutable MPI handle.
    unsafe { ffi::RSMPI_COMM_WORLD }
}

pub fn comm_self() -> MPI_Comm {
    // SAFETY: reading an immutable MPI handle.
    unsafe { ffi::RSMPI_COMM_SELF }
}

pub fn comm_null() -> MPI_Comm {
    // SAFETY: reading an immutable MPI handle.
    unsafe { ffi::RSMPI_COMM_NULL }
}

pub fn request_null() -> MPI_Request {
    // SAFETY: reading an immutable MPI handle.
    unsafe { ffi::RSMPI_REQUEST_NULL }
}

pub fn win_null() -> MPI_Win {
    // SAFETY: reading an immutable MPI handle.
    unsafe { ffi::RSMPI_WIN_NULL }
}

pub fn initialized() -> bool {
    let mut flag: c_int = 0;
    // SAFETY: MPI_Initialized may be called at any time.
    unsafe { ffi::PMPI_Initialized(&mut flag) };
    flag != 0
}

pub fn finalized() -> bool {
    let mut flag: c_int = 0;
    // SAFETY: MPI_Finalized may be called at any time.
    unsafe { ffi::PMPI_Finalized(&mut flag) };
    flag != 0
}

pub fn wtime() -> f64 {
    // SAFETY: no arguments.
    unsafe { ffi::PMPI_Wtime() }
}

pub fn comm_rank(comm: MPI_Comm) -> Result<usize, MpiError> {
    let mut r: c_int = 0;
    // SAFETY: valid out pointer.
    check(
        unsafe { ffi::PMPI_Comm_rank(comm, &mut r) },
        "MPI_Comm_rank",
    )?;
    Ok(r as usize)
}

pub fn comm_size(comm: MPI_Comm) -> Result<usize, MpiError> {
    let mut s: c_int = 0;
    // SAFETY: valid out pointer.
    check(
        unsafe { ffi::PMPI_Comm_size(comm, &mut s) },
        "MPI_Comm_size",
    )?;
    Ok(s as usize)
}

/// `MPI_Comm_size` for the per-call path: None on any error (the caller
/// then takes the path that reports it), no message built.
#[inline]
pub fn comm_size_raw(comm: MPI_Comm) -> Option<usize> {
    let mut s: c_int = 0;
    // SAFETY: valid out pointer.
    let rc = unsafe { ffi::PMPI_Comm_size(comm, &mut s) };
    (rc == ffi::MPI_SUCCESS as c_int).then_some(s as usize)
}

/// `MPI_Type_size` for the per-call path: None on any error or where the
/// size does not fit an int (`MPI_UNDEFINED`).
#[inline]
pub fn type_size_raw(dt: MPI_Datatype) -> Option<u64> {
    let mut n: c_int = 0;
    // SAFETY: valid out pointer.
    let rc = unsafe { ffi::PMPI_Type_size(dt, &mut n) };
    (rc == ffi::MPI_SUCCESS as c_int && n >= 0).then_some(n as u64)
}

/// Whether `comm` is an intercommunicator (colltune handles only intra).
pub fn comm_is_inter(comm: MPI_Comm) -> Result<bool, MpiError> {
    let mut flag: c_int = 0;
    // SAFETY: valid out pointer.
    check(
        unsafe { ffi::PMPI_Comm_test_inter(comm, &mut flag) },
        "MPI_Comm_test_inter",
    )?;
    Ok(flag != 0)
}

/// The tag of colltune's `MPI_Comm_create_group` calls (on the parent
/// communicator; colltune's algorithms use tags below 16).
const CREATE_TAG: c_int = 0x7c17;

/// A new communicator of `of`'s ranks, in `of`'s order, whose errors
/// return codes instead of aborting. Not a duplicate: no attribute of
/// `of` is copied (the application's copy callbacks never run), and no
/// error handler of the application's is set on it. Made on `parent`:
/// where that is `of` itself, with `MPI_Comm_split` (collective over `of`);
/// else (a communicator holding every rank of `of`: colltune's private
/// `MPI_COMM_WORLD`) with `MPI_Comm_create_group`, collective over `of`'s
/// ranks only. (`MPI_Comm_create_group` on `of` itself would not do: Open
/// MPI 4.1 copies the parent's attributes there.) A failure is reported to
/// `parent`'s error handler, so colltune passes its own private
/// communicator where it can.
pub fn comm_private(parent: MPI_Comm, of: MPI_Comm) -> Result<MPI_Comm, MpiError> {
    let mut made = comm_null();
    if parent == of {
        made = comm_split(of, Some(0), comm_rank(of)?)?;
    } else {
        // The group is built from the parent's own (its ranks translated),
        // not taken from `of`: MPICH 4.0's MPI_Comm_create_group crashes
        // on a group taken from a communicator split from the parent's
        // world (tests/c/plain_bcast.c's halves, jobs/test-mpi.sh mpich4).
        let ranks = ranks_in(of, parent)?.ok_or(MpiError {
            code: 0,
            call: "MPI_Comm_create_group",
            message: "a rank of the communicator is not in colltune's world".into(),
        })?;
        let ranks: Vec<usize> = ranks.iter().map(|&r| r as usize).collect();
        let mut group = group_of(&ranks, parent)?;
        // SAFETY: the group just made; valid out pointer.
        let rc = unsafe { ffi::PMPI_Comm_create_group(parent, group, CREATE_TAG, &mut made) };
        // SAFETY: the group obtained above.
        unsafe { ffi::PMPI_Group_free(&mut group) };
        check(rc, "MPI_Comm_create_group")?;
    }
    // SAFETY: the communicator just created.
    if let Err(e) = check(
        unsafe { ffi::PMPI_Comm_set_errhandler(made, ffi::RSMPI_ERRORS_RETURN) },
        "MPI_Comm_set_errhandler",
    ) {
        let _ = comm_free(&mut made);
        return Err(e);
    }
    Ok(made)
}

fn group_null() -> MPI_Group {
    // SAFETY: reading an immutable handle.
    unsafe { ffi::RSMPI_GROUP_NULL }
}

/// The `MPI_COMM_WORLD` rank of each rank of `comm`, in `comm`'s order;
/// None where some rank is not in this process's `MPI_COMM_WORLD` (a
/// communicator with processes of another job). Local: no communication.
pub fn world_ranks(comm: MPI_Comm) -> Result<Option<Vec<i32>>, MpiError> {
    ranks_in(comm, comm_world())
}

/// The rank in `other` of each rank of `comm`, in `comm`'s order; None
/// where some rank of `comm` is not in `other`. Local: no communication.
pub fn ranks_in(comm: MPI_Comm, other: MPI_Comm) -> Result<Option<Vec<i32>>, MpiError> {
    let n = comm_size(comm)?;
    let mut group = group_null();
    let mut theirs = group_null();
    // SAFETY: valid out pointers, valid communicators.
    check(
        unsafe { ffi::PMPI_Comm_group(comm, &mut group) },
        "MPI_Comm_group",
    )?;
    // SAFETY: as above.
    let rc = unsafe { ffi::PMPI_Comm_group(other, &mut theirs) };
    if let Err(e) = check(rc, "MPI_Comm_group") {
        // SAFETY: the group obtained above.
        unsafe { ffi::PMPI_Group_free(&mut group) };
        return Err(e);
    }
    let ranks: Vec<c_int> = (0..n as c_int).collect();
    let mut out = vec![0 as c_int; n];
    // SAFETY: n ranks in, n out.
    let rc = unsafe {
        ffi::PMPI_Group_translate_ranks(group, n as c_int, ranks.as_ptr(), theirs, out.as_mut_ptr())
    };
    // SAFETY: the groups obtained above.
    unsafe {
        ffi::PMPI_Group_free(&mut group);
        ffi::PMPI_Group_free(&mut theirs);
    }
    check(rc, "MPI_Group_translate_ranks")?;
    // SAFETY: reading an immutable handle.
    let undefined = unsafe { ffi::RSMPI_UNDEFINED };
    Ok((!out.contains(&undefined)).then_some(out))
}

pub fn comm_free(comm: &mut MPI_Comm) -> Result<(), MpiError> {
    // SAFETY: comm is a communicator this module created.
    check(unsafe { ffi::PMPI_Comm_free(comm) }, "MPI_Comm_free")
}

/// `MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)`: the ranks of `comm` that
/// share this rank's node, ordered by `key`, as a new communicator.
pub fn comm_split_shared(comm: MPI_Comm, key: usize) -> Result<MPI_Comm, MpiError> {
    let mut shared = comm_null();
    // SAFETY: valid handles and out pointer.
    check(
        unsafe {
            ffi::PMPI_Comm_split_type(
                comm,
                ffi::RSMPI_COMM_TYPE_SHARED,
                key as c_int,
                ffi::RSMPI_INFO_NULL,
                &mut shared,
            )
        },
        "MPI_Comm_split_type",
    )?;
    Ok(shared)
}

/// `MPI_Comm_split`: the ranks of `comm` with the same `color`, ordered by
/// `key`, as a new communicator; `None` (`MPI_UNDEFINED`) joins none and
/// gets `MPI_COMM_NULL`. Collective over `comm`.
pub fn comm_split(comm: MPI_Comm, color: Option<u32>, key: usize) -> Result<MPI_Comm, MpiError> {
    let color = match color {
        Some(c) => c as c_int,
        // SAFETY: reading an immutable handle.
        None => unsafe { ffi::RSMPI_UNDEFINED },
    };
    let mut out = comm_null();
    // SAFETY: valid out pointer.
    check(
        unsafe { ffi::PMPI_Comm_split(comm, color, key as c_int, &mut out) },
        "MPI_Comm_split",
    )?;
    Ok(out)
}

/// `MPI_Send`, or `MPI_Rsend` in [`SendMode::Ready`].
///
/// # Safety
/// `buf` must be valid for reads of `len` bytes until the send completes.
pub unsafe fn send(
    buf: *const u8,
    len: u64,
    to: usize,
    tag: c_int,
    mode: SendMode,
    comm: MPI_Comm,
) -> Result<(), MpiError> {
    let n = count(len)?;
    match mode {
        SendMode::Ready => check(
            ffi::PMPI_Rsend(buf_ptr(buf, len), n, byte(), to as c_int, tag, comm),
            "MPI_Rsend",
        ),
        SendMode::Standard => check(
            ffi::PMPI_Send(buf_ptr(buf, len), n, byte(), to as c_int, tag, comm),
            "MPI_Send",
        ),
    }
}

/// `MPI_Isend`, or `MPI_Irsend` in [`SendMode::Ready`].
///
/// # Safety
/// `buf` must stay valid for reads of `len` bytes until the request completes.
pub unsafe fn isend(
    buf: *const u8,
    len: u64,
    to: usize,
    tag: c_int,
    mode: SendMode,
    comm: MPI_Comm,
) -> Result<MPI_Request, MpiError> {
    let n = count(len)?;
    let mut req = request_null();
    let buf = buf_ptr(buf, len);
    match mode {
        SendMode::Ready => check(
            ffi::PMPI_Irsend(buf, n, byte(), to as c_int, tag, comm, &mut req),
            "MPI_Irsend",
        )?,
        SendMode::Standard => check(
            ffi::PMPI_Isend(buf, n, byte(), to as c_int, tag, comm, &mut req),
            "MPI_Isend",
        )?,
    }
    Ok(req)
}

/// # Safety
/// `buf` must be valid for writes of `len` bytes.
pub unsafe fn recv(
    buf: *mut u8,
    len: u64,
    from: usize,
    tag: c_int,
    comm: MPI_Comm,
) -> Result<(), MpiError> {
    check(
        ffi::PMPI_Recv(
            buf_ptr(buf, len),
            count(len)?,
            byte(),
            from as c_int,
            tag,
            comm,
            ffi::RSMPI_STATUS_IGNORE,
        ),
        "MPI_Recv",
    )
}

/// # Safety
/// `buf` must stay valid for writes of `len` bytes until the request completes.
pub unsafe fn irecv(
    buf: *mut u8,
    len: u64,
    from: usize,
    tag: c_int,
    comm: MPI_Comm,
) -> Result<MPI_Request, MpiError> {
    let mut req = request_null();
    check(
        ffi::PMPI_Irecv(
            buf_ptr(buf, len),
            count(len)?,
            byte(),
            from as c_int,
            tag,
            comm,
            &mut req,
        ),
        "MPI_Irecv",
    )?;
    Ok(req)
}

/// # Safety
/// As for [`send`] and [`recv`]; the two ranges must not overlap.
#[allow(clippy::too_many_arguments)]
pub unsafe fn sendrecv(
    sbuf: *const u8,
    slen: u64,
    to: usize,
    stag: c_int,
    rbuf: *mut u8,
    rlen: u64,
    from: usize,
    rtag: c_int,
    comm: MPI_Comm,
) -> Result<(), MpiError> {
    check(
        ffi::PMPI_Sendrecv(
            buf_ptr(sbuf, slen),
            count(slen)?,
            byte(),
            to as c_int,
            stag,
            buf_ptr(rbuf, rlen),
            count(rlen)?,
            byte(),
            from as c_int,
            rtag,
            comm,
            ffi::RSMPI_STATUS_IGNORE,
        ),
        "MPI_Sendrecv",
    )
}

/// Whether `req` is `MPI_REQUEST_NULL` (completed and freed, or never posted).
pub fn is_null(req: MPI_Request) -> bool {
    req == request_null()
}

/// What one [`waitsome`] completed: for each request, its index in the
/// array and, if it failed, its own error. Holds the scratch arrays
/// `MPI_Waitsome` fills, so one set serves a whole call without allocating.
#[derive(Default)]
pub struct Completions {
    indices: Vec<c_int>,
    statuses: Vec<ffi::MPI_Status>,
    /// (index into the request array, the request's error if it failed)
    pub done: Vec<(usize, Option<MpiError>)>,
}

/// `MPI_Waitsome`: waits until at least one of `reqs` completes and lists in
/// `out.done` every request that did (each becomes `MPI_REQUEST_NULL`,
/// failed ones included: they are freed here). A request that failed (say
/// `MPI_ERR_TRUNCATE`) is reported with its own error and the call still
/// succeeds; an error of the call itself (or no active request) is `Err`.
/// Costs O(`reqs.len()`): callers keep the array short.
pub fn waitsome(reqs: &mut [MPI_Request], out: &mut Completions) -> Result<(), MpiError> {
    some(reqs, out, true)
}

/// `MPI_Testsome`: as [`waitsome`], but returns at once, `out.done` empty
/// when nothing completed (or no request is active).
pub fn testsome(reqs: &mut [MPI_Request], out: &mut Completions) -> Result<(), MpiError> {
    some(reqs, out, false)
}

fn some(reqs: &mut [MPI_Request], out: &mut Completions, wait: bool) -> Result<(), MpiError> {
    let call = if wait { "MPI_Waitsome" } else { "MPI_Testsome" };
    out.done.clear();
    let n = reqs.len();
    out.indices.resize(n, 0);
    // SAFETY: MPI_Status is a plain C struct; all-zero is a valid value.
    out.statuses
        .resize_with(n, || unsafe { std::mem::zeroed::<ffi::MPI_Status>() });
    let mut outcount: c_int = 0;
    let n_int = c_int::try_from(n).map_err(|_| MpiError {
        call,
        code: -1,
        message: format!("{n} requests exceed an int"),
    })?;
    let f = if wait {
        ffi::PMPI_Waitsome
    } else {
        ffi::PMPI_Testsome
    };
    // SAFETY: reqs is a valid array of requests owned by the caller; indices
    // and statuses hold n entries each, as MPI_Waitsome/Testsome may write.
    let rc = unsafe {
        f(
            n_int,
            reqs.as_mut_ptr(),
            &mut outcount,
            out.indices.as_mut_ptr(),
            out.statuses.as_mut_ptr(),
        )
    };
    let in_status =
        rc != ffi::MPI_SUCCESS as c_int && error_class(rc) == ffi::MPI_ERR_IN_STATUS as c_int;
    if !in_status {
        check(rc, call)?;
    }
    // SAFETY: reading an immutable MPI constant.
    if outcount == unsafe { ffi::RSMPI_UNDEFINED } || outcount < 0 {
        if !wait {
            return Ok(());
        }
        return Err(MpiError {
            call,
            code: -1,
            message: "no active request".into(),
        });
    }
    for k in 0..outcount as usize {
        let i = out.indices[k] as usize;
        let err = if in_status {
            let code = out.statuses[k].MPI_ERROR;
            check(code, call).err()
        } else {
            None
        };
        if err.is_some() && !is_null(reqs[i]) {
            // A failed request is complete but may be left allocated (Open
            // MPI frees only the first one in error): free it.
            // SAFETY: a completed request of the caller's array.
            unsafe { ffi::PMPI_Request_free(&mut reqs[i]) };
            reqs[i] = request_null();
        }
        out.done.push((i, err));
    }
    Ok(())
}

/// `MPI_Cancel`: asks MPI to cancel `req` (a no-op once it matched); the
/// request must still be completed, by [`wait_cancelled`].
pub fn cancel(req: &mut MPI_Request) -> Result<(), MpiError> {
    if is_null(*req) {
        return Ok(());
    }
    // SAFETY: an active request owned by the caller.
    check(unsafe { ffi::PMPI_Cancel(req) }, "MPI_Cancel")
}

/// `MPI_Wait` on `req`, then `MPI_Test_cancelled`: whether the request was
/// cancelled (false: it completed normally). `req` becomes null.
pub fn wait_cancelled(req: &mut MPI_Request) -> Result<bool, MpiError> {
    if is_null(*req) {
        return Ok(false);
    }
    // SAFETY: MPI_Status is a plain C struct; all-zero is a valid value.
    let mut status = unsafe { std::mem::zeroed::<ffi::MPI_Status>() };
    // SAFETY: a request owned by the caller, a valid out pointer.
    let waited = check(unsafe { ffi::PMPI_Wait(req, &mut status) }, "MPI_Wait");
    if waited.is_err() && !is_null(*req) {
        // Completed in error and left allocated: free it.
        // SAFETY: a completed request owned by the caller.
        unsafe { ffi::PMPI_Request_free(req) };
        *req = request_null();
    }
    waited?;
    let mut flag: c_int = 0;
    // SAFETY: status was filled by MPI_Wait.
    check(
        unsafe { ffi::PMPI_Test_cancelled(&status, &mut flag) },
        "MPI_Test_cancelled",
    )?;
    Ok(flag != 0)
}

/// The error class of an MPI error code (`MPI_Error_class`).
fn error_class(code: c_int) -> c_int {
    let mut class: c_int = code;
    // SAFETY: valid out pointer; any code may be asked about.
    let rc = unsafe { ffi::PMPI_Error_class(code, &mut class) };
    if rc == ffi::MPI_SUCCESS as c_int {
        class
    } else {
        code
    }
}

pub fn waitall(reqs: &mut [MPI_Request]) -> Result<(), MpiError> {
    if reqs.is_empty() {
        return Ok(());
    }
    // SAFETY: reqs is a valid array of requests owned by the caller.
    check(
        unsafe {
            ffi::PMPI_Waitall(
                reqs.len() as c_int,
                reqs.as_mut_ptr(),
                ffi::RSMPI_STATUSES_IGNORE,
            )
        },
        "MPI_Waitall",
    )
}

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

fn group_of(ranks: &[usize], comm: MPI_Comm) -> Result<MPI_Group, MpiError> {
    // SAFETY: reading an immutable handle.
    let mut all = unsafe { ffi::RSMPI_GROUP_NULL };
    // SAFETY: valid out pointer.
    check(
        unsafe { ffi::PMPI_Comm_group(comm, &mut all) },
        "MPI_Comm_group",
    )?;
    let r: Vec<c_int> = ranks.iter().map(|&r| r as c_int).collect();
    // SAFETY: reading an immutable handle.
    let mut g = unsafe { ffi::RSMPI_GROUP_NULL };
    // SAFETY: r holds ranks.len() ints.
    let rc = unsafe { ffi::PMPI_Group_incl(all, r.len() as c_int, r.as_ptr(), &mut g) };
    // SAFETY: all was created above.
    unsafe { ffi::PMPI_Group_free(&mut all) };
    check(rc, "MPI_Group_incl")?;
    Ok(g)
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

/// One session of the MPI tool interface: `MPI_T_init_thread` when
/// opened, `MPI_T_finalize` when dropped. On Open MPI colltune opens one
/// around each use, so its initialisations and finalisations come in
/// pairs nested in the application's (MPI_T counts them): an application
/// that finalises its last session finds MPI_T finalised, as without
/// colltune. Elsewhere (MPICH and its derivatives) the first session is
/// held until the process ends, because there finalising MPI_T is not
/// safe to pair: MPICH 4.0 cannot initialise it again (every
/// `MPI_T_cvar_get_index` fails afterwards, and an `MPI_Init` after it
/// crashes), and MPICH up to 5.0.1 frees its control variables at an
/// `MPI_T_finalize` after `MPI_Init` that its later collectives still read
/// (pmodels/mpich#7954). Holding one session keeps the application's own
/// pairs from reaching zero too; all it can see is that MPI_T still
/// answers after its last `MPI_T_finalize`.
#[must_use]
pub struct MpiT {
    /// Finalised when dropped (Open MPI); else the process's held session.
    paired: bool,
}

impl MpiT {
    /// Opens a session at MPI's own thread level: Open MPI takes the level
    /// `MPI_T_init_thread` asks for as MPI's (`MPI_Query_thread` would then
    /// answer it), so colltune asks for the level the program has.
    pub fn open() -> Result<MpiT, MpiError> {
        // The library's lineage as `abi` classifies it (one source of
        // truth), not its name.
        if crate::abi::runtime().family == crate::abi::Family::OpenMpi {
            Self::init()?;
            return Ok(MpiT { paired: true });
        }
        static HELD: std::sync::Mutex<bool> = std::sync::Mutex::new(false);
        let mut held = HELD.lock().unwrap_or_else(|p| p.into_inner());
        if !*held {
            Self::init()?;
            *held = true;
        }
        Ok(MpiT { paired: false })
    }

    /// Keeps one session open until the process ends, for a process that is
    /// colltune's own program (`bench`, `tune`, `verify`, after its
    /// `MPI_Init`): there is no application's MPI_T to stay paired with, and
    /// on Open MPI each first `MPI_T_init_thread` after the count fell to
    /// zero registers every framework again (it opens every component; 1.5-2
    /// s here, where libpsm2's constructor sleeps), which the benchmark
    /// paid at every forced algorithm and every point that writes a
    /// variable. Later sessions nest in this one. Idempotent; an error is
    /// left to the variables' own reads and writes to report.
    pub fn hold_for_process() {
        static HELD: std::sync::OnceLock<Option<MpiT>> = std::sync::OnceLock::new();
        HELD.get_or_init(|| MpiT::open().ok());
    }

    fn init() -> Result<(), MpiError> {
        let mut level: c_int = 0;
        // SAFETY: valid out pointer; only between MPI_Init and MPI_Finalize.
        let known = initialized()
            && !finalized()
            && unsafe { ffi::PMPI_Query_thread(&mut level) } == ffi::MPI_SUCCESS as c_int;
        if !known {
            // SAFETY: reading a constant of the library's.
            level = unsafe { ffi::RSMPI_THREAD_SINGLE };
        }
        let mut provided: c_int = 0;
        // SAFETY: valid out pointer; MPI_T may be initialised at any time.
        let rc = unsafe { ffi::PMPI_T_init_thread(level, &mut provided) };
        check(rc, "MPI_T_init_thread")
    }
}

/// Whether MPI_T is initialised now (by the application: colltune holds
/// no session between its uses on Open MPI): `MPI_T_cvar_get_num` answers
/// `MPI_T_ERR_NOT_INITIALIZED` otherwise. No side effect; any time.
pub fn mpi_t_initialized() -> bool {
    let mut n: c_int = 0;
    // SAFETY: valid out pointer.
    unsafe { ffi::PMPI_T_cvar_get_num(&mut n) == ffi::MPI_SUCCESS as c_int }
}

impl Drop for MpiT {
    fn drop(&mut self) {
        if self.paired {
            // SAFETY: pairs the MPI_T_init_thread of `open`.
            unsafe { ffi::PMPI_T_finalize() };
        }
    }
}

/// The index of the control variable `name`; an error naming it when the
/// library has none of that name.
fn cvar_index(name: &str) -> Result<c_int, MpiError> {
    let cname = std::ffi::CString::new(name).map_err(|_| MpiError {
        call: "MPI_T_cvar_get_index",
        code: -1,
        message: format!("bad control variable name {name:?}"),
    })?;
    let mut idx: c_int = -1;
    // SAFETY: NUL-terminated name, valid out pointer.
    check(
        unsafe { ffi::PMPI_T_cvar_get_index(cname.as_ptr(), &mut idx) },
        "MPI_T_cvar_get_index",
    )
    .map_err(|e| MpiError {
        message: format!(
            "{name}: {} (this MPI library has no control variable of that name)",
            e.message
        ),
        ..e
    })?;
    Ok(idx)
}

/// A handle on the global control variable `name` (freed by the caller
/// with `PMPI_T_cvar_handle_free`) and how many values it holds.
fn cvar_handle(name: &str) -> Result<(ffi::MPI_T_cvar_handle, c_int), MpiError> {
    let idx = cvar_index(name)?;
    let mut handle: ffi::MPI_T_cvar_handle = ptr::null_mut();
    let mut n: c_int = 0;
    // SAFETY: global (unbound) variable: no object handle.
    check(
        unsafe { ffi::PMPI_T_cvar_handle_alloc(idx, ptr::null_mut(), &mut handle, &mut n) },
        "MPI_T_cvar_handle_alloc",
    )?;
    Ok((handle, n))
}

/// What the MPI tool interface says of a control variable.
#[derive(Clone, Debug)]
pub struct CvarInfo {
    /// Its description (`MPI_T_cvar_get_info`).
    pub description: String,
    /// Its enumeration's items, (value, name), where it has one
    /// (`MPI_T_enum_get_info`, `MPI_T_enum_get_item`); None for a plain
    /// variable (`MPI_T_ENUM_NULL`).
    pub items: Option<Vec<(c_int, String)>>,
}

/// Reads a control variable's description and enumeration; an error when
/// the library has no such variable.
pub fn cvar_info(name: &str) -> Result<CvarInfo, MpiError> {
    let _t = MpiT::open()?;
    let idx = cvar_index(name)?;
    // Lengths first (null buffers), then the strings.
    let (mut name_len, mut desc_len): (c_int, c_int) = (0, 0);
    let (mut verbosity, mut binding, mut scope): (c_int, c_int, c_int) = (0, 0, 0);
    // SAFETY: both handle types are plain data (an integer or a pointer);
    // all-zero is a valid bit pattern, and MPI overwrites them.
    let mut dt: ffi::MPI_Datatype = unsafe { std::mem::zeroed() };
    let mut en: ffi::MPI_T_enum = ptr::null_mut();
    // SAFETY: null string buffers ask only for the lengths; out pointers valid.
    check(
        unsafe {
            ffi::PMPI_T_cvar_get_info(
                idx,
                ptr::null_mut(),
                &mut name_len,
                &mut verbosity,
                &mut dt,
                &mut en,
                ptr::null_mut(),
                &mut desc_len,
                &mut binding,
                &mut scope,
            )
        },
        "MPI_T_cvar_get_info",
    )?;
    let mut name_buf = vec![0u8; name_len.max(1) as usize + 1];
    let mut desc_buf = vec![0u8; desc_len.max(1) as usize + 1];
    let mut nl = name_buf.len() as c_int;
    let mut dl = desc_buf.len() as c_int;
    // SAFETY: buffers of the lengths passed in; out pointers valid.
    check(
        unsafe {
            ffi::PMPI_T_cvar_get_info(
                idx,
                name_buf.as_mut_ptr().cast(),
                &mut nl,
                &mut verbosity,
                &mut dt,
                &mut en,
                desc_buf.as_mut_ptr().cast(),
                &mut dl,
                &mut binding,
                &mut scope,
            )
        },
        "MPI_T_cvar_get_info",
    )?;
    let text = |b: &[u8]| {
        let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
        String::from_utf8_lossy(&b[..end]).into_owned()
    };
    let description = text(&desc_buf);
    if en.is_null() {
        return Ok(CvarInfo {
            description,
            items: None,
        });
    }
    let mut num: c_int = 0;
    let mut ename = vec![0u8; 256];
    let mut enl = ename.len() as c_int;
    // SAFETY: a valid enumeration handle from the library; buffer of enl bytes.
    check(
        unsafe { ffi::PMPI_T_enum_get_info(en, &mut num, ename.as_mut_ptr().cast(), &mut enl) },
        "MPI_T_enum_get_info",
    )?;
    let mut items = Vec::with_capacity(num.max(0) as usize);
    for i in 0..num.max(0) {
        let mut value: c_int = 0;
        let mut item = vec![0u8; 256];
        let mut il = item.len() as c_int;
        // SAFETY: index below num; buffer of il bytes.
        check(
            unsafe {
                ffi::PMPI_T_enum_get_item(en, i, &mut value, item.as_mut_ptr().cast(), &mut il)
            },
            "MPI_T_enum_get_item",
        )?;
        items.push((value, text(&item)));
    }
    Ok(CvarInfo {
        description,
        items: Some(items),
    })
}

/// Writes an integer control variable of the MPI library through the MPI
/// tool interface (`MPI_T_cvar_write`), e.g. Open MPI's
/// `coll_tuned_bcast_algorithm` (communicators created afterwards see it)
/// or MPICH's `MPIR_CVAR_BCAST_INTRA_ALGORITHM` (read at every call).
pub fn cvar_write_int(name: &str, value: c_int) -> Result<(), MpiError> {
    let _t = MpiT::open()?;
    let (mut handle, _) = cvar_handle(name)?;
    let r = handle_write(handle, name, value);
    // SAFETY: handle was allocated above.
    unsafe { ffi::PMPI_T_cvar_handle_free(&mut handle) };
    r
}

/// Reads an integer (or boolean) control variable of the MPI library
/// through the MPI tool interface (`MPI_T_cvar_read`); an error when the
/// library has no such variable.
pub fn cvar_read_int(name: &str) -> Result<c_int, MpiError> {
    let _t = MpiT::open()?;
    let (mut handle, n) = cvar_handle(name)?;
    let r = one_value(name, n).and_then(|()| handle_read(handle));
    // SAFETY: handle was allocated above.
    unsafe { ffi::PMPI_T_cvar_handle_free(&mut handle) };
    r
}

/// An error unless a handle holds one value (`n`, as `MPI_T_cvar_handle_alloc` said).
fn one_value(name: &str, n: c_int) -> Result<(), MpiError> {
    if n == 1 {
        return Ok(());
    }
    Err(MpiError {
        call: "MPI_T_cvar_handle_alloc",
        code: -1,
        message: format!("{name} holds {n} values, not one"),
    })
}

/// Reads an int through a handle of one value.
fn handle_read(handle: ffi::MPI_T_cvar_handle) -> Result<c_int, MpiError> {
    // Room for any one scalar (a boolean may be a C bool or an int); zeroed,
    // so a narrower type still reads as zero or not.
    let mut value = [0u8; 16];
    // SAFETY: a handle of one element of at most 16 bytes.
    let rc = unsafe { ffi::PMPI_T_cvar_read(handle, value.as_mut_ptr().cast()) };
    check(rc, "MPI_T_cvar_read")?;
    Ok(c_int::from_ne_bytes([
        value[0], value[1], value[2], value[3],
    ]))
}

/// Reads a string control variable (`MPI_CHAR`, as Open MPI's coll/han
/// module names) through the MPI tool interface: up to its first NUL.
pub fn cvar_read_string(name: &str) -> Result<String, MpiError> {
    let _t = MpiT::open()?;
    let (mut handle, n) = cvar_handle(name)?;
    // Open MPI gives a string variable's count as 2048 and copies the
    // whole string (strcpy): room for the count and more.
    let mut buf = vec![0u8; n.max(1) as usize + 4096];
    // SAFETY: a buffer larger than the count the library gave.
    let rc = unsafe { ffi::PMPI_T_cvar_read(handle, buf.as_mut_ptr().cast()) };
    // SAFETY: handle was allocated above.
    unsafe { ffi::PMPI_T_cvar_handle_free(&mut handle) };
    check(rc, "MPI_T_cvar_read")?;
    let end = buf.iter().position(|&c| c == 0).unwrap_or(buf.len());
    Ok(String::from_utf8_lossy(&buf[..end]).into_owned())
}

/// Writes an int through a handle of one value; the error names the variable.
fn handle_write(handle: ffi::MPI_T_cvar_handle, name: &str, value: c_int) -> Result<(), MpiError> {
    // SAFETY: the variable holds one int (n == 1 for these variables).
    let rc = unsafe { ffi::PMPI_T_cvar_write(handle, (&value as *const c_int).cast()) };
    check(rc, "MPI_T_cvar_write").map_err(|e| MpiError {
        message: format!("{name} = {value}: {}", e.message),
        ..e
    })
}

/// An integer control variable held open: a handle allocated once (never
/// freed: a process holds a few, for its life), so a read or write is one
/// `MPI_T_cvar_read` / `_write` with no lookup, cheap enough around every
/// call of a forced broadcast (`select::library`: coll/adapt's and MPICH's
/// per-call variables, never Open MPI 4.1's). The first one opened holds
/// an MPI_T session for the rest of the process (its handles need it).
#[derive(Clone, Copy, Debug)]
pub struct Cvar {
    handle: ffi::MPI_T_cvar_handle,
    name: &'static str,
}

// SAFETY: an MPI_T handle is process-wide; MPI_T calls on it are made only
// where MPI allows them (the forcing refuses MPI_THREAD_MULTIPLE).
unsafe impl Send for Cvar {}
unsafe impl Sync for Cvar {}

impl Cvar {
    /// The variable `name`, opened once per process (later calls find the
    /// same handle); an error when the library has no such variable or it
    /// holds more than one value.
    pub fn open(name: &'static str) -> Result<Cvar, MpiError> {
        static OPEN: std::sync::Mutex<Vec<Cvar>> = std::sync::Mutex::new(Vec::new());
        let mut open = OPEN.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = open.iter().find(|c| c.name == name) {
            return Ok(*c);
        }
        static HELD: std::sync::OnceLock<MpiT> = std::sync::OnceLock::new();
        if HELD.get().is_none() {
            let _ = HELD.set(MpiT::open()?);
        }
        let (mut handle, n) = cvar_handle(name)?;
        if let Err(e) = one_value(name, n) {
            // SAFETY: handle was allocated above.
            unsafe { ffi::PMPI_T_cvar_handle_free(&mut handle) };
            return Err(e);
        }
        let c = Cvar { handle, name };
        open.push(c);
        Ok(c)
    }

    /// Reads the value (an int).
    #[inline]
    pub fn read(&self) -> Result<c_int, MpiError> {
        handle_read(self.handle)
    }

    /// Writes the value (an int).
    #[inline]
    pub fn write(&self, value: c_int) -> Result<(), MpiError> {
        handle_write(self.handle, self.name, value)
    }
}

/// Whether MPI was initialised with `MPI_THREAD_MULTIPLE` (any thread may
/// call at any time); false where it cannot tell.
pub fn thread_multiple() -> bool {
    let mut level: c_int = 0;
    // SAFETY: valid out pointer; called after MPI_Init.
    let rc = unsafe { ffi::PMPI_Query_thread(&mut level) };
    // SAFETY: reading a constant of the library's.
    rc == ffi::MPI_SUCCESS as c_int && level == unsafe { ffi::RSMPI_THREAD_MULTIPLE }
}

/// The name of the node this rank runs on.
pub fn processor_name() -> String {
    let mut buf = vec![0u8; 1024];
    let mut len: c_int = 0;
    // SAFETY: buf is larger than MPI_MAX_PROCESSOR_NAME.
    let rc = unsafe { ffi::PMPI_Get_processor_name(buf.as_mut_ptr().cast(), &mut len) };
    if rc != ffi::MPI_SUCCESS as c_int {
        return "unknown".into();
    }
    String::from_utf8_lossy(&buf[..len.max(0) as usize]).into_owned()
}

/// The predefined datatypes the control plane moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Datatype {
    U8,
    I32,
    U64,
    F64,
}

fn datatype(d: Datatype) -> ffi::MPI_Datatype {
    // SAFETY: reading immutable handles exported by the MPI library.
    unsafe {
        match d {
            Datatype::U8 => ffi::RSMPI_UINT8_T,
            Datatype::I32 => ffi::RSMPI_INT32_T,
            Datatype::U64 => ffi::RSMPI_UINT64_T,
            Datatype::F64 => ffi::RSMPI_DOUBLE,
        }
    }
}

fn op(o: Op) -> ffi::MPI_Op {
    // SAFETY: reading immutable handles exported by the MPI library.
    unsafe {
        match o {
            Op::Min => ffi::RSMPI_MIN,
            Op::Max => ffi::RSMPI_MAX,
            Op::Sum => ffi::RSMPI_SUM,
        }
    }
}

/// `MPI_Allreduce` of `n` elements of `dt`.
///
/// # Safety
/// `send` and `recv` each hold `n` elements of `dt`.
pub unsafe fn allreduce(
    send: *const c_void,
    recv: *mut c_void,
    n: u64,
    dt: Datatype,
    o: Op,
    comm: MPI_Comm,
) -> Result<(), MpiError> {
    check(
        ffi::PMPI_Allreduce(send, recv, count(n)?, datatype(dt), op(o), comm),
        "MPI_Allreduce",
    )
}

/// `MPI_Reduce` of `n` elements of `dt` to `root`.
///
/// # Safety
/// `send` holds `n` elements of `dt`, and so does `recv` at the root (it
/// may be null elsewhere).
pub unsafe fn reduce(
    send: *const c_void,
    recv: *mut c_void,
    n: u64,
    dt: Datatype,
    o: Op,
    root: usize,
    comm: MPI_Comm,
) -> Result<(), MpiError> {
    check(
        ffi::PMPI_Reduce(
            send,
            recv,
            count(n)?,
            datatype(dt),
            op(o),
            root as c_int,
            comm,
        ),
        "MPI_Reduce",
    )
}

/// `MPI_Bcast` of `n` elements of `dt` from `root`, through the profiling
/// interface (`PMPI_Bcast`): the interposition library defines `MPI_Bcast`,
/// and colltune's own traffic must never route through itself.
///
/// # Safety
/// `buf` holds `n` elements of `dt`.
pub unsafe fn bcast(
    buf: *mut c_void,
    n: u64,
    dt: Datatype,
    root: usize,
    comm: MPI_Comm,
) -> Result<(), MpiError> {
    check(
        ffi::PMPI_Bcast(buf, count(n)?, datatype(dt), root as c_int, comm),
        "MPI_Bcast",
    )
}

/// `MPI_Gather` of `n` elements of `dt` from every rank to `root`.
///
/// # Safety
/// `send` holds `n` elements of `dt`; `recv` holds `n` per rank at the root
/// (it is not read elsewhere).
pub unsafe fn gather(
    send: *const c_void,
    recv: *mut c_void,
    n: u64,
    dt: Datatype,
    root: usize,
    comm: MPI_Comm,
) -> Result<(), MpiError> {
    let (n, dt) = (count(n)?, datatype(dt));
    check(
        ffi::PMPI_Gather(send, n, dt, recv, n, dt, root as c_int, comm),
        "MPI_Gather",
    )
}

/// `MPI_Allgather` of `n` elements of `dt` from every rank.
///
/// # Safety
/// `send` holds `n` elements of `dt`, `recv` `n` per rank.
pub unsafe fn allgather(
    send: *const c_void,
    recv: *mut c_void,
    n: u64,
    dt: Datatype,
    comm: MPI_Comm,
) -> Result<(), MpiError> {
    let (n, dt) = (count(n)?, datatype(dt));
    check(
        ffi::PMPI_Allgather(send, n, dt, recv, n, dt, comm),
        "MPI_Allgather",
    )
}

// ---------------------------------------------------------------------
// The C-facing layer (`capi`): the user's own calls, their arguments, and
// the per-communicator state. Calls that hand the user's arguments to the
// library return its code unchanged (the library has already called the
// communicator's error handler): those are the user's calls, not colltune's.

pub use mpi::ffi::MPI_Datatype;

/// Open MPI's `MPI_IN_PLACE` (`(void *) 1` in mpi.h; bindgen does not
/// translate the cast).
pub fn in_place() -> *mut c_void {
    1usize as *mut c_void
}

pub fn datatype_null() -> MPI_Datatype {
    // SAFETY: reading an immutable MPI handle.
    unsafe { ffi::RSMPI_DATATYPE_NULL }
}

/// The user's `MPI_Bcast`, to the library unchanged: its return code.
///
/// # Safety
/// As for `MPI_Bcast` (the library checks what it checks).
#[inline]
pub unsafe fn user_bcast(
    buf: *mut c_void,
    count: c_int,
    dt: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    ffi::PMPI_Bcast(buf, count, dt, root, comm)
}

/// The user's swap as one `MPI_Sendrecv` with `partner` (tag `tag`), to the
/// library unchanged: its return code.
///
/// # Safety
/// As for `MPI_Sendrecv`.
pub unsafe fn user_sendrecv(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    dt: MPI_Datatype,
    partner: c_int,
    tag: c_int,
    comm: MPI_Comm,
) -> c_int {
    ffi::PMPI_Sendrecv(
        sendbuf,
        count,
        dt,
        partner,
        tag,
        recvbuf,
        count,
        dt,
        partner,
        tag,
        comm,
        ffi::RSMPI_STATUS_IGNORE,
    )
}

/// The user's `MPI_Init`: its return code.
///
/// # Safety
/// As for `MPI_Init`.
pub unsafe fn user_init(argc: *mut c_int, argv: *mut *mut *mut std::ffi::c_char) -> c_int {
    ffi::PMPI_Init(argc, argv)
}

/// The user's `MPI_Init_thread`: its return code.
///
/// # Safety
/// As for `MPI_Init_thread`.
pub unsafe fn user_init_thread(
    argc: *mut c_int,
    argv: *mut *mut *mut std::ffi::c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    ffi::PMPI_Init_thread(argc, argv, required, provided)
}

/// The user's `MPI_Finalize`: its return code.
pub fn user_finalize() -> c_int {
    // SAFETY: no arguments; the library checks the state.
    unsafe { ffi::PMPI_Finalize() }
}

/// `MPI_Abort`.
pub fn abort(comm: MPI_Comm, code: c_int) {
    // SAFETY: aborting is always allowed.
    unsafe { ffi::PMPI_Abort(comm, code) };
}

/// Whether the library takes `count` elements of `dt` at `buf` as a
/// message (a committed, valid datatype; a buffer where the data is): a
/// send to `MPI_PROC_NULL` on `comm`, a private duplicate whose errors
/// return (so nothing reaches the user's error handler). The library's own
/// argument checks, and no message.
///
/// # Safety
/// `comm` is a valid communicator.
pub unsafe fn check_message(
    buf: *const c_void,
    count: c_int,
    dt: MPI_Datatype,
    comm: MPI_Comm,
) -> Result<(), MpiError> {
    check(
        ffi::PMPI_Send(buf, count, dt, ffi::RSMPI_PROC_NULL, 0, comm),
        "MPI_Send",
    )
}

/// The bytes of one element of `dt` (its type signature; `MPI_Type_size_x`).
pub fn type_size(dt: MPI_Datatype) -> Result<u64, MpiError> {
    let mut n: ffi::MPI_Count = 0;
    // SAFETY: valid out pointer.
    check(
        unsafe { ffi::PMPI_Type_size_x(dt, &mut n) },
        "MPI_Type_size_x",
    )?;
    u64::try_from(n).map_err(|_| MpiError {
        call: "MPI_Type_size_x",
        code: -1,
        message: format!("size {n} (undefined: larger than MPI_Count)"),
    })
}

/// (lower bound, extent) of `dt`.
pub fn type_extent(dt: MPI_Datatype) -> Result<(isize, isize), MpiError> {
    let (mut lb, mut ext): (ffi::MPI_Aint, ffi::MPI_Aint) = (0, 0);
    // SAFETY: valid out pointers.
    check(
        unsafe { ffi::PMPI_Type_get_extent(dt, &mut lb, &mut ext) },
        "MPI_Type_get_extent",
    )?;
    // MPI_Aint: ptrdiff_t in Open MPI (isize), long in MPICH (i64).
    #[allow(clippy::unnecessary_cast)]
    Ok((lb as isize, ext as isize))
}

/// (true lower bound, true extent) of `dt`.
pub fn type_true_extent(dt: MPI_Datatype) -> Result<(isize, isize), MpiError> {
    let (mut lb, mut ext): (ffi::MPI_Aint, ffi::MPI_Aint) = (0, 0);
    // SAFETY: valid out pointers.
    check(
        unsafe { ffi::PMPI_Type_get_true_extent(dt, &mut lb, &mut ext) },
        "MPI_Type_get_true_extent",
    )?;
    #[allow(clippy::unnecessary_cast)]
    Ok((lb as isize, ext as isize))
}

/// How a datatype was made (`MPI_Type_get_envelope`), as far as colltune
/// cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Combiner {
    /// A predefined datatype.
    Named,
    /// `MPI_Type_dup`.
    Dup,
    /// `MPI_Type_contiguous`.
    Contiguous,
    /// Anything else (vector, indexed, struct, resized, subarray, ...).
    Other,
}

/// The combiner of `dt`.
pub fn type_combiner(dt: MPI_Datatype) -> Result<Combiner, MpiError> {
    let (mut ni, mut na, mut nd, mut comb): (c_int, c_int, c_int, c_int) = (0, 0, 0, 0);
    // SAFETY: valid out pointers.
    check(
        unsafe { ffi::PMPI_Type_get_envelope(dt, &mut ni, &mut na, &mut nd, &mut comb) },
        "MPI_Type_get_envelope",
    )?;
    let comb = i64::from(comb);
    // MPICH's combiners are a named enum: bindgen prefixes its constants.
    #[cfg(colltune_combiner_enum)]
    let (named, dup, contiguous) = (
        ffi::MPIR_Combiner_enum_MPI_COMBINER_NAMED as i64,
        ffi::MPIR_Combiner_enum_MPI_COMBINER_DUP as i64,
        ffi::MPIR_Combiner_enum_MPI_COMBINER_CONTIGUOUS as i64,
    );
    #[cfg(not(colltune_combiner_enum))]
    let (named, dup, contiguous) = (
        ffi::MPI_COMBINER_NAMED as i64,
        ffi::MPI_COMBINER_DUP as i64,
        ffi::MPI_COMBINER_CONTIGUOUS as i64,
    );
    Ok(if comb == named {
        Combiner::Named
    } else if comb == dup && nd == 1 {
        Combiner::Dup
    } else if comb == contiguous && ni == 1 && nd == 1 {
        Combiner::Contiguous
    } else {
        Combiner::Other
    })
}

/// The one datatype a [`Combiner::Dup`] or [`Combiner::Contiguous`]
/// datatype is made of (`MPI_Type_get_contents`); when it is not
/// predefined the caller frees it ([`type_free`]).
pub fn type_inner(dt: MPI_Datatype, combiner: Combiner) -> Result<MPI_Datatype, MpiError> {
    let ni = c_int::from(combiner == Combiner::Contiguous);
    let mut ints = [0 as c_int; 1];
    let mut addrs = [0 as ffi::MPI_Aint; 1];
    let mut types = [datatype_null(); 1];
    // SAFETY: arrays as large as the envelope says (checked by type_combiner).
    check(
        unsafe {
            ffi::PMPI_Type_get_contents(
                dt,
                ni,
                0,
                1,
                ints.as_mut_ptr(),
                addrs.as_mut_ptr(),
                types.as_mut_ptr(),
            )
        },
        "MPI_Type_get_contents",
    )?;
    Ok(types[0])
}

/// Frees a derived datatype colltune obtained (from [`type_inner`]).
pub fn type_free(dt: &mut MPI_Datatype) -> Result<(), MpiError> {
    // SAFETY: dt is a derived datatype this process owns a reference to.
    check(unsafe { ffi::PMPI_Type_free(dt) }, "MPI_Type_free")
}

/// Packs `count` elements of `dt` at `buf` into `out` (`MPI_Pack`; errors
/// return on `comm`, a private duplicate); returns the bytes written.
///
/// # Safety
/// `buf` holds `count` elements of `dt`.
pub unsafe fn pack(
    buf: *const c_void,
    count: c_int,
    dt: MPI_Datatype,
    out: &mut [u8],
    comm: MPI_Comm,
) -> Result<usize, MpiError> {
    let size = count_of(out.len(), "MPI_Pack")?;
    let mut pos: c_int = 0;
    check(
        ffi::PMPI_Pack(
            buf,
            count,
            dt,
            buf_ptr(out.as_mut_ptr(), out.len() as u64),
            size,
            &mut pos,
            comm,
        ),
        "MPI_Pack",
    )?;
    Ok(pos.max(0) as usize)
}

/// Unpacks all of `packed` into `count` elements of `dt` at `buf`
/// (`MPI_Unpack`; errors return on `comm`, a private duplicate).
///
/// # Safety
/// `buf` holds `count` elements of `dt`.
pub unsafe fn unpack(
    packed: &[u8],
    buf: *mut c_void,
    count: c_int,
    dt: MPI_Datatype,
    comm: MPI_Comm,
) -> Result<(), MpiError> {
    let size = count_of(packed.len(), "MPI_Unpack")?;
    let mut pos: c_int = 0;
    check(
        ffi::PMPI_Unpack(
            buf_ptr(packed.as_ptr(), packed.len() as u64),
            size,
            &mut pos,
            buf,
            count,
            dt,
            comm,
        ),
        "MPI_Unpack",
    )
}

fn count_of(len: usize, call: &'static str) -> Result<c_int, MpiError> {
    c_int::try_from(len).map_err(|_| MpiError {
        call,
        code: -1,
        message: format!("{len} bytes exceed one MPI buffer (2^31 - 1 bytes)"),
    })
}

/// Hands `code` to `comm`'s error handler (`MPI_Comm_call_errhandler`),
/// as the library does with its own errors: by default the job ends.
pub fn comm_call_errhandler(comm: MPI_Comm, code: c_int) {
    // SAFETY: comm is the caller's communicator; the handler decides.
    unsafe { ffi::PMPI_Comm_call_errhandler(comm, code) };
}

/// A communicator attribute key (`MPI_Comm_create_keyval`).
pub fn comm_create_keyval(
    copy: ffi::MPI_Comm_copy_attr_function,
    delete: ffi::MPI_Comm_delete_attr_function,
) -> Result<c_int, MpiError> {
    let mut key: c_int = 0;
    // SAFETY: valid callbacks and out pointer.
    check(
        unsafe { ffi::PMPI_Comm_create_keyval(copy, delete, &mut key, ptr::null_mut()) },
        "MPI_Comm_create_keyval",
    )?;
    Ok(key)
}

pub fn comm_free_keyval(key: &mut c_int) -> Result<(), MpiError> {
    // SAFETY: a key this module created.
    check(
        unsafe { ffi::PMPI_Comm_free_keyval(key) },
        "MPI_Comm_free_keyval",
    )
}

/// The attribute `key` of `comm`, if set.
///
/// # Safety
/// `comm` is a valid communicator.
pub unsafe fn comm_get_attr(comm: MPI_Comm, key: c_int) -> Result<Option<*mut c_void>, MpiError> {
    let mut val: *mut c_void = ptr::null_mut();
    let mut flag: c_int = 0;
    check(
        ffi::PMPI_Comm_get_attr(comm, key, (&mut val as *mut *mut c_void).cast(), &mut flag),
        "MPI_Comm_get_attr",
    )?;
    Ok((flag != 0 && !val.is_null()).then_some(val))
}

/// Sets the attribute `key` of `comm` to `val`.
///
/// # Safety
/// `comm` is a valid communicator; `val` is what the key's delete callback
/// expects.
pub unsafe fn comm_set_attr(comm: MPI_Comm, key: c_int, val: *mut c_void) -> Result<(), MpiError> {
    check(ffi::PMPI_Comm_set_attr(comm, key, val), "MPI_Comm_set_attr")
}

/// A datatype attribute key (`MPI_Type_create_keyval`).
pub fn type_create_keyval(
    copy: ffi::MPI_Type_copy_attr_function,
    delete: ffi::MPI_Type_delete_attr_function,
) -> Result<c_int, MpiError> {
    let mut key: c_int = 0;
    // SAFETY: valid callbacks and out pointer.
    check(
        unsafe { ffi::PMPI_Type_create_keyval(copy, delete, &mut key, ptr::null_mut()) },
        "MPI_Type_create_keyval",
    )?;
    Ok(key)
}

/// The attribute `key` of `dt`, if set.
///
/// # Safety
/// `dt` is a valid datatype.
pub unsafe fn type_get_attr(dt: MPI_Datatype, key: c_int) -> Result<Option<*mut c_void>, MpiError> {
    let mut val: *mut c_void = ptr::null_mut();
    let mut flag: c_int = 0;
    check(
        ffi::PMPI_Type_get_attr(dt, key, (&mut val as *mut *mut c_void).cast(), &mut flag),
        "MPI_Type_get_attr",
    )?;
    Ok((flag != 0 && !val.is_null()).then_some(val))
}

/// Sets the attribute `key` of `dt` to `val`.
///
/// # Safety
/// `dt` is a valid datatype; `val` is what the key's delete callback
/// expects.
pub unsafe fn type_set_attr(
    dt: MPI_Datatype,
    key: c_int,
    val: *mut c_void,
) -> Result<(), MpiError> {
    check(ffi::PMPI_Type_set_attr(dt, key, val), "MPI_Type_set_attr")
}

/// `MPI_Comm_f2c`: the C handle of a Fortran communicator (in MPICH a
/// macro: the same integer). The MPI standard ABI has no f2c (its Fortran
/// bindings are a library above the C interface, and the preload library
/// built for it exports no Fortran entry points): there this is the ABI's
/// integer conversion, `MPI_Comm_fromint`.
pub fn comm_f2c(f: c_int) -> MPI_Comm {
    #[cfg(colltune_f2c_macro)]
    {
        MPI_Comm(f)
    }
    // SAFETY: conversion only; the library checks what it checks.
    #[cfg(colltune_abi)]
    unsafe {
        ffi::PMPI_Comm_fromint(f)
    }
    // SAFETY: conversion only; the library checks what it checks.
    #[cfg(not(any(colltune_f2c_macro, colltune_abi)))]
    unsafe {
        ffi::PMPI_Comm_f2c(f)
    }
}

/// `MPI_Type_f2c`: the C handle of a Fortran datatype (in MPICH a macro:
/// the same integer; in the standard ABI `MPI_Type_fromint`, as
/// [`comm_f2c`]).
pub fn type_f2c(f: c_int) -> MPI_Datatype {
    #[cfg(colltune_f2c_macro)]
    {
        MPI_Datatype(f)
    }
    // SAFETY: conversion only; the library checks what it checks.
    #[cfg(colltune_abi)]
    unsafe {
        ffi::PMPI_Type_fromint(f)
    }
    // SAFETY: conversion only; the library checks what it checks.
    #[cfg(not(any(colltune_f2c_macro, colltune_abi)))]
    unsafe {
        ffi::PMPI_Type_f2c(f)
    }
}

/// Whether `p` is the address Fortran's `MPI_BOTTOM` stands for: Open
/// MPI's common block `mpi_fortran_bottom_` (mpif.h, `use mpi`, `mpi_f08`),
/// MPICH's `mpipriv1_` (mpif.h and `use mpi`: `MPI_BOTTOM` is the common
/// block's first member) and `MPIR_F08_MPI_BOTTOM` (`mpi_f08`). Looked up
/// once; names a library lacks are left out.
pub fn is_fortran_bottom(p: *mut c_void) -> bool {
    !p.is_null() && fortran_bottoms().contains(&(p as usize))
}

/// The addresses Fortran's `MPI_BOTTOM` stands for in this process (see
/// [`is_fortran_bottom`]).
pub fn fortran_bottoms() -> &'static [usize] {
    static ADDRS: std::sync::OnceLock<Vec<usize>> = std::sync::OnceLock::new();
    ADDRS.get_or_init(|| {
        [c"mpi_fortran_bottom_", c"mpipriv1_", c"MPIR_F08_MPI_BOTTOM"]
            .iter()
            // SAFETY: dlsym with a NUL-terminated name in the global scope.
            .map(|n| unsafe { libc::dlsym(libc::RTLD_DEFAULT, n.as_ptr()) as usize })
            .filter(|&a| a != 0)
            .collect()
    })
}
