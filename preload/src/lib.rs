//! Drop-in interposition library: `LD_PRELOAD=libcolltune_preload.so` makes
//! an unmodified MPI program's `MPI_Bcast` go through colltune, by the MPI
//! profiling interface: this library defines `MPI_Init`,
//! `MPI_Init_thread`, `MPI_Bcast` and `MPI_Finalize`, and calls the MPI
//! library's `PMPI_` entry points. Everything else is untouched.
//!
//! `MPI_Init` loads the table (`COLLTUNE_TABLE`) right after the library's
//! own initialisation: one file read, a communicator duplicate and three
//! small collectives; no per-call work is added at start-up.
//! Datatypes that are not contiguous, intercommunicators and anything
//! colltune cannot set up go to the library's own `MPI_Bcast`.

#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int, c_void};

use colltune_mpi::capi;
use mpi::ffi;
use mpi::ffi::{MPI_Comm, MPI_Datatype};

#[no_mangle]
pub unsafe extern "C" fn MPI_Init(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int {
    let rc = ffi::PMPI_Init(argc, argv);
    if rc == ffi::MPI_SUCCESS as c_int {
        capi::init();
    }
    rc
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Init_thread(
    argc: *mut c_int,
    argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    let rc = ffi::PMPI_Init_thread(argc, argv, required, provided);
    if rc == ffi::MPI_SUCCESS as c_int {
        capi::init();
    }
    rc
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Bcast(
    buffer: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    capi::bcast(buffer, count, datatype, root, comm)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Finalize() -> c_int {
    capi::finalize();
    ffi::PMPI_Finalize()
}
