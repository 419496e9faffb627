"""Playing episodes offline: load an env, run `env.run_slot` against the scripted model,
record every notify; the fast in-process harness; the harness programs' dependencies."""
