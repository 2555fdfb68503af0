//! Per-layer cost of colltune's `MPI_Bcast` call path (issue 16):
//! attribute lookup, datatype checks, decision, plan lookup, executor, and
//! the whole call through colltune against the library's `PMPI_Bcast`,
//! each timed over many calls and repeated trials; prints the median and
//! the spread (min..max) over trials, in ns per call, as rank 0 saw them.
//!
//! Runs under mpirun (`benches/callpath.sh` builds and runs it with the
//! settings that matter: no table, so every call is the library's, and
//! each of linear, binomial, k-nomial forced):
//!
//! ```text
//! cargo bench --no-run --bench callpath
//! mpirun -n 4 target/release/deps/callpath-* [bytes=1] [iters=20000] [trials=11]
//! ```

#[cfg(feature = "mpi")]
fn main() {
    use std::ffi::c_int;
    let arg = |i: usize, d: usize| {
        std::env::args()
            .nth(i)
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let (bytes, iters, trials) = (arg(1, 1), arg(2, 20000), arg(3, 11));
    // SAFETY: MPI_Init with no command line, once; finalised below.
    unsafe { colltune_mpi::runtime::mpi_init(std::ptr::null_mut(), std::ptr::null_mut()) };
    // SAFETY: initialised above.
    let times = unsafe { colltune_mpi::runtime::layers::measure(bytes, iters, trials) };
    // SAFETY: reading MPI's world rank.
    let mut rank: c_int = 0;
    unsafe { mpi::ffi::PMPI_Comm_rank(mpi::ffi::RSMPI_COMM_WORLD, &mut rank) };
    if rank == 0 {
        let forced = std::env::var("COLLTUNE_BCAST").unwrap_or_default();
        let table = std::env::var("COLLTUNE_TABLE").unwrap_or_default();
        println!(
            "call path, {bytes} B, {iters} calls x {trials} trials, COLLTUNE_BCAST={forced:?} COLLTUNE_TABLE={table:?} (ns per call, rank 0)"
        );
        for (name, mut v) in times {
            v.sort_by(f64::total_cmp);
            let med = v[v.len() / 2];
            println!(
                "  {name:<45} median {med:>9.1}   spread {:>9.1} .. {:<9.1}",
                v[0],
                v[v.len() - 1]
            );
        }
    }
    colltune_mpi::runtime::mpi_finalize();
}

#[cfg(not(feature = "mpi"))]
fn main() {
    eprintln!("callpath needs the mpi feature");
}
