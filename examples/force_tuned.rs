// Experiment: does writing coll_tuned_bcast_algorithm through MPI_T and then
// duplicating a communicator force Open MPI's algorithm?
use colltune_mpi::transport::mpi::ffi;
fn main() {
    std::env::set_var("OMPI_MCA_coll_tuned_use_dynamic_rules", "1");
    let _u = mpi::initialize().unwrap();
    let world = ffi::comm_world();
    let n = 1 << 20;
    let mut buf = vec![0u8; n];
    for alg in [0, 1, 3, 6, 0, 1] {
        ffi::cvar_write_int("coll_tuned_bcast_algorithm", alg).unwrap();
        let c = ffi::comm_dup_private(world).unwrap();
        let mut ts = vec![];
        for _ in 0..30 {
            ffi::barrier(c).unwrap();
            let t = ffi::wtime();
            unsafe { ffi::library_bcast(buf.as_mut_ptr(), n as u64, 0, c).unwrap() };
            ts.push(ffi::allreduce_f64(ffi::wtime() - t, false, c).unwrap());
        }
        ts.sort_by(|a, b| a.partial_cmp(b).unwrap());
        if ffi::comm_rank(c).unwrap() == 0 {
            println!("alg {alg}: median {:.1} us", ts[15] * 1e6);
        }
    }
}
