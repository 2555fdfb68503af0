//! The C-facing layer's calls: the user's own arguments, datatypes, attributes, Fortran handles.

use super::*;

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

/// The user's `MPI_Ibcast`, to the library unchanged: its return code.
///
/// # Safety
/// As for `MPI_Ibcast`.
#[inline]
pub unsafe fn user_ibcast(
    buf: *mut c_void,
    count: c_int,
    dt: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    request: *mut ffi::MPI_Request,
) -> c_int {
    ffi::PMPI_Ibcast(buf, count, dt, root, comm, request)
}

/// `MPI_Request_c2f`: the Fortran handle of a request (in MPICH a macro:
/// the same integer).
#[cfg(not(colltune_abi))]
pub fn request_c2f(r: ffi::MPI_Request) -> c_int {
    #[cfg(colltune_f2c_macro)]
    {
        r.0
    }
    // SAFETY: conversion only.
    #[cfg(not(colltune_f2c_macro))]
    unsafe {
        ffi::PMPI_Request_c2f(r)
    }
}

/// `MPI_Info_f2c`: the C handle of a Fortran info (in MPICH a macro).
#[cfg(not(colltune_abi))]
pub fn info_f2c(f: c_int) -> ffi::MPI_Info {
    #[cfg(colltune_f2c_macro)]
    {
        ffi::MPI_Info(f)
    }
    // SAFETY: conversion only; the library checks what it checks.
    #[cfg(not(colltune_f2c_macro))]
    unsafe {
        ffi::PMPI_Info_f2c(f)
    }
}
