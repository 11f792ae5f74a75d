# shellcheck shell=bash
# Sourced by scripts/bootstrap and scripts/test: the other Pythons we claim, beside .venv's.
# pyproject.toml claims requires-python >= 3.10: scripts/test runs the fast tests and the
# real-kernel smoke test (tests/test_smoke.py) on the oldest claimed and on the newest too,
# each in its own git-ignored venv (.venv-<version>, made by scripts/bootstrap).
# shellcheck disable=SC2034  # read by the scripts that source this file
OTHER_PYTHONS="3.10 3.13"

# find_python VERSION: print the path of a working python<VERSION> that can make a venv: from
# pyenv's versions (its root: $PYENV_ROOT, `pyenv root`, ~/.pyenv; newest patch first), else
# python<VERSION> on PATH (a pyenv shim of a version not enabled fails the check). Status 1 and
# nothing printed when there is none.
find_python() {
  local version=$1 root candidate
  root=${PYENV_ROOT:-$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")}
  while IFS= read -r candidate; do
    if [ -n "$candidate" ] && "$candidate" -c "
import sys, ensurepip, venv
sys.exit('%d.%d' % sys.version_info[:2] != '$version')" 2>/dev/null; then
      echo "$candidate"
      return 0
    fi
  done < <(
    # shellcheck disable=SC2012  # version directories: names without newlines
    ls -d "$root/versions/$version".*/bin/"python$version" 2>/dev/null | sort -V -r
    command -v "python$version" || true
  )
  return 1
}

# how_to_get_python VERSION: what is missing and the commands that fix it.
how_to_get_python() {
  local version=$1 found
  if found=$(find_python "$version"); then
    echo ".venv-$version is missing (Python $version is at $found): run scripts/bootstrap"
  else
    echo ".venv-$version is missing, and so is Python $version (not in pyenv's versions, no" \
      "working python$version on PATH):" \
      "install it (pyenv install $version; or apt-get install python$version python$version-venv;" \
      "or uv python install $version and put it on PATH), then run scripts/bootstrap"
  fi
}
