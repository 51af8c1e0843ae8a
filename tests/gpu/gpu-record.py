#!/usr/bin/env python3
"""gpu-record.py R.json [PREFIX] - a GPU program's results record: it ran on
the GPU backend and its device pool stayed within its limit (a um pool is
managed memory, paged by the driver, and is not held under it). Prints one
summary line after PREFIX; exits 1 if the record fails."""
import json
import sys

r = json.load(open(sys.argv[1]))
ok = r["backend"] != "cpu" and (r["optimizer"] == "um" or r["dram_limit"] == 0 or
                                r["dram_alloc_size"] <= r["dram_limit"])
print(f"{sys.argv[2] if len(sys.argv) > 2 else ''}{r['optimizer']}: device pool {r['dram_alloc_size']} B, "
      f"limit {r['dram_limit']} B, {r.get('num_move_nodes', 0)} moves, measured {r['actual_runtime'] * 1e3:.2f} ms, "
      f"predicted {r.get('predicted_runtime', 0) * 1e3:.2f} ms")
sys.exit(0 if ok else 1)
