#!/bin/sh
# bench-spread.sh summarises `go test -bench -count N` output (files or
# stdin): for each benchmark and metric, the number of runs, the least and
# greatest value and their ratio, the spread between runs. A ratio of 1.20
# is a 20 % spread.
#
#	go test -run '^$' -bench Traverse -count 5 | tee out.txt
#	scripts/bench-spread.sh out.txt
#	scripts/bench-spread.sh -m 'ns/op|x-memor' out.txt   # only these metrics
set -eu
metrics='.'
if [ "${1:-}" = "-m" ]; then
	metrics=$2
	shift 2
fi
awk -v metrics="$metrics" '
/^Benchmark/ && NF >= 4 {
	name = $1
	sub(/-[0-9]+$/, "", name)
	for (i = 3; i + 1 <= NF; i += 2) {
		unit = $(i + 1)
		if (unit !~ metrics)
			continue
		k = name SUBSEP unit
		v = $i + 0
		if (!(k in n)) {
			order[++keys] = k
			lo[k] = v
			hi[k] = v
		}
		n[k]++
		if (v < lo[k]) lo[k] = v
		if (v > hi[k]) hi[k] = v
	}
}
END {
	for (j = 1; j <= keys; j++) {
		k = order[j]
		split(k, p, SUBSEP)
		ratio = lo[k] > 0 ? sprintf("%.2f", hi[k] / lo[k]) : "-"
		printf "%s\t%s\tn=%d\tmin=%.4g\tmax=%.4g\tspread=%s\n", p[1], p[2], n[k], lo[k], hi[k], ratio
	}
}' "$@"
