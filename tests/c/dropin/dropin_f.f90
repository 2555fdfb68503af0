! An unmodified Fortran MPI program (`use mpi`): MPI_BCAST of 1000 integers
! and of 3 double precision values from every root, every element checked.
! Open MPI's Fortran bindings call PMPI_Bcast themselves; tests/dropin.rs
! runs this with COLLTUNE_TRACE=1 under the interposition library to see
! whether colltune sees the call (defect 7).
program dropin_f
  use mpi
  implicit none
  integer :: ierr, rank, nranks, root, i, bad, total
  integer :: buf(1000)
  double precision :: d(3)
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nranks, ierr)
  bad = 0
  do root = 0, nranks - 1
    do i = 1, 1000
      if (rank == root) then
        buf(i) = i * 7 + root
      else
        buf(i) = -1
      end if
    end do
    call MPI_BCAST(buf, 1000, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
    if (ierr /= MPI_SUCCESS) bad = bad + 1
    do i = 1, 1000
      if (buf(i) /= i * 7 + root) bad = bad + 1
    end do
    if (rank == root) then
      d = (/ 1.5d0, -2.25d0, dble(root) /)
    else
      d = 0d0
    end if
    call MPI_BCAST(d, 3, MPI_DOUBLE_PRECISION, root, MPI_COMM_WORLD, ierr)
    if (ierr /= MPI_SUCCESS) bad = bad + 1
    if (d(1) /= 1.5d0 .or. d(2) /= -2.25d0 .or. d(3) /= dble(root)) bad = bad + 1
  end do
  call MPI_ALLREDUCE(bad, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (total == 0) then
      print '(a)', 'case fortran_bcast: ok'
    else
      print '(a,i0,a)', 'case fortran_bcast: wrong data (', total, ' wrong)'
    end if
  end if
  call MPI_FINALIZE(ierr)
end program dropin_f
