//! The export to MPICH: its JSON collective selection tree, the
//! broadcast part replaced and every other collective's rules taken from a
//! base (MPICH's own selection file, or the copy built into an installed
//! `libmpich.so`), and colltune's algorithms mapped to MPICH's.

use std::path::{Path, PathBuf};

use colltune_algorithms::{AlgoSpec, Execution};
use serde_json::{json, Map, Value};

use super::*;

/// MPICH equivalent of a colltune broadcast.
pub(super) fn to_mpich(
    spec: &AlgoSpec,
    exec: Execution,
    ranks: u32,
    known: &[String],
    notes: &mut Notes,
) -> Mapped {
    let has_trees = known.iter().any(|k| k == "MPIR_Bcast_intra_tree");
    let seg = spec.int("segment").unwrap_or(0);
    let nb = if exec == Execution::Nonblocking { 1 } else { 0 };
    let tree = |tree_type: &str, k: u64, notes: &mut Notes| -> Mapped {
        if !has_trees {
            notes.add(format!(
                "{}: this MPICH has no configurable tree broadcast (MPIR_Bcast_intra_tree arrived after 4.0); binomial is the nearest it has",
                spec.name
            ));
            return Mapped {
                id: 0,
                name: "MPIR_Bcast_intra_binomial".into(),
                faninout: 0,
                segment: 0,
                params: Vec::new(),
            };
        }
        if seg > 0 {
            Mapped {
                id: 0,
                name: "MPIR_Bcast_intra_pipelined_tree".into(),
                faninout: 0,
                segment: seg,
                params: vec![
                    format!("tree_type={tree_type}"),
                    format!("k={k}"),
                    format!("is_non_blocking={nb}"),
                    format!("chunk_size={seg}"),
                    "recv_pre_posted=0".into(),
                ],
            }
        } else {
            let _ = notes;
            Mapped {
                id: 0,
                name: "MPIR_Bcast_intra_tree".into(),
                faninout: 0,
                segment: 0,
                params: vec![
                    format!("tree_type={tree_type}"),
                    format!("k={k}"),
                    format!("is_non_blocking={nb}"),
                ],
            }
        }
    };
    let simple = |name: &str| Mapped {
        id: 0,
        name: name.into(),
        faninout: 0,
        segment: 0,
        params: Vec::new(),
    };
    match spec.name.as_str() {
        "binomial" if seg == 0 => simple("MPIR_Bcast_intra_binomial"),
        "binomial" => tree("knomial_1", 2, notes),
        "knomial" => tree("knomial_1", spec.int("radix").unwrap_or(4), notes),
        "binary" => tree("kary", 2, notes),
        "linear" => {
            notes.add("linear: MPICH has no flat broadcast; a k-ary tree with k = ranks - 1 (the root sends to everyone) is the same shape".into());
            tree("kary", u64::from(ranks.saturating_sub(1).max(1)), notes)
        }
        "pipeline" => tree("kary", 1, notes),
        "shm" => {
            notes.add("shm: MPICH's JSON tuning has no shared-memory broadcast among its algorithms (its CH4 shared-memory layer has one, release_gather, tuned in a file of its own); a k-ary tree with k = ranks - 1 (every rank takes the message from the root, as every rank copies it out of the root's segment) is the nearest".into());
            tree("kary", u64::from(ranks.saturating_sub(1).max(1)), notes)
        }
        "chain" => {
            notes.add("chain: MPICH has no multi-chain broadcast; its pipelined k-ary tree with k = fanout is the nearest".into());
            tree("kary", spec.int("fanout").unwrap_or(4), notes)
        }
        "split_binary" => {
            notes.add(
                "split_binary: MPICH has no split-binary broadcast; a binary tree is the nearest"
                    .into(),
            );
            tree("kary", 2, notes)
        }
        "scatter_allgather" => simple("MPIR_Bcast_intra_scatter_recursive_doubling_allgather"),
        "scatter_allgather_ring" => simple("MPIR_Bcast_intra_scatter_ring_allgather"),
        "bine" => {
            notes.add("bine: MPICH has no Bine tree; its binomial tree (the same rounds, other partners) is the nearest".into());
            if seg > 0 {
                tree("knomial_1", 2, notes)
            } else {
                simple("MPIR_Bcast_intra_binomial")
            }
        }
        "bine_bdw" => {
            notes.add("bine_bdw: MPICH has no Bine scatter-allgather; its scatter with recursive-doubling allgather is the nearest".into());
            simple("MPIR_Bcast_intra_scatter_recursive_doubling_allgather")
        }
        "circulant"
            if known.is_empty() || known.iter().any(|k| k == "MPIR_Bcast_intra_circ_graph") =>
        {
            notes.add("circulant: MPICH 5's circ_graph is the same schedule; its block size is MPICH's own (MPIR_CVAR_CIRC_GRAPH_CHUNK_SIZE), not the table's".into());
            simple("MPIR_Bcast_intra_circ_graph")
        }
        "circulant" => {
            notes.add("circulant: this MPICH has no circ_graph broadcast (it came with MPICH 5); its ring allgather after a scatter is the nearest pipeline-like one".into());
            simple("MPIR_Bcast_intra_scatter_ring_allgather")
        }
        "hierarchical" => {
            notes.add("hierarchical: mapped to MPICH's own node-aware MPIR_Bcast_intra_smp (its phases are MPICH's choice)".into());
            simple("MPIR_Bcast_intra_smp")
        }
        other => {
            notes.add(format!("{other}: no MPICH equivalent; binomial used"));
            simple("MPIR_Bcast_intra_binomial")
        }
    }
}

/// Appends a message-size rule, merged into the previous one when both
/// choose the same.
pub(super) fn merged_push(merged: &mut Vec<(Option<u64>, Value)>, max: Option<u64>, v: Value) {
    match merged.last_mut() {
        Some(last) if last.1 == v => last.0 = max,
        _ => merged.push((max, v)),
    }
}

/// An `mpich` rule's algorithm in MPICH's JSON file, by MPICH's own name.
/// MPICH's tree algorithms take their parameters from the file, where the
/// control variable way of forcing them takes MPICH's defaults
/// (`MPIR_CVAR_BCAST_TREE_TYPE=kary`, `_TREE_KVAL=2`,
/// `_IS_NON_BLOCKING=1`, `_TREE_PIPELINE_CHUNK_SIZE=8192`,
/// `_RECV_PRE_POST=0`): the file says those, so both run the same.
pub(super) fn mpich_native(
    m: crate::libraries::mpich::Forced,
    known: &[String],
    notes: &mut Notes,
) -> Mapped {
    let name = m.json_name().unwrap_or("MPIR_Bcast_intra_binomial");
    if !known.is_empty() && !known.iter().any(|k| k == name) {
        notes.add(format!(
            "{name}: the MPICH base does not name it (an older MPICH?); MPICH may refuse the file"
        ));
    }
    let params = match m.name {
        "tree" => vec![
            "tree_type=kary".into(),
            "k=2".into(),
            "is_non_blocking=1".into(),
        ],
        "pipelined_tree" => vec![
            "tree_type=kary".into(),
            "k=2".into(),
            "is_non_blocking=1".into(),
            "chunk_size=8192".into(),
            "recv_pre_posted=0".into(),
        ],
        _ => Vec::new(),
    };
    Mapped {
        id: 0,
        name: name.into(),
        faninout: 0,
        segment: 0,
        params,
    }
}

pub(super) fn leaf(m: &Mapped) -> Value {
    let mut params = Map::new();
    for p in &m.params {
        params.insert(p.clone(), json!({}));
    }
    let mut o = Map::new();
    o.insert(format!("algorithm={}", m.name), Value::Object(params));
    Value::Object(o)
}

/// MPICH's JSON selection file: `base` (every collective's rules) with the
/// broadcast part replaced by the table's.
pub fn mpich_json(
    table: &Table,
    base: Option<MpichBase>,
) -> Result<(String, Vec<String>), ExportError> {
    let known: Vec<String> = base.as_ref().map(|b| b.known.clone()).unwrap_or_default();
    let mut notes = Notes::default();
    let entries = by_size(table, &mut notes);
    let mut base = match base {
        Some(b) => b.rules,
        None => {
            notes.add("no MPICH base file: the export holds broadcast rules only, and MPICH reads a tuning file instead of its built-in rules, so other collectives would find no rule; give --mpich-base".into());
            json!({})
        }
    };
    let Some(obj) = base.as_object_mut() else {
        return Err(ExportError::Base(
            "the MPICH base is not a JSON object".into(),
        ));
    };
    // MPICH's previous broadcast tree stays the choice for other sizes.
    let previous = obj
        .get("collective=bcast")
        .and_then(|b| b.get("comm_type=intra"))
        .cloned()
        .unwrap_or_else(|| json!({"algorithm=MPIR_Bcast_intra_binomial": {}}));
    // Keys of one level are tried in file order, each `comm_size<=N`
    // falling through to the next: sizes below each of ours keep MPICH's
    // rules, ours get the table's, everything above falls to `any`.
    let mut intra = Map::new();
    let mut below = 0u32;
    for cr in &entries {
        let mut by_msg = Map::new();
        let mut merged: Vec<(Option<u64>, Value)> = Vec::new();
        for r in &cr.rules {
            let m = match library(r, cr.ranks)? {
                // MPICH's own decision: its previous rules for the size.
                Some(LibraryChoice::Mpich(m)) if m.is_default() => {
                    merged_push(&mut merged, r.max_bytes, previous.clone());
                    continue;
                }
                // MPICH's own algorithm: by its own name.
                Some(LibraryChoice::Mpich(m)) => mpich_native(m, &known, &mut notes),
                Some(c @ (LibraryChoice::Libnbc(_) | LibraryChoice::MpichIbcast(_))) => {
                    return Err(super::not_blocking(c, r, cr.ranks))
                }
                // Open MPI's own algorithms do not exist in MPICH: the
                // MPICH algorithm of colltune's same-shaped schedule stands
                // in, and a note says so.
                Some(c) => {
                    // coll/adapt's algorithms as the coll/tuned ones of
                    // their shape.
                    let f = match c {
                        LibraryChoice::Adapt(a) => a.tuned_shape(),
                        LibraryChoice::Tuned(f) => f,
                        LibraryChoice::Mpich(_)
                        | LibraryChoice::Libnbc(_)
                        | LibraryChoice::MpichIbcast(_) => unreachable!("matched above"),
                    };
                    let t = f.tuned();
                    notes.add(format!(
                        "{} ranks, {} bytes: the rule chooses {c}, which MPICH does not have; MPICH's nearest to colltune's {} stands in",
                        cr.ranks,
                        r.range(),
                        t.ours
                    ));
                    let mut spec = AlgoSpec::new(t.ours);
                    if t.segmented {
                        spec = spec.with_int("segment", u64::from(f.segment));
                    }
                    let spec =
                        resolve(Collective::Bcast, &spec).map_err(|e| ExportError::Rule {
                            ranks: cr.ranks,
                            range: r.range(),
                            why: e.to_string(),
                        })?;
                    to_mpich(&spec, Execution::Blocking, cr.ranks, &known, &mut notes)
                }
                None => {
                    let (spec, exec) = resolved(r, cr.ranks)?;
                    to_mpich(&spec, exec, cr.ranks, &known, &mut notes)
                }
            };
            merged_push(&mut merged, r.max_bytes, leaf(&m));
        }
        for (max, v) in merged {
            let key = match max {
                Some(b) => format!("avg_msg_size<={b}"),
                None => "avg_msg_size=any".into(),
            };
            by_msg.insert(key, v);
        }
        if cr.ranks > below + 1 {
            intra.insert(format!("comm_size<={}", cr.ranks - 1), previous.clone());
        }
        intra.insert(format!("comm_size<={}", cr.ranks), Value::Object(by_msg));
        below = cr.ranks;
    }
    intra.insert("comm_size=any".into(), previous);
    let inter = obj
        .get("collective=bcast")
        .and_then(|b| b.get("comm_type=inter"))
        .cloned()
        .unwrap_or_else(|| json!({"algorithm=MPIR_Bcast_inter_remote_send_local_bcast": {}}));
    obj.insert(
        "collective=bcast".into(),
        json!({"comm_type=intra": Value::Object(intra), "comm_type=inter": inter}),
    );
    Ok((
        serde_json::to_string_pretty(&base).expect("JSON"),
        notes.into_vec(),
    ))
}

/// MPICH's rules for every collective, and the broadcast algorithms that
/// MPICH knows (they differ between versions: 4.0 has no `..._tree`).
#[derive(Clone, Debug)]
pub struct MpichBase {
    pub rules: Value,
    pub known: Vec<String>,
}

/// Broadcast algorithm names in `bytes` (`MPIR_Bcast_intra_*`).
pub(super) fn bcast_names(bytes: &[u8]) -> Vec<String> {
    let pat = b"MPIR_Bcast_intra_";
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(i) = find(&bytes[at..], pat).map(|i| i + at) {
        let end = bytes[i..]
            .iter()
            .position(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
            .map_or(bytes.len(), |e| i + e);
        let name = String::from_utf8_lossy(&bytes[i..end]).into_owned();
        if !out.contains(&name) {
            out.push(name);
        }
        at = end.max(i + 1);
    }
    out
}

/// MPICH's built-in MPIR-level selection JSON, read from a shared library
/// (`libmpich.so`) or a JSON file.
pub fn mpich_base(path: &Path) -> Result<MpichBase, ExportError> {
    let bytes =
        std::fs::read(path).map_err(|e| ExportError::Base(format!("{}: {e}", path.display())))?;
    let known = bcast_names(&bytes);
    if let Ok(v) = serde_json::from_slice::<Value>(&bytes) {
        return Ok(MpichBase { rules: v, known });
    }
    // A library: find the compiled-in JSON whose leaves are MPIR_ algorithms.
    let mut from = 0;
    while let Some(i) = find(&bytes[from..], b"{\"collective=").map(|i| i + from) {
        if let Some(end) = balanced(&bytes[i..]) {
            let text = &bytes[i..i + end];
            if find(text, b"algorithm=MPIR_Bcast_intra").is_some() {
                let rules = serde_json::from_slice(text).map_err(|e| {
                    ExportError::Base(format!(
                        "{}: the selection rules found there are not valid JSON: {e}",
                        path.display()
                    ))
                })?;
                return Ok(MpichBase { rules, known });
            }
        }
        from = i + 1;
    }
    Err(ExportError::Base(format!(
        "{}: neither a JSON file nor a library holding MPICH's built-in collective selection rules",
        path.display()
    )))
}

pub(super) fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Length of the balanced JSON object at the start of `b`.
pub(super) fn balanced(b: &[u8]) -> Option<usize> {
    let (mut depth, mut in_str, mut esc) = (0i32, false, false);
    for (i, &c) in b.iter().enumerate() {
        if c == 0 {
            return None;
        }
        if in_str {
            match (esc, c) {
                (true, _) => esc = false,
                (false, b'\\') => esc = true,
                (false, b'"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => in_str = true,
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// An installed MPICH library, if any.
pub fn find_libmpich() -> Option<PathBuf> {
    let candidates = [
        "/usr/lib/x86_64-linux-gnu/libmpich.so.12",
        "/usr/lib/aarch64-linux-gnu/libmpich.so.12",
        "/usr/lib64/mpich/lib/libmpich.so.12",
        "/usr/lib/libmpich.so.12",
    ];
    candidates.iter().map(PathBuf::from).find(|p| p.exists())
}
