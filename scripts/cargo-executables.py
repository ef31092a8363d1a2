#!/usr/bin/env python3
"""Reads cargo's JSON messages (--message-format=json) on stdin and prints
"target-name executable" for each executable built. Two crates have a test
target named cuda: the GKR crate's is printed as gkr-cuda."""
import json
import sys

for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable"):
        name = m["target"]["name"]
        if m["manifest_path"].endswith("/gkr/Cargo.toml"):
            name = "gkr-" + name
        print(name, m["executable"])
