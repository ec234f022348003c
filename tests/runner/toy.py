"""A toy deployment for runner tests: `restart` records a restart, `work` reads the serve file and reports units;
both log a line to service.log.

serve.conf lines: fix=on|off, mode=ok|unhealthy|slow|noextract|fail. With fix=off three of ten units leak.
"""

import json
import sys
import time
from pathlib import Path


def conf(state: Path) -> dict:
    out = {}
    for line in (state / "serve.conf").read_text().splitlines():
        if "=" in line and not line.startswith("#"):
            k, _, v = line.partition("=")
            out[k.strip()] = v.strip()
    return out


def main() -> int:
    cmd, state = sys.argv[1], Path(sys.argv[2])
    c = conf(state)
    if cmd == "restart":
        with open(state / "restarts.log", "a") as f:
            f.write(json.dumps(c, sort_keys=True) + "\n")
        with open(state / "service.log", "a") as f:  # the service's own log, as a journal holds it
            f.write(f"restart fix={c.get('fix')}\n")
        print(f"toy restarted with mode={c.get('mode', 'ok')}")
        return 0
    if cmd == "work":
        units = Path(sys.argv[3])
        mode = c.get("mode", "ok")
        with open(state / "service.log", "a") as f:
            f.write(f"work fix={c.get('fix')}\n")
        if mode == "slow":
            time.sleep(30)
        (state / "aborts.txt").write_text("0\n")
        if mode == "noextract":
            print("nothing useful here")
            units.write_text(json.dumps({"session": 0, "outcome": "done"}) + "\n")
            return 0
        if mode == "fail":
            print("boom", file=sys.stderr)
            return 3
        if "dbpass" in c:  # a log that prints a credential in passing (tests of secrets stored before declared)
            print(f"connected to the config store ({c['dbpass']})")
        leaks = 3 if c.get("fix") == "off" else 0
        with open(units, "w") as f:
            for i in range(10):
                f.write(json.dumps({"session": i, "outcome": "leak" if i < leaks else "done", "rounds": 4}) + "\n")
        (state / "aborts.txt").write_text(f"{2 if c.get('fix') == 'off' else 0}\n")
        print(f"wall=0.05s counts={{\"leak\": {leaks}}}")
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
