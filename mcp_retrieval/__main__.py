from mcp_retrieval.cli import main

raise SystemExit(main())
