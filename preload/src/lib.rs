//! Drop-in interposition library: `LD_PRELOAD=libcolltune_preload.so` makes
//! an unmodified MPI program's broadcasts go through colltune, by the MPI
//! profiling interface: this library defines `MPI_Init`, `MPI_Init_thread`,
//! `MPI_Bcast` and `MPI_Finalize`, and the Fortran bindings' entry points
//! for them (`mpi_bcast_` and its other manglings, `mpi_bcast_f08`, ...:
//! Open MPI's Fortran bindings call `PMPI_Bcast` themselves, so the C
//! symbol alone never sees a Fortran program). Everything else is
//! untouched. Each function only forwards to `colltune_mpi::capi`, which
//! calls the MPI library's `PMPI_` entry points.
//!
//! `MPI_Init` loads the table (`COLLTUNE_TABLE`) right after the library's
//! own initialisation: one file read, a communicator duplicate and a few
//! small collectives; no per-call work is added at start-up. Calls the
//! library must handle (its own choice, arguments it rejects, more than
//! 2^31 - 1 bytes, intercommunicators, communicators colltune could not set
//! up) go to the library's own `MPI_Bcast` with the caller's arguments.
//!
//! Built for one MPI family (Open MPI: pointer handles; MPICH, Intel MPI:
//! integer handles) and preloaded into a program of the other, it says so
//! once at `MPI_Init` and passes every call through untouched
//! (`colltune_mpi::abi`): `MPI_Bcast` takes its handles at register width
//! for that reason.

#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int, c_void};

use colltune_mpi::{abi, capi};

#[no_mangle]
pub unsafe extern "C" fn MPI_Init(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int {
    if abi::foreign_family() {
        return abi::raw::PMPI_Init(argc, argv);
    }
    capi::mpi_init(argc, argv)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Init_thread(
    argc: *mut c_int,
    argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    if abi::foreign_family() {
        return abi::raw::PMPI_Init_thread(argc, argv, required, provided);
    }
    capi::mpi_init_thread(argc, argv, required, provided)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Bcast(
    buffer: *mut c_void,
    count: c_int,
    datatype: usize,
    root: c_int,
    comm: usize,
) -> c_int {
    if abi::foreign_family() {
        return abi::raw::PMPI_Bcast(buffer, count, datatype, root, comm);
    }
    capi::bcast(
        buffer,
        count,
        abi::datatype_from_reg(datatype),
        root,
        abi::comm_from_reg(comm),
    )
}

#[no_mangle]
pub extern "C" fn MPI_Finalize() -> c_int {
    if abi::foreign_family() {
        // SAFETY: no arguments; the program's library checks its state.
        return unsafe { abi::raw::PMPI_Finalize() };
    }
    capi::mpi_finalize()
}

/// A Fortran call in a program of the other MPI family: the program's
/// library's C binding, handles converted by that library.
unsafe fn foreign_fortran_bcast(
    buffer: *mut c_void,
    count: *const c_int,
    datatype: *const c_int,
    root: *const c_int,
    comm: *const c_int,
    ierror: *mut c_int,
) {
    let rc = abi::raw::PMPI_Bcast(
        buffer,
        *count,
        abi::raw::type_f2c(*datatype),
        *root,
        abi::raw::comm_f2c(*comm),
    );
    if !ierror.is_null() {
        *ierror = rc;
    }
}

/// `MPI_INIT` / `MPI_INIT_THREAD` / `MPI_FINALIZE` from Fortran in a
/// program of the other family.
unsafe fn foreign_fortran_init(required: Option<c_int>, provided: *mut c_int, ierror: *mut c_int) {
    let (mut argc, mut argv): (c_int, *mut *mut c_char) = (0, std::ptr::null_mut());
    let mut got: c_int = 0;
    let rc = match required {
        Some(r) => abi::raw::PMPI_Init_thread(&mut argc, &mut argv, r, &mut got),
        None => abi::raw::PMPI_Init(&mut argc, &mut argv),
    };
    if !provided.is_null() {
        *provided = got;
    }
    if !ierror.is_null() {
        *ierror = rc;
    }
}

/// The Fortran entry points, under each name a Fortran compiler may call
/// them by (`mpi_bcast_` for gfortran, `mpi_bcast`, `mpi_bcast__`,
/// `MPI_BCAST`, and the `mpi_f08` module's `mpi_bcast_f08_`). Integer
/// arguments come by reference; `ierror` may be absent (null) in mpi_f08.
macro_rules! fortran {
    ($($bcast:ident $init:ident $init_thread:ident $finalize:ident;)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $bcast(
            buffer: *mut c_void,
            count: *const c_int,
            datatype: *const c_int,
            root: *const c_int,
            comm: *const c_int,
            ierror: *mut c_int,
        ) {
            if abi::foreign_family() {
                return foreign_fortran_bcast(buffer, count, datatype, root, comm, ierror);
            }
            capi::fortran_bcast(buffer, count, datatype, root, comm, ierror)
        }

        #[no_mangle]
        pub unsafe extern "C" fn $init(ierror: *mut c_int) {
            if abi::foreign_family() {
                return foreign_fortran_init(None, std::ptr::null_mut(), ierror);
            }
            capi::fortran_init(ierror)
        }

        #[no_mangle]
        pub unsafe extern "C" fn $init_thread(
            required: *const c_int,
            provided: *mut c_int,
            ierror: *mut c_int,
        ) {
            if abi::foreign_family() {
                return foreign_fortran_init(Some(*required), provided, ierror);
            }
            capi::fortran_init_thread(required, provided, ierror)
        }

        #[no_mangle]
        pub unsafe extern "C" fn $finalize(ierror: *mut c_int) {
            if abi::foreign_family() {
                let rc = abi::raw::PMPI_Finalize();
                if !ierror.is_null() {
                    *ierror = rc;
                }
                return;
            }
            capi::fortran_finalize(ierror)
        }
    )*};
}

fortran! {
    mpi_bcast_ mpi_init_ mpi_init_thread_ mpi_finalize_;
    mpi_bcast mpi_init mpi_init_thread mpi_finalize;
    mpi_bcast__ mpi_init__ mpi_init_thread__ mpi_finalize__;
    MPI_BCAST MPI_INIT MPI_INIT_THREAD MPI_FINALIZE;
    mpi_bcast_f08_ mpi_init_f08_ mpi_init_thread_f08_ mpi_finalize_f08_;
}
