//! Parser tests: fixtures cut from the published sets
//! (`../shared/realclusters/`) and the benchmarks' printed output.

use super::*;

fn opts() -> Options {
    Options::default()
}

fn with_columns(cols: &str, labels: &str) -> Options {
    Options {
        columns: parse_columns(cols).unwrap(),
        labels: if labels.is_empty() {
            vec![]
        } else {
            parse_labels(labels).unwrap()
        },
        ..opts()
    }
}

/// orfeo-epyc/bcast_core.csv: sizes written `1.0` and `1`, unsorted, one
/// key measured twice (a 10,000-iteration rerun).
const EPYC_BCAST: &str = "algorithm,cores,iterations,size,latency,min,max
0,206,1000,2.0,7.49,0.55,15.73
0,206,1000,1.0,5.24,1.07,12.97
1,2,1000,1.0,0.13,0.09,0.17
1,2,10000,1.0,0.14,0.09,0.18
5,2,1000,1,0.15,0.10,0.20
";

#[test]
fn epyc_broadcast_csv_imports_with_a_column_map() {
    let o = with_columns(
        "ranks=cores,bytes=size,time_us=latency,min_us=min,max_us=max",
        "",
    );
    let r = parse(EPYC_BCAST, &o).unwrap();
    assert_eq!((r.kept, r.skipped), (5, 0));
    assert_eq!(r.bcast[1].bytes, 1);
    assert_eq!(r.bcast[1].ranks, 206);
    assert_eq!(r.bcast[1].algorithm, 0);
    assert_eq!(r.bcast[3].iterations, Some(10000));
    assert_eq!(r.bcast[4].min_us, Some(0.10));
    let layout = Layout::parse("node:2,socket:2,cache:16,core:4").unwrap();
    let s = to_samples(
        &r.bcast,
        Some(&layout),
        Some(Mapping::Node),
        "Open MPI 4.1.5",
        "imported:table:x.csv",
    )
    .unwrap();
    // The rerun is run 2 of its key; every other key has one run.
    let runs: Vec<u32> = s.iter().map(|x| x.run).collect();
    assert_eq!(runs, vec![1, 1, 1, 2, 1]);
    assert_eq!(s[0].spec, "ompi_tuned:algorithm=0,name=default,segment=0");
    assert_eq!(
        s[4].spec,
        "ompi_tuned:algorithm=5,name=binary_tree,segment=0"
    );
    assert_eq!(
        (s[0].nodes, s[0].ppn, s[0].layout.as_str()),
        (2, 103, "2x103")
    );
    assert!(s[0].source.ends_with(":map-by-node"), "{}", s[0].source);
    assert!(s.iter().all(|x| x.is_choice()));
    // Mapped by core, 206 ranks fill the first node's 128 cores.
    let s = to_samples(
        &r.bcast,
        Some(&layout),
        Some(Mapping::Core),
        "Open MPI",
        "i",
    )
    .unwrap();
    assert_eq!(s[0].layout, "128+78");
}

/// Without the column map the EPYC file says what is missing and how.
#[test]
fn a_missing_column_names_the_header_and_the_fix() {
    // The EPYC file's own names are known (`cores`, `size`, `latency`);
    // with its time column called `avg` it says what is missing and how.
    let r = parse(EPYC_BCAST, &opts()).unwrap();
    assert_eq!(
        (r.kept, r.bcast[0].ranks, r.bcast[0].time_us),
        (5, 206, 7.49)
    );
    let renamed = EPYC_BCAST.replacen("latency", "avg", 1);
    let e = parse(&renamed, &opts()).unwrap_err();
    assert_eq!(e.0, 1);
    assert!(
        e.1.contains("no time column") && e.1.contains("avg") && e.1.contains("--columns"),
        "{}",
        e.1
    );
    let o = with_columns("bytes=size,time_us=latency,ranks=np", "");
    let e = parse(EPYC_BCAST, &o).unwrap_err();
    assert!(
        e.1.contains("no column `np`") && e.1.contains("cores"),
        "{}",
        e.1
    );
}

/// orfeo-epyc/p2p.csv: placement labels by what differs (`core`: same
/// socket), an inter-node outlier (one receiver at 7-23 us).
const EPYC_P2P: &str = "mapby,size,latency,iterations,p50,p95,p99,recv
cache,1,0.14,1000,0.14,0.15,0.16,1
core,1,0.31,1000,0.30,0.32,0.35,4
socket,1,0.65,1000,0.64,0.66,0.70,64
node,1,1.82,1000,1.80,1.85,2.05,0
node,1,1.87,1000,1.81,1.90,2.16,1
node,1,1.85,1000,1.81,1.85,2.07,2
node,1,1.88,1000,1.81,1.91,2.07,3
node,1,14.2,1000,13.1,15.0,23.0,4
";

#[test]
fn epyc_point_to_point_with_a_label_map_flags_the_outlier() {
    let o = with_columns(
        "placement=mapby,bytes=size,time_us=latency,p50_us=p50",
        "core=socket,socket=node,node=network",
    );
    let r = parse(EPYC_P2P, &o).unwrap();
    assert_eq!((r.kept, r.skipped), (8, 0));
    let pl: Vec<Level> = r.p2p.iter().map(|x| x.placement).take(4).collect();
    assert_eq!(
        pl,
        vec![Level::Cache, Level::Socket, Level::Node, Level::Network]
    );
    let out: Vec<bool> = r.p2p.iter().map(|x| x.outlier).collect();
    assert_eq!(
        out,
        vec![false, false, false, false, false, false, false, true]
    );
    assert!(r
        .warnings
        .iter()
        .any(|w| w.line == 9 && w.what.contains("outlier")));
    // `core` means nothing without the map: the rows are skipped, each
    // with its line and the fix, the good rows kept.
    let o = with_columns("placement=mapby,bytes=size,time_us=latency", "");
    let r = parse(EPYC_P2P, &o).unwrap();
    assert_eq!((r.kept, r.skipped), (7, 1));
    let w = &r.warnings[0];
    assert_eq!(w.line, 3);
    assert!(
        w.what.contains("unknown placement `core`") && w.what.contains("--labels core="),
        "{w}"
    );
}

/// orfeo-thin/bcast_thin_merged.tsv: tab-separated, names for algorithms,
/// rows of another collective, ten merged runs.
const THIN_BCAST: &str = "Size\tLatency (us)\tnp\tAlgorithm
16\t0.2\t2\tbroadcast_flat
16\t0.21\t2\tbroadcast_flat
32\t0.22\t2\tbroadcast_chain
8\t0.5\t4\tscatter_flat
64\t0.9\t48\tbroadcast_binary_tree
";

#[test]
fn thin_tsv_with_names_and_another_collective() {
    let o = with_columns(
        "bytes=Size,time_us=\"Latency (us)\",ranks=np",
        "broadcast_flat=1,broadcast_chain=2,broadcast_binary_tree=5,scatter_flat=skip",
    );
    let r = parse(THIN_BCAST, &o).unwrap();
    assert_eq!((r.kept, r.skipped), (4, 1));
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    let algs: Vec<u32> = r.bcast.iter().map(|x| x.algorithm).collect();
    assert_eq!(algs, vec![1, 1, 2, 5]);
    // Unmapped, the other collective's rows are skipped with a warning.
    let o = with_columns(
        "bytes=Size,time_us=\"Latency (us)\",ranks=np",
        "broadcast_flat=basic_linear,broadcast_chain=chain,broadcast_binary_tree=binary_tree",
    );
    let r = parse(THIN_BCAST, &o).unwrap();
    assert_eq!((r.kept, r.skipped), (4, 1));
    assert!(r.warnings[0]
        .what
        .contains("unknown algorithm `scatter_flat`"));
    assert_eq!(r.warnings[0].line, 5);
}

/// orfeo-thin/p2p_different_node.txt: osu_latency's table without its `#`.
const THIN_P2P: &str = "Size          Latency (us)
1                       1.01
2                       1.00
4194304               366.31
";

#[test]
fn thin_point_to_point_text_takes_its_placement_from_the_command_line() {
    let e = parse(THIN_P2P, &opts()).unwrap_err();
    assert!(e.1.contains("--placement"), "{}", e.1);
    let o = Options {
        placement: Some(Level::Network),
        ..opts()
    };
    let r = parse(THIN_P2P, &o).unwrap();
    assert_eq!(r.kept, 3);
    assert_eq!(r.p2p[2].bytes, 4194304);
    assert_eq!(r.p2p[2].placement, Level::Network);
}

/// osu_bcast -f output, two tables in one file, the second's command echoed
/// into a comment, an OSU remark line inside the data.
const OSU_BCAST: &str = "
# OSU MPI Broadcast Latency Test v7.3
# Datatype: MPI_CHAR.
# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations
1                       1.52              0.81              2.29        1000
2                       1.50              0.80              2.28        1000
# a remark printed in the middle
4                       1.53              0.82              2.30        1000
# mpirun -np 16 --map-by socket --mca coll_tuned_use_dynamic_rules true --mca coll_tuned_bcast_algorithm 6 osu_bcast -f

# OSU MPI Broadcast Latency Test v7.3
# Datatype: MPI_CHAR.
# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations
1                       2.52              1.81              3.29        1000
8                       2.50              1.80              3.28
";

#[test]
fn osu_bcast_output_with_full_statistics_and_two_tables() {
    let o = Options {
        algorithm: Some(5),
        ranks: Some(8),
        ..opts()
    };
    let r = parse(OSU_BCAST, &o).unwrap();
    assert_eq!(r.origin, "osu_bcast");
    assert_eq!((r.kept, r.skipped), (4, 1));
    assert_eq!(r.bcast[0].max_us, Some(2.29));
    assert_eq!(r.bcast[2].iterations, Some(1000));
    assert_eq!((r.bcast[2].algorithm, r.bcast[2].ranks), (5, 8));
    let b = &r.bcast[3];
    assert_eq!(
        (b.algorithm, b.ranks, b.mapping),
        (6, 16, Some(Mapping::Socket))
    );
    assert_eq!(r.warnings.len(), 1);
    assert_eq!(r.warnings[0].line, 15);
    assert!(r.warnings[0].what.contains("4 fields"), "{}", r.warnings[0]);
    // Without an algorithm the first table cannot be read: its rows are
    // skipped, saying what to give; the second table's are kept.
    let r = parse(
        OSU_BCAST,
        &Options {
            ranks: Some(8),
            ..opts()
        },
    )
    .unwrap();
    assert_eq!((r.kept, r.skipped), (1, 4));
    assert!(r.warnings[0].what.contains("--algorithm"));
}

const OSU_LATENCY_BW: &str = "# OSU MPI Latency Test v7.3
# Size          Latency (us)
1                       0.19
2                       0.19
# OSU MPI Bandwidth Test v7.3
# Size      Bandwidth (MB/s)
1                       2.50
1048576             10000.00
";

#[test]
fn osu_latency_and_bandwidth() {
    let o = Options {
        placement: Some(Level::Socket),
        ..opts()
    };
    let r = parse(OSU_LATENCY_BW, &o).unwrap();
    assert_eq!(r.origin, "osu_latency+osu_bw");
    assert_eq!(r.kept, 4);
    assert_eq!(r.p2p[0].test, P2pTest::Latency);
    let bw = &r.p2p[3];
    assert_eq!(bw.test, P2pTest::Bandwidth);
    assert!((bw.time_us - 104.8576).abs() < 1e-9, "{}", bw.time_us);
    let mut csv = Vec::new();
    write_p2p(&mut csv, &r.p2p).unwrap();
    let csv = String::from_utf8(csv).unwrap();
    assert!(csv.starts_with("placement,bytes,time_us,"));
    assert!(
        csv.contains("socket,1048576,104.8576,,,,bandwidth,0"),
        "{csv}"
    );
    // Colltune's own point-to-point CSV reads back as it was written.
    let back = parse(&csv, &opts()).unwrap();
    assert_eq!(back.p2p.len(), 4);
    assert_eq!(back.p2p[3].placement, Level::Socket);
}

const IMB: &str = "#------------------------------------------------------------
#    Intel(R) MPI Benchmarks 2021.3, MPI-1 part
#------------------------------------------------------------
#---------------------------------------------------
# Benchmarking PingPong
# #processes = 2
#---------------------------------------------------
       #bytes #repetitions      t[usec]   Mbytes/sec
            0         1000         0.18         0.00
            1         1000         0.19         5.26
         1024         1000         0.40      2560.00

#----------------------------------------------------------------
# Benchmarking Allreduce
# #processes = 4
#----------------------------------------------------------------
       #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]
            4         1000         0.50         0.70         0.60

#----------------------------------------------------------------
# Benchmarking Bcast
# #processes = 2
# ( 2 additional processes waiting in MPI_Barrier)
#----------------------------------------------------------------
       #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]
            0         1000         0.03         0.04         0.03
            1         1000         0.50         0.60         0.55

#----------------------------------------------------------------
# Benchmarking Bcast
# #processes = 4
#----------------------------------------------------------------
       #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]
            1         1000         0.90         1.10         1.00
";

#[test]
fn imb_pingpong_and_bcast_tables() {
    // Broadcast rows need the algorithm; the PingPong rows the placement.
    let o = Options {
        algorithm: Some(0),
        placement: Some(Level::Node),
        ..opts()
    };
    let r = parse(IMB, &o).unwrap();
    assert_eq!(r.origin, "imb:PingPong+imb:Bcast");
    assert_eq!(r.p2p.len(), 2, "0-byte rows skipped");
    assert_eq!(r.p2p[1].time_us, 0.40);
    let b: Vec<(u32, u64, f64)> = r
        .bcast
        .iter()
        .map(|x| (x.ranks, x.bytes, x.time_us))
        .collect();
    assert_eq!(b, vec![(2, 1, 0.55), (4, 1, 1.00)]);
    assert_eq!(r.bcast[0].min_us, Some(0.50));
    // Skipped: two 0-byte rows and the Allreduce row.
    assert_eq!((r.kept, r.skipped), (4, 3));
    assert!(r.warnings.iter().any(|w| w.what.contains("Allreduce")));
}

#[test]
fn plain_csv_forms() {
    let bcast =
        "algorithm,ranks,bytes,time_us,mapping\nbinomial,8,1024,3.5,socket\n0,8,1024,3.0,socket\n";
    let r = parse(bcast, &opts()).unwrap();
    assert_eq!(r.bcast[0].algorithm, 6);
    assert_eq!(r.bcast[1].algorithm, 0);
    assert_eq!(r.bcast[0].mapping, Some(Mapping::Socket));
    let p2p = "placement,bytes,time_us\ncache,1,0.15\nrack,1,2.0\n";
    let r = parse(p2p, &opts()).unwrap();
    assert_eq!((r.kept, r.skipped), (1, 1));
    assert!(r.warnings[0].what.contains("unknown placement `rack`"));
}

#[test]
fn bad_rows_are_skipped_with_their_line_and_bad_files_are_errors() {
    let text = "algorithm,ranks,bytes,time_us
5,8,1.5,3.0
5,8,16,abc
5,8,16
5,8,16,-1
5,8,32,2.0
";
    let r = parse(text, &opts()).unwrap();
    assert_eq!((r.kept, r.skipped), (1, 4));
    let lines: Vec<usize> = r.warnings.iter().map(|w| w.line).collect();
    assert_eq!(lines, vec![2, 3, 4, 5]);
    assert!(r.warnings[0].what.contains("whole number of bytes"));
    assert!(r.warnings[1].what.contains("`abc` is not a number"));
    // A layout too small for the ranks: an error naming the line.
    let o = Options {
        layout: Some(Layout::parse("node:1,core:4").unwrap()),
        ..opts()
    };
    let e = parse(text, &o).unwrap_err();
    assert_eq!(e.0, 6);
    assert!(e.1.contains("8 ranks do not fit"), "{}", e.1);
    // Nothing readable: an error.
    let e = parse("algorithm,ranks,bytes,time_us\n5,8,16,abc\n", &opts()).unwrap_err();
    assert!(
        e.1.contains("no data row") && e.1.contains("line 2"),
        "{}",
        e.1
    );
    // Both kinds of columns at once.
    let e = parse("placement,ranks,bytes,time_us\ncache,2,1,1\n", &opts()).unwrap_err();
    assert!(e.1.contains("import them apart"), "{}", e.1);
}

#[test]
fn column_and_label_maps_read_quotes() {
    let c = parse_columns("bytes=Size,time_us=\"Latency (us)\",ranks=np").unwrap();
    assert_eq!(c[1], (Field::TimeUs, "Latency (us)".to_string()));
    assert_eq!(c[2], (Field::Ranks, "np".to_string()));
    assert!(parse_columns("speed=x")
        .unwrap_err()
        .contains("unknown field `speed`"));
    assert!(parse_columns("bytes").unwrap_err().contains("no `=`"));
    assert_eq!(parse_labels("a=1,b=skip").unwrap().len(), 2);
}

#[test]
fn a_mapping_column_gives_one_rule_set_per_placement() {
    use crate::model::placed::Placement;
    use crate::tables::table::{build, test_provenance};
    // 8 ranks on EPYC's layout under the three mappings: by core and by
    // socket on one node (the same shape, ranks in blocks or dealt over
    // the sockets), by node on two. A different winner under each.
    let mut text = String::from("algorithm,ranks,bytes,time_us,mapping\n");
    for (m, fast) in [("core", 6), ("socket", 5), ("node", 2)] {
        for al in [0, 2, 5, 6] {
            let t = if al == fast { 2.0 } else { 5.0 };
            text += &format!("{al},8,1024,{t},{m}\n{al},8,1024,{t},{m}\n");
        }
    }
    let r = parse(&text, &opts()).unwrap();
    let layout = Layout::parse("node:2,socket:2,cache:16,core:4").unwrap();
    let s = to_samples(&r.bcast, Some(&layout), None, "Open MPI 4.1.5", "imported").unwrap();
    let socket = s
        .iter()
        .find(|x| x.source.ends_with("map-by-socket"))
        .unwrap();
    assert_eq!(
        (socket.nodes, socket.placement.as_str()),
        (1, "block/cyclic")
    );
    let legacy = build::Compact {
        min_gain: None,
        ..build::Compact::default()
    };
    let t = build::build_with(&s, test_provenance(), &legacy);
    let sets: Vec<(u32, Option<Placement>, String)> = t
        .bcast
        .iter()
        .map(|cr| (cr.nodes, cr.placement, cr.rules[0].label()))
        .collect();
    let p = |x: &str| Placement::parse(x).ok();
    assert_eq!(sets.len(), 3, "{sets:?}");
    for (nodes, placement, winner) in [
        (1, "core", "algorithm=6"),
        (1, "socket", "algorithm=5"),
        (2, "node", "algorithm=2"),
    ] {
        assert!(
            sets.iter()
                .any(|(n, pl, w)| *n == nodes && *pl == p(placement) && w.contains(winner)),
            "{placement}: {sets:?}"
        );
    }
    // The table reads back, and each placement finds its own entry.
    let back = crate::tables::table::load_str(&t.to_yaml().unwrap()).unwrap();
    let key = crate::tables::table::CommKey::shape(8, 8, 1);
    let d = crate::model::placed::Detected::of(p("socket"));
    assert!(back
        .lookup_placed(colltune_algorithms::Collective::Bcast, key, &d, 1024)
        .unwrap()
        .label()
        .contains("algorithm=5"));
}

/// OSU's printed output pasted into a CSV by placement, its `#` lines
/// with it (as a published GENOA set has it): the comment rows are
/// skipped, each saying so, the data rows kept, the labels mapped.
#[test]
fn osu_comment_lines_pasted_into_csv_rows_are_skipped() {
    let text = "Label,MessageSize,Latency_us
Same CCX,#,Datatype: MPI_CHAR.
Same CCX,#,Size       Avg Latency(us)
Same CCX,1,0.10
Same CCX,2,0.10
Different Node,#,Size       Avg Latency(us)
Different Node,1,1.35
";
    let o = with_columns(
        "placement=Label,bytes=MessageSize,time_us=Latency_us",
        "Same CCX=cache,Different Node=network",
    );
    let r = parse(text, &o).unwrap();
    assert_eq!((r.kept, r.skipped), (3, 3));
    assert_eq!(r.p2p.len(), 3);
    assert_eq!(r.p2p[2].placement, Level::Network);
    assert!((r.p2p[2].time_us - 1.35).abs() < 1e-12);
    let w: Vec<&String> = r.warnings.iter().map(|x| &x.what).collect();
    assert_eq!(w.len(), 3, "{w:?}");
    assert!(w.iter().all(|w| w.contains("comment line")), "{w:?}");
    assert_eq!(r.warnings[0].line, 2);
}

/// A wide table, one column per algorithm (as R and pandas write them):
/// the columns named after algorithms (coll/tuned's names, spaces and
/// hyphens as underscores, or labels) are each an algorithm's times; an
/// empty cell is no measurement, a bad one a warning; a file of one size
/// takes it from `--bytes`.
#[test]
fn a_wide_table_gives_a_row_per_algorithm_column() {
    let text = "\"\",\"cores\",\"basic_linear\",\"chain\",\"Binary Tree\",\"flat\"
\"1\",2,0.19,0.2,0.21,9
\"2\",3,0.38,,0.41,9
\"3\",4,0.19,x,0.34,9
";
    let o = Options {
        bytes: Some(1),
        ..with_columns("", "flat=skip")
    };
    let r = parse(text, &o).unwrap();
    let got: Vec<(u32, u32, u64, f64)> = r
        .bcast
        .iter()
        .map(|b| (b.algorithm, b.ranks, b.bytes, b.time_us))
        .collect();
    assert_eq!(
        got,
        vec![
            (1, 2, 1, 0.19),
            (2, 2, 1, 0.2),
            (5, 2, 1, 0.21),
            (1, 3, 1, 0.38),
            (5, 3, 1, 0.41),
            (1, 4, 1, 0.19),
            (5, 4, 1, 0.34),
        ]
    );
    assert_eq!(r.skipped, 1);
    assert!(r.warnings[0].what.contains("chain `x`"), "{:?}", r.warnings);
    // Without --bytes the file says what it lacks.
    let e = parse(text, &with_columns("", "flat=skip")).unwrap_err();
    assert!(e.1.contains("no message-size column"), "{}", e.1);
    // A time column makes it a long table: algorithm names as columns are
    // then nothing special.
    let long = "size,np,latency,chain\n8,4,1.5,2\n";
    let r = parse(
        long,
        &Options {
            algorithm: Some(6),
            ..opts()
        },
    )
    .unwrap();
    assert_eq!((r.bcast.len(), r.bcast[0].algorithm), (1, 6));
}

/// A latency matrix by core pair (`Core 1,Core 2,Message Size,Latency`,
/// as a THIN set publishes its 276 pairs): with the layout, each pair's
/// placement is what its two cores share; without it, the file says what
/// it needs; a pair on one core and a core the layout lacks are skipped.
#[test]
fn core_pairs_take_their_placement_from_the_layout() {
    let text = "Core 1,Core 2,Message Size,Latency
0,1,1,0.21
0,13,1,0.45
0,0,1,3967.2
0,30,1,1.0
";
    let o = Options {
        layout: Some(Layout::parse("node:1,socket:2,core:12").unwrap()),
        ..opts()
    };
    let r = parse(text, &o).unwrap();
    let got: Vec<(Level, f64)> = r.p2p.iter().map(|p| (p.placement, p.time_us)).collect();
    assert_eq!(got, vec![(Level::Socket, 0.21), (Level::Node, 0.45)]);
    assert_eq!(r.skipped, 2);
    assert!(
        r.warnings[0].what.contains("both ranks on core 0"),
        "{:?}",
        r.warnings
    );
    assert!(
        r.warnings[1].what.contains("core 30 is not a core"),
        "{:?}",
        r.warnings
    );
    let e = parse(text, &opts()).unwrap_err();
    assert!(e.1.contains("give --layout"), "{}", e.1);
}
