"""``python -m ext``: run the command line."""

from ext.cli import main

raise SystemExit(main())
