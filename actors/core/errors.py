"""The exceptions of Export Center, in one place.

The hierarchy::

    ExportCenterError
    ├── ConfigError                  invalid environment variable; start-up stops
    ├── RegistryError                registry file breaks a §10.3 rule (key + rule named)
    ├── ProviderMapError             Provider map file breaks a rule (key + rule named)
    ├── CommandDecodeError           a command body cannot be decoded: poison (§6.4)
    ├── ApiError                     (web/errors.py) an outcome for the HTTP envelope
    ├── DatabaseError                the database failed (subclasses raised by db.database)
    │   ├── TransientDatabaseError   a fault that may pass: retried, a run is handed back
    │   │   └── (db.database) RetryableDatabaseError, ConnectionLostError,
    │   │       CommitUnknownError, DatabaseUnavailableError: one per fault
    │   ├── (db.database) DatabaseAccessError   account or database refused: configuration
    │   └── (db.database) DuplicateKeyError     an INSERT hit a unique key
    ├── TransportError               the command transport failed; never an export's fate
    │   ├── TransportStartError      the transport cannot start; the service does not start
    │   └── TransportSendError       a send did not reach the broker; the outbox row backs off
    ├── RequestError                 the core refuses a request; web maps it to a code
    │   ├── ParameterError           a request field or body breaks a rule
    │   └── Refused                  the caller may not do this (``Refusal`` says why)
    └── ExportError                  something stopped one export run (§9.1)
        ├── PermanentExportError     business error: task FAILED at once, no retry
        │   ├── LimitExceededError   max-rows, 50 MB file size, 100 columns … (§11, §12)
        │   └── ProviderContractError  Provider answered outside the contract (§10.1)
        ├── TransientExportError     dependency error: automatic retry (§9.2)
        │   ├── ProviderUnavailableError  5xx, connect/read timeout (§9.1)
        │   ├── CursorNotAdvancingError   hasMore without an advancing cursor (§10.1)
        │   ├── StorageUnavailableError   storage briefly unavailable
        │   ├── DeadlineExceededError     run passed execution_deadline_at (§8.3.1)
        │   ├── ExportWorkerDiedError     the run's worker process died (killed, crashed)
        │   └── DatabaseExportError       a database error that is not a passing fault
        └── ExportAbortedError       the lease is lost: delete the file, write nothing (§8.3)

Lower-layer errors (urllib3's, OSError, botocore's) are translated into these at the edge
of the pipeline and of storage, so the consumer slot decides the task's fate from the class
alone; whatever else a run raises is classified by :func:`run_failure`.

The database layer raises subclasses of :class:`DatabaseError` in place of its drivers'
errors. Their bases are drawn here because the core imports nothing outside itself: the
actors and the routes catch ``TransientDatabaseError`` without knowing the database.

The message of every :class:`ExportError` becomes a task's ``failure_message`` and a log
line, and often quotes outside text (a Provider's message, a cursor, an exception text).
So the constructor makes it safe once for every raise site: control characters are
escaped and URL credentials redacted (:mod:`actors.core.text`).
"""

from __future__ import annotations

from enum import StrEnum
from typing import ClassVar

from actors.core.db_retry import DbFault
from actors.core.text import escape_control, redact_credentials


class ExportCenterError(Exception):
    """Base of every error this package raises on purpose."""


class ConfigError(ExportCenterError):
    """An environment variable has an invalid value. The message names the variable."""


class RegistryError(ExportCenterError):
    """The registry breaks a validation rule of §10.3.

    Attributes:
        key: the offending YAML key path, e.g. ``definitions.CUSTOMER_LIST.provider-path``.
        rule: the rule broken, in words.
    """

    def __init__(self, key: str, rule: str) -> None:
        super().__init__(f"registry key {key!r}: {rule}")
        self.key = key
        self.rule = rule


class ProviderMapError(ExportCenterError):
    """The Provider map file (``FILE_EXPORT_PROVIDER_MAP``) breaks a rule of
    :mod:`actors.core.provider.provider_map`.

    Attributes:
        key: the offending YAML key path, e.g. ``providers.iam-service.url``.
        rule: the rule broken, in words (never a token's value).
    """

    def __init__(self, key: str, rule: str) -> None:
        super().__init__(f"provider map key {key!r}: {rule}")
        self.key = key
        self.rule = rule


class CommandDecodeError(ExportCenterError):
    """A command message body cannot be decoded or has an unsupported schemaVersion.

    This is the only reason a consumer does not ack a message (§6.4); after the
    redelivery limit the message goes to the dead-letter channel (§9.4).
    """


class DatabaseError(ExportCenterError):
    """Base of the database failures. ``db.database`` defines one subclass per way a
    database can fail and raises it in place of the driver's own exception."""


class TransientDatabaseError(DatabaseError):
    """Base of the database failures that may pass: the store retries them (see
    ``actors.core.db_retry``), actors ride them out with a WARNING, the API answers 503,
    and a run they stop hands its task back without counting the attempt.

    The subclasses, in ``db.database``, one per fault::

        TransientDatabaseError          fault
        ├── RetryableDatabaseError      ROLLED_BACK: the server undid the transaction
        ├── ConnectionLostError         CONNECTION_LOST: dropped before COMMIT was sent
        ├── CommitUnknownError          COMMIT_UNKNOWN: dropped after COMMIT was sent
        └── DatabaseUnavailableError    UNAVAILABLE: no connection can be opened

    ``DatabaseAccessError`` (bad credentials, unknown database) is *not* transient.

    Attributes:
        fault: what the failure means for a retry (set by each subclass).
    """

    fault: ClassVar[DbFault]


class TransportError(ExportCenterError):
    """The command transport (embedded bus or RocketMQ) failed.

    Never decides an export's fate: the database is the source of truth, so a command
    that was not sent is sent again from the outbox, and a task whose command was lost is
    re-dispatched by the reconciler.
    """


class TransportStartError(TransportError):
    """The transport could not be created or started (unreachable name server, bad group,
    …). Raised by ``CommandTransport.start``; the runtime reports it as a
    :class:`ConfigError` and nothing is started."""


class TransportSendError(TransportError):
    """A send did not reach the broker (or the transport is closed). The publisher puts
    the outbox row back with backoff and sends it again; sending never gives up."""


class RequestError(ExportCenterError):
    """Base of the refusals the core decides about a request (its body, its parameters,
    the caller's access). The core names no HTTP or envelope code: ``web/errors.py`` maps
    each class (and ``Refused.reason``) to the envelope code, in one place.

    Attributes:
        message: the refusal in words, shown to the caller as the envelope ``message``.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ParameterError(RequestError):
    """A request field or the request body breaks a rule: malformed JSON, a limit of
    ``parameters``, an unknown export type. Not for access: see :class:`Refused`.

    Attributes:
        field: the offending field as a path, e.g. ``"parameters.k[0]"``, ``"exportType"``,
            or ``"body"`` for the body as a whole.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class Refusal(StrEnum):
    """Why a caller may not do what it asked (:class:`Refused`)."""

    #: The task does not exist, or the caller may not see it (ids do not leak).
    NOT_FOUND = "not_found"
    #: The export type is disabled in the registry.
    DISABLED = "disabled"
    #: The export type belongs to another app than the caller's.
    OUT_OF_SCOPE = "out_of_scope"
    #: The caller lacks the permission the export type requires.
    MISSING_PERMISSION = "missing_permission"
    #: The task's file expired and was deleted: nothing to download any more.
    FILE_EXPIRED = "file_expired"
    #: The task has no file to download (it is not SUCCEEDED).
    NOT_DOWNLOADABLE = "not_downloadable"
    #: The task cannot be retried by hand (it is not FAILED or CANCELLED), or changed
    #: meanwhile.
    NOT_RETRYABLE = "not_retryable"
    #: The task cannot be cancelled: it already ended (SUCCEEDED, FAILED or EXPIRED).
    NOT_CANCELLABLE = "not_cancellable"
    #: Admission: the requester already has the most active tasks allowed.
    USER_LIMIT = "user_limit"
    #: Admission: the export type already has the most active tasks allowed.
    TYPE_LIMIT = "type_limit"
    #: Admission: only the places kept for requesters with no active task of the type
    #: are free, and this requester has one.
    TYPE_RESERVED = "type_reserved"
    #: A manual retry's fenced write matched nothing: the task changed since it was read.
    CHANGED = "changed"
    #: The caller already holds the most progress streams one user may hold.
    STREAMS_PER_USER = "streams_per_user"
    #: The instance already serves the most progress streams it may.
    STREAMS_PER_INSTANCE = "streams_per_instance"


class Refused(RequestError):
    """The caller is known but may not do this (see :class:`Refusal`). A well-formed
    request that breaks no parameter rule; not for a malformed one (:class:`ParameterError`).

    Attributes:
        reason: why, as a :class:`Refusal`.
    """

    def __init__(self, reason: Refusal, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class ExportError(ExportCenterError):
    """Base of the errors that end one export run. ``str(err)`` becomes failure_message.

    Args:
        message: what went wrong, in words. Stored escaped (no CR/LF or other control,
            bidi or surrogate characters) and with URL credentials redacted, so no raise
            site can forge a log line or leak a password through ``failure_message``.
    """

    #: The stable failure code a task stores with the message (``failure_code``): the key
    #: of what people read about it (``actors/core/messages.py``). Each class has its own;
    #: a worker's error crosses the process boundary by class name, so the code does too.
    code: ClassVar[str] = "export-failed"

    def __init__(self, message: str = "") -> None:
        super().__init__(escape_control(redact_credentials(str(message))))


class PermanentExportError(ExportError):
    """A business error: the task goes FAILED at once, with no automatic retry (§9.1)."""


class LimitExceededError(PermanentExportError):
    """A hard limit was hit (max-rows, file size, columns, response size …). The message
    names the limit and its value (§11: "任一超限即 FAILED 并写明具体上限")."""

    code = "limit"


class RowLimitError(LimitExceededError):
    """More rows than the export type's ``max-rows`` (announced or written)."""

    code = "row-limit"


class FileSizeLimitError(LimitExceededError):
    """The file would pass the maximum file size (or the 4 GiB of a zip without Zip64)."""

    code = "size-limit"


class ColumnLimitError(LimitExceededError):
    """More columns than a sheet or the contract allows."""

    code = "column-limit"


class ProviderContractError(PermanentExportError):
    """The Provider answered a well-formed HTTP response that breaks the contract: a
    business error code, a changed ``schemaHash``, an invalid snapshot token, malformed
    columns (§10.1, §10.2)."""

    code = "provider-contract"


class ProviderRefusedError(ProviderContractError):
    """The Provider answered its envelope with a business error code (not ``"200"``): it
    refused the request as asked, most often a parameter value it does not accept."""

    code = "provider-refused"


class TransientExportError(ExportError):
    """A dependency error worth retrying with backoff (§9.1, §9.2)."""


class ProviderUnavailableError(TransientExportError):
    """Provider 5xx, connect timeout or read timeout (§9.1)."""

    code = "provider-unavailable"


class CursorNotAdvancingError(TransientExportError):
    """``hasMore`` is true but the export makes no progress: ``nextCursor`` is empty, did
    not advance, repeats a cursor already sent in this run (a cycle), or too many empty
    batches came in a row (§10.1).

    Transient, as the seed classifies it: a Provider may read a moving index mid-update,
    and a new attempt starts from a fresh snapshot. The run stops at the first breach
    rather than at the deadline, and the retries are bounded by ``max-attempts``."""

    code = "provider-stuck"


class StorageUnavailableError(TransientExportError):
    """The storage could not be written or read for a reason that may pass (§9.1)."""

    code = "storage-unavailable"


class DeadlineExceededError(TransientExportError):
    """The run passed ``execution_deadline_at`` (§8.3.1). Counted as transient; the
    message names the limit, e.g. "execution exceeded the maximum duration of 30 minutes"."""

    code = "deadline"


class ExportWorkerDiedError(TransientExportError):
    """The worker process that decodes and writes this run's file died under it: killed
    by a signal (the OOM killer, an operator), crashed in native code, or exited. The
    message names how it died and what it was doing, e.g. "export worker process died
    (SIGKILL) while writing batch 3".

    Transient: the process, not the export, failed, and the next attempt gets a new one.
    Not raised when the run itself stops its worker (a lost lease, the deadline, a
    shutdown): those are :class:`ExportAbortedError` / :class:`DeadlineExceededError`."""

    code = "worker-died"


class DatabaseExportError(TransientExportError):
    """A database error that is not a passing fault stopped a run (the account or the
    database was refused mid-run: ``DatabaseAccessError``). Retried like any transient
    export failure, so a database that is fixed meanwhile finishes the task."""

    code = "database"


class ExportAbortedError(ExportError):
    """The run lost its lease (renewal matched 0 rows) or was cancelled. The executor
    deletes its partial file and writes nothing else (§8.3, docs/design-rules.md §8.4)."""

    code = "aborted"


def export_error_classes() -> dict[str, type[ExportError]]:
    """:class:`ExportError` and every subclass, by class name: how an error crosses a
    process boundary (the export worker reports a class name) and how a stored class
    name finds its ``code``. A new class is found without a list to keep in step."""
    found: dict[str, type[ExportError]] = {}
    todo: list[type[ExportError]] = [ExportError]
    while todo:
        cls = todo.pop()
        found[cls.__name__] = cls
        todo.extend(cls.__subclasses__())
    return found


def run_failure(exc: Exception) -> ExportError | TransientDatabaseError:
    """The error a run that raised ``exc`` is settled with: the edge of the pipeline,
    where everything a run can raise gets a class of the tree above.

    Args:
        exc: what the run (``actors.pipeline.runner``) raised.

    Returns:
        * an :class:`ExportError` as raised: the pipeline classified it already;
        * a :class:`TransientDatabaseError` as raised: the database, not the export,
          failed, and the consumer hands the task back without counting the attempt;
        * any other :class:`DatabaseError` as a :class:`DatabaseExportError` (transient);
        * anything else — a bug — as a :class:`TransientExportError` naming the
          exception, so that a bug cannot strand the task; the caller logs its traceback.
    """
    if isinstance(exc, ExportError | TransientDatabaseError):
        return exc
    if isinstance(exc, DatabaseError):
        return DatabaseExportError(f"database error: {type(exc).__name__}: {exc}")
    return TransientExportError(f"internal error: {type(exc).__name__}: {exc}")


def sole_exception(group: BaseExceptionGroup) -> BaseException:
    """The single leaf of a (nested) exception group, or the group itself.

    trio nurseries wrap whatever their children raise; callers that classify failures
    by class (``PermanentExportError`` …) want the plain exception when there is one.
    """
    exc: BaseException = group
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc
