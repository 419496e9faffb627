"""The process core, above `vfcheck._host` and below the front ends: env code runs in a
supervised worker process per env, held to hard deadlines, its findings appended to an event
log, its processes and work dirs cleaned up. It runs what the check registry declares and
names no family."""
