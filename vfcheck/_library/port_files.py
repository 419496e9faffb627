"""`api.port_files.removed`: does verifiers remove the port file it gives each tool server?

`serve_in_runtime` (`verifiers/v1/mcp/launch.py`) writes a tool server's port to a file at
a fixed `/tmp` path, one per start without a fixed port; 0.4.0 never removes it, and a
training node fills up with them. The check reads the source (`ast`, nothing imported):
where the path is made, and whether a call in that module removes it. The behaviour itself
shows in every `vfcheck check` of a tool env: the worker removes the files its tool
servers were given once verifiers has stopped them, and lists those that were still there
(`vfcheck._host.port_files`, the report's `starts.port_files`).
"""

from __future__ import annotations

import ast

from vfcheck._library.result import finding
from vfcheck._library.source import cite, verifiers_root
from vfcheck._shared.findings import Finding

CHECK = "api.port_files.removed"
MARK = "vf-port-"
"""What the port file's name starts with in 0.4.0."""
REMOVERS = ("unlink", "remove", "rmtree")
WHY = ("a tool server's port file left per start fills /tmp on a node that plays thousands "
       "of tool episodes")


def port_file_findings() -> list[Finding]:
    root = verifiers_root()
    launch = root / "v1" / "mcp" / "launch.py" if root is not None else None
    if launch is None or not launch.is_file():
        return [finding(CHECK, "skipped", "this verifiers has no verifiers/v1/mcp/launch.py "
                        "(no tool servers to give a port file)", observed="no launch.py")]
    tree = ast.parse(launch.read_text(encoding="utf-8"))
    made = next(((node, target.id) for node in ast.walk(tree) if isinstance(node, ast.Assign)
                 for target in node.targets if isinstance(target, ast.Name)
                 and MARK in ast.unparse(node.value)), None)
    if made is None:
        return [finding(CHECK, "skipped", f"{cite(launch)} makes no `{MARK}...` port file "
                        "path (tool servers report their port another way)",
                        observed="no port file")]
    node, name = made
    where = cite(launch, node.lineno)
    removed = [call for call in ast.walk(tree) if isinstance(call, ast.Call)
               and (ast.unparse(call.func).rsplit(".", 1)[-1] in REMOVERS)
               and name in ast.unparse(call)]
    path = ast.unparse(node.value)
    if removed:
        return [finding(CHECK, "passed", f"the tool-server port file `{path}` ({where}) is "
                        f"removed at {cite(launch, removed[0].lineno)}", observed="removed",
                        source=where, why=WHY)]
    return [finding(CHECK, "failed",
                    f"verifiers gives every tool server it starts without a fixed port the "
                    f"port file `{name} = {path}` ({where}) and nothing in {cite(launch)} "
                    "removes it: one file per tool-server start stays in /tmp (vfcheck "
                    "removes those its own runs caused; vf-eval and vf-validate leave them)",
                    observed="written at a fixed /tmp path, never removed", source=where,
                    why=WHY)]
