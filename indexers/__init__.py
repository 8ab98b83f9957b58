"""Everything that writes the index: walk, chunk, symbols and graph, lexical, vectors, manifest.

The pipeline is `walk -> chunk (+ symbols) -> store/lexical -> vectors`, orchestrated by
`indexers.update.Indexer`. Nothing here imports `mcp`.
"""
