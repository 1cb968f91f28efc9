#!/usr/bin/env python3
"""How busy the rest of the machine was while a benchmark ran.

The anchors kit records the CPU use of other processes in the second before each run; on a shared machine work
can start in the middle of one. This samples, once a second, the CPU time the whole machine spent in user and
system mode (/proc/stat) minus the time spent by the benchmark's own process tree (descendants of ROOT_PID,
with the times of the children they have reaped), i.e. what everything else used.

usage: cpu-monitor.py watch ROOT_PID LOG          sample until ROOT_PID exits (run it in the background)
       cpu-monitor.py report SINCE LOG JSONL...   per result record that started after SINCE (unix time): other
                                                  processes' mean and max CPU use during that record's run
       cpu-monitor.py annotate SINCE LOG JSONL... the same, written into those records as other_cpu_during_pct
                                                  {mean, max} (the file is rewritten; records already annotated
                                                  are left alone)
       cpu-monitor.py quiet SINCE MAX JSONL       print the records that started after SINCE and whose
                                                  other_cpu_during_pct.mean is at most MAX (for summarize.py)
Log lines: "<unix time> <other %> <ours %>", % of all CPUs over the last second.
"""
import json
import os
import sys
import time
from datetime import datetime

HZ = os.sysconf('SC_CLK_TCK')
NCPU = os.cpu_count() or 1


def machine_busy():
    f = open('/proc/stat').readline().split()[1:]
    return int(f[0]) + int(f[1]) + int(f[2])  # user + nice + system


def tree_time(root):
    parent, times = {}, {}
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            s = open(f'/proc/{pid}/stat').read()
        except OSError:
            continue
        rest = s[s.rindex(')') + 2:].split()
        parent[int(pid)] = int(rest[1])
        times[int(pid)] = sum(int(x) for x in rest[11:15])  # utime stime cutime cstime
    ours, total = set(), 0
    for pid in times:
        p, chain = pid, []
        while p and p not in ours and p != root and p in parent:
            chain.append(p)
            p = parent[p]
        if p == root or p in ours:
            ours.update(chain)
            ours.add(p)
    for pid in ours:
        total += times.get(pid, 0)
    return total


def watch(root, log):
    with open(log, 'a') as out:
        m0, o0, t0 = machine_busy(), tree_time(root), time.time()
        while os.path.exists(f'/proc/{root}'):
            time.sleep(1)
            m1, o1, t1 = machine_busy(), tree_time(root), time.time()
            cap = (t1 - t0) * HZ * NCPU
            other = max(0.0, 100 * ((m1 - m0) - max(0, o1 - o0)) / cap)
            out.write(f'{t1:.1f} {other:.1f} {100 * max(0, o1 - o0) / cap:.1f}\n')
            out.flush()
            m0, o0, t0 = m1, o1, t1


def window(samples, rec):
    start = datetime.fromisoformat(rec['machine']['date'].replace('Z', '+00:00')).timestamp()
    secs = rec.get('seconds') or 10
    # a sample at t covers (t - 1 s, t]; the run starts a little after its machine facts were taken
    return start, [s[1] for s in samples if start + 1 <= s[0] <= start + secs + 2]


def annotate(since, log, files):
    samples = [tuple(float(x) for x in line.split()) for line in open(log) if line.strip()]
    for path in files:
        lines = [line for line in open(path) if line.strip()]
        out = []
        for line in lines:
            r = json.loads(line)
            start, during = window(samples, r)
            if start >= since and 'other_cpu_during_pct' not in r and during:
                r['other_cpu_during_pct'] = {'mean': round(sum(during) / len(during), 1), 'max': max(during)}
                line = json.dumps(r) + '\n'
            out.append(line)
        tmp = path + '.tmp'
        with open(tmp, 'w') as f:
            f.writelines(out)
        os.replace(tmp, path)


def quiet(since, limit, path):
    for line in open(path):
        if not line.strip():
            continue
        r = json.loads(line)
        start = datetime.fromisoformat(r['machine']['date'].replace('Z', '+00:00')).timestamp()
        o = r.get('other_cpu_during_pct')
        if start >= since and o is not None and o['mean'] <= limit:
            sys.stdout.write(line)


def report(since, log, files):
    samples = [tuple(float(x) for x in line.split()) for line in open(log) if line.strip()]
    for path in files:
        recs = [json.loads(line) for line in open(path) if line.strip()]
        print(f'  other processes during each run ({os.path.basename(path)}): mean / max % of all CPUs')
        for r in recs:
            start = datetime.fromisoformat(r['machine']['date'].replace('Z', '+00:00')).timestamp()
            if start < since:
                continue
            secs = r.get('seconds') or 10
            during = [s[1] for s in samples if start + 1 <= s[0] <= start + secs + 2]
            if during:
                flag = '   <-- busy' if max(during) > 10 else ''
                print(f'    {sum(during) / len(during):5.1f} / {max(during):5.1f}  {r.get("label", "")}{flag}')
            else:
                print(f'        -          {r.get("label", "")}')


if __name__ == '__main__':
    if len(sys.argv) >= 4 and sys.argv[1] == 'watch':
        watch(int(sys.argv[2]), sys.argv[3])
    elif len(sys.argv) >= 5 and sys.argv[1] == 'annotate':
        annotate(float(sys.argv[2]), sys.argv[3], sys.argv[4:])
    elif len(sys.argv) == 5 and sys.argv[1] == 'quiet':
        quiet(float(sys.argv[2]), float(sys.argv[3]), sys.argv[4])
    elif len(sys.argv) >= 5 and sys.argv[1] == 'report':
        report(float(sys.argv[2]), sys.argv[3], sys.argv[4:])
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
