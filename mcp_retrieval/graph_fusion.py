"""Stage 4: graph fusion — GraphRAG local search with a Personalized-PageRank prior.

Seeds are the definitions inside the pool's head chunks plus the question's anchors. A
personalized PageRank over the seeds' 2-hop neighbourhood (edge types weighted differently;
each step divides by the node's degree, so hubs like `__init__` or `utils` cannot dominate)
scores structurally connected definitions; the best ones not already in the head become the
`graph` tier. Pure: operates on a loaded CodeGraph, no I/O.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

from mcp_retrieval.indexers.graph import CodeGraph

EDGE_WEIGHTS = {"call": 1.0, "inherit": 0.8, "contains": 0.6, "reference": 0.5, "import": 0.4}
ALPHA = 0.25  # restart probability
ITERATIONS = 12  # with restart 0.25, 0.75**12 ≈ 3% of the mass is still moving
MAX_NEIGHBOURHOOD = 4000


class _Walk:
    """A graph's walk, as arrays built once per loaded graph (the graph never changes after load):
    an undirected adjacency (CSR) for the neighbourhood, and every step a node can take — its
    out-edges at their type's weight, its in-edges at 0.7 of it — with the node's hub damping.
    Building these per question in Python cost ~110 ms of a `context` on sympy (BENCHMARKS 11f)."""

    def __init__(self, graph: CodeGraph):
        n = len(graph.nodes)
        out, inc = graph.out, graph.inc
        out_degree, in_degree = out.degree(), inc.degree()
        degree = out_degree + in_degree
        # each node's steps: its out-edges (in the adjacency's order), then its in-edges at 0.7
        origin = np.concatenate([np.repeat(np.arange(n), out_degree), np.repeat(np.arange(n), in_degree)])
        order = np.argsort(origin, kind="stable")
        self.size = n
        self.src = origin[order]
        self.dst = np.concatenate([out.neighbour, inc.neighbour]).astype(np.int64)[order]
        self.weight = np.concatenate([_step_weights(out, 1.0), _step_weights(inc, 0.7)])[order]
        self.damp = 1.0 / (1.0 + np.maximum(0, degree - 20) / 20)  # hubs pass on less
        self.is_file = np.array([node.kind == "file" for node in graph.nodes], dtype=bool)
        # the steps are ordered node by node, so `dst` read by `indptr` is the undirected adjacency (CSR)
        self.indptr = np.concatenate([[0], np.cumsum(degree)])


def _step_weights(adjacency, share: float) -> np.ndarray:
    """Each edge's step weight: its type's weight times `share`."""
    by_code = np.array([EDGE_WEIGHTS.get(t, 0.3) * share for t in adjacency.types] or [0.0])
    return by_code[adjacency.code.astype(np.int64)]


_WALKS: "weakref.WeakKeyDictionary[CodeGraph, _Walk]" = weakref.WeakKeyDictionary()
_WALKS_LOCK = threading.Lock()


def prepare(graph: CodeGraph) -> None:
    """Build a graph's walk arrays now (the engine does it in its reload thread after a save, so
    the next question does not: 38 ms on terraform, BENCHMARKS 55j)."""
    _walk(graph)


def _walk(graph: CodeGraph) -> _Walk:
    with _WALKS_LOCK:
        walk = _WALKS.get(graph)
        if walk is None:
            walk = _WALKS[graph] = _Walk(graph)
        return walk


def neighbourhood(graph: CodeGraph, seeds: list[int], hops: int) -> np.ndarray:
    """The seeds and the nodes within `hops` edges of them (either direction), as a mask over the
    graph's nodes; a hop that takes it past MAX_NEIGHBOURHOOD nodes is the last."""
    walk = _walk(graph)
    seen = np.zeros(walk.size, dtype=bool)
    frontier = np.unique(np.asarray(seeds, dtype=np.int64))
    seen[frontier] = True
    for _ in range(hops):
        starts, ends = walk.indptr[frontier], walk.indptr[frontier + 1]
        lengths = ends - starts
        if not lengths.sum():
            break
        # the CSR rows of the frontier, concatenated: each row's offsets shifted to its start
        offsets = np.repeat(starts - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
        reached = np.unique(walk.dst[offsets + np.arange(lengths.sum())])
        frontier = reached[~seen[reached]]
        seen[frontier] = True
        if seen.sum() > MAX_NEIGHBOURHOOD:
            break
    return seen


def personalized_pagerank(graph: CodeGraph, seeds: dict[int, float], hops: int = 2) -> dict[int, float]:
    """PPR restricted to the seeds' neighbourhood; edges are walked both ways, inverse-degree damped.

    Each node shares its rank among its steps that stay in the neighbourhood, in proportion to
    their weights, times its damping; each iteration is one `np.bincount` over those steps."""
    nodes, rank = _ranked(graph, seeds, hops)
    return {int(nodes[i]): float(rank[i]) for i in np.flatnonzero(rank)}


def _ranked(graph: CodeGraph, seeds: dict[int, float], hops: int) -> tuple[np.ndarray, np.ndarray]:
    """(the neighbourhood's nodes, sorted; their ranks). Works in the neighbourhood's own index
    space: only its nodes' steps are read (CSR rows), never the whole graph's edge list."""
    if not seeds:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    walk = _walk(graph)
    inside = neighbourhood(graph, list(seeds), hops)
    nodes = np.flatnonzero(inside)
    starts, lengths = walk.indptr[nodes], walk.indptr[nodes + 1] - walk.indptr[nodes]
    steps = np.repeat(starts - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths) + np.arange(lengths.sum())
    steps = steps[inside[walk.dst[steps]]]  # steps that stay in the neighbourhood
    src, dst, weight = walk.src[steps], walk.dst[steps], walk.weight[steps]
    local = np.empty(walk.size, dtype=np.int64)  # graph node -> its place in `nodes` (a lookup, not a search)
    local[nodes] = np.arange(len(nodes))
    local_src, local_dst = local[src], local[dst]
    total_weight = np.bincount(local_src, weights=weight, minlength=len(nodes))
    share = walk.damp[src] * weight / total_weight[local_src]
    total = sum(seeds.values())
    restart = np.zeros(len(nodes))
    for n, w in seeds.items():
        restart[local[n]] += w / total
    rank = restart.copy()
    for _ in range(ITERATIONS):
        rank = ALPHA * restart + (1 - ALPHA) * np.bincount(local_dst, weights=rank[local_src] * share,
                                                           minlength=len(nodes))
    return nodes, rank


def expand(graph: CodeGraph, seeds: dict[int, float], exclude: set[int], cap: int, hops: int = 2) -> list[tuple[int, float]]:
    """Definitions most connected to the seeds, best first (ties by node), at most `cap`."""
    nodes, rank = _ranked(graph, seeds, hops)
    keep = (rank > 0) & ~_walk(graph).is_file[nodes]
    if exclude:
        keep &= ~np.isin(nodes, np.fromiter(exclude, dtype=np.int64, count=len(exclude)))
    nodes, rank = nodes[keep], rank[keep]
    order = np.lexsort((nodes, -rank))[:cap]
    return [(int(nodes[i]), float(rank[i])) for i in order]

