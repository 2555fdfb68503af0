//! `colltune verify`: every algorithm x execution x root x size on a live
//! communicator, every byte checked.

use std::io::Write;
use std::time::Instant;

use colltune_algorithms::{build, swap, AlgoSpec, Collective, Execution, Plan, Shape};

use crate::transport::mpi::{execute, Buffers, Comm, Control, Op, TransportError};
use colltune_core::measure::pattern;

/// One call to check.
#[derive(Clone, Debug)]
pub struct Case {
    pub collective: Collective,
    pub spec: AlgoSpec,
    pub exec: Execution,
    pub root: usize,
    pub bytes: u64,
}

impl std::fmt::Display for Case {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} {} root {} {} bytes",
            self.collective, self.spec, self.exec, self.root, self.bytes
        )
    }
}

/// What went wrong on this rank, if anything.
///
/// `inject_fault` flips the first byte this rank received (a self-test: the
/// check must then fail).
pub fn run_case(
    comm: &Comm,
    case: &Case,
    inject_fault: bool,
) -> Result<Option<String>, TransportError> {
    let n = case.bytes as usize;
    let (rank, size) = (comm.rank(), comm.size());
    let schedule = build(
        case.collective,
        &case.spec,
        &Shape {
            rank,
            size,
            root: case.root,
            bytes: case.bytes,
            nodes: comm.nodes(),
        },
    )?;
    let plan = Plan::new(schedule);
    // Seeds differ per call so that data left over from an earlier case
    // never passes for this one.
    let salt = case.bytes.wrapping_mul(31) ^ (case.root as u64) << 40 ^ case.exec as u64;
    match case.collective {
        Collective::Bcast => {
            let seed = 0xB0 ^ salt;
            let mut data = vec![0u8; n];
            if rank == case.root {
                pattern::fill(&mut data, seed);
            } else {
                pattern::fill_wrong(&mut data, seed);
            }
            comm.barrier()?;
            execute(comm, &plan, case.exec, Buffers::bcast(&mut data))?;
            if inject_fault && rank != case.root && n > 0 {
                data[0] ^= 1;
            }
            Ok(pattern::first_mismatch(&data, seed).map(|(i, got, want)| {
                format!("rank {rank}: byte {i} is {got:#04x}, expected {want:#04x} (root's data)")
            }))
        }
        Collective::Swap => {
            let seed_of = |r: usize| 0x5A ^ salt ^ ((r as u64 + 1) << 20);
            let pairing = case.spec.word("pairing").unwrap_or("neighbors");
            let partner = swap::partner(rank, size, pairing);
            let mut out = vec![0u8; n];
            let mut inn = vec![0u8; n];
            pattern::fill(&mut out, seed_of(rank));
            // The odd rank out must find its receive buffer untouched.
            let want_in = partner.unwrap_or(rank);
            pattern::fill_wrong(&mut inn, seed_of(want_in));
            comm.barrier()?;
            execute(comm, &plan, case.exec, Buffers::swap(&mut out, &mut inn))?;
            if inject_fault && partner.is_some() && n > 0 {
                inn[0] ^= 1;
            }
            if let Some((i, got, want)) = pattern::first_mismatch(&out, seed_of(rank)) {
                return Ok(Some(format!(
                    "rank {rank}: its outgoing buffer changed at byte {i}: {got:#04x}, was {want:#04x}"
                )));
            }
            let bad = match partner {
                Some(_) => pattern::first_mismatch(&inn, seed_of(want_in)),
                None => inn
                    .iter()
                    .enumerate()
                    .find(|(i, &b)| b != !pattern::byte(seed_of(rank), *i as u64))
                    .map(|(i, &b)| (i, b, !pattern::byte(seed_of(rank), i as u64))),
            };
            Ok(bad.map(|(i, got, want)| match partner {
                Some(q) => format!(
                    "rank {rank}: received byte {i} is {got:#04x}, expected {want:#04x} (rank {q}'s data)"
                ),
                None => format!("rank {rank} (no partner): its receive buffer changed at byte {i}"),
            }))
        }
    }
}

/// Summary of one algorithm's cases.
pub struct Outcome {
    pub spec: AlgoSpec,
    pub collective: Collective,
    pub cases: usize,
    pub failure: Option<(Case, String)>,
    pub seconds: f64,
}

/// What to run for each algorithm.
pub struct Matrix {
    pub execs: Vec<Execution>,
    pub roots: Vec<usize>,
    pub sizes: Vec<u64>,
    /// Flip a received byte on this rank (self-test of the checking).
    pub inject_fault: bool,
}

/// Runs every case of one algorithm; on rank 0 `failure` carries the first
/// failing case and what a failing rank reported.
pub fn run_algorithm(
    comm: &Comm,
    collective: Collective,
    spec: &AlgoSpec,
    m: &Matrix,
    mut before_case: impl FnMut(&Case),
) -> Result<Outcome, TransportError> {
    comm.shared_memory_fits(collective, spec)
        .map_err(TransportError::SharedMemoryUnfit)?;
    let (execs, roots, sizes, inject_fault) = (&m.execs, &m.roots, &m.sizes, m.inject_fault);
    let t0 = Instant::now();
    let mut cases = 0;
    for &exec in execs {
        let roots: &[usize] = if collective == Collective::Swap {
            &roots[..1]
        } else {
            roots
        };
        for &root in roots {
            for &bytes in sizes {
                let case = Case {
                    collective,
                    spec: spec.clone(),
                    exec,
                    root,
                    bytes,
                };
                before_case(&case);
                let local = run_case(comm, &case, inject_fault)?;
                cases += 1;
                let failures = comm.allreduce(u64::from(local.is_some()), Op::Sum)?;
                if failures > 0 {
                    let report = gather_first(comm, local.as_deref())?;
                    return Ok(Outcome {
                        spec: spec.clone(),
                        collective,
                        cases,
                        failure: Some((case, format!("{failures} rank(s) wrong; {report}"))),
                        seconds: t0.elapsed().as_secs_f64(),
                    });
                }
            }
        }
    }
    Ok(Outcome {
        spec: spec.clone(),
        collective,
        cases,
        failure: None,
        seconds: t0.elapsed().as_secs_f64(),
    })
}

/// The first non-empty report, as seen from rank 0.
fn gather_first(comm: &Comm, local: Option<&str>) -> Result<String, TransportError> {
    const W: usize = 256;
    let mut mine = [0u8; W];
    if let Some(s) = local {
        let b = s.as_bytes();
        let n = b.len().min(W);
        mine[..n].copy_from_slice(&b[..n]);
    }
    let all = comm.gather(&mine, 0)?;
    Ok(all
        .chunks(W)
        .map(|c| {
            String::from_utf8_lossy(c)
                .trim_end_matches('\0')
                .to_string()
        })
        .find(|s| !s.is_empty())
        .unwrap_or_default())
}

/// Roots worth checking on `size` ranks: first, last and middle.
pub fn default_roots(size: usize) -> Vec<usize> {
    let mut r = vec![0, size - 1, size / 2];
    r.sort_unstable();
    r.dedup();
    r
}

/// Sizes worth checking: 0, 1, 7, around a segment, and 1 MiB + 3.
pub fn default_sizes(segment: u64) -> Vec<u64> {
    vec![0, 1, 7, segment - 1, segment + 1, (1 << 20) + 3]
}

/// Writes one line per algorithm (rank 0 only).
pub fn report_line(w: &mut impl Write, o: &Outcome) -> std::io::Result<()> {
    match &o.failure {
        None => writeln!(
            w,
            "ok      {:<6} {:<70} {:>4} cases  {:>7.2} s",
            o.collective.name(),
            o.spec.to_string(),
            o.cases,
            o.seconds
        ),
        Some((case, why)) => writeln!(w, "FAILED  {case}: {why}"),
    }
}
