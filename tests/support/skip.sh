# Sourced by the shell tests: skip REASON...
# Outside CI it prints "SKIP: REASON" and exits 77 (the tests' SKIP_RETURN_CODE), so a developer
# without root, namespaces, tc or Slurm still runs the rest of the suite. Under CI=true the
# machine is root and scripts/bootstrap.sh installed everything the suite needs, so a skip would
# only hide an untested path: it prints "FAIL: REASON (...)" and exits 1.
skip() {
  if [ "${CI:-}" = true ]; then
    echo "FAIL: $* (CI=true: the CI machine must provide this; a skip would hide an untested path)"
    exit 1
  fi
  echo "SKIP: $*"
  exit 77
}
