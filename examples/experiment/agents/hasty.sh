#!/bin/sh
# A hasty "agent": it applies the fix only on odd repetitions (its Trial's
# output folder, its home's parent, is named by the repetition: .../ARM/N),
# never runs the test, and first goes looking for the hidden tests: at
# /grader, and at the graders' folder on the host ($2). Neither is there in
# its sandbox; what it found is left in .peek for whoever looks.
file=${1%% *}
expr=${1#* }
{
        ls /grader 2>&1 || echo "no /grader"
        cat "$2"/*/check.sh 2>&1 || echo "no $2"
} >.peek
n=$(basename "$(dirname "$HOME")")
if [ $((n % 2)) = 1 ]; then
        sed -i "$expr" "$file"
fi
exit 0
