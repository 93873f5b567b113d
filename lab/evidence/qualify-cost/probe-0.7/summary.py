import gzip, json, sys, statistics
from pathlib import Path
paths = []
for a in sys.argv[1:]:
    p = Path(a)
    paths += sorted(p.glob("*.json*")) if p.is_dir() else [p]
for p in paths:
    if p.name == "plan.json": continue
    d = json.load(gzip.open(p) if p.suffix == ".gz" else open(p))
    ms = [m for m in d["measurements"] if m["status"] == "ok"]
    timed = sum(sum(m["samples_s"]) for m in ms)
    loop = sum(m["sampling_wall_s"] for m in ms)
    wall = d.get("run", {}).get("wall_s") or d["duration_s"]
    print(f"{p.name[:45]:45} wall {wall:6.1f} s dur {d['duration_s']:6.1f} timed {timed:6.1f} ({timed/wall:.1%}) loop share {timed/loop:.1%} setup {sum(d.get('setup_s',{}).values()):.1f}")
    for m in ms:
        clk = [c for c in (m["sm_clock_mhz"] or []) if c]
        print(f"   {m['workload'][:22]:22} {m['dtype']:5} n={len(m['samples_s']):6} med={m['stats']['median']*1e6:8.1f}us loop={m['sampling_wall_s']:.2f} timed={sum(m['samples_s']):.2f} ({sum(m['samples_s'])/m['sampling_wall_s']:.0%}) idle={m['idle_discarded']} thr={m['throttled_discarded']} blk={(m['launch_block_s'] or 0)*1e6:.0f}us stop={m['stop_reason']} clk={statistics.median(clk) if clk else None} floor={m.get('timed_floor_s')} wall={m['wall_s']:.2f}")
