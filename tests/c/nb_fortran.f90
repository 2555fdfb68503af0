! MPI_IBCAST from Fortran (`use mpi`) under the drop-in: every element
! right; tests/dropin_nonblocking.rs checks the call went through colltune.
program nbf
  use mpi
  implicit none
  integer :: ierr, me, req, i, bad
  integer :: buf(1000)
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, me, ierr)
  bad = 0
  buf = 0
  if (me == 0) buf = [(i * 7, i = 1, 1000)]
  call MPI_IBCAST(buf, 1000, MPI_INTEGER, 0, MPI_COMM_WORLD, req, ierr)
  call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
  do i = 1, 1000
    if (buf(i) /= i * 7) bad = bad + 1
  end do
  if (bad == 0 .and. ierr == MPI_SUCCESS) then
    print '(a,i0)', 'fortran ibcast ok on rank ', me
  else
    print '(a,i0)', 'fortran ibcast WRONG on rank ', me
  end if
  call MPI_FINALIZE(ierr)
end program
