//! The Rust API of the runtime selector, checked: broadcasts of the sizes
//! given on the command line from every root, and swaps with both pairings,
//! every byte compared; prints which algorithms ran.
//!
//! `COLLTUNE_TABLE=table.yaml mpirun -n 4 target/release/examples/select_check 1 4096 1048579`

use std::collections::BTreeSet;
use std::sync::Arc;

use colltune_algorithms::swap::partner;
use colltune_core::measure::pattern;
use colltune_mpi::select;
use colltune_mpi::transport::mpi::{Comm, Control, Op};

fn main() {
    let universe = mpi::initialize().expect("MPI");
    let code = run();
    drop(universe); // MPI_Finalize before exiting
    std::process::exit(code);
}

fn run() -> i32 {
    let world = Comm::world().expect("world");
    let selector = Arc::new(select::load(&world).unwrap_or_else(|e| {
        eprintln!("colltune: error: {e}");
        std::process::exit(3)
    }));
    let cs = select::for_comm(&selector, Comm::world().expect("world"));
    let (rank, size) = (cs.shape().rank(), cs.shape().size());
    let mut bad = 0u64;
    let mut ran = BTreeSet::new();
    for arg in std::env::args().skip(1) {
        let n: usize = arg.parse().expect("sizes in bytes");
        for root in 0..size {
            let seed = (root * 1000 + n) as u64;
            let mut buf = vec![0u8; n];
            if rank == root {
                pattern::fill(&mut buf, seed);
            } else {
                pattern::fill_wrong(&mut buf, seed);
            }
            let choice = cs.bcast(&mut buf, root).expect("bcast");
            ran.insert(choice.to_string());
            if let Some((i, got, want)) = pattern::first_mismatch(&buf, seed) {
                eprintln!("rank {rank}: bcast {n} B root {root}: byte {i} is {got:#x}, expected {want:#x}");
                bad += 1;
            }
        }
        for pairing in ["neighbors", "halves"] {
            let mut out = vec![0u8; n];
            let mut inn = vec![0u8; n];
            pattern::fill(&mut out, 77 + rank as u64);
            let choice = cs.swap(&mut out, &mut inn, pairing).expect("swap");
            ran.insert(choice.to_string());
            if let Some(q) = partner(rank, size, pairing) {
                if let Some((i, ..)) = pattern::first_mismatch(&inn, 77 + q as u64) {
                    eprintln!("rank {rank}: swap {n} B {pairing}: byte {i} wrong");
                    bad += 1;
                }
            }
        }
    }
    let total = world.allreduce(bad, Op::Sum).expect("allreduce");
    if rank == 0 {
        for r in &ran {
            println!("ran: {r}");
        }
        if total == 0 {
            println!("rust API: all bytes correct");
        } else {
            println!("FAILED: {total} wrong");
        }
    }
    i32::from(total != 0)
}
