//! The simulator's behaviour, end to end: model costs, contention, the
//! executions, roots, limits and refusals.

use colltune_algorithms::{Plan, Post};

use super::*;

/// One blocking call of broadcast `spec` simulated: its time and traffic.
pub fn simulated(
    m: &Model,
    spec: &AlgoSpec,
    nodes: &NodeMap,
    bytes: u64,
    root: usize,
) -> (f64, Traffic) {
    let (t, tr) = simulate_counted(
        m,
        Collective::Bcast,
        spec,
        Execution::Blocking,
        nodes,
        bytes,
        root,
        f64::INFINITY,
    )
    .unwrap();
    (t.expect("no limit"), tr)
}

pub fn model() -> Model {
    Model {
        name: "test".into(),
        source: "test".into(),
        intra: Link {
            latency_us: 0.5,
            overhead_us: 0.2,
            gap_us: 0.1,
            bandwidth_gbs: 10.0,
            eager_limit: 8192,
            eager_bandwidth_gbs: None,
            burst_bytes: None,
            rendezvous_first_bytes: None,
        },
        inter: Link {
            latency_us: 2.0,
            overhead_us: 0.5,
            gap_us: 0.3,
            bandwidth_gbs: 1.0,
            eager_limit: 8192,
            eager_bandwidth_gbs: None,
            burst_bytes: None,
            rendezvous_first_bytes: None,
        },
        copy_gbs: 10.0,
        levels: Vec::new(),
        memory_copy_gbs: None,
        intra_load_per_rank: None,
        shared_reads: false,
        shared_ports: false,
        group: None,
        fit_error: None,
    }
}

fn sim(spec: &str, c: Collective, exec: Execution, nodes: &NodeMap, bytes: u64) -> f64 {
    simulate(
        &model(),
        c,
        &AlgoSpec::parse(spec).unwrap(),
        exec,
        nodes,
        bytes,
    )
    .unwrap()
}

#[test]
fn a_single_message_costs_the_model() {
    let m = model();
    let two = NodeMap::blocks(&[1, 1]).unwrap();
    // 1 KiB between nodes: o + n G (leave) + L, then o at the receiver
    let t = sim("linear", Collective::Bcast, Execution::Blocking, &two, 1000);
    let want = m.inter.overhead_us
        + 1000.0 * m.inter.per_byte()
        + m.inter.latency_us
        + m.inter.overhead_us;
    assert!((t - want).abs() < 1e-6, "{t} vs {want}");
    // inside a node it is cheaper
    let one = NodeMap::single(2);
    assert!(sim("linear", Collective::Bcast, Execution::Blocking, &one, 1000) < t);
}

#[test]
fn a_token_bucket_lets_its_burst_leave_at_once() {
    let mut m = model();
    m.inter.burst_bytes = Some(2000);
    let two = NodeMap::blocks(&[1, 1]).unwrap();
    let bcast = |m: &Model, nodes: &NodeMap, bytes| {
        simulate(
            m,
            Collective::Bcast,
            &AlgoSpec::parse("linear").unwrap(),
            Execution::Blocking,
            nodes,
            bytes,
        )
        .unwrap()
    };
    let (o, l, g) = (m.inter.overhead_us, m.inter.latency_us, m.inter.per_byte());
    // within the burst: no byte is paid for; past it, the rest is
    let t = bcast(&m, &two, 1000);
    assert!((t - (2.0 * o + l)).abs() < 1e-6, "{t}");
    let t = bcast(&m, &two, 3000);
    assert!((t - (2.0 * o + l + 1000.0 * g)).abs() < 1e-6, "{t}");
    // The root's port sends three 1000-byte messages to three nodes on
    // a slow link (0.1 us a byte, a few bytes of refill between sends):
    // a 3000-byte bucket covers all three, a 2000-byte one the first
    // two, and the third pays for its bytes.
    m.inter.bandwidth_gbs = 0.01;
    let four = NodeMap::blocks(&[1, 1, 1, 1]).unwrap();
    let plain = {
        let mut p = m.clone();
        p.inter.burst_bytes = None;
        bcast(&p, &four, 1000)
    };
    let small = bcast(&m, &four, 1000);
    m.inter.burst_bytes = Some(3000);
    let big = bcast(&m, &four, 1000);
    let pay = 1000.0 * m.inter.per_byte();
    assert!(
        (plain - big - 3.0 * pay).abs() < 0.02 * pay,
        "{plain} {big}"
    );
    assert!((small - big - pay).abs() < 0.02 * pay, "{small} {big}");
}

#[test]
fn a_first_fragment_goes_with_the_request_and_the_rest_waits_its_turn() {
    // Open MPI's ob1 over TCP: 64 KiB segments are just above the eager
    // limit; each request carries all but 32 bytes.
    let mut m = model();
    m.inter.eager_limit = 65520;
    m.inter.rendezvous_first_bytes = Some(65504);
    let run = |m: &Model, spec: &str, exec, nodes: &NodeMap, bytes| {
        simulate(
            m,
            Collective::Bcast,
            &AlgoSpec::parse(spec).unwrap(),
            exec,
            nodes,
            bytes,
        )
        .unwrap()
    };
    // One message: request and first fragment (L), answer (L), rest (L).
    let two = NodeMap::blocks(&[1, 1]).unwrap();
    let l = &m.inter;
    let want = 2.0 * l.overhead_us + 3.0 * l.latency_us + 65536.0 * l.per_byte();
    let t = run(&m, "linear", Execution::Blocking, &two, 65536);
    assert!((t - want).abs() < 1e-6, "{t} vs {want}");
    // A relay: posting every segment's send at once (the dataflow
    // execution) queues the first fragments of later segments before
    // the rest of the earlier ones, so a segment is complete, and
    // forwarded, only once nearly all have crossed: store and forward.
    // One segment at a time (blocking) keeps the pipeline.
    let three = NodeMap::blocks(&[1, 1, 1]).unwrap();
    let spec = "pipeline:segment=65536";
    let blocking = run(&m, spec, Execution::Blocking, &three, 1 << 20);
    let dataflow = run(&m, spec, Execution::Nonblocking, &three, 1 << 20);
    let wire = (1u64 << 20) as f64 * l.per_byte();
    assert!(blocking < 1.3 * wire, "{blocking} vs {wire}");
    assert!(dataflow > 1.8 * wire, "{dataflow} vs {wire}");
    // Without first fragments both pipeline.
    m.inter.rendezvous_first_bytes = None;
    let dataflow = run(&m, spec, Execution::Nonblocking, &three, 1 << 20);
    assert!(dataflow < 1.3 * wire, "{dataflow} vs {wire}");
}

#[test]
fn contention_on_a_node_link_serialises_its_messages() {
    // root on node 0 sends 1 MB to 3 ranks of node 1: they share links.
    let nodes = NodeMap::blocks(&[1, 3]).unwrap();
    let t = sim(
        "linear",
        Collective::Bcast,
        Execution::Blocking,
        &nodes,
        1_000_000,
    );
    let wire = 1_000_000.0 * model().inter.per_byte();
    assert!(t > 3.0 * wire, "{t} <= 3 x {wire}");
    // the hierarchical broadcast crosses the link once
    let h = sim(
        "hierarchical:inter=linear,intra=linear",
        Collective::Bcast,
        Execution::Blocking,
        &nodes,
        1_000_000,
    );
    assert!(h < 0.5 * t, "{h} vs {t}");
}

#[test]
fn a_process_copies_one_shared_memory_message_at_a_time() {
    // root sends 1 MB to 7 ranks of its own node: seven copies out of
    // the root's process, one after another.
    let nodes = NodeMap::single(8);
    let wire = 1_000_000.0 * model().intra.per_byte();
    for exec in Execution::ALL {
        let t = sim("linear", Collective::Bcast, exec, &nodes, 1_000_000);
        assert!(t > 7.0 * wire, "{exec}: {t} <= 7 x {wire}");
        assert!(t < 7.0 * wire + 50.0, "{exec}: {t}");
    }
    // a binomial tree copies log2(8) = 3 times on its longest path
    let b = sim(
        "binomial",
        Collective::Bcast,
        Execution::Blocking,
        &nodes,
        1_000_000,
    );
    assert!(b < 0.5 * 7.0 * wire, "{b}");
}

#[test]
fn a_limit_gives_up_on_slower_calls_only() {
    let nodes = NodeMap::blocks(&[4, 4, 4]).unwrap();
    let spec = AlgoSpec::parse("scatter_allgather_ring").unwrap();
    for exec in Execution::ALL {
        let at = |root, limit| {
            simulate_within(
                &model(),
                Collective::Bcast,
                &spec,
                exec,
                &nodes,
                1 << 20,
                root,
                limit,
            )
            .unwrap()
        };
        let t = simulate_at(&model(), Collective::Bcast, &spec, exec, &nodes, 1 << 20, 1).unwrap();
        assert_eq!(at(1, t * 0.5), None, "{exec}");
        // the kept call, abandoned half-way, runs again in full
        assert_eq!(at(1, t * 1.01), Some(t), "{exec}");
        assert_eq!(at(1, f64::INFINITY), Some(t), "{exec}");
    }
}

#[test]
fn a_call_too_large_to_hold_is_refused_before_it_is_built() {
    // The ring sends O(p^2) messages: 16,384 ranks would need some 537
    // million ops; a linear broadcast on as many ranks is small.
    let nodes = NodeMap::blocks(&[64; 256]).unwrap();
    let ring = AlgoSpec::parse("scatter_allgather_ring").unwrap();
    match simulate(
        &model(),
        Collective::Bcast,
        &ring,
        Execution::Blocking,
        &nodes,
        1 << 20,
    ) {
        Err(SimError::TooLarge { ops, ranks, .. }) => {
            assert!(ops > 400 && ops < 700, "{ops}");
            assert_eq!(ranks, 16384);
        }
        other => panic!("{other:?}"),
    }
    let linear = AlgoSpec::parse("linear").unwrap();
    assert!(simulate(
        &model(),
        Collective::Bcast,
        &linear,
        Execution::Blocking,
        &nodes,
        8
    )
    .is_ok());
}

#[test]
fn pipelining_needs_the_dataflow_execution() {
    let nodes = NodeMap::blocks(&[1; 8]).unwrap();
    let b = sim(
        "pipeline:segment=65536",
        Collective::Bcast,
        Execution::Blocking,
        &nodes,
        4 << 20,
    );
    let n = sim(
        "pipeline:segment=65536",
        Collective::Bcast,
        Execution::Nonblocking,
        &nodes,
        4 << 20,
    );
    let whole = sim(
        "pipeline:segment=0",
        Collective::Bcast,
        Execution::Nonblocking,
        &nodes,
        4 << 20,
    );
    assert!(n < whole / 2.0, "segmented {n} vs whole {whole}");
    assert!(n <= b, "dataflow {n} vs blocking {b}");
}

#[test]
fn a_deadlock_names_the_first_stuck_op() {
    use colltune_algorithms::{Builder, Region};
    // Both ranks receive first: neither send is ever reached.
    let plans: Vec<Plan> = (0..2)
        .map(|r| {
            let mut b = Builder::new();
            b.recv(1 - r, Region::data(0, 8), Post::Blocking);
            b.send(1 - r, Region::data(0, 8), Post::Blocking);
            Plan::new(b.finish())
        })
        .collect();
    let nodes = NodeMap::single(2);
    for exec in Execution::ALL {
        match Engine::new(&model(), &nodes, &plans, exec).run() {
            Err(SimError::Stuck(why)) => {
                assert!(why.starts_with("rank 0 at op 0 (Recv {"), "{exec}: {why}")
            }
            other => panic!("{exec}: {other:?}"),
        }
    }
}

#[test]
fn rotating_roots_are_sampled_where_they_differ() {
    let b = |s: &[usize]| NodeMap::blocks(s).unwrap();
    assert_eq!(
        rotation_roots(Collective::Bcast, &b(&[2, 2])),
        vec![0, 1, 2, 3]
    );
    assert_eq!(rotation_roots(Collective::Bcast, &b(&[1; 1024])), vec![0]);
    assert_eq!(
        rotation_roots(Collective::Bcast, &b(&[4; 64])),
        vec![0, 1, 2, 3]
    );
    assert_eq!(
        rotation_roots(Collective::Bcast, &b(&[64; 4])),
        vec![0, 8, 16, 24, 32, 40, 48, 56]
    );
    assert_eq!(
        rotation_roots(Collective::Bcast, &b(&[7, 6, 7])),
        vec![0, 2, 5, 7, 10, 12, 15, 17]
    );
    assert_eq!(rotation_roots(Collective::Swap, &b(&[2, 2])), vec![0]);
    // Round-robin placement is not rotation-symmetric by whole nodes.
    assert_eq!(
        rotation_roots(Collective::Bcast, &NodeMap::round_robin(16, 4)).len(),
        8
    );
}

#[test]
fn moving_the_root_by_a_whole_node_changes_no_time() {
    // What rotation_roots relies on: on equal nodes of consecutive
    // ranks, every algorithm costs the same from root r and r + ppn.
    let nodes = NodeMap::blocks(&[3, 3, 3, 3]).unwrap();
    let mut seen = 0;
    for a in colltune_algorithms::algorithms(Collective::Bcast) {
        for spec in colltune_algorithms::variants(a, 65536) {
            for exec in Execution::ALL {
                for bytes in [1, 100_000] {
                    let at = |r| {
                        simulate_at(&model(), Collective::Bcast, &spec, exec, &nodes, bytes, r)
                            .unwrap()
                    };
                    for r in [1, 2] {
                        let (t0, t1) = (at(r), at(r + 3));
                        assert!(
                            (t0 - t1).abs() <= 1e-9 * t0,
                            "{spec} [{exec}] {bytes} B: root {r} {t0} us, root {} {t1} us",
                            r + 3
                        );
                        seen += 1;
                    }
                }
            }
        }
    }
    assert!(seen > 40, "{seen}");
}

#[test]
fn every_algorithm_finishes_in_both_executions() {
    let nodes = NodeMap::blocks(&[3, 2, 3]).unwrap();
    for c in Collective::ALL {
        for a in colltune_algorithms::algorithms(c) {
            for spec in colltune_algorithms::variants(a, 65536) {
                for exec in Execution::ALL {
                    for bytes in [0, 1, 100_000, 1 << 20] {
                        let t = simulate(&model(), c, &spec, exec, &nodes, bytes)
                            .unwrap_or_else(|e| panic!("{c} {spec} {exec} {bytes}: {e}"));
                        assert!(t.is_finite() && t >= 0.0);
                        if bytes > 0 {
                            assert!(t > 0.0, "{spec} {bytes}");
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn the_packed_channels_are_the_plans_channels() {
    // `simulate` numbers channels itself (no Plan is made); an Engine made
    // from Plans takes Plan::chan. Both must give every op the same
    // (channel, position) and pair the same channel sides.
    let nodes = NodeMap::blocks(&[3, 2, 3]).unwrap();
    let m = model();
    let mut seen = 0;
    for c in Collective::ALL {
        for a in colltune_algorithms::algorithms(c) {
            for spec in colltune_algorithms::variants(a, 65536) {
                for (root, bytes) in [(0, 1), (5, 100_000)] {
                    let root = if c == Collective::Swap { 0 } else { root };
                    let plans: Vec<Plan> =
                        colltune_algorithms::build_all(c, &spec, root, bytes, &nodes)
                            .unwrap()
                            .into_iter()
                            .map(Plan::new)
                            .collect();
                    for exec in Execution::ALL {
                        let from_plans = Engine::new(&m, &nodes, &plans, exec);
                        let mut own = Engine::empty(&m, &nodes, exec, false);
                        for pl in &plans {
                            own.pack_rank(&pl.schedule.ops, None, |ids, _, ch| ids.next(ch).0);
                        }
                        own.link_channels();
                        let ops = |e: &Engine| -> Vec<(u32, u32)> {
                            e.ops.iter().map(|o| (o.cs, o.pos)).collect()
                        };
                        let sides = |e: &Engine| -> Vec<(u32, u32, u32)> {
                            e.cs.iter().map(|s| (s.start, s.len, s.peer)).collect()
                        };
                        assert_eq!(ops(&from_plans), ops(&own), "{c} {spec} [{exec}]");
                        // ... and they are Plan's (channel, position).
                        let mut at = 0;
                        for pl in &plans {
                            for (i, ch) in pl.chan.iter().enumerate() {
                                if let Some(ch) = *ch {
                                    let op = &own.ops[at + i];
                                    assert_eq!((op.cs, op.pos), ch, "{c} {spec} op {i}");
                                }
                            }
                            at += pl.schedule.ops.len();
                        }
                        assert_eq!(sides(&from_plans), sides(&own), "{c} {spec} [{exec}]");
                        assert_eq!(
                            from_plans.run().unwrap().to_bits(),
                            own.run().unwrap().to_bits(),
                            "{c} {spec} [{exec}]"
                        );
                        seen += 1;
                    }
                }
            }
        }
    }
    assert!(seen > 40, "{seen}");
}

#[test]
fn a_shared_memory_broadcast_costs_copies_and_the_nodes_memory() {
    let one = NodeMap::single(8);
    let n: u64 = 1 << 20;
    let t = |m: &Model, spec: &str, exec| {
        simulate(
            m,
            Collective::Bcast,
            &AlgoSpec::parse(spec).unwrap(),
            exec,
            &one,
            n,
        )
        .unwrap()
    };
    let mut m = model();
    let copy = n as f64 * 1e-3 / m.copy_gbs;
    for exec in Execution::ALL {
        // One slot: the root's copy in, then the 7 copies out at once.
        let whole = t(&m, "shm:segment=0", exec);
        assert!(
            whole >= 2.0 * copy && whole < 2.0 * copy + 5.0,
            "{whole} vs {copy}"
        );
        // Half the copies of messages through the transport, no relay.
        assert!(whole < t(&m, "linear", exec) && whole < t(&m, "binomial", exec));
        // Segments pipeline: readers copy one out while the root copies
        // the next in.
        let segmented = t(&m, "shm:segment=65536,slots=4", exec);
        assert!(segmented < 0.7 * whole, "{segmented} vs {whole}");
        // The node's memory, shared by the 7 readers, bounds them.
        m.memory_copy_gbs = Some(m.copy_gbs);
        let shared = t(&m, "shm:segment=0", exec);
        assert!(shared >= 8.0 * copy, "{shared} vs {copy}");
        m.memory_copy_gbs = None;
    }
}

#[test]
fn an_eager_sender_copies_locally_and_single_copy_reads_queue_on_it() {
    let one = NodeMap::single(8);
    let mut m = model();
    m.intra.bandwidth_gbs = 1.0;
    m.copy_gbs = 100.0;
    let t = |m: &Model, bytes: u64| {
        simulate(
            m,
            Collective::Bcast,
            &AlgoSpec::parse("linear").unwrap(),
            Execution::Blocking,
            &one,
            bytes,
        )
        .unwrap()
    };
    let l = &m.intra;
    // Eager (4 KiB): the root copies each message into its own segment
    // (0.04 us at 100 GB/s), each receiver copies its own out at the link's
    // rate (4.1 us), all at once: far below 7 transfers one after another.
    let n = 4096u64;
    let transfer = n as f64 * l.per_byte();
    let eager = t(&m, n);
    let local = n as f64 * 1e-3 / m.copy_gbs;
    let bound = 7.0 * (l.overhead_us + local) + l.latency_us + transfer + l.overhead_us;
    assert!(eager <= bound + 1e-9, "{eager} vs {bound}");
    assert!(eager < 2.0 * transfer, "{eager} vs {transfer}");
    // Rendezvous (16 KiB, above the eager limit): the 7 receivers read from
    // the root's buffer one after another.
    let n = 16384u64;
    let rdv = t(&m, n);
    assert!(rdv >= 7.0 * n as f64 * l.per_byte(), "{rdv}");
}

/// Between nodes, an eager message's slower regime is the copies at its
/// ends: the network card is held at the wire's (sustained) rate, so two
/// processes of one node sending at once land one wire time apart, not one
/// eager transfer apart; and one process copies its eager messages, to
/// its node and to the network, one at a time.
#[test]
fn network_cards_run_at_the_wire_and_a_sender_copies_in_turn() {
    use colltune_algorithms::{Builder, Region};
    let mut m = model();
    m.inter.eager_limit = 65536;
    m.inter.eager_bandwidth_gbs = Some(0.5);
    m.inter.bandwidth_gbs = 5.0;
    m.copy_gbs = 1.0;
    let n = 32768u64;
    let run = |m: &Model, sends: &[(usize, usize)], ranks: usize, nodes: &NodeMap| {
        let plans: Vec<Plan> = (0..ranks)
            .map(|r| {
                let mut b = Builder::new();
                for &(from, to) in sends {
                    if from == r {
                        b.send(to, Region::data(0, n), Post::Immediate);
                    } else if to == r {
                        b.recv(from, Region::data(0, n), Post::Immediate);
                    }
                }
                b.wait_all();
                Plan::new(b.finish())
            })
            .collect();
        Engine::new(m, nodes, &plans, Execution::Blocking)
            .run_each()
            .unwrap()
    };
    // Ranks 0, 1 on node 0 send to 2, 3 on node 1 at once.
    let two = NodeMap::blocks(&[2, 2]).unwrap();
    let t = run(&m, &[(0, 2), (1, 3)], 4, &two);
    let (wire, eager) = (
        n as f64 * m.inter.per_byte(),
        n as f64 * m.inter.per_byte_for(n),
    );
    let apart = (t[3] - t[2]).abs();
    assert!(
        (apart - wire).abs() < 1e-6,
        "{apart} vs wire {wire}, eager {eager}"
    );
    // Rank 0 sends (eager both) to rank 1 of its node, then to rank 2 of
    // the other: the second copy starts when the first ends, where alone
    // it would start as soon as posted.
    m.intra.eager_limit = 65536;
    let three = NodeMap::blocks(&[2, 1]).unwrap();
    let alone = run(&m, &[(0, 2)], 3, &three)[2];
    let after = run(&m, &[(0, 1), (0, 2)], 3, &three)[2];
    let copy = n as f64 * 1e-3 / m.copy_gbs;
    let posted = m.intra.overhead_us;
    assert!(
        (after - alone - (copy + posted - m.inter.overhead_us)).abs() < 1e-6,
        "{after} - {alone} vs {copy}"
    );
}

/// `intra_load_per_rank`: a small message between two ranks of a node
/// costs `1 + k (n - 2)` times its latency and overheads when the busiest
/// node has n ranks in the call; between nodes nothing changes; a model
/// without the term is as before; a negative one is refused.
#[test]
fn a_node_busy_with_more_ranks_makes_its_messages_dearer() {
    use colltune_algorithms::{Builder, Region};
    let one_message = |m: &Model, nodes: &NodeMap, from: usize, to: usize| {
        let plans: Vec<Plan> = (0..nodes.size())
            .map(|r| {
                let mut b = Builder::new();
                if r == from {
                    b.send(to, Region::data(0, 1), Post::Blocking);
                } else if r == to {
                    b.recv(from, Region::data(0, 1), Post::Blocking);
                }
                Plan::new(b.finish())
            })
            .collect();
        Engine::new(m, nodes, &plans, Execution::Blocking)
            .run_each()
            .unwrap()[to]
    };
    let mut m = model();
    let (two, ten) = (
        NodeMap::blocks(&[2]).unwrap(),
        NodeMap::blocks(&[10]).unwrap(),
    );
    let alone = one_message(&m, &two, 0, 1);
    assert_eq!(alone, one_message(&m, &ten, 0, 1), "no term: no change");
    m.intra_load_per_rank = Some(0.25);
    assert_eq!(
        alone,
        one_message(&m, &two, 0, 1),
        "two ranks pay the ping-pong's"
    );
    let busy = one_message(&m, &ten, 0, 1);
    let small = m.intra.latency_us + 2.0 * m.intra.overhead_us;
    let wire = busy - alone - small * (0.25 * 8.0);
    assert!(wire.abs() < 1e-9, "{busy} vs {alone}: {wire}");
    // Across nodes: the network's message is not a node's.
    let apart = NodeMap::blocks(&[1, 9]).unwrap();
    let mut plain = m.clone();
    plain.intra_load_per_rank = None;
    assert_eq!(
        one_message(&m, &apart, 0, 1),
        one_message(&plain, &apart, 0, 1)
    );
    m.intra_load_per_rank = Some(-0.1);
    assert!(m.check().unwrap_err().contains("intra_load_per_rank"));
}

/// Inside a node, with the model's `shared_reads`, the reads of one
/// sender's buffer at once share it (`share.rs`): a root sending a rendezvous message to 7 ranks of its
/// node keeps every receiver about 7 reads, not 1, 2, ..., 7 (its own
/// time, the call's, is 7 reads either way); a tree's parent shares its
/// buffer among its own children only, so the mean over ranks (what
/// `osu_bcast` reports) falls below basic linear's. A rank receiving two
/// messages at once copies them one after the other.
#[test]
fn reads_of_one_buffer_at_once_share_it() {
    use colltune_algorithms::{Builder, Region};
    let mut m = model();
    m.intra.latency_us = 0.0;
    m.intra.overhead_us = 0.0;
    assert!(!m.to_yaml().contains("shared_reads"), "off: not written");
    m.shared_reads = true;
    let back: Model = serde_yaml::from_str(&m.to_yaml()).unwrap();
    assert!(back.shared_reads, "on: written and read back");
    let n = 1_000_000u64;
    let read = n as f64 * m.intra.per_byte();
    let run = |m: &Model, sends: &[(usize, usize)], ranks: usize| {
        let plans: Vec<Plan> = (0..ranks)
            .map(|r| {
                let mut b = Builder::new();
                for &(from, to) in sends {
                    if from == r {
                        b.send(to, Region::data(0, n), Post::Immediate);
                    } else if to == r {
                        b.recv(from, Region::data(0, n), Post::Immediate);
                    }
                }
                b.wait_all();
                Plan::new(b.finish())
            })
            .collect();
        Engine::new(m, &NodeMap::single(ranks), &plans, Execution::Blocking)
            .run_each()
            .unwrap()
    };
    let linear: Vec<(usize, usize)> = (1..8).map(|r| (0, r)).collect();
    let t = run(&m, &linear, 8);
    for (r, &tr) in t.iter().enumerate() {
        assert!(
            (tr - 7.0 * read).abs() < 1e-6 * read,
            "rank {r}: {tr} vs 7 x {read}"
        );
    }
    // Without it they queue: receiver r ends r reads in, the root at 7.
    let mut queued = m.clone();
    queued.shared_reads = false;
    let q = run(&queued, &linear, 8);
    for (r, &tr) in q.iter().enumerate().skip(1) {
        assert!((tr - r as f64 * read).abs() < 1e-6 * read, "rank {r}: {tr}");
    }
    assert!(
        (q[0] - t[0]).abs() < 1e-6 * read,
        "the root: {q:?} vs {t:?}"
    );
    // Two reads of one buffer, the second started half a read later: the
    // first has half left, then shares; it ends at 1.5 reads, the second
    // at 2.
    // (checked on the shares alone: the engine starts these together)
    let mut s = super::share::Shares::new(3);
    let mut done = Vec::new();
    let super::share::Joined::Next(_, _) = s.join(0, 1, 0, n, read, 0.0) else {
        panic!("joins")
    };
    let super::share::Joined::Next(t1, v) = s.join(0, 2, 1, n, read, 0.5 * read) else {
        panic!("joins")
    };
    assert!((t1 - 1.5 * read).abs() < 1e-9, "{t1}");
    let next = s.step(0, v, t1, &mut done).expect("current");
    assert_eq!(done.iter().map(|r| r.dst).collect::<Vec<_>>(), vec![1]);
    let (t2, _) = next.expect("one more");
    assert!((t2 - 2.0 * read).abs() < 1e-9, "{t2}");
    assert!(s.step(0, v, t2, &mut done).is_none(), "a stale version");
    // A binary tree (0 -> 1, 2; 1 -> 3, 4; 2 -> 5, 6; 3 -> 7) keeps its
    // ranks less than linear's on the mean.
    let tree = [(0, 1), (0, 2), (1, 3), (1, 4), (2, 5), (2, 6), (3, 7)];
    let plans: Vec<Plan> = (0..8)
        .map(|r| {
            let mut b = Builder::new();
            if let Some(&(from, _)) = tree.iter().find(|&&(_, to)| to == r) {
                b.recv(from, Region::data(0, n), Post::Blocking);
            }
            for &(_, to) in tree.iter().filter(|&&(from, _)| from == r) {
                b.send(to, Region::data(0, n), Post::Immediate);
            }
            b.wait_all();
            Plan::new(b.finish())
        })
        .collect();
    let tb = Engine::new(&m, &NodeMap::single(8), &plans, Execution::Blocking)
        .run_each()
        .unwrap();
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    assert!(mean(&tb) < 0.8 * mean(&t), "{tb:?} vs {t:?}");
    // Ranks 0 and 1 both send to 2 at once: rank 2 reads one, then the
    // other, each at the full rate.
    let t = run(&m, &[(0, 2), (1, 2)], 3);
    assert!((t[2] - 2.0 * read).abs() < 1e-6 * read, "{t:?}");
    let first = t[0].min(t[1]);
    assert!((first - read).abs() < 1e-6 * read, "{t:?}");
}

/// Between nodes, with the model's `shared_ports`, the rendezvous
/// transfers leaving one node's port at once share its rate: a root on
/// its own node sending 1 MB to each of 3 other nodes keeps every
/// receiver about 3 transfers (and the latencies), where the queue ends
/// them 1, 2 and 3 transfers in. A binomial tree over 8 nodes then takes
/// the path through each rank's first child, 3 + 2 + 1 transfers: what
/// Leonardo's binomial at 8 MiB measures (docs/measurements/2026-12-07-converged).
#[test]
fn transfers_leaving_a_port_at_once_share_it() {
    use colltune_algorithms::{Builder, Region};
    let mut m = model();
    m.inter.latency_us = 0.0;
    m.inter.overhead_us = 0.0;
    m.inter.gap_us = 0.0;
    assert!(!m.to_yaml().contains("shared_ports"), "off: not written");
    m.shared_ports = true;
    let back: Model = serde_yaml::from_str(&m.to_yaml()).unwrap();
    assert!(back.shared_ports, "on: written and read back");
    let n = 1_000_000u64;
    let xfer = n as f64 * m.inter.per_byte();
    let run = |m: &Model, edges: &[(usize, usize)], ranks: usize| {
        let plans: Vec<Plan> = (0..ranks)
            .map(|r| {
                let mut b = Builder::new();
                if let Some(&(from, _)) = edges.iter().find(|&&(_, to)| to == r) {
                    b.recv(from, Region::data(0, n), Post::Blocking);
                }
                for &(_, to) in edges.iter().filter(|&&(from, _)| from == r) {
                    b.send(to, Region::data(0, n), Post::Immediate);
                }
                b.wait_all();
                Plan::new(b.finish())
            })
            .collect();
        let nodes = NodeMap::blocks(&vec![1; ranks]).unwrap();
        Engine::new(m, &nodes, &plans, Execution::Blocking)
            .run_each()
            .unwrap()
    };
    let linear = [(0, 1), (0, 2), (0, 3)];
    let t = run(&m, &linear, 4);
    for (r, &tr) in t.iter().enumerate() {
        assert!(
            (tr - 3.0 * xfer).abs() < 1e-3 * xfer,
            "rank {r}: {tr} vs 3 x {xfer}"
        );
    }
    let mut queued = m.clone();
    queued.shared_ports = false;
    let q = run(&queued, &linear, 4);
    for (r, &tr) in q.iter().enumerate().skip(1) {
        assert!(
            (tr - r as f64 * xfer).abs() < 1e-3 * xfer,
            "queued, rank {r}: {tr}"
        );
    }
    // Binomial over 8 nodes, as Open MPI's build_bmtree: 0 -> 1, 2, 4;
    // 1 -> 3, 5; 2 -> 6; 3 -> 7. Shared: rank 7 is reached through 0's,
    // 1's and 3's first children, 3 + 2 + 1 transfers; queued, 1 + 1 + 1.
    let bmtree = [(0, 1), (0, 2), (0, 4), (1, 3), (1, 5), (2, 6), (3, 7)];
    let s = run(&m, &bmtree, 8);
    assert!((s[7] - 6.0 * xfer).abs() < 1e-3 * xfer, "{s:?}");
    let q = run(&queued, &bmtree, 8);
    assert!((q[7] - 3.0 * xfer).abs() < 1e-3 * xfer, "{q:?}");
    // Inside a node nothing changes: the port is not in the way.
    let one = |m: &Model| {
        let plans: Vec<Plan> = (0..3)
            .map(|r| {
                let mut b = Builder::new();
                if r == 0 {
                    b.send(1, Region::data(0, n), Post::Immediate);
                    b.send(2, Region::data(0, n), Post::Immediate);
                } else {
                    b.recv(0, Region::data(0, n), Post::Blocking);
                }
                b.wait_all();
                Plan::new(b.finish())
            })
            .collect();
        Engine::new(m, &NodeMap::single(3), &plans, Execution::Blocking)
            .run_each()
            .unwrap()
    };
    assert_eq!(one(&m), one(&queued));
}
