//! `colltune verify` (under mpirun).

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use colltune_algorithms::{algorithms, resolve, variants, AlgoSpec, Collective, Execution};

use super::{init_mpi, parse_sizes, Code, UsageError};
use colltune_mpi::transport::mpi::Comm;
use colltune_mpi::verify::{
    default_roots, default_sizes, report_line, run_algorithm, Case, Matrix,
};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Only this collective (bcast or swap); default both.
    #[arg(long)]
    collective: Option<Collective>,
    /// Algorithms to verify (repeatable), e.g. `pipeline:segment=8K`; default
    /// every algorithm with the variants of its parameters.
    #[arg(long = "algorithm", short = 'a')]
    algorithms: Vec<String>,
    /// Executions to verify: blocking, nonblocking (default both).
    #[arg(long, value_delimiter = ',')]
    executions: Vec<Execution>,
    /// Message sizes (`0,1,7,64K` or `1..4M`); default 0, 1, 7,
    /// segment - 1, segment + 1 and 1 MiB + 3.
    #[arg(long)]
    sizes: Option<String>,
    /// Segment size used for the segmented variants and the default sizes.
    #[arg(long, default_value = "64K", value_parser = colltune_algorithms::parse_size)]
    segment: u64,
    /// Abort (exit 4) if one case takes longer than this many seconds.
    #[arg(long, default_value_t = 120)]
    timeout: u64,
    /// Self-test of the checking itself: flip the first byte this rank
    /// receives in every non-empty case, so verify must report a failure.
    #[arg(long, hide = true)]
    inject_fault: Option<usize>,
}

/// Every (collective, resolved spec) the arguments ask for.
fn specs(args: &Args) -> Result<Vec<(Collective, AlgoSpec)>, UsageError> {
    let collectives: Vec<Collective> = match args.collective {
        Some(c) => vec![c],
        None => Collective::ALL.to_vec(),
    };
    let mut out = Vec::new();
    if args.algorithms.is_empty() {
        for &c in &collectives {
            for a in algorithms(c) {
                out.extend(variants(a, args.segment).into_iter().map(|s| (c, s)));
            }
        }
        return Ok(out);
    }
    for text in &args.algorithms {
        let spec = AlgoSpec::parse(text).map_err(|e| UsageError(format!("--algorithm: {e}")))?;
        let found = collectives
            .iter()
            .find_map(|&c| resolve(c, &spec).ok().map(|r| (c, r)));
        match found {
            Some(x) => out.push(x),
            None => {
                // Report the error against the most likely collective.
                let c = collectives[0];
                let e = resolve(c, &spec).expect_err("did not resolve");
                return Err(UsageError(format!("--algorithm {text}: {e}")));
            }
        }
    }
    Ok(out)
}

pub fn run(args: Args) -> anyhow::Result<Code> {
    let specs = specs(&args)?;
    if args.segment < 2 {
        return Err(UsageError("--segment must be at least 2 bytes".into()).into());
    }
    let sizes = match &args.sizes {
        Some(s) => parse_sizes(s)?,
        None => default_sizes(args.segment),
    };
    let execs = if args.executions.is_empty() {
        Execution::ALL.to_vec()
    } else {
        args.executions.clone()
    };
    let _universe = init_mpi()?;
    let comm = Comm::world().context("setting up MPI_COMM_WORLD")?;
    let roots = default_roots(comm.size());
    let lead = comm.rank() == 0;

    // Watchdog: a deadlocked case must fail loudly, not hang the job.
    let current: Arc<Mutex<Option<(String, Instant)>>> = Arc::new(Mutex::new(None));
    {
        let current = Arc::clone(&current);
        let limit = Duration::from_secs(args.timeout);
        let rank = comm.rank();
        std::thread::spawn(move || loop {
            std::thread::sleep(Duration::from_millis(500));
            if let Some((case, since)) = current.lock().expect("watchdog lock").as_ref() {
                if since.elapsed() > limit {
                    eprintln!(
                        "colltune verify: rank {rank}: TIMEOUT: {case} did not finish within {} s",
                        limit.as_secs()
                    );
                    std::process::exit(Code::Timeout as i32);
                }
            }
        });
    }

    if lead {
        outln!(
            "colltune verify: {} ranks, nodes {}, roots {:?}, sizes {:?}, executions {}",
            comm.size(),
            comm.nodes(),
            roots,
            sizes,
            execs.iter().map(|e| e.name()).collect::<Vec<_>>().join(",")
        );
    }
    let matrix = Matrix {
        execs,
        roots,
        sizes,
        inject_fault: args.inject_fault == Some(comm.rank()),
    };
    let mut total = 0;
    let mut failed = 0;
    let mut skipped = 0;
    let mut out = std::io::stdout();
    for (c, spec) in &specs {
        let o = match run_algorithm(&comm, *c, spec, &matrix, |case: &Case| {
            *current.lock().expect("watchdog lock") = Some((case.to_string(), Instant::now()));
        }) {
            Ok(o) => o,
            // Window creation is collective: every rank skips alike.
            Err(colltune_mpi::transport::mpi::TransportError::Mpi(m))
                if m.call == "MPI_Win_allocate" || m.call == "MPI_Win_allocate_shared" =>
            {
                skipped += 1;
                if lead {
                    outln!("SKIPPED {c} {spec}: not available with this MPI and network ({m})");
                }
                continue;
            }
            // Decided from the layout, or a shared window the library
            // refused (agreed): every rank skips alike.
            Err(colltune_mpi::transport::mpi::TransportError::SharedMemoryUnfit(why)) => {
                skipped += 1;
                if lead {
                    outln!("SKIPPED {c} {spec}: not applicable here ({why})");
                }
                continue;
            }
            Err(e) => return Err(anyhow::Error::new(e).context(format!("verifying {c} {spec}"))),
        };
        total += o.cases;
        if o.failure.is_some() {
            failed += 1;
        }
        if lead {
            report_line(&mut out, &o)?;
            out.flush()?;
        }
    }
    *current.lock().expect("watchdog lock") = None;
    if lead {
        outln!(
            "{} algorithm configurations, {total} cases: {}",
            specs.len(),
            match (failed, skipped) {
                (0, 0) => "all correct".to_string(),
                (0, s) => format!("all correct ({s} not available here, skipped)"),
                (f, _) => format!("{f} FAILED"),
            }
        );
    }
    Ok(if failed == 0 { Code::Ok } else { Code::Failed })
}
