// Experiment: does writing coll_tuned_bcast_algorithm through MPI_T and then
// duplicating a communicator force Open MPI's algorithm?
use colltune_mpi::transport::mpi::{cvar_write_int, wtime, Comm, Control, Op};
fn main() {
    std::env::set_var("OMPI_MCA_coll_tuned_use_dynamic_rules", "1");
    let _u = mpi::initialize().unwrap();
    let n = 1 << 20;
    let mut buf = vec![0u8; n];
    for alg in [0, 1, 3, 6, 0, 1] {
        cvar_write_int("coll_tuned_bcast_algorithm", alg).unwrap();
        // A private duplicate of the world, made after the write.
        let c = Comm::world().unwrap();
        let mut ts = vec![];
        for _ in 0..30 {
            c.barrier().unwrap();
            let t = wtime();
            c.library_bcast(&mut buf, 0).unwrap();
            ts.push(c.allreduce(wtime() - t, Op::Max).unwrap());
        }
        ts.sort_by(|a, b| a.partial_cmp(b).unwrap());
        if c.rank() == 0 {
            println!("alg {alg}: median {:.1} us", ts[15] * 1e6);
        }
    }
}
