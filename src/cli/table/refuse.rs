//! What one table may not mix: CSVs of several call patterns, MPI
//! libraries, sources (measured, simulated) or hosts (unless `--cluster`
//! names them one machine). Each refusal names every file and what it
//! holds, and what to do.

use std::path::PathBuf;

use crate::cli::UsageError;
use colltune_core::measure::record::Sample;

/// Refuses CSVs that mix call patterns: one table is for one call
/// pattern, and medians of both would decide for neither.
pub fn refuse_patterns(pattern_of: &[(String, &PathBuf)]) -> Result<(), UsageError> {
    let mut all_patterns: Vec<&str> = pattern_of.iter().map(|(p, _)| p.as_str()).collect();
    all_patterns.sort_unstable();
    all_patterns.dedup();
    if all_patterns.len() > 1 {
        let list: Vec<String> = pattern_of
            .iter()
            .map(|(pat, p)| format!("{}: {pat}", p.display()))
            .collect();
        return Err(UsageError(format!(
            "the CSVs mix call patterns ({}): build one table per pattern from the CSVs of that pattern",
            list.join("; ")
        )));
    }
    Ok(())
}

/// Refuses CSVs of different machines, libraries or sources in one build
/// (the pattern is checked apart): one table is for one of each. Several
/// hosts are one machine only when `--cluster` names it.
pub fn refuse_mixed(
    csv: &[PathBuf],
    launches: &[Vec<Sample>],
    cluster: bool,
) -> Result<(), UsageError> {
    type Field = fn(&Sample) -> String;
    let checks: [(&str, Field, &str); 3] = [
        (
            "MPI libraries",
            |s| s.mpi.clone(),
            "build one table per library, from that library's CSVs",
        ),
        (
            "sources",
            |s| s.source.split(':').next().unwrap_or("").to_string(),
            "measured and simulated samples do not mix: build one table from each",
        ),
        (
            "hosts",
            |s| s.host.clone(),
            "build one table per machine, or give --cluster NAME if these are nodes of one cluster",
        ),
    ];
    for (what, field, fix) in checks {
        if what == "hosts" && cluster {
            continue;
        }
        let mut seen: Vec<(String, &PathBuf)> = Vec::new();
        for (p, l) in csv.iter().zip(launches) {
            let mut v: Vec<String> = l.iter().map(field).collect();
            v.sort_unstable();
            v.dedup();
            seen.extend(v.into_iter().map(|x| (x, p)));
        }
        let mut distinct: Vec<&str> = seen.iter().map(|(x, _)| x.as_str()).collect();
        distinct.sort_unstable();
        distinct.dedup();
        if distinct.len() > 1 {
            let list: Vec<String> = seen
                .iter()
                .map(|(x, p)| format!("{}: {x}", p.display()))
                .collect();
            return Err(UsageError(format!(
                "the CSVs mix {what} ({}): {fix}",
                list.join("; ")
            )));
        }
    }
    Ok(())
}
