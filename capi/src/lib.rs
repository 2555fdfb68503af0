//! C ABI of colltune's runtime selector: `libcolltune.so` with
//! `include/colltune.h`. Each function only forwards to
//! `colltune_mpi::runtime`, where the logic lives.

#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int, c_void};

use colltune_mpi::runtime;
use mpi::ffi::{MPI_Comm, MPI_Datatype};

/// colltune's own heap, apart from the program's C heap
/// ([`runtime::heap`]).
#[global_allocator]
static HEAP: runtime::heap::PrivateHeap = runtime::heap::PrivateHeap::new();

#[no_mangle]
pub extern "C" fn colltune_init() -> c_int {
    runtime::init()
}

#[no_mangle]
pub extern "C" fn colltune_finalize() -> c_int {
    runtime::finalize()
}

#[no_mangle]
pub unsafe extern "C" fn colltune_bcast(
    buffer: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    runtime::bcast(buffer, count, datatype, root, comm)
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
    runtime::swap_call(sendbuf, recvbuf, count, datatype, pairing, comm)
}

#[no_mangle]
pub unsafe extern "C" fn colltune_explain(
    comm: MPI_Comm,
    bytes: i64,
    out: *mut c_char,
    len: c_int,
) -> c_int {
    runtime::explain_into(comm, bytes, out, len)
}
