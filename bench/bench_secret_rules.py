"""What each source of the credential rules catches (`tandem.cache.secrets`): detect-secrets' maintained
rules, tandem's own rules, and both (what tandem uses), on the probes in `secret_probes.py` (one made-up
credential per format, in each format's documented shape), plus the credential file names by the name
rules, and how many lines of ordinary code each source refuses (false alarms). It prints what it measured;
it passes or fails nothing.

    python bench/bench_secret_rules.py [--json]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from secret_probes import FILE_NAMES, ORDINARY, TOKENS

from tandem.cache.privacy import PrivacyFilter
from tandem.cache.secrets import OWN_RULES, Rule, maintained_rules


def caught(rules: tuple[Rule, ...], line: str) -> bool:
    return any(rule.pattern.search(line) for rule in rules)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    maintained = maintained_rules()
    sources = {"detect-secrets": maintained, "tandem's own": OWN_RULES, "both (used)": (*maintained, *OWN_RULES)}
    result: dict[str, object] = {"formats": len(TOKENS), "ordinary_lines": len(ORDINARY)}
    for name, rules in sources.items():
        found = [fmt for fmt, line in TOKENS.items() if caught(rules, line)]
        false = [line for line in ORDINARY if caught(rules, line)]
        result[name] = {"caught": len(found), "missed": sorted(set(TOKENS) - set(found)), "false_alarms": false}
    only_own = [fmt for fmt, line in TOKENS.items() if caught(OWN_RULES, line) and not caught(maintained, line)]
    result["added_by_tandem"] = only_own
    privacy = PrivacyFilter()
    refused = [name for name in FILE_NAMES if not privacy.check_path(name)]
    result["file_names"] = {
        "refused": len(refused),
        "of": len(FILE_NAMES),
        "sent": sorted(set(FILE_NAMES) - set(refused)),
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"credential formats caught, of {len(TOKENS)} (false alarms on {len(ORDINARY)} ordinary lines):")
    for name in sources:
        entry = result[name]
        assert isinstance(entry, dict)
        missed = ", ".join(entry["missed"]) or "-"
        print(f"  {name:15} {entry['caught']:3}   false alarms {len(entry['false_alarms'])}   missed: {missed}")
    print(f"  caught only by tandem's own rules: {', '.join(only_own) or '-'}")
    files = result["file_names"]
    assert isinstance(files, dict)
    sent_names = ", ".join(files["sent"]) or "-"
    print(f"credential files refused by name: {files['refused']} of {files['of']}; sent: {sent_names}")


if __name__ == "__main__":
    main()
