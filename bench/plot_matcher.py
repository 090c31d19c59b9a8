#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Draws a cost against the rule count as a standalone SVG (log-log axes), one line per series,
# from JSON lines with a name, a value and a rules parameter: by default the matcher's (the lines
# `ibqos-bench-matcher --json` prints: ibqos's classifier and OpenSM's rule scan).
#
#   ibqos-bench-matcher --json | bench/plot_matcher.py -o docs/matcher-cost.svg
#   ... | bench/plot_matcher.py --series NAME=LABEL ... --y-label TEXT --unit us -o FILE
import argparse
import json
import math
import sys

WIDTH, HEIGHT = 640, 400
LEFT, TOP, BOTTOM = 72, 40, 56
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]
MATCHER_SERIES = [("classifier", "ibqos classifier"), ("baseline", "OpenSM rule scan")]


def read_points(lines, series):
    points = {name: {} for name, _ in series}
    for line in lines:
        line = line.strip()
        if not line.startswith("{"):
            continue
        record = json.loads(line)
        if record.get("name") in points and "rules" in record:
            points[record["name"]][int(record["rules"])] = float(record["value"])
    return points


def decades(low, high):
    return range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)


def svg(points, series, title, y_label, unit):
    xs = sorted({r for series in points.values() for r in series})
    ys = [v for series in points.values() for v in series.values() if v > 0]
    if not xs or not ys:
        raise SystemExit("plot_matcher: no lines of the series (with a rules parameter) in the input")
    x_dec, y_dec = decades(min(xs), max(xs)), decades(min(ys), max(ys))
    x0, x1, y0, y1 = x_dec[0], x_dec[-1], y_dec[0], y_dec[-1]
    if x0 == x1:
        x1 += 1
    if y0 == y1:
        y1 += 1
    right = max(150, 50 + 7 * max(len(label) for _, label in series))  # room for the legend
    width = WIDTH - 150 + right
    plot_w, plot_h = width - LEFT - right, HEIGHT - TOP - BOTTOM

    def px(x):
        return LEFT + (math.log10(x) - x0) / (x1 - x0) * plot_w

    def py(y):
        return TOP + plot_h - (math.log10(y) - y0) / (y1 - y0) * plot_h

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{HEIGHT}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{HEIGHT}" fill="white"/>',
           f'<text x="{LEFT + plot_w / 2}" y="22" text-anchor="middle" font-size="14">{title}</text>']
    for d in range(x0, x1 + 1):
        x = px(10 ** d)
        out.append(f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{TOP + plot_h}" stroke="#ddd"/>')
        out.append(f'<text x="{x:.1f}" y="{TOP + plot_h + 18}" text-anchor="middle">{10 ** d:,}</text>')
    for d in range(y0, y1 + 1):
        y = py(10 ** d)
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + plot_w}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{LEFT - 8}" y="{y + 4:.1f}" text-anchor="end">{10 ** d:,}</text>')
    out.append(f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#333"/>')
    out.append(f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 14}" text-anchor="middle">rules in the policy</text>')
    out.append(f'<text transform="translate(18,{TOP + plot_h / 2}) rotate(-90)" text-anchor="middle">'
               f'{y_label}</text>')
    for i, (name, label) in enumerate(series):
        colour = COLOURS[i % len(COLOURS)]
        line = sorted(points[name].items())
        path = " ".join(f"{px(r):.1f},{py(v):.1f}" for r, v in line if v > 0)
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for r, v in line:
            if v > 0:
                out.append(f'<circle cx="{px(r):.1f}" cy="{py(v):.1f}" r="3.5" fill="{colour}">'
                           f'<title>{label}: {v:,.3g} {unit} at {r:,} rules</title></circle>')
        ly = TOP + 10 + i * 20
        out.append(f'<line x1="{LEFT + plot_w + 12}" y1="{ly}" x2="{LEFT + plot_w + 32}" y2="{ly}" '
                   f'stroke="{colour}" stroke-width="2"/>')
        out.append(f'<text x="{LEFT + plot_w + 38}" y="{ly + 4}">{label}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description="Draw a cost against rule count as SVG.")
    ap.add_argument("input", nargs="?", help="JSON lines, by default ibqos-bench-matcher --json (default: "
                    "standard input)")
    ap.add_argument("-o", "--output", help="SVG file to write (default: standard output)")
    ap.add_argument("--title", default="PathRecord matching cost against policy size")
    ap.add_argument("--series", action="append", metavar="NAME=LABEL",
                    help="a line: the JSON lines named NAME, labelled LABEL (default: the matcher's two)")
    ap.add_argument("--y-label", default="time per PathRecord match (ns)")
    ap.add_argument("--unit", default="ns", help="the values' unit, in the points' tooltips")
    args = ap.parse_args()
    series = [tuple(s.split("=", 1)) for s in args.series] if args.series else MATCHER_SERIES
    lines = open(args.input).readlines() if args.input else sys.stdin.readlines()
    text = svg(read_points(lines, series), series, args.title, args.y_label, args.unit)
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
