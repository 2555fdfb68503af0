//! Point-to-point: sends, receives, requests and their completion.

use super::*;

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
