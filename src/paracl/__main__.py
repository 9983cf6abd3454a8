"""`python -m paracl …`: the same CLI as the `paracl` command (paracl.cli)."""

from paracl.cli import main

raise SystemExit(main())
