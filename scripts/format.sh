#!/usr/bin/env bash
# Lays out every C++ and CUDA source of the repository with clang-format and the checked-in
# .clang-format (whitespace only: see there).
#   scripts/format.sh           rewrite the files in place
#   scripts/format.sh --check   change nothing; show each line that differs and exit 1 if any do
#                               (CTest's Style.SourcesAreClangFormatted); exit 77 (skipped) when
#                               clang-format is not installed (scripts/setup.sh installs it)
# The layout is clang-format 14's (Debian 12); another version may lay out a few lines otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
[ "${1:-}" = --check ] && check=1
fmt=$(command -v clang-format || command -v clang-format-14 || true)
if [ -z "$fmt" ]; then
    echo "format: clang-format not found (scripts/setup.sh installs it); nothing checked" >&2
    exit 77
fi
if git rev-parse --is-inside-work-tree > /dev/null 2>&1; then
    mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.h' '*.cu' '*.cuh')
else
    mapfile -t files < <(find framework plugins sdk include python tests examples scripts \
        -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) | sort)
fi
if [ "$check" = 0 ]; then
    # Twice: clang-format 14 reaches its fixed point for a comment after "{" in two passes.
    "$fmt" -i --style=file "${files[@]}"
    "$fmt" -i --style=file "${files[@]}"
    exit 0
fi
# clang-format's own check: each line that differs, with its file and line; non-zero if any.
"$fmt" --style=file --dry-run -Werror "${files[@]}" ||
    { echo "format: the files above are not laid out as .clang-format says (scripts/format.sh rewrites them)" >&2; exit 1; }
