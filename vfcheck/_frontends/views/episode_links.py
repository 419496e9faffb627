"""Families whose findings are about an episode's record (its notify timeline, preview,
replay, bad-output plays): in the HTML report each finding links to its task's episode."""

from vfcheck._frontends.views._view import FamilyView, view

view(FamilyView(("lifecycle", "preview", "determinism", "robustness", "served"),
                episode_link=True))
