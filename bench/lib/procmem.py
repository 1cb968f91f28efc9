"""Memory of a process from /proc, for bench/*.sh (run with this directory on sys.path)."""
import subprocess


def mem(pid):
    """(VmRSS, PSS) in kB: PSS from smaps_rollup counts shared pages once across the processes sharing them."""
    rss = pss = 0
    with open(f'/proc/{pid}/status') as f:
        for line in f:
            if line.startswith('VmRSS:'): rss = int(line.split()[1])
    with open(f'/proc/{pid}/smaps_rollup') as f:
        for line in f:
            if line.startswith('Pss:'): pss = int(line.split()[1])
    return rss, pss


def children(pid):
    out = subprocess.run(['pgrep', '-P', str(pid)], capture_output=True, text=True).stdout.split()
    return [int(p) for p in out]
