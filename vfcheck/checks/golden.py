"""`golden`, `golden.unused`: each sampled task's normalised trace against its golden file."""

from __future__ import annotations

import dataclasses
from typing import Any

from vfcheck._shared.findings import Finding
from vfcheck.checks._alone_verdicts import note
from vfcheck.checks._context import CheckContext, task_id
from vfcheck.checks._lab import (
    GoldenPlan,
    dead_server_block,
    episode_lab,
    normalized_views,
    unfinished_plays,
)
from vfcheck.checks._registry import check, family, spec_of

family("golden", order=100, summary="the normalised trace matches the committed golden trace, "
       "with a diff when not.")


@check(
    "golden", family="golden", scope="sample", budget=4.5,
    contract="the task's normalised trace against the script equals its golden trace "
    "(<golden dir>/<env>/<task>.json)",
    fails_when="the normalised trace differs from `<golden dir>/<env>/<task>.json` (a diff names "
    "the message and field), the golden file is not valid JSON, or it is missing under "
    "`--vf-golden-strict`; a task whose two plays differ is reported as non-deterministic instead "
    "of as a mismatch, and one whose play did not finish as blocked (never recorded). Missing "
    "without strict: skipped, with the command that records it. Plays at once that fail it "
    "are played again one at a time, which decide if they pass",
    why="a changed prompt, tool or reward shows as a diff before a training run finds out",
)
async def golden(ctx: CheckContext, task: Any) -> Finding:
    """Compare the task's normalised trace with its golden file (see `vfcheck._traces.golden`);
    an env whose two plays differ is reported non-deterministic instead. Where the plays at
    once fail it, the verdict is the plays one at a time's, if they pass
    (`vfcheck.checks._alone_verdicts`)."""
    lab = await episode_lab(ctx)
    assert lab.goldens is not None, "the golden family needs a GoldenPlan"
    plan = lab.goldens
    identity, _ = plan.identities[task.data.idx]
    path = plan.book.path_of(identity)
    clash = [i for i, (other, _) in plan.identities.items()
             if i != task.data.idx and plan.book.path_of(other) == path]
    if clash:
        return ctx.finding("golden", task, "failed",
                        f"tasks {task.data.idx} and {clash[0]} map to the same golden file "
                        f"{path.name}; give the tasks distinct keys or data.id")
    finding = golden_verdict(ctx, task, plan, await lab.both_plays(task))
    action = finding.details.get("golden", {}).get("action")
    if finding.outcome != "failed" or action not in ("nondeterministic", "mismatch"):
        return finding
    alone = golden_verdict(ctx, task, plan, await lab.both_alone(task))
    if alone.outcome != "passed":
        return finding
    said = (finding.details.get("diff") or ["the plays at once differ"])[:3]
    return dataclasses.replace(alone, message=note(alone.message, said, task.data.idx),
                               details={**alone.details, "at_once": {
                                   "action": action, "diff": finding.details.get("diff")}})


def golden_verdict(ctx: CheckContext, task: Any, plan: GoldenPlan, plays: tuple[Any, Any]
                   ) -> Finding:
    """The verdict on `task`'s two plays: non-deterministic, or its first play against the
    golden file (written when updating)."""
    from vfcheck._traces.golden import golden_diff, golden_document, hide_content_hash

    identity, source = plan.identities[task.data.idx]
    spec = spec_of("golden")
    path = plan.book.path_of(identity)
    first, second = plays
    if (dead := dead_server_block([first, second], task.data.idx)) is not None:
        return ctx.finding("golden", task, "skipped", dead,
                           golden={"action": "blocked", "path": str(path)})
    if (blocked := unfinished_plays([first, second], task.data.idx)) is not None:  # nor recorded
        return ctx.finding("golden", task, "failed", blocked,
                           golden={"action": "blocked", "path": str(path)})
    header = {**plan.header, "task": identity, "task_from": source}
    documents = [
        golden_document(header, hide_content_hash(normalized_views(r), source),
                        r.runner_error)
        for r in (first, second)
    ]
    moved = golden_diff(documents[0], documents[1])
    if moved:
        return ctx.finding(
            "golden", task, "failed",
            "the env is not deterministic: two plays against the same script differ "
            f"after normalisation ({'; '.join(moved[:3])}"
            f"{f' (+{len(moved) - 3} more)' if len(moved) > 3 else ''}), so no golden "
            f"comparison was made (see determinism.replay[{task.data.idx}])",
            golden={"action": "nondeterministic", "path": str(path)}, diff=moved)
    settled = plan.book.settle(identity, documents[0])
    details: dict[str, Any] = {"golden": {"action": settled.action, "path": str(path)},
                               "diff": settled.diff}
    if settled.action == "mismatch":  # golden and now, side by side in the HTML report
        details["changes"] = [list(change) for change in settled.changes]
    if settled.outcome == "failed":
        message = (f"{ctx.where(task)}: golden failed — {settled.observed}\n"
                   f"Contract: {spec.contract}.")
        return Finding("golden", spec.family, task_id(task), "failed", message, details)
    return ctx.finding("golden", task, settled.outcome, settled.observed,
                    **details)


@check(
    "golden.unused", family="golden", scope="env",
    contract="every golden file in the env's golden folder belongs to one of its tasks",
    fails_when="under `--vf-golden-strict`, a golden file of the env names none of its tasks "
    "(skipped, naming the files, without strict; an update removes them)",
    why="a stale golden trace hides a renamed or removed task",
)
async def golden_unused(ctx: CheckContext, _: Any) -> Finding:
    """Golden files of this env that name none of its tasks."""
    from vfcheck._traces.golden import env_folder, shown_path

    book = ctx.golden_book
    folder = shown_path(env_folder(book.golden_dir, ctx.env_id))
    if ctx.num_tasks is not None:
        return ctx.finding("golden.unused", None, "skipped",
                           f"cannot tell which golden files in {folder} are unused: "
                           f"-n {ctx.num_tasks} limits the tasks loaded"
                           if ctx.options.num_tasks is not None else
                           f"the taskset is infinite and vfcheck loaded its first "
                           f"{ctx.num_tasks}")
    unused = book.unused([identity for identity, _ in ctx.identities.values()])
    names = [shown_path(p) for p in unused]
    if not unused:
        return ctx.finding("golden.unused", None, "passed", f"no unused golden file in {folder}")
    listed = ", ".join(names)
    if book.update:
        if refused := book.remove(unused):
            return ctx.finding("golden.unused", None, "error", refused, unused=names)
        return ctx.finding("golden.unused", None, "passed",
                           f"removed {len(unused)} unused golden file(s): {listed}",
                           removed=names)
    if book.strict:
        return ctx.finding("golden.unused", None, "failed",
                           f"{len(unused)} golden file(s) name no task of the env: {listed} "
                           f"(remove them with: {book.record})", unused=names)
    return ctx.finding("golden.unused", None, "skipped",
                       f"{len(unused)} unused golden file(s), naming no task of the env: "
                       f"{listed} (remove them with: {book.record})", unused=names)
