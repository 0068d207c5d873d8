#!/usr/bin/env python3
"""predict.py: the limit ODE of a configuration through the Python module
aimdyn (README.md, "Use as a library"); the twin of examples/c/predict.c,
printing the same table.

    python3 predict.py [CONFIG.ini] [section.key=value ...]
"""
import math
import sys

import aimdyn


def main(argv):
    config, settings = aimdyn.arguments(argv)
    try:
        run = aimdyn.ode(settings, config=config)
    except aimdyn.AimdynError as e:
        print(f"predict.py: {e}", file=sys.stderr)
        return 1
    print("\t".join(("tau",) + aimdyn.observable_names))
    for i in range(run.reached):
        print("\t".join("%.17g" % v for v in
                        [run.tau[i]] + [run[n][i] for n in aimdyn.observable_names]))
    if math.isnan(run.tau_wr):
        print("# tau_wr not reached by tau = %.17g" % run.tau[run.reached - 1])
    else:
        print("# tau_wr %.17g" % run.tau_wr)
    if run.stopped:
        print(f"# stopped: {run.message}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
