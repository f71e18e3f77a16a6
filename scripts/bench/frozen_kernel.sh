#!/usr/bin/env bash
# A kernel file as it was at an earlier commit, for a standalone harness that checks and times
# today's kernel beside it in one run (plugins/*/test/bench/*_harness.cu), instead of a copy kept
# in the tree:
#   scripts/bench/frozen_kernel.sh REV FILE NS > OUT
# prints FILE (a .cu path from the repository root) as of commit REV with its namespace
# `pixflow::<op>` renamed `pixflow::<op>::NS`, so that both kernels link into one program. Its
# `#include "<op>.hpp"` then needs the kernel folder on the include path (-I plugins/<op>/kernels).
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 REV FILE NAMESPACE > OUT" >&2; exit 2; }
cd "$(dirname "$0")/../.."
src=$(git show "$1:$2")
grep -qE '^namespace pixflow::[a-z0-9_]+ \{$' <<<"$src" || { echo "$0: no 'namespace pixflow::<op> {' line in $1:$2" >&2; exit 1; }
echo "// $2 as of commit $1, in namespace pixflow::<op>::$3 (scripts/bench/frozen_kernel.sh)."
echo "#ifndef PIXFLOW_FROZEN_REV"
echo "#define PIXFLOW_FROZEN_REV \"$1\" // the commit, for the harness's labels"
echo "#endif"
sed -E "s/^namespace (pixflow::[a-z0-9_]+) \{$/namespace \1::$3 {/; s|^\} // namespace (pixflow::[a-z0-9_]+)$|} // namespace \1::$3|" <<<"$src"
