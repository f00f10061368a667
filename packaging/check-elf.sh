#!/bin/sh
# check-elf.sh BINARY...: fails unless every binary is built the way the packages ship them
# (C4): a position-independent executable (PIE), relocations read-only after start (a
# GNU_RELRO segment and BIND_NOW: full RELRO), no executable stack, stripped (no symbol
# table, no DWARF), and static (no shared library needed: the package depends on no libc).
# `make package` runs it on the package build; packaging/binaries_test.go runs it on that
# build and on the developers' `make build`, which it must refuse.
set -u
status=0
for f in "$@"; do
	problems=""
	hdr=$(readelf -hW "$f") || { echo "$f: not an ELF file" >&2; status=1; continue; }
	dyn=$(readelf -dW "$f")
	seg=$(readelf -lW "$f")
	sec=$(readelf -SW "$f")
	echo "$hdr" | grep -Eq 'Type:[[:space:]]+DYN' && echo "$dyn" | grep -Eq 'FLAGS_1.*PIE' ||
		problems="$problems not-pie"
	echo "$seg" | grep -q 'GNU_RELRO' || problems="$problems no-relro"
	echo "$dyn" | grep -Eq '\(FLAGS\).*BIND_NOW|FLAGS_1.*NOW' || problems="$problems no-bindnow"
	echo "$seg" | grep -E 'GNU_STACK' | grep -q 'RWE' && problems="$problems exec-stack"
	echo "$sec" | grep -Eq '\.symtab|\.debug_' && problems="$problems not-stripped"
	echo "$dyn" | grep -q '(NEEDED)' && problems="$problems needs:$(echo "$dyn" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ',')"
	if [ -n "$problems" ]; then
		echo "$f:$problems" >&2
		status=1
	else
		echo "$f: pie relro bindnow stripped static"
	fi
done
exit $status
