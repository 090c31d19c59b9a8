#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The man pages render as written: as man(1) shows a page built from its scdoc source, every
literal block (```) of the page, and every command an EXAMPLES section writes, stands line for
line as in the source (two commands are not run into one line, a line continuation keeps its
backslash). Skipped (77) when man is not installed (Debian package man-db)."""
import argparse
import os
import re
import shutil
import subprocess
import sys

SKIP = 77


def literal_blocks(scd):
    """The literal blocks of an scdoc page: (line number, lines as the reader should see them)."""
    blocks, current, start = [], None, 0
    for number, line in enumerate(scd.split("\n"), 1):
        if line.strip() == "```":
            if current is None:
                current, start = [], number
            else:
                blocks.append((start, current))
                current = None
        elif current is not None:
            # scdoc reads a backslash as an escape even here: "\\" shows one.
            current.append(re.sub(r"\\(.)", r"\1", line))
    return blocks


def sections(scd):
    """{section title: its source lines}."""
    out, title = {}, None
    for line in scd.split("\n"):
        if line.startswith("# "):
            title = line[2:].strip()
            out[title] = []
        elif title:
            out[title].append(line)
    return out


def render(page):
    env = dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8", MANPAGER="cat", PAGER="cat",
               MAN_DISABLE_SECCOMP="1")
    env.pop("MAN_KEEP_FORMATTING", None)
    p = subprocess.run(["man", "-l", page], capture_output=True, text=True, env=env, timeout=60)
    if p.returncode != 0:
        raise RuntimeError(f"man -l {page}: exit {p.returncode}: {p.stderr.strip()}")
    return p.stdout


def contains_block(rendered, block):
    """Whether the rendered page holds the block's lines in a row, at one indentation."""
    lines = rendered.split("\n")
    first = next((i for i, b in enumerate(block) if b.strip()), None)
    if first is None:
        return True
    for i, line in enumerate(lines):
        if line.strip() != block[first].strip():
            continue
        indent = len(line) - len(block[first]) if line.endswith(block[first]) else None
        if indent is None or indent < 0:
            continue
        start = i - first
        if start < 0 or start + len(block) > len(lines):
            continue
        if all(lines[start + k].rstrip() == (" " * indent + b).rstrip() if b.strip() else not lines[start + k].strip()
               for k, b in enumerate(block)):
            return True
    return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True, help="the docs/ folder with the *.scd pages")
    ap.add_argument("--built", required=True, help="where Meson wrote the pages")
    args = ap.parse_args()
    if not shutil.which("man"):
        print("skipped: man is not installed (Debian package man-db)")
        return SKIP
    failures, blocks_checked = [], 0
    pages = sorted(f for f in os.listdir(args.source) if f.endswith(".scd"))
    for scd_name in pages:
        scd = open(os.path.join(args.source, scd_name), encoding="utf-8").read()
        page = os.path.join(args.built, scd_name[:-len(".scd")])
        rendered = render(page)
        # Commands an EXAMPLES section writes as indented paragraphs must render line for line
        # too (man fills such a paragraph: it does not).
        for title, body in sections(scd).items():
            if not title.startswith("EXAMPLE"):
                continue
            inside, paragraph = False, []
            for line in body + [""]:
                if line.strip() == "```":
                    inside = not inside
                elif not inside and line.startswith("\t"):
                    paragraph.append(re.sub(r"\\(.)", r"\1", line.strip()))
                    continue
                if paragraph and not contains_block(rendered, paragraph):
                    failures.append(f"{scd_name} {title}: man fills these lines (write them in a ``` block):\n" +
                                    "\n".join("    " + b for b in paragraph[:6]))
                paragraph = []
        for start, block in literal_blocks(scd):
            blocks_checked += 1
            if not contains_block(rendered, block):
                failures.append(f"{scd_name}:{start}: man does not show these lines as written:\n" +
                                "\n".join("    " + b for b in block[:6]))
        print(f"ok   {scd_name}: {len(literal_blocks(scd))} literal blocks")
    for f in failures:
        print("FAIL " + f)
    print(f"{blocks_checked} blocks in {len(pages)} pages, {len(failures)} failures")
    return 1 if failures or not blocks_checked else 0


if __name__ == "__main__":
    sys.exit(main())
