"""`vfcheck-chat`: the fast-tier harness, as a top-level module so that verifiers' harness
loader resolves it by id (`--env.agent.harness.id vfcheck-chat`; loaders strip `-` to `_`).

The implementation lives in `vfcheck._episodes.fast_harness`; this module only exports it.
"""

from vfcheck._episodes.fast_harness import FastChatConfig, FastChatHarness

__all__ = ["FastChatConfig", "FastChatHarness"]
