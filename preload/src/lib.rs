//! Drop-in interposition library: `LD_PRELOAD=libcolltune_preload.so` makes
//! an unmodified MPI program's broadcasts go through colltune, by the MPI
//! profiling interface: this library defines `MPI_Init`, `MPI_Init_thread`,
//! `MPI_Bcast`, `MPI_Ibcast`, `MPI_Bcast_init` (and Open MPI 4.1's
//! `MPIX_Bcast_init`), `MPI_Finalize`, `MPI_Session_init` and
//! `MPI_Session_finalize`, and the Fortran bindings' entry
//! points for them (`mpi_bcast_` and its other manglings, `mpi_bcast_f08`, ...:
//! Open MPI's Fortran bindings call `PMPI_Bcast` themselves, so the C
//! symbol alone never sees a Fortran program). Everything else is
//! untouched. Each function only forwards to `colltune_mpi::runtime`, which
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
//! integer handles; the MPI standard ABI: its own handles, no Fortran
//! entry points) and preloaded into a program of another, it says so
//! once at `MPI_Init` and passes every call through untouched
//! (`colltune_mpi::runtime::preload`): `MPI_Bcast` takes its handles at
//! register width for that reason.

#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int, c_void};

use colltune_mpi::runtime;
use colltune_mpi::runtime::hot::Lines;

/// colltune's own heap: what this library allocates never shares the C
/// heap the program and its MPI library allocate from
/// ([`runtime::heap`]).
#[global_allocator]
static HEAP: runtime::heap::PrivateHeap = runtime::heap::PrivateHeap::new();

/// colltune's per-call cache lines ([`runtime::hot`]): a static of this
/// library, so that `MPI_Bcast` reaches them at a fixed offset from its
/// own code (no global offset table lookup: one cache line fewer per call).
static LINES: Lines = Lines::new();

#[no_mangle]
pub unsafe extern "C" fn MPI_Init(argc: *mut c_int, argv: *mut *mut *mut c_char) -> c_int {
    runtime::preload::mpi_init(&LINES, argc, argv)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Init_thread(
    argc: *mut c_int,
    argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    runtime::preload::mpi_init_thread(&LINES, argc, argv, required, provided)
}

// `MPI_Bcast` starts a cache line: its handed-off path (126 bytes) then
// spans two instruction lines, not three (an application's calls find
// them cold: `benches/callcost.sh`). The section is the function's own;
// the directive only raises its alignment (one codegen unit for this
// crate, Cargo.toml, keeps both in one object).
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
core::arch::global_asm!(
    ".pushsection .text.colltune_mpi_bcast,\"ax\",@progbits",
    ".p2align 6",
    ".popsection"
);

#[no_mangle]
#[cfg_attr(
    all(target_os = "linux", target_arch = "x86_64"),
    link_section = ".text.colltune_mpi_bcast"
)]
pub unsafe extern "C" fn MPI_Bcast(
    buffer: *mut c_void,
    count: c_int,
    datatype: usize,
    root: c_int,
    comm: usize,
) -> c_int {
    runtime::preload::bcast(&LINES, buffer, count, datatype, root, comm)
}

/// `MPI_Ibcast`: the library's own, with the algorithm of the table's
/// `ibcast` rule forced around it (`colltune_mpi::runtime::nonblocking`).
#[no_mangle]
pub unsafe extern "C" fn MPI_Ibcast(
    buffer: *mut c_void,
    count: c_int,
    datatype: usize,
    root: c_int,
    comm: usize,
    request: *mut c_void,
) -> c_int {
    runtime::preload::ibcast(buffer, count, datatype, root, comm, request)
}

/// `MPI_Bcast_c` (MPI 4, large counts): as `MPI_Bcast` where the count
/// fits an `int`, else the library's.
#[no_mangle]
pub unsafe extern "C" fn MPI_Bcast_c(
    buffer: *mut c_void,
    count: runtime::preload::Count,
    datatype: usize,
    root: c_int,
    comm: usize,
) -> c_int {
    runtime::preload::bcast_c(&LINES, buffer, count, datatype, root, comm)
}

/// `MPI_Ibcast_c`: as `MPI_Ibcast` where the count fits an `int`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Ibcast_c(
    buffer: *mut c_void,
    count: runtime::preload::Count,
    datatype: usize,
    root: c_int,
    comm: usize,
    request: *mut c_void,
) -> c_int {
    runtime::preload::ibcast_c(buffer, count, datatype, root, comm, request)
}

/// `MPI_Bcast_init_c`: as `MPI_Bcast_init` where the count fits an `int`.
#[no_mangle]
pub unsafe extern "C" fn MPI_Bcast_init_c(
    buffer: *mut c_void,
    count: runtime::preload::Count,
    datatype: usize,
    root: c_int,
    comm: usize,
    info: usize,
    request: *mut c_void,
) -> c_int {
    runtime::preload::bcast_init_c(buffer, count, datatype, root, comm, info, request)
}

/// `MPI_Bcast_init` (MPI 4): decided once, by the table's `bcast_init`
/// rule; `MPI_Start` and `MPI_Wait` are the library's, untouched.
#[no_mangle]
pub unsafe extern "C" fn MPI_Bcast_init(
    buffer: *mut c_void,
    count: c_int,
    datatype: usize,
    root: c_int,
    comm: usize,
    info: usize,
    request: *mut c_void,
) -> c_int {
    runtime::nonblocking::bcast_init(
        runtime::nonblocking::InitName::Standard,
        buffer,
        count,
        datatype,
        root,
        comm,
        info,
        request,
    )
}

/// `MPIX_Bcast_init`: Open MPI 4.1's persistent broadcast (`mpi-ext.h`).
#[no_mangle]
pub unsafe extern "C" fn MPIX_Bcast_init(
    buffer: *mut c_void,
    count: c_int,
    datatype: usize,
    root: c_int,
    comm: usize,
    info: usize,
    request: *mut c_void,
) -> c_int {
    runtime::nonblocking::bcast_init(
        runtime::nonblocking::InitName::Extension,
        buffer,
        count,
        datatype,
        root,
        comm,
        info,
        request,
    )
}

#[no_mangle]
pub extern "C" fn MPI_Finalize() -> c_int {
    runtime::preload::mpi_finalize()
}

/// `MPI_Session_init` (MPI 4 sessions): the library's, then colltune
/// starts; each communicator gets the table at its first broadcast.
#[no_mangle]
pub unsafe extern "C" fn MPI_Session_init(
    info: usize,
    errhandler: usize,
    session: *mut c_void,
) -> c_int {
    runtime::preload::mpi_session_init(&LINES, info, errhandler, session)
}

/// `MPI_Session_finalize`: colltune's state goes with the last session.
#[no_mangle]
pub unsafe extern "C" fn MPI_Session_finalize(session: *mut c_void) -> c_int {
    runtime::preload::mpi_session_finalize(session)
}

/// The Fortran entry points, under each name a Fortran compiler may call
/// them by (`mpi_bcast_` for gfortran, `mpi_bcast`, `mpi_bcast__`,
/// `MPI_BCAST`, and the `mpi_f08` module's `mpi_bcast_f08_`). Integer
/// arguments come by reference; `ierror` may be absent (null) in mpi_f08.
///
/// Not in a build for the MPI standard ABI (`colltune_abi`): the ABI has no
/// Fortran handles (no `MPI_Fint`, no `MPI_Comm_f2c`); its Fortran bindings
/// are a library of their own above the C interface, whose calls reach the
/// C `MPI_Bcast` above.
macro_rules! fortran {
    ($($bcast:ident $init:ident $init_thread:ident $finalize:ident;)*) => {$(
        #[cfg(not(colltune_abi))]
        #[no_mangle]
        pub unsafe extern "C" fn $bcast(
            buffer: *mut c_void,
            count: *const c_int,
            datatype: *const c_int,
            root: *const c_int,
            comm: *const c_int,
            ierror: *mut c_int,
        ) {
            runtime::preload::fortran_bcast(&LINES, buffer, count, datatype, root, comm, ierror)
        }

        #[cfg(not(colltune_abi))]
        #[no_mangle]
        pub unsafe extern "C" fn $init(ierror: *mut c_int) {
            runtime::preload::fortran_init(&LINES, None, std::ptr::null_mut(), ierror)
        }

        #[cfg(not(colltune_abi))]
        #[no_mangle]
        pub unsafe extern "C" fn $init_thread(
            required: *const c_int,
            provided: *mut c_int,
            ierror: *mut c_int,
        ) {
            runtime::preload::fortran_init(&LINES, Some(required), provided, ierror)
        }

        #[cfg(not(colltune_abi))]
        #[no_mangle]
        pub unsafe extern "C" fn $finalize(ierror: *mut c_int) {
            runtime::preload::fortran_finalize(ierror)
        }
    )*};
}

/// The Fortran nonblocking and persistent broadcasts, under each name a
/// compiler may call them by; in a program of another MPI family, the
/// program's own library's entry of the same name (the next definition).
macro_rules! fortran_nonblocking {
    ($($ibcast:ident $init:ident $initx:ident;)*) => {$(
        #[cfg(not(colltune_abi))]
        #[no_mangle]
        pub unsafe extern "C" fn $ibcast(
            buffer: *mut c_void,
            count: *const c_int,
            datatype: *const c_int,
            root: *const c_int,
            comm: *const c_int,
            request: *mut c_int,
            ierror: *mut c_int,
        ) {
            runtime::preload::fortran_ibcast(
                concat!(stringify!($ibcast), "\0"),
                [buffer.cast(), count.cast_mut().cast(), datatype.cast_mut().cast(), root.cast_mut().cast(), comm.cast_mut().cast(), request.cast(), ierror.cast()],
            )
        }

        fortran_nonblocking!(@init $init Standard);
        fortran_nonblocking!(@init $initx Extension);
    )*};
    (@init $name:ident $which:ident) => {
        #[cfg(not(colltune_abi))]
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "C" fn $name(
            buffer: *mut c_void,
            count: *const c_int,
            datatype: *const c_int,
            root: *const c_int,
            comm: *const c_int,
            info: *const c_int,
            request: *mut c_int,
            ierror: *mut c_int,
        ) {
            runtime::preload::fortran_bcast_init(
                concat!(stringify!($name), "\0"),
                runtime::nonblocking::InitName::$which,
                [buffer.cast(), count.cast_mut().cast(), datatype.cast_mut().cast(), root.cast_mut().cast(), comm.cast_mut().cast(), info.cast_mut().cast(), request.cast(), ierror.cast()],
            )
        }
    };
}

fortran_nonblocking! {
    mpi_ibcast_ mpi_bcast_init_ mpix_bcast_init_;
    mpi_ibcast mpi_bcast_init mpix_bcast_init;
    mpi_ibcast__ mpi_bcast_init__ mpix_bcast_init__;
    MPI_IBCAST MPI_BCAST_INIT MPIX_BCAST_INIT;
    mpi_ibcast_f08_ mpi_bcast_init_f08_ mpix_bcast_init_f08_;
}

fortran! {
    mpi_bcast_ mpi_init_ mpi_init_thread_ mpi_finalize_;
    mpi_bcast mpi_init mpi_init_thread mpi_finalize;
    mpi_bcast__ mpi_init__ mpi_init_thread__ mpi_finalize__;
    MPI_BCAST MPI_INIT MPI_INIT_THREAD MPI_FINALIZE;
    mpi_bcast_f08_ mpi_init_f08_ mpi_init_thread_f08_ mpi_finalize_f08_;
}
