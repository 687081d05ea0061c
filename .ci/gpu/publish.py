"""python .ci/gpu/publish.py runs/full: publish a full GPU run brought back from the lent host
(the runner promotes on the host, but the host's figures/ is replaced by each call's tree)."""
import json
import sys
from pathlib import Path

from helpers.course import published, runner

root = Path(sys.argv[1])
status = json.loads((root / "status.json").read_text())
run = status[published.RUN_KEY]
for stem, entry in status.items():
    if isinstance(entry, dict) and entry.get("status") == "ok" and stem[:2].isdigit():
        entry["promoted"] = runner.promote(root, stem, run=run)
        print("promoted", stem)
(root / "status.json").write_text(json.dumps(status, indent=2) + "\n")
print("status:", published.publish_status(root))
