//! `colltune validate TABLE...`: every problem of every table with its
//! file and line.

use std::path::PathBuf;

use colltune_core::tables::table::{self, TableError};

use super::Code;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Tables to check.
    #[arg(required = true)]
    tables: Vec<PathBuf>,
}

/// Every problem of every table, `file:line: what; what to do`; exit 1 if any.
pub fn run(a: Args) -> anyhow::Result<Code> {
    let mut bad = 0;
    for p in &a.tables {
        match table::load(p) {
            Ok(t) => {
                // Every section's rules (bcast, swap, ibcast, bcast_init).
                let rules: usize = table::Section::ALL
                    .iter()
                    .map(|&s| t.section(s).iter().map(|r| r.rules.len()).sum::<usize>())
                    .sum();
                outln!("{}: ok ({rules} rules)", p.display());
            }
            Err(e @ TableError::Read { .. }) => {
                outln!("{e}");
                bad += 1;
            }
            Err(e) => {
                let n = e.problems().len();
                outln!("{e}");
                outln!("{}: {n} problem(s)", p.display());
                bad += 1;
            }
        }
    }
    Ok(if bad == 0 { Code::Ok } else { Code::Failed })
}
