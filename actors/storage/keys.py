"""A fresh object key for one attempt: the core's rule (:mod:`actors.core.object_keys`)
with a random nonce drawn here, at the edge, so the core stays free of randomness."""

from __future__ import annotations

import uuid

from actors.core.object_keys import object_key


def new_object_key(task_id: int) -> str:
    """A key ``exports/{task_id}/{uuid4 hex}.xlsx`` no attempt has used."""
    return object_key(task_id, uuid.uuid4().hex)
