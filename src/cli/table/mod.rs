//! `colltune table`: `build RAW.csv...`, a decision table from raw samples
//! alone ([`build`]); `unresolved`, the sizes a table left open.

mod build;
mod refuse;

use std::path::PathBuf;

use super::{Code, UsageError};
use colltune_core::tables::table;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    command: TableCommand,
}

#[derive(clap::Subcommand, Debug)]
enum TableCommand {
    /// Build a table from raw CSVs (from `tune`, `bench` or `simulate`).
    Build(build::Args),
    /// List a table's unresolved sizes (its provenance's), one
    /// `collective ranks ppn nodes bytes` per line: where job scripts
    /// spend further launches.
    Unresolved {
        table: PathBuf,
        /// Print only the distinct sizes, comma-separated on one line (for
        /// `tune --sizes`); nothing when every size is resolved.
        #[arg(long)]
        sizes: bool,
    },
}

pub fn run(args: Args) -> anyhow::Result<Code> {
    match args.command {
        TableCommand::Build(a) => build::run(a),
        TableCommand::Unresolved { table, sizes } => {
            let t = table::load(&table).map_err(|e| UsageError(e.to_string()))?;
            let open = t.provenance.evidence.iter().flat_map(|e| &e.unresolved);
            if sizes {
                let b: std::collections::BTreeSet<u64> = open.map(|u| u.bytes).collect();
                if !b.is_empty() {
                    let v: Vec<String> = b.iter().map(u64::to_string).collect();
                    outln!("{}", v.join(","));
                }
                return Ok(Code::Ok);
            }
            for u in open {
                outln!(
                    "{} {} {} {} {}",
                    u.collective,
                    u.ranks,
                    u.ppn,
                    u.nodes,
                    u.bytes
                );
            }
            Ok(Code::Ok)
        }
    }
}
