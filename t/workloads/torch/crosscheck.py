"""Calls per API as the kernel counted them: uprobe_events and uprobe_profile,
read inside the traced run, paired line by line (both list the probes in the
order they were made). Only entry probes (p:) of the group given count, and
of those only the CUDA APIs' (not the dynamic loader's hook).

usage: crosscheck.py GROUP UPROBE_EVENTS UPROBE_PROFILE INFO_JSON (ingero info --json)
Prints "API kernel=N ingero=M" per API, and exits 1 if any differ."""
import json
import re
import sys


def kernel_counts(group, events_path, profile_path):
    events = [l.split() for l in open(events_path) if l.strip()]
    profile = [l.split() for l in open(profile_path) if l.strip()]
    counts = {}
    if len(events) != len(profile):
        sys.exit(f"crosscheck: {len(events)} probes but {len(profile)} profile lines")
    for ev, prof in zip(events, profile):
        kind, name = ev[0].split(":", 1)
        if kind != "p" or not name.startswith(group + "/"):
            continue
        api = next((a.split("=", 1)[1] for a in ev[2:] if a.startswith("api=")), None)
        if api is None:
            continue
        counts[api] = counts.get(api, 0) + int(prof[-1])
    return counts


def main():
    group, events, profile, info = sys.argv[1:5]
    report = json.load(open(info))
    names = dict(enumerate(report["header"]["api_table"]))
    by_name = {a["name"]: a["calls"] for a in report["apis"]}
    bad = 0
    for api, hits in kernel_counts(group, events, profile).items():
        name = names[int(re.sub(r"^\\|:.*$", "", api))]
        got = by_name.get(name, 0)
        if not hits and not got:
            continue
        print(f"{name} kernel={hits} ingero={got}{'' if hits == got else '  DIFFERENT'}")
        bad |= hits != got
    sys.exit(bad)


if __name__ == "__main__":
    main()
