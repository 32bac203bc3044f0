from mcp_codetools.cli import main

raise SystemExit(main())
