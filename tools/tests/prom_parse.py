#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
# Parse Prometheus text exposition on stdin with the Prometheus Python
# client's own parser; print "type name label=v,... value" per sample, sorted.
# Exit 3 if the parser is not installed (python3-prometheus-client).
import sys
try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    sys.exit(3)
out = []
for fam in text_string_to_metric_families(sys.stdin.read()):
    for s in fam.samples:
        labels = ",".join("%s=%s" % kv for kv in sorted(s.labels.items()))
        out.append("%s %s %s %g" % (fam.type, s.name, labels, s.value))
print("\n".join(sorted(out)))
