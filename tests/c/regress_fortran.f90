! Regression (drop-in defect 7): an unmodified Fortran program (`use mpi`).
! Open MPI's Fortran bindings call PMPI_Init and PMPI_Bcast themselves, so
! before the fix the interposition library never saw these calls. Run with
! COLLTUNE_TRACE=1 and a forced algorithm, the trace shows each MPI_BCAST
! going through colltune: 1000 integers (4000 B) and 3 doubles (24 B) from
! every root, and 500 integers at absolute addresses (MPI_BOTTOM and a
! struct type: 2000 B). Every element is checked; rank 0 prints
! `case fortran_bcast: ok` (the drop-in's case format: tests/dropin.rs runs
! this program too, plain and preloaded, and compares the lines).
program regress_fortran
  use mpi
  implicit none
  integer :: ierr, rank, nranks, root, i, bad, total, abs_t
  integer :: buf(1000), tail(500)
  double precision :: d(3)
  integer(kind=MPI_ADDRESS_KIND) :: addr(1)
  integer :: lens(1), types(1)
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nranks, ierr)
  bad = 0
  call MPI_GET_ADDRESS(tail, addr(1), ierr)
  lens(1) = 500
  types(1) = MPI_INTEGER
  call MPI_TYPE_CREATE_STRUCT(1, lens, addr, types, abs_t, ierr)
  call MPI_TYPE_COMMIT(abs_t, ierr)
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
    do i = 1, 500
      if (rank == root) then
        tail(i) = i * 3 - root
      else
        tail(i) = 0
      end if
    end do
    call MPI_BCAST(MPI_BOTTOM, 1, abs_t, root, MPI_COMM_WORLD, ierr)
    if (ierr /= MPI_SUCCESS) bad = bad + 1
    do i = 1, 500
      if (tail(i) /= i * 3 - root) bad = bad + 1
    end do
  end do
  call MPI_TYPE_FREE(abs_t, ierr)
  call MPI_ALLREDUCE(bad, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (total == 0) then
      print '(a)', 'case fortran_bcast: ok'
    else
      print '(a,i0,a)', 'case fortran_bcast: wrong data (', total, ' wrong)'
    end if
  end if
  call MPI_FINALIZE(ierr)
end program regress_fortran
