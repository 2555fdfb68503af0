//! The control plane's typed reductions, broadcasts and gathers.

use super::*;

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
