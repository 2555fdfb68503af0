//! Per-call samples as the pico benchmark (HLC-Lab/pico, the Bine trees
//! paper's) writes them: one file per message size and algorithm, named
//! `<count>_<algorithm>_<library>_<datatype>.csv` (`512_binomial_ompi_int32.csv`:
//! 512 32-bit integers, Open MPI's binomial tree forced), holding a header
//! line `highest` and then one line per call, the slowest rank's time in
//! that call in nanoseconds, the first call a warm-up; beside them
//! `alloc.csv` (`MPI_Rank,allocation`: the node each rank ran on). Each
//! file becomes one broadcast row: the median over its calls (the warm-up
//! left out), their least and largest, the number of calls as iterations.
//! Library `ompi`: Open MPI's algorithm of that name; `over` (pico's own
//! over point-to-point): colltune's algorithm of the same tree
//! ([`own::by_pico`]: the Bine latency trees as `bine`), the others
//! skipped saying why.

use std::path::Path;

use super::{algorithm_of, BcastRow, Imported, Options, Warning};
use crate::measure::stats::median;
use crate::model::own;
use crate::model::placement::Mapping;

/// The header of a per-call file.
const HEADER: &str = "highest";
/// The header of the allocation file.
const ALLOC_HEADER: &str = "MPI_Rank,allocation";

/// Bytes of one element of the datatypes pico names.
fn datatype_bytes(t: &str) -> Option<u64> {
    Some(match t {
        "int8" | "char" | "byte" | "uint8" => 1,
        "int16" | "uint16" => 2,
        "int32" | "uint32" | "int" | "float" => 4,
        "int64" | "uint64" | "double" => 8,
        _ => return None,
    })
}

/// `<count>_<algorithm>_<library>_<datatype>.csv` -> (count, algorithm,
/// library, datatype).
fn name_parts(name: &str) -> Option<(u64, &str, &str, &str)> {
    let stem = name.strip_suffix(".csv")?;
    let (count, rest) = stem.split_once('_')?;
    let (rest, dtype) = rest.rsplit_once('_')?;
    let (alg, lib) = rest.rsplit_once('_')?;
    Some((count.parse().ok()?, alg, lib, dtype))
}

/// Where each rank ran (`alloc.csv`): per rank its node's name, in rank
/// order; None when the file is not there or not in that form.
fn allocation(text: &str) -> Option<Vec<String>> {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    if lines.next()? != ALLOC_HEADER {
        return None;
    }
    let mut nodes = Vec::new();
    for (i, l) in lines.enumerate() {
        let (r, node) = l.split_once(',')?;
        if r.trim().parse::<usize>().ok()? != i {
            return None;
        }
        nodes.push(node.trim().to_string());
    }
    Some(nodes)
}

/// How `mpirun --map-by` would have placed ranks so: one per node (node),
/// or consecutive ranks filling a node (core); None otherwise.
fn mapping_of(nodes: &[String]) -> Option<Mapping> {
    let distinct = |v: &[String]| {
        let mut s: Vec<&String> = v.iter().collect();
        s.sort();
        s.dedup();
        s.len()
    };
    let n = distinct(nodes);
    if n == nodes.len() {
        return Some(Mapping::Node);
    }
    let ppn = nodes.len() / n.max(1);
    let blocks = nodes.len() % n == 0
        && nodes.chunks(ppn).all(|c| c.iter().all(|x| *x == c[0]))
        && distinct(&nodes.chunks(ppn).map(|c| c[0].clone()).collect::<Vec<_>>()) == n;
    blocks.then_some(Mapping::Core)
}

/// Reads `text` (from `path`) if it is a per-call file or the allocation
/// file beside such files; None when it is neither (another reader's).
pub(super) fn read(
    path: &Path,
    text: &str,
    opts: &Options,
) -> Option<Result<Imported, (usize, String)>> {
    let first = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    if first == ALLOC_HEADER {
        return Some(Ok(Imported {
            origin: "pico:allocation".into(),
            warnings: vec![Warning {
                line: 1,
                what: "where each rank ran (pico's alloc.csv): no measurements; read for the per-call files beside it".into(),
            }],
            ..Imported::default()
        }));
    }
    if first != HEADER {
        return None;
    }
    let name = path.file_name()?.to_string_lossy().into_owned();
    Some(per_call(path, &name, text, opts))
}

fn per_call(
    path: &Path,
    name: &str,
    text: &str,
    opts: &Options,
) -> Result<Imported, (usize, String)> {
    let mut out = Imported {
        origin: "pico".into(),
        ..Imported::default()
    };
    let Some((count, alg, lib, dtype)) = name_parts(name) else {
        return Err((0, format!("a per-call file (header `{HEADER}`) whose name is not `<count>_<algorithm>_<library>_<datatype>.csv` (e.g. 512_binomial_ompi_int32.csv): the name says the size and algorithm")));
    };
    let Some(elem) = datatype_bytes(dtype) else {
        return Err((0, format!("datatype `{dtype}` in the file's name: colltune knows int8, int16, int32, int64, float, double")));
    };
    let mut calls = Vec::new();
    for (i, l) in text.lines().enumerate().skip(1) {
        let l = l.trim();
        if l.is_empty() {
            continue;
        }
        match l.parse::<f64>() {
            Ok(ns) if ns.is_finite() && ns > 0.0 => calls.push(ns / 1000.0),
            _ => {
                out.skipped += 1;
                out.warnings.push(Warning {
                    line: i + 1,
                    what: format!("`{l}` is not a time in nanoseconds > 0: skipped"),
                });
            }
        }
    }
    let algorithm = match lib {
        "ompi" => match algorithm_of(alg, &opts.labels).map_err(|e| (0, e))? {
            Some(a) => a,
            None => {
                out.skipped += calls.len();
                return Ok(out);
            }
        },
        // pico's own implementations over point-to-point: colltune's
        // algorithm of the same tree, where the simulator has it.
        "over" => match own::by_pico(alg) {
            Ok(o) => o.id,
            Err(why) => {
                out.skipped += calls.len();
                out.warnings.push(Warning {
                    line: 1,
                    what: format!("{why}: skipped"),
                });
                return Ok(out);
            }
        },
        _ => {
            out.skipped += calls.len();
            out.warnings.push(Warning {
                line: 1,
                what: format!("library `{lib}`: neither Open MPI's own algorithms (`ompi`) nor pico's over point-to-point (`over`): skipped"),
            });
            return Ok(out);
        }
    };
    if calls.len() < 2 {
        return Err((
            0,
            "fewer than two calls (the first is a warm-up): nothing to import".into(),
        ));
    }
    let alloc = path
        .parent()
        .map(|d| d.join("alloc.csv"))
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|t| allocation(&t));
    let ranks = match (opts.ranks, &alloc) {
        (Some(r), _) => r,
        (None, Some(a)) => a.len() as u32,
        (None, None) => return Err((0, "how many ranks ran is not said: give --ranks N, or keep pico's alloc.csv beside the file".into())),
    };
    let mapping = opts
        .mapping
        .or_else(|| alloc.as_deref().and_then(mapping_of));
    // The warm-up call left out.
    let kept = &calls[1..];
    out.kept = kept.len();
    out.skipped += 1;
    out.bcast.push(BcastRow {
        algorithm,
        ranks,
        bytes: count * elem,
        time_us: median(kept),
        min_us: kept.iter().copied().reduce(f64::min),
        max_us: kept.iter().copied().reduce(f64::max),
        mapping,
        iterations: Some(kept.len() as u32),
        line: 2,
    });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_allocations_and_calls() {
        assert_eq!(
            name_parts("512_scatter_allgather_ring_ompi_int32.csv"),
            Some((512, "scatter_allgather_ring", "ompi", "int32"))
        );
        assert_eq!(name_parts("alloc.csv"), None);
        let one: Vec<String> = (0..4).map(|i| format!("n{i}")).collect();
        assert_eq!(mapping_of(&one), Some(Mapping::Node));
        let blocks: Vec<String> = (0..8).map(|i| format!("n{}", i / 4)).collect();
        assert_eq!(mapping_of(&blocks), Some(Mapping::Core));
        let rr: Vec<String> = (0..8).map(|i| format!("n{}", i % 2)).collect();
        assert_eq!(mapping_of(&rr), None);
        assert_eq!(
            allocation("MPI_Rank,allocation\n0,a\n1,a\n"),
            Some(vec!["a".into(), "a".into()])
        );
        assert_eq!(allocation("MPI_Rank,allocation\n1,a\n"), None);

        let dir = std::env::temp_dir().join(format!("colltune-pico-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("alloc.csv"),
            "MPI_Rank,allocation\n0,a\n1,b\n2,c\n",
        )
        .unwrap();
        let f = dir.join("8_binomial_ompi_int32.csv");
        let text = "highest\n90000\n3000\nx\n5000\n4000\n";
        std::fs::write(&f, text).unwrap();
        let got = read(&f, text, &Options::default()).unwrap().unwrap();
        let r = &got.bcast[0];
        // 8 int32 = 32 B; the warm-up (90 us) left out; median of 3, 5, 4 us.
        assert_eq!((r.algorithm, r.ranks, r.bytes), (6, 3, 32));
        assert_eq!((r.time_us, r.min_us, r.max_us), (4.0, Some(3.0), Some(5.0)));
        assert_eq!((r.mapping, r.iterations), (Some(Mapping::Node), Some(3)));
        assert_eq!((got.kept, got.skipped, got.warnings.len()), (3, 2, 1));
        // pico's own over point-to-point: colltune's tree of that name...
        let g = dir.join("8_bine_lat_i_new_over_int32.csv");
        let got = read(&g, text, &Options::default()).unwrap().unwrap();
        assert_eq!(
            got.bcast[0].algorithm,
            own::by_pico("bine_lat_i_new").unwrap().id
        );
        // ...or skipped, saying why.
        let g = dir.join("8_bine_lat_over_int32.csv");
        let got = read(&g, text, &Options::default()).unwrap().unwrap();
        assert!(
            got.bcast.is_empty()
                && got
                    .warnings
                    .iter()
                    .any(|w| w.what.contains("nearest first"))
        );
        let g = dir.join("8_ring_nccl_int32.csv");
        let got = read(&g, text, &Options::default()).unwrap().unwrap();
        assert!(got.bcast.is_empty() && got.warnings.iter().any(|w| w.what.contains("`nccl`")));
        // Not this format: another reader's.
        assert!(read(&f, "size,time\n1,2\n", &Options::default()).is_none());
        // A bad name says what it should be.
        let bad = dir.join("binomial.csv");
        let e = read(&bad, text, &Options::default()).unwrap().unwrap_err();
        assert!(e.1.contains("<count>_<algorithm>"), "{}", e.1);
        std::fs::remove_dir_all(&dir).ok();
    }
}
