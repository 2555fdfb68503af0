//! The `colltune` command: parse, run, report; exit codes in `cli::Code`.
//! Subcommands parse their arguments, call `colltune_core` (no MPI) or
//! `colltune_mpi`, and print.

#![forbid(unsafe_code)]

mod cli;
mod plot;
mod progress;
mod report_html;

fn main() {
    std::process::exit(cli::main());
}
