//! Per-layer cost of the call path, for `benches/callpath.rs` (not an API).
//! Each layer is timed on its own over `iters` calls, `trials` times; the
//! local layers (no communication) loop on each rank alone, the whole call
//! back to back on every rank of `MPI_COMM_WORLD`'s duplicate. Times in
//! nanoseconds per call, one `Vec` of trials per layer.
use super::*;
use crate::transport::mpi::Buffers;
use std::hint::black_box;
use std::time::Instant;

/// (layer name, per-trial ns per call).
pub type Times = Vec<(&'static str, Vec<f64>)>;

fn time(iters: usize, mut f: impl FnMut()) -> f64 {
    let t = Instant::now();
    for _ in 0..iters {
        f();
    }
    t.elapsed().as_nanos() as f64 / iters as f64
}

/// Runs `f` on rank 0 of `comm` while the others sleep (polling for
/// its end every 200 us), so they do not spin on the cores it uses.
unsafe fn quiet(comm: MPI_Comm, me: usize, f: impl FnOnce()) {
    let mut byte = 0u8;
    if me == 0 {
        f();
        let n = cffi::comm_size(comm).unwrap_or(1);
        for r in 1..n {
            let _ = cffi::send(
                &byte,
                1,
                r,
                77,
                colltune_algorithms::SendMode::Standard,
                comm,
            );
        }
    } else {
        let Ok(mut req) = cffi::irecv(&mut byte, 1, 0, 77, comm) else {
            return;
        };
        loop {
            let mut flag: c_int = 0;
            mpi::ffi::PMPI_Test(&mut req, &mut flag, mpi::ffi::RSMPI_STATUS_IGNORE);
            if flag != 0 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
    }
}

/// # Safety
/// MPI and colltune are initialised (`mpi_init`).
pub unsafe fn measure(bytes: usize, iters: usize, trials: usize) -> Times {
    let mut comm = cffi::comm_null();
    // A communicator of the application's own (as IMB's), not the world.
    let world = cffi::comm_world();
    assert_eq!(
        mpi::ffi::PMPI_Comm_dup(world, &mut comm),
        SUCCESS,
        "MPI_Comm_dup"
    );
    let dt = mpi::ffi::RSMPI_UINT8_T;
    let mut buf = vec![0u8; bytes.max(1)];
    let p = buf.as_mut_ptr().cast::<c_void>();
    let count = bytes as c_int;
    // First call sets the communicator up (collective).
    bcast(p, count, dt, 0, comm);
    let g = active().expect("colltune initialised");
    let st = comm_state(g, comm).expect("colltune initialised");
    let CommState::Colltune { routes, sel } = &*st else {
        panic!("the communicator was not set up")
    };
    let mut out: Times = Vec::new();
    let mut add = |name: &'static str, v: f64| match out.iter_mut().find(|(n, _)| *n == name) {
        Some((_, t)) => t.push(v),
        None => out.push((name, vec![v])),
    };
    let me = cffi::comm_rank(comm).unwrap_or(0);
    let route = routes.route_for(bytes as u64);
    // A communicator of one rank: the library's broadcast sends nothing,
    // so colltune's call against the library's is the interposition's
    // own cost, without the noise of communication.
    let mut single = cffi::comm_null();
    assert_eq!(
        mpi::ffi::PMPI_Comm_dup(cffi::comm_self(), &mut single),
        SUCCESS,
        "MPI_Comm_dup"
    );
    bcast(p, count, dt, 0, single);
    for _ in 0..trials {
        // The local layers on rank 0 alone, the other ranks asleep (not
        // spinning in MPI on the same cores).
        quiet(comm, me, || {
            add(
                "attribute lookup (per-thread cache)",
                time(iters, || {
                    black_box(comm_state(g, black_box(comm)));
                }),
            );
            add(
                "attribute lookup (MPI_Comm_get_attr)",
                time(iters, || {
                    black_box(comm_state_from_attribute(g, black_box(comm)));
                }),
            );
            add(
                "datatype (cache; probe, size, envelope)",
                time(iters, || {
                    black_box(datatype(p, count, black_box(dt), routes.probe_comm()));
                }),
            );
            add(
                "decision and route",
                time(iters, || {
                    black_box(routes.route_for(black_box(bytes as u64)));
                }),
            );
            let ours = time(iters, || {
                black_box(bcast(p, count, dt, 0, black_box(single)));
            });
            let theirs = time(iters, || {
                black_box(cffi::user_bcast(p, count, dt, 0, black_box(single)));
            });
            add("1 rank: MPI_Bcast through colltune", ours);
            add("1 rank: PMPI_Bcast", theirs);
            add("1 rank: colltune's own cost (difference)", ours - theirs);
            add(
                "plan lookup (general path: lock + cache)",
                time(iters, || {
                    let _ = black_box(lock(sel).bench_plan(black_box(bytes as u64), 0));
                }),
            );
        });
        let _ = cffi::barrier(comm);
        if let Route::Direct(_, tree) = route {
            let b = &mut buf[..bytes];
            add(
                "executor, direct path (back to back)",
                time(iters, || {
                    let _ = routes.run_direct(tree, b, 0);
                }),
            );
            let _ = cffi::barrier(comm);
        }
        let g = lock(sel);
        if let (Ok(Some((plan, exec))), Some(c)) =
            (&g.bench_plan(bytes as u64, 0), g.private().get())
        {
            let b = &mut buf[..bytes];
            add(
                "executor, general plan (back to back)",
                time(iters, || {
                    let _ = crate::transport::mpi::execute(c, plan, *exec, Buffers::bcast(b));
                }),
            );
        }
        drop(g);
        let _ = cffi::barrier(comm);
        add(
            "MPI_Bcast through colltune (back to back)",
            time(iters, || {
                black_box(bcast(p, count, dt, 0, comm));
            }),
        );
        let _ = cffi::barrier(comm);
        add(
            "PMPI_Bcast, the library (back to back)",
            time(iters, || {
                black_box(cffi::user_bcast(p, count, dt, 0, comm));
            }),
        );
        let _ = cffi::barrier(comm);
        // A rule naming one of the library's algorithms: the same call
        // on the duplicate it runs on, without colltune in front.
        if let Route::Library(_, slot) = route {
            if let Some(Some(dup)) = slot.get().map(|f| f.and_then(|f| f.comm())) {
                add(
                    "PMPI_Bcast on the rule's forced duplicate (back to back)",
                    time(iters, || {
                        black_box(cffi::user_bcast(p, count, dt, 0, dup));
                    }),
                );
                let _ = cffi::barrier(comm);
            }
        }
    }
    let _ = mpi::ffi::PMPI_Comm_free(&mut single);
    out
}
