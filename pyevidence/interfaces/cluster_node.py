"""``pyevidence node``: runs one node of a cluster, the C program evidence_node.

The program is not built into the Python package: it links libdqlite, which a
wheel cannot assume, and only the machines that run a node need it. ``make node``
builds it into build/evidence_node of the source tree (Debian/Ubuntu: apt-get
install libdqlite-dev first). It is looked for, in order, at:

1. ``$PYEVIDENCE_NODE``, a path to the program;
2. build/evidence_node next to the package (an editable install of the source tree);
3. ``evidence_node`` on ``PATH`` (copy it there to run nodes from any install).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from ..core.errors import EngineUnavailableError

PROGRAM = "evidence_node"
# Its options; the program's own --help describes each (csrc/node/evidence_node.c).
SYNOPSIS = "--id N --address HOST:PORT --data DIR [--new-cluster | --join HOST:PORT ...] [--latency-ms MS]"
# It runs no node then: it lists the members (evidence_members.c), or removes member N, which is
# down, from the cluster (evidence_remove.c).
MEMBERS_SYNOPSIS = "--members --cluster HOST:PORT ..."
REMOVE_SYNOPSIS = "--remove N --cluster HOST:PORT ..."


# Where 'make node' puts it, in the checkout an editable install runs from (pyevidence/interfaces/
# is two folders below the checkout's root).
BUILT = Path(__file__).resolve().parents[2] / "build" / PROGRAM


# What to do when the program named cannot be run.
_HOW = (
    f"PYEVIDENCE_NODE must name the {PROGRAM} program, which 'make node' in the pyevidence source tree "
    f"builds as build/{PROGRAM}"
)


def node_program() -> str:
    """The path of evidence_node, or EngineUnavailableError saying how to build it."""
    override = os.environ.get("PYEVIDENCE_NODE")
    if override:
        # os.access(X_OK) alone takes a directory, which execv then refuses (EACCES, no path)
        why = (
            "no such file" if not os.path.exists(override)
            else "a directory" if os.path.isdir(override)
            else "not a file" if not os.path.isfile(override)
            else "not executable by this user" if not os.access(override, os.X_OK)
            else ""
        )  # fmt: skip
        if why:
            raise EngineUnavailableError(
                f"PYEVIDENCE_NODE={override} is not an executable program ({why}); {_HOW}"
            )
        return override
    if os.access(BUILT, os.X_OK):
        return str(BUILT)
    on_path = shutil.which(PROGRAM)
    if on_path:
        return on_path
    raise EngineUnavailableError(
        f"{PROGRAM}, the cluster node program, is not built: in the pyevidence source tree run "
        "'make node' (it needs libdqlite's headers: apt-get install libdqlite-dev), then put "
        f"build/{PROGRAM} on PATH or name it in PYEVIDENCE_NODE"
    )


def exec_node(args: Sequence[str]) -> None:
    """Replaces this process with the node program, so signals (SIGTERM) reach it directly."""
    program = node_program()
    try:
        os.execv(program, [program, *args])
    except OSError as exc:  # a file that is not a program (ENOEXEC), or for another machine
        if os.environ.get("PYEVIDENCE_NODE"):
            raise EngineUnavailableError(
                f"PYEVIDENCE_NODE={program} could not be run ({exc.strerror}); {_HOW}"
            ) from None
        raise EngineUnavailableError(
            f"{program} could not be run ({exc.strerror}): build it again with 'make node' in the "
            f"pyevidence source tree, or name a {PROGRAM} program in PYEVIDENCE_NODE"
        ) from None
