#!/usr/bin/env bash
# deploy/layers.sh — the house's layering rule (ARCHITECTURE.md), run by
# `make lint` through deploy/lint.sh.
#
# Reads every `#include "dir/…"` of the rooms below and checks each edge
# against the map of what a room may include. An edge the map forbids
# fails, unless deploy/layers.allow lists it; a line of that list that no
# longer occurs fails too, so the list only shrinks. Then prints the
# room-to-room include graph with counts, the cycles of the header include
# graph (a.h → … → a.h), the cycles between modules (x.c and x.h together:
# x includes y.h and y includes x.h, directly or through a chain), and the
# files over 800 lines. Forbidden or stale edges fail, and so does a
# system header in scheduler/ beyond the pure part of the C standard
# library; cycles and long files are only reported.
#
# Usage: deploy/layers.sh [-q]   (-q: print only failures)
set -euo pipefail
cd "$(dirname "$0")/.."

rooms='server handlers identity control billing gcp db scheduler lib'
allow_file=deploy/layers.allow
long_lines=800
quiet=0
[ "${1:-}" = -q ] && quiet=1

# What each room may include besides itself (ARCHITECTURE.md). handlers
# may include every room but server/main (there is no server/main.h; the
# rule is kept so that one can never appear); server may include all.
map='lib: scheduler:lib db:scheduler,lib billing:db,lib gcp:lib identity:db,gcp,lib control:db,gcp,identity,scheduler,billing,lib handlers:* server:*'

# reads "from-path to-path" lines, prints those whose edge the map forbids
upward() {
  awk -v map="$map" '
    BEGIN { n = split(map, e, " ")
            for (i = 1; i <= n; i++) { split(e[i], kv, ":"); may[kv[1]] = "," kv[2] "," } }
    { split($1, a, "/"); split($2, b, "/"); fr = a[1]; to = b[1]
      if (!(fr in may) || !(to in may)) next          # not a room
      if (fr == to || may[fr] == ",*," && $2 !~ /^server\/main\./) next
      if (fr == "server" || index(may[fr], "," to ",")) next
      print }'
}

tmp=$(mktemp -d /tmp/gpugate-layers.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# every source file of the rooms (migrations are SQL, not C)
files=()
for r in $rooms; do
  for f in "$r"/*.c "$r"/*.h "$r"/*.def; do
    [ -e "$f" ] && files+=("$f")
  done
done

# edges: "from-file to-path", one per include of a room's file
awk '{ if (match($0, /^[ \t]*#[ \t]*include[ \t]+"[a-z_]+\/[^"]+"/)) {
         inc = substr($0, RSTART, RLENGTH); sub(/^[^"]*"/, "", inc); sub(/"$/, "", inc)
         print FILENAME, inc } }' "${files[@]}" | sort -u >"$tmp/edges"

status=0

# allow-list: "from -> to" lines; # comments and blank lines ignored
if [ -f "$allow_file" ]; then
  sed -E 's/#.*//; s/[[:space:]]+/ /g; s/^ //; s/ $//' "$allow_file" |
    awk 'NF { if (NF != 3 || $2 != "->") { print "bad line: " $0 > "/dev/stderr"; exit 1 } print $1, $3 }' |
    sort -u >"$tmp/allow"
else
  : >"$tmp/allow"
fi

upward <"$tmp/edges" | sort -u >"$tmp/upward"

forbidden=$(comm -23 "$tmp/upward" "$tmp/allow")
stale=$(comm -13 "$tmp/upward" "$tmp/allow")
if [ -n "$forbidden" ]; then
  echo "layers: upward includes not in $allow_file (include lib/ or move the code down):"
  sed 's/ / -> /; s/^/  /' <<<"$forbidden"
  status=1
fi
# scheduler/ is pure (no I/O, no clock, no globals): besides its own and
# lib/'s headers it includes only these of the C standard library
pure='assert.h float.h inttypes.h limits.h math.h stdbool.h stddef.h stdint.h stdlib.h string.h'
impure=$(for f in scheduler/*.c scheduler/*.h; do
  sed -nE 's|^[[:space:]]*#[[:space:]]*include[[:space:]]+<([^>]+)>.*|\1|p' "$f" |
    while IFS= read -r h; do
      case " $pure " in *" $h "*) ;; *) printf '  %s -> <%s>\n' "$f" "$h" ;; esac
    done
done)
if [ -n "$impure" ]; then
  echo "layers: scheduler/ is pure; it may include only <${pure// /> <}>:"
  echo "$impure"
  status=1
fi
if [ -n "$stale" ]; then
  echo "layers: $allow_file lists includes that no longer occur (delete these lines):"
  sed 's/ / -> /; s/^/  /' <<<"$stale"
  status=1
fi

if [ "$quiet" = 0 ]; then
  echo "room -> room includes (files' #include lines; * = an upward edge):"
  awk '{ split($1, a, "/"); split($2, b, "/"); print a[1], b[1] }' "$tmp/edges" |
    sort | uniq -c >"$tmp/rooms"
  awk '{ split($1, a, "/"); split($2, b, "/"); print a[1], b[1] }' "$tmp/upward" |
    sort -u >"$tmp/uprooms"
  # FILENAME, not NR == FNR: with no upward edge the first file is empty
  awk 'FILENAME == ARGV[1] { up[$1 " " $2] = 1; next }
       { printf "  %-10s -> %-10s %5d %s\n", $2, $3, $1, (($2 " " $3) in up ? "*" : "") }' \
    "$tmp/uprooms" "$tmp/rooms"
  echo "upward includes: $(wc -l <"$tmp/upward") (allow-list: $(wc -l <"$tmp/allow") lines in $allow_file)"
fi

# cycles: strongly connected components of a graph given as "from to"
# lines, by Tarjan's algorithm (iterative, so deep chains cannot overflow
# awk's recursion); prints each component of more than one node, or one
# node with an edge to itself, on a line.
sccs() {
  awk '
    { if (!($1 in seen)) { seen[$1] = 1; nodes[++nn] = $1 }
      if (!($2 in seen)) { seen[$2] = 1; nodes[++nn] = $2 }
      adj[$1, ++deg[$1]] = $2; if ($1 == $2) self[$1] = 1 }
    END {
      idx = 0
      for (s = 1; s <= nn; s++) {
        v = nodes[s]; if (v in num) continue
        cs = 0; call[++cs] = v; it[v] = 0
        num[v] = low[v] = ++idx; st[++sp] = v; on[v] = 1
        while (cs > 0) {
          v = call[cs]
          if (it[v] < deg[v]) {
            w = adj[v, ++it[v]]
            if (!(w in num)) {
              num[w] = low[w] = ++idx; st[++sp] = w; on[w] = 1
              it[w] = 0; call[++cs] = w
            } else if (on[w] && num[w] < low[v]) low[v] = num[w]
          } else {
            cs--
            if (cs > 0 && low[v] < low[call[cs]]) low[call[cs]] = low[v]
            if (low[v] == num[v]) {
              line = ""; n = 0
              do { w = st[sp--]; on[w] = 0; line = w (n++ ? " " : "") line } while (w != v)
              if (n > 1 || (v in self)) print line
            }
          }
        }
      }
    }'
}

if [ "$quiet" = 0 ]; then
  # header graph: a .h that includes a .h
  awk '$1 ~ /\.h$/ && $2 ~ /\.h$/' "$tmp/edges" | sccs | sort >"$tmp/hcycles"
  echo "header include cycles: $(wc -l <"$tmp/hcycles")"
  sed 's/ / <-> /g; s/^/  /' "$tmp/hcycles"

  # module graph: x.c and x.h are one module x; x -> y when either file
  # of x includes y.h (a .c's own header is no edge)
  awk '{ a = $1; b = $2; sub(/\.[ch]$/, "", a); sub(/\.(h|def)$/, "", b);
         if (a != b) print a, b }' "$tmp/edges" | sort -u | sccs | sort >"$tmp/mcycles"
  echo "module cycles (x.c/x.h includes y.h and y back, directly or through a chain): $(wc -l <"$tmp/mcycles")"
  sed 's/ / <-> /g; s/^/  /' "$tmp/mcycles"

  echo "files over $long_lines lines:"
  wc -l "${files[@]}" | awk -v n="$long_lines" '$2 != "total" && $1 > n { printf "  %5d %s\n", $1, $2 }' |
    sort -rn
fi

exit "$status"
