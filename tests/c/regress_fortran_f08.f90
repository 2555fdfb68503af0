! Regression (drop-in defect 7), the Fortran 2008 bindings (`use mpi_f08`,
! MPI_Init_thread, optional ierror left out in some calls): Open MPI's
! mpi_bcast_f08 calls its C implementation directly, so before the fix the
! interposition library never saw it. 1000 integers (4000 B) from every
! root, and 500 integers at absolute addresses (MPI_BOTTOM: 2000 B), every
! element checked; rank 0 prints `case fortran_bcast: ok`.
program regress_fortran_f08
  use mpi_f08
  implicit none
  integer :: ierr, rank, nranks, root, i, bad, total, provided
  integer :: buf(1000)
  integer, target :: tail(500)
  integer(kind=MPI_ADDRESS_KIND) :: addr(1)
  type(MPI_Datatype) :: abs_t
  call MPI_Init_thread(MPI_THREAD_FUNNELED, provided, ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  bad = 0
  call MPI_Get_address(tail, addr(1))
  call MPI_Type_create_struct(1, (/ 500 /), addr, (/ MPI_INTEGER /), abs_t)
  call MPI_Type_commit(abs_t)
  do root = 0, nranks - 1
    do i = 1, 1000
      if (rank == root) then
        buf(i) = i * 11 + root
      else
        buf(i) = -1
      end if
    end do
    call MPI_Bcast(buf, 1000, MPI_INTEGER, root, MPI_COMM_WORLD, ierr)
    if (ierr /= MPI_SUCCESS) bad = bad + 1
    do i = 1, 1000
      if (buf(i) /= i * 11 + root) bad = bad + 1
    end do
    do i = 1, 500
      if (rank == root) then
        tail(i) = i * 5 - root
      else
        tail(i) = 0
      end if
    end do
    call MPI_Bcast(MPI_BOTTOM, 1, abs_t, root, MPI_COMM_WORLD)
    do i = 1, 500
      if (tail(i) /= i * 5 - root) bad = bad + 1
    end do
  end do
  call MPI_Type_free(abs_t)
  call MPI_Allreduce(bad, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) then
    if (total == 0) then
      print '(a)', 'case fortran_bcast: ok'
    else
      print '(a,i0,a)', 'case fortran_bcast: wrong data (', total, ' wrong)'
    end if
  end if
  call MPI_Finalize()
end program regress_fortran_f08
