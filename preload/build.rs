//! Records the MPI library's directories (found by colltune-mpi's build
//! script) as this binary's run path, so that it loads the library it was
//! built for, not another one with the same soname (Open MPI 4.1 and 5.0
//! both ship `libmpi.so.40`). `LD_LIBRARY_PATH` still comes first.
//!
//! A build for the MPI standard ABI (`DEP_COLLTUNE_MPI_FAMILY=abi`) sets
//! `colltune_abi`: no Fortran entry points (the ABI has no Fortran handles).
fn main() {
    println!("cargo:rerun-if-env-changed=DEP_COLLTUNE_MPI_LIBDIRS");
    println!("cargo:rerun-if-env-changed=DEP_COLLTUNE_MPI_FAMILY");
    println!("cargo:rustc-check-cfg=cfg(colltune_abi)");
    if std::env::var("DEP_COLLTUNE_MPI_FAMILY").as_deref() == Ok("abi") {
        println!("cargo:rustc-cfg=colltune_abi");
    }
    if let Ok(dirs) = std::env::var("DEP_COLLTUNE_MPI_LIBDIRS") {
        for d in dirs.split('\x1f').filter(|d| !d.is_empty()) {
            println!("cargo:rustc-link-arg=-Wl,-rpath,{d}");
        }
    }
}
