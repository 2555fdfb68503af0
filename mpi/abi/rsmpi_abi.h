/* What rsmpi (mpi-sys 0.2) needs of mpi.h and the MPI standard ABI's
 * mpi_abi.h (MPI 5.0) does not declare. Force-included (`-include`) into
 * rsmpi's C shim and its bindgen run by jobs/mpi-env.sh for an ABI build
 * (CFLAGS, BINDGEN_EXTRA_CLANG_ARGS); nothing else includes it.
 *
 * The ABI leaves Fortran to a binding library above the C interface: it
 * has no MPI_Fint and no MPI_<handle>_c2f / _f2c, and converts handles to
 * and from C integers with MPI_<handle>_toint / _fromint instead. rsmpi's
 * shim wraps the c2f / f2c pairs; here they are the integer conversions.
 * colltune calls none of them on this build (the preload library exports
 * no Fortran entry points there). */
#ifndef COLLTUNE_RSMPI_ABI_H
#define COLLTUNE_RSMPI_ABI_H
#include <mpi.h>
#ifdef MPI_ABI_VERSION
typedef int MPI_Fint;
#define MPI_Comm_c2f MPI_Comm_toint
#define MPI_Comm_f2c MPI_Comm_fromint
#define MPI_Errhandler_c2f MPI_Errhandler_toint
#define MPI_Errhandler_f2c MPI_Errhandler_fromint
#define MPI_File_c2f MPI_File_toint
#define MPI_File_f2c MPI_File_fromint
#define MPI_Group_c2f MPI_Group_toint
#define MPI_Group_f2c MPI_Group_fromint
#define MPI_Info_c2f MPI_Info_toint
#define MPI_Info_f2c MPI_Info_fromint
#define MPI_Message_c2f MPI_Message_toint
#define MPI_Message_f2c MPI_Message_fromint
#define MPI_Op_c2f MPI_Op_toint
#define MPI_Op_f2c MPI_Op_fromint
#define MPI_Request_c2f MPI_Request_toint
#define MPI_Request_f2c MPI_Request_fromint
#define MPI_Type_c2f MPI_Type_toint
#define MPI_Type_f2c MPI_Type_fromint
#define MPI_Win_c2f MPI_Win_toint
#define MPI_Win_f2c MPI_Win_fromint
#endif
#endif
