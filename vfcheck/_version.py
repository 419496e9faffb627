"""vfcheck's version, written once: the package metadata reads it (hatch), and so do the
reports' headers."""

__version__ = "0.1.0"
"""vfcheck's version (the reports' headers print it)."""
