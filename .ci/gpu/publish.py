"""python .ci/gpu/publish.py runs/full [--force]: publish a full GPU run brought back from the
lent host (the runner promotes on the host, but the host's figures/ is replaced by each call's
tree). First the run's executed copies are held to the published copies' checks
(tests/test_lesson_shape.py: no stderr, plain words, at most five ranges a lesson); a run that
fails them is not promoted (6e28961's copies of 07 and 10 printed 8 and 6 ranges) unless --force;
nor is a run resumed on another machine (2f157b6's 07 and 08, re-run on a second H200 whose host
ran the eager loops 30% slower, would have set 08's ladder beside 01's from two machines)."""
import json
import os
import subprocess
import sys
from pathlib import Path

from helpers.course import published, runner

root = Path(sys.argv[1])
if "--force" not in sys.argv[2:]:
    env = dict(os.environ, COURSE_PUBLISHED_COPIES=str(root.resolve()))
    check = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            "tests/test_lesson_shape.py", "-k", "published_copy"], env=env)
    if check.returncode:
        sys.exit(f"not promoted: {root}'s copies fail the published copies' checks (above)")
status = json.loads((root / "status.json").read_text())
run = status[published.RUN_KEY]
if "--force" not in sys.argv[2:] and published.mixed_hosts(run):
    sys.exit("not promoted: " + "; ".join(published.mixed_hosts(run)))
for stem, entry in status.items():
    if isinstance(entry, dict) and entry.get("status") == "ok" and stem[:2].isdigit():
        entry["promoted"] = runner.promote(root, stem, run=run)
        print("promoted", stem)
(root / "status.json").write_text(json.dumps(status, indent=2) + "\n")
print("status:", published.publish_status(root))
