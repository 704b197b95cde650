#!/bin/sh
# Runs a ThreadSanitizer test binary. GCC 12's TSan runtime refuses to start on kernels whose
# mmap randomisation is wider than it expects (vm.mmap_rnd_bits = 32: "FATAL: ThreadSanitizer:
# unexpected memory mapping"); then the run is repeated with address randomisation off for this
# process only (setarch -R), which the runtime accepts. Any other failure is the test's.
out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT
"$@" >"$out" 2>&1
status=$?
if [ $status -ne 0 ] && grep -q "unexpected memory mapping" "$out"; then
  echo "run_under_tsan: TSan cannot map its shadow with this kernel's ASLR; again under setarch -R"
  setarch "$(uname -m)" -R "$@" >"$out" 2>&1
  status=$?
fi
cat "$out"
exit $status
