"""Where does the eager trials' spread come from? Wall clock against the thread's CPU time,
descheduling (involuntary context switches), cgroup throttling, steal, a fixed pure-Python
calibration loop; unpinned, then pinned to one core."""
import os, time, resource, statistics, subprocess, sys, torch
from helpers.model import build_model, make_prompt, use_tf32
from helpers.generation import generate_kv_cache
from helpers.static import generate_static_cache, make_static_cache
def rd(p):
    try: return open(p).read().strip()
    except Exception as e: return f"({e})"
def steal():
    f = open('/proc/stat').readline().split(); return int(f[8]) if len(f) > 8 else 0
def thr():
    try: return int(dict(l.split() for l in open('/sys/fs/cgroup/cpu.stat')).get('throttled_usec', 0))
    except Exception: return -1
print("nproc", os.cpu_count(), "affinity", sorted(os.sched_getaffinity(0)))
print("cpu.max", rd('/sys/fs/cgroup/cpu.max'), "| cpu.stat", rd('/sys/fs/cgroup/cpu.stat').replace('\n', ' '))
print("loadavg", rd('/proc/loadavg'))
print(subprocess.run("grep -m3 -E 'model name|cpu MHz' /proc/cpuinfo; lscpu | grep -E 'Thread|Core|Socket|MHz|Hypervisor|NUMA node' ; ps -eo pcpu,nlwp,comm --sort=-pcpu | head -8", shell=True, capture_output=True, text=True).stdout)
use_tf32(True)
m = build_model("gpt2", "cuda"); eos = m.config.eos_token_id
B, P, N = 32, 16, 100
ids = make_prompt(B, P, m.config.vocab_size, eos, "cuda")
cs = make_static_cache(m, B, P + N, "cuda"); co = make_static_cache(m, B, 1024, "cuda")
meths = {"kv": lambda: generate_kv_cache(m, ids, N, eos),
         "static": lambda: generate_static_cache(m, ids, N, eos, cache=cs),
         "oversized": lambda: generate_static_cache(m, ids, N, eos, cache=co)}
def calib():
    t, c = time.perf_counter(), time.thread_time(); s = 0
    for i in range(300000): s += i * i
    return (time.perf_counter() - t) * 1e3, (time.thread_time() - c) * 1e3
def trial(f):
    torch.cuda.synchronize(); r0 = resource.getrusage(resource.RUSAGE_THREAD); s0, h0 = steal(), thr()
    t, c = time.perf_counter(), time.thread_time(); f(); torch.cuda.synchronize()
    w, cc = time.perf_counter() - t, time.thread_time() - c
    r1 = resource.getrusage(resource.RUSAGE_THREAD)
    return dict(wall=w * 1e3, cpu=cc * 1e3, ivcs=r1.ru_nivcsw - r0.ru_nivcsw, vcs=r1.ru_nvcsw - r0.ru_nvcsw,
                steal=steal() - s0, thr=(thr() - h0) / 1e3)
with torch.no_grad():
    for f in meths.values(): f()
    for label in ("unpinned", "pinned"):
        if label == "pinned":
            cpus = sorted(os.sched_getaffinity(0)); os.sched_setaffinity(0, {cpus[len(cpus) // 2]})
        res = {k: [] for k in meths}; cal = []
        for r in range(int(sys.argv[1]) if len(sys.argv) > 1 else 16):
            cal.append(calib())
            names = list(meths); names = names[r % 3:] + names[:r % 3]
            for k in names: res[k].append(trial(meths[k]))
        print(f"== {label}: calibration loop wall ms {' '.join('%.0f' % c[0] for c in cal)} | cpu ms {' '.join('%.0f' % c[1] for c in cal)}")
        for k, v in res.items():
            for q in ("wall", "cpu"):
                x = [d[q] for d in v]
                print(f"{k:9s} {q:4s} med {statistics.median(x):6.0f} spread {max(x)/min(x):.2f} | {' '.join('%.0f' % y for y in x)}")
            print(f"{k:9s} invol-cs {[d['ivcs'] for d in v]} vol-cs med {statistics.median(d['vcs'] for d in v)} steal {[d['steal'] for d in v]} throttled_ms {[round(d['thr']) for d in v]}")
        for a, b in (("static", "kv"), ("oversized", "kv"), ("oversized", "static")):
            for q in ("wall", "cpu"):
                rr = sorted(res[b][i][q] / res[a][i][q] for i in range(len(res[a])))
                print(f"  {b}/{a} {q}: paired ratios {' '.join('%.2f' % y for y in rr)}")
print("loadavg", rd('/proc/loadavg'), "| cpu.stat", rd('/sys/fs/cgroup/cpu.stat').replace('\n', ' '))

# Printed on a lent H100 host (2026-11-22; NVIDIA H100 80GB HBM3, driver 580.159.04, Intel Xeon,
# 16 cores under KVM; torch 2.11.0+cu130, transformers 5.17.0), run from the repository root:
# nproc 16 affinity [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]
# cpu.max ([Errno 2] No such file or directory: '/sys/fs/cgroup/cpu.max') | cpu.stat usage_usec 35206046 user_usec 27960443 system_usec 7245603 nice_usec 0 nr_periods 0 nr_throttled 0 throttled_usec 0 nr_bursts 0 burst_usec 0
# loadavg 0.48 0.13 0.04 1/241 478
# model name	: Intel(R) Xeon(R) Processor
# cpu MHz		: 2100.000
# model name	: Intel(R) Xeon(R) Processor
# Thread(s) per core:                      1
# Core(s) per socket:                      16
# Socket(s):                               1
# Hypervisor vendor:                       KVM
# NUMA node(s):                            1
# NUMA node0 CPU(s):                       0-15
# %CPU NLWP COMMAND
#  101   32 python3
#  4.0    1 nv_open_q
#  2.1   28 process_api
#  0.1    1 migration/1
#  0.1    1 migration/2
#  0.1    1 migration/3
#  0.1    1 migration/4
# 
# == unpinned: calibration loop wall ms 15 27 27 16 16 18 27 25 17 27 26 19 36 30 27 22 | cpu ms 15 27 27 16 16 18 27 25 17 27 26 19 36 30 27 22
# kv        wall med    661 spread 1.79 | 578 673 570 590 574 649 633 587 698 1018 673 593 841 856 740 694
# kv        cpu  med    661 spread 1.79 | 578 673 570 590 574 649 633 587 697 1018 673 593 840 856 740 694
# kv        invol-cs [1, 1, 2, 2, 2, 1, 2, 2, 4, 3, 2, 2, 2, 2, 1, 1] vol-cs med 0.0 steal [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0] throttled_ms [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
# static    wall med    991 spread 1.75 | 763 823 707 1114 734 709 746 871 944 1237 1151 1086 1066 1076 1107 1039
# static    cpu  med    991 spread 1.75 | 763 823 707 1113 734 709 746 871 944 1237 1150 1086 1066 1076 1106 1039
# static    invol-cs [2, 2, 1, 3, 2, 2, 1, 3, 3, 2, 3, 3, 2, 2, 4, 4] vol-cs med 0.0 steal [0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1] throttled_ms [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
# oversized wall med    838 spread 1.91 | 764 799 828 1032 700 647 847 873 812 1234 700 733 1020 1085 1068 979
# oversized cpu  med    838 spread 1.91 | 764 798 828 1032 700 647 847 872 812 1234 700 733 1020 1084 1068 979
# oversized invol-cs [3, 3, 2, 4, 1, 3, 3, 2, 1, 5, 1, 2, 3, 1, 4, 3] vol-cs med 0.0 steal [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0] throttled_ms [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
#   kv/static wall: paired ratios 0.53 0.55 0.58 0.67 0.67 0.67 0.74 0.76 0.78 0.79 0.80 0.81 0.82 0.82 0.85 0.92
#   kv/static cpu: paired ratios 0.53 0.55 0.58 0.67 0.67 0.67 0.74 0.76 0.78 0.79 0.80 0.81 0.82 0.82 0.85 0.92
#   kv/oversized wall: paired ratios 0.57 0.67 0.69 0.69 0.71 0.75 0.76 0.79 0.81 0.82 0.82 0.82 0.84 0.86 0.96 1.00
#   kv/oversized cpu: paired ratios 0.57 0.67 0.69 0.69 0.71 0.75 0.76 0.79 0.81 0.82 0.82 0.82 0.84 0.86 0.96 1.00
#   static/oversized wall: paired ratios 0.85 0.88 0.99 1.00 1.00 1.00 1.03 1.04 1.04 1.05 1.06 1.08 1.10 1.16 1.48 1.64
#   static/oversized cpu: paired ratios 0.85 0.88 0.99 1.00 1.00 1.00 1.03 1.04 1.04 1.05 1.06 1.08 1.10 1.16 1.48 1.64
# == pinned: calibration loop wall ms 18 32 33 34 99 32 34 30 30 30 31 30 30 30 29 30 | cpu ms 18 32 33 34 99 32 34 30 30 30 31 30 30 30 29 30
# kv        wall med    819 spread 1.28 | 691 836 833 836 816 790 808 823 850 762 857 869 811 792 788 884
# kv        cpu  med    819 spread 1.28 | 691 835 833 836 816 790 808 823 850 762 857 869 811 792 788 884
# kv        invol-cs [2, 2, 2, 1, 0, 1, 1, 2, 3, 3, 3, 1, 3, 1, 1, 2] vol-cs med 0.0 steal [0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0] throttled_ms [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
# static    wall med   1038 spread 1.56 | 751 1174 1053 1077 1039 1014 1102 1027 1089 1002 1042 980 1010 1039 1037 990
# static    cpu  med   1038 spread 1.56 | 751 1174 1053 1077 1039 1014 1102 1026 1089 1002 1042 980 1010 1039 1037 990
# static    invol-cs [2, 4, 1, 1, 1, 2, 2, 3, 2, 3, 2, 1, 1, 1, 2, 2] vol-cs med 0.0 steal [0, 1, 1, 0, 1, 0, 0, 1, 2, 0, 1, 0, 0, 0, 0, 0] throttled_ms [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
# oversized wall med    987 spread 1.33 | 795 1015 990 1012 973 1032 935 961 996 999 984 973 1019 1057 922 964
# oversized cpu  med    987 spread 1.33 | 795 1014 990 1012 973 1032 935 961 994 999 984 973 1019 1057 922 964
# oversized invol-cs [2, 3, 1, 3, 2, 3, 3, 2, 4, 3, 3, 1, 3, 3, 2, 1] vol-cs med 0.0 steal [0, 1, 1, 1, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0] throttled_ms [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
#   kv/static wall: paired ratios 0.71 0.73 0.76 0.76 0.76 0.78 0.78 0.78 0.79 0.79 0.80 0.80 0.82 0.89 0.89 0.92
#   kv/static cpu: paired ratios 0.71 0.73 0.76 0.76 0.76 0.78 0.78 0.78 0.79 0.79 0.80 0.80 0.82 0.89 0.89 0.92
#   kv/oversized wall: paired ratios 0.75 0.76 0.77 0.80 0.82 0.83 0.84 0.84 0.85 0.85 0.86 0.86 0.87 0.87 0.89 0.92
#   kv/oversized cpu: paired ratios 0.75 0.76 0.77 0.80 0.82 0.83 0.84 0.84 0.85 0.86 0.86 0.86 0.87 0.87 0.89 0.92
#   static/oversized wall: paired ratios 0.94 0.98 0.98 0.99 1.00 1.01 1.03 1.06 1.06 1.06 1.07 1.07 1.09 1.12 1.16 1.18
#   static/oversized cpu: paired ratios 0.94 0.98 0.98 0.99 1.00 1.01 1.03 1.06 1.06 1.06 1.07 1.07 1.10 1.12 1.16 1.18
# loadavg 0.89 0.36 0.13 1/245 531 | cpu.stat usage_usec 126741617 user_usec 118118340 system_usec 8623276 nice_usec 0 nr_periods 0 nr_throttled 0 throttled_usec 0 nr_bursts 0 burst_usec 0
