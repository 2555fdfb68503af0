//! Communicators: rank and size, private communicators, groups, splits.

use super::*;

pub fn comm_rank(comm: MPI_Comm) -> Result<usize, MpiError> {
    let mut r: c_int = 0;
    // SAFETY: valid out pointer.
    check(
        unsafe { ffi::PMPI_Comm_rank(comm, &mut r) },
        "MPI_Comm_rank",
    )?;
    Ok(r as usize)
}

pub fn comm_size(comm: MPI_Comm) -> Result<usize, MpiError> {
    let mut s: c_int = 0;
    // SAFETY: valid out pointer.
    check(
        unsafe { ffi::PMPI_Comm_size(comm, &mut s) },
        "MPI_Comm_size",
    )?;
    Ok(s as usize)
}

/// `MPI_Comm_size` for the per-call path: None on any error (the caller
/// then takes the path that reports it), no message built.
#[inline]
pub fn comm_size_raw(comm: MPI_Comm) -> Option<usize> {
    let mut s: c_int = 0;
    // SAFETY: valid out pointer.
    let rc = unsafe { ffi::PMPI_Comm_size(comm, &mut s) };
    (rc == ffi::MPI_SUCCESS as c_int).then_some(s as usize)
}

/// `MPI_Type_size` for the per-call path: None on any error or where the
/// size does not fit an int (`MPI_UNDEFINED`).
#[inline]
pub fn type_size_raw(dt: MPI_Datatype) -> Option<u64> {
    let mut n: c_int = 0;
    // SAFETY: valid out pointer.
    let rc = unsafe { ffi::PMPI_Type_size(dt, &mut n) };
    (rc == ffi::MPI_SUCCESS as c_int && n >= 0).then_some(n as u64)
}

/// Whether `comm` is an intercommunicator (colltune handles only intra).
pub fn comm_is_inter(comm: MPI_Comm) -> Result<bool, MpiError> {
    let mut flag: c_int = 0;
    // SAFETY: valid out pointer.
    check(
        unsafe { ffi::PMPI_Comm_test_inter(comm, &mut flag) },
        "MPI_Comm_test_inter",
    )?;
    Ok(flag != 0)
}

/// The tag of colltune's `MPI_Comm_create_group` calls (on the parent
/// communicator; colltune's algorithms use tags below 16).
const CREATE_TAG: c_int = 0x7c17;

/// A new communicator of `of`'s ranks, in `of`'s order, whose errors
/// return codes instead of aborting. Not a duplicate: no attribute of
/// `of` is copied (the application's copy callbacks never run), and no
/// error handler of the application's is set on it. Made on `parent`:
/// where that is `of` itself, with `MPI_Comm_split` (collective over `of`);
/// else (a communicator holding every rank of `of`: colltune's private
/// `MPI_COMM_WORLD`) with `MPI_Comm_create_group`, collective over `of`'s
/// ranks only. (`MPI_Comm_create_group` on `of` itself would not do: Open
/// MPI 4.1 copies the parent's attributes there.) A failure is reported to
/// `parent`'s error handler, so colltune passes its own private
/// communicator where it can.
pub fn comm_private(parent: MPI_Comm, of: MPI_Comm) -> Result<MPI_Comm, MpiError> {
    let mut made = comm_null();
    if parent == of {
        made = comm_split(of, Some(0), comm_rank(of)?)?;
    } else {
        // The group is built from the parent's own (its ranks translated),
        // not taken from `of`: MPICH 4.0's MPI_Comm_create_group crashes
        // on a group taken from a communicator split from the parent's
        // world (tests/c/plain_bcast.c's halves, jobs/test-mpi.sh mpich4).
        let ranks = ranks_in(of, parent)?.ok_or(MpiError {
            code: 0,
            call: "MPI_Comm_create_group",
            message: "a rank of the communicator is not in colltune's world".into(),
        })?;
        let ranks: Vec<usize> = ranks.iter().map(|&r| r as usize).collect();
        let mut group = group_of(&ranks, parent)?;
        // SAFETY: the group just made; valid out pointer.
        let rc = unsafe { ffi::PMPI_Comm_create_group(parent, group, CREATE_TAG, &mut made) };
        // SAFETY: the group obtained above.
        unsafe { ffi::PMPI_Group_free(&mut group) };
        check(rc, "MPI_Comm_create_group")?;
    }
    // SAFETY: the communicator just created.
    if let Err(e) = check(
        unsafe { ffi::PMPI_Comm_set_errhandler(made, ffi::RSMPI_ERRORS_RETURN) },
        "MPI_Comm_set_errhandler",
    ) {
        let _ = comm_free(&mut made);
        return Err(e);
    }
    Ok(made)
}

fn group_null() -> MPI_Group {
    // SAFETY: reading an immutable handle.
    unsafe { ffi::RSMPI_GROUP_NULL }
}

/// The `MPI_COMM_WORLD` rank of each rank of `comm`, in `comm`'s order;
/// None where some rank is not in this process's `MPI_COMM_WORLD` (a
/// communicator with processes of another job). Local: no communication.
pub fn world_ranks(comm: MPI_Comm) -> Result<Option<Vec<i32>>, MpiError> {
    ranks_in(comm, comm_world())
}

/// The rank in `other` of each rank of `comm`, in `comm`'s order; None
/// where some rank of `comm` is not in `other`. Local: no communication.
pub fn ranks_in(comm: MPI_Comm, other: MPI_Comm) -> Result<Option<Vec<i32>>, MpiError> {
    let n = comm_size(comm)?;
    let mut group = group_null();
    let mut theirs = group_null();
    // SAFETY: valid out pointers, valid communicators.
    check(
        unsafe { ffi::PMPI_Comm_group(comm, &mut group) },
        "MPI_Comm_group",
    )?;
    // SAFETY: as above.
    let rc = unsafe { ffi::PMPI_Comm_group(other, &mut theirs) };
    if let Err(e) = check(rc, "MPI_Comm_group") {
        // SAFETY: the group obtained above.
        unsafe { ffi::PMPI_Group_free(&mut group) };
        return Err(e);
    }
    let ranks: Vec<c_int> = (0..n as c_int).collect();
    let mut out = vec![0 as c_int; n];
    // SAFETY: n ranks in, n out.
    let rc = unsafe {
        ffi::PMPI_Group_translate_ranks(group, n as c_int, ranks.as_ptr(), theirs, out.as_mut_ptr())
    };
    // SAFETY: the groups obtained above.
    unsafe {
        ffi::PMPI_Group_free(&mut group);
        ffi::PMPI_Group_free(&mut theirs);
    }
    check(rc, "MPI_Group_translate_ranks")?;
    // SAFETY: reading an immutable handle.
    let undefined = unsafe { ffi::RSMPI_UNDEFINED };
    Ok((!out.contains(&undefined)).then_some(out))
}

pub fn comm_free(comm: &mut MPI_Comm) -> Result<(), MpiError> {
    // SAFETY: comm is a communicator this module created.
    check(unsafe { ffi::PMPI_Comm_free(comm) }, "MPI_Comm_free")
}

/// `MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)`: the ranks of `comm` that
/// share this rank's node, ordered by `key`, as a new communicator.
pub fn comm_split_shared(comm: MPI_Comm, key: usize) -> Result<MPI_Comm, MpiError> {
    let mut shared = comm_null();
    // SAFETY: valid handles and out pointer.
    check(
        unsafe {
            ffi::PMPI_Comm_split_type(
                comm,
                ffi::RSMPI_COMM_TYPE_SHARED,
                key as c_int,
                ffi::RSMPI_INFO_NULL,
                &mut shared,
            )
        },
        "MPI_Comm_split_type",
    )?;
    Ok(shared)
}

/// `MPI_Comm_split`: the ranks of `comm` with the same `color`, ordered by
/// `key`, as a new communicator; `None` (`MPI_UNDEFINED`) joins none and
/// gets `MPI_COMM_NULL`. Collective over `comm`.
pub fn comm_split(comm: MPI_Comm, color: Option<u32>, key: usize) -> Result<MPI_Comm, MpiError> {
    let color = match color {
        Some(c) => c as c_int,
        // SAFETY: reading an immutable handle.
        None => unsafe { ffi::RSMPI_UNDEFINED },
    };
    let mut out = comm_null();
    // SAFETY: valid out pointer.
    check(
        unsafe { ffi::PMPI_Comm_split(comm, color, key as c_int, &mut out) },
        "MPI_Comm_split",
    )?;
    Ok(out)
}

pub(super) fn group_of(ranks: &[usize], comm: MPI_Comm) -> Result<MPI_Group, MpiError> {
    // SAFETY: reading an immutable handle.
    let mut all = unsafe { ffi::RSMPI_GROUP_NULL };
    // SAFETY: valid out pointer.
    check(
        unsafe { ffi::PMPI_Comm_group(comm, &mut all) },
        "MPI_Comm_group",
    )?;
    let r: Vec<c_int> = ranks.iter().map(|&r| r as c_int).collect();
    // SAFETY: reading an immutable handle.
    let mut g = unsafe { ffi::RSMPI_GROUP_NULL };
    // SAFETY: r holds ranks.len() ints.
    let rc = unsafe { ffi::PMPI_Group_incl(all, r.len() as c_int, r.as_ptr(), &mut g) };
    // SAFETY: all was created above.
    unsafe { ffi::PMPI_Group_free(&mut all) };
    check(rc, "MPI_Group_incl")?;
    Ok(g)
}
