#!/usr/bin/env python3
"""seeds.py: online SGD seeds and the limit ODE through the Python module
aimdyn (README.md, "Use as a library"): the teacher overlap of each seed
and of the ODE on the grid.

    python3 seeds.py [CONFIG.ini] [section.key=value ...]
"""
import sys

import numpy as np

import aimdyn


def main(argv):
    config, settings = aimdyn.arguments(argv)
    try:
        seeds = aimdyn.sgd(settings, config=config)
        run = aimdyn.ode(settings, config=config)
    except aimdyn.AimdynError as e:
        print(f"seeds.py: {e}", file=sys.stderr)
        return 1
    overlap = seeds["overlap"]
    print(f"# d = {seeds.d}, {overlap.shape[0]} seeds from seed {seeds.seed}")
    print("tau\tode\tsgd_mean\t" + "\t".join(f"seed{s}" for s in range(overlap.shape[0])))
    for i, tau in enumerate(seeds.tau):
        row = [tau, run["overlap"][i], np.nanmean(overlap[:, i])] + list(overlap[:, i])
        print("\t".join("%.6g" % v for v in row))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
