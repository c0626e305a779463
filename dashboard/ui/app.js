// drover control room. Plain JavaScript, no build step.
//
// Every piece of job data reaches the page through textContent or an SVG
// <text>/<title> node's textContent, never through innerHTML, so names,
// data, failed reasons and logs always render as text.
'use strict';

(() => {
  const $main = document.getElementById('main');
  const $alerts = document.getElementById('alerts');
  const $nav = document.getElementById('nav');
  const $who = document.getElementById('who');
  const $toasts = document.getElementById('toasts');

  const app = {
    session: null,
    events: null, // EventSource of the page's queue
    timers: [], // intervals of the current page
    render: 0, // bumps on every navigation so stale renders stop
    shownHash: undefined, // the address route last drew (see arrived)
    lastOk: 0, // when the API last answered
    outageTimer: null, // polls /readyz while the outage banner is up
    closeDialog: null, // answers the open confirmation dialog, if any
  };

  // ---- DOM helpers -------------------------------------------------------

  // el builds an element. attrs: class, text, on<event> (functions), and
  // plain attributes; kids: nodes or strings (as text nodes). Its text,
  // title and aria-label go through shown; other attributes (href, data-*,
  // value) keep the real value, so links, searches and keys use it.
  function el(tag, attrs, ...kids) {
    const n = document.createElement(tag);
    setAttrs(n, attrs);
    for (const k of kids.flat()) {
      if (k === null || k === undefined || k === false) continue;
      n.append(k instanceof Node ? k : document.createTextNode(shown(k)));
    }
    return n;
  }
  const SVGNS = 'http://www.w3.org/2000/svg';
  function svg(tag, attrs, ...kids) {
    const n = document.createElementNS(SVGNS, tag);
    setAttrs(n, attrs);
    for (const k of kids.flat()) {
      if (k === null || k === undefined || k === false) continue;
      n.append(k instanceof Node ? k : document.createTextNode(shown(k)));
    }
    return n;
  }
  // oneAtATime runs a button's click handler unless the last click's run
  // is still under way (a preview being fetched, its dialog open, the
  // action sent): a second click of "Clean completed…" or "Promote…"
  // opened a second dialog behind the first, and confirming both removed
  // or promoted twice the jobs shown.
  function oneAtATime(button, fn) {
    return async (e) => {
      if (button.getAttribute('aria-busy') === 'true') return;
      button.setAttribute('aria-busy', 'true');
      try { await fn(e); } finally { button.removeAttribute('aria-busy'); }
    };
  }
  function setAttrs(n, attrs) {
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === 'text') n.textContent = shown(v);
      else if (k === 'title' || k === 'aria-label') n.setAttribute(k, shown(v));
      else if (k === 'onclick' && n.tagName === 'BUTTON') n.addEventListener('click', oneAtATime(n, v));
      else if (k.startsWith('on') && typeof v === 'function') n.addEventListener(k.slice(2), v);
      else n.setAttribute(k, v === true ? '' : String(v));
    }
  }
  const enc = encodeURIComponent;
  // FORMAT matches the characters the page shows as escapes (\u202e)
  // rather than lays out, as `drover job` prints them: bidi embeddings,
  // overrides, isolates and marks (U+061C, U+200E-F, U+202A-E, U+2066-9),
  // other invisible format characters (U+200B, U+2060-4, U+FEFF) and
  // controls but tab, newline and carriage return (C0, DEL, C1). A job
  // named "\u202eabc" was drawn "cba" in its heading, breadcrumb and list
  // row; its page and link showed a name the job does not have.
  const FORMAT = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\u061C\u200B\u200E\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]/g;
  const HAS_FORMAT = new RegExp(FORMAT.source);
  const escapeFormat = (s) => s.replace(FORMAT, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  // shown is the text the page shows for v: every FORMAT character
  // escaped, but for the isolates bi puts around a value (FSI, then no
  // FORMAT character, then PDI), which are kept. It is the one display
  // escape of the page: el and svg pass their text, title and aria-label
  // through it, and bi escapes the value it isolates. Only the display is
  // escaped: hrefs, data-* keys, API paths and inputs carry the real value.
  function shown(v) {
    const s = String(v);
    if (!HAS_FORMAT.test(s)) return s;
    return s.split(/(\u2068[^\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\u061C\u200B\u200E\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]*\u2069)/)
      .map((part, i) => (i % 2 ? part : escapeFormat(part))).join('');
  }
  // bi isolates a value set into a sentence (a queue name, job id or
  // name, failed reason, user, error message) from the words around it,
  // as nameEl's dir="auto" does for a name shown alone: an Arabic or Hebrew
  // name in a job id ran on into the rest of a toast, a dialog, a
  // live-feed line or the window's title. Its FORMAT characters are
  // escaped first (a right-to-left override shows as \u202e and reverses
  // nothing); a value with a right-to-left letter left then goes between
  // FSI and PDI (U+2068, U+2069). Other text is returned escaped alone.
  const RTL = /[\u0590-\u08FF\uFB1D-\uFDFF\uFE70-\uFEFE]|[\u{10800}-\u{10FFF}\u{1E800}-\u{1EFFF}]/u;
  function bi(v) {
    const s = escapeFormat(String(v));
    return RTL.test(s) ? `\u2068${s}\u2069` : s;
  }
  // seg spells a queue name or job id as an API path segment. "." and ".."
  // never reach the server (every URL parser removes such segments, %2e
  // spellings too), yet BullMQ accepts them as names: the API reads a
  // leading "~" before tildes and one or two dots as an escape ("~.." is
  // "..", "~~." is "~."); any other name goes as it is.
  const seg = (s) => enc(/^~*\.\.?$/.test(s) ? `~${s}` : s);
  // put replaces node's children, skipping null, undefined and false.
  function put(node, ...kids) {
    node.replaceChildren(...kids.flat().filter((k) => k !== null && k !== undefined && k !== false));
  }
  // putKeep is put that keeps node's children when the new ones draw the
  // same HTML: the queue page redraws its list every 10 s and after live
  // events, and a link or button replaced between press and release takes
  // no click (a "Next page" or job link clicked then did nothing). What a
  // kept child's click does must be in its HTML (href, data-cursor).
  const drawn = new WeakMap();
  function putKeep(node, ...kids) {
    const fresh = kids.flat().filter((k) => k !== null && k !== undefined && k !== false);
    const html = fresh.map((k) => (k instanceof Element ? k.outerHTML : k instanceof Node ? k.textContent : String(k))).join('\u0000');
    if (drawn.get(node) === html && node.isConnected) return;
    drawn.set(node, html);
    node.replaceChildren(...fresh);
  }
  // putInPlace makes kids node's children without taking out the ones it
  // already has in that order: a kept child stays in the page throughout
  // (replaceChildren takes every child out, and a button taken out between
  // press and release takes no click).
  function putInPlace(node, ...kids) {
    const fresh = kids.flat().filter((k) => k !== null && k !== undefined && k !== false);
    const want = new Set(fresh);
    for (const c of [...node.childNodes]) if (!want.has(c)) c.remove();
    let at = node.firstChild;
    for (const k of fresh) {
      if (k === at) { at = at.nextSibling; continue; }
      node.insertBefore(k, at);
    }
  }
  // keepSame swaps into parts (a redraw of node's children) every old
  // child of node that was drawn with the same HTML as the new part, so a
  // selection, a scroll position or a details element the user opened in
  // it stays, and nothing flickers. partHTML is each part's HTML as drawn,
  // not as it is now (opening a details element changes a node's own
  // HTML). Event handlers are not in the HTML: a kept part must act on
  // state that outlives the redraw (a button reads cur.d, not the d it was
  // drawn for).
  const partHTML = new WeakMap();
  function keepSame(node, parts) {
    const old = [...node.children];
    parts.forEach((p, i) => {
      if (!(p instanceof Element) || old.includes(p)) return;
      const html = p.outerHTML;
      const at = old.findIndex((o) => partHTML.get(o) === html);
      if (at < 0) { partHTML.set(p, html); return; }
      parts[i] = old[at];
      old.splice(at, 1);
    });
  }

  // morph makes node a look like node b, keeping a's descendants that b
  // has too (matched by id or data-key, else by tag in order), and returns
  // the node to keep: a itself, or b when they are not the same kind of
  // node. Only for parts that carry no event handlers: a handler on b is
  // not carried over to a.
  function morph(a, b) {
    if (a.nodeType !== b.nodeType || a.nodeName !== b.nodeName) return b;
    if (a.nodeType !== Node.ELEMENT_NODE) {
      if (a.nodeValue !== b.nodeValue) a.nodeValue = b.nodeValue;
      return a;
    }
    // aria-busy is no drawn attribute: oneAtATime sets it on a button
    // whose click is under way (a dialog open), and a redraw meanwhile must
    // not let a second click through.
    for (const at of [...a.attributes]) if (!b.hasAttribute(at.name) && at.name !== 'aria-busy') a.removeAttribute(at.name);
    for (const at of [...b.attributes]) if (a.getAttribute(at.name) !== at.value) a.setAttribute(at.name, at.value);
    const key = (n) => (n.nodeType !== Node.ELEMENT_NODE ? ''
      : n.id ? `#${n.id}` : n.getAttribute('data-key') ? `@${n.getAttribute('data-key')}` : '');
    const pool = [...a.childNodes];
    const kids = [...b.childNodes].map((k) => {
      const kk = key(k);
      let at = kk ? pool.findIndex((o) => key(o) === kk) : -1;
      if (at < 0 && !kk) at = pool.findIndex((o) => !key(o) && o.nodeName === k.nodeName && o.nodeType === k.nodeType);
      if (at < 0) return k;
      const o = pool.splice(at, 1)[0];
      return morph(o, k);
    });
    putInPlace(a, ...kids);
    return a;
  }

  // update makes kids node's children, keeping in the page every child
  // that stays (matched by id or data-key, else by tag in order, as morph
  // does), and with it the keyboard focus and a click under way: the pages
  // redraw every few seconds (a busy queue's list after each live event),
  // and a link or button replaced took the focus with it (a keyboard user
  // tabbing down the queues was sent back to the top of the page at each
  // refresh) and a click pressed as it was replaced did nothing. A kept
  // child keeps its event handlers: what they do must depend only on the
  // child's key (a row's job or scheduler) or read the page's current
  // state, never on the draw they came from.
  function update(node, ...kids) {
    const fresh = node.cloneNode(false);
    fresh.append(...kids.flat().filter((k) => k !== null && k !== undefined && k !== false));
    const focused = document.activeElement;
    const had = focused && focused !== node && node.contains(focused);
    morph(node, fresh);
    // A redraw that takes out the row holding the focus (a job retried
    // elsewhere, a failure group gone, a scheduler removed) gives it to the
    // heading of the panel it was in, or of the page: it fell to the
    // body, and the next Tab began again at the header.
    if (had && !focused.isConnected && (document.activeElement === document.body || !document.activeElement)) {
      const panel = node.closest('.panel');
      const h = (panel && panel.querySelector('h2')) || $main.querySelector('h1');
      if (h) { h.setAttribute('tabindex', '-1'); h.focus(); }
    }
  }

  // ---- formatting --------------------------------------------------------

  // pausedBadge says a queue is paused and, when its paused event is still
  // in the stream, since when ("paused 12m", the time in its title).
  function pausedBadge(q) {
    if (!q.pausedSince) return el('span', { class: 'badge rs-paused', 'data-paused-since': '' }, 'paused');
    return el('span', { class: 'badge rs-paused', 'data-paused-since': String(q.pausedSince), title: `paused at ${fmtTime(q.pausedSince)}` },
      `paused ${fmtMs(Date.now() - q.pausedSince)}`);
  }

  const pad = (n) => String(n).padStart(2, '0');
  // fmtTime shows an instant: the API's are epoch milliseconds (inspect's
  // JSON rule), the audit log's RFC 3339 strings; new Date reads both.
  function fmtTime(t) {
    if (!t) return '';
    const d = new Date(t);
    const now = new Date();
    const hms = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
    if (d.toDateString() === now.toDateString()) return hms;
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${hms}`;
  }
  // The browser's time zone, which fmtTime shows every instant in.
  const yourZone = (() => { try { return Intl.DateTimeFormat().resolvedOptions().timeZone || 'local time'; } catch (e) { return 'local time'; } })();
  // inZone shows instant t as the wall clock of time zone tz reads it
  // (2026-12-07 03:00:00), or null when the browser does not know tz.
  function inZone(t, tz) {
    try {
      const parts = {};
      for (const p of new Intl.DateTimeFormat('en-US', { timeZone: tz, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit' }).formatToParts(new Date(t))) parts[p.type] = p.value;
      return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}:${parts.second}`;
    } catch (e) { return null; }
  }
  function fmtMs(ms) {
    if (ms === null || ms === undefined || isNaN(ms)) return '';
    const neg = ms < 0;
    ms = Math.abs(ms);
    let s;
    if (ms < 1000) s = `${Math.round(ms)}ms`;
    else if (ms < 60e3) s = `${(ms / 1000).toFixed(ms < 10e3 ? 1 : 0)}s`;
    else {
      const [big, bigUnit, small, smallUnit] = ms < 3600e3 ? [60e3, 'm', 1000, 's'] : ms < 86400e3 ? [3600e3, 'h', 60e3, 'm'] : [86400e3, 'd', 3600e3, 'h'];
      const rest = Math.floor((ms % big) / small);
      s = `${Math.floor(ms / big)}${bigUnit}${rest ? ` ${rest}${smallUnit}` : ''}`;
    }
    return neg ? `-${s}` : s;
  }
  // exactMs shows a duration with every unit it has (1h 1m 22s, 1d 1h 1m
  // 1s, 1500ms as 1s 500ms): a scheduler's interval is a setting, and
  // fmtMs, which rounds for elapsed times, showed every 1h 1m 22s as
  // "every 1h 1m" and every 25h 1m 1s as "every 1d 1h".
  function exactMs(ms) {
    if (!(ms > 0)) return fmtMs(ms);
    const parts = [];
    for (const [n, u] of [[86400e3, 'd'], [3600e3, 'h'], [60e3, 'm'], [1e3, 's'], [1, 'ms']]) {
      if (ms >= n) { parts.push(`${Math.floor(ms / n)}${u}`); ms %= n; }
    }
    return parts.join(' ');
  }
  // limitBadges are a queue's limit badges: why waiting jobs may not move
  // although workers run (global concurrency reached, rate limiter
  // refusing). full adds the limits in force even when they do not bite.
  function limitBadges(q, full) {
    const l = q.limits || {};
    const out = [];
    if (l.concurrency !== null && l.concurrency !== undefined && (full || l.maxed)) {
      out.push(el('span', { class: l.maxed ? 'badge rs-paused' : 'badge', 'data-limit': 'concurrency',
        title: l.maxed ? `${q.counts.active} active jobs reached the global concurrency of ${l.concurrency}: no worker takes a job until one finishes` : `global concurrency ${l.concurrency}` },
      l.maxed ? `maxed ${q.counts.active}/${l.concurrency}` : `concurrency ${l.concurrency}`));
    }
    if (l.rateLimitedForMs > 0) {
      out.push(el('span', { class: 'badge rs-paused', 'data-limit': 'rate-limited',
        title: 'the rate limiter refuses activations to workers that apply a limit' }, `rate-limited ${fmtMs(l.rateLimitedForMs)}`));
    } else if (full && l.rateLimit) {
      out.push(el('span', { class: 'badge', 'data-limit': 'rate', title: 'global rate limit' }, `≤ ${l.rateLimit.max} per ${fmtMs(l.rateLimit.durationMs)}`));
    }
    return out;
  }
  function relative(t) {
    const ms = new Date(t).getTime() - Date.now();
    return ms >= 0 ? `in ${fmtMs(ms)}` : `${fmtMs(-ms)} ago`;
  }
  const pct = (x) => `${Math.round(x * 100)}%`;
  // FAILED_FOR says why a failed job failed for good (inspect.FailedFor).
  const FAILED_FOR = {
    unrecoverable: 'failed for good: unrecoverable',
    'attempts-exhausted': 'failed for good: attempts used up',
    'stalled-too-often': 'failed for good: stalled too often',
    'stopped-early': 'failed for good before its budget was spent',
    cancelled: 'failed for good: cancelled',
    'timed-out': 'failed for good: timed out',
    'child-failed': 'failed for good: a child failed',
  };
  // retryBadge shows a job's retry state; a failed job's says why it failed
  // for good, an unrecoverable failure in its own colour.
  // attemptsCell is a job's attempts in a list: made / allowed, and how
  // many it made past its budget (a retry that kept the spent attempts runs
  // a job whose attempts ran out once more): "3 / 2" read as a miscount.
  function attemptsCell(b) {
    const over = b.made - b.allowed;
    return el('td', { class: 'num', title: over > 0 ? overBudget(b) : null }, `${b.made} / ${b.allowed}`, over > 0 ? el('span', { class: 'muted' }, ` (+${over})`) : null);
  }
  function overBudget(b) {
    const over = b.made - b.allowed;
    return `${b.made} made: ${over} more than the ${b.allowed} allowed (run again after they ran out)`;
  }

  function retryBadge(rs, big, failedFor) {
    const label = rs === 'failed' && FAILED_FOR[failedFor] ? FAILED_FOR[failedFor] : rs.replaceAll('-', ' ');
    const cls = `badge rs-${rs}${failedFor === 'unrecoverable' ? ' rs-unrecoverable' : ''}${big ? ' big' : ''}`;
    return el('span', { class: cls, 'data-retry-state': rs, 'data-failed-for': rs === 'failed' ? failedFor : null }, label);
  }
  // progressOf reads a job's progress as a share 0..1, or null when it is
  // not a number (BullMQ lets processors report any JSON).
  function progressOf(p) {
    if (typeof p === 'number' && isFinite(p)) return Math.max(0, Math.min(1, p / 100));
    return null;
  }
  // pretty shows a JSON value; null is a value (BullMQ stores a processor's
  // undefined and null data as null) and shows as null, not as nothing.
  // Its FORMAT characters are written as JSON escapes by shown, as
  // `drover job` writes them: JSON.stringify leaves
  // them raw, and an override in a string reversed the rest of the panel
  // (its quotes and the keys after it).
  function pretty(raw) {
    if (raw === undefined) return '';
    let out;
    try { out = JSON.stringify(raw, null, 2); } catch (e) { return shown(raw); }
    return shown(out);
  }

  // PRE_MAX bounds the characters a job page lays out in one text box
  // (data, return value, failed reason, a stack trace, logs). A job's data
  // can be megabytes: the page took 7 s to draw 5 MB of data, and froze
  // again at each 10 s refresh. A longer text shows its start, says how
  // much there is, and shows the rest on request.
  const PRE_MAX = 65536;
  // bigPre is el('pre', attrs, text) for a text of at most PRE_MAX
  // characters; a longer one shows its first PRE_MAX and a "Show all"
  // button, which shows all of full() (the text as the page last loaded
  // it: a redraw that draws the same start keeps this box).
  function bigPre(attrs, text, full) {
    if (text.length <= PRE_MAX) return el('pre', attrs, text);
    let cut = PRE_MAX;
    if (/[\uD800-\uDBFF]/.test(text[cut - 1])) cut--; // not half a surrogate pair
    const pre = el('pre', { ...attrs, 'data-cut': text.length }, text.slice(0, cut), '…');
    const note = el('p', { class: 'muted cut-note' }, `Showing the first ${cut.toLocaleString('en-US')} of ${text.length.toLocaleString('en-US')} characters. `,
      el('button', { type: 'button', onclick: () => {
        const all = full();
        pre.textContent = shown(all);
        pre.removeAttribute('data-cut');
        // The focus goes to the text shown, a stop the keyboard scrolls:
        // the button went and took it along, to the page's start.
        const hadFocus = note.contains(document.activeElement);
        note.remove();
        pre.setAttribute('tabindex', '0');
        if (hadFocus) pre.focus();
      } }, 'Show all'));
    return el('div', {}, pre, note);
  }
  // oneLine is s cut to n characters, for a summary line.
  const oneLine = (s, n) => (s.length > n ? `${s.slice(0, n)}…` : s);

  // ---- API ---------------------------------------------------------------

  // LOCAL marks a call the dashboard answers from its own memory (the
  // session of an anonymous dashboard, bulk operations, retry conflicts):
  // its answer says nothing of Redis. Such answers took the outage banner
  // down a moment after it came up on a page opened during an outage, and
  // gave the banner a "loaded at" time when nothing had been.
  const LOCAL = { local: true };

  async function api(path, opts, again) {
    opts = opts || {};
    const init = { method: opts.method || 'GET', headers: { Accept: 'application/json' }, credentials: 'same-origin' };
    if (init.method !== 'GET') {
      init.headers['Content-Type'] = 'application/json';
      init.headers['X-CSRF-Token'] = (app.session && app.session.csrf) || '';
      init.body = JSON.stringify(opts.body || {});
    }
    let res;
    try { res = await fetch(`api/${path}`, init); } catch (e) {
      outage('The dashboard server does not answer');
      throw e;
    }
    let data = {};
    try { data = await res.json(); } catch (e) { /* not JSON */ }
    if (res.status === 503 && /^(Redis unavailable|sessions unavailable)/.test(data.error || '')) outage(`Redis does not answer (${data.error})`);
    else if (res.status === 502 || res.status === 504) outage(`The dashboard server does not answer (${res.status} from a proxy)`);
    else if (res.ok && !opts.local) { app.lastOk = Date.now(); outageOver(); }
    // The session ended while a page was open (expired, or an admin signed
    // everyone out): ask to sign in again instead of failing every refresh.
    if (res.status === 401 && path !== 'login' && app.session && app.session.authEnabled) sessionEnded();
    // A sign-in in another tab replaced the browser's session, and with it
    // the CSRF token: the server refused before acting, so take the new
    // session's token and send the request once more.
    if (res.status === 403 && !again && init.method !== 'GET' && app.session && /bad X-CSRF-Token/.test(data.error || '')) {
      let fresh = null;
      try { fresh = await api('session', LOCAL); } catch (e) { /* the retry reports */ }
      const was = app.session;
      if (fresh) { app.session = fresh; renderWho(); }
      // Someone else signed in there: the action the user confirmed as
      // one person is not sent as another (it went through in the new
      // user's name and role, and the audit log named them).
      if (fresh && (fresh.user !== was.user || fresh.role !== was.role)) {
        const err = new Error(`this browser is now signed in as ${bi(fresh.user)} (${fresh.role}), from another tab, not as ${bi(was.user)}: nothing was sent. Check the page and try again`);
        err.status = 409;
        throw err;
      }
      return api(path, opts, true);
    }
    if (!res.ok) {
      const err = new Error(data.error || `${res.status} ${res.statusText}`);
      err.status = res.status;
      err.outcome = data.outcome; // "unknown": Redis did not answer in time
      err.missing = data.missing; // a 404's "queue", "job" or "scheduler"
      throw err;
    }
    return data;
  }

  // outage shows, above every page, that Redis (or the dashboard server)
  // does not answer, and since when the page's numbers are: a page open
  // during an outage kept its last counts and lists as if current, with a
  // grey "Could not load" line at most. The banner goes at the next answer,
  // from the page's own refresh or from /readyz, asked every 5 seconds
  // meanwhile (pages without a refresh of their own, too).
  const $outage = el('div', { id: 'outage', class: 'alert alert-outage', role: 'alert', hidden: true });
  $alerts.before(el('div', { id: 'outage-wrap' }, $outage));
  function outage(why) {
    const since = app.lastOk ? ` What this page shows was loaded at ${fmtTime(app.lastOk)} and may be out of date.` : '';
    $outage.textContent = `${why}.${since} The page comes back by itself once it answers.`;
    $outage.hidden = false;
    if (app.outageTimer) return;
    app.outageTimer = setInterval(async () => {
      try { if ((await fetch('readyz', { credentials: 'same-origin' })).ok) outageOver(); } catch (e) { /* still down */ }
    }, 5000);
  }
  function outageOver() {
    $outage.hidden = true;
    clearInterval(app.outageTimer);
    app.outageTimer = null;
  }

  function toast(msg, isError) {
    const t = el('div', { class: `toast${isError ? ' error' : ''}`, role: isError ? 'alert' : 'status' }, isError ? 'Error: ' : null, msg);
    $toasts.append(t);
    setTimeout(() => t.remove(), isError ? 8000 : 4000);
  }

  // confirmDialog shows a modal and resolves to true when confirmed.
  // A destructive action's dialog starts on Cancel, so an Enter pressed out
  // of habit does not delete anything; Escape cancels any dialog.
  // Tab and Shift+Tab stay inside the dialog, and closing it gives the
  // focus back to what opened it, so a keyboard user is never lost.
  function confirmDialog(title, message, confirmLabel, danger) {
    // One question at a time: a dialog asked while another is open (two
    // buttons clicked in a row) is not shown, and is answered no.
    if (document.querySelector('.modal-backdrop')) return Promise.resolve(false);
    return new Promise((resolve) => {
      const opener = document.activeElement;
      const onKey = (e) => {
        if (e.key === 'Escape') { e.preventDefault(); close(false); return; }
        // Enter in a field of a dialog that is not destructive confirms it,
        // as a form does (a number typed in Limits, then Enter, did
        // nothing); a destructive one waits for its button.
        if (e.key === 'Enter' && !danger && e.target instanceof HTMLInputElement && modal.contains(e.target) &&
          !['checkbox', 'radio', 'button', 'submit'].includes(e.target.type)) { e.preventDefault(); close(true); return; }
        if (e.key !== 'Tab') return;
        // The stops are the fields Tab reaches: not a hidden one (the
        // hidden attribute, display or visibility none, type=hidden), which
        // the browser skips; taken as the last, it let Tab leave the dialog.
        const stops = [...modal.querySelectorAll('button, input, select, textarea, a[href], [tabindex="0"]')]
          .filter((n) => !n.disabled && n.type !== 'hidden' && n.getClientRects().length > 0 && getComputedStyle(n).visibility !== 'hidden');
        const first = stops[0], last = stops[stops.length - 1];
        if (!modal.contains(document.activeElement)) { e.preventDefault(); first.focus(); }
        else if (e.shiftKey && document.activeElement === first) { e.preventDefault(); last.focus(); }
        else if (!e.shiftKey && document.activeElement === last) { e.preventDefault(); first.focus(); }
      };
      const close = (v) => {
        if (app.closeDialog === close) app.closeDialog = null;
        document.removeEventListener('keydown', onKey);
        back.remove();
        if (opener && opener.isConnected && opener.focus) opener.focus();
        resolve(v);
      };
      const ok = el('button', { class: danger ? 'danger' : 'primary', 'data-confirm': 'yes', onclick: () => close(true) }, confirmLabel);
      const cancel = el('button', { 'data-confirm': 'no', onclick: () => close(false) }, 'Cancel');
      const heading = el('h2', { id: 'modal-title' }, title);
      const body = el('div', { class: 'modal-body', id: 'modal-body' }, message instanceof Node ? message : el('p', {}, message));
      // Described by its question: the dialog opens on a button, and a
      // screen reader read the title and the button without what is about
      // to happen.
      const modal = el('div', { class: 'modal', role: 'dialog', 'aria-modal': 'true', 'aria-labelledby': 'modal-title', 'aria-describedby': 'modal-body' },
        // The question and the buttons stay on the screen; a message taller
        // than the window (a bulk retry's sample of long ids, on a phone)
        // scrolls between them: the dialog grew past both edges of the
        // window, its title and buttons out of reach.
        heading, body, el('div', { class: 'buttons' }, cancel, ok));
      const back = el('div', { class: 'modal-backdrop', onclick: (e) => { if (e.target === back) close(false); } }, modal);
      document.body.append(back);
      // A scrolling middle is a tab stop, so the keyboard scrolls it too
      // (the Tab loop above went round the buttons only).
      if (body.scrollHeight > body.clientHeight) {
        body.setAttribute('tabindex', '0');
        body.setAttribute('role', 'region');
        body.setAttribute('aria-label', title);
      }
      document.addEventListener('keydown', onKey);
      app.closeDialog = close;
      (danger ? cancel : ok).focus();
    });
  }

  // act runs a mutating call after confirmation and reports the outcome.
  async function act(title, message, label, call, danger) {
    if (!(await confirmDialog(title, message, label, danger))) return null;
    try {
      const res = await call();
      return res;
    } catch (e) {
      // Not "failed": the action was sent and may have happened.
      if (e.outcome === 'unknown') toast(`${title}: outcome unknown. Redis did not answer in time, so it may or may not have happened; check before repeating it.`, true);
      else toast(`${title} failed: ${bi(e.message)}`, true);
      return null;
    }
  }

  // ---- page plumbing -----------------------------------------------------

  function leavePage() {
    app.render++;
    // A question belongs to the page that asked it: after Back, a link or
    // the end of the session, "Delete job 1?" stayed over the next page,
    // and its button still removed job 1.
    if (app.closeDialog) app.closeDialog(false);
    for (const t of app.timers) clearInterval(t);
    app.timers = [];
    if (app.events) { app.events.close(); app.events = null; }
  }
  function every(ms, fn) { app.timers.push(setInterval(fn, ms)); }

  // live subscribes to a queue's events; onEvent gets each one.
  // The browser reconnects a dropped stream by itself, from the last id it
  // saw (the server names the starting one at open), but gives up for
  // good on an error answer (a 503 while Redis is down or too many streams
  // are open, a proxy's 502): then the page opens a new one a little later,
  // for as long as it is shown, after the last id it saw, so the events
  // written meanwhile still arrive. from is where the page's data was read
  // (the API's eventsAfter): a stream whose first open was refused still
  // starts there, not at the events written after it finally opened (an
  // event between the page's read and that open was never shown).
  // feed, when given, is the page's feed list: while the stream is not
  // open it says so (its empty line promised events that could not come).
  function live(queue, onEvent, from, feed) {
    if (!window.EventSource) return;
    const gen = app.render;
    let last = from || '';
    const down = (yes) => {
      if (!feed) return;
      const note = feed.querySelector('[data-feed-down]');
      if (yes && !note) feed.prepend(el('li', { class: 'muted', 'data-feed-down': '', role: 'status' }, 'Live updates are not connected (the dashboard refused the stream, or cannot reach Redis); trying again every 5 seconds.'));
      if (!yes && note) note.remove();
    };
    const open = () => {
      if (gen !== app.render) return;
      const after = last ? `?after=${encodeURIComponent(last)}` : '';
      const es = new EventSource(`api/queues/${seg(queue)}/events${after}`);
      es.addEventListener('open', () => down(false));
      es.addEventListener('position', (m) => { if (m.data) last = m.data; });
      es.addEventListener('job', (m) => {
        if (m.lastEventId) last = m.lastEventId;
        try { onEvent(JSON.parse(m.data)); } catch (e) { /* ignore */ }
      });
      es.addEventListener('error', () => {
        if (es.readyState === EventSource.CLOSED && app.events === es) { down(true); setTimeout(open, 5000); }
      });
      app.events = es;
    };
    open();
  }

  // debounce returns fn delayed until calls stop for ms.
  function debounce(ms, fn) {
    let t = null;
    return () => { clearTimeout(t); t = setTimeout(fn, ms); };
  }

  // alertText is an alert's message with its instants (the server writes
  // RFC 3339, in UTC) in the browser's time, as every other time on the
  // page: "due within 5s from 2026-12-06T11:26:44Z" stood above a chart
  // that said 12:26:44 to a browser an hour east of UTC.
  const alertText = (m) => m.replace(/\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})/g, (t) => fmtTime(t));
  // showAlerts keeps a banner the refresh draws the same (update): a
  // screen reader announces a role=alert element each time one is put in
  // the page, and every refresh put the same "retry storm" in again (the
  // overview's every 5 s, a busy queue page's several times a second).
  function showAlerts(alerts) {
    update($alerts, ...(alerts || []).map((a) =>
      el('div', { class: `alert alert-${a.kind}`, role: 'alert', 'data-alert': a.kind, 'data-key': `${a.kind}:${a.queue}` }, `${bi(a.queue)}: ${alertText(a.message)}`)));
  }

  // titled names the page shown in the window's title: every page was
  // "drover control room", so tabs, bookmarks, the history's Back list and
  // a screen reader's page announcement could not tell a job from a queue
  // or the overview.
  function titled(...parts) {
    document.title = shown([...parts.filter(Boolean), 'drover control room'].join(' · '));
  }

  // noQueue replaces the page with a plain "no such queue" when an API
  // answer says the queue is not there (404, missing "queue"), and ends the
  // page's refreshes and live feed; true then. A page of a queue that does
  // not exist showed its empty panels, filters and bulk actions, and a job
  // page said the job was gone.
  function noQueue(queue, e) {
    if (!e || e.status !== 404 || e.missing !== 'queue') return false;
    leavePage();
    titled(`No queue ${bi(queue)}`);
    put($main, crumbs({ text: 'Queues', href: '#/' }, { text: queue }),
      el('div', { class: 'panel', id: 'not-found' }, el('h1', {}, `No queue named ${bi(queue)}`), el('p', {}, e.message),
        el('p', {}, el('a', { href: '#/' }, 'See all queues'))));
    return true;
  }

  // noPage says that a link leads nowhere, instead of showing another page.
  function noPage(hash) {
    titled('No such page');
    put($main, el('div', { class: 'panel', id: 'not-found' }, el('h1', {}, 'No such page'),
      el('p', {}, `Nothing lives at #${bi(hash)}.`), el('p', {}, el('a', { href: '#/' }, 'See all queues'))));
  }

  function crumbs(...parts) {
    const out = el('div', { class: 'crumbs' });
    parts.forEach((p, i) => {
      if (i > 0) out.append(' › ');
      const attrs = { class: 'name', dir: 'auto', title: p.text };
      out.append(p.href ? el('a', { ...attrs, href: p.href }, p.text) : el('span', attrs, p.text));
    });
    return out;
  }
  // nameEl shows a queue name, job name or job id in a heading: at most
  // two lines (all of it in its title), and in its own direction. A job
  // named with 2,600 characters filled the first screen of its page,
  // before its state and buttons, and a right-to-left name took the text
  // around it into its direction.
  function nameEl(text, cls) {
    return el('span', { class: `name${cls ? ` ${cls}` : ''}`, dir: 'auto', title: text, 'data-name': '' }, text);
  }

  // loadingRow fills a table until its first answer: headers over an
  // empty body read as a page with nothing to show (or a broken one) for
  // as long as a slow Redis took to answer.
  const loadingRow = (cols) => el('tr', { 'data-loading': '' }, el('td', { colspan: cols, class: 'muted' }, 'Loading…'));
  // loadFailed takes the "Loading…" lines away when a page's first answer
  // is an error, which the page says in their stead.
  const loadFailed = () => { for (const n of $main.querySelectorAll('[data-loading]')) n.remove(); };

  // feedList is a page's live feed, empty at first: it says so, and since
  // when it listens, until the first event comes (an empty panel under
  // "Live events" read as a feed still loading, or a broken one).
  function feedList(of) {
    return el('ul', { class: 'feed' }, el('li', { class: 'muted', 'data-feed-empty': '' },
      `No event ${of} since this page opened at ${fmtTime(Date.now())}; new ones show here as they happen.`));
  }
  function feedAdd(feed, ev) {
    const empty = feed.querySelector('[data-feed-empty]');
    if (empty) empty.remove();
    feed.prepend(feedItem(ev));
  }

  function feedItem(ev) {
    let what = ev.name;
    if (ev.jobId) what += ` job ${bi(ev.jobId)}`;
    if (ev.prev) what += ` (from ${ev.prev})`;
    if (ev.failedReason) what += `: ${bi(ev.failedReason)}`;
    if (ev.delayUntil) what += ` until ${fmtTime(ev.delayUntil)}`;
    if (ev.count) what += `: ${ev.count} job${ev.count === 1 ? '' : 's'}`;
    if (ev.deduplicationId) what += ` holds ${bi(ev.deduplicationId)}`;
    if (ev.name === 'progress' && ev.data !== undefined) {
      const v = JSON.stringify(ev.data);
      what += `: ${bi(v.length > 80 ? `${v.slice(0, 79)}…` : v)}`;
    }
    return el('li', {}, el('span', { class: 't' }, fmtTime(ev.time)), what);
  }

  function renderWho() {
    const s = app.session;
    const find = el('input', { name: 'job-id', placeholder: 'find a job by id', 'aria-label': 'find a job by id', autocomplete: 'off' });
    const search = el('form', { id: 'job-search', onsubmit: (e) => { e.preventDefault(); if (find.value.trim()) location.hash = `#/find/${enc(find.value.trim())}`; } }, find);
    put($nav, ...[el('a', { href: '#/' }, 'Queues'), s ? el('a', { href: '#/workers' }, 'Workers') : null, s && s.role === 'admin' ? el('a', { href: '#/audit' }, 'Audit log') : null, s ? search : null].filter(Boolean));
    if (!s) { put($who, ); return; }
    put($who, ...[
      el('span', { id: 'whoami' }, `${bi(s.user)} (${s.role})`),
      s.readOnly ? el('span', { class: 'badge' }, 'read-only') : null,
      s.authEnabled ? el('button', { id: 'sign-out', onclick: signOut }, 'Sign out') : null,
    ].filter(Boolean));
  }

  // signOut ends the session. When Redis could not end it the page says
  // so and stays: it reloaded as if signed out, and came back signed in
  // once Redis answered.
  async function signOut() {
    let res = null, data = {};
    try {
      res = await fetch('api/logout', { method: 'POST', credentials: 'same-origin' });
      data = await res.json();
    } catch (e) { /* said below */ }
    if (res && res.ok) { location.reload(); return; }
    leavePage();
    app.session = null;
    put($nav);
    put($who);
    put($main, el('div', { class: 'panel', id: 'signout-failed', role: 'alert' }, el('h2', {}, 'Sign-out not finished'),
      el('p', {}, data.error || `The dashboard did not answer${res ? ` (${res.status})` : ''}: the session may still be valid.`),
      el('p', {}, el('a', { href: '#', onclick: (e) => { e.preventDefault(); location.reload(); } }, 'Back to the dashboard'))));
  }

  // ---- sign in -----------------------------------------------------------

  // sessionEnded leaves the page for the sign-in form; signing in comes
  // back to the page the hash names.
  function sessionEnded() {
    leavePage();
    app.session = null;
    showAlerts([]);
    put($who);
    renderSignIn('Your session ended: sign in again to go on.');
  }

  function renderSignIn(note) {
    titled('Sign in');
    put($nav, );
    const token = el('input', { type: 'password', name: 'token', placeholder: 'access token', 'aria-label': 'access token', autocomplete: 'off' });
    const user = el('input', { type: 'text', name: 'user', placeholder: 'user', 'aria-label': 'user name', autocomplete: 'username' });
    const pass = el('input', { type: 'password', name: 'password', placeholder: 'password', 'aria-label': 'password', autocomplete: 'current-password' });
    // A live region: a screen reader says why a sign-in was refused (the
    // grey line alone was silent) and why the session ended.
    let msg = el('p', { class: 'muted', id: 'signin-message', role: 'alert' }, note || '');
    // A refusal the same as the one before is said again, and counted: the
    // second wrong password left the line as it was, so a screen reader
    // said nothing (an alert whose text does not change is not announced)
    // and the page looked as if Sign in had not been pressed.
    let refusal = '', refusals = 0;
    // One sign-in at a time: Enter pressed twice sent two logins, two
    // failed sign-ins toward the lockout for one wrong password. A refused
    // one empties the secret typed and puts the cursor back in it.
    let sending = false;
    const form = el('form', {
      onsubmit: async (e) => {
        e.preventDefault();
        if (sending) return;
        sending = true;
        form.setAttribute('aria-busy', 'true');
        const secret = token.value ? token : pass;
        try {
          await api('login', { method: 'POST', body: token.value ? { token: token.value } : { user: user.value, password: pass.value } });
          start();
        } catch (err) {
          refusals = err.message === refusal ? refusals + 1 : 1;
          refusal = err.message;
          const fresh = el('p', { class: 'muted', id: 'signin-message', role: 'alert' },
            refusals > 1 ? `${err.message} (refused ${refusals} times in a row)` : err.message);
          msg.replaceWith(fresh);
          msg = fresh;
          secret.value = '';
          secret.focus();
        } finally {
          sending = false;
          form.removeAttribute('aria-busy');
        }
      },
    }, token, el('span', { class: 'muted' }, 'or'), user, pass, el('button', { class: 'primary', type: 'submit' }, 'Sign in'), msg);
    put($main, el('div', { class: 'panel signin' }, el('h1', {}, 'Sign in to the drover dashboard'), form));
    // The cursor starts in the token field: the keyboard had to find the
    // form first (Tab past the header), and typing went nowhere.
    token.focus();
  }

  // ---- overview ----------------------------------------------------------

  // The overview's counts: a flow parent waiting on its children counts
  // too (Node's getJobCounts names it waiting-children).
  const OVERVIEW_STATES = ['waiting', 'prioritized', 'active', 'delayed', 'waiting-children', 'completed', 'failed'];

  async function pageOverview(params) {
    titled('Queues');
    const gen = app.render;
    const body = el('tbody', {}, loadingRow(9));
    const table = el('table', { id: 'queues' },
      el('thead', {}, el('tr', {}, el('th', {}, 'Queue'), ...OVERVIEW_STATES.map((s) => el('th', { class: 'num' }, s)), el('th', {}, 'Alerts'))),
      body);
    const info = el('p', { class: 'muted' });
    // The name filter: with hundreds of queues, finding one was the
    // browser's find-in-page over a table redrawn every 5 seconds. It is
    // kept in the address (#/?q=), so a reload, a link and Back keep it;
    // typing replaces the address without a new page, so the box keeps the
    // keyboard.
    const search = el('input', { type: 'search', id: 'queue-search', name: 'q', placeholder: 'filter queues by name', 'aria-label': 'filter queues by name',
      autocomplete: 'off', value: (params && params.get('q')) || '' });
    let ov = null;
    const draw = () => {
      if (!ov) return;
      const needle = search.value.trim().toLowerCase();
      const shown = needle ? ov.queues.filter((q) => q.name.toLowerCase().includes(needle)) : ov.queues;
      const n = ov.queues.length;
      info.textContent = `Prefix ${bi(ov.prefix)}: ${n} queue${n === 1 ? '' : 's'}${needle ? `, ${shown.length} with "${bi(search.value.trim())}" in the name` : ''}. Refreshes every 5 seconds.`;
      update(body, ...shown.map((q) => el('tr', { 'data-queue': q.name, 'data-key': q.name },
        el('td', {}, el('a', { href: `#/q/${enc(q.name)}`, class: 'name', dir: 'auto', title: q.name }, q.name), q.paused ? pausedBadge(q) : null, ...limitBadges(q, false)),
        ...OVERVIEW_STATES.map((s) => el('td', { class: 'num', 'data-state': s }, q.counts[camel(s)])),
        el('td', {}, ...q.alerts.map((a) => el('span', { class: 'badge rs-failed', title: alertText(a.message) }, a.kind))))),
      n ? null : el('tr', {}, el('td', { colspan: 9, class: 'muted' }, 'No queues under this prefix yet.')),
      n && !shown.length ? el('tr', {}, el('td', { colspan: 9, class: 'muted', id: 'no-queue-match' }, `No queue has "${bi(search.value.trim())}" in its name.`)) : null);
    };
    search.addEventListener('input', debounce(150, () => {
      if (gen !== app.render) return;
      const v = search.value.trim();
      history.replaceState(null, '', `#/${v ? `?q=${enc(v)}` : ''}`);
      draw();
    }));
    put($main, el('h1', {}, 'Queues'), el('div', { class: 'row' }, search), info, el('div', { class: 'panel' }, table));
    async function load() {
      let fresh;
      try { fresh = await api('overview'); } catch (e) { if (gen === app.render) { info.textContent = `Could not load queues: ${bi(e.message)}`; loadFailed(); } return; }
      if (gen !== app.render) return;
      ov = fresh;
      showAlerts(ov.alerts);
      draw();
    }
    await load();
    // Left while the first answer was on its way: poll nothing under the
    // next page.
    if (gen !== app.render) return;
    every(5000, load);
  }

  // ---- queue page --------------------------------------------------------

  // MAX_PRIORITY is drover.MaxPriority (BullMQ's 2^21 - 1).
  const MAX_PRIORITY = 2097151;
  const STATES = ['waiting', 'prioritized', 'active', 'delayed', 'completed', 'failed', 'paused', 'waiting-children'];

  async function pageQueue(queue, params) {
    const gen = app.render;
    titled(bi(queue));
    const s = app.session;
    // Without a state asked for, open the tab that has jobs: failures
    // first, then what is running or waiting, completed last.
    let info = null;
    try { info = await api(`queues/${seg(queue)}`); } catch (e) {
      if (noQueue(queue, e)) return;
      /* else the page reports the error below */
    }
    if (gen !== app.render) return;
    let state = params.get('state');
    if (!state) {
      state = info ? ['failed', 'active', 'waiting', 'delayed', 'prioritized', 'paused', 'waiting-children', 'completed']
        .find((st) => info.counts[camel(st)] > 0) || 'failed' : 'failed';
    }
    titled(`${state} jobs`, bi(queue));
    const filter = { name: params.get('name') || '', reason: params.get('reason') || '', left: params.get('left') || '', error: params.get('error') || '' };
    const offset = Number(params.get('offset') || 0);
    // after/before are the cursors of the page turned from: the page goes
    // on right after (or before) that page's edge job, wherever it is now.
    const after = params.get('after') || '', before = params.get('before') || '';
    // The order of the list: newest first, but for delayed jobs soonest
    // due first and for prioritized jobs the next to run first; ?order=
    // turns it. With 10,000 failed jobs the oldest were 400 "Next page"
    // clicks away: no order to choose, no last page.
    const naturalAsc = state === 'delayed' || state === 'prioritized';
    const asc = params.get('order') ? params.get('order') === 'asc' : naturalAsc;
    const order = asc === naturalAsc ? {} : { order: asc ? 'asc' : 'desc' };

    const head = el('h1', {}, nameEl(queue));
    const actions = el('div', { class: 'row' });
    const tabs = el('div', { class: 'tabs' });
    const summary = el('p', { class: 'muted' });
    const unreadable = el('div');
    const tbody = el('tbody', {}, loadingRow(6));
    const pager = el('div', { class: 'row', id: 'pager' });
    const moved = el('div');
    const hist = el('div');
    const budget = el('div');
    const thru = el('div');
    const feed = feedList('of this queue');

    const nameIn = el('input', { name: 'name', placeholder: 'job name', 'aria-label': 'job name is', value: filter.name });
    const reasonIn = el('input', { name: 'reason', placeholder: 'failed reason contains', 'aria-label': 'failed reason contains', value: filter.reason });
    const leftIn = el('input', { name: 'left', type: 'number', min: 0, placeholder: 'attempts left ≤', 'aria-label': 'attempts left at most', value: filter.left, class: 'narrow' });
    const go = (over) => {
      const p = new URLSearchParams({ state, ...order, ...over });
      for (const [k, v] of [...p]) if (v === '' || v === '0' && k === 'offset') p.delete(k);
      location.hash = `#/q/${enc(queue)}?${p}`;
    };
    const filterForm = el('form', { class: 'row', onsubmit: (e) => { e.preventDefault(); go({ name: nameIn.value, reason: reasonIn.value, left: leftIn.value, error: filter.error }); } },
      nameIn, reasonIn, leftIn,
      filter.error ? el('span', { class: 'badge chip', id: 'error-filter' }, `error: ${bi(filter.error)}`, el('a', { href: '#', 'aria-label': 'remove the error filter', title: 'remove the error filter', onclick: (e) => { e.preventDefault(); go({ name: filter.name, reason: filter.reason, left: filter.left }); } }, ' ×')) : null,
      el('button', { type: 'submit' }, 'Filter'),
      el('button', { type: 'button', onclick: () => go({}) }, 'Clear'));
    const filterExpr = () => {
      const parts = [];
      if (filter.name) parts.push(`name=${bi(JSON.stringify(filter.name))}`);
      if (filter.reason) parts.push(`reason=${bi(JSON.stringify(filter.reason))}`);
      if (filter.left !== '') parts.push(`left<=${filter.left}`);
      if (filter.error) parts.push(`error=${bi(JSON.stringify(filter.error))}`);
      return parts.join(' ');
    };

    // The bulk retry acts on exactly the filter the boxes show, applied
    // or not: what the operator reads is what gets retried.
    const shownFilter = () => {
      const parts = [];
      const name = nameIn.value.trim(), reason = reasonIn.value.trim(), left = leftIn.value.trim();
      if (name) parts.push(`name=${bi(JSON.stringify(name))}`);
      if (reason) parts.push(`reason=${bi(JSON.stringify(reason))}`);
      if (left !== '') parts.push(`left<=${left}`);
      if (filter.error) parts.push(`error=${bi(JSON.stringify(filter.error))}`);
      return parts.join(' ');
    };
    const bulk = el('div', { class: 'row' });
    const opBox = el('div', { id: 'operations' });
    let bulkRetry = null; // set when the user may retry in bulk
    const groups = el('div');
    if (s.canOperate && (state === 'failed' || state === 'completed')) {
      const reset = el('input', { type: 'checkbox', name: 'reset' });
      const unrec = el('input', { type: 'checkbox', name: 'include-unrecoverable' });
      bulk.append(el('label', {}, reset, 'with fresh attempts'));
      if (state === 'failed') bulk.append(el('label', {}, unrec, 'include jobs that failed as unrecoverable or by a failed child'));
      bulk.append(el('button', {
        class: 'primary', id: 'bulk-retry',
        onclick: () => bulkRetry(shownFilter()),
      }, `Retry matching ${state} jobs…`));
      // bulkRetry asks with the count and a sample, then starts the retry of
      // the jobs that match filterText and follows its progress.
      bulkRetry = async (filterText) => {
        {
          const body = { state, filter: filterText, resetAttempts: reset.checked, includeUnrecoverable: state === 'failed' && unrec.checked };
          let dry;
          try { dry = await api(`queues/${seg(queue)}/retry`, { method: 'POST', body: { ...body, dryRun: true } }); } catch (e) { toast(bi(e.message), true); return; }
          // Left out, each with its own reason: failed as unrecoverable, or
          // a flow parent a child failed (running it does not bring the
          // child back).
          const unrecoverable = (dry.excluded || 0) - (dry.excludedByChild || 0), byChild = dry.excludedByChild || 0;
          const excluded = [
            unrecoverable ? ` ${unrecoverable} job${unrecoverable === 1 ? '' : 's'} that failed as unrecoverable ${unrecoverable === 1 ? 'is' : 'are'} left out.` : '',
            byChild ? ` ${byChild} flow parent${byChild === 1 ? '' : 's'} that a failed child failed ${byChild === 1 ? 'is' : 'are'} left out.` : '',
          ].join('');
          if (!dry.matched) { toast(`No job matches.${excluded}`); return; }
          const what = `${dry.matched} ${state} job${dry.matched === 1 ? '' : 's'}`;
          const message = el('div', { id: 'retry-preview' },
            el('p', {}, `Retry ${what}${body.filter ? ` matching ${bi(body.filter)}` : ' (no filter: every one)'}, `,
              body.resetAttempts ? 'with fresh attempts (their budgets start over)' : 'keeping their spent attempts', '?', excluded,
              ' They move back to wait in paced chunks; you can cancel while it runs.',
              // What "these" means once jobs move: the ones counted now,
              // less the ones that change before their turn.
              ' Jobs that fail after this count are left for the next retry, and a job that changes before its turn (retried, removed, run again) is skipped.'),
            el('table', { class: 'sample' }, el('tbody', {}, ...dry.sample.map((j) => el('tr', { 'data-sample': j.id },
              el('td', { class: 'mono' }, j.id), el('td', {}, j.name), el('td', { class: 'reason' }, j.failedReason || ''))))),
            dry.matched > dry.sample.length ? el('p', { class: 'muted' }, `and ${dry.matched - dry.sample.length} more`) : null);
          // The jobs shown, not more: jobs that fail after this preview are
          // left for the next retry.
          const op = await act('Retry jobs', message, `Retry ${dry.matched}`,
            () => api(`queues/${seg(queue)}/retry`, { method: 'POST', body: { ...body, olderThan: dry.newestFinished } }));
          if (op) follow(op);
        }
      };
    }
    // skipWhy sums up why an operation skipped jobs: a worker held some
    // (conflicts), the rest changed between the selection and their move.
    const skipWhy = (o) => {
      const held = o.conflicts || 0, moved = o.skipped - held;
      return [held ? `${held} held by a worker` : '', moved ? `${moved} changed meanwhile` : ''].filter(Boolean).join(', ');
    };
    // follow shows a background operation's progress until it ends.
    function follow(op) {
      const bar = el('progress', { max: Math.max(op.total, 1), value: op.done });
      const line = el('span', {});
      // Cancel only for who may: a viewer (or a read-only dashboard) sees
      // another operator's retry run, and its click was refused (403).
      const cancel = app.session.canOperate ? el('button', { onclick: async () => {
        try { await api(`operations/${seg(op.id)}/cancel`, { method: 'POST', local: true }); } catch (e) { toast(bi(e.message), true); }
      } }, 'Cancel') : null;
      const skips = el('ul', { class: 'skips muted' });
      const box = el('div', { class: 'operation row', 'data-operation': op.id, 'data-status': op.status }, el('strong', {}, 'Bulk retry'), bar, line, cancel, skips);
      opBox.append(box);
      const show = (o) => {
        box.dataset.status = o.status;
        bar.max = Math.max(o.total, 1);
        bar.value = o.done;
        line.textContent = o.status === 'running'
          ? `${o.done} of ${o.total || '?'} handled (${o.retried} retried)`
          : `${o.status}: retried ${o.retried}${o.skipped ? `, ${o.skipped} skipped (${skipWhy(o)})` : ''} of ${o.total}${o.error && o.status !== 'cancelled' ? ` — ${bi(o.error)}` : ''}`;
        // Each skipped job with why, as far as the operation names them.
        update(skips, ...(o.skips || []).map((k) => el('li', { 'data-skip': k.id, 'data-key': k.id }, el('a', { href: `#/q/${enc(queue)}/job/${enc(k.id)}`, class: 'mono' }, k.id), `: ${k.reason}`)));
        if (o.status !== 'running' && cancel) cancel.remove();
      };
      show(op);
      const gen = app.render;
      const poll = async () => {
        if (gen !== app.render) return;
        let o;
        try { o = await api(`operations/${seg(op.id)}`, LOCAL); } catch (e) { line.textContent = bi(e.message); return; }
        show(o);
        if (o.status === 'running') setTimeout(poll, 400);
        else { toast(`Bulk retry ${o.status}: ${o.retried} job${o.retried === 1 ? '' : 's'} retried.`); load(); }
      };
      setTimeout(poll, 300);
    }

    put($main, 
      crumbs({ text: 'Queues', href: '#/' }, { text: queue }),
      head, actions,
      el('div', { class: 'panel' }, tabs, filterForm, el('div', { class: 'spaced' }, bulk), opBox, summary, unreadable,
        moved, el('table', { id: 'jobs' }, el('thead', {}, el('tr', {}, ...['ID', 'Name', 'Retry state', 'Attempts', state === 'delayed' ? 'Next run' : 'When', 'Failed reason'].map((h) => el('th', {}, h)))), tbody),
        pager),
      state === 'failed' ? el('div', { class: 'panel' }, el('h2', {}, 'Failures by error'), groups) : null,
      el('div', { class: 'panel' }, el('h2', {}, 'Throughput: jobs finished per minute, last hour'), thru),
      el('div', { class: 'grid2' },
        el('div', { class: 'panel' }, el('h2', {}, 'Delayed set: due times'), hist),
        el('div', { class: 'panel' }, el('h2', {}, 'Budgets near exhaustion'), budget)),
      el('div', { class: 'panel' }, el('h2', {}, 'Live events'), feed));

    // A failed read says why the panel is empty (a Redis ACL refusing
    // MULTI, which BullMQ's metrics read uses, leaves the rest working).
    const throughput = () => api(`queues/${seg(queue)}/throughput`).then((tr) => { if (gen === app.render) renderThroughput(thru, tr); },
      (e) => { if (gen === app.render) put(thru, el('p', { class: 'muted', id: 'throughput-facts' }, `Could not load the throughput: ${bi(e.message)}`)); });
    async function load() {
      let qp, page;
      const q = new URLSearchParams({ state, offset, limit: 25 });
      if (after) q.set('after', after);
      if (before) q.set('before', before);
      if (filter.name) q.set('name', filter.name);
      if (filter.reason) q.set('reason', filter.reason);
      if (filter.left !== '') q.set('left', filter.left);
      if (filter.error) q.set('error', filter.error);
      if (asc) q.set('asc', '1');
      // A list the API refuses (400: a link with an unknown state or a bad
      // offset, edited or cut short) leaves the rest of the page drawn:
      // it showed "Could not load" over empty panels, without the tabs
      // that lead to a list that works.
      const [qr, pr] = await Promise.allSettled([api(`queues/${seg(queue)}`), api(`queues/${seg(queue)}/jobs?${q}`)]);
      const failed = qr.status === 'rejected' ? qr.reason : pr.status === 'rejected' && pr.reason.status !== 400 ? pr.reason : null;
      if (failed) { if (!noQueue(queue, failed)) { summary.textContent = `Could not load: ${bi(failed.message)}`; loadFailed(); } return; }
      if (gen !== app.render) return;
      qp = qr.value;
      page = pr.status === 'fulfilled' ? pr.value : null;
      showAlerts(qp.alerts);
      putKeep(head, nameEl(queue), qp.paused ? pausedBadge(qp) : null, ...limitBadges(qp, true));
      renderQueueActions(queue, qp, actions, load);
      update(tabs, ...STATES.filter((st) => st === state || qp.counts[camel(st)] > 0 || ['waiting', 'active', 'delayed', 'completed', 'failed'].includes(st)).map((st) =>
        el('a', { href: `#/q/${enc(queue)}?state=${st}`, 'data-key': st, class: st === state ? 'on' : '', 'aria-current': st === state ? 'page' : null }, st, el('span', { class: 'count' }, qp.counts[camel(st)]))));
      if (!page) {
        summary.textContent = `This link does not make a list: ${bi(pr.reason.message)}. Pick a tab above.`;
        update(tbody);
        putKeep(pager);
        renderHistogram(hist, qp.delayed, qp.storm);
        renderBudget(budget, queue, qp.budget);
        throughput();
        return;
      }
      summary.textContent = `${page.total} ${state} job${page.total === 1 ? '' : 's'}${filterExpr() ? `; showing those matching ${bi(filterExpr())}` : ''}${page.truncated ? ` (stopped after scanning ${page.scanned} jobs)` : ''}.`;
      const bad = page.unreadable || [];
      update(unreadable, bad.length ? el('p', { class: 'alert alert-budget', id: 'unreadable' },
        `${bad.length} job${bad.length === 1 ? '' : 's'} of this page could not be read (the hash does not decode: another tool wrote it, or it is damaged): `,
        ...bad.flatMap((b, n) => [n ? ', ' : '', el('a', { class: 'mono', href: `#/q/${enc(queue)}/job/${enc(b.id)}`, title: b.error, 'data-unreadable': b.id }, b.id)])) : null);
      const rows = page.jobs.map((j) => el('tr', { 'data-job': j.id, 'data-key': j.id },
        el('td', { class: 'mono clip', title: j.id }, el('a', { href: `#/q/${enc(queue)}/job/${enc(j.id)}` }, j.id)),
        el('td', { class: 'clip', title: j.name }, j.name),
        el('td', {}, retryBadge(j.retryState, false, j.failedFor), progressOf(j.progress) !== null && j.state === 'active' ? el('progress', { max: 1, value: progressOf(j.progress), title: `${Math.round(j.progress)}%` }) : null, j.stalledCounter ? el('span', { class: 'badge rs-stalled-recovered', title: 'stall recoveries' }, `stalled ×${j.stalledCounter}`) : null),
        attemptsCell(j.budget),
        el('td', { class: 'when' }, j.nextRun ? `${fmtTime(j.nextRun)} (${relative(j.nextRun)})`
          : j.state === 'active' && j.processedOn ? `running ${fmtMs(Date.now() - new Date(j.processedOn).getTime())}${j.processedBy ? ` on ${bi(j.processedBy)}` : ''}`
            : fmtTime(j.finishedOn || j.processedOn || j.timestamp)),
        el('td', { class: 'reason', title: j.failedReason || '' }, j.failedReason || '')));
      // A filter that matches nothing says so: "No jobs here." under "3
      // failed jobs; showing those matching …" read as if the 3 were lost.
      if (!page.jobs.length) {
        // A page past the end (a bookmarked "Last page" after a clean)
        // says so and leads to the first: "No jobs here." under "120
        // completed jobs." read as if the 120 were gone.
        const pastEnd = !after && !before && !filterExpr() && page.total > 0 && offset >= page.total;
        rows.push(el('tr', {}, el('td', { colspan: 6, class: 'muted', id: 'no-jobs' }, filterExpr() && !after && !before
          ? `No ${state} job matches ${bi(filterExpr())}${page.truncated ? ` among the ${page.scanned} scanned` : ''}.`
          : pastEnd ? [`This page starts at job ${offset + 1}, past the last of the ${page.total} ${state} job${page.total === 1 ? '' : 's'}. `,
            el('a', { href: `#/q/${enc(queue)}?${new URLSearchParams({ state, ...order })}` }, 'First page')]
            : 'No jobs here.')));
      }
      update(tbody, rows);
      // The other order starts on its first page, with the filter kept.
      // A prioritized list is in the order workers take its jobs (priority,
      // then age): it was labelled newest or oldest first, and a job of
      // priority 1 added last showed among the oldest.
      const newest = state === 'delayed' ? ['Due last first', 'Due soonest first']
        : state === 'prioritized' ? ['Runs last first', 'Runs next first'] : ['Newest first', 'Oldest first'];
      const lastOffset = String(page.total - ((page.total % 25) || 25));
      putKeep(pager,
        page.prev ? el('button', { id: 'first-page', onclick: () => go({ ...filter }) }, 'First page') : null,
        page.prevCursor ? el('button', { id: 'prev-page', 'data-cursor': page.prevCursor, onclick: () => go({ ...filter, before: page.prevCursor }) }, 'Previous page') : null,
        page.nextCursor ? el('button', { id: 'next-page', 'data-cursor': page.nextCursor, onclick: () => go({ ...filter, after: page.nextCursor }) }, 'Next page') : null,
        // The last page of an unfiltered list is an offset away (a filtered
        // one is scanned: its size is not known).
        page.more && !filterExpr() && page.total > 25 ? el('button', { id: 'last-page', 'data-offset': lastOffset, onclick: () => go({ offset: lastOffset }) }, 'Last page') : null,
        page.jobs.length && !filterExpr() ? el('span', { class: 'muted', id: 'page-range' }, `${page.offset + 1}–${page.nextOffset} of ${page.total}`) : null,
        page.total > 1 ? el('button', { id: 'order-toggle', onclick: () => go({ ...filter, order: asc ? 'desc' : 'asc' }) }, asc ? newest[0] : newest[1]) : null);
      put(moved, page.moved ? el('p', { class: 'alert alert-budget', id: 'page-moved', role: 'status' }, movedNote(page.moved, state, before !== '')) : null);
      renderHistogram(hist, qp.delayed, qp.storm);
      renderBudget(budget, queue, qp.budget);
      throughput();
      if (state === 'failed') {
        let fr;
        try { fr = await api(`queues/${seg(queue)}/failures`); } catch (e) { put(groups, el('p', { class: 'muted' }, e.message)); return; }
        if (gen !== app.render) return;
        renderFailureGroups(groups, fr, filter, go, bulkRetry);
      }
    }
    await load();
    if (gen !== app.render) return;
    try {
      const ops = await api('operations', LOCAL);
      for (const op of ops.operations) if (op.queue === queue && op.status === 'running') follow(op);
    } catch (e) { /* older server or no access: no progress shown */ }
    const refresh = debounce(400, load);
    live(queue, (ev) => {
      feedAdd(feed, ev);
      while (feed.children.length > 40) feed.lastChild.remove();
      refresh();
    }, info && info.eventsAfter, feed);
    every(10000, load);
  }

  // movedNote tells the operator that the jobs moved between two page
  // turns (inspect.Moved), and what the page shows instead.
  function movedNote(m, state, back) {
    const where = back ? 'ends right before' : 'goes on right after';
    if (!m.gone) return `The ${state} list changed since the last page: job ${bi(m.id)} is now at position ${m.to + 1} (it was at ${m.from + 1}). This page ${where} it, so no job is skipped or shown twice.`;
    if (m.approximate) return `Job ${bi(m.id)}, at the edge of the last page, has left the ${state} list, and so have the jobs next to it. This page ${back ? 'ends' : 'starts'} where it was (position ${m.to + 1}); jobs that moved meanwhile may be skipped or shown twice.`;
    if (['waiting', 'active', 'paused'].includes(state)) return `Job ${bi(m.id)}, at the edge of the last page, has left the ${state} list. This page ${where} the jobs that were next to it, so no job is skipped or shown twice.`;
    return `Job ${bi(m.id)}, at the edge of the last page, has left the ${state} list (or came back to it later). This page ${back ? 'ends' : 'starts'} where it was in the order.`;
  }

  function camel(state) { return state === 'waiting-children' ? 'waitingChildren' : state; }

  // The queue as last loaded, per action bar: update keeps the buttons
  // drawn first, and their handlers read the queue from here, so a Pause
  // button relabelled Resume by a refresh resumes.
  const queueShown = new WeakMap();
  function renderQueueActions(queue, qp, box, reload) {
    const s = app.session;
    if (!queueShown.has(box)) queueShown.set(box, {});
    const cur = queueShown.get(box);
    cur.qp = qp;
    const items = [el('a', { href: `#/q/${enc(queue)}/stalled`, 'data-key': 'stalled' }, 'Stalled view'), el('a', { href: `#/q/${enc(queue)}/schedulers`, id: 'schedulers-link' }, 'Job schedulers')];
    if (s.canOperate && qp.counts.delayed > 0) {
      items.push(el('button', {
        'data-key': 'promote',
        onclick: async () => {
          // The count confirmed is the most that runs: jobs delayed after
          // the page counted stay delayed.
          const shown = cur.qp.counts.delayed;
          // A job scheduler's next run is a delayed job too, and runs now
          // with the rest: the nightly report ran at noon, unannounced.
          let schedulers = 0;
          try { schedulers = (await api(`queues/${seg(queue)}/schedulers?limit=1`)).total || 0; } catch (e) { /* said nothing of them before either */ }
          const runs = schedulers ? ` The next run${schedulers === 1 ? '' : 's'} of its ${schedulers} job scheduler${schedulers === 1 ? ' is' : 's are'} among them and run${schedulers === 1 ? 's' : ''} now too, off schedule.` : '';
          const res = await act('Promote delayed jobs', `Run the ${shown} delayed job${shown === 1 ? '' : 's'} of ${bi(queue)} now? Jobs waiting for backoff keep their attempts.${runs}`, 'Promote',
            () => api(`queues/${seg(queue)}/promote`, { method: 'POST', body: { limit: shown } }));
          if (res) {
            toast(`Promoted ${res.promoted} job${res.promoted === 1 ? '' : 's'}.` + (res.left > 0 ? ` ${res.left} delayed since the count stay${res.left === 1 ? 's' : ''} delayed.` : ''));
            reload();
          }
        },
      }, 'Promote all delayed…'));
    }
    if (s.canAdmin) {
      items.push(el('button', {
        id: 'pause-queue',
        onclick: async () => {
          const paused = cur.qp.paused;
          const res = await act(paused ? 'Resume queue' : 'Pause queue', paused ? `Let workers take the jobs of ${bi(queue)} again?` : `Stop workers from taking the jobs of ${bi(queue)}? Running jobs finish.`, paused ? 'Resume' : 'Pause',
            () => api(`queues/${seg(queue)}/${paused ? 'resume' : 'pause'}`, { method: 'POST' }), !paused);
          // Said, as every other action says what it did: the badge alone
          // changed, at the page's reload.
          if (res) {
            toast(paused ? `Resumed ${bi(queue)}: workers take its jobs again.` : `Paused ${bi(queue)}: workers take none of its jobs until it is resumed; running jobs finish.`);
            reload();
          }
        },
      }, qp.paused ? 'Resume…' : 'Pause…'));
      items.push(el('button', {
        id: 'limits-button',
        onclick: async () => {
          // The global limits every worker obeys, Node's and drover's: an
          // empty field lifts its limit.
          const l = cur.qp.limits || {};
          const conc = el('input', { type: 'number', min: 1, id: 'limit-concurrency', class: 'narrow', placeholder: 'none', value: l.concurrency ?? '' });
          const rmax = el('input', { type: 'number', min: 1, id: 'limit-rate-max', class: 'narrow', placeholder: 'none', value: l.rateLimit ? l.rateLimit.max : '' });
          const rdur = el('input', { type: 'number', min: 1, id: 'limit-rate-ms', class: 'narrow', placeholder: 'ms', value: l.rateLimit ? l.rateLimit.durationMs : '' });
          const unblock = el('input', { type: 'checkbox', id: 'limit-unblock' });
          const msg = el('div', {},
            el('p', {}, `Limits every worker of ${bi(queue)} obeys, Node's and drover's. Leave a field empty to lift its limit.`),
            el('p', {}, el('label', {}, 'Global concurrency ', conc)),
            el('p', {}, el('label', {}, 'Rate limit: at most ', rmax), el('label', {}, ' jobs per ', rdur, ' ms')),
            l.rateLimitedForMs > 0 ? el('p', {}, el('label', {}, unblock, ` end the rate limit now (${fmtMs(l.rateLimitedForMs)} left)`)) : null);
          const body = () => {
            const b = {};
            if (conc.value === '') { if (l.concurrency !== null && l.concurrency !== undefined) b.removeConcurrency = true; } else b.concurrency = Number(conc.value);
            if (rmax.value === '' && rdur.value === '') { if (l.rateLimit) b.removeRateLimit = true; } else b.rateLimit = { max: Number(rmax.value), durationMs: Number(rdur.value) };
            if (unblock.checked) b.unblock = true;
            return b;
          };
          const res = await act('Queue limits', msg, 'Apply', () => {
            const b = body();
            return Object.keys(b).length ? api(`queues/${seg(queue)}/limits`, { method: 'POST', body: b }) : Promise.resolve(l);
          });
          if (res) { toast(`Limits of ${bi(queue)} applied.`); reload(); }
        },
      }, 'Limits…'));
      items.push(el('button', {
        'data-key': 'clean',
        onclick: async () => {
          // Ask with the count, then remove that many (the oldest, the ones
          // counted), not more that finished meanwhile.
          const body = { state: 'completed', grace: '1h' };
          let dry;
          try { dry = await api(`queues/${seg(queue)}/clean`, { method: 'POST', body: { ...body, dryRun: true } }); } catch (e) { toast(bi(e.message), true); return; }
          if (!dry.matched) { toast(`No completed job of ${bi(queue)} finished more than an hour ago.`); return; }
          const what = `${dry.matched} completed job${dry.matched === 1 ? '' : 's'}`;
          const res = await act('Clean completed jobs', `Remove ${bi(queue)}'s ${what} finished more than an hour ago?`, `Remove ${dry.matched}`,
            () => api(`queues/${seg(queue)}/clean`, { method: 'POST', body: { ...body, limit: dry.matched } }), true);
          if (res) { toast(`Removed ${res.removed} job${res.removed === 1 ? '' : 's'}.`); reload(); }
        },
      }, 'Clean completed…'));
      items.push(el('button', {
        class: 'danger', 'data-key': 'drain',
        onclick: async () => {
          // Counted now, not at the last refresh: the jobs waiting to run,
          // and the delayed ones when the box is ticked. Running and
          // finished jobs stay.
          let now;
          try { now = await api(`queues/${seg(queue)}`); } catch (e) { toast(bi(e.message), true); return; }
          const c = now.counts;
          const waiting = (c.waiting || 0) + (c.paused || 0) + (c.prioritized || 0);
          const delayedN = c.delayed || 0;
          const delayed = el('input', { type: 'checkbox', id: 'drain-delayed' });
          const msg = el('div', {},
            el('p', {}, `Delete ${bi(queue)}'s ${waiting} job${waiting === 1 ? '' : 's'} waiting to run (waiting, paused and prioritized)? ` +
              'Running and finished jobs, parents waiting for their children and a job scheduler\'s next run stay. This cannot be undone.'),
            el('p', {}, el('label', {}, delayed, ` also delete its ${delayedN} delayed job${delayedN === 1 ? '' : 's'}`)));
          const res = await act('Drain queue', msg, 'Drain',
            () => api(`queues/${seg(queue)}/drain`, { method: 'POST', body: { delayed: delayed.checked, expected: waiting + (delayed.checked ? delayedN : 0) } }), true);
          if (res) { toast(`Deleted ${res.removed} job${res.removed === 1 ? '' : 's'} from ${bi(queue)}.`); reload(); }
        },
      }, 'Drain…'));
      items.push(el('button', {
        class: 'danger', 'data-key': 'obliterate',
        onclick: async () => {
          // Counted now, not at the last refresh: the dialog names what
          // goes, and a queue with running jobs is refused (nothing
          // changes) rather than offered.
          let now;
          try { now = await api(`queues/${seg(queue)}`); } catch (e) { toast(bi(e.message), true); return; }
          const c = now.counts;
          if (c.active > 0) {
            toast(`Queue ${bi(queue)} has ${c.active} active job${c.active === 1 ? '' : 's'}: obliterate is refused while jobs run (nothing changes). Wait for them, or stop their workers.`, true);
            return;
          }
          const parts = STATES.filter((st) => c[camel(st)] > 0).map((st) => `${c[camel(st)]} ${st}`);
          const total = STATES.reduce((n, st) => n + (c[camel(st)] || 0), 0);
          const jobs = total ? `with its ${total} job${total === 1 ? '' : 's'} (${parts.join(', ')})` : 'with no job in it';
          const res = await act('Obliterate queue', `Delete the queue ${bi(queue)} ${jobs}, its job schedulers, limits and events? This cannot be undone.`, 'Obliterate',
            () => api(`queues/${seg(queue)}/obliterate`, { method: 'POST', body: { force: false, expected: total } }), true);
          if (res) { toast(`Obliterated ${bi(queue)}.`); location.hash = '#/'; }
        },
      }, 'Obliterate…'));
    }
    update(box, ...items);
  }

  // renderHistogram draws the delayed set's due times: one bar per window,
  // the busiest window in red, overdue jobs as the first bar.
  // chartWidth is the width a chart in box is drawn at: the box's own
  // when narrower than the chart's usual width w (a phone), so that the
  // chart is not shrunk to fit, its labels with it. Drawn 900 units wide
  // in a 330px panel, 10px labels were 3.5px high.
  function chartWidth(box, w) {
    const cw = box ? box.clientWidth : 0;
    return cw > 0 && cw < w ? Math.max(240, cw) : w;
  }

  function renderHistogram(box, st, storm) {
    const buckets = st.buckets || [];
    const W = chartWidth(box, 640), H = 150, left = 46, bottom = 26, top = 10;
    const bars = [{ count: st.overdue, overdue: true }, ...buckets];
    const max = Math.max(1, ...bars.map((b) => b.count));
    const bw = (W - left - 8) / bars.length;
    const peakStart = new Date(st.peakStart).getTime();
    const winMs = st.window;
    const g = svg('svg', { viewBox: `0 0 ${W} ${H}`, width: '100%', role: 'img', 'aria-label': 'histogram of delayed jobs by due time', id: 'histogram' });
    g.append(svg('line', { x1: left, y1: H - bottom, x2: W, y2: H - bottom, stroke: '#c7ccd6' }));
    g.append(svg('text', { x: left - 6, y: top + 8, 'text-anchor': 'end', 'font-size': 10, fill: '#6a7283' }, String(max)));
    g.append(svg('text', { x: left - 6, y: H - bottom, 'text-anchor': 'end', 'font-size': 10, fill: '#6a7283' }, '0'));
    bars.forEach((b, i) => {
      if (!b.count) return;
      const h = Math.max(1, (b.count / max) * (H - bottom - top));
      const start = b.start ? new Date(b.start).getTime() : 0;
      const inPeak = st.peakOverdue ? b.overdue : (!b.overdue && start + winMs > peakStart && start < peakStart + winMs);
      const r = svg('rect', { x: left + i * bw + 0.5, y: H - bottom - h, width: Math.max(1, bw - 1), height: h, fill: inPeak && st.alerts.length ? '#c62f2f' : (b.overdue ? '#c77700' : '#2f5bd3') });
      r.append(svg('title', {}, b.overdue ? `${b.count} overdue` : `${b.count} due ${fmtTime(b.start)}–${fmtTime(new Date(start + winMs).toISOString())}`));
      g.append(r);
    });
    const label = (i, text, anchor) => g.append(svg('text', { x: left + i * bw, y: H - 8, 'font-size': 10, fill: '#6a7283', 'text-anchor': anchor }, text));
    label(1, 'now', 'start');
    label(1 + buckets.length / 2, `+${fmtMs(storm.horizonMs / 2)}`, 'middle');
    label(bars.length, `+${fmtMs(storm.horizonMs)}`, 'end');
    // An empty delayed set says so: it read "Clustering 0%: 0 of 0 due
    // within 5.0s from <time>", a cluster of nothing at a made-up time.
    const facts = st.count === 0 ? el('p', { class: 'muted', id: 'storm-facts' }, 'No delayed job. ',
      st.growthKnown ? `Growth ${st.growth.toFixed(1)} jobs/s (alert at ${storm.growthPerSecond}).` : 'Growth: measuring…') : el('p', { class: 'muted', id: 'storm-facts' },
      `${st.count} delayed (${st.overdue} overdue, drawn first in orange; ${st.later} due later than ${fmtMs(storm.horizonMs)}). `,
      `Clustering ${pct(st.clustering)}: ${st.peakCount} of ${st.considered} due ${st.peakOverdue ? 'overdue' : `within ${fmtMs(winMs)} from ${fmtTime(st.peakStart)}`} (alert at ${pct(storm.clusterShare)} and ${storm.clusterMinJobs} jobs). `,
      st.peakSampled > 0 ? `${st.peakRetries} of ${st.peakSampled} sampled in the peak failed before (retries). ` : '',
      st.growthKnown ? `Growth ${st.growth.toFixed(1)} jobs/s (alert at ${storm.growthPerSecond}).` : 'Growth: measuring…');
    put(box, g, facts, el('h3', {}, 'Delayed-set size (growth alert)'), renderGrowth(st, storm, W));
  }

  // renderFailureGroups lists the failed jobs by normalised error, with one
  // click to show a group's jobs and one to retry them.
  function renderFailureGroups(box, fr, filter, go, bulkRetry) {
    if (!fr.groups.length) { put(box, el('p', { class: 'muted' }, 'No failed jobs.')); return; }
    const body = el('tbody', {}, ...fr.groups.map((g) => el('tr', { 'data-group': g.error, 'data-key': g.error, class: g.error === filter.error ? 'on' : '', 'aria-current': g.error === filter.error ? 'true' : null },
      el('td', { class: 'num' }, g.count),
      // An error can be thousands of characters (a message with a dump in
      // it): the group and its example show a few lines, the whole error on
      // hover, so one group does not bury the others.
      el('td', {}, el('span', { class: 'mono group-text', title: g.error }, g.error), g.unrecoverable ? el('span', { class: 'badge rs-unrecoverable', title: 'failed as unrecoverable' }, `${g.unrecoverable} unrecoverable`) : null,
        el('div', { class: 'muted group-text', title: 'the newest message of the group' }, g.example)),
      el('td', { class: 'when' }, fmtTime(g.firstSeen)), el('td', { class: 'when' }, fmtTime(g.lastSeen)),
      el('td', { class: 'buttons' },
        el('button', { 'data-show': '', onclick: () => go({ error: g.error }) }, g.error === filter.error ? 'Shown above' : 'Show'),
        bulkRetry ? el('button', { 'data-retry-group': '', onclick: () => bulkRetry(g.filter) }, 'Retry…') : null))));
    update(box, el('table', { id: 'failure-groups' },
      el('thead', {}, el('tr', {}, ...['Jobs', 'Error (numbers, ids and quoted values generalised)', 'First seen', 'Last seen', ''].map((h) => el('th', {}, h)))), body),
    fr.truncated ? el('p', { class: 'muted' }, `Grouped the newest ${fr.scanned} failed jobs.`) : null);
  }

  // renderThroughput draws completed (green, up) and failed (red, down)
  // jobs per minute as bars around one axis.
  function renderThroughput(box, tr) {
    const bs = tr.buckets || [];
    const W = chartWidth(box, 900), H = 140, left = 40, mid = 78, top = 8;
    const max = Math.max(1, ...bs.map((b) => Math.max(b.completed, b.failed)));
    const bw = (W - left - 8) / Math.max(1, bs.length);
    const g = svg('svg', { viewBox: `0 0 ${W} ${H}`, width: '100%', role: 'img', 'aria-label': 'jobs finished per minute', id: 'throughput-chart' });
    g.append(svg('line', { x1: left, y1: mid, x2: W, y2: mid, stroke: '#c7ccd6' }));
    g.append(svg('text', { x: left - 6, y: top + 8, 'text-anchor': 'end', 'font-size': 10, fill: '#6a7283' }, String(max)));
    const scale = (n) => (n / max) * (mid - top);
    let done = 0, failed = 0;
    bs.forEach((b, i) => {
      done += b.completed; failed += b.failed;
      const x = left + i * bw + 0.5;
      const title = `${fmtTime(b.start)}: ${b.completed} completed, ${b.failed} failed`;
      if (b.completed) {
        const r = svg('rect', { x, y: mid - scale(b.completed), width: Math.max(1, bw - 1), height: scale(b.completed), fill: '#1f8a4c', 'data-completed': b.completed });
        r.append(svg('title', {}, title));
        g.append(r);
      }
      if (b.failed) {
        const r = svg('rect', { x, y: mid, width: Math.max(1, bw - 1), height: scale(b.failed), fill: '#c62f2f', 'data-failed': b.failed });
        r.append(svg('title', {}, title));
        g.append(r);
      }
    });
    if (bs.length) {
      g.append(svg('text', { x: left, y: H - 4, 'font-size': 10, fill: '#6a7283' }, fmtTime(bs[0].start)));
      g.append(svg('text', { x: W - 8, y: H - 4, 'font-size': 10, fill: '#6a7283', 'text-anchor': 'end' }, 'now'));
    }
    const how = tr.source === 'metrics'
      ? 'From BullMQ\'s per-minute metrics lists, written by workers with the metrics option (jobs finished by workers without it are not counted).'
      : 'No worker writes BullMQ\'s metrics for this queue, so these are counted from the finish times of the jobs the queue still keeps: jobs removed on completion or failure are not counted.';
    g.dataset.source = tr.source;
    put(box, g, el('p', { class: 'muted', id: 'throughput-facts', 'data-source': tr.source },
      `${done} completed and ${failed} failed in the last hour (completed up, failed down). ${how}`));
  }

  // renderGrowth draws the delayed set's size over the last minute as the
  // dashboard saw it: the line the growth alert is computed from.
  function renderGrowth(st, storm, W) {
    const sizes = st.sizes || [];
    const H = 90, left = 46, bottom = 18, top = 8;
    const g = svg('svg', { viewBox: `0 0 ${W} ${H}`, width: '100%', role: 'img', 'aria-label': 'delayed-set size over time', id: 'growth-chart' });
    if (sizes.length < 2) {
      // Two lines: one ran past a phone's chart.
      g.append(svg('text', { x: left, y: H / 2 - 6, 'font-size': 11, fill: '#6a7283' }, 'Collecting sizes: the chart fills in'));
      g.append(svg('text', { x: left, y: H / 2 + 10, 'font-size': 11, fill: '#6a7283' }, 'as this page refreshes.'));
      return g;
    }
    const t0 = new Date(sizes[0].at).getTime(), t1 = new Date(sizes[sizes.length - 1].at).getTime();
    const max = Math.max(1, ...sizes.map((p) => p.count));
    const px = (p) => left + ((new Date(p.at).getTime() - t0) / Math.max(1, t1 - t0)) * (W - left - 8);
    const py = (p) => H - bottom - (p.count / max) * (H - bottom - top);
    g.append(svg('line', { x1: left, y1: H - bottom, x2: W, y2: H - bottom, stroke: '#c7ccd6' }));
    g.append(svg('text', { x: left - 6, y: top + 8, 'text-anchor': 'end', 'font-size': 10, fill: '#6a7283' }, String(max)));
    g.append(svg('text', { x: left - 6, y: H - bottom, 'text-anchor': 'end', 'font-size': 10, fill: '#6a7283' }, '0'));
    g.append(svg('polyline', { points: sizes.map((p) => `${px(p).toFixed(1)},${py(p).toFixed(1)}`).join(' '), fill: 'none', stroke: st.growthKnown && st.growth >= storm.growthPerSecond ? '#c62f2f' : '#2f5bd3', 'stroke-width': 2 }));
    g.append(svg('text', { x: left, y: H - 4, 'font-size': 10, fill: '#6a7283' }, fmtTime(sizes[0].at)));
    g.append(svg('text', { x: W - 8, y: H - 4, 'font-size': 10, fill: '#6a7283', 'text-anchor': 'end' }, fmtTime(sizes[sizes.length - 1].at)));
    return g;
  }

  function renderBudget(box, queue, rep) {
    if (!rep.jobs.length) {
      put(box, el('p', { class: 'muted' }, `No live job has used more than ${pct(rep.threshold)} of its attempts.`));
      return;
    }
    update(box, el('table', {}, el('tbody', {}, ...rep.jobs.slice(0, 20).map((j) => el('tr', { 'data-key': j.id },
      el('td', { class: 'mono' }, el('a', { href: `#/q/${enc(queue)}/job/${enc(j.id)}` }, j.id)),
      el('td', {}, j.name), el('td', {}, retryBadge(j.retryState, false, j.failedFor)),
      el('td', { class: 'num' }, j.budget.made > j.budget.allowed ? overBudget(j.budget) : `${j.budget.made} of ${j.budget.allowed} used`))))),
    rep.jobs.length > 20 ? el('p', { class: 'muted' }, `and ${rep.jobs.length - 20} more`) : null);
  }

  // ---- job page ----------------------------------------------------------

  async function pageJob(queue, id) {
    const gen = app.render;
    titled(`job ${bi(id)}`, bi(queue));
    const box = el('div', {}, el('p', { class: 'panel muted', 'data-loading': '' }, 'Loading the job…'));
    const feed = feedList('of this job');
    put($main, 
      crumbs({ text: 'Queues', href: '#/' }, { text: queue, href: `#/q/${enc(queue)}` }, { text: `job ${id}` }),
      box, el('div', { class: 'panel' }, el('h2', {}, 'Live events for this job'), feed));
    let nextRunEl = null;
    let job = null;
    // The action buttons act on the job as last loaded (cur.d), so the
    // buttons drawn before stay when a refresh draws the same ones.
    const cur = { d: null };
    async function load() {
      let d;
      try { d = await api(`queues/${seg(queue)}/jobs/${seg(id)}`); } catch (e) {
        // Headed as every page is (a screen reader's heading list was
        // empty here): the job's heading says it is gone.
        if (gen === app.render && !noQueue(queue, e)) {
          put(box, e.status === 404
            ? el('div', { class: 'panel', id: 'job-gone' }, el('h1', {}, nameEl(`Job ${bi(id)} is gone (removed, or never existed).`)))
            : el('p', { class: 'panel' }, `Could not load the job: ${bi(e.message)}`));
        }
        return;
      }
      if (gen !== app.render) return;
      job = d;
      cur.d = d;
      // What had the keyboard, to give it a place if it goes (below).
      const focused = box.contains(document.activeElement) ? document.activeElement : null;
      const fresh = renderJob(queue, d, load, cur);
      // Keep the facts panel's action bar when it draws the same buttons:
      // only the facts beside it are swapped. The page redraws every 10 s
      // and after the job's events, and a Retry or Remove clicked as the
      // bar was replaced did nothing.
      const was = box.querySelector(':scope > [data-part="facts"]');
      const now = fresh.find((n) => n && n.dataset && n.dataset.part === 'facts');
      const bar = (p) => { const a = p.querySelector(':scope > .spaced'); return a ? a.outerHTML : ''; };
      if (was && now && bar(was) === bar(now)) {
        putInPlace(was, now.querySelector(':scope > dl.kv'), was.querySelector(':scope > .spaced'));
        fresh[fresh.indexOf(now)] = was;
      }
      keepSame(box, fresh);
      // A flow panel or timeline whose content changed is updated in the
      // nodes already on the page, so a link the user focused or text they
      // selected in its unchanged rest stays (a child that completed only
      // changes the counts and drops its own link).
      for (const name of ['flow', 'timeline']) {
        const i = fresh.findIndex((n) => n && n.dataset && n.dataset.part === name);
        const was2 = box.querySelector(`:scope > [data-part="${name}"]`);
        if (i < 0 || !was2 || fresh[i] === was2) continue;
        const html = partHTML.get(fresh[i]) || fresh[i].outerHTML;
        fresh[i] = morph(was2, fresh[i]);
        partHTML.set(fresh[i], html);
      }
      putInPlace(box, ...fresh);
      nextRunEl = box.querySelector('#next-run-rel');
      // The button that had the keyboard went with the job's old state
      // (the Run now just confirmed, a Retry the job moved away from):
      // the page's heading, which names the new state, takes the focus.
      // It fell to the page's body, and the next Tab started at the top.
      if (focused && !focused.isConnected) {
        const h = box.querySelector('h1');
        if (h) { h.setAttribute('tabindex', '-1'); h.focus(); }
      }
    }
    await load();
    if (gen !== app.render) return;
    every(1000, () => { if (nextRunEl && job && job.nextRun) nextRunEl.textContent = relative(job.nextRun); });
    const refresh = debounce(250, load);
    live(queue, (ev) => {
      if (ev.jobId !== id) return;
      feedAdd(feed, ev);
      refresh();
    }, job && job.eventsAfter, feed);
    every(10000, load);
  }

  // renderJob draws job d; its action buttons act on cur.d, the job as
  // last loaded, whose values their confirmations name.
  function renderJob(queue, d, reload, cur) {
    const s = app.session;
    const b = d.budget;
    const out = [];
    out.push(el('h1', {}, nameEl(`Job ${bi(d.id)}`), nameEl(d.name, 'muted'), retryBadge(d.retryState, true, d.failedFor),
      d.stalledCounter ? el('span', { class: 'badge rs-stalled-recovered' }, `stalled ×${d.stalledCounter}`) : null));

    const facts = el('dl', { class: 'kv' });
    const fact = (k, ...v) => facts.append(el('dt', {}, k), el('dd', {}, ...v));
    fact('State', d.state);
    // A job failed for good has no attempts "left": say why it stopped.
    // Past its budget (a retry kept the spent attempts), the count says
    // so: "3 of 2 used" read as a miscount.
    const spent = b.made > b.allowed ? overBudget(b) : `${b.made} of ${b.allowed} used`;
    const used = d.state === 'failed'
      ? `${spent}; ${FAILED_FOR[d.failedFor] || 'failed for good'}${d.failedFor === 'unrecoverable' ? ' (a retry is likely to fail the same way)' : ''}`
      : `${spent}, ${b.left} left`;
    fact('Attempts', el('span', { id: 'attempts' }, used), b.started !== b.made ? el('span', { class: 'muted' }, ` (${b.started} started)`) : null);
    const share = progressOf(d.progress);
    // The bar is clamped to 0..100; the number is the one reported (a
    // processor may report 150 or -5: BullMQ takes any number).
    if (share !== null) fact('Progress', el('progress', { id: 'job-progress', max: 1, value: share }), el('span', { id: 'job-progress-value' }, ` ${Math.round(d.progress)}%`));
    else if (d.progress !== undefined) fact('Progress', el('code', {}, JSON.stringify(d.progress)));
    if (d.state === 'active' && d.processedOn) {
      fact('Running', el('span', { id: 'running-for' }, `for ${fmtMs(Date.now() - new Date(d.processedOn).getTime())}`), d.processedBy ? ` on worker ${bi(d.processedBy)}` : '');
    }
    if (d.nextRun) {
      fact('Next run', el('span', { class: 'nextrun', id: 'next-run' }, fmtTime(d.nextRun)), ' ', el('span', { id: 'next-run-rel', class: 'muted' }, relative(d.nextRun)));
    }
    if (d.backoff) {
      const bo = d.backoff;
      fact('Backoff', ['fixed', 'exponential'].includes(bo.type)
        ? `${bo.type}, ${fmtMs(bo.delay)}${bo.jitter ? `, jitter ${Math.round(bo.jitter * 100)}%` : ', no jitter'}`
        : `custom strategy "${bi(bo.type)}"`);
    }
    if (d.priority) fact('Priority', el('span', { id: 'job-priority' }, String(d.priority)), el('span', { class: 'muted' }, ' (1 runs first)'));
    fact('Created', fmtTime(d.timestamp));
    if (d.processedOn) fact('Last started', fmtTime(d.processedOn), d.processedBy ? ` by ${bi(d.processedBy)}` : '');
    if (d.finishedOn) fact('Finished', fmtTime(d.finishedOn));
    if (d.lock) fact('Lock', d.lock.held ? `held, expires in ${fmtMs(d.lock.ttl)}` : 'missing: the job is stalling and the next stalled check recovers it');
    if (d.deferredFailure) fact('Deferred failure', d.deferredFailure);
    if (d.deduplication) fact('Deduplication', el('span', { id: 'dedup' }, dedupNote(d)));

    const actions = el('div', { class: 'row', id: 'job-actions' });
    // A job moved or gone since the page drew it (another operator, a
    // worker): the action is refused (409, 404); the toast says why, and
    // the page shows where the job is now instead of its old state.
    const moved = (p) => p.catch((e) => { if (e.status === 409 || e.status === 404) reload(); throw e; });
    if (s.canOperate && ['delayed', 'failed', 'completed'].includes(d.state)) {
      actions.append(el('button', {
        class: 'primary',
        onclick: async () => {
          const d = cur.d, b = d.budget;
          const res = await act('Retry with fresh attempts', `Run job ${bi(d.id)} now with its whole budget of ${b.allowed} attempt${b.allowed === 1 ? '' : 's'} back?`, 'Retry',
            () => moved(api(`queues/${seg(queue)}/jobs/${seg(d.id)}/retry`, { method: 'POST', body: { resetAttempts: true, from: d.state } })));
          if (res) { toast(`Job ${bi(d.id)} retried with fresh attempts.`); reload(); }
        },
      }, 'Retry with fresh attempts'));
      if (d.state === 'delayed') {
        actions.append(el('button', {
          onclick: async () => {
            const d = cur.d, b = d.budget;
            const res = await act('Run now', `Run job ${bi(d.id)} now, keeping its ${b.made} spent attempt${b.made === 1 ? '' : 's'}?`, 'Run now',
              () => moved(api(`queues/${seg(queue)}/jobs/${seg(d.id)}/promote`, { method: 'POST' })));
            if (res) { toast(`Job ${bi(d.id)} promoted.`); reload(); }
          },
        }, 'Run now (keep attempts)'));
      } else {
        actions.append(el('button', {
          onclick: async () => {
            const d = cur.d, b = d.budget;
            const last = b.left > 0 ? '' : ` It has no attempt left of its ${b.allowed}: if this run fails, it fails for good.`;
            const res = await act('Retry', `Run job ${bi(d.id)} again, keeping its ${b.made} spent attempt${b.made === 1 ? '' : 's'}?${last}`, 'Retry',
              () => moved(api(`queues/${seg(queue)}/jobs/${seg(d.id)}/retry`, { method: 'POST', body: { resetAttempts: false, from: d.state } })));
            if (res) { toast(`Job ${bi(d.id)} retried.`); reload(); }
          },
        }, 'Retry (keep attempts)'));
      }
    }
    const running = d.state === 'active';
    // A job scheduler's pending run cannot be cancelled or removed (the
    // engine refuses: that would stop the scheduler); the page says who
    // made it and where to stop it, instead of two buttons that failed.
    if (d.repeatJobKey) {
      fact('Made by', el('span', { id: 'made-by-scheduler' }, `job scheduler ${bi(d.repeatJobKey)}`,
        d.schedulerPending ? ': its pending run (a worker that takes it makes the next one; remove the scheduler to stop it) ' : ' ',
        el('a', { href: `#/q/${enc(queue)}/schedulers` }, 'job schedulers')));
    }
    if (s.canOperate && !d.schedulerPending && (running || ['waiting', 'prioritized', 'delayed'].includes(d.state))) {
      // Cancel reaches the drover worker running the job, in any process;
      // the API refuses (409) when a Node BullMQ worker runs it. A job not
      // running yet fails for good at once (it has no attempt to retry).
      actions.append(el('button', {
        class: 'danger', id: 'cancel-job',
        onclick: async () => {
          const d = cur.d, running = d.state === 'active';
          const reason = el('input', { type: 'text', id: 'cancel-reason', maxlength: '1024', placeholder: 'reason (stored as the failure)', 'aria-label': 'reason (stored as the failure)' });
          const retry = el('input', { type: 'checkbox', id: 'cancel-retry' });
          const msg = running
            ? el('div', {},
              el('p', {}, `Cancel the running attempt of job ${bi(d.id)}? The worker running it stops it, and the job fails for good unless you ask for a retry.`),
              el('p', {}, reason),
              el('label', {}, retry, ' retry it per its attempts instead'))
            : el('div', {},
              el('p', {}, `Cancel job ${bi(d.id)}? It has not started: it fails for good now, without running.`),
              el('p', {}, reason));
          const res = await act(running ? 'Cancel running job' : 'Cancel job', msg, running ? 'Cancel the attempt' : 'Cancel the job',
            () => moved(api(`queues/${seg(queue)}/jobs/${seg(d.id)}/cancel`, { method: 'POST', body: { reason: reason.value, retry: retry.checked, from: d.state } })), true);
          if (res) { toast(`Job ${bi(d.id)} cancelled.`); reload(); }
        },
      }, 'Cancel…'));
    }
    // A job not running yet can be given another priority, and a delayed
    // one another due time (BullMQ's changePriority and changeDelay); not a
    // job scheduler's pending run, which the scheduler times and makes
    // (change the scheduler instead).
    if (s.canOperate && !d.schedulerPending && ['waiting', 'prioritized', 'delayed'].includes(d.state)) {
      actions.append(el('button', {
        id: 'change-priority',
        onclick: async () => {
          const d = cur.d;
          const value = el('input', { type: 'number', id: 'priority-value', min: '0', max: String(MAX_PRIORITY), step: '1', value: String(d.priority || 0), 'aria-label': 'new priority' });
          const lifo = el('input', { type: 'checkbox', id: 'priority-lifo' });
          const msg = el('div', {},
            el('p', {}, `Give job ${bi(d.id)} priority (now ${d.priority || 'none'}): 1 runs first, higher numbers later, up to ${MAX_PRIORITY}; 0 takes it away (jobs without a priority run before prioritized ones).`),
            el('p', {}, value),
            el('label', {}, lifo, ' first among the jobs of that priority'));
          const num = () => (value.value.trim() === '' ? null : Number(value.value));
          const res = await act('Change priority', msg, 'Change priority',
            () => moved(api(`queues/${seg(queue)}/jobs/${seg(d.id)}/priority`, { method: 'POST', body: { priority: num(), lifo: lifo.checked } })));
          if (res) { toast(`Job ${bi(d.id)} now has priority ${num() || 'none'}.`); reload(); }
        },
      }, 'Change priority…'));
    }
    if (s.canOperate && !d.schedulerPending && d.state === 'delayed') {
      actions.append(el('button', {
        id: 'change-delay',
        onclick: async () => {
          const d = cur.d;
          const secs = el('input', { type: 'number', id: 'delay-seconds', min: '0', step: 'any', 'aria-label': 'seconds from now' });
          const msg = el('div', {},
            el('p', {}, `Make job ${bi(d.id)} due this many seconds from now${d.nextRun ? ` (it is due ${relative(d.nextRun)})` : ''}, keeping its attempts:`),
            el('p', {}, secs));
          const ms = () => (secs.value.trim() === '' ? null : Math.round(Number(secs.value) * 1000));
          const res = await act('Change delay', msg, 'Change delay',
            () => moved(api(`queues/${seg(queue)}/jobs/${seg(d.id)}/delay`, { method: 'POST', body: { delayMs: ms() } })));
          if (res) { toast(`Job ${bi(d.id)} is due in ${fmtMs(ms()) || '0s'}.`); reload(); }
        },
      }, 'Change delay…'));
    }
    if (s.canAdmin && d.state !== 'active' && !d.schedulerPending) {
      actions.append(el('button', {
        class: 'danger',
        onclick: async () => {
          // Removal takes a flow parent's children (and theirs) along, as
          // BullMQ's does, and releases the job's own parent: say so.
          const d = cur.d;
          const c = d.children;
          const kids = c ? c.pending + c.completed + c.failed + c.ignored : 0;
          const what = `job ${bi(d.id)} and its logs${kids ? `, with its ${kids} flow ${kids === 1 ? 'child' : 'children'} and their own children, in their queues` : ''}`;
          const parent = d.parent ? ` Its parent ${bi(`${d.parent.queue}/${d.parent.id}`)} stops waiting for it.` : '';
          const res = await act('Remove job', `Delete ${what}?${parent} This cannot be undone.`, 'Remove',
            () => moved(api(`queues/${seg(queue)}/jobs/${seg(d.id)}/remove`, { method: 'POST' })), true);
          if (res) { toast(`Job ${bi(d.id)} removed.`); location.hash = `#/q/${enc(queue)}`; }
        },
      }, 'Remove…'));
    }
    out.push(el('div', { class: 'panel', 'data-part': 'facts' }, facts, actions.children.length ? el('div', { class: 'spaced' }, actions) : null));
    if (d.parent || d.children) out.push(flowPanel(d));

    out.push(el('div', { class: 'panel', 'data-part': 'timeline' }, el('h2', {}, 'Attempt timeline'),
      !(d.timeline || []).length ? null : el('p', { class: 'muted', id: 'timeline-source' }, d.timelineSource === 'derived'
        ? 'No drover worker recorded these attempts (drover workers record a job\'s attempts from its first failure or stall on; a first try that completes, or a Node BullMQ worker, leaves no record): they are rebuilt from the job\'s counters and options, and only the last attempt\'s times are known.' + derivedOrder(d.timeline)
        : 'Recorded by drover workers, attempt by attempt; attempts marked "no drover record" were not.'),
      timelineBox(d)));

    if (d.failedReason) {
      out.push(el('div', { class: 'panel' }, el('h2', {}, d.state === 'failed' ? 'Failed reason' : 'Last failure'), bigPre({ id: 'failed-reason' }, d.failedReason, () => cur.d.failedReason || '')));
    }
    const grid = el('div', { class: 'grid2' });
    grid.append(el('div', { class: 'panel' }, el('h2', {}, 'Data'), bigPre({ id: 'job-data' }, pretty(d.data), () => pretty(cur.d.data))));
    // The options show for a job with a return value too: a completed job
    // showed its return value in their place, and its priority, delay,
    // backoff and removal options could not be seen before retrying it.
    if (d.returnvalue !== undefined) grid.append(el('div', { class: 'panel' }, el('h2', {}, 'Return value'), bigPre({ id: 'job-returnvalue' }, pretty(d.returnvalue), () => pretty(cur.d.returnvalue))));
    grid.append(el('div', { class: 'panel' }, el('h2', {}, 'Options'), bigPre({ id: 'job-opts' }, pretty(d.opts), () => pretty(cur.d.opts))));
    out.push(grid);
    if (d.stacktrace.length) {
      out.push(el('div', { class: 'panel' }, el('h2', {}, `Stack traces (${d.stacktrace.length}, oldest first)`),
        ...d.stacktrace.map((st, i) => el('details', { open: i === d.stacktrace.length - 1 }, el('summary', {}, oneLine(st.split('\n')[0], 300)), bigPre({}, st, () => (cur.d.stacktrace || [])[i] || '')))));
    }
    // The API sends the newest lines only (inspect.LogLimit): say so when
    // the job has more, so none looks like the first.
    const logsTitle = d.logs.length < d.logCount
      ? `Logs (the newest ${d.logs.length} of ${d.logCount} lines)`
      : `Logs (${d.logCount} line${d.logCount === 1 ? '' : 's'})`;
    out.push(el('div', { class: 'panel' }, el('h2', { id: 'logs-heading' }, logsTitle),
      d.logs.length ? bigPre({ id: 'job-logs' }, d.logs.join('\n'), () => cur.d.logs.join('\n')) : el('p', { class: 'muted' }, 'No log lines.')));
    return out;
  }

  // derivedOrder says, for a timeline rebuilt from counters, that the
  // order of the attempts before the last is not known when they are of
  // more than one kind: the counters say how many failed, stalled or moved
  // the job, not in which order, and the picture draws failures first,
  // then stalls, then moves. A Node job that stalled, then failed, was
  // drawn "1 failed, 2 stalled" with nothing to say that was a guess.
  function derivedOrder(timeline) {
    const kind = (a) => (a.outcome === 'stalled' ? 'stall' : a.outcome === 'unknown' || a.outcome === 'delayed' || a.outcome === 'requeued' ? 'move' : a.outcome === 'fresh-attempts' ? '' : 'failure');
    // The last attempt is known when the job's state comes from it (it
    // completed, runs, failed for good, waits for its backoff or its
    // delay); a waiting job's last one may be a failure or a stall.
    const run = timeline.filter((a) => !a.outside);
    const last = run[run.length - 1];
    const known = last && ['completed', 'active', 'retries-exhausted', 'failed', 'failed-unrecoverable', 'retry-delayed', 'delayed', 'waiting-children', 'requeued'].includes(last.outcome);
    const kinds = new Set((known ? run.slice(0, -1) : run).map(kind).filter(Boolean));
    return kinds.size > 1 ? ' Which of the earlier attempts came first is not known: failures are drawn first, then stalls, then other moves.' : '';
  }

  // dedupNote says who holds a job's deduplication id (inspect.Deduplication):
  // while it is held, an add with the same id makes no new job.
  function dedupNote(d) {
    const dd = d.deduplication;
    const until = dd.expires ? `, until ${fmtTime(dd.expires)} (${relative(dd.expires)})` : ', until it finishes or is removed';
    if (dd.jobId === d.id) return `id ${bi(dd.id)}: held by this job${until}; adds with this id make no new job`;
    if (dd.jobId) return `id ${bi(dd.id)}: now held by job ${bi(dd.jobId)} (${dd.state})${until}`;
    return `id ${bi(dd.id)}: no longer held; the next add with this id makes a new job`;
  }

  // textWidth measures s as the page draws it at px pixels.
  const measure = document.createElement('canvas').getContext('2d');
  function textWidth(s, px) {
    measure.font = `${px}px ${getComputedStyle(document.body).fontFamily}`;
    return measure.measureText(s).width;
  }

  // childFailure says what a failed child's failure did to its parent,
  // by the policy its stored options name (BullMQ's short names).
  function childFailure(opts) {
    const o = opts || {};
    if (o.fpof || o.failParentOnFailure) return 'Its failure fails the parent (failParentOnFailure).';
    if (o.cpof || o.continueParentOnFailure) return 'The parent went on without it (continueParentOnFailure).';
    if (o.idof || o.ignoreDependencyOnFailure) return 'The parent ignores its failure (ignoreDependencyOnFailure).';
    if (o.rdof || o.removeDependencyOnFailure) return 'The parent no longer counts it among its children (removeDependencyOnFailure).';
    return 'The parent waits for it until it is retried or removed.';
  }

  // flowPanel shows a flow job's parent and children: what a parent in
  // waiting-children still waits for.
  function flowPanel(d) {
    const link = (r) => (r.prefix
      ? el('span', { class: 'mono', title: `under prefix ${bi(r.prefix)}, out of this dashboard's reach` }, bi(`${r.prefix}:${r.queue}/${r.id}`))
      : el('a', { class: 'mono', href: `#/q/${enc(r.queue)}/job/${enc(r.id)}`, 'data-ref': `${r.queue}/${r.id}` }, bi(`${r.queue}/${r.id}`)));
    const box = el('div', { class: 'panel', id: 'flow', 'data-part': 'flow' }, el('h2', {}, 'Flow'));
    if (d.parent) box.append(el('p', { id: 'flow-parent' }, 'Child of ', link(d.parent), '.', d.state === 'failed' ? ` ${childFailure(d.opts)}` : ''));
    const c = d.children;
    if (c) {
      box.append(el('p', { id: 'flow-children' }, `Children: ${c.pending} pending, ${c.completed} completed, ${c.failed} failed the parent, ${c.ignored} failed without failing it (ignored).`));
      const list = (title, refs, total, id) => (refs.length ? el('div', { id }, el('h3', {}, title),
        el('ul', { class: 'refs' }, ...refs.map((r) => el('li', { 'data-key': `${r.prefix || ''}:${r.queue}/${r.id}` }, link(r)))),
        total > refs.length ? el('p', { class: 'muted' }, `and ${total - refs.length} more`) : null) : null);
      box.append(...[list(d.state === 'waiting-children' ? 'Waiting for' : 'Pending', c.waitingFor, c.pending, 'flow-waiting'),
        list('Failed the parent', c.failedChildren, c.failed, 'flow-failed'),
        // The finished ones too: a finished flow's parent named none of
        // its children, so they could not be reached from it.
        list('Completed', c.completedChildren || [], c.completed, 'flow-completed'),
        list('Failed, ignored by the parent', c.ignoredChildren || [], c.ignored, 'flow-ignored')].filter(Boolean));
    }
    return box;
  }

  // The outcomes after which a job is failed for good (drover.Outcome.Failed).
  const FINAL_FAILURES = ['failed', 'failed-unrecoverable', 'retries-exhausted', 'cancelled', 'timed-out', 'failed-unrun'];
  // Keys are drover.Outcome names (outcome.go), plus 'active'.
  const OUTCOME = {
    completed: { fill: '#1f8a4c', label: 'completed' },
    failed: { fill: '#c62f2f', label: 'failed for good' },
    'retries-exhausted': { fill: '#c62f2f', label: 'retries exhausted' },
    'failed-unrecoverable': { fill: '#8d1f1f', label: 'failed: unrecoverable' },
    retried: { fill: '#c77700', label: 'failed, retried' },
    'retry-delayed': { fill: '#c77700', label: 'failed, backoff' },
    delayed: { fill: '#6a7283', label: 'delayed by the job' },
    requeued: { fill: '#6a7283', label: 'requeued' },
    'rate-limited': { fill: '#6a7283', label: 'rate limited, requeued' },
    stalled: { fill: '#8a4fc7', label: 'stalled' },
    cancelled: { fill: '#5b3a1a', label: 'cancelled' },
    'timed-out': { fill: '#b0461c', label: 'timed out' },
    'waiting-children': { fill: '#2f7f8a', label: 'waited for children' },
    'failed-unrun': { fill: '#5b3a1a', label: 'failed without running' },
    'fresh-attempts': { fill: '#0f6b5c', label: 'retried with fresh attempts' },
    active: { fill: '#2f5bd3', label: 'running' },
    unknown: { fill: '#9aa1ae', label: 'no drover record' },
  };
  const outcomeOf = (a) => a.outcome;

  // TIMELINE_HEAD and TIMELINE_TAIL: a long history keeps its first and
  // newest attempts and folds the ones between into one box.
  const TIMELINE_HEAD = 2, TIMELINE_TAIL = 6;

  // timelineBox is the attempt timeline with its legend (HTML, so it is never
  // clipped), scrolled to the newest attempt.
  function timelineBox(d) {
    if (!(d.timeline || []).length) return el('p', { class: 'muted' }, 'No attempt yet.');
    const pic = drawTimeline(d);
    const wrap = el('div', { class: 'timeline-wrap', id: 'timeline-wrap' }, pic);
    const seen = new Set((d.timeline || []).map(outcomeOf));
    const legend = el('ul', { class: 'legend', id: 'timeline-legend' },
      ...Object.entries(OUTCOME).filter(([k]) => seen.has(k) || ['completed', 'retry-delayed', 'retries-exhausted', 'stalled'].includes(k)).map(([k, o]) =>
        el('li', { 'data-legend': k }, el('span', { class: `swatch sw-${k}` }), o.label)));
    // Once on the page, show the newest attempt.
    requestAnimationFrame(() => { wrap.scrollLeft = wrap.scrollWidth; });
    return el('div', {}, wrap, legend);
  }

  // drawTimeline draws the attempts as boxes joined by the waits between
  // them; a waiting-for-backoff job ends in its next-run marker. Attempts
  // drover no longer keeps start the picture as one box, and a long history
  // folds its middle.
  function drawTimeline(d) {
    const all = d.timeline || [];
    if (!all.length) return el('p', { class: 'muted' }, 'No attempt yet.');
    const boxW = 200, boxH = 58, y = 24, H = 110;
    // The waits between attempts range from milliseconds to days: their
    // length grows with the log of the wait.
    const gapW = (ms) => (ms === null ? 150 : Math.min(260, 150 + 22 * Math.log10(1 + ms / 10)));
    // A gap is at least as wide as its labels, so they never run into the
    // boxes either side.
    const fits = (w, ...labels) => Math.max(w, ...labels.map((l) => (l ? textWidth(l, 11) + 16 : 0)));
    // What to draw: the kept attempts, folding the middle of long ones.
    let atts = all.map((a) => ({ a }));
    if (all.length > TIMELINE_HEAD + TIMELINE_TAIL + 1) {
      const folded = all.slice(TIMELINE_HEAD, all.length - TIMELINE_TAIL);
      atts = [...all.slice(0, TIMELINE_HEAD).map((a) => ({ a })),
        { fold: folded },
        ...all.slice(all.length - TIMELINE_TAIL).map((a) => ({ a }))];
    }
    if (d.timelineOmitted) atts.unshift({ omitted: d.timelineOmitted });
    const items = [];
    let x = 10;
    atts.forEach((item, i) => {
      const it = { ...item, x };
      items.push(it);
      x += boxW;
      const a = item.a;
      const next = atts[i + 1];
      if (!a) { // a fold or the omitted attempts: a short link to the next box
        if (next) { it.gap = { w: 40, above: '', below: '' }; x += 40; }
        return;
      }
      let why = '';
      if (a.outcome === 'retry-delayed') why = `backoff ${fmtMs(a.backoff)}`;
      else if (a.outcome === 'delayed') why = `delayed ${fmtMs(a.backoff)}`;
      else if (a.outcome === 'retried') why = 'retried at once';
      else if (a.outcome === 'stalled') why = 'recovered by the stalled check';
      else if (a.outcome === 'requeued') why = 'requeued';
      else if (a.outcome === 'waiting-children') why = 'its children ran';
      else if (a.outcome === 'rate-limited') why = 'waited for the rate limit';
      // A job that failed for good runs again only when someone retries it
      // (Job.Retry, a bulk retry, the dashboard, drover retry).
      else if (FINAL_FAILURES.includes(a.outcome) && next && next.a) why = 'retried by hand';
      // After a retry with fresh attempts the numbers start again (when it
      // reset the attempts started): the boundary box says so.
      else if (a.fresh && next && next.a) why = a.fresh.resetStarted ? `from #${next.a.n} again` : '';
      if (next) {
        let waitMs = null;
        if (next.a && a.end && next.a.start) waitMs = new Date(next.a.start) - new Date(a.end);
        const below = waitMs === null ? '' : `next attempt ${fmtMs(waitMs)} later`;
        it.gap = { w: fits(gapW(waitMs), why, below), above: why, below };
        x += it.gap.w;
      } else if (d.nextRun && (a.outcome === 'retry-delayed' || a.outcome === 'delayed' || a.outcome === 'retried')) {
        it.gap = { w: fits(gapW(a.backoff || 0), why), above: why, below: 'waiting', next: true };
        x += it.gap.w + 110;
      }
    });
    const W = Math.max(x + 10, 560);
    const g = svg('svg', { class: 'timeline', id: 'timeline', width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': 'attempt timeline' });
    g.append(svg('defs', {}, svg('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' },
      svg('path', { d: 'M 0 0 L 10 5 L 0 10 z', fill: '#6a7283' }))));
    for (const it of items) {
      const a = it.a;
      if (!a) {
        const n = it.fold ? it.fold.length : it.omitted;
        const grp = svg('g', it.fold ? { 'data-fold': n, id: 'timeline-fold' } : { 'data-omitted': n, id: 'timeline-omitted' });
        grp.append(svg('rect', { x: it.x, y, width: boxW, height: boxH, rx: 8, fill: '#f1f3f7', stroke: '#9aa1ae', 'stroke-width': 1.5, 'stroke-dasharray': '4 3' }));
        if (it.fold) {
          const counts = {};
          for (const f of it.fold) counts[OUTCOME[outcomeOf(f)] ? OUTCOME[outcomeOf(f)].label : f.outcome] = (counts[OUTCOME[outcomeOf(f)] ? OUTCOME[outcomeOf(f)].label : f.outcome] || 0) + 1;
          grp.append(svg('title', {}, `attempts #${it.fold[0].n}–#${it.fold[it.fold.length - 1].n}: ${Object.entries(counts).map(([k, v]) => `${v}× ${k}`).join(', ')}`));
          grp.append(svg('text', { x: it.x + 10, y: y + 22, 'font-size': 13, 'font-weight': 700, fill: '#1d2330' }, `#${it.fold[0].n}–#${it.fold[it.fold.length - 1].n}: ${n} attempts`));
          grp.append(svg('text', { x: it.x + 10, y: y + 40, 'font-size': 11, fill: '#6a7283' }, Object.entries(counts).map(([k, v]) => `${v}× ${k}`).join(', ').slice(0, 30)));
        } else {
          grp.append(svg('title', {}, `attempts #1–#${n}: not kept (drover keeps a job's newest 25 attempts)`));
          grp.append(svg('text', { x: it.x + 10, y: y + 22, 'font-size': 13, 'font-weight': 700, fill: '#1d2330' }, n === 1 ? '#1: not kept' : `#1–#${n}: not kept`));
          grp.append(svg('text', { x: it.x + 10, y: y + 40, 'font-size': 11, fill: '#6a7283' }, 'drover keeps the newest 25'));
        }
        g.append(grp);
      } else {
        const oc = outcomeOf(a);
        const o = OUTCOME[oc] || OUTCOME.unknown;
        // A fresh-attempts boundary is no attempt: it has no number.
        const grp = svg('g', a.fresh ? { 'data-fresh': a.fresh.resetStarted ? 'restart' : 'budget', 'data-outcome': a.outcome }
          : { 'data-attempt': a.n, 'data-outcome': a.outcome, 'data-recorded': a.recorded ? 'yes' : 'no' });
        if (a.unrecoverable) grp.setAttribute('data-unrecoverable', 'yes');
        const dur = a.start && a.end ? fmtMs(new Date(a.end) - new Date(a.start)) : '';
        grp.append(svg('title', {}, `${a.outside ? 'not an attempt' : `attempt ${a.n}`}: ${o.label}${a.error ? ` — ${bi(a.error)}` : ''}${a.worker ? ` (worker ${bi(a.worker)})` : ''}${a.recorded ? '' : ' — no drover worker recorded this attempt'}`));
        grp.append(svg('rect', { x: it.x, y, width: boxW, height: boxH, rx: 8, fill: o.fill, 'fill-opacity': 0.12, stroke: o.fill, 'stroke-width': 2, 'stroke-dasharray': a.recorded ? null : '5 3' }));
        grp.append(svg('text', { x: it.x + 10, y: y + 19, 'font-size': 13, 'font-weight': 700, fill: o.fill }, a.outside ? o.label : `#${a.n} ${o.label}`));
        let sub = a.start ? `${fmtTime(a.start)}${dur ? ` · ran ${dur}` : ''}` : 'time not known';
        if (!a.recorded) sub = a.start ? `${fmtTime(a.start)} · no drover record` : oc === 'unknown' ? 'time not known' : 'no drover record';
        if (a.outside) sub = `${a.end ? fmtTime(a.end) : 'time not known'} · no attempt ran`;
        if (a.fresh) {
          sub = `${a.end ? fmtTime(a.end) : 'time not known'} · after ${a.fresh.started} started`;
          grp.querySelector('title').textContent = `not an attempt: a retry with fresh attempts after ${a.fresh.started} started, ${a.fresh.made} spent;`
            + ` ${a.fresh.resetStarted ? 'the attempts after it are numbered from #1 again' : 'the attempt budget starts again'}`;
        }
        grp.append(svg('text', { x: it.x + 10, y: y + 36, 'font-size': 11, fill: '#1d2330' }, sub));
        if (a.error) {
          const short = a.error.length > 27 ? `${a.error.slice(0, 26)}…` : a.error;
          grp.append(svg('text', { x: it.x + 10, y: y + 51, 'font-size': 11, fill: '#c62f2f', class: 'attempt-error' }, short));
        }
        g.append(grp);
      }
      if (it.gap) {
        const x1 = it.x + boxW, x2 = x1 + it.gap.w, cy = y + boxH / 2, mid = (x1 + x2) / 2;
        g.append(svg('line', { x1: x1 + 3, y1: cy, x2: x2 - 3, y2: cy, stroke: '#6a7283', 'stroke-width': 1.5, 'stroke-dasharray': it.gap.next ? '5 4' : null, 'marker-end': 'url(#arrow)' }));
        if (it.gap.above) g.append(svg('text', { x: mid, y: cy - 7, 'font-size': 11, 'text-anchor': 'middle', fill: '#1d2330' }, it.gap.above));
        if (it.gap.below) g.append(svg('text', { x: mid, y: cy + 15, 'font-size': 10.5, 'text-anchor': 'middle', fill: '#6a7283' }, it.gap.below));
        if (it.gap.next) {
          const nx = x2 + 6;
          const marker = svg('g', { id: 'timeline-next-run' });
          marker.append(svg('circle', { cx: nx + 7, cy, r: 7, fill: '#fff', stroke: '#c77700', 'stroke-width': 2.5 }));
          marker.append(svg('text', { x: nx + 20, y: cy - 3, 'font-size': 12, 'font-weight': 700, fill: '#c77700' }, 'next run'));
          marker.append(svg('text', { x: nx + 20, y: cy + 13, 'font-size': 11.5, fill: '#1d2330' }, fmtTime(d.nextRun)));
          g.append(marker);
        }
      }
    }
    return g;
  }

  // ---- stalled page ------------------------------------------------------

  async function pageStalled(queue) {
    const gen = app.render;
    titled('stalled view', bi(queue));
    const stalled = el('tbody', {}, loadingRow(5));
    const active = el('tbody', {}, loadingRow(5));
    const conflicts = el('tbody');
    const note = el('p', { class: 'muted' });
    put($main, 
      crumbs({ text: 'Queues', href: '#/' }, { text: queue, href: `#/q/${enc(queue)}` }, { text: 'stalled' }),
      el('h1', {}, `Stalled view of ${bi(queue)}`), note,
      el('div', { class: 'panel' }, el('h2', {}, 'Active jobs and their locks'),
        el('table', { id: 'active-locks' }, el('thead', {}, el('tr', {}, ...['ID', 'Name', 'Attempt', 'Lock', 'Marked by last check'].map((h) => el('th', {}, h)))), active)),
      el('div', { class: 'panel' }, el('h2', {}, 'Jobs that stalled'),
        el('table', { id: 'stalled-jobs' }, el('thead', {}, el('tr', {}, ...['ID', 'Name', 'State', 'Stalls', 'Attempts'].map((h) => el('th', {}, h)))), stalled)),
      el('div', { class: 'panel' }, el('h2', {}, 'Conflicted retries'),
        el('p', { class: 'muted' }, 'Retries refused because a worker still held the job\'s lock, newest first (seen by this dashboard since it started). A worker that shows up often holds locks longer than it should.'),
        el('table', { id: 'conflicts' }, el('thead', {}, el('tr', {}, ...['When', 'Job', 'Retry', 'Worker holding the lock', 'Running for', 'Lock TTL left'].map((h) => el('th', {}, h)))), conflicts)));
    async function load() {
      let rep;
      try { rep = await api(`queues/${seg(queue)}/stalled`); } catch (e) { if (gen === app.render && !noQueue(queue, e)) { note.textContent = bi(e.message); loadFailed(); } return; }
      if (gen !== app.render) return;
      note.textContent = `Looked at ${rep.scanned} job${rep.scanned === 1 ? '' : 's'}${rep.truncated ? ' (only the newest of large states)' : ''}. A job stalls when its worker stops renewing its lock; the stalled checker moves it back to wait and counts the stall.`;
      const link = (j) => el('a', { href: `#/q/${enc(queue)}/job/${enc(j.id)}` }, j.id);
      update(active, ...rep.active.map((j) => el('tr', { 'data-key': j.id },
        el('td', { class: 'mono' }, link(j)), el('td', {}, j.name), el('td', { class: 'num' }, j.budget.started),
        el('td', {}, j.lock.held ? `TTL ${fmtMs(j.lock.ttl)}` : el('span', { class: 'badge rs-failed' }, 'no lock')),
        el('td', {}, j.candidate ? 'yes' : 'no'))));
      if (!rep.active.length) active.append(el('tr', {}, el('td', { colspan: 5, class: 'muted' }, 'No active jobs.')));
      update(stalled, ...rep.stalled.map((j) => el('tr', { 'data-key': j.id },
        el('td', { class: 'mono' }, link(j)), el('td', {}, j.name), el('td', {}, retryBadge(j.retryState, false, j.failedFor)),
        el('td', { class: 'num' }, j.stalledCounter), attemptsCell(j.budget))));
      if (!rep.stalled.length) stalled.append(el('tr', {}, el('td', { colspan: 5, class: 'muted' }, 'No job has stalled.')));
      let cs;
      try { cs = await api(`queues/${seg(queue)}/conflicts`, LOCAL); } catch (e) { return; }
      if (gen !== app.render) return;
      update(conflicts, ...cs.conflicts.map((c) => el('tr', { 'data-conflict': c.jobId, 'data-key': `${c.time}/${c.jobId}` },
        el('td', { class: 'when' }, fmtTime(c.time)), el('td', { class: 'mono' }, el('a', { href: `#/q/${enc(queue)}/job/${enc(c.jobId)}` }, c.jobId)), el('td', {}, c.op),
        el('td', { class: 'mono' }, c.worker || 'unknown'), el('td', {}, c.heldFor ? fmtMs(c.heldFor) : ''), el('td', {}, fmtMs(c.lockTtl)))));
      if (!cs.conflicts.length) conflicts.append(el('tr', {}, el('td', { colspan: 6, class: 'muted' }, 'None.')));
    }
    await load();
    if (gen !== app.render) return;
    every(3000, load);
  }

  // ---- job schedulers ----------------------------------------------------

  // A page of job schedulers: a queue may have one per tenant, and the
  // page drew them all (20,000 rows, seconds of frozen tab at each refresh).
  const SCHEDULER_PAGE = 100;

  async function pageSchedulers(queue, params) {
    const gen = app.render;
    titled('job schedulers', bi(queue));
    const s = app.session;
    const body = el('tbody', {}, loadingRow(7));
    const note = el('p', { class: 'muted' });
    const pager = el('div', { class: 'row', id: 'schedulers-pager' });
    const offset = Math.max(0, Math.floor(Number(params.get('offset')) || 0));
    const at = (n) => `#/q/${enc(queue)}/schedulers${n > 0 ? `?offset=${n}` : ''}`;
    put($main,
      crumbs({ text: 'Queues', href: '#/' }, { text: queue, href: `#/q/${enc(queue)}` }, { text: 'job schedulers' }),
      el('h1', {}, `Job schedulers of ${bi(queue)}`), note,
      el('div', { class: 'panel' }, el('table', { id: 'schedulers' },
        el('thead', {}, el('tr', {}, ...['ID', 'Repeats', 'Time zone', `Next run (${yourZone})`, 'Iterations', 'Job name', ''].map((h) => el('th', {}, h)))), body), pager));
    async function load() {
      let res;
      try { res = await api(`queues/${seg(queue)}/schedulers?offset=${offset}&limit=${SCHEDULER_PAGE}`); } catch (e) { if (gen === app.render && !noQueue(queue, e)) { note.textContent = `Could not list job schedulers: ${bi(e.message)}`; loadFailed(); } return; }
      if (gen !== app.render) return;
      note.textContent = 'Job schedulers make one job per run; a worker (Node\'s or drover\'s) that takes a run makes the next one. Removing one stops it: its delayed next run goes too, a run already waiting or running finishes. Refreshes every 5 seconds.';
      update(body, ...res.schedulers.map((sc) => el('tr', { 'data-scheduler': sc.id, 'data-key': sc.id },
        // An id, its repeats, zone and next run keep to one line (a long
        // id clipped, all of it on hover): on a phone the columns shrank to
        // a few letters, "every-10s" read "ev / er / y- / 10 / s".
        el('td', { class: 'mono clip', title: sc.id }, sc.id),
        // Its end date: a scheduler that stops tomorrow read as one that
        // runs for ever.
        el('td', { class: 'nowrap' }, sc.pattern ? `cron ${bi(sc.pattern)}` : `every ${exactMs(sc.every)}`,
          sc.endDate ? el('div', { class: 'muted', 'data-end': sc.endDate },
            sc.endDate > Date.now() ? `until ${fmtTime(sc.endDate)} (${relative(sc.endDate)})` : `ended ${fmtTime(sc.endDate)} (${relative(sc.endDate)}): no more runs`) : null),
        // No tz: each worker, Node's or drover's, reads the pattern in its
        // own process's local time zone (cron-parser's rule).
        el('td', { class: 'nowrap', 'data-tz': sc.tz || '' }, sc.pattern ? (sc.tz || el('span', { class: 'muted', title: 'no time zone: each worker computes the next run in its own local time zone' }, 'local time')) : ''),
        // The next run in the browser's zone, and in the pattern's own when
        // it names one: "0 3 * * *" in America/New_York showed as 00:00 to
        // a browser in Los Angeles, beside "America/New_York", with no
        // word of whose clock that was.
        el('td', { class: 'when', 'data-next': sc.next }, `${fmtTime(sc.next)} (${relative(sc.next)})`,
          sc.tz && inZone(sc.next, sc.tz) && sc.tz !== yourZone ? el('div', { class: 'muted', 'data-next-tz': sc.tz }, `${inZone(sc.next, sc.tz)} in ${bi(sc.tz)}`) : null),
        el('td', { class: 'num' }, sc.limit ? `${sc.iterations} of ${sc.limit}` : String(sc.iterations)),
        el('td', {}, sc.name),
        el('td', {}, s.canOperate ? el('button', { class: 'danger', 'data-remove': sc.id, onclick: async () => {
          const res = await act('Remove job scheduler', `Remove job scheduler ${bi(sc.id)} of ${bi(queue)}? It makes no more runs; a run already waiting or running finishes.`, 'Remove',
            () => api(`queues/${seg(queue)}/schedulers/${seg(sc.id)}/remove`, { method: 'POST', body: {} }), true);
          if (res) {
            toast(`Job scheduler ${bi(sc.id)} removed.`);
            await load();
            // Its row went with the focus: the page's heading takes it, not
            // the body (the next Tab began again at the header).
            if (document.activeElement === document.body || !document.activeElement) {
              const h = $main.querySelector('h1');
              if (h) { h.setAttribute('tabindex', '-1'); h.focus(); }
            }
          }
        } }, 'Remove…') : null))));
      if (!res.schedulers.length) body.append(el('tr', {}, el('td', { colspan: 7, class: 'muted' }, res.total ? 'No job scheduler on this page.' : 'This queue has no job scheduler.')));
      // Links, so a kept one always goes where its href says.
      const last = Math.max(0, res.total - ((res.total % SCHEDULER_PAGE) || SCHEDULER_PAGE));
      putKeep(pager,
        offset > 0 ? el('a', { href: at(0), id: 'schedulers-first' }, 'First page') : null,
        offset > 0 ? el('a', { href: at(Math.max(0, offset - SCHEDULER_PAGE)), id: 'schedulers-prev' }, 'Previous page') : null,
        offset + SCHEDULER_PAGE < res.total ? el('a', { href: at(offset + SCHEDULER_PAGE), id: 'schedulers-next' }, 'Next page') : null,
        offset + SCHEDULER_PAGE < res.total ? el('a', { href: at(last), id: 'schedulers-last' }, 'Last page') : null,
        res.total > SCHEDULER_PAGE && res.schedulers.length ? el('span', { class: 'muted', id: 'schedulers-range' }, `${offset + 1}–${offset + res.schedulers.length} of ${res.total}`) : null);
    }
    await load();
    if (gen !== app.render) return;
    every(5000, load);
  }

  // ---- workers -----------------------------------------------------------

  async function pageWorkers() {
    const gen = app.render;
    titled('Workers');
    const body = el('tbody', {}, loadingRow(6));
    const note = el('p', { class: 'muted' }, 'Every worker connection under this prefix, found as BullMQ\'s getWorkers finds them (the connection name carries the queue and the worker\'s name). Refreshes every 5 seconds.');
    put($main, el('h1', {}, 'Workers'), note,
      el('div', { class: 'panel' }, el('table', { id: 'workers' },
        el('thead', {}, el('tr', {}, ...['Queue', 'Worker', 'Address', 'State', 'Connected for', 'Last command'].map((h) => el('th', {}, h)))), body)));
    async function load() {
      let res;
      try { res = await api('workers'); } catch (e) { if (gen === app.render) { note.textContent = `Could not list workers: ${bi(e.message)}`; loadFailed(); } return; }
      if (gen !== app.render) return;
      if (res.unavailable) {
        put(body, el('tr', {}, el('td', { colspan: 6, class: 'muted', id: 'workers-unavailable' }, `No worker can be listed here: ${bi(res.unavailable.replace(/\.+$/, ''))}.`)));
        return;
      }
      update(body, ...res.workers.map((w) => el('tr', { 'data-worker': w.name || w.addr, 'data-queue': w.queue, 'data-key': w.addr },
        el('td', {}, el('a', { href: `#/q/${enc(w.queue)}` }, w.queue)), el('td', {}, w.name || el('span', { class: 'muted' }, 'unnamed')),
        el('td', { class: 'mono' }, w.addr),
        el('td', {}, workerBadge(w)),
        el('td', {}, fmtMs(w.age)), el('td', {}, `${w.lastCommand} (${fmtMs(w.idle)} ago)`))));
      if (!res.workers.length) body.append(el('tr', {}, el('td', { colspan: 6, class: 'muted' }, 'No worker connection under this prefix. (drover workers are listed once they name their connections as BullMQ does.)')));
    }
    await load();
    if (gen !== app.render) return;
    every(5000, load);
  }

  // workerBadge says what a worker connection is doing. A worker with free
  // slots waits for jobs while it runs others (running: its active jobs,
  // -1 for an unnamed worker, which leaves no name on them).
  function workerBadge(w) {
    if (!w.waiting) return el('span', { class: 'badge rs-active', 'data-state': 'busy' }, w.running > 0 ? `busy: running ${w.running}` : 'busy');
    if (w.running > 0) return el('span', { class: 'badge rs-active', 'data-state': 'running' }, `running ${w.running}, waiting for more`);
    if (w.running === 0) return el('span', { class: 'badge rs-waiting', 'data-state': 'idle' }, 'idle: waiting for jobs');
    return el('span', { class: 'badge rs-waiting', 'data-state': 'waiting' }, 'waiting for jobs');
  }

  // ---- find a job by id --------------------------------------------------

  async function pageFind(id) {
    const gen = app.render;
    titled(`Job id ${bi(id)}`);
    const res = await api(`jobs/${seg(id)}`);
    // An answer for a page the user left draws nothing (nor navigates).
    if (gen !== app.render) return;
    const skipped = res.skipped || [];
    // One match and every queue searched: straight to the job. A queue
    // that could not be searched (a key of another type) may hold the id
    // too, so the page stays and says so.
    if (res.matches.length === 1 && !skipped.length) {
      const m = res.matches[0];
      location.replace(`#/q/${enc(m.queue)}/job/${enc(m.id)}`);
      return;
    }
    put($main, el('h1', {}, `Job id ${bi(id)}`),
      el('div', { class: 'panel', id: 'find-results' }, res.matches.length
        ? el('table', {}, el('tbody', {}, ...res.matches.map((m) => el('tr', { 'data-match': m.queue },
          el('td', {}, el('a', { href: `#/q/${enc(m.queue)}/job/${enc(m.id)}` }, m.queue)), el('td', {}, m.name), el('td', {}, m.state)))))
        : el('p', { class: 'muted' }, skipped.length
          ? `No readable queue under this prefix has a job with id ${bi(id)}.`
          : `No queue under this prefix has a job with id ${bi(id)}.`)),
      skipped.length ? el('div', { class: 'panel', id: 'find-skipped', role: 'status' },
        el('p', {}, `${skipped.length === 1 ? 'One queue' : `${skipped.length} queues`} could not be searched (a key holds another kind of value than BullMQ keeps there):`),
        el('ul', {}, ...skipped.map((q) => el('li', { 'data-skipped': q.queue }, `${bi(q.queue)}: ${bi(q.error)}`)))) : null);
  }

  // ---- audit page --------------------------------------------------------

  // jobless names the actions that change no job: the Jobs column is blank
  // for them, and for the security log's sign-ins. It said 0, which read as
  // a pause or a limits change that found no job to act on.
  const jobless = new Set(['pause', 'resume', 'set-limits', 'remove-scheduler', 'upsert-scheduler', 'release-dedup',
    'revoke-sessions', 'cancel-operation']);
  const auditJobs = (e) => (e.log === 'security' || jobless.has(e.action) ? '' : e.jobs);

  async function pageAudit(params) {
    const gen = app.render;
    titled('Audit log');
    const log = params.get('log') === 'security' ? 'security' : 'actions';
    const before = params.get('before') || '';
    const body = el('tbody', {}, loadingRow(9));
    // The log shown is marked for a screen reader too, not by colour alone.
    const tab = (name, label) => el('a', { href: `#/audit?log=${name}`, class: name === log ? 'badge rs-active' : 'badge', 'aria-current': name === log ? 'page' : null }, label);
    const intro = log === 'security'
      ? 'Sign-ins (failed or not), requests without valid credentials and throttled clients, newest first.'
      : 'Every mutating request by a signed-in user, newest first (allowed or refused). Kept in Redis.';
    const revoke = app.session && app.session.canAdmin && app.session.authEnabled
      ? el('button', { class: 'danger', onclick: async () => {
        if (!await confirmDialog('Sign out everyone', 'End every session, yours included? Users sign in again.', 'Sign out everyone', true)) return;
        try { await api('sessions/revoke', { method: 'POST', body: {} }); location.reload(); } catch (e) { toast(bi(e.message), true); }
      } }, 'Sign out everyone')
      : null;
    const older = el('p');
    // An older page says so and leads back: it looked like the first one,
    // and old entries read as the latest. The cursor is a stream entry id,
    // "<ms>-<seq>".
    const since = Number(before.split('-')[0]);
    const pageNote = before ? el('p', { id: 'audit-page-note', role: 'status' },
      Number.isFinite(since) && since > 0 ? `Showing entries older than ${fmtTime(since)}. ` : 'Showing older entries. ',
      el('a', { id: 'audit-newest', href: `#/audit?log=${log}` }, '← Newest entries')) : null;
    put($main, el('h1', {}, 'Audit log'), el('p', {}, tab('actions', 'Actions'), ' ', tab('security', 'Security events'), ' ', revoke),
      el('p', { class: 'muted' }, intro), pageNote,
      el('div', { class: 'panel' }, el('table', { id: 'audit' }, el('thead', {}, el('tr', {}, ...['When', 'Who', 'Action', 'Queue', 'Job', 'Jobs', 'Outcome', 'Detail', 'From'].map((h) => el('th', {}, h)))), body)),
      older);
    const res = await api(`audit?log=${log}&limit=100${before ? `&before=${encodeURIComponent(before)}` : ''}`);
    if (gen !== app.render) return;
    put(body, ...res.entries.map((e) => el('tr', {},
      el('td', { class: 'when' }, fmtTime(e.time)), el('td', { class: 'nowrap' }, `${bi(e.user || '?')}${e.role ? ` (${e.role})` : ''}`), el('td', { class: 'nowrap' }, e.action),
      el('td', {}, e.queue || ''), el('td', { class: 'mono' }, e.jobId || ''), el('td', { class: 'num' }, auditJobs(e)),
      el('td', {}, el('span', { class: `badge ${e.outcome === 'ok' ? 'rs-completed' : 'rs-failed'}` }, e.outcome)),
      el('td', {}, [e.detail, e.error].filter(Boolean).map(bi).join(' — '),
        // The first jobs a bulk action chose (AuditJobIDsMax, 20 at most), so the log says which.
        (e.jobIds || []).length ? el('div', { class: 'mono muted', 'data-job-ids': '' }, `jobs ${e.jobIds.map(bi).join(', ')}${e.jobIds.length >= 20 ? ', …' : ''}`) : null),
      el('td', { class: 'mono nowrap' }, e.remote || ''))));
    // An empty log says so: a table of headers alone looked like a page
    // still loading, or one that failed.
    if (!res.entries.length) {
      body.append(el('tr', {}, el('td', { colspan: 9, class: 'muted', id: 'audit-empty' }, before ? 'No older entries.'
        : log === 'security' ? 'No security event recorded yet.' : 'No action recorded yet.')));
    }
    if (res.next) put(older, el('a', { href: `#/audit?log=${log}&before=${encodeURIComponent(res.next)}` }, 'Older entries →'));
  }

  // ---- router ------------------------------------------------------------

  // arrived tells a screen reader and a keyboard user that a new page is
  // shown: its title goes to the #announce live region, and when the focus
  // went with the page left (the link or button that led here), the page's
  // heading takes it. Nothing announced a new page but the window's title,
  // which screen readers do not read on a hash change, and the focus fell
  // to <body>: the next Tab started over at the header.
  function arrived() {
    const say = document.getElementById('announce');
    if (say) {
      say.textContent = '';
      setTimeout(() => { say.textContent = document.title.replace(/ · drover control room$/, ''); }, 50);
    }
    // Without scrolling: the page stays where the browser put it, and a
    // click under way (the next page turn) lands where it was aimed.
    const f = document.activeElement;
    if (!f || f === document.body || !f.isConnected) {
      const h = $main.querySelector('h1');
      if (h) { h.setAttribute('tabindex', '-1'); h.focus({ preventScroll: true }); }
    }
  }

  async function route() {
    // A new address, not the first page nor the same one loaded again
    // (an outage's retry): arrived says so once the page is drawn.
    const moved = app.shownHash !== undefined && app.shownHash !== location.hash;
    app.shownHash = location.hash;
    leavePage();
    // The outage banner's "loaded at" is this page's: a page opened during
    // an outage shows nothing loaded before it.
    app.lastOk = 0;
    showAlerts([]);
    const hash = location.hash.replace(/^#/, '') || '/';
    const [path, query] = hash.split('?');
    const params = new URLSearchParams(query || '');
    // A link whose escapes do not decode (a %E0%A4 cut short by a chat
    // client or a hand edit) leads nowhere: decodeURIComponent threw out of
    // the router, and the page left before stayed, frozen, under the new
    // address.
    const gen = app.render;
    let parts;
    try { parts = path.split('/').filter(Boolean).map(decodeURIComponent); } catch (e) { noPage(hash); return; }
    try {
      if (parts[0] === 'q' && parts.length === 2) await pageQueue(parts[1], params);
      else if (parts[0] === 'q' && parts[2] === 'job' && parts.length === 4) await pageJob(parts[1], parts[3]);
      else if (parts[0] === 'q' && parts[2] === 'stalled') await pageStalled(parts[1]);
      else if (parts[0] === 'q' && parts[2] === 'schedulers') await pageSchedulers(parts[1], params);
      else if (parts[0] === 'audit') await pageAudit(params);
      else if (parts[0] === 'find' && parts.length === 2) await pageFind(parts[1]);
      else if (parts[0] === 'workers') await pageWorkers();
      else if (parts.length === 0) await pageOverview(params);
      else noPage(hash);
    } catch (e) {
      // A page left before its answer came (an error, or a refusal) says
      // nothing over the page shown since.
      if (gen === app.render) pageError(e);
    }
    if (moved && gen === app.render) arrived();
  }

  // pageError replaces a page whose first answer was an error. A refusal
  // says who may see the page (a viewer following a link to the audit
  // log read "Something went wrong"); an outage loads the page again once
  // Redis answers, trying every 3 s (the audit log and a job search opened
  // during one said "Something went wrong" until a reload); anything else
  // is said as is.
  function pageError(e) {
    const s = app.session;
    if (e.status === 403) {
      put($main, el('div', { class: 'panel', id: 'forbidden' }, el('h1', {}, 'Not for your role'),
        el('p', {}, `Only admins may see this page; you are signed in as ${s ? `${bi(s.user)} (${s.role})` : 'someone else'}. (${bi(e.message)})`),
        el('p', {}, el('a', { href: '#/' }, 'See all queues'))));
      return;
    }
    const down = e.status === 503 || e.status === 502 || e.status === 504 || !e.status;
    put($main, el('div', { class: 'panel', id: 'page-error', role: 'alert' }, el('h1', {}, 'Could not load this page'),
      el('p', {}, down ? `${bi(e.message)}. The page loads by itself once the dashboard and Redis answer.` : `Something went wrong: ${bi(e.message)}`)));
    if (down) every(3000, route);
  }

  async function start() {
    try {
      app.session = await api('session', LOCAL);
    } catch (e) {
      if (e.status === 401) { renderSignIn(); return; }
      // Redis (which keeps the sessions) or the server is down: say so and
      // try again, so the page comes back by itself.
      put($main, el('p', { class: 'panel', id: 'unreachable' }, `Could not reach the dashboard API: ${bi(e.message)}. Trying again every 5 seconds.`));
      setTimeout(start, 5000);
      return;
    }
    renderWho();
    if (!app.routing) {
      window.addEventListener('hashchange', route);
      app.routing = true;
    }
    route();
  }

  start();
})();
