#!/usr/bin/env python3
"""Checks deploy/ on a machine without a GPU or a container runtime, with
no download; CI runs it (.ci/run, the daemon's section).

cuda-prover.service:
  - `systemd-analyze verify` when it is installed (else a printed reason),
    on a copy whose binary paths point at this build: any message fails;
  - every command it runs is a binary the workspace builds, with a
    subcommand and options that binary's `--help` lists; every variable
    it expands is set by an Environment= line.
Containerfile:
  - only known instructions; base images fully qualified (podman refuses
    short names without a registries.conf alias);
  - every COPY source from the build context is tracked by git (nothing
    built or ignored is copied), every COPY --from names an earlier stage,
    and a binary copied out of a stage is the one that stage's
    `cargo build --bin` makes, with `--features cuda` and `--locked`;
  - the build stage installs nvcc as scripts/install-nvcc.sh does and
    sources scripts/cuda-env.sh;
  - ENTRYPOINT and HEALTHCHECK run the copied binary, with subcommands and
    options its `--help` lists; every CUDA_PROVER_* variable of ENV is one
    the daemon reads; the image runs as a user it creates.

Usage: deploy/check.py [BINARY]   (default: target/release/cuda-prover-service)
"""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INSTALLED = "/usr/local/bin/"
errors = []


def fail(where, msg):
    errors.append(f"{where}: {msg}")


def workspace_bins():
    out = subprocess.run(
        ["cargo", "metadata", "--no-deps", "--format-version", "1", "--offline"],
        cwd=ROOT, check=True, capture_output=True, text=True).stdout
    bins = {}
    for p in json.loads(out)["packages"]:
        for t in p["targets"]:
            if "bin" in t["kind"]:
                bins[t["name"]] = p["name"]
    return bins


HELP = {}


def help_of(binary, sub):
    key = (binary, sub)
    if key not in HELP:
        r = subprocess.run([binary, sub, "--help"], capture_output=True, text=True)
        HELP[key] = r.stdout if r.returncode == 0 else None
    return HELP[key]


def check_command(where, argv, binary, bins):
    """argv: a command as installed; binary: this build's binary."""
    name = os.path.basename(argv[0])
    if name not in bins:
        fail(where, f"{argv[0]} is not a binary of the workspace ({sorted(bins)})")
        return
    if len(argv) < 2 or argv[1].startswith("-"):
        fail(where, f"{name} needs a subcommand")
        return
    if os.path.basename(binary) != name:
        return
    text = help_of(binary, argv[1])
    if text is None:
        fail(where, f"'{name} {argv[1]}' is not a subcommand")
        return
    for a in argv[2:]:
        if a.startswith("--"):
            opt = a.split("=", 1)[0]
            if not re.search(r"(?<![\w-])" + re.escape(opt) + r"(?![\w-])", text):
                fail(where, f"'{name} {argv[1]}' has no option {opt}")


def logical_lines(path, comment="#"):
    """Lines with continuations joined and comments dropped."""
    out, cur, start = [], "", 0
    with open(path) as f:
        for n, line in enumerate(f, 1):
            s = line.rstrip("\n")
            if not cur and (not s.strip() or s.lstrip().startswith(comment)):
                continue
            if not cur:
                start = n
            if s.endswith("\\"):
                cur += s[:-1] + " "
                continue
            out.append((start, cur + s))
            cur = ""
    if cur:
        out.append((start, cur))
    return out


def check_unit(binary, bins):
    path = os.path.join(ROOT, "deploy", "cuda-prover.service")
    where = "deploy/cuda-prover.service"
    env = set()
    commands = []
    for n, line in logical_lines(path):
        key, _, value = line.partition("=")
        if key == "Environment":
            env.add(value.split("=", 1)[0])
        if key.startswith("Exec"):
            commands.append((n, value))
    if not any(c for c in commands):
        fail(where, "no ExecStart")
    for n, value in commands:
        argv = shlex.split(value)
        for v in re.findall(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)", value):
            if v not in env:
                fail(f"{where}:{n}", f"${v} is not set by an Environment= line")
        if not argv[0].startswith(INSTALLED):
            fail(f"{where}:{n}", f"{argv[0]}: expected a binary in {INSTALLED}")
        check_command(f"{where}:{n}", argv, binary, bins)
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        print("deploy: systemd-analyze is not installed; the unit's syntax is not verified")
        return
    with tempfile.TemporaryDirectory() as d:
        with open(path) as f:
            text = f.read()
        copy = os.path.join(d, "cuda-prover.service")
        with open(copy, "w") as f:
            f.write(text.replace(INSTALLED + os.path.basename(binary), binary))
        r = subprocess.run([analyze, "verify", copy], capture_output=True, text=True)
        said = (r.stdout + r.stderr).strip()
        if r.returncode != 0 or said:
            fail(where, f"systemd-analyze verify: {said or r.returncode}")
        else:
            print("deploy: systemd-analyze verify: the unit is clean")


KNOWN = {"FROM", "RUN", "COPY", "ENV", "ARG", "WORKDIR", "USER", "VOLUME",
         "EXPOSE", "LABEL", "HEALTHCHECK", "STOPSIGNAL", "ENTRYPOINT", "CMD"}


def exec_form(where, rest):
    try:
        argv = json.loads(rest)
    except json.JSONDecodeError as e:
        fail(where, f"not a JSON array ({e})")
        return None
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        fail(where, "not a JSON array of strings")
        return None
    return argv


def check_containerfile(binary, bins):
    path = os.path.join(ROOT, "deploy", "Containerfile")
    stages = []  # dicts: name, runs, copied (dest -> (stage, src)), users
    env = {}
    entry = None
    health = None
    for n, line in logical_lines(path):
        where = f"deploy/Containerfile:{n}"
        word, _, rest = line.strip().partition(" ")
        word = word.upper()
        rest = rest.strip()
        if word not in KNOWN:
            fail(where, f"unknown instruction {word}")
            continue
        if word != "FROM" and not stages:
            fail(where, f"{word} before FROM")
            continue
        if word == "FROM":
            parts = rest.split()
            image = parts[0]
            name = parts[2] if len(parts) == 3 and parts[1].upper() == "AS" else None
            if not any(s["name"] == image for s in stages):
                first = image.split("/")[0]
                if "/" not in image or "." not in first:
                    fail(where, f"{image}: name the registry (docker.io/library/...)")
            stages.append({"name": name, "runs": [], "copied": {}, "users": set()})
        elif word == "RUN":
            stages[-1]["runs"].append(rest)
            for u in re.findall(r"useradd\b[^&;]*?\s([a-z_][a-z0-9_-]*)\s*(?:&&|;|$)", rest):
                stages[-1]["users"].add(u)
        elif word == "COPY":
            args = shlex.split(rest)
            flags = [a for a in args if a.startswith("--")]
            paths = [a for a in args if not a.startswith("--")]
            if len(paths) < 2:
                fail(where, "COPY needs a source and a destination")
                continue
            srcs, dest = paths[:-1], paths[-1]
            source_stage = None
            for f in flags:
                if f.startswith("--from="):
                    source_stage = f.split("=", 1)[1]
            if source_stage is None:
                for s in srcs:
                    tracked = subprocess.run(["git", "ls-files", "--", s], cwd=ROOT,
                                             capture_output=True, text=True).stdout
                    if not os.path.exists(os.path.join(ROOT, s)):
                        fail(where, f"COPY source {s} does not exist in the repository")
                    elif not tracked.strip():
                        fail(where, f"COPY source {s} holds no file tracked by git")
                continue
            match = [s for s in stages[:-1] if s["name"] == source_stage]
            if not match:
                fail(where, f"COPY --from={source_stage}: no earlier stage of that name")
                continue
            for s in srcs:
                m = re.search(r"target/release/([^/]+)$", s)
                if not m:
                    continue
                b = m.group(1)
                built = [r for r in match[0]["runs"]
                         if re.search(r"cargo build\b.*--bin\s+" + re.escape(b) + r"\b", r)]
                if b not in bins:
                    fail(where, f"{b} is not a binary of the workspace")
                if not built:
                    fail(where, f"stage {source_stage} builds no --bin {b}")
                for r in built:
                    for needed in ("--locked", "--features cuda", "--release"):
                        if needed not in r:
                            fail(where, f"the build of {b} lacks {needed}")
                stages[-1]["copied"][dest] = b
        elif word == "ENV":
            for pair in shlex.split(rest):
                k, _, v = pair.partition("=")
                env[k] = v
        elif word == "USER":
            if rest in ("root", "0") or rest not in stages[-1]["users"]:
                fail(where, f"USER {rest}: run as a user this stage creates (useradd)")
        elif word == "ENTRYPOINT":
            entry = (where, exec_form(where, rest))
        elif word == "HEALTHCHECK":
            m = re.search(r"\bCMD\s+(.*)$", rest)
            if not m:
                fail(where, "HEALTHCHECK without CMD")
            else:
                cmd = m.group(1)
                health = (where, exec_form(where, cmd) if cmd.startswith("[")
                          else shlex.split(cmd))
    if not stages:
        fail("deploy/Containerfile", "no FROM")
        return
    build_runs = " ".join(r for s in stages[:-1] for r in s["runs"])
    if "scripts/install-nvcc.sh" not in build_runs:
        fail("deploy/Containerfile", "the build stage does not run scripts/install-nvcc.sh")
    if not re.search(r"(\.|source) scripts/cuda-env\.sh", build_runs):
        fail("deploy/Containerfile", "the build stage does not source scripts/cuda-env.sh")
    final = stages[-1]
    for what, found in (("ENTRYPOINT", entry), ("HEALTHCHECK", health)):
        if found is None or found[1] is None:
            fail("deploy/Containerfile", f"no {what} in exec or shell form")
            continue
        where, argv = found
        if argv[0] not in final["copied"]:
            fail(where, f"{argv[0]} is not a binary the final stage copies in")
            continue
        check_command(where, argv, binary, bins)
    serve_help = help_of(binary, "serve") or ""
    for k in env:
        if k.startswith("CUDA_PROVER_") and k not in serve_help:
            fail("deploy/Containerfile", f"ENV {k}: the daemon reads no such variable")


def main():
    binary = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                             os.path.join(ROOT, "target", "release", "cuda-prover-service"))
    if not os.access(binary, os.X_OK):
        print(f"deploy: {binary} is not built", file=sys.stderr)
        return 2
    bins = workspace_bins()
    check_unit(binary, bins)
    check_containerfile(binary, bins)
    for e in errors:
        print(f"deploy: {e}", file=sys.stderr)
    if errors:
        return 1
    print("deploy: the unit and the container file are consistent with this build")
    return 0


if __name__ == "__main__":
    sys.exit(main())
