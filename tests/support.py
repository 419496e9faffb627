"""What the test tiers share: where the project's parts live."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
SOURCE = ROOT / "vfcheck"
README = ROOT / "README.md"
