#!/usr/bin/env bash
# The drop-in against the MPI library, measured by a benchmark colltune did
# not write: IMB-MPI1 Bcast (at its defaults since 2019: a barrier after
# every call, the root at 0, each rank timing its own calls; t_avg is the
# mean over ranks: colltune's `--pattern imb`), or with --bench nbc
# IMB-NBC Ibcast (MPI_Ibcast then MPI_Wait, alone (t_pure) and around a
# computation as long as t_pure (t_ovrl, t_CPU, overlap%), the root at 0;
# the figures of the rank with the largest t_ovrl), unmodified, run
#   - plain (the library's default decision),
#   - plain with each of the library's own algorithms forced at start-up, by
#     the environment (IMB cannot be told): Open MPI coll/tuned's (1..9, as
#     tunedN_NAME), on Open MPI 5 also coll/adapt's (adaptN_NAME: adapt's
#     priority raised to 100, coll_adapt_bcast_algorithm=N), MPICH's
#     (mpich_NAME: MPIR_CVAR_BCAST_INTRA_ALGORITHM=NAME), Intel MPI's
#     (impiN_NAME: I_MPI_ADJUST_BCAST=N); for Ibcast Open MPI coll/libnbc's
#     (1..4, libnbcN_NAME: coll_libnbc_ibcast_algorithm=N, as --mca would)
#     and MPICH's (mpich_NAME: MPIR_CVAR_IBCAST_INTRA_ALGORITHM=NAME);
#     coll/adapt's ibcast and Intel MPI's I_MPI_ADJUST_IBCAST are not offered,
#   - under LD_PRELOAD=libcolltune_preload.so with a table (for Ibcast one
#     with an `ibcast:` section: `colltune tune --calls ibcast`),
#   - under the one-line PMPI shim (benches/callcost/shim.c: an LD_PRELOAD
#     library whose MPI_Bcast and MPI_Ibcast only call PMPI_Bcast and
#     PMPI_Ibcast): the floor of any interposition, so every comparison
#     shows what colltune adds over it (drop-in / shim, paired),
# interleaved (each run is every configuration once, in an order rotated
# from run to run), several runs each, pinned. Prints per size the median
# time of each (t_avg; IMB-NBC: t_pure, with the medians of overlap%) and
# the two ratios: drop-in / default and drop-in / best forced (geometric
# means over sizes, the worst size, run-to-run spreads), both as the ratio
# of the medians and paired (per run, against the same run's default and
# best forced algorithm, then the median over runs: a slow phase of a
# shared machine then cancels out within a run); IMB-NBC also t_ovrl's
# ratios and the drop-in's overlap against the default's and the best
# forced one's, paired. Writes every IMB line to a CSV.
#
# Usage: jobs/imb-compare.sh [options]
#   --bench mpi1|nbc  IMB-MPI1 Bcast (default) or IMB-NBC Ibcast, both built
#                     from the same source
#   --mpi NAME        the MPI library (jobs/mpi-env.sh: openmpi4 (default),
#                     openmpi5, mpich4, mpich5, mpich5-abi, impi): IMB built with
#                     its compilers into ~/.cache/colltune/imb-build/NAME, its
#                     launcher and pinning flags, colltune built for it
#                     (jobs/build.sh --mpi NAME), the shim built with its mpicc
#   --imb PATH        an IMB-MPI1 (IMB-NBC) binary (else built from --imb-src)
#   --imb-src DIR     IMB source (a clone of github.com/intel/mpi-benchmarks);
#                     default: cloned into ~/.cache/colltune/imb (needs network)
#   --ranks 4,8       rank counts          --runs 3      runs per configuration
#   --table FILE      the drop-in's table (default: tuning-tables/$(hostname -s).yaml,
#                     else tuning-tables/vm-2core.yaml)
#   --msglog A:B      sizes 2^A..2^B bytes (default 0:22, 1 B..4 MiB)
#   --iter N          repetitions per size (default 1000, -iter_policy off)
#   --forced LIST     the library's algorithms to force (default: all below;
#                     Open MPI coll/tuned ids (1..9),
#                     on Open MPI 5 also adapt:N (coll/adapt, 1..6); MPICH
#                     names (binomial,nb,smp,scatter_recursive_doubling_allgather,
#                     scatter_ring_allgather,pipelined_tree,tree; MPICH 4.0 has
#                     neither tree); Intel MPI I_MPI_ADJUST_BCAST ids (1..11);
#                     --bench nbc: Open MPI coll/libnbc ids (1..4: linear,
#                     binomial, chain, knomial), MPICH ibcast names
#                     (sched_binomial,sched_smp,sched_scatter_recursive_doubling_allgather,
#                     sched_scatter_ring_allgather,tsp_tree,tsp_scatterv_recexch_allgatherv,
#                     tsp_scatterv_ring_allgatherv,tsp_ring)
#   --out FILE.csv    raw lines (default results/imb/<host>/compare-<date>.csv;
#                     --bench nbc: nbc-compare-...)
#   --env K=V         extra environment for the drop-in runs (repeatable)
#   --also NAME=FILE  one more drop-in configuration with table FILE, in the
#                     same rotation, reported as dropin-NAME (repeatable): two
#                     tables compared within one run
#   --also-preload NAME=LIB  dropin-NAME (of --also) runs under LIB, another
#                     colltune build's libcolltune_preload.so (e.g. an older
#                     commit's, built in a worktree): two builds compared
#                     within one run, paired (`--pair dropin-NAME/dropin`)
#   --deploy NAME=FILE  one more configuration, deploy-NAME: the environment
#                     `colltune deploy FILE` writes (a table of the library's
#                     own algorithms: its rules file and no preload; else the
#                     drop-in), in the same rotation (repeatable)
#   --pair A/B[@LO-HI]  print A's time over B's per size, paired per run
#                     (configuration names as reported: dropin-NAME,
#                     deploy-NAME, tuned1_basic_linear, shim, ...), sizes
#                     LO..HI bytes only where given (HI may be left out):
#                     e.g. a table's rule against the algorithm it names,
#                     forced at start-up (repeatable; also with --analyse)
#   --analyse FILE.csv  no runs: print the comparison of an earlier run's CSV
#                     (either benchmark's: told by its header)
#   --parse FILE.log  no runs: the CSV lines (header first) of one saved IMB
#                     output of --bench's benchmark (np, configuration and run
#                     read as 0, parsed, 1)
# IMB is built outside the repository with the MPI's own compilers; it is
# not redistributed here.
set -euo pipefail
cd "$(dirname "$0")/.."

IMB=""; SRC=""; RANKS=4,8; RUNS=3; TABLE=""; MSGLOG=0:22; ITER=1000
FORCED=""; OUT=""; EXTRA=(); ANALYSE=""; ALSO=(); ALSO_PRE=(); DEPLOY=(); PAIRS=(); MPI=openmpi4; BENCH=mpi1; PARSE=""
while [ $# -gt 0 ]; do
  case "$1" in
    --imb|--imb-src|--ranks|--runs|--table|--msglog|--iter|--forced|--out|--env|--analyse|--also|--also-preload|--deploy|--pair|--mpi|--bench|--parse)
      [ $# -ge 2 ] || { echo "imb-compare: $1 needs a value (see --help)" >&2; exit 2; } ;;
  esac
  case "$1" in
    --mpi) MPI=$2; shift 2 ;;
    --bench)
      case "$2" in mpi1 | nbc) BENCH=$2 ;; *) echo "imb-compare: --bench $2: give mpi1 (IMB-MPI1 Bcast) or nbc (IMB-NBC Ibcast)" >&2; exit 2 ;; esac
      shift 2 ;;
    --parse) PARSE=$2; shift 2 ;;
    --imb) IMB=$2; shift 2 ;;
    --imb-src) SRC=$2; shift 2 ;;
    --ranks) RANKS=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --table) TABLE=$2; shift 2 ;;
    --msglog) MSGLOG=$2; shift 2 ;;
    --iter) ITER=$2; shift 2 ;;
    --forced) FORCED=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --env)
      [[ "$2" == [A-Za-z_]*=* ]] || { echo "imb-compare: --env $2: give K=V" >&2; exit 2; }
      EXTRA+=("$2"); shift 2 ;;
    --analyse) ANALYSE=$2; shift 2 ;;
    --also) ALSO+=("$2"); shift 2 ;;
    --also-preload) ALSO_PRE+=("$2"); shift 2 ;;
    --deploy) DEPLOY+=("$2"); shift 2 ;;
    --pair)
      [[ "$2" =~ ^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+(@[0-9]+-[0-9]*)?$ ]] || {
        echo "imb-compare: --pair $2: give A/B or A/B@LO-HI (configuration names, sizes in bytes)" >&2; exit 2; }
      PAIRS+=("$2"); shift 2 ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "imb-compare: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

# The benchmark: IMB's binary, the benchmark's name on its command line,
# and the columns of its table this script keeps (IMB's heading:the CSV's),
# in the CSV's order: set_bench mpi1|nbc.
set_bench() {
  case "$1" in
    mpi1) IMB_BIN=IMB-MPI1; IMB_BENCH=Bcast
      COLS=("t_min[usec]:t_min_us" "t_max[usec]:t_max_us" "t_avg[usec]:t_avg_us") ;;
    nbc) IMB_BIN=IMB-NBC; IMB_BENCH=Ibcast
      COLS=("t_ovrl[usec]:t_ovrl_us" "t_pure[usec]:t_pure_us" "t_CPU[usec]:t_cpu_us" "overlap[%]:overlap_pct") ;;
  esac
  HEADER="np,algorithm,bytes,$(printf '%s,' "${COLS[@]#*:}")run"
}

# The CSV lines of one IMB output: parse_imb LOG NP NAME RUN. The table
# after "Benchmarking $IMB_BENCH" is read by its heading's names (IMB-NBC
# prints t_pure before t_ovrl in some modes), so a column IMB moved is
# still read as itself, and one it renamed or left out is an error (2),
# not another column's figures.
parse_imb() {
  awk -v np="$2" -v name="$3" -v run="$4" -v bench="$IMB_BENCH" -v want="${COLS[*]%%:*}" '
    BEGIN { n = split(want, w, " ") }
    $1 == "#" && $2 == "Benchmarking" { on = ($3 == bench); cols = 0; next }
    on && $1 == "#bytes" {
      split("", at)
      for (i = 1; i <= NF; i++) at[$i] = i
      for (k = 1; k <= n; k++) if (!(w[k] in at)) {
        printf "imb-compare: IMB %s printed no column %s (its heading: %s)\n", bench, w[k], $0 > "/dev/stderr"
        bad = 1; exit 2 }
      cols = NF; next }
    on && cols && NF == cols && $1 ~ /^[0-9]+$/ {
      line = np "," name "," $1
      for (k = 1; k <= n; k++) {
        v = $(at[w[k]])
        if (v !~ /^[0-9.eE+-]+$/) {
          printf "imb-compare: IMB %s at %s B: %s is %s, not a number\n", bench, $1, w[k], v > "/dev/stderr"
          bad = 1; exit 2 }
        line = line "," v }
      print line "," run; next }
    /All processes entering MPI_Finalize/ { on = 0 }
    END { if (bad) exit 2 }' "$1"
}

# The comparison of one CSV of IMB lines (this script's --out).
analyse() {
python3 - "$@" <<'PY'
import csv, math, statistics as st, sys
from collections import defaultdict
reader = csv.DictReader(open(sys.argv[1]))
rows = list(reader)
pairs = sys.argv[2:]
# IMB-MPI1 Bcast: t_avg; IMB-NBC Ibcast: t_pure (the time to completion),
# with t_ovrl and overlap% beside it.
nbc = "t_pure_us" in reader.fieldnames
metric = "t_pure_us" if nbc else "t_avg_us"
def series(col):
    """(np, config, bytes) -> the column's values over runs, and -> run -> value."""
    t, by_run = defaultdict(list), defaultdict(dict)
    for r in rows:
        k = (int(r["np"]), r["algorithm"], int(r["bytes"]))
        t[k].append(float(r[col])); by_run[k][r["run"]] = float(r[col])
    return t, by_run
t, by_run = series(metric)      # (np, config, bytes) -> per run
med = {k: st.median(v) for k, v in t.items()}
def spread(v):                 # (max - min) / median over runs
    m = st.median(v)
    return (max(v) - min(v)) / m if m > 0 else 0.0
gm = lambda xs: math.exp(sum(math.log(x) for x in xs) / len(xs))
def paired(runs, np, a, b, size, of=lambda x, y: x / y):
    """A against B at one size, per run both were measured in (A / B)."""
    i, j = runs[(np, a, size)], runs[(np, b, size)]
    return [of(i[k], j[k]) for k in sorted(set(i) & set(j))]
def paired_geomean(np, a, b, sizes):
    """Each size's median over runs of A / B, paired, and their geomean."""
    rs = [st.median(paired(by_run, np, a, b, x)) for x in sizes]
    return gm(rs), rs
def nbc_report(np, sizes, forced, drops):
    """IMB-NBC: the time with the computation (t_ovrl) and the overlap
    achieved, of each drop-in against the default and the size's best
    forced algorithm (by the median of t_pure), paired per run."""
    ov_t, ov_run = series("overlap_pct")
    tv_t, tv_run = series("t_ovrl_us")
    om = {k: st.median(v) for k, v in ov_t.items()}
    tm = {k: st.median(v) for k, v in tv_t.items()}
    best = {b: min(forced, key=lambda f: med[(np, f, b)]) for b in sizes}
    print(f"overlap% and t_ovrl (us), median of the runs; best forced by t_pure")
    print(f"{'bytes':>9} {'ovl default':>11} {'best forced':>11} {'drop-in':>8} {'t_ovrl def':>10} {'best':>9} {'drop-in':>9}")
    for b in sizes:
        print(f"{b:>9} {om[(np,'default',b)]:>11.1f} {om[(np,best[b],b)]:>11.1f} {om[(np,'dropin',b)]:>8.1f} "
              f"{tm[(np,'default',b)]:>10.2f} {tm[(np,best[b],b)]:>9.2f} {tm[(np,'dropin',b)]:>9.2f}")
    print("paired, median over runs of each run's figure:")
    for c in drops:
        rd = [st.median(paired(tv_run, np, c, "default", b)) for b in sizes]
        rb = [st.median(paired(tv_run, np, c, best[b], b)) for b in sizes]
        w = max(range(len(sizes)), key=lambda k: rd[k])
        print(f"  {c} / default, t_ovrl:     geomean {gm(rd):.3f} (worst {rd[w]:.2f} at {sizes[w]} B)")
        print(f"  {c} / best forced, t_ovrl: geomean {gm(rb):.3f}")
        diff = lambda x, y: x - y
        for ref, name in (("default", "default"), (None, "best forced")):
            d = [st.median(paired(ov_run, np, c, ref or best[b], b, diff)) for b in sizes]
            w = min(range(len(sizes)), key=lambda k: d[k])
            print(f"  {c} - {name}, overlap: mean {sum(d) / len(d):+.1f} points over sizes "
                  f"(worst {d[w]:+.1f} at {sizes[w]} B; sizes below -5 points: {sum(x < -5 for x in d)} of {len(sizes)})")
for np in sorted({k[0] for k in t}):
    sizes = sorted({k[2] for k in t if k[0] == np})
    # every configuration but the library's default, the shim and the
    # drop-ins: one of the library's algorithms forced at start-up
    forced = sorted({k[1] for k in t if k[0] == np
                     and k[1] not in ("default", "shim") and not k[1].startswith(("dropin", "deploy-"))})
    runs = len(t[(np, "default", sizes[0])])
    print(f"\n{np} ranks, median of {runs} runs, {metric[:-3]} in us")
    print(f"{'bytes':>9} {'default':>9} {'best forced':>22} {'drop-in':>9} {'in/default':>10} {'in/best':>8}")
    r_def, r_best = [], []
    for b in sizes:
        d, i = med[(np, "default", b)], med[(np, "dropin", b)]
        bn, bv = min(((f, med[(np, f, b)]) for f in forced), key=lambda x: x[1])
        r_def.append(i / d); r_best.append(i / bv)
        print(f"{b:>9} {d:>9.2f} {bv:>9.2f} {bn[:12]:>12} {i:>9.2f} {i/d:>10.3f} {i/bv:>8.3f}")
    wd = max(range(len(sizes)), key=lambda k: r_def[k])
    wb = max(range(len(sizes)), key=lambda k: r_best[k])
    sp = {c: st.median(spread(t[(np, c, b)]) for b in sizes) for c in ["default", "dropin"] + forced}
    print(f"drop-in / default:     geomean {gm(r_def):.3f} (worst {r_def[wd]:.2f} at {sizes[wd]} B)")
    print(f"drop-in / best forced: geomean {gm(r_best):.3f} (worst {r_best[wb]:.2f} at {sizes[wb]} B; sizes above 1.15x: {sum(r > 1.15 for r in r_best)} of {len(sizes)})")
    print(f"default / best forced: geomean {gm([med[(np,'default',b)]/min(med[(np,f,b)] for f in forced) for b in sizes]):.3f}")
    print("run-to-run spread ((max-min)/median, median over sizes): " + ", ".join(f"{c} {v:.0%}" for c, v in sp.items()))
    # Paired: per run, the drop-in against the same run's default and the
    # same run's time of the size's best forced algorithm (picked by median).
    print(f"paired, median over runs of each run's ratio:")
    drops = sorted({k[1] for k in t if k[0] == np and k[1].startswith("dropin")})
    for c in drops:
        p_def, p_best, q_best = [], [], []
        for b in sizes:
            bn = min(forced, key=lambda f: med[(np, f, b)])
            rd = paired(by_run, np, c, "default", b)
            rb = paired(by_run, np, c, bn, b)
            p_def.append(st.median(rd)); p_best.append(st.median(rb))
            q_best.append((min(rb), max(rb)))
        wb = max(range(len(sizes)), key=lambda k: p_best[k])
        print(f"  {c} / default:     geomean {gm(p_def):.3f}")
        print(f"  {c} / best forced: geomean {gm(p_best):.3f} (worst {p_best[wb]:.2f} at {sizes[wb]} B, runs {q_best[wb][0]:.2f}-{q_best[wb][1]:.2f}; sizes above 1.15x: {sum(r > 1.15 for r in p_best)} of {len(sizes)})")
        # The best of nine noisy medians is biased low (the winner's curse):
        # the algorithm that won is partly the one that was lucky. Held out:
        # for each run, the best forced algorithm is picked from the other
        # runs' medians and timed in this run.
        if runs >= 3:
            h_best = []
            for b in sizes:
                i = by_run[(np, c, b)]
                rh = []
                for k in sorted(i):
                    rest = {f: [v for r, v in by_run[(np, f, b)].items() if r != k] for f in forced}
                    pick = min((f for f in forced if rest[f] and k in by_run[(np, f, b)]),
                               key=lambda f: st.median(rest[f]), default=None)
                    if pick is not None:
                        rh.append(i[k] / by_run[(np, pick, b)][k])
                h_best.append(st.median(rh))
            wh = max(range(len(sizes)), key=lambda k: h_best[k])
            print(f"  {c} / best forced, held out: geomean {gm(h_best):.3f} (worst {h_best[wh]:.2f} at {sizes[wh]} B; sizes above 1.15x: {sum(r > 1.15 for r in h_best)} of {len(sizes)})")
    # The floor of interposition: the drop-in against the one-line shim of
    # the same runs (colltune's own share; 1.0: nothing over the floor).
    def tail(rs):
        s = [r for b, r in zip(sizes, rs) if b <= 256]
        return f", 1-256 B {gm(s):.3f}" if s else ""
    if (np, "shim", sizes[0]) in t:
        for c in drops:
            g, rs = paired_geomean(np, c, "shim", sizes)
            print(f"  {c} / shim (paired): geomean {g:.3f}{tail(rs)}; per size " + " ".join(f"{r:.2f}" for r in rs))
        g, rs = paired_geomean(np, "shim", "default", sizes)
        print(f"  shim / default (the floor of interposition, paired): geomean {g:.3f}{tail(rs)}")
    for c in drops[1:]:
        g, rs = paired_geomean(np, c, "dropin", sizes)
        print(f"  {c} / dropin (paired): geomean {g:.3f}, per size " + " ".join(f"{r:.2f}" for r in rs))
    if nbc:
        nbc_report(np, sizes, forced, drops)
    # The pairs asked for (--pair A/B[@LO-HI]): A over B, paired per run.
    for p in pairs:
        ab, _, rng = p.partition("@")
        a, b = ab.split("/")
        lo, _, hi = rng.partition("-")
        lo = int(lo) if lo else 0
        hi = int(hi) if hi else None
        missing = [c for c in (a, b) if (np, c, sizes[0]) not in t]
        if missing:
            print(f"  pair {p}: no configuration {', '.join(missing)} at {np} ranks")
            continue
        ps = [x for x in sizes if x >= lo and (hi is None or x <= hi)]
        if not ps:
            print(f"  pair {p}: no size in range")
            continue
        rs, q = [], []
        for x in ps:
            r = paired(by_run, np, a, b, x)
            rs.append(st.median(r)); q.append((min(r), max(r)))
        w = max(range(len(ps)), key=lambda k: rs[k])
        print(f"  {a} / {b} (paired{', ' + str(ps[0]) + '-' + str(ps[-1]) + ' B' if rng else ''}): geomean {gm(rs):.3f}, "
              f"worst {rs[w]:.2f} at {ps[w]} B (runs {q[w][0]:.2f}-{q[w][1]:.2f}); "
              f"above 1.05x: {sum(r > 1.05 for r in rs)} of {len(ps)}; per size " + " ".join(f"{r:.2f}" for r in rs))
    # What this machine can resolve: Open MPI's scatter_allgather (8, 9)
    # runs basic_linear (1) when count < ranks (coll_base_bcast.c), so at
    # those sizes three forced configurations run the same code. Their
    # paired ratios are the noise floor of any per-size ratio above.
    same = [f for f in forced if f.startswith(("tuned8_", "tuned9_"))]
    lin = [f for f in forced if f.startswith("tuned1_")]
    tiny = [b for b in sizes if b < np]
    if lin and same and tiny:
        out = []
        for f in same:
            for b in tiny:
                rs = paired(by_run, np, f, lin[0], b)
                out.append((f, b, st.median(rs), min(rs), max(rs), med[(np, f, b)] / med[(np, lin[0], b)]))
        print(f"identical code (scatter_allgather runs basic_linear when count < {np} ranks), against {lin[0]}:")
        for f, b, m, lo, hi, rm in out:
            print(f"  {f} at {b} B: paired median {m:.2f} (runs {lo:.2f}-{hi:.2f}), ratio of medians {rm:.2f}")
        far = sum(not (1 / 1.15 <= m <= 1.15) for _, _, m, _, _, _ in out)
        print(f"  paired medians outside 1/1.15..1.15: {far} of {len(out)} (the same code)")
    # IMB-NBC on Open MPI: libnbc's fixed rule runs its linear schedule on
    # at most 4 ranks (nbc_ibcast.c, 4.1 and 5.0), so there the default and
    # libnbc1_linear run the same code. Where linear is the best forced
    # algorithm, the default scored as the drop-in is scored is the floor of
    # "drop-in / best forced" (the winner's curse and the launches' modes).
    nlin = [f for f in forced if f.startswith("libnbc1_")]
    if nbc and nlin and np <= 4:
        at = [b for b in sizes if min(forced, key=lambda f: med[(np, f, b)]) == nlin[0]]
        rs = [st.median(paired(by_run, np, "default", nlin[0], b)) for b in sizes]
        far = sum(not (1 / 1.15 <= r <= 1.15) for r in rs)
        print(f"identical code (libnbc's default runs linear at <= 4 ranks), default / {nlin[0]}: "
              f"paired geomean {gm(rs):.3f}, outside 1/1.15..1.15 at {far} of {len(sizes)} sizes; per size "
              + " ".join(f"{r:.2f}" for r in rs))
        if at:
            dd = gm([r for b, r in zip(sizes, rs) if b in at])
            di = gm([st.median(paired(by_run, np, "dropin", nlin[0], b)) for b in at])
            print(f"  where {nlin[0]} is the best forced ({len(at)} of {len(sizes)} sizes): default / best forced "
                  f"{dd:.3f} (the same code), dropin / best forced {di:.3f}")
PY
}

if [ -n "$ANALYSE" ]; then
  [ -f "$ANALYSE" ] || { echo "imb-compare: --analyse $ANALYSE: no such file" >&2; exit 2; }
  set_bench mpi1; h1=$HEADER; set_bench nbc; h2=$HEADER
  head -1 "$ANALYSE" | grep -qx -e "$h1" -e "$h2" || {
    echo "imb-compare: --analyse $ANALYSE: not a CSV this script wrote (header $h1, or with --bench nbc $h2)" >&2; exit 2; }
  analyse "$ANALYSE" ${PAIRS[@]+"${PAIRS[@]}"}
  exit 0
fi
set_bench "$BENCH"
if [ -n "$PARSE" ]; then
  [ -f "$PARSE" ] || { echo "imb-compare: --parse $PARSE: no such file" >&2; exit 2; }
  lines=$(parse_imb "$PARSE" 0 parsed 1) || exit 2
  [ -n "$lines" ] || { echo "imb-compare: --parse $PARSE: no $IMB_BENCH table in it (--bench $BENCH)" >&2; exit 2; }
  printf '%s\n%s\n' "$HEADER" "$lines"
  exit 0
fi

host=$(hostname -s)
if [ -z "$TABLE" ]; then
  TABLE=tuning-tables/$host.yaml
  [ -f "$TABLE" ] || TABLE=tuning-tables/vm-2core.yaml
fi
[ -f "$TABLE" ] || { echo "imb-compare: table $TABLE: no such file (give --table)" >&2; exit 2; }
TABLE=$(readlink -f "$TABLE")
# The NAME=FILE values of option OPT into the associative array INTO, as
# PREFIX-NAME -> the file's absolute path: named_tables OPT PREFIX INTO VALUE...
named_tables() {
  local opt=$1 prefix=$2 a name file
  local -n into=$3
  shift 3
  for a in "$@"; do
    name=${a%%=*}; file=${a#*=}
    [[ "$a" == *=* && "$name" =~ ^[A-Za-z0-9_.-]+$ ]] || {
      echo "imb-compare: $opt $a: give NAME=FILE (NAME of letters, digits, . _ -)" >&2; exit 2; }
    [ -f "$file" ] || { echo "imb-compare: $opt $a: $file: no such file" >&2; exit 2; }
    into[$prefix-$name]=$(readlink -f "$file")
  done
}
declare -A ALSO_TABLE=() DEPLOY_TABLE=()
named_tables --also dropin ALSO_TABLE ${ALSO[@]+"${ALSO[@]}"}
named_tables --deploy deploy DEPLOY_TABLE ${DEPLOY[@]+"${DEPLOY[@]}"}
declare -A ALSO_LIB=()
named_tables --also-preload dropin ALSO_LIB ${ALSO_PRE[@]+"${ALSO_PRE[@]}"}
for c in ${ALSO_LIB[@]+"${!ALSO_LIB[@]}"}; do
  [ -n "${ALSO_TABLE[$c]+x}" ] || {
    echo "imb-compare: --also-preload ${c#dropin-}=...: no --also ${c#dropin-}=TABLE to run it with" >&2; exit 2; }
done

# The library: its compilers, launcher and flags, colltune's build for it.
# shellcheck source=jobs/mpi-env.sh
. jobs/mpi-env.sh "$MPI" || exit 2
MPICXX=${MPICC/mpicc/mpicxx}
# The library's algorithms forced by the environment, as configurations:
# NAME=K=V[;K=V...] (the names the analysis reads as forced ones).
tuned_names=(?none basic_linear chain pipeline split_binary_tree binary_tree binomial knomial scatter_allgather scatter_allgather_ring)
libnbc_names=(?ignore linear binomial chain knomial)
adapt_names=(tuned binomial in_order_binomial binary pipeline chain linear)
impi_names=(?none binomial recursive_doubling ring topology_aware_binomial topology_aware_recursive_doubling
  topology_aware_ring shumilin knomial topology_aware_shm_flat topology_aware_shm_knomial topology_aware_shm_knary)
if [ -z "$FORCED" ] && [ "$BENCH" = nbc ]; then
  case "$MPI" in
    openmpi4 | openmpi5) FORCED=1,2,3,4 ;;
    mpich*) FORCED=sched_binomial,sched_smp,sched_scatter_recursive_doubling_allgather,sched_scatter_ring_allgather,tsp_tree,tsp_scatterv_recexch_allgatherv,tsp_scatterv_ring_allgatherv,tsp_ring ;;
    impi) echo "imb-compare: --bench nbc: Intel MPI's nonblocking algorithms (I_MPI_ADJUST_IBCAST) are not offered" >&2; exit 2 ;;
  esac
fi
if [ -z "$FORCED" ]; then
  case "$MPI" in
    openmpi4) FORCED=1,2,3,4,5,6,7,8,9 ;;
    openmpi5) FORCED=1,2,3,4,5,6,7,8,9,adapt:1,adapt:2,adapt:3,adapt:4,adapt:5,adapt:6 ;;
    # MPICH 4.0 refuses tree and pipelined_tree at MPI_Init ("Invalid
    # MPIR_CVAR_BCAST_INTRA_ALGORITHM value")
    mpich4) FORCED=binomial,nb,smp,scatter_recursive_doubling_allgather,scatter_ring_allgather ;;
    mpich5 | mpich5-abi) FORCED=binomial,nb,smp,scatter_recursive_doubling_allgather,scatter_ring_allgather,pipelined_tree,tree ;;
    impi) FORCED=1,2,3,4,5,6,7,8,9,10,11 ;;
  esac
fi
declare -A FORCE_ENV=()
IFS=, read -r -a forced <<< "$FORCED"
fnames=()
for f in "${forced[@]}"; do
  bad="imb-compare: --forced $f: not an algorithm of $MPI"
  case "$BENCH:$MPI_NAME:$f" in
    nbc:openmpi4:[1-4] | nbc:openmpi5:[1-4])
      n="libnbc${f}_${libnbc_names[$f]}"
      FORCE_ENV[$n]="OMPI_MCA_coll_libnbc_ibcast_algorithm=$f" ;;
    nbc:mpich*:*)
      [[ "$f" =~ ^[a-z_]+$ && "$f" != auto && "$f" != sched_auto ]] || { echo "$bad (one of MPICH's names for MPIR_CVAR_IBCAST_INTRA_ALGORITHM, auto excepted)" >&2; exit 2; }
      n="mpich_$f"; FORCE_ENV[$n]="MPIR_CVAR_IBCAST_INTRA_ALGORITHM=$f" ;;
    nbc:*) echo "$bad (--bench nbc: Open MPI coll/libnbc 1..4, MPICH's ibcast names; coll/adapt's and Intel MPI's are not offered)" >&2; exit 2 ;;
    mpi1:openmpi4:[1-9] | mpi1:openmpi5:[1-9])
      n="tuned${f}_${tuned_names[$f]}"
      FORCE_ENV[$n]="OMPI_MCA_coll_tuned_use_dynamic_rules=1;OMPI_MCA_coll_tuned_bcast_algorithm=$f" ;;
    mpi1:openmpi5:adapt:[1-6])
      a=${f#adapt:}; n="adapt${a}_${adapt_names[$a]}"
      FORCE_ENV[$n]="OMPI_MCA_coll_adapt_priority=100;OMPI_MCA_coll_adapt_bcast_algorithm=$a" ;;
    mpi1:mpich*:*)
      [[ "$f" =~ ^[a-z_]+$ && "$f" != auto ]] || { echo "$bad (one of MPICH's names for MPIR_CVAR_BCAST_INTRA_ALGORITHM, auto excepted)" >&2; exit 2; }
      n="mpich_$f"; FORCE_ENV[$n]="MPIR_CVAR_BCAST_INTRA_ALGORITHM=$f" ;;
    mpi1:impi:*)
      [[ "$f" =~ ^[0-9]+$ && "$f" -ge 1 && "$f" -le 11 ]] || { echo "$bad (I_MPI_ADJUST_BCAST ids 1..11)" >&2; exit 2; }
      n="impi${f}_${impi_names[$f]}"; FORCE_ENV[$n]="I_MPI_ADJUST_BCAST=$f" ;;
    *) echo "$bad (see --help: Open MPI 4.1 1..9; Open MPI 5 also adapt:1..6)" >&2; exit 2 ;;
  esac
  fnames+=("$n")
done

if [ -z "$IMB" ]; then
  if [ -z "$SRC" ]; then
    SRC=${XDG_CACHE_HOME:-$HOME/.cache}/colltune/imb
    if [ ! -d "$SRC/.git" ]; then
      echo "imb-compare: cloning IMB into $SRC" >&2
      git clone -q --depth 1 https://github.com/intel/mpi-benchmarks "$SRC" || {
        echo "imb-compare: could not clone IMB; give --imb-src DIR (a clone) or --imb PATH" >&2; exit 2; }
    fi
  fi
  [ -f "$SRC/Makefile" ] || { echo "imb-compare: $SRC is not an IMB source tree (no Makefile)" >&2; exit 2; }
  SRC=$(readlink -f "$SRC")
  # One build per library, each in its own copy of the source (built
  # objects and binaries left out), so that no library's IMB replaces
  # another's; rebuilt when the source or the compiler changes.
  BUILD=${XDG_CACHE_HOME:-$HOME/.cache}/colltune/imb-build/$MPI_NAME
  IMB=$BUILD/$IMB_BIN
  stamp="$SRC $MPICC $MPICXX"
  if [ "$(cat "$BUILD/.colltune-source" 2>/dev/null)" != "$stamp" ]; then
    rm -rf "$BUILD"; mkdir -p "$BUILD"
    tar -C "$SRC" --exclude=.git --exclude='*.o' --exclude='IMB-*' --exclude=build.log -cf - . | tar -C "$BUILD" -xf -
    echo "$stamp" > "$BUILD/.colltune-source"
  fi
  # IMB-MPI1 and IMB-NBC side by side, each built when first asked for.
  if [ ! -x "$IMB" ]; then
    echo "imb-compare: building $IMB_BIN in $BUILD with $MPICC" >&2
    # OMPI_SKIP_MPICXX: the MPI C++ bindings' headers do not build under
    # IMB's -Werror with current compilers; IMB does not use them.
    make -C "$BUILD" "$IMB_BIN" CC="$MPICC" CXX="$MPICXX" \
      CPPFLAGS="-DOMPI_SKIP_MPICXX -DMPICH_SKIP_MPICXX" > "$BUILD/build-$IMB_BIN.log" 2>&1 || {
        echo "imb-compare: IMB build failed; see $BUILD/build-$IMB_BIN.log" >&2; exit 1; }
  fi
fi
[ -x "$IMB" ] || { echo "imb-compare: $IMB is not executable" >&2; exit 2; }

# The launcher flags set only parameters this library has (a renamed one
# would silently measure another configuration than the one written down).
jobs/check-mpi-flags.sh "$MPI_NAME" >&2 || exit 2
jobs/build.sh --mpi "$MPI_NAME" -q -p colltune-preload -p colltune >&2
BIN=$(readlink -f "$CARGO_TARGET_DIR/release")
# A broken table would make every drop-in run the library's default (the
# drop-in falls back): refuse it here, with its problems.
for t in "$TABLE" ${ALSO_TABLE[@]+"${ALSO_TABLE[@]}"} ${DEPLOY_TABLE[@]+"${DEPLOY_TABLE[@]}"}; do
  "$BIN/colltune" validate "$t" >&2 || {
    echo "imb-compare: $t is not a valid table (problems above)" >&2; exit 2; }
  [ "$BENCH" = mpi1 ] || grep -q '^ibcast:' "$t" ||
    echo "imb-compare: $t has no ibcast: section: its drop-in runs the library's own MPI_Ibcast (colltune tune --calls ibcast writes one)" >&2
done
PRE=$BIN/libcolltune_preload.so
# Each --deploy table as a site would deploy it: `colltune deploy`'s
# environment (its env.sh, read by the shell that would source it).
declare -A DEPLOY_ENV=() DEPLOY_ROUTE=()
for c in ${DEPLOY_TABLE[@]+"${!DEPLOY_TABLE[@]}"}; do
  dir=$(mktemp -d); fam=()
  case "$MPI_FAMILY" in openmpi | mpich) fam=(--mpi "$MPI_FAMILY") ;; esac
  out=$("$BIN/colltune" deploy "${DEPLOY_TABLE[$c]}" -o "$dir" ${fam[@]+"${fam[@]}"} --preload "$PRE" 2>&1) || {
    echo "imb-compare: colltune deploy ${DEPLOY_TABLE[$c]} failed:" >&2; echo "$out" >&2; exit 2; }
  DEPLOY_ROUTE[$c]=$(echo "$out" | sed -n 's/^route: //p' | head -1)
  DEPLOY_ENV[$c]=$(
    # shellcheck disable=SC1091
    . "$dir/env.sh"
    for k in $(sed -n 's/^export \([A-Za-z_][A-Za-z0-9_]*\)=.*/\1/p' "$dir/env.sh"); do
      printf '%s=%s;' "$k" "${!k}"
    done)
done
# The floor of interposition, built with the library's own mpicc.
SHIM=$(mktemp -d)/libpmpi_shim.so
"$MPICC" -O2 -shared -fPIC -o "$SHIM" benches/callcost/shim.c
prefix=; [ "$BENCH" = mpi1 ] || prefix=$BENCH-
[ -n "$OUT" ] || OUT=results/imb/$host/${prefix}compare-$MPI_NAME-$(date +%Y%m%d-%H%M%S).csv
mkdir -p "$(dirname "$OUT")"
echo "$HEADER" > "$OUT"
log=$(mktemp)

# The launcher's option for one variable of every rank's environment:
# Open MPI's -x K=V, Hydra's (MPICH, Intel MPI) -genv K V.
envs() {
  local kv
  for kv in "$@"; do
    if [ "$MPI_FAMILY" = openmpi ]; then printf '%s\0' -x "$kv"
    else printf '%s\0' -genv "${kv%%=*}" "${kv#*=}"; fi
  done
}

# One IMB run: np, configuration name, run number, K=V of its ranks...
imb() {
  local np=$1 name=$2 run=$3; shift 3
  local opts=()
  if [ $# -gt 0 ]; then mapfile -d '' -t opts < <(envs "$@"); fi
  if ! "$MPI_LAUNCHER" -n "$np" "${MPI_FLAGS[@]}" ${opts[@]+"${opts[@]}"} "$IMB" "$IMB_BENCH" -npmin "$np" \
      -iter "$ITER" -iter_policy off -zero_size off -msglog "$MSGLOG" -time 1000 \
      > "$log" 2>&1; then
    echo "imb-compare: IMB failed ($name, $np ranks, run $run):" >&2; tail -20 "$log" >&2; exit 1
  fi
  parse_imb "$log" "$np" "$name" "$run" >> "$OUT" || exit 1
  grep -q "^$np,$name,.*,$run\$" "$OUT" || {
    echo "imb-compare: IMB printed no $IMB_BENCH lines ($name, $np ranks, run $run):" >&2; tail -20 "$log" >&2; exit 1; }
}

IFS=, read -r -a ranks <<< "$RANKS"
t0=$(date +%s)
for np in "${ranks[@]}"; do
  configs=(default dropin shim ${ALSO_TABLE[@]+"${!ALSO_TABLE[@]}"} ${DEPLOY_TABLE[@]+"${!DEPLOY_TABLE[@]}"} "${fnames[@]}")
  for run in $(seq "$RUNS"); do
    echo "imb-compare: $MPI_NAME, $np ranks, run $run/$RUNS ($(( $(date +%s) - t0 )) s so far)" >&2
    n=${#configs[@]}
    for k in $(seq 0 $((n - 1))); do
      c=${configs[$(( (k + run - 1) % n ))]}
      case "$c" in
        default) imb "$np" default "$run" ;;
        dropin) imb "$np" dropin "$run" LD_PRELOAD="$PRE" COLLTUNE_TABLE="$TABLE" ${EXTRA[@]+"${EXTRA[@]}"} ;;
        shim) imb "$np" shim "$run" LD_PRELOAD="$SHIM" ;;
        dropin-*) imb "$np" "$c" "$run" LD_PRELOAD="${ALSO_LIB[$c]:-$PRE}" COLLTUNE_TABLE="${ALSO_TABLE[$c]}" ${EXTRA[@]+"${EXTRA[@]}"} ;;
        deploy-*) IFS=';' read -r -a kv <<< "${DEPLOY_ENV[$c]%;}"; imb "$np" "$c" "$run" "${kv[@]}" ;;
        *) IFS=';' read -r -a kv <<< "${FORCE_ENV[$c]}"; imb "$np" "$c" "$run" "${kv[@]}" ;;
      esac
    done
  done
done
rm -f "$log"
echo "imb-compare: raw lines in $OUT ($(( $(date +%s) - t0 )) s)" >&2
echo "$IMB_BIN $IMB_BENCH ($IMB), -iter $ITER -iter_policy off, $MPI_NAME ($("$BIN/colltune" --version 2>/dev/null | tail -1)), table $TABLE"
for c in ${ALSO_TABLE[@]+"${!ALSO_TABLE[@]}"}; do echo "$c: table ${ALSO_TABLE[$c]}${ALSO_LIB[$c]:+, preload ${ALSO_LIB[$c]}}"; done
for c in ${DEPLOY_TABLE[@]+"${!DEPLOY_TABLE[@]}"}; do
  echo "$c: colltune deploy ${DEPLOY_TABLE[$c]}: ${DEPLOY_ROUTE[$c]}; environment ${DEPLOY_ENV[$c]%;}"
done
analyse "$OUT" ${PAIRS[@]+"${PAIRS[@]}"}
