"""What checks and the process core both use, below either: this machine's process trees,
its sockets (the offline guard, in the worker and its children), the run's floor and
clocks, unit attempts and their deadlines, where env code is on a stack, and how the
processes verifiers asks for start (warm starts: `warm_plan`, `zygote`, `warm_starts`)."""
