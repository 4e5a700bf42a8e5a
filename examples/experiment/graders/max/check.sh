#!/bin/sh
# The hidden test of the task 'max': more cases than the task's own test.
# It runs in the grader's sandbox: the Trial's final repository is its
# working folder (writable, every write thrown away after), this folder is
# /grader, and no Trial's session ever sees it.
. ./max.sh
total=0 passed=0
check() { total=$((total + 1)); [ "$1" = "$2" ] && passed=$((passed + 1)); }
check "$(max 1 2)" 2
check "$(max 5 3)" 5
check "$(max 4 4)" 4
check "$(max -2 -7)" -2
# A grader may write in the repository: it is the grader's throwaway layer.
echo graded > .grader-was-here
rm -f test.sh
ok=false
[ "$passed" = "$total" ] && ok=true
printf '{"passed": %s, "score": %s, "detail": "%s of %s hidden cases"}\n' \
        "$ok" "$(awk "BEGIN { print $passed / $total }")" "$passed" "$total" >"$TRIALBOX_GRADE_FILE"
