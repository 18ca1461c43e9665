// @ts-check
// The page's words in English and Simplified Chinese, and the person's locale for dates,
// numbers and sizes (locale.js, in the page's language). The service's own messages (failures, warnings, history events,
// refusals) come from its catalogue (GET /i18n/{language}.json, actors/core/messages.py);
// these are the page's labels. The language is the one picked with the page's switch, else
// the browser's first one we have.
"use strict";

import * as locale from "./locale.js";

export const LANGUAGES = { en: "English", "zh-CN": "中文" };
const STORED = "export-center-language";

const EN = {
  title: "Downloads",
  pageTitle: "Export Center — downloads",
  skip: "Skip to the exports",
  language: "Language",
  signOut: "Sign out",
  signInHeading: "Sign in",
  signInHelp: "Paste the access token you were given. Trying the service out? The file var/demo-admin-token holds one. You stay signed in until it expires or you sign out.",
  token: "Access token",
  companyHelp: "Sign in with the account you use at work.",
  signInWith: "Sign in with {name}",
  signInCompany: "Sign in with your company account",
  companyAccount: "your company account",
  problemRefused: "Signing in did not finish: it was cancelled or refused at {name}. Please try again.",
  problemNotStarted: "Signing in took too long, or was started in another browser. Please sign in again.",
  problemState: "A sign-in answer that did not belong to this browser was ignored. Please sign in again.",
  problemCode: "Signing in could not be completed: its one-time code was already used or had expired. Please sign in again.",
  problemToken: "Your account was recognised, but it does not have access to the download center yet. Ask your administrator to give you access.",
  problemUnreachable: "The sign-in service cannot be reached right now. Please try again in a moment.",
  draftKept: "Signed in again: your new export is as you left it.",
  signIn: "Sign in",
  who: "Signed in as {name}",
  whoAdmin: "Signed in as {name} · administrator: you see every export of your tenant",
  user: "user {id}",
  listMine: "Your exports",
  listAll: "All exports of your tenant",
  newExport: "New export",
  close: "Close",
  exportType: "Export type",
  format: "Format",
  name: "Name",
  optional: " (optional)",
  parameters: "Filters of the export",
  otherParameters: "Other parameters (JSON)",
  otherParametersHelp: "Parameters as a JSON object; the fields above win",
  export: "Export",
  atMostRows: "At most {rows} rows per export.",
  noTypes: "There is no export type you may request.",
  typesFailed: "The export types could not be loaded.",
  any: "Any",
  choose: "— any —",
  yes: "Yes",
  filters: "Filters",
  filtersOn: "Filters ({count} on)",
  status: "Status",
  requestedFrom: "Requested from",
  requestedTo: "Requested until",
  dayIncluded: " (that day included)",
  requestedBy: "Requested by (user id)",
  onlyBy: "Show only the exports of {name}",
  apply: "Apply filters",
  clear: "Clear filters",
  colExport: "Export",
  colRequester: "Requested by",
  colStatus: "Status",
  colProgress: "Progress",
  colRequested: "Requested",
  colFile: "File",
  colActions: "Actions",
  caption: "Exports, newest first",
  total: "{count} exports",
  totalOne: "1 export",
  totalMore: "more than {count} exports",
  page: "Page {page} of {pages}",
  pageMany: "Page {page} of many",
  newer: "Previous",
  older: "Next",
  pages: "Pages",
  empty: "No exports yet. Choose “New export” to make your first file.",
  emptyFiltered: "No exports match these filters.",
  live: "Progress is live.",
  connecting: "Connecting to live progress…",
  polling: "Live progress unavailable: refreshing every second while an export runs.",
  queued: "Queued",
  retrying: "Retrying",
  running: "Running",
  succeeded: "Ready",
  failed: "Failed",
  cancelled: "Cancelled",
  expired: "Expired",
  filterPending: "Queued or retrying",
  waiting: "Waiting for a free worker",
  starting: "Starting",
  noRows: "No rows matched the filters: the file has only the header row.",
  rowsOf: "{done} of {total} rows",
  rowsDone: "{done} rows",
  percent: "{percent}%",
  rate: "{rate} rows/s",
  left: "about {time} left",
  attempt: "Attempt {attempt} of {max}",
  lastError: "Last attempt: {reason}",
  dueNow: "starting now",
  queuedAgain: "Queued again after a retry",
  fileGone: "The file was deleted when its retention ended.",
  expires: "expires {when}",
  took: "took {time}",
  details: "Details",
  technicalDetails: "Technical details",
  you: "you",
  announce: "{name}: {state}.",
  tookUnderSecond: "took under a second",
  alreadyDone: "“{name}” had already finished before the cancel arrived: its file is ready.",
  taskNumber: "Task number",
  traceId: "Trace id",
  technical: "Technical message",
  quote: "To ask support, quote the task number and trace id.",
  download: "Download",
  cancel: "Stop",
  retry: "Retry",
  edit: "Edit and export again",
  again: "Export again",
  againOf: "Export {name} again",
  history: "History",
  downloadOf: "Download {name}",
  cancelOf: "Stop {name}",
  stopHeading: "Stop this export?",
  notifyMe: "Notify me when an export finishes",
  noticeReady: "“{name}” is ready",
  noticeReadyBody: "Its file can be downloaded from the download center.",
  noticeFailed: "“{name}” failed",
  noticeFailedBody: "The download center says what happened and what to do.",
  stopQuestion: "“{name}” stops and no file is made. You can retry it later from the list.",
  keepRunning: "Keep it running",
  stopExport: "Stop export",
  retryOf: "Retry {name}",
  editOf: "Edit and export {name} again",
  historyOf: "History of {name}",
  progressOf: "Progress of {name}",
  warningsOf: "Notes",
  accepted: "Export “{name}” accepted. It is at the top of the list.",
  duplicate: "You asked for the same export a moment ago: “{name}” is already on its way. Its row is highlighted.",
  cancelledBanner: "Export “{name}” cancelled.",
  retried: "Export “{name}” queued again (attempt 1 of {max}).",
  downloading: "Downloading {file}.",
  signedOut: "Signed out.",
  badDates: "The “Requested from” date is after the “Requested until” date.",
  required: "“{field}” is required.",
  wholeNumber: "“{field}” must be a whole number.",
  number: "“{field}” must be a number.",
  badJson: "Other parameters are not valid JSON.",
  notObject: "Other parameters must be a JSON object, e.g. {\"status\": \"ACTIVE\"}.",
  historyHeading: "History",
  loading: "Loading…",
  olderEvents: "Older events are not shown.",
  noEvents: "No events recorded.",
  by: "by {who}",
  eventAttempt: "attempt {attempt}",
  eventRows: "{rows} rows, {size}",
  eventTook: "in {time}",
  eventRetryAt: "next attempt {when}",
  failedRequest: "The request failed.",
  tokenRejected: "The token was rejected: paste a new one.",
  sessionEnded: "Your session has ended: please sign in again.",
};

/** @typedef {keyof typeof EN} WordKey  One of the page's words. */
/** @typedef {"en" | "zh-CN"} Language */

// Words missing here read in English; a key English does not have fails the type check.
/** @type {Partial<Record<WordKey, string>>} */
const ZH = {
  title: "下载中心",
  pageTitle: "导出中心 — 下载",
  skip: "跳到导出列表",
  language: "语言",
  signOut: "退出登录",
  signInHeading: "登录",
  signInHelp: "粘贴你拿到的访问令牌。只是试用？文件 var/demo-admin-token 里就有一个。在令牌过期或退出登录之前，你会一直保持登录。",
  token: "访问令牌",
  companyHelp: "使用你的工作账号登录。",
  signInWith: "使用 {name} 登录",
  signInCompany: "使用公司账号登录",
  companyAccount: "公司账号",
  problemRefused: "登录没有完成：已在 {name} 取消或被拒绝。请重试。",
  problemNotStarted: "登录用时过长，或是在另一个浏览器中开始的。请重新登录。",
  problemState: "收到一个不属于本浏览器的登录应答，已忽略。请重新登录。",
  problemCode: "登录无法完成：一次性登录码已被使用或已过期。请重新登录。",
  problemToken: "已识别你的账号，但你还没有下载中心的访问权限。请联系管理员为你开通。",
  problemUnreachable: "登录服务暂时无法连接。请稍后再试。",
  draftKept: "已重新登录：新建导出的内容已为你保留。",
  signIn: "登录",
  who: "当前用户：{name}",
  whoAdmin: "当前用户：{name} · 管理员：可查看本租户的全部导出",
  user: "用户 {id}",
  listMine: "我的导出",
  listAll: "本租户的全部导出",
  newExport: "新建导出",
  close: "关闭",
  exportType: "导出类型",
  format: "格式",
  name: "名称",
  optional: "（可选）",
  parameters: "导出的筛选条件",
  otherParameters: "其他参数（JSON）",
  otherParametersHelp: "以 JSON 对象填写参数；与上方字段重复时以上方为准",
  export: "导出",
  atMostRows: "每次导出最多 {rows} 行。",
  noTypes: "没有你可以申请的导出类型。",
  typesFailed: "无法加载导出类型。",
  any: "全部",
  choose: "— 全部 —",
  yes: "是",
  filters: "筛选",
  filtersOn: "筛选（已启用 {count} 项）",
  status: "状态",
  requestedFrom: "提交日期从",
  requestedTo: "提交日期至",
  dayIncluded: "（含当天）",
  requestedBy: "提交人（用户 ID）",
  onlyBy: "只看 {name} 的导出",
  apply: "应用筛选",
  clear: "清除筛选",
  colExport: "导出",
  colRequester: "提交人",
  colStatus: "状态",
  colProgress: "进度",
  colRequested: "提交时间",
  colFile: "文件",
  colActions: "操作",
  caption: "导出列表，最新的在前",
  total: "共 {count} 个导出",
  totalOne: "共 1 个导出",
  totalMore: "超过 {count} 个导出",
  page: "第 {page} 页，共 {pages} 页",
  pageMany: "第 {page} 页，共多页",
  newer: "上一页",
  older: "下一页",
  pages: "分页",
  empty: "还没有导出。点击“新建导出”生成第一个文件。",
  emptyFiltered: "没有符合这些筛选条件的导出。",
  live: "进度实时更新中。",
  connecting: "正在连接实时进度…",
  polling: "实时进度不可用：导出进行时每秒刷新一次。",
  queued: "排队中",
  retrying: "等待重试",
  running: "导出中",
  succeeded: "已就绪",
  failed: "失败",
  cancelled: "已取消",
  expired: "已过期",
  filterPending: "排队或等待重试",
  waiting: "等待空闲的执行器",
  starting: "正在开始",
  noRows: "没有符合筛选条件的数据：文件只有表头。",
  rowsOf: "{done} / {total} 行",
  rowsDone: "{done} 行",
  percent: "{percent}%",
  rate: "每秒 {rate} 行",
  left: "约剩 {time}",
  attempt: "第 {attempt} 次尝试，共 {max} 次",
  lastError: "上次尝试：{reason}",
  dueNow: "即将开始",
  queuedAgain: "重试后重新排队",
  fileGone: "文件已在保留期结束时删除。",
  expires: "{when}过期",
  took: "耗时 {time}",
  details: "详情",
  technicalDetails: "技术详情",
  you: "你",
  announce: "{name}：{state}。",
  tookUnderSecond: "耗时不到 1 秒",
  alreadyDone: "“{name}”在取消前已经完成：文件已就绪。",
  taskNumber: "任务编号",
  traceId: "追踪 ID",
  technical: "技术信息",
  quote: "联系技术支持时，请提供任务编号和追踪 ID。",
  download: "下载",
  cancel: "停止",
  retry: "重试",
  edit: "修改后重新导出",
  again: "重新导出",
  againOf: "重新导出 {name}",
  history: "历史",
  downloadOf: "下载 {name}",
  cancelOf: "停止 {name}",
  stopHeading: "停止这个导出？",
  notifyMe: "导出完成时通知我",
  noticeReady: "“{name}”已就绪",
  noticeReadyBody: "可以在下载中心下载文件。",
  noticeFailed: "“{name}”失败了",
  noticeFailedBody: "下载中心说明了原因和处理办法。",
  stopQuestion: "“{name}”将停止，不会生成文件。之后可以在列表中重试。",
  keepRunning: "继续导出",
  stopExport: "停止导出",
  retryOf: "重试 {name}",
  editOf: "修改后重新导出 {name}",
  historyOf: "{name} 的历史",
  progressOf: "{name} 的进度",
  warningsOf: "说明",
  accepted: "导出“{name}”已提交，显示在列表顶部。",
  duplicate: "你刚刚提交过相同的导出：“{name}”已在进行中，已为你高亮该行。",
  cancelledBanner: "导出“{name}”已取消。",
  retried: "导出“{name}”已重新排队（第 1 次尝试，共 {max} 次）。",
  downloading: "正在下载 {file}。",
  signedOut: "已退出登录。",
  badDates: "“提交日期从”晚于“提交日期至”。",
  required: "请填写“{field}”。",
  wholeNumber: "“{field}”必须是整数。",
  number: "“{field}”必须是数字。",
  badJson: "其他参数不是有效的 JSON。",
  notObject: "其他参数必须是 JSON 对象，例如 {\"status\": \"ACTIVE\"}。",
  historyHeading: "历史",
  loading: "加载中…",
  olderEvents: "更早的事件未显示。",
  noEvents: "没有记录的事件。",
  by: "操作人 {who}",
  eventAttempt: "第 {attempt} 次尝试",
  eventRows: "{rows} 行，{size}",
  eventTook: "耗时 {time}",
  eventRetryAt: "下次尝试 {when}",
  failedRequest: "请求失败。",
  tokenRejected: "令牌被拒绝：请粘贴新的令牌。",
  sessionEnded: "会话已结束：请重新登录。",
};

/** @type {Record<Language, Partial<Record<WordKey, string>>>} */
const WORDS = { en: EN, "zh-CN": ZH };
/** @type {Language} */
let current = "en";
/**
 * @typedef {object} Catalogue  The service's words in one language (GET /i18n/{language}.json).
 * @property {Record<string, string>} failures  By failure code.
 * @property {Record<string, string>} causes  By failure code: what happened, without what
 *   to do (shown while the service retries by itself).
 * @property {Record<string, string>} events  By history event kind.
 * @property {Record<string, string>} warnings  By data warning kind ("note": any other).
 * @property {Record<string, string>} refusals  By envelope code.
 * @property {Record<string, string>} notices  Why new exports wait, by reason.
 */
// The service's catalogue in the current language (failures, events, warnings, refusals,
// notices).
/** @type {Catalogue} */
let catalogue = { failures: {}, causes: {}, events: {}, warnings: {}, refusals: {}, notices: {} };

/** Whether ``tag`` is a language of the page.
 * @param {string | null} tag
 * @returns {tag is Language} */
function isLanguage(tag) {
  return tag !== null && tag in WORDS;
}

/** Whether ``key`` is one of the page's words (an HTML element's data-i18n).
 * @param {string} key
 * @returns {key is WordKey} */
export function isWord(key) {
  return key in EN;
}

/** The language to start in: the stored choice, else the browser's first we have. */
export function preferredLanguage() {
  const stored = localStorage.getItem(STORED);
  if (stored && isLanguage(stored)) return stored;
  for (const tag of navigator.languages || [navigator.language || "en"]) {
    if (tag.toLowerCase().startsWith("zh")) return "zh-CN";
    if (tag.toLowerCase().startsWith("en")) return "en";
  }
  return "en";
}

/** The page's current language.
 * @returns {Language} */
export function language() {
  return current;
}

/** Switch to ``tag``, load the service's catalogue in it, and remember the choice.
 * @param {string} tag
 * @param {boolean} [remember] */
export async function useLanguage(tag, remember = false) {
  current = isLanguage(tag) ? tag : "en";
  if (remember) localStorage.setItem(STORED, current);
  document.documentElement.lang = current;
  try {
    const response = await fetch(`/i18n/${current}.json`, { credentials: "same-origin" });
    if (response.ok) catalogue = await response.json();
  } catch {
    // The page's own words still work; failures then show the service's English.
  }
}

/** The page's word ``key`` with ``{name}`` placeholders filled from ``vars``.
 * @param {WordKey} key
 * @param {Record<string, unknown>} [vars]
 * @returns {string} */
export function t(key, vars = {}) {
  const text = WORDS[current][key] ?? EN[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (_, /** @type {string} */ name) =>
    name in vars ? String(vars[name]) : `{${name}}`);
}

/** The service's words for a failure code, or "" when unknown.
 * @param {string | null | undefined} code */
export function failureWords(code) {
  return (code && catalogue.failures[code]) || "";
}

/** What happened in a failure, without what to do, or "" when unknown: while the service
 * retries by itself, "try again later" would be the wrong advice.
 * @param {string | null | undefined} code */
export function causeWords(code) {
  return (code && catalogue.causes[code]) || "";
}

/** The service's words for a history event's ``kind`` (the kind itself when unknown).
 * @param {string} kind */
export function eventWords(kind) {
  return catalogue.events[kind] || kind;
}

/** The service's words for a data warning's ``kind`` (its general note when unknown).
 * @param {string} kind */
export function warningWords(kind) {
  return catalogue.warnings[kind] || catalogue.warnings.note || "";
}

/** The plain words of an API refusal's envelope code, or "" when the catalogue has none.
 * @param {string} code */
export function refusalWords(code) {
  return catalogue.refusals[code] || "";
}

// --- the person's locale (locale.js, in the page's language) ----------------------------

/** ``value`` with the separators of the page's language; "?" when there is none.
 * @param {number | string | null | undefined} value */
export function formatNumber(value) {
  return locale.formatNumber(value, current);
}

/** A size in bytes as "1.5 MB" in the page's language; "" when there is none.
 * @param {number | string | null | undefined} value */
export function formatBytes(value) {
  return locale.formatBytes(value, current);
}

/** A duration in seconds as "1 min 5 s" / "1分钟5秒" (two units at most).
 * @param {number} seconds */
export function formatDuration(seconds) {
  return locale.formatDuration(seconds, current);
}

/** ``iso`` as an exact date and time (to the minute) with its zone, in the page's
 * language; "" for none.
 * @param {string | null | undefined} iso */
export function exactTime(iso) {
  return locale.formatStamp(iso || "", current);
}

/** A <time> element: relative text ("3 min ago"), inside the page's words ``key`` (with
 * ``{when}``) when given; the exact time with its zone on hover (title); the instant as
 * its datetime. :func:`tickTimes` keeps the relative text current. A ``due`` time (when
 * something is to happen) reads "starting now" once it has passed.
 * @param {string | null} iso
 * @param {"" | WordKey} [key]
 * @param {boolean} [due]
 * @returns {HTMLTimeElement} */
export function timeEl(iso, key = "", due = false) {
  const node = document.createElement("time");
  if (!iso) return node;
  node.dateTime = iso;
  if (key) node.dataset.words = key;
  if (due) node.dataset.due = "1";
  node.title = locale.formatExact(iso, current);
  tick(node);
  return node;
}

/** @param {HTMLTimeElement} node */
function tick(node) {
  if (node.dataset.due && Date.parse(node.dateTime) <= Date.now()) {
    node.textContent = t("dueNow"); // an automatic retry that is due: not "37 seconds ago"
    return;
  }
  const when = locale.formatRelative(node.dateTime, current, Date.now());
  const key = node.dataset.words;
  node.textContent = key && isWord(key) ? t(key, { when }) : when;
}

/** Bring every relative time under ``root`` up to date (a minute passed).
 * @param {ParentNode} [root] */
export function tickTimes(root = document) {
  for (const node of root.querySelectorAll("time[datetime]")) {
    if (node instanceof HTMLTimeElement) tick(node);
  }
}

/** The service's words for why new exports wait, or "" when the catalogue has none.
 * @param {string} reason */
export function noticeWords(reason) {
  return catalogue.notices[reason] || "";
}
