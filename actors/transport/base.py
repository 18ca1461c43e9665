"""Old home of the command transport interface; it now lives in :mod:`actors.core.ports`.

Kept only so branches written before the move keep importing; new code imports
``actors.core.ports`` and ``actors.core.errors``.
"""

from actors.core.errors import TransportSendError
from actors.core.ports import CommandTransport, Delivery, OutgoingMessage

__all__ = ["CommandTransport", "Delivery", "OutgoingMessage", "TransportSendError"]
