#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks that debian/changelog's newest entry carries meson.build's project version (the one
place versions come from): its upstream part, without epoch or Debian revision, must be equal.

  check_version.py SOURCE_ROOT [--version VERSION]

Without --version, the version is read with `meson introspect --projectinfo`. Used by the
'debian-version' test and by debian/rules before every package build.
"""
import argparse
import json
import os
import re
import subprocess
import sys


def meson_version(root):
    out = subprocess.run(["meson", "introspect", "--projectinfo", os.path.join(root, "meson.build")],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["version"]


def changelog_version(path):
    """The upstream part of the newest entry's version: 1:0.1.0-2 -> 0.1.0."""
    with open(path, encoding="utf-8") as f:
        first = f.readline()
    m = re.match(r"^\S+ \(([^)\s]+)\) ", first)
    if not m:
        raise ValueError(f"{path}:1: not a changelog entry: {first.strip()!r}")
    version = m.group(1).split(":", 1)[-1]
    return version.rsplit("-", 1)[0] if "-" in version else version


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", help="the source tree")
    ap.add_argument("--version", help="meson.build's project version (default: asked from meson)")
    args = ap.parse_args()
    changelog = os.path.join(args.root, "debian", "changelog")
    try:
        expected = args.version or meson_version(args.root)
        found = changelog_version(changelog)
    except (OSError, ValueError, subprocess.CalledProcessError) as e:
        print(f"check_version: {e}", file=sys.stderr)
        return 2
    if found != expected:
        print(f"{changelog}:1: version {found} differs from meson.build's project version {expected}: "
              "add a changelog entry for it (or bump meson.build)", file=sys.stderr)
        return 1
    print(f"debian/changelog and meson.build agree: {expected}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
