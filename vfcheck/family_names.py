"""The check families' names, in report order: what `--checks` accepts. The option table
validates against this list without importing the checks (they are above it);
`vfcheck.checks` refuses to import when its registry's families differ from it."""

FAMILY_NAMES: tuple[str, ...] = (
    "load", "determinism", "setup", "gold", "noop", "episode", "lifecycle", "preview",
    "robustness", "golden", "reward", "exploit", "judge", "served", "hygiene",
)
