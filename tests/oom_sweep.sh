#!/bin/sh
# Fails each allocation of a training step in turn, each in its own process
# (CT_FAIL_ALLOC_AFTER), and counts how the process ended: clean errors, failures
# absorbed, test failures (a leak or a wrong result), aborts, crashes and other exits.
#   tests/oom_sweep.sh build/tests/test_out_of_memory [stride]
set -u
bin=$1
stride=${2:-1}
total=$(CT_FAIL_ALLOC_AFTER=999999999999 "$bin" one_training_step | sed -n 's/^allocations: //p')
[ -n "$total" ] || { echo "cannot count the allocations of $bin" >&2; exit 2; }
errors=0 absorbed=0 failed=0 aborts=0 crashes=0 others=0 n=0
while [ "$n" -lt "$total" ]; do
  out=$(CT_FAIL_ALLOC_AFTER=$n "$bin" one_training_step 2>&1)
  rc=$?
  case $rc in
    0) case $out in *"outcome: absorbed"*) absorbed=$((absorbed + 1)) ;;
                    *) errors=$((errors + 1)) ;; esac ;;
    1) failed=$((failed + 1)); echo "allocation $((n + 1)): test failure: $(echo "$out" | grep -m1 FAIL)" ;;
    134) aborts=$((aborts + 1)); echo "allocation $((n + 1)): abort: $(echo "$out" | grep -m1 -i 'fatal\|abort\|error')" ;;
    139|135|136) crashes=$((crashes + 1)); echo "allocation $((n + 1)): crash (status $rc)" ;;
    *) others=$((others + 1)); echo "allocation $((n + 1)): exit $rc: $(echo "$out" | tail -1)" ;;
  esac
  n=$((n + stride))
done
echo "$total allocations; tried every $stride: $errors clean errors, $absorbed absorbed," \
     "$failed test failures, $aborts aborts, $crashes crashes, $others other exits"
