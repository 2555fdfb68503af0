//! The MPI-free proof of every algorithm: for every rank count 1..=64 on
//! one node (1..=32 for node-aware ones and on every multi-node layout),
//! every root, sizes 0, 1, 7, segment - 1, segment + 1 and 1 MiB + 3, and
//! both executions, every rank ends with every byte it should and nothing
//! deadlocks even if every send were synchronous.
//!
//! `COLLTUNE_CHECK_MAX_RANKS` lowers the largest rank count (for quick runs).

use colltune_algorithms::check::{check_bcast, check_swap};
use colltune_algorithms::{
    algorithms, lookup, variants, AlgoSpec, Collective, Execution, NodeMap, Restriction,
};

const SEGMENT: u64 = 65536;

fn max_ranks() -> usize {
    std::env::var("COLLTUNE_CHECK_MAX_RANKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64)
}

fn sizes(segment: u64) -> [u64; 6] {
    [0, 1, 7, segment - 1, segment + 1, (1 << 20) + 3]
}

/// Node layouts for `p` ranks, by name: one node; blocks of 2 and of 3 (the
/// last node smaller when p is not a multiple); round-robin over 3 nodes
/// (non-contiguous); two unequal halves (3 + 2 style).
fn layout(kind: &str, p: usize) -> NodeMap {
    let blocks = |ppn: usize| {
        let mut sizes = vec![ppn; p / ppn];
        if p % ppn != 0 {
            sizes.push(p % ppn);
        }
        NodeMap::blocks(&sizes).unwrap()
    };
    match kind {
        "single" => NodeMap::single(p),
        "blocks2" => blocks(2),
        "blocks3" => blocks(3),
        "round_robin3" => NodeMap::round_robin(p, 3.min(p)),
        "halves" if p >= 2 => NodeMap::blocks(&[p - p / 2, p / 2]).unwrap(),
        _ => NodeMap::single(p),
    }
}

/// The largest rank count proven on the multi-node layouts: 32 (16 nodes
/// of 2, 11 of 3, 3 round-robin nodes of up to 11), where every layout's
/// shapes (full and short last nodes, several nodes per phase) have long
/// appeared; one node goes to [`max_ranks`]. The hierarchical variants
/// (every inter x intra phase, shm included) made 64 cost minutes per
/// layout on CI's 2 cores.
fn max_layout_ranks() -> usize {
    max_ranks().min(32)
}

fn prove_bcast(spec_text: &str, layout_kind: &str, most: usize) {
    let spec = AlgoSpec::parse(spec_text).unwrap();
    for p in 1..=most {
        {
            let nodes = layout(layout_kind, p);
            for root in 0..p {
                for bytes in sizes(SEGMENT) {
                    for exec in Execution::ALL {
                        if let Err(e) = check_bcast(&spec, &nodes, root, bytes, exec) {
                            panic!(
                                "bcast {spec_text}, {p} ranks (nodes {nodes}), root {root}, {bytes} bytes, {exec}: {e}"
                            );
                        }
                    }
                }
            }
        }
    }
}

fn prove_all(name: &str, layout_kind: &str) {
    let info = lookup(Collective::Bcast, name).unwrap();
    // A node-aware algorithm on one node is its phase inside nodes, each
    // proven to max_ranks on its own: its own proof goes as far as the
    // layouts'.
    let most = if layout_kind == "single" && !info.has(Restriction::NodeAware) {
        max_ranks()
    } else {
        max_layout_ranks()
    };
    for v in variants(info, SEGMENT) {
        prove_bcast(&v.to_string(), layout_kind, most);
    }
}

macro_rules! bcast_tests {
    ($($test:ident: $name:literal,)*) => {
        $(
            #[test]
            fn $test() {
                prove_all($name, "single");
            }
        )*

        #[test]
        fn every_registered_bcast_algorithm_is_proven_here() {
            let proven = [$($name),*];
            for a in algorithms(Collective::Bcast) {
                assert!(proven.contains(&a.name), "add {} to the checker", a.name);
            }
        }
    };
}

bcast_tests! {
    bcast_linear: "linear",
    bcast_binomial: "binomial",
    bcast_knomial: "knomial",
    bcast_binary: "binary",
    bcast_split_binary: "split_binary",
    bcast_bine: "bine",
    bcast_bine_bdw: "bine_bdw",
    bcast_circulant: "circulant",
    bcast_chain: "chain",
    bcast_pipeline: "pipeline",
    bcast_scatter_allgather: "scatter_allgather",
    bcast_scatter_allgather_ring: "scatter_allgather_ring",
    bcast_shm: "shm",
    bcast_hierarchical: "hierarchical",
}

// Node-aware algorithms on several layouts (one test each, so they run in
// parallel); "single" is in the list above.
#[test]
fn bcast_hierarchical_blocks_of_2() {
    prove_all("hierarchical", "blocks2");
}

#[test]
fn bcast_hierarchical_blocks_of_3() {
    prove_all("hierarchical", "blocks3");
}

#[test]
fn bcast_hierarchical_round_robin() {
    prove_all("hierarchical", "round_robin3");
}

#[test]
fn bcast_hierarchical_unequal_halves() {
    prove_all("hierarchical", "halves");
}

#[test]
fn every_node_aware_algorithm_is_proven_on_layouts() {
    for a in algorithms(Collective::Bcast) {
        if a.has(Restriction::NodeAware) {
            assert_eq!(a.name, "hierarchical", "add layout tests for {}", a.name);
        }
    }
}

#[test]
fn swaps() {
    for a in algorithms(Collective::Swap) {
        for spec in variants(a, SEGMENT) {
            let text = spec.to_string();
            for p in 1..=max_ranks() {
                for bytes in sizes(SEGMENT) {
                    for exec in Execution::ALL {
                        if let Err(e) = check_swap(&spec, &NodeMap::single(p), bytes, exec) {
                            panic!("swap {text}, {p} ranks, {bytes} bytes, {exec}: {e}");
                        }
                    }
                }
            }
        }
    }
}

/// `shm` over calls in a row (its window and flags outlive a call): the
/// root running ahead by a call (twice the same root), the root changing
/// (to the next rank), readers left behind, for every rank count and root,
/// a small message (its ring), a message in one slot and one through a
/// reused ring (3 segments in 2 slots). About 6 s of CPU on CI's 2 cores.
#[test]
fn bcast_shm_calls_in_a_row() {
    use colltune_algorithms::check::check_bcast_calls;
    let cases = [
        ("shm", 7),
        ("shm", 2000),
        ("shm:segment=4096,slots=2", 2 * 4096 + 5),
    ];
    for (spec_text, bytes) in cases {
        let spec = AlgoSpec::parse(spec_text).unwrap();
        for p in 1..=max_ranks() {
            let nodes = NodeMap::single(p);
            for root in 0..p {
                let roots = [root, root, (root + 1) % p];
                for exec in Execution::ALL {
                    if let Err(e) = check_bcast_calls(&spec, &nodes, &roots, bytes, exec) {
                        panic!("bcast {spec_text} calls from roots {roots:?}, {p} ranks, {bytes} bytes, {exec}: {e}");
                    }
                }
            }
        }
    }
}

/// `shm`'s small-message ring over more calls than it has slots, so that
/// every slot is reused: 34 calls, the root changing every third call, the
/// sizes mixing the small path (1 B to its largest, 1 KiB) with the
/// segmented one (one slot; three segments through a ring of 2), so a
/// small call follows a segmented one and the other way round; and 17 small
/// calls from one root (slot 1 written again by call 17, the root 16 calls
/// ahead of a reader that has not yet left call 1). Every root at 1-8 ranks,
/// two roots at 16 and 33; both executions.
#[test]
fn bcast_shm_small_ring_reused() {
    use colltune_algorithms::check::check_bcast_sequence;
    let spec = AlgoSpec::parse("shm:segment=4096,slots=2").unwrap();
    let sizes = [1, 7, 1024, 4000, 64, 2 * 4096 + 5, 1000];
    for p in [1, 2, 3, 4, 5, 6, 7, 8, 16, 33] {
        let nodes = NodeMap::single(p);
        let roots: Vec<usize> = if p <= 8 {
            (0..p).collect()
        } else {
            vec![0, p - 1]
        };
        for r in roots {
            let mixed: Vec<(usize, u64)> = (0..34)
                .map(|j| ((r + j / 3) % p, sizes[j % sizes.len()]))
                .collect();
            let same: Vec<(usize, u64)> = (0..17).map(|j| (r, 1 + j as u64)).collect();
            for calls in [mixed, same] {
                for exec in Execution::ALL {
                    if let Err(e) = check_bcast_sequence(&spec, &nodes, &calls, exec) {
                        panic!("bcast shm calls {calls:?}, {p} ranks, {exec}: {e}");
                    }
                }
            }
        }
    }
}

/// The newest broadcasts at 1,024 ranks (a power of two: Bine's own tree)
/// and 1,000 (the window cut off the 1,024-offset range), roots 0, 1, the
/// middle and the last, a small and a segmented size, both executions.
#[test]
fn bcast_bine_and_circulant_at_a_thousand_ranks() {
    for spec_text in [
        "bine",
        "bine:segment=4096",
        "bine_bdw",
        "circulant:segment=8192",
    ] {
        let spec = AlgoSpec::parse(spec_text).unwrap();
        for p in [1000, 1024] {
            let nodes = NodeMap::single(p);
            for root in [0, 1, p / 2, p - 1] {
                for bytes in [7, 3 * 8192 + 5] {
                    for exec in Execution::ALL {
                        if let Err(e) = check_bcast(&spec, &nodes, root, bytes, exec) {
                            panic!("bcast {spec_text}, {p} ranks, root {root}, {bytes} bytes, {exec}: {e}");
                        }
                    }
                }
            }
        }
    }
}
