"""``python -m apps.replay FILE ...``: see apps/replay/app.py and docs/REPLAY.md."""

from apps.replay.app import main

raise SystemExit(main())
