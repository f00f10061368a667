#!/usr/bin/env bash
# Runs every native Go fuzz target of the tree, one after the other, for FUZZTIME each
# (README "Fuzzing"). make test runs it for a few seconds a target, so that a target that no
# longer builds or whose seeds fail is caught; make fuzz runs a campaign with a longer FUZZTIME.
# A new crasher is written by go test under the package's testdata/fuzz/FuzzName/: commit it
# as a seed with its fix. One line per target: package, target, execs and the rate go reported.
#
#   FUZZTIME   per target (default 5s); go test's form: 10m, 30s, or 100000x
#   FUZZ       only the targets whose name matches this extended regexp (default: all)
#   FUZZMINIMIZETIME  how long go may minimise each new input (go's default, 60s, unless set:
#              make test's short pass sets 1s so that it stays short under load)
#   GO, TESTTAGS as in the Makefile
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-5s}
FUZZ=${FUZZ:-.}
TESTTAGS=${TESTTAGS:-anettest}
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# Targets in files for other platforms do not build here; every other one must fuzz.
mapfile -t targets < <(git ls-files '*_test.go' | grep -Ev '_(darwin|freebsd|bsd|windows)_test\.go$' |
  xargs grep -HoE '^func Fuzz[A-Za-z0-9_]+\(f \*testing\.F\)' |
  sed -E 's#^(.*)/[^/]*:func (Fuzz[A-Za-z0-9_]+)\(.*#\1 \2#' | grep -E " .*($FUZZ)" | sort -u)
if ((${#targets[@]} == 0)); then
  echo "fuzz: no target matches $FUZZ" >&2
  exit 1
fi
echo "fuzz: ${#targets[@]} targets, $FUZZTIME each"
failed=0
for t in "${targets[@]}"; do
  dir=${t% *} name=${t#* }
  ok=0
  for try in 1 2; do
    if $GO test -tags "$TESTTAGS" -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" ${FUZZMINIMIZETIME:+-fuzzminimizetime "$FUZZMINIMIZETIME"} -parallel "${FUZZPARALLEL:-2}" "./$dir" >"$log" 2>&1; then
      ok=1
      break
    fi
    # go's fuzz engine can end a run whose time is up while a worker is still busy with
    # "context deadline exceeded" and no failing input: its own stop, not a finding of the
    # target. Such a run is tried once more; any other failure, or a second one, counts.
    if [[ $try == 2 ]] || ! grep -q 'context deadline exceeded' "$log" || grep -q 'Failing input written' "$log"; then
      break
    fi
    echo "note $dir $name: go's fuzz engine stopped with its own deadline error and no failing input; once more"
  done
  if ((!ok)); then
    echo "FAIL $dir $name"
    cat "$log"
    failed=1
    continue
  fi
  if grep -q 'no fuzz tests to fuzz\|no tests to run' "$log"; then
    echo "FAIL $dir $name: go test found no such target to fuzz"
    failed=1
    continue
  fi
  # go's last progress line: the execs and their rate, or how far its baseline run got.
  rate=$(grep -E '^fuzz: elapsed' "$log" | tail -n 1 | sed 's/^fuzz: //' || true)
  echo "ok   $dir $name ${rate:-(no progress line)}"
done
exit $failed
