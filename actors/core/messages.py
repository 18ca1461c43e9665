"""What people read about a task: one catalogue, in English and Simplified Chinese.

A task's ``failure_message`` is technical text for operators ("provider demo-service
answered code 400: …"); a person who only wants a file needs to know what happened and what
to do. This catalogue gives that, keyed by stable codes the service stores or derives:

* a failure's ``failure_code`` (``ExportError.code``, or the code a transition writes:
  ``cancelled``, ``worker-lost`` …), with the :class:`Remedy` that may help;
* a history event's kind (``actors/core/events.py``);
* a data warning's kind (``actors/core/data_warning.py``);
* an API refusal's envelope code (``web/errors.py``).

Every reader takes its words from here: the API's task JSON (``failureReason``,
``remedy``), the page (``GET /i18n/{language}.json``, :func:`catalogue_json`) and the
CLI's ``tasks show``. Machines keep the codes and the English; the technical text stays
beside it, one click away on the page.

Plain data and functions: no IO.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from actors.core.data_warning import WarningKind
from actors.core.errors import export_error_classes
from actors.core.health import ComponentHealth

__all__ = [
    "FAILURE_CODES",
    "LANGUAGES",
    "WARNING_KINDS",
    "Explanation",
    "Remedy",
    "catalogue_json",
    "waiting_notice",
    "explain_failure",
    "failure_code",
]

#: The languages of the catalogue, as BCP 47 tags; the first is the fallback.
LANGUAGES = ("en", "zh-CN")


class Remedy(StrEnum):
    """What may help a failed or cancelled export, i.e. which action the page offers."""

    #: Another run may succeed unchanged (a dependency was down): "Retry".
    RETRY = "retry"
    #: The same request fails the same way: "Edit and export again", the form prefilled.
    EDIT = "edit"
    #: Only the owners of the export type can fix it: quote the task number to support.
    SUPPORT = "support"


@dataclass(frozen=True, slots=True)
class Explanation:
    """One failure in plain words.

    Attributes:
        code: the stable failure code.
        remedy: what may help.
        en: what happened and what to do, in English (the API's ``failureReason``; the
            page reads the person's language from :func:`catalogue_json`).
    """

    code: str
    remedy: Remedy
    en: str


_R, _E, _S = Remedy.RETRY, Remedy.EDIT, Remedy.SUPPORT
#: A failure's words in one language: (what happened, what to do).
Words = tuple[str, str]

#: Failure code → (remedy, English, Chinese); each language's words are (what happened,
#: what to do). While the service retries by itself the page shows what happened alone:
#: "try again later" would tell a person to do what the service is already doing.
_FAILURES: dict[str, tuple[Remedy, Words, Words]] = {
    "row-limit": (
        _E,
        (
            "The export has more rows than this export type allows.",
            (
                "Narrow the filters (a shorter period, fewer statuses) or split it into several "
                "exports, then export again."
            ),
        ),
        (
            "导出的行数超过了该导出类型允许的上限。",
            "请缩小筛选范围（更短的时间段、更少的状态），或拆分成几次导出，然后重新导出。",
        ),
    ),
    "size-limit": (
        _E,
        (
            "The file would be larger than the service allows.",
            "Narrow the filters so that fewer rows are exported, then export again.",
        ),
        (
            "文件大小超过了服务允许的上限。",
            "请缩小筛选范围以减少导出的行数，然后重新导出。",
        ),
    ),
    "column-limit": (
        _S,
        (
            "The data has more columns than a spreadsheet can hold.",
            (
                "Retrying will not help: tell support the task number, so the team that owns this "
                "export can fix it."
            ),
        ),
        (
            "数据的列数超过了表格能容纳的上限，重试无法解决。",
            "请把任务编号告诉技术支持，由负责该导出的团队修复。",
        ),
    ),
    "limit": (
        _S,
        (
            "The data source sent more than the service accepts.",
            "Retrying will not help: tell support the task number.",
        ),
        (
            "数据来源返回的内容超过了服务接受的上限，重试无法解决。",
            "请把任务编号告诉技术支持。",
        ),
    ),
    "provider-refused": (
        _E,
        (
            "The data source refused this request, most often because of a filter value.",
            "Check the filters and export again; the details show what it answered.",
        ),
        (
            "数据来源拒绝了这次请求，通常是某个筛选条件的取值不被接受。",
            "请检查筛选条件后重新导出；详情中有数据来源的原始答复。",
        ),
    ),
    "provider-contract": (
        _S,
        (
            "The data source answered in a way the service cannot use.",
            (
                "Retrying will not help: tell support the task number, so the team that owns this "
                "export can fix it."
            ),
        ),
        (
            "数据来源的答复格式有误，服务无法使用，重试无法解决。",
            "请把任务编号告诉技术支持，由负责该导出的团队修复。",
        ),
    ),
    "provider-unavailable": (
        _R,
        (
            "The data source could not be reached or did not answer in time.",
            "Try again later; if it keeps failing, tell support the task number.",
        ),
        (
            "无法连接数据来源，或其未能及时答复。",
            "请稍后重试；如果一直失败，请把任务编号告诉技术支持。",
        ),
    ),
    "provider-stuck": (
        _R,
        (
            "The data source kept sending the same data without moving on.",
            "Try again later; if it keeps failing, tell support the task number.",
        ),
        (
            "数据来源反复发送相同的数据而没有继续。",
            "请稍后重试；如果一直失败，请把任务编号告诉技术支持。",
        ),
    ),
    "storage-unavailable": (
        _R,
        (
            "The file could not be saved.",
            "Try again later.",
        ),
        (
            "文件未能保存。",
            "请稍后重试。",
        ),
    ),
    "deadline": (
        _E,
        (
            "The export took longer than the service allows.",
            "Narrow the filters so that fewer rows are exported, then export again.",
        ),
        (
            "导出耗时超过了服务允许的上限。",
            "请缩小筛选范围以减少导出的行数，然后重新导出。",
        ),
    ),
    "worker-died": (
        _R,
        (
            "The process writing the file stopped unexpectedly.",
            "Try again; if it happens again, tell support the task number.",
        ),
        (
            "写入文件的进程意外停止。",
            "请重试；如果再次发生，请把任务编号告诉技术支持。",
        ),
    ),
    "database": (
        _R,
        (
            "The service's database was unavailable during the export.",
            "Try again later.",
        ),
        (
            "导出期间服务的数据库不可用。",
            "请稍后重试。",
        ),
    ),
    "handed-back": (
        _R,
        (
            (
                "The export was interrupted several times (the service was restarting or its "
                "database was unavailable)."
            ),
            "Try again.",
        ),
        (
            "导出多次被中断（服务正在重启或其数据库不可用）。",
            "请重试。",
        ),
    ),
    "worker-lost": (
        _R,
        (
            "The server running the export stopped responding.",
            "Try again.",
        ),
        (
            "运行导出的服务器停止了响应。",
            "请重试。",
        ),
    ),
    "cancelled": (
        _R,
        (
            "The export was cancelled.",
            "Start it again if you still need the file.",
        ),
        (
            "导出已取消。",
            "如果仍需要该文件，请重新开始。",
        ),
    ),
    "command-corrupted": (
        _R,
        (
            "The service could not read its own instruction for this export.",
            "Start it again.",
        ),
        (
            "服务无法读取这次导出的内部指令。",
            "请重新开始导出。",
        ),
    ),
    "export-failed": (
        _R,
        (
            "The export failed unexpectedly.",
            "Try again; if it fails again, tell support the task number.",
        ),
        (
            "导出意外失败。",
            "请重试；如果再次失败，请把任务编号告诉技术支持。",
        ),
    ),
}

#: Every failure code, in catalogue order.
FAILURE_CODES: tuple[str, ...] = tuple(_FAILURES)

#: The code of a failure nothing more precise is known of (and of failures stored before
#: codes were).
FALLBACK_CODE = "export-failed"


#: The code of each export error class, by class name (the tree is fixed at import).
_ERROR_CODES = {name: cls.code for name, cls in export_error_classes().items()}


def failure_code(error_class: str | None) -> str:
    """The stable failure code of an error, by its class name.

    Args:
        error_class: e.g. ``"RowLimitError"`` (``actors.core.events.error_class``), or
            ``None``.

    Returns:
        The class's :attr:`~actors.core.errors.ExportError.code`; :data:`FALLBACK_CODE`
        for ``None`` and for a class outside the export error tree.
    """
    if error_class is None:
        return FALLBACK_CODE
    return _ERROR_CODES.get(error_class, FALLBACK_CODE)


def explain_failure(code: str | None) -> Explanation:
    """The plain words for failure ``code``; an unknown or missing code (a task failed
    before codes were stored) gets those of :data:`FALLBACK_CODE`."""
    known = code if code in _FAILURES else FALLBACK_CODE
    remedy, (happened, todo), _ = _FAILURES[known]
    return Explanation(known, remedy, f"{happened} {todo}")


#: History event kind → (English, Chinese): what a person reads in a task's history.
_EVENTS: dict[str, tuple[str, str]] = {
    "created": ("Export requested", "已提交导出"),
    "dispatched": ("Queued for a worker", "已排队等待执行"),
    "claimed": ("Started", "开始导出"),
    "attempt_failed": ("Attempt failed", "本次尝试失败"),
    "retry_scheduled": ("Will retry automatically", "将自动重试"),
    # retry_scheduled with manual: true (a person chose Retry): told apart on the page.
    "retry_requested": ("Retry requested", "已请求重试"),
    "handed_back": ("Paused and queued again", "已暂停并重新排队"),
    "lease_recovered": ("Restarted after a server stopped responding", "服务器无响应，已重新开始"),
    "cancelled": ("Cancelled", "已取消"),
    "succeeded": ("File ready", "文件已就绪"),
    "downloaded": ("Downloaded", "已下载"),
    "expired": ("File deleted when its retention ended", "文件已过保留期并删除"),
    "quarantined": ("Stopped: its instruction could not be read", "已停止：无法读取其内部指令"),
}

#: Data warning kind (``actors/core/data_warning.py``) → (English, Chinese): an unobtrusive
#: note on a ready file.
_WARNINGS: dict[str, tuple[str, str]] = {
    WarningKind.TRUNCATED_CELLS: (
        "Some cells were longer than a spreadsheet cell can hold and were shortened.",
        "部分单元格内容超过表格单元格的长度上限，已被截断。",
    ),
    WarningKind.INVALID_VALUES: (
        "Some values did not match their column's type and were written as text.",
        "部分值与所在列的类型不符，已按文本写入。",
    ),
    WarningKind.UNDECLARED_FIELDS: (
        "The data source sent fields the export does not list; they were left out.",
        "数据来源发送了导出未列出的字段，这些字段已被忽略。",
    ),
    WarningKind.FEWER_ROWS: (
        "The data source sent fewer rows than it first estimated (rows may have changed"
        " meanwhile); the file holds every row it sent.",
        "数据来源实际发送的行数少于最初的估计（期间数据可能有变动）；文件包含它发送的全部行。",
    ),
    WarningKind.NOTE: ("The data source added a note.", "数据来源附加了说明。"),
}

#: Why new exports wait (the list's ``waiting.reason``) → (English, Chinese).
_NOTICES: dict[str, tuple[str, str]] = {
    "storage-unavailable": (
        "New exports are waiting: the file storage cannot be reached right now. They start"
        " by themselves as soon as it is back; nothing needs to be done again.",
        "新的导出正在等待：暂时无法连接文件存储。存储恢复后会自动开始，无需重新操作。",
    ),
}

#: Every data warning kind.
WARNING_KINDS: tuple[str, ...] = tuple(kind.value for kind in WarningKind)

#: API refusal envelope code → (English, Chinese): a banner's first line; the API's own
#: message, which names the field or limit, follows as its detail.
_REFUSALS: dict[str, tuple[str, str]] = {
    "400": ("Something in the request needs to change.", "请求中有内容需要修改。"),
    "401": ("Please sign in again.", "请重新登录。"),
    "403": ("You may not do this.", "你没有权限执行此操作。"),
    "404": ("This export was not found.", "未找到这个导出。"),
    "409": (
        "This export has changed meanwhile; the list shows it now.",
        "该导出刚刚发生了变化，列表已更新。",
    ),
    "410": ("The file has expired and was deleted.", "文件已过期并被删除。"),
    "413": ("The request is too large.", "请求内容过大。"),
    "429": (
        "Too many exports at once. Wait for one to finish, then try again.",
        "同时进行的导出太多。请等其中一个完成后再试。",
    ),
    "503": (
        "The service is busy or briefly unavailable. Try again in a moment.",
        "服务繁忙或暂时不可用。请稍后再试。",
    ),
}


def _pick(texts: dict[str, tuple[str, str]], language: str) -> dict[str, str]:
    index = LANGUAGES.index(language)
    return {key: pair[index] for key, pair in texts.items()}


def _sentence(words: Words, language: str) -> str:
    """What happened and what to do as one text: with a space between the sentences in
    English, none in Chinese."""
    return words[0] + (" " if language == "en" else "") + words[1]


def catalogue_json(language: str) -> dict[str, Any]:
    """The catalogue in one language, as the page loads it (``GET /i18n/{language}.json``).

    Args:
        language: one of :data:`LANGUAGES`.

    Returns:
        ``{"language", "failures": {code: text}, "causes": {code: what happened},
        "events": {kind: text},
        "warnings": {kind: text}, "refusals": {code: text}, "notices": {reason: text}}``.
        What may help a failure is
        the task's own ``remedy`` (the task JSON), not repeated here.

    Raises:
        ValueError: ``language`` is not one of :data:`LANGUAGES`.
    """
    if language not in LANGUAGES:
        raise ValueError(f"language {language!r} is not one of {', '.join(LANGUAGES)}")
    index = LANGUAGES.index(language)
    return {
        "language": language,
        "failures": {
            code: _sentence(texts[index], language) for code, (_, *texts) in _FAILURES.items()
        },
        "causes": {code: texts[index][0] for code, (_, *texts) in _FAILURES.items()},
        "events": _pick(_EVENTS, language),
        "warnings": _pick(_WARNINGS, language),
        "refusals": _pick(_REFUSALS, language),
        "notices": _pick(_NOTICES, language),
    }


def waiting_notice(storage: ComponentHealth) -> dict[str, str] | None:
    """Why new exports wait, for the task list (``waiting``), or ``None`` when they do not.

    The claim gate claims only while the storage is known to work
    (``actors/supervised/claim_gate.py``): a storage this instance found down means queued
    exports wait. One not probed yet (just after start) is not reported: it is a second.

    Args:
        storage: the storage's health as this instance last saw it.

    Returns:
        ``{"reason": "storage-unavailable", "message": <English>}`` or ``None``.
    """
    if storage.up is not False:
        return None
    reason = "storage-unavailable"
    return {"reason": reason, "message": _NOTICES[reason][0]}
