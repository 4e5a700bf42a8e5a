#!/bin/sh
# A careful "agent" for the shell Harness (its harness_bin): it reads its
# prompt, "FILE SED-EXPRESSION", applies the fix, and runs the task's own
# test: its session fails when the test still fails.
set -eu
file=${1%% *}
expr=${1#* }
sed -i "$expr" "$file"
sh ./test.sh
