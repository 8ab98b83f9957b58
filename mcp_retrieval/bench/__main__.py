import sys

from mcp_retrieval.bench import (ab, answers, ann, broad, calibrate, commits, constants, crash, dense_alone, dense_heads, diffs, drift, embed_speed, fresh, heldout, latency, load, losses,
                                 questions,
                                 rerank_cost, roots, scale, semble, served, swebench, team, tokens)

USAGE = "usage: python -m mcp_retrieval.bench {swebench|ab|answers|heldout|losses|commits|constants|tokens|latency|roots|broad|diffs|drift|team|questions|scale|load|fresh|calibrate|crash|ann|served|rerank_cost|embed_speed|semble|dense_alone|dense_heads} ... (--help for each)"
COMMANDS = {"swebench": swebench, "ab": ab, "answers": answers, "heldout": heldout, "losses": losses, "commits": commits, "constants": constants, "tokens": tokens, "latency": latency, "roots": roots, "broad": broad, "diffs": diffs, "drift": drift, "team": team, "questions": questions, "scale": scale, "load": load, "fresh": fresh, "calibrate": calibrate, "crash": crash, "ann": ann, "served": served, "rerank_cost": rerank_cost, "embed_speed": embed_speed, "semble": semble, "dense_alone": dense_alone, "dense_heads": dense_heads}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in COMMANDS:
        print(USAGE, file=sys.stderr)
        return 2
    from mcp_retrieval.bench.checkout import TreeBusy
    from mcp_retrieval.indexers.update import IndexBusy

    try:
        return COMMANDS[argv[0]].main(argv[1:])
    except (TreeBusy, IndexBusy) as exc:  # another run holds the work directory: say so in one line
        print(f"bench {argv[0]}: {exc}", file=sys.stderr)
        return 1


raise SystemExit(main(sys.argv[1:]))
