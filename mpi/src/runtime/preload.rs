//! The interposition library's entry points (`preload/` forwards each of
//! its exported symbols to one of these): colltune's own path, or, where
//! the library was built for one MPI family (Open MPI: pointer handles;
//! MPICH, Intel MPI: integer handles) and preloaded into a program of the
//! other ([`abi::foreign_family`]), the program's own library untouched.
//! `MPI_Bcast`'s handles come at register width for that reason.

use std::ffi::{c_char, c_int, c_void};

use super::hot::{self, Lines};
use crate::abi;

/// # Safety
/// As for `MPI_Init`; `lines` are the interposition library's own static.
pub unsafe fn mpi_init(
    lines: &'static Lines,
    argc: *mut c_int,
    argv: *mut *mut *mut c_char,
) -> c_int {
    hot::attach(lines);
    if abi::foreign_family() {
        return abi::raw::PMPI_Init(argc, argv);
    }
    super::mpi_init(argc, argv)
}

/// # Safety
/// As for `MPI_Init_thread`; `lines` as for [`mpi_init`].
pub unsafe fn mpi_init_thread(
    lines: &'static Lines,
    argc: *mut c_int,
    argv: *mut *mut *mut c_char,
    required: c_int,
    provided: *mut c_int,
) -> c_int {
    hot::attach(lines);
    if abi::foreign_family() {
        return abi::raw::PMPI_Init_thread(argc, argv, required, provided);
    }
    super::mpi_init_thread(argc, argv, required, provided)
}

/// # Safety
/// As for `MPI_Bcast`; `datatype` and `comm` are the handles' register
/// values; `lines` are the interposition library's own static.
#[inline(always)]
pub unsafe fn bcast(
    lines: &Lines,
    buffer: *mut c_void,
    count: c_int,
    datatype: usize,
    root: c_int,
    comm: usize,
) -> c_int {
    // First, before anything else is touched: the call's line in
    // colltune's cache (lines exist only for this build's own handles,
    // never in a foreign program). A call the handoff gave to Open MPI
    // goes there, unchanged: one line, a range check, a tail call.
    if let Some(pass) = hot::handed_off_target(lines, count, datatype, comm) {
        return pass(buffer, count, datatype, root, comm);
    }
    bcast_cold(buffer, count, datatype, root, comm)
}

/// [`bcast`] for a call not handed off by its line: the communicator's
/// state and the datatype's classification from the line where it has
/// them, else the whole path. Out of line: the handed-off path stays a
/// few instructions with no stack frame.
///
/// `extern "C"`: a call that cannot unwind, so that [`bcast`] tail-calls
/// it (a Rust call would need a landing pad, the caller a stack frame).
///
/// # Safety
/// As for [`bcast`].
#[cold]
#[inline(never)]
unsafe extern "C" fn bcast_cold(
    buffer: *mut c_void,
    count: c_int,
    datatype: usize,
    root: c_int,
    comm: usize,
) -> c_int {
    let known = hot::cached_state_and_type(datatype, comm);
    if let Some((state, info)) = known {
        if let Some(state) = state.as_ref() {
            return super::bcast_with_state(
                state,
                Some(info),
                buffer,
                count,
                abi::datatype_from_reg(datatype),
                root,
                abi::comm_from_reg(comm),
            );
        }
    }
    if abi::foreign_family() {
        return abi::raw::PMPI_Bcast(buffer, count, datatype, root, comm);
    }
    let (datatype, comm) = (abi::datatype_from_reg(datatype), abi::comm_from_reg(comm));
    // Known not handed off: the whole path without the handoff's check.
    if known.is_none() {
        if let Some(rc) = super::handoff::pass_if_handed_off(buffer, count, datatype, root, comm) {
            return rc;
        }
    }
    super::bcast_full_path(buffer, count, datatype, root, comm, true)
}

/// `MPI_Ibcast`: the table's `ibcast` rules ([`super::nonblocking`]).
///
/// # Safety
/// As for `MPI_Ibcast`; handles at register width, `request` points to
/// the program's request handle.
pub unsafe fn ibcast(
    buffer: *mut c_void,
    count: c_int,
    datatype: usize,
    root: c_int,
    comm: usize,
    request: *mut c_void,
) -> c_int {
    if abi::foreign_family() {
        return abi::raw::PMPI_Ibcast(buffer, count, datatype, root, comm, request);
    }
    super::nonblocking::ibcast(
        buffer,
        count,
        abi::datatype_from_reg(datatype),
        root,
        abi::comm_from_reg(comm),
        request.cast(),
    )
}

/// A Fortran entry the preload library shadows, in a program of another
/// MPI family: the program's own library's (the next definition of
/// `name`), or None where it has none.
pub fn next_fortran(name: &str) -> Option<*mut c_void> {
    let name = std::ffi::CStr::from_bytes_with_nul(name.as_bytes()).ok()?;
    // SAFETY: dlsym with a NUL-terminated name.
    let p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) };
    (!p.is_null()).then_some(p)
}

/// Fortran `MPI_IBCAST` under the name the program called (`name`,
/// NUL-terminated), its seven arguments as addresses in order (buffer,
/// count, datatype, root, comm, request, ierror): colltune's path, or in a
/// program of another MPI family that library's own entry of the name.
///
/// # Safety
/// As for the Fortran binding.
#[cfg(not(colltune_abi))]
pub unsafe fn fortran_ibcast(name: &'static str, a: [*mut c_void; 7]) {
    let i = |k: usize| a[k] as *mut c_int;
    if abi::foreign_family() {
        type F = unsafe extern "C" fn(
            *mut c_void,
            *mut c_int,
            *mut c_int,
            *mut c_int,
            *mut c_int,
            *mut c_int,
            *mut c_int,
        );
        if let Some(p) = next_fortran(name) {
            let f: F = std::mem::transmute(p);
            f(a[0], i(1), i(2), i(3), i(4), i(5), i(6));
        }
        return;
    }
    super::nonblocking::fortran_ibcast(a[0], i(1), i(2), i(3), i(4), i(5), i(6))
}

/// Fortran `MPI_BCAST_INIT` / `MPIX_BCAST_INIT` (`which`), as
/// [`fortran_ibcast`]: eight arguments (buffer, count, datatype, root,
/// comm, info, request, ierror).
///
/// # Safety
/// As for the Fortran binding.
#[cfg(not(colltune_abi))]
pub unsafe fn fortran_bcast_init(
    name: &'static str,
    which: super::nonblocking::InitName,
    a: [*mut c_void; 8],
) {
    let i = |k: usize| a[k] as *mut c_int;
    if abi::foreign_family() {
        type F = unsafe extern "C" fn(
            *mut c_void,
            *mut c_int,
            *mut c_int,
            *mut c_int,
            *mut c_int,
            *mut c_int,
            *mut c_int,
            *mut c_int,
        );
        if let Some(p) = next_fortran(name) {
            let f: F = std::mem::transmute(p);
            f(a[0], i(1), i(2), i(3), i(4), i(5), i(6), i(7));
        }
        return;
    }
    super::nonblocking::fortran_bcast_init(which, a[0], i(1), i(2), i(3), i(4), i(5), i(6), i(7))
}

/// `MPI_Session_init` (MPI 4 sessions: [`super::sessions`]).
///
/// # Safety
/// As for `MPI_Session_init`; `lines` as for [`mpi_init`].
pub unsafe fn mpi_session_init(
    lines: &'static Lines,
    info: usize,
    errhandler: usize,
    session: *mut c_void,
) -> c_int {
    hot::attach(lines);
    super::sessions::mpi_session_init(info, errhandler, session, !abi::foreign_family())
}

/// `MPI_Session_finalize`.
///
/// # Safety
/// As for `MPI_Session_finalize`.
pub unsafe fn mpi_session_finalize(session: *mut c_void) -> c_int {
    super::sessions::mpi_session_finalize(session)
}

pub fn mpi_finalize() -> c_int {
    if abi::foreign_family() {
        // SAFETY: no arguments; the program's library checks its state.
        return unsafe { abi::raw::PMPI_Finalize() };
    }
    super::mpi_finalize()
}

/// Fortran `MPI_BCAST`.
///
/// # Safety
/// As for the Fortran binding: every argument points to an integer
/// (`ierror` may be null).
#[inline(always)]
pub unsafe fn fortran_bcast(
    lines: &Lines,
    buffer: *mut c_void,
    count: *const c_int,
    datatype: *const c_int,
    root: *const c_int,
    comm: *const c_int,
    ierror: *mut c_int,
) {
    // As the C entry: a handed-off call straight to `PMPI_Bcast`, with the
    // C handles its line holds (lines exist only in a program of this
    // build's family).
    // The handles are read once, as the line's key: the full path takes
    // the key, not the pointers, so that these stay in no register the
    // handed-off path could use (fewer saved and restored there).
    let key = hot::fortran_key(*comm, *datatype);
    if hot::fortran_call_if_handed_off(lines, key, buffer, count, root, ierror) {
        return;
    }
    fortran_bcast_cold(buffer, count, key, root, ierror)
}

/// [`fortran_bcast`] for a call not handed off by its line.
///
/// # Safety
/// As for [`fortran_bcast`].
#[cold]
#[inline(never)]
unsafe fn fortran_bcast_cold(
    buffer: *mut c_void,
    count: *const c_int,
    key: u64,
    root: *const c_int,
    ierror: *mut c_int,
) {
    let (comm, datatype) = hot::fortran_key_handles(key);
    let (comm, datatype): (*const c_int, *const c_int) = (&comm, &datatype);
    if !abi::foreign_family() {
        return super::fortran_bcast(buffer, count, datatype, root, comm, ierror);
    }
    // The program's library's C binding, handles converted by that library.
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

/// Fortran `MPI_INIT` (`required` None) and `MPI_INIT_THREAD`.
///
/// # Safety
/// As for the Fortran bindings (`provided`, `ierror` may be null); `lines`
/// as for [`mpi_init`].
pub unsafe fn fortran_init(
    lines: &'static Lines,
    required: Option<*const c_int>,
    provided: *mut c_int,
    ierror: *mut c_int,
) {
    hot::attach(lines);
    if !abi::foreign_family() {
        return match required {
            Some(r) => super::fortran_init_thread(r, provided, ierror),
            None => super::fortran_init(ierror),
        };
    }
    let (mut argc, mut argv): (c_int, *mut *mut c_char) = (0, std::ptr::null_mut());
    let mut got: c_int = 0;
    let rc = match required {
        Some(r) => abi::raw::PMPI_Init_thread(&mut argc, &mut argv, *r, &mut got),
        None => abi::raw::PMPI_Init(&mut argc, &mut argv),
    };
    if !provided.is_null() {
        *provided = got;
    }
    if !ierror.is_null() {
        *ierror = rc;
    }
}

/// Fortran `MPI_FINALIZE`.
///
/// # Safety
/// `ierror` is null or points to an integer.
pub unsafe fn fortran_finalize(ierror: *mut c_int) {
    if !abi::foreign_family() {
        return super::fortran_finalize(ierror);
    }
    let rc = abi::raw::PMPI_Finalize();
    if !ierror.is_null() {
        *ierror = rc;
    }
}
