"""What checks and the process core both use, below either: here, how the processes
verifiers asks for start (warm starts: `warm_plan`, `zygote`, `warm_starts`)."""
