//! C ABI of colltune's runtime selector: `libcolltune.so` with
//! `include/colltune.h`. The logic lives in `colltune_mpi::capi`.

#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int, c_void};

use colltune_mpi::capi::{bcast, explain, finalize, init, swap_call};
use mpi::ffi::{MPI_Comm, MPI_Datatype};

const SUCCESS: c_int = mpi::ffi::MPI_SUCCESS as c_int;

#[no_mangle]
pub extern "C" fn colltune_init() -> c_int {
    init()
}

#[no_mangle]
pub extern "C" fn colltune_finalize() -> c_int {
    finalize()
}

#[no_mangle]
pub unsafe extern "C" fn colltune_bcast(
    buffer: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    bcast(buffer, count, datatype, root, comm)
}

#[no_mangle]
pub unsafe extern "C" fn colltune_swap(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    pairing: c_int,
    comm: MPI_Comm,
) -> c_int {
    swap_call(sendbuf, recvbuf, count, datatype, pairing, comm)
}

#[no_mangle]
pub unsafe extern "C" fn colltune_explain(
    comm: MPI_Comm,
    bytes: i64,
    out: *mut c_char,
    len: c_int,
) -> c_int {
    let text = match explain(comm, bytes.max(0) as u64) {
        Ok(t) => t,
        Err(rc) => return rc,
    };
    if !out.is_null() && len > 0 {
        let b = text.as_bytes();
        let n = b.len().min(len as usize - 1);
        std::ptr::copy_nonoverlapping(b.as_ptr(), out as *mut u8, n);
        *out.add(n) = 0;
    }
    SUCCESS
}
