//! Tables for tests (the exporters', the validator's): one provenance, the
//! sections each test needs.

/// A table's first lines: the schema and a provenance of placeholders.
pub const HEAD: &str = "schema: 1
provenance:
  host: t
  mpi: m
  date: d
  command: c
  colltune: v
  source: s
  sweep:
    mode: built
";

/// The swap rules most test tables end with: 4 ranks on one node, sendrecv.
pub const SWAP_SENDRECV: &str = "swap:
- ranks: 4
  ppn: 4
  nodes: 1
  rules:
  - min_bytes: 0
    algorithm: sendrecv
    execution: blocking
";

/// A table's YAML: [`HEAD`], then `sections` (`bcast:` and `swap:` lists).
pub fn yaml(sections: &str) -> String {
    format!("{HEAD}{sections}")
}
