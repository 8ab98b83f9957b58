import sys

from mcp_retrieval.bench import scale, swebench

USAGE = "usage: python -m mcp_retrieval.bench {swebench|scale} ... (--help for each)"


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("swebench", "scale"):
        print(USAGE, file=sys.stderr)
        return 2
    module = swebench if argv[0] == "swebench" else scale
    return module.main(argv[1:])


raise SystemExit(main(sys.argv[1:]))
