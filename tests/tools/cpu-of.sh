#!/usr/bin/env bash
# Run a command in a cpuacct cgroup of its own and print the CPU seconds of its whole
# process tree (orphans reaped by init included: the `tavla dev` services, PostgreSQL's
# backends) and its wall time: a measure of the suite's work that the machine's other load
# does not hide the way it hides wall time. Needs root and cgroup v1's cpuacct
# (/sys/fs/cgroup/cpuacct). Usage: tests/tools/cpu-of.sh CMD...
set -u
cg=/sys/fs/cgroup/cpuacct/cpuof-$$-$RANDOM
mkdir "$cg"
start=$(date +%s.%N)
bash -c 'echo $$ > '"$cg"'/cgroup.procs; exec "$@"' _ "$@"
rc=$?
end=$(date +%s.%N)
# processes left behind would keep the group busy: wait briefly for them to go
for _ in 1 2 3 4 5; do [ -s "$cg/cgroup.procs" ] || break; sleep 1; done
cpu=$(cat "$cg/cpuacct.usage")
left=$(wc -l < "$cg/cgroup.procs")
python3 -c "print(f'CPU {${cpu}/1e9:.1f} s, wall {${end}-${start}:.1f} s, processes left {${left}}')" >&2
[ "$left" = 0 ] && rmdir "$cg"
exit $rc
