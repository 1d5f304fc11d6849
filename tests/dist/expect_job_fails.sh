#!/bin/sh
# Runs a job that must fail (tests/dist/dist_exit.c): passes when the command exits
# non-zero within LIMIT seconds, and prints how long it took.
#   expect_job_fails.sh LIMIT COMMAND...
limit=$1; shift
now() { awk '{ print $1 }' /proc/uptime; }
start=$(now)
timeout -k 5 $((limit + 30)) "$@"
rc=$?
took=$(awk -v a="$start" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }')
echo "exit status $rc after $took s"
[ "$rc" -ne 0 ] || { echo "FAIL the job succeeded"; exit 1; }
[ "$rc" -ne 124 ] || { echo "FAIL the job hung (stopped after $((limit + 30)) s)"; exit 1; }
if awk -v t="$took" -v l="$limit" 'BEGIN { exit !(t > l) }'; then echo "FAIL it took more than $limit s"; exit 1; fi
echo "ok the job failed within $limit s"
