"""A scripted proposer: iteration N applies entry N of proposals.json to rules.md.

A real loop would run an agent here with the failure brief ({failures}); this script reads the
brief only to report what it was shown, so the example is deterministic.

Usage: python propose.py --iteration N --failures BRIEF.json --allowed ALLOWED.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iteration", type=int, required=True)
    parser.add_argument("--failures", required=True)
    parser.add_argument("--allowed", required=True)
    args = parser.parse_args()
    here = Path(__file__).resolve().parent
    brief = json.loads(Path(args.failures).read_text(encoding="utf-8"))
    allowed = json.loads(Path(args.allowed).read_text(encoding="utf-8"))
    shown = ", ".join(f"{row['case_id']} ({row['category']})" for row in brief["failures"])
    print(f"iteration {args.iteration}: may edit {allowed['files']}; failing: {shown or 'none'}")
    proposals = json.loads((here / "proposals.json").read_text(encoding="utf-8"))
    entry = proposals[args.iteration - 1] if args.iteration <= len(proposals) else {}
    line = entry.get("append")
    print(entry.get("note", "no proposal"))
    if line:
        rules = here / "rules.md"
        text = rules.read_text(encoding="utf-8")
        rules.write_text(text.rstrip("\n") + "\n" + line + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
