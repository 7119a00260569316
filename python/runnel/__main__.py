"""``python -m runnel describe module:attribute [...]``: the descriptor entries of Python
streamlets as JSON (docs/descriptor.md), for the host and ``runnel verify``."""

from __future__ import annotations

import json
import sys

from .definition import DefinitionError, load


def main(arguments: list[str]) -> int:
    if len(arguments) < 2 or arguments[0] != "describe":
        print("usage: python -m runnel describe module:attribute [module:attribute ...]", file=sys.stderr)
        return 2
    described = []
    for reference in arguments[1:]:
        try:
            described.append(load(reference).describe())
        except (DefinitionError, ImportError) as error:
            print(f"error: streamlet '{reference}': {error}", file=sys.stderr)
            return 1
    json.dump({"streamlets": described}, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
