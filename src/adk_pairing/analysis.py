"""The ledger's former front, kept importable: it lives in `adk_pairing.ledger`.

`build_ledger`, `analyze`, `PairingReport` and `held_open_call_ids` are in
`adk_pairing.ledger.history`; the rest are the ledger's own names.
"""

from __future__ import annotations

from . import ledger
from .ledger import *  # noqa: F403 - every name the ledger exports, under the old path
from .wire import branch_shows, held_by_child

__all__ = [*ledger.__all__, "branch_shows", "held_by_child"]
