//! The Fortran bindings: `MPI_BCAST`, `MPI_INIT`, `MPI_INIT_THREAD`, `MPI_FINALIZE` with Fortran handles.

use super::*;

/// `MPI_Bcast` from Open MPI's Fortran bindings (`mpi_bcast_`,
/// `mpi_bcast_f08`, ...), as the library's own Fortran binding does it:
/// handles converted with `MPI_Comm_f2c` / `MPI_Type_f2c`, Fortran's
/// `MPI_BOTTOM` turned into C's, the return code into `ierr` (when given).
///
/// # Safety
/// As for Fortran's `MPI_BCAST`: integer arguments by reference.
pub unsafe fn fortran_bcast(
    buffer: *mut c_void,
    count: *const c_int,
    datatype: *const c_int,
    root: *const c_int,
    comm: *const c_int,
    ierr: *mut c_int,
) {
    let c_comm = cffi::comm_f2c(*comm);
    let c_type = cffi::type_f2c(*datatype);
    let buffer = if cffi::is_fortran_bottom(buffer) {
        std::ptr::null_mut() // MPI_BOTTOM
    } else {
        buffer
    };
    // As the interposition library's C entry: a call whose C line knows
    // the communicator's state and the datatype goes straight to the
    // decision; else the full path writes that line (`fills_line`; nothing
    // is written where no lines are attached), which the Fortran line is
    // made from.
    let line = hot::cached_state_and_type(crate::abi::to_reg(c_type), crate::abi::to_reg(c_comm));
    let rc = match line.and_then(|(state, info)| Some((state.as_ref()?, info))) {
        Some((state, info)) => {
            bcast_with_state(state, Some(info), buffer, *count, c_type, *root, c_comm)
        }
        None => match handoff::pass_if_handed_off(buffer, *count, c_type, *root, c_comm) {
            Some(rc) => rc,
            None => bcast_full_path(buffer, *count, c_type, *root, c_comm, true),
        },
    };
    // The next such call: straight from its own line, where handed off.
    hot::fill_fortran_line(*comm, *datatype, c_comm, c_type);
    if !ierr.is_null() {
        *ierr = rc;
    }
}

/// `MPI_INIT` from Fortran (`mpi_init_`, `mpi_init_f08`, ...): the
/// library's with no command line, as its own Fortran binding does.
///
/// # Safety
/// `ierr` is null or writable.
pub unsafe fn fortran_init(ierr: *mut c_int) {
    let (mut argc, mut argv): (c_int, *mut *mut c_char) = (0, std::ptr::null_mut());
    let rc = mpi_init(&mut argc, &mut argv);
    if !ierr.is_null() {
        *ierr = rc;
    }
}

/// `MPI_INIT_THREAD` from Fortran.
///
/// # Safety
/// `required` is readable, `provided` writable, `ierr` null or writable.
pub unsafe fn fortran_init_thread(required: *const c_int, provided: *mut c_int, ierr: *mut c_int) {
    let (mut argc, mut argv): (c_int, *mut *mut c_char) = (0, std::ptr::null_mut());
    let mut got: c_int = 0;
    let rc = mpi_init_thread(&mut argc, &mut argv, *required, &mut got);
    if !provided.is_null() {
        *provided = got;
    }
    if !ierr.is_null() {
        *ierr = rc;
    }
}

/// `MPI_FINALIZE` from Fortran.
///
/// # Safety
/// `ierr` is null or writable.
pub unsafe fn fortran_finalize(ierr: *mut c_int) {
    let rc = mpi_finalize();
    if !ierr.is_null() {
        *ierr = rc;
    }
}
