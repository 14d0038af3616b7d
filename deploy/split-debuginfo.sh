#!/bin/sh
# Splits the debug info out of a release binary (the standard GNU way):
#
#   split-debuginfo.sh BINARY OUT_DIR
#
# writes OUT_DIR/<name> (no debug sections; symbols kept, so backtraces
# still name functions) and OUT_DIR/<name>.debug (the debug sections), and
# links the first to the second by a .gnu_debuglink section carrying its
# CRC. gdb, addr2line -e <name>.debug, eu-stack and debuginfod clients find
# file:line from there. Needs binutils' objcopy.
set -eu
binary=$1
out=$2
name=$(basename "$binary")
mkdir -p "$out"
objcopy --only-keep-debug "$binary" "$out/$name.debug"
chmod 0644 "$out/$name.debug"
# --add-gnu-debuglink looks the file up by the name it is given: run from
# the output directory so that the link records the bare file name.
cp "$binary" "$out/$name.full"
(
  cd "$out"
  objcopy --strip-debug --remove-section=.comment \
    --add-gnu-debuglink="$name.debug" "$name.full" "$name"
)
rm -f "$out/$name.full"
chmod 0755 "$out/$name"
