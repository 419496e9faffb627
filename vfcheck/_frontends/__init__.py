"""The front ends: `vfcheck` (CLI), the pytest plugin, and what they share (the run, the
report). They never import verifiers: env code runs in `vfcheck._isolation` workers."""
