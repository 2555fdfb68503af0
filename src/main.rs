//! The `colltune` command: parse, run, report; exit codes in `cli::ExitCode`.

fn main() {
    std::process::exit(colltune::cli::main());
}
