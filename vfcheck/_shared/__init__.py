"""What every layer shares, below all of them: findings, exit codes, paths as shown, this
machine, verifiers' version and features, env ids, shards. Standard library only."""
