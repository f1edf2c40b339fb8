"""python -m grantwire version [--json]: the Go version and policy this package was built with."""

import json
import sys

from . import version


def main(argv):
    if argv[:1] != ["version"]:
        print("usage: python -m grantwire version [--json]", file=sys.stderr)
        return 2
    v = version()
    if "--json" in argv:
        print(json.dumps(v, indent=2))
    else:
        print(f"grantwire {v['version']} (python package {v['package']}, policy sha256 {v['policy_sha256']}, {v['runtime']})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
