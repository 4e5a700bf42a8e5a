#!/bin/sh
# Make the example Experiment in DIR (default: /tmp/trialbox-experiment):
# three tasks (small git repositories, each with a failing test), two
# "agents" of known skill, a grader per task with hidden tests, and
# experiment.json. Then:
#   trialbox plan DIR/experiment.json -o DIR/plan.jsonl
#   trialbox batch DIR/plan.jsonl
#   trialbox report DIR/plan.results.jsonl --by arm
# Run as root, the Trials run as `nobody` (trialbox never runs a session as root).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:-/tmp/trialbox-experiment}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
rm -rf "$dir/tasks" "$dir/graders" "$dir/agents"
cp -R "$here/agents" "$here/graders" "$dir/"
for src in "$here"/task-sources/*; do
        task=$(basename "$src")
        mkdir -p "$dir/tasks/$task"
        cp -R "$src/." "$dir/tasks/$task/"
        git -C "$dir/tasks/$task" init -q -b main
        git -C "$dir/tasks/$task" add -A
        git -C "$dir/tasks/$task" -c user.name=example -c user.email=example@example.com commit -q -m "the task"
done
user=
if [ "$(id -u)" = 0 ]; then
        user='"user": "nobody", '
        chmod -R a+rX "$dir"
fi
cat >"$dir/experiment.json" <<JSON
{
  "description": "two shell agents of known skill on three small tasks, graded by hidden tests",
  "output_root": "runs",
  "repetitions": 3,
  "labels": {"suite": "example"},
  "arms": [
    {"name": "careful", "harness": "shell", "harness_bin": "agents/careful.sh", ${user}"args": ["{prompt}"],
     "timeout": "1m", "network": "none", "labels": {"skill": "high"}},
    {"name": "hasty", "harness": "shell", "harness_bin": "agents/hasty.sh", ${user}"args": ["{prompt}", "$dir/graders"],
     "timeout": "1m", "network": "none", "labels": {"skill": "low"}}
  ],
  "tasks": [
    {"name": "add", "repo_from": "tasks/add@main", "prompt": "calc.sh s/ - / + /",
     "grade": {"harness": "shell", "files": "graders/add", "args": ["/grader/check.sh"], "timeout": "30s"}},
    {"name": "greet", "repo_from": "tasks/greet@main", "prompt": "greet.sh s/Hello %s/Hello, %s!/",
     "grade": {"harness": "shell", "files": "graders/greet", "args": ["/grader/check.sh"], "timeout": "30s"}},
    {"name": "max", "repo_from": "tasks/max@main", "prompt": "max.sh s/-lt/-gt/",
     "grade": {"harness": "shell", "files": "graders/max", "args": ["/grader/check.sh"], "timeout": "30s"}}
  ]
}
JSON
echo "$dir/experiment.json"
