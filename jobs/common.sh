# Sourced by the batch jobs: one tuning run under a batch system, resumable.
# Expects: BIN (colltune), OUT (shared results directory), TAG (names the
# CSV: e.g. N2-np8), LAUNCH (array: the MPI launcher with its options),
# BUDGET (minutes), TUNE_ARGS (extra tune arguments), TABLE (combined
# table to rebuild from every CSV in OUT).
colltune_batch_tune() {
  mkdir -p "$OUT"
  local csv="$OUT/tune-$TAG.csv" resume=()
  [ -s "$csv" ] && resume=(--resume)
  echo "colltune: tuning $TAG into $csv ${resume[*]}"
  # The launcher runs in the background so that a TERM from the batch
  # system (time limit, preemption) reaches the trap below at once.
  # shellcheck disable=SC2086
  "${LAUNCH[@]}" "$BIN" tune --budget "$BUDGET" --csv "$csv" \
      --table "$OUT/table-$TAG.yaml" "${resume[@]}" ${TUNE_ARGS:-} &
  local pid=$!
  trap 'echo "colltune: batch system asked to stop: stopping after the current point"; kill -TERM $pid 2>/dev/null' TERM
  local rc=0
  wait $pid || rc=$?
  # wait returns early when the trap fires: wait for the tune to finish writing
  while kill -0 $pid 2>/dev/null; do wait $pid || rc=$?; done
  trap - TERM
  # Rebuild the combined table from every CSV (one job at a time).
  (
    flock 9
    "$BIN" table build "$OUT"/tune-*.csv -o "$TABLE" ${CLUSTER:+--cluster "$CLUSTER"}
  ) 9>"$OUT/.table.lock"
  return $rc
}
