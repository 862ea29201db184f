// skillhost operator console. Plain JS, no framework, no network beyond
// this origin. Every piece of data comes from the JSON API and /v1/events;
// the page never builds markup from strings (Trusted Types forbid it), so a
// skill's text can never become HTML.
'use strict';

(() => {
  const TOKEN_KEY = 'skillhost.token';
  const TIMELINE_MAX = 300;

  // ---- state -------------------------------------------------------------
  const st = {
    skills: [], problems: [], calls: {}, // calls: skill -> {calls, errors}
    timeline: [],                        // events, oldest first
    lastActive: {},                      // skill -> {version, pid} serving, for swap detection
    crashed: {},                         // "skill@version" -> true after a crash, for restarts
    skew: 0,                             // server clock minus ours, ms
    tools: [], selected: null,           // the tool list and the chosen tool's name
    detailKey: null, detailSeq: 0,       // what the detail pane shows; the latest lookup of it
    pinChoice: {},                       // skill -> version picked in its pin menu
    conn: null,                          // AbortController of the event stream
    retry: 0,
  };

  // ---- DOM helpers -------------------------------------------------------
  const $ = (id) => document.getElementById(id);

  // h builds an element. attrs: class, text, data-*, on<event>, or any
  // attribute/property. Children: nodes, strings, arrays, null.
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') el.className = v;
      else if (k === 'text') el.textContent = v;
      else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
      else if (k in el && !k.startsWith('data-') && k !== 'list') el[k] = v;
      else el.setAttribute(k, v === true ? '' : String(v));
    }
    add(el, children);
    return el;
  }
  function add(el, children) {
    for (const c of children) {
      if (c === null || c === undefined || c === false) continue;
      if (Array.isArray(c)) add(el, c);
      else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
  }
  const badge = (cls, text, title) => h('span', { class: 'badge ' + cls, text, title });

  function notice(msg, kind) {
    const n = $('notice');
    $('notice-text').textContent = msg;
    n.dataset.kind = kind || 'error';
    n.hidden = false;
    clearTimeout(notice.t);
    if (kind === 'ok') notice.t = setTimeout(() => { n.hidden = true; }, 4000);
  }

  // ---- formatting --------------------------------------------------------
  const now = () => Date.now() + st.skew;
  function dur(ms) {
    if (!(ms >= 0)) return '—';
    let s = Math.floor(ms / 1000);
    const d = Math.floor(s / 86400); s -= d * 86400;
    const hh = Math.floor(s / 3600); s -= hh * 3600;
    const m = Math.floor(s / 60); s -= m * 60;
    if (d) return `${d}d ${hh}h`;
    if (hh) return `${hh}h ${m}m`;
    if (m) return `${m}m ${s}s`;
    return `${s}s`;
  }
  const pad = (n) => String(n).padStart(2, '0');
  function clock(iso) {
    const d = new Date(iso);
    if (isNaN(d)) return '';
    return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  }
  const json = (v) => JSON.stringify(v, null, 2);

  // ---- API ---------------------------------------------------------------
  const token = () => sessionStorage.getItem(TOKEN_KEY) || '';
  function headers(extra) {
    const hd = Object.assign({}, extra);
    const t = token();
    if (t) hd.Authorization = 'Bearer ' + t;
    return hd;
  }

  class APIError extends Error {
    constructor(status, err) {
      super(err.message || ('HTTP ' + status));
      this.status = status;
      this.code = err.code || ('http_' + status);
      this.details = err.details;
    }
  }

  async function api(method, path, body) {
    const init = { method, cache: 'no-store', headers: headers(body === undefined ? {} : { 'Content-Type': 'application/json' }) };
    if (body !== undefined) init.body = JSON.stringify(body);
    let res;
    try {
      res = await fetch(path, init);
    } catch (e) {
      throw new APIError(0, { code: 'network', message: 'cannot reach the daemon: ' + e.message });
    }
    const text = await res.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch (_) { /* not JSON */ }
    if (res.status === 401) askToken(true);
    if (!res.ok) throw new APIError(res.status, (data && data.error) || { message: text.trim() || res.statusText });
    return data;
  }

  // ---- token -------------------------------------------------------------
  function askToken(refused) {
    const dlg = $('token-dialog');
    const err = $('token-error');
    if (refused) {
      err.textContent = token() ? 'The daemon refused this token. Enter the one in its --token-file.' : 'The daemon needs a bearer token.';
      err.hidden = false;
      setConn('auth', 'token needed');
    } else {
      err.hidden = true;
    }
    if (!dlg.open) {
      $('token-input').value = '';
      dlg.showModal();
    }
  }
  function initToken() {
    $('token-form').addEventListener('submit', (e) => {
      e.preventDefault();
      const v = $('token-input').value.trim();
      if (!v) return;
      sessionStorage.setItem(TOKEN_KEY, v);
      $('token-dialog').close();
      connect();
      search();
    });
    $('token-cancel').addEventListener('click', () => $('token-dialog').close());
    $('token-forget').addEventListener('click', () => {
      sessionStorage.removeItem(TOKEN_KEY);
      $('token-dialog').close();
      notice('Token forgotten for this tab.', 'ok');
      connect();
    });
    $('token-button').addEventListener('click', () => askToken(false));
  }

  // ---- the event stream --------------------------------------------------
  function setConn(state, text) {
    const c = $('conn');
    c.dataset.state = state;
    $('conn-text').textContent = text || state;
  }

  // connect opens /v1/events with fetch (EventSource cannot send the
  // Authorization header) and reads server-sent events until it ends; it
  // reconnects with capped backoff. There is no polling: the page refetches
  // state only when an event says something changed.
  async function connect() {
    if (st.conn) st.conn.abort();
    const ctl = new AbortController();
    st.conn = ctl;
    setConn('connecting', 'connecting…');
    try {
      const res = await fetch('/v1/events', { headers: headers({ Accept: 'text/event-stream' }), cache: 'no-store', signal: ctl.signal });
      if (res.status === 401) { askToken(true); return; }
      if (!res.ok || !res.body) throw new Error('HTTP ' + res.status);
      setConn('live', 'live');
      st.retry = 0;
      await readSSE(res, (event, data) => onEvent(event, data));
      throw new Error('the stream ended');
    } catch (e) {
      if (ctl.signal.aborted) return;
      const delay = Math.min(15000, 500 * 2 ** st.retry++);
      setConn('offline', `offline (${e.message}); retrying in ${Math.round(delay / 1000)}s`);
      setTimeout(() => { if (st.conn === ctl) connect(); }, delay);
    }
  }

  // readSSE reads server-sent events from a fetch response until it ends,
  // calling fn(event, data) with each event's JSON data.
  async function readSSE(res, fn) {
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += value.replace(/\r\n?/g, '\n');
      let i;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        let event = 'message';
        const data = [];
        for (const line of block.split('\n')) {
          if (!line || line[0] === ':') continue;
          const c = line.indexOf(':');
          const field = c < 0 ? line : line.slice(0, c);
          let v = c < 0 ? '' : line.slice(c + 1);
          if (v[0] === ' ') v = v.slice(1);
          if (field === 'event') event = v;
          else if (field === 'data') data.push(v);
        }
        if (!data.length) continue;
        let p;
        try { p = JSON.parse(data.join('\n')); } catch (_) { continue; }
        fn(event, p);
      }
    }
  }

  function onEvent(type, p) {
    switch (type) {
      case 'state': {
        // Countdowns use the daemon's clock; a skew under a second is
        // only the latency of this event, so it is ignored.
        const t = Date.parse(p.time);
        if (!isNaN(t)) st.skew = Math.abs(t - Date.now()) > 1000 ? t - Date.now() : 0;
        st.skills = p.skills || [];
        st.timeline = [];
        st.lastActive = {};
        st.crashed = {};
        for (const e of p.recent || []) classify(e);
        renderSkills();
        renderTimeline();
        refresh(); // tree problems and call counts
        search();
        break;
      }
      case 'lifecycle':
      case 'registry':
        classify(p);
        renderTimeline();
        soon(refresh, 'refresh', 120);
        if (type === 'registry') soon(search, 'search', 300);
        break;
      case 'calls': // the daemon's pulse: calls were made (by anyone) since the last one
        soon(refresh, 'refresh', 0);
        break;
      case 'lagged':
        soon(refresh, 'refresh', 0);
        soon(search, 'search', 0);
        break;
    }
  }

  const timers = {};
  function soon(fn, key, ms) {
    clearTimeout(timers[key]);
    timers[key] = setTimeout(fn, ms);
  }

  // refresh fetches the skills (with tree problems) and the call counters.
  async function refresh() {
    try {
      const [body, calls] = await Promise.all([api('GET', '/v1/skills'), fetchCalls()]);
      st.skills = body.skills || [];
      st.problems = body.problems || [];
      st.calls = calls;
      renderSkills();
    } catch (e) {
      if (e.status !== 401) notice(`Refreshing skills failed: ${e.code}: ${e.message}`);
    }
  }

  // fetchCalls reads skillhost_calls_total{tool,outcome} from /metrics and
  // sums it per skill; every outcome but "ok" counts as an error.
  async function fetchCalls() {
    const out = {};
    let res;
    try {
      res = await fetch('/metrics', { headers: headers(), cache: 'no-store' });
    } catch (_) { return st.calls; }
    if (!res.ok) return st.calls;
    const text = await res.text();
    for (const line of text.split('\n')) {
      if (!line.startsWith('skillhost_calls_total{')) continue;
      const end = line.lastIndexOf('}');
      const labels = {};
      line.slice(22, end).replace(/(\w+)="((?:[^"\\]|\\.)*)"/g, (_, k, v) => { labels[k] = v; return ''; });
      const n = parseFloat(line.slice(end + 1));
      const skill = (labels.tool || '').split('.')[0];
      if (!skill || !(n >= 0)) continue;
      const c = out[skill] || (out[skill] = { calls: 0, errors: 0 });
      c.calls += n;
      if (labels.outcome !== 'ok') c.errors += n;
    }
    return out;
  }

  // ---- timeline ----------------------------------------------------------
  // classify labels an event (swap, reload, up, crash, restart, drain, stop,
  // fail) from the events before it, and appends it to the timeline. A
  // version reloaded in place (its files changed) has a new instance
  // active before the old one of the same version drains: what serves is
  // told apart by pid, not by version.
  function classify(e) {
    const key = e.skill + '@' + e.version;
    let kind = e.state || e.type;
    let what = `${e.skill} ${e.version || ''}`.trim();
    if (e.type === 'registry') {
      kind = 'registry';
      what += `: tools ${e.state}` + (e.tools ? ` (${e.tools} registered)` : '');
    } else {
      const from = e.from ? `${e.from} → ${e.state}` : e.state;
      what += `: ${from}`;
      switch (e.state) {
        case 'active': {
          const prev = st.lastActive[e.skill];
          if (st.crashed[key] || /restart/i.test(e.reason || '')) kind = 'restart';
          else if (prev && prev.version !== e.version) { kind = 'swap'; what = `${e.skill} ${prev.version} → ${e.version}: swapped in`; }
          else if (prev) { kind = 'reload'; what = `${e.skill} ${e.version}: reloaded in place`; }
          else kind = 'up';
          st.lastActive[e.skill] = { version: e.version, pid: e.pid };
          delete st.crashed[key];
          break;
        }
        case 'crashed': kind = 'crash'; st.crashed[key] = true; break;
        case 'draining': kind = 'drain'; retired(e); break;
        case 'stopped': kind = 'stop'; retired(e); break;
        case 'failed': case 'invalid': case 'incomplete': kind = 'fail'; break;
        case 'starting': kind = 'start'; break;
      }
    }
    const extra = [];
    if (e.pid) extra.push('pid ' + e.pid);
    if (e.duration_ms) extra.push(e.duration_ms.toFixed(1) + ' ms');
    st.timeline.push({ e, kind, what, why: [e.reason, extra.join(', ')].filter(Boolean).join(' · ') });
    if (st.timeline.length > TIMELINE_MAX) st.timeline.splice(0, st.timeline.length - TIMELINE_MAX);
  }

  // retired forgets what served when e is the end of that instance, or of
  // the whole skill (a crashed skill taken out of service has no version).
  function retired(e) {
    const prev = st.lastActive[e.skill];
    if (!e.version) {
      delete st.lastActive[e.skill];
      for (const k of Object.keys(st.crashed)) if (k.startsWith(e.skill + '@')) delete st.crashed[k];
    } else if (prev && e.pid && e.pid === prev.pid) {
      delete st.lastActive[e.skill];
    }
  }

  function renderTimeline() {
    const showRegistry = $('show-registry').checked;
    const items = [];
    for (let i = st.timeline.length - 1; i >= 0; i--) {
      const t = st.timeline[i];
      if (t.kind === 'registry' && !showRegistry) continue;
      items.push(h('li', { class: t.e.type, 'data-kind': t.kind, 'data-skill': t.e.skill, 'data-version': t.e.version || '' },
        h('time', { datetime: t.e.time, title: t.e.time, text: clock(t.e.time) }),
        badge('k-' + t.kind, t.kind),
        h('div', {}, h('div', { class: 'what', text: t.what }), t.why ? h('div', { class: 'why', text: t.why }) : null)));
    }
    if (!items.length) items.push(h('li', { class: 'none', text: 'No events yet.' }));
    $('timeline').replaceChildren(...items);
  }

  // ---- skills table ------------------------------------------------------
  const BAD = new Set(['failed', 'invalid', 'incomplete', 'crashed']);

  // runtimeBadge marks a version that is an MCP server ("runtime": "mcp");
  // go-plugin, the default, goes unmarked.
  const runtimeBadge = (v) => v.runtime && v.runtime !== 'go-plugin'
    ? badge('rt', v.runtime, v.runtime === 'mcp' ? 'an MCP server run as a skill (runtime "mcp")' : 'runtime ' + v.runtime) : null;

  function versionLine(v) {
    const parts = [badge('v', v.version), runtimeBadge(v), badge('s-' + v.state, v.state)];
    if (v.state === 'draining') {
      if (v.drain_deadline) parts.push(h('span', { class: 'countdown', 'data-deadline': v.drain_deadline, text: countdown(v.drain_deadline) }));
      if (v.in_flight) parts.push(h('span', { class: 'why note', text: `${v.in_flight} in flight` }));
    }
    const why = [];
    if (v.last_error) why.push(v.last_error);
    for (const p of v.problems || []) why.push((p.path ? p.path + ': ' : '') + p.message);
    if (why.length) parts.push(h('span', { class: BAD.has(v.state) ? 'why' : 'why note', text: why.join('; ') }));
    return h('div', { class: 'version', 'data-version': v.version, 'data-state': v.state }, parts);
  }

  function countdown(iso) {
    const left = Date.parse(iso) - now();
    return left > 0 ? `ends in ${Math.ceil(left / 1000)}s` : 'grace over, stopping…';
  }

  // shown is the version for the Active column. The loader names only a
  // version that serves (s.active); while none does, a version crashing in
  // a loop or starting up is what the operator waits on, so it shows there
  // with its error and restarts rather than among the other versions.
  function shown(s) {
    const vs = s.versions || [];
    if (s.active) return vs.find((v) => v.version === s.active);
    return vs.find((v) => v.state === 'crashed') || vs.find((v) => v.state === 'starting');
  }

  function renderSkills() {
    const body = $('skills-body');
    const rows = [];
    let tools = 0;
    for (const s of st.skills) {
      const active = shown(s);
      const others = (s.versions || []).filter((v) => v !== active);
      const inFlight = (s.versions || []).reduce((n, v) => n + (v.in_flight || 0), 0);
      const c = st.calls[s.name] || { calls: 0, errors: 0 };
      if (active && active.tools) tools += active.tools.length;
      const nameCell = h('td', { class: 'name' },
        h('strong', { text: s.name }), ' ',
        s.disabled ? badge('s-disabled', 'disabled') : null, ' ',
        s.pinned ? badge('s-pinned', 'pinned ' + s.pinned, 'pinned by an operator') : null,
        s.reason ? h('div', { class: 'reason', text: s.reason }) : null,
        // An Agent Skill (SKILL.md): instructions a model activates; nothing of it runs.
        s.kind && s.kind !== 'binary' ? instructionsLine(s) : null,
        // What the skill may call through the host (its manifest's uses).
        active && active.uses && active.uses.length
          ? h('div', { class: 'uses', title: 'tools this version may call through the host (manifest uses)', text: 'calls ' + active.uses.join(', ') }) : null);
      const activeCell = h('td', { class: 'active' }, active
        ? h('div', { class: 'version', 'data-version': active.version, 'data-state': active.state },
          badge('v', active.version), runtimeBadge(active), badge('s-' + active.state, active.state),
          active.last_error ? h('span', { class: BAD.has(active.state) ? 'why' : 'why note', text: active.last_error }) : null)
        : h('span', { class: 'muted', text: '—' }));
      rows.push(h('tr', { 'data-skill': s.name, 'data-active': s.active || '', 'data-disabled': String(!!s.disabled), 'data-pinned': s.pinned || '' },
        nameCell,
        activeCell,
        h('td', { class: 'others' }, others.length ? h('div', { class: 'versions' }, others.map(versionLine)) : h('span', { class: 'muted', text: '—' })),
        h('td', { class: 'num pid', text: active && active.pid ? active.pid : '—' }),
        h('td', { class: 'num uptime' }, active && active.started_at && active.pid
          ? h('span', { 'data-since': active.started_at, title: 'since ' + active.started_at, text: dur(now() - Date.parse(active.started_at)) }) : '—'),
        h('td', { class: 'num restarts', text: active ? active.restarts : '—' }),
        h('td', { class: 'num inflight', text: inFlight }),
        h('td', { class: 'num calls', text: c.calls }),
        h('td', { class: 'num errors', title: `${c.errors} of ${c.calls} calls failed`, text: c.calls ? `${c.errors} (${(100 * c.errors / c.calls).toFixed(c.errors && c.errors < c.calls ? 1 : 0)}%)` : '—' }),
        h('td', {}, s.kind === 'instructions' ? null : actions(s))));
    }
    if (!rows.length) rows.push(h('tr', { class: 'empty' }, h('td', { colspan: 10, text: 'No skills in the tree.' })));
    setChildren(body, rows.map((r) => patchRow(body, r)));
    $('summary').textContent = `${st.skills.length} skills · ${tools} tools`;
    const probs = $('tree-problems');
    probs.replaceChildren(...st.problems.map((p) => h('li', { text: (p.path ? p.path + ': ' : '') + p.message })));
    probs.hidden = !st.problems.length;
  }

  // instructionsLine says what an Agent Skill is: its kind, its description, its files and
  // the tools activating it brings, with its problems in the title.
  function instructionsLine(s) {
    const ins = s.instructions || {};
    const files = (ins.files || []).length;
    const tools = (ins.tools || []).length ? ' · brings ' + ins.tools.join(', ') : '';
    const probs = (ins.problems || []).map((p) => p.path + ': ' + p.message).join('\n');
    return h('div', { class: 'instructions', title: probs || (s.description || '') },
      badge('k-' + s.kind, s.kind, s.kind === 'tied' ? 'SKILL.md beside the binary: instructions for its tools' : 'an Agent Skill: SKILL.md and files, served read-only'),
      ins.stale ? badge('s-failed', 'stale', 'the newest copy is invalid; the last valid one still serves') : null,
      h('span', { class: 'muted', text: ` ${files} files${tools}` }),
      s.description ? h('div', { class: 'desc', text: s.description }) : null);
  }

  // patchRow keeps the row already on the page for the same skill and
  // replaces only the cells whose content changed. Events arrive at any
  // moment; rebuilding a whole row would drop a click that is half done
  // (mouse down on the old button, up on the new one), the focus and an
  // open version list.
  function patchRow(body, fresh) {
    const old = onPage(body, 'skill', fresh);
    if (!old || old.cells.length !== fresh.cells.length) return fresh;
    for (const a of fresh.getAttributeNames()) old.setAttribute(a, fresh.getAttribute(a));
    for (let i = fresh.cells.length - 1; i >= 0; i--) {
      if (!same(old.cells[i], fresh.cells[i])) old.cells[i].replaceWith(fresh.cells[i]);
    }
    return old;
  }

  // setChildren makes want the children of parent, moving only what is out
  // of place: a node taken out of the page, even for a moment, loses the
  // focus and a click in progress.
  function setChildren(parent, want) {
    want.forEach((n, i) => {
      if (parent.children[i] !== n) parent.insertBefore(n, parent.children[i] || null);
    });
    while (parent.children.length > want.length) parent.lastElementChild.remove();
  }

  // onPage finds the element in parent with fresh's data-<key>.
  function onPage(parent, key, fresh) {
    const v = fresh.dataset[key];
    return v ? parent.querySelector(`:scope > [data-${key}="${CSS.escape(v)}"]`) : null;
  }

  // same compares the nodes (attributes and content), and the values of
  // selects (a chosen option is a property, not an attribute).
  function same(a, b) {
    if (!a.isEqualNode(b)) return false;
    const sa = a.querySelectorAll('select'), sb = b.querySelectorAll('select');
    return [...sa].every((s, i) => s.value === sb[i].value);
  }

  function actions(s) {
    // A version reloaded in place is listed twice while its old instance drains.
    const pinnable = [...new Set((s.versions || []).filter((v) => !['invalid', 'incomplete'].includes(v.state)).map((v) => v.version))];
    const want = pinnable.includes(st.pinChoice[s.name]) ? st.pinChoice[s.name] : (s.pinned || s.active);
    const sel = h('select', { 'data-role': 'pin-version', 'aria-label': 'version to pin', onchange: (e) => { st.pinChoice[s.name] = e.target.value; } },
      pinnable.map((v) => h('option', { value: v, text: v, selected: v === want })));
    return h('div', { class: 'actions' },
      s.disabled
        ? h('button', { type: 'button', class: 'small', 'data-action': 'enable', text: 'Enable', onclick: (e) => act(e, 'POST', `/v1/skills/${enc(s.name)}/enable`, undefined, `${s.name} enabled`) })
        : h('button', { type: 'button', class: 'small danger', 'data-action': 'disable', text: 'Disable', onclick: (e) => act(e, 'POST', `/v1/skills/${enc(s.name)}/disable`, undefined, `${s.name} disabled: its tools are gone, in-flight calls finish`) }),
      pinnable.length ? sel : null,
      pinnable.length ? h('button', { type: 'button', class: 'small ghost', 'data-action': 'pin', text: 'Pin', title: 'serve this version even when a newer one exists', onclick: (e) => act(e, 'PUT', `/v1/skills/${enc(s.name)}/pin`, { version: sel.value }, `${s.name} pinned to ${sel.value}`) }) : null,
      s.pinned ? h('button', { type: 'button', class: 'small ghost', 'data-action': 'unpin', text: 'Unpin', onclick: (e) => act(e, 'DELETE', `/v1/skills/${enc(s.name)}/pin`, undefined, `${s.name} unpinned: the newest valid version serves`) }) : null);
  }
  const enc = encodeURIComponent;

  // act runs an operator action; the answer is the skill's new status.
  async function act(ev, method, path, body, done) {
    const b = ev.currentTarget;
    b.disabled = true;
    try {
      const s = await api(method, path, body);
      if (s && s.name) {
        const i = st.skills.findIndex((x) => x.name === s.name);
        if (i >= 0) st.skills[i] = s;
      }
      renderSkills();
      notice(done, 'ok');
    } catch (e) {
      notice(`${method} ${path}: ${e.code}: ${e.message}`);
      b.disabled = false;
    }
  }

  async function rescan() {
    const b = $('rescan');
    b.disabled = true;
    try {
      const body = await api('POST', '/v1/rescan');
      st.skills = body.skills || [];
      st.problems = body.problems || [];
      renderSkills();
      notice('Rescanned the skills tree.', 'ok');
    } catch (e) {
      notice(`Rescan failed: ${e.code}: ${e.message}`);
    } finally {
      b.disabled = false;
    }
  }

  // tick moves the countdowns and uptimes on, from the page's clock.
  function tick() {
    for (const el of document.querySelectorAll('[data-deadline]')) el.textContent = countdown(el.dataset.deadline);
    for (const el of document.querySelectorAll('[data-since]')) el.textContent = dur(now() - Date.parse(el.dataset.since));
  }

  // ---- tools -------------------------------------------------------------
  async function search() {
    const q = $('tool-q').value.trim();
    const tags = $('tool-tags').value.trim();
    const params = new URLSearchParams();
    if (q) params.set('q', q);
    if (tags) params.set('tags', tags);
    if (q || tags) params.set('limit', '20');
    const path = '/v1/tools' + (params.toString() ? '?' + params : '');
    try {
      const body = await api('GET', path);
      st.tools = body.tools || [];
      renderTools(q || tags);
      followSelected();
    } catch (e) {
      if (e.status === 401) return;
      $('tool-list').replaceChildren(h('li', { class: 'none error', text: `${e.code}: ${e.message}` }));
    }
  }

  function toolMeta(t) {
    return h('div', { class: 'tmeta' },
      typeof t.score === 'number' ? badge('score', 'score ' + t.score.toFixed(2), 'prefilter score') : null,
      t.available === false ? badge('s-unavailable', 'unavailable') : null,
      (t.tags || []).map((tag) => badge('tag', tag)));
  }

  function renderTools(filtered) {
    const items = st.tools.map((t) => h('li', { 'data-tool': t.name, 'aria-selected': String(t.name === st.selected) },
      h('button', { type: 'button', onclick: () => select(t.name) },
        h('div', { class: 'tname', text: t.name }),
        h('div', { class: 'tdesc', text: t.description }),
        toolMeta(t))));
    if (!items.length) items.push(h('li', { class: 'none', text: filtered ? 'No tool matches.' : 'No tools are registered.' }));
    // Unchanged entries stay the same elements, as in the skills table.
    const list = $('tool-list');
    setChildren(list, items.map((li) => {
      const old = onPage(list, 'tool', li);
      return old && same(old, li) ? old : li;
    }));
  }

  function select(name) {
    const t = st.tools.find((x) => x.name === name);
    if (!t) return;
    st.selected = name;
    st.detailSeq++;
    for (const li of $('tool-list').children) li.setAttribute('aria-selected', String(li.dataset.tool === name));
    renderDetail(t, false);
  }

  // followSelected keeps the detail pane true to the registry once the tool
  // list was fetched again: after a hot swap, a removal or a change of
  // availability the chosen tool is shown anew, or as gone. One that only
  // fell out of the search hits is looked up by name.
  async function followSelected() {
    const name = st.selected;
    if (!name) return;
    const seq = ++st.detailSeq;
    let t = st.tools.find((x) => x.name === name);
    let gone = null;
    if (!t) {
      try {
        t = await api('GET', `/v1/tools/${enc(name)}`);
      } catch (e) {
        if (e.status !== 404) return; // unreachable or refused: what shows is all we know
        gone = e;
      }
    }
    if (seq !== st.detailSeq || st.selected !== name) return; // another pick or lookup came since
    if (t) renderDetail(t, true);
    else showGone(name, gone);
  }

  // detailKey tells whether a tool changed; the score is the search's, not
  // the tool's.
  const detailKey = (t) => JSON.stringify(Object.assign({}, t, { score: undefined }));

  function showGone(name, err) {
    st.detailKey = null;
    $('tool-detail').replaceChildren(
      h('h3', { text: name }),
      h('div', { class: 'tmeta', 'data-gone': 'true' }, badge('s-unavailable', 'gone'),
        h('span', { class: 'muted small', text: `No longer registered (${err.code}): ${err.message}` })));
  }

  // renderDetail shows tool t. With keep (the same tool, fetched again),
  // nothing is redrawn unless the tool changed, and then what the operator
  // typed stays in the fields that still exist with the same input, with
  // the last answer, the open sections and the focus.
  function renderDetail(t, keep) {
    const key = detailKey(t);
    const pane = $('tool-detail');
    const oldForm = $('try-form');
    const again = keep && oldForm && oldForm.dataset.tool === t.name;
    if (again && key === st.detailKey) return;
    st.detailKey = key;
    const values = {}, open = {};
    let oldResult = null, focus = null;
    if (again) {
      for (const el of oldForm.querySelectorAll('[data-field] input, [data-field] select, [data-field] textarea')) {
        values[el.name] = { type: el.type, value: el.value, checked: el.checked };
      }
      for (const d of pane.querySelectorAll('details')) open[d.querySelector('summary').textContent] = d.open;
      oldResult = $('try-result');
      if (pane.contains(document.activeElement)) focus = document.activeElement.id;
    }
    buildDetail(t);
    if (!again) return;
    for (const el of $('try-form').querySelectorAll('[data-field] input, [data-field] select, [data-field] textarea')) {
      const v = values[el.name];
      if (!v || v.type !== el.type) continue;
      if (el.type === 'checkbox') el.checked = v.checked;
      else if (el.tagName !== 'SELECT' || [...el.options].some((o) => o.value === v.value)) el.value = v.value;
    }
    for (const d of pane.querySelectorAll('details')) {
      const o = open[d.querySelector('summary').textContent];
      if (o !== undefined) d.open = o;
    }
    if (oldResult) $('try-result').replaceWith(oldResult);
    if (focus && document.getElementById(focus)) document.getElementById(focus).focus();
  }

  function buildDetail(t) {
    const ann = t.annotations || {};
    const flags = ['read_only', 'destructive', 'idempotent', 'open_world'].filter((k) => ann[k]).map((k) => badge('tag', k.replace('_', '-')));
    const result = h('div', { id: 'try-result', 'aria-live': 'polite' });
    $('tool-detail').replaceChildren(
      h('h3', { text: t.name }),
      h('div', { class: 'tmeta' }, badge('v', `${t.skill} ${t.version}`), h('span', { class: 'muted small mono', text: t.llm_name }), flags),
      h('div', { class: 'desc', text: t.description }),
      toolMeta(t),
      h('details', { open: true }, h('summary', { text: 'Input schema' }), h('pre', { class: 'schema', text: json(t.input_schema) })),
      t.output_schema ? h('details', {}, h('summary', { text: 'Output schema' }), h('pre', { text: json(t.output_schema) })) : null,
      tryForm(t, result),
      result);
  }

  // ---- the "try it" form --------------------------------------------------
  function typeOf(s) {
    if (!s || typeof s !== 'object') return 'any';
    if (Array.isArray(s.enum)) return 'enum';
    let ty = s.type;
    if (Array.isArray(ty)) {
      const nn = ty.filter((x) => x !== 'null');
      ty = nn.length === 1 ? nn[0] : 'json';
    }
    if (['string', 'number', 'integer', 'boolean'].includes(ty)) return ty;
    return 'json';
  }

  // field returns the input for one property and a reader of its value:
  // read() returns undefined to leave the argument out, or throws.
  function field(name, s, required) {
    s = s || {};
    const ty = typeOf(s);
    const id = 'arg-' + name;
    let input, read;
    const dflt = s.default;
    const example = Array.isArray(s.examples) && s.examples.length ? s.examples[0] : undefined;
    switch (ty) {
      case 'enum': {
        const opts = [];
        if (!required) opts.push(h('option', { value: '', text: dflt !== undefined ? `(default: ${dflt})` : '(none)' }));
        // A string choice is its own option value; any other is its JSON.
        const key = (v) => (typeof v === 'string' ? v : JSON.stringify(v));
        for (const v of s.enum) opts.push(h('option', { value: key(v), text: key(v), selected: !required ? false : v === dflt }));
        input = h('select', { id, name }, opts);
        read = () => (input.value === '' ? undefined : s.enum.find((v) => key(v) === input.value));
        break;
      }
      case 'boolean': {
        input = h('input', { type: 'checkbox', id, name, checked: dflt === true });
        read = () => (required || input.checked !== (dflt === true) ? input.checked : undefined);
        break;
      }
      case 'number':
      case 'integer': {
        input = h('input', {
          type: 'number', id, name, step: ty === 'integer' ? '1' : 'any',
          min: s.minimum, max: s.maximum, placeholder: dflt !== undefined ? `default ${dflt}` : (example !== undefined ? String(example) : ''),
        });
        read = () => {
          if (input.value === '') return undefined;
          const n = Number(input.value);
          if (!Number.isFinite(n)) throw new Error(`${name}: not a number`);
          if (ty === 'integer' && !Number.isInteger(n)) throw new Error(`${name}: must be a whole number`);
          return n;
        };
        break;
      }
      case 'string': {
        const long = !s.maxLength || s.maxLength > 200;
        const ph = example !== undefined ? `e.g. ${example}` : (dflt !== undefined ? `default ${dflt}` : '');
        input = long && /text|content|body|markdown|prompt/i.test(name)
          ? h('textarea', { id, name, rows: 3, placeholder: ph })
          : h('input', { type: 'text', id, name, placeholder: ph, maxLength: s.maxLength || undefined });
        read = () => (input.value === '' && !required ? undefined : input.value);
        break;
      }
      default: {
        input = h('textarea', { id, name, rows: 3, placeholder: dflt !== undefined ? json(dflt) : (s.type === 'array' ? '[ ]' : '{ }') });
        read = () => {
          if (input.value.trim() === '') return undefined;
          try { return JSON.parse(input.value); } catch (e) { throw new Error(`${name}: not valid JSON (${e.message})`); }
        };
      }
    }
    const typeText = ty === 'enum' ? 'enum' : ty === 'json' ? (s.type ? [].concat(s.type).join('|') : 'any') + ' (JSON)' : ty;
    const label = h('label', { for: id },
      h('span', { class: 'mono', text: name }),
      h('span', { class: 'type', text: typeText }),
      required ? h('span', { class: 'req', text: 'required' }) : null);
    const help = s.description ? h('div', { class: 'help', text: s.description }) : null;
    const el = ty === 'boolean'
      ? h('div', { class: 'field check', 'data-field': name }, h('label', { for: id }, input, ' ', h('span', { class: 'mono', text: name }), required ? h('span', { class: 'req', text: 'required' }) : null), help)
      : h('div', { class: 'field', 'data-field': name }, label, input, help);
    return { el, read };
  }

  function tryForm(t, result) {
    const schema = t.input_schema || {};
    const req = new Set(schema.required || []);
    const fields = Object.entries(schema.properties || {}).map(([n, s]) => ({ name: n, ...field(n, s, req.has(n)) }));
    const submit = h('button', { type: 'submit', text: 'Invoke', 'data-action': 'invoke' });
    const form = h('form', { class: 'try', id: 'try-form', 'data-tool': t.name, autocomplete: 'off' },
      h('h4', { text: 'Try it' }),
      fields.length ? fields.map((f) => f.el) : h('div', { class: 'muted small', text: 'This tool takes no arguments.' }),
      h('div', { class: 'row' }, submit, h('span', { class: 'muted small mono', text: `POST /v1/tools/${t.name}/invoke` })));
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      const args = {};
      try {
        for (const f of fields) {
          const v = f.read();
          if (v !== undefined) args[f.name] = v;
        }
      } catch (err) {
        showResult(result, { error: { code: 'form', message: err.message } });
        return;
      }
      submit.disabled = true;
      // The pane may have been redrawn for a new version meanwhile: the
      // answer goes where this tool's answer shows now, if it still does.
      const out = () => (result.isConnected ? result : ($('try-form')?.dataset.tool === t.name ? $('try-result') : null));
      try {
        const res = await api('POST', `/v1/tools/${enc(t.name)}/invoke`, { arguments: args });
        if (out()) showResult(out(), res);
      } catch (err) {
        if (out()) showResult(out(), { error: { code: err.code, message: err.message, details: err.details }, status: err.status });
      } finally {
        submit.disabled = false;
        soon(refresh, 'refresh', 50); // the call counters moved
      }
    });
    return form;
  }

  function showResult(el, r) {
    if (r.error) {
      el.className = 'result err';
      el.replaceChildren(
        h('div', {}, h('span', { class: 'code', text: r.error.code }), r.status ? h('span', { class: 'muted small', text: ` HTTP ${r.status}` }) : null),
        h('div', { class: 'msg', text: r.error.message }),
        r.error.details ? h('pre', { text: json(r.error.details) }) : null);
      return;
    }
    el.className = 'result ok';
    el.replaceChildren(
      h('div', { class: 'meta', text: `${r.skill} ${r.version} · ${r.duration_ms} ms` }),
      h('pre', { class: 'value', text: json(r.result) }));
  }

  // ---- runs --------------------------------------------------------------
  // The list comes from GET /v1/runs (on load, on Refresh, and when a
  // followed run stops); the chosen run's events come from its own stream,
  // from its first event, so the pane is the run's log as it grows.
  const runs = { list: [], selected: null, follow: null };

  async function loadRuns() {
    let data;
    try {
      data = await api('GET', '/v1/runs');
    } catch (e) {
      $('run-list').replaceChildren(h('li', { class: 'none error', text: `${e.code}: ${e.message}` }));
      return;
    }
    runs.list = (data.runs || []).slice().reverse(); // newest first
    const items = runs.list.map((r) => h('li', { 'data-run': r.id, 'aria-selected': String(r.id === runs.selected) },
      h('button', { type: 'button', onclick: () => openRun(r.id) },
        h('div', { class: 'tname' }, r.name + ' ', runBadge(r.status, r.stop_reason)),
        h('div', { class: 'tdesc', text: `${r.id} · ${r.rounds} rounds` }))));
    if (!items.length) items.push(h('li', { class: 'none', text: 'No runs yet: host run FLOW "task", or POST /v1/runs.' }));
    $('run-list').replaceChildren(...items);
  }

  const badStops = ['error', 'stall', 'selector_failed', 'reply_failed', 'no_next_hop', 'token_budget', 'time_limit', 'max_rounds'];
  function runBadge(status, reason) {
    if (status === 'stopped') return badge(badStops.includes(reason) ? 's-failed' : 's-active', reason, 'stop_reason');
    return badge(status === 'running' ? 's-starting' : 's-pinned', status.replace(/_/g, ' '), 'status');
  }

  function openRun(id) {
    runs.selected = id;
    for (const li of $('run-list').children) li.setAttribute('aria-selected', String(li.dataset.run === id));
    if (runs.follow) runs.follow.abort();
    const ctl = new AbortController();
    runs.follow = ctl;
    const events = h('ol', { class: 'timeline run-events', id: 'run-events', 'aria-live': 'polite' });
    const status = h('span', { id: 'run-status' });
    const stop = h('button', { type: 'button', class: 'ghost small', id: 'run-stop', onclick: () => stopRun(id) }, 'Stop');
    $('run-detail').replaceChildren(h('div', { class: 'card-head' }, h('h3', { text: id }), status, stop), events);
    followRun(id, ctl, events, status, stop);
  }

  async function followRun(id, ctl, events, status, stop) {
    status.replaceChildren(runBadge('running'));
    try {
      const res = await fetch(`/v1/runs/${encodeURIComponent(id)}/events`, { headers: headers({ Accept: 'text/event-stream' }), cache: 'no-store', signal: ctl.signal });
      if (!res.ok || !res.body) throw new Error('HTTP ' + res.status);
      await readSSE(res, (kind, ev) => {
        const li = runEvent(kind, ev.data || {}, id);
        if (li) events.append(h('li', { 'data-kind': kind, 'data-seq': ev.seq }, h('time', { text: clock(ev.time) }), li));
        if (kind === 'human_input_wait') status.replaceChildren(runBadge('waiting_for_human'));
        if (kind === 'human_input') status.replaceChildren(runBadge('running'));
        if (kind === 'stop') {
          status.replaceChildren(runBadge('stopped', ev.data.reason));
          stop.hidden = true;
          loadRuns();
        }
      });
    } catch (e) {
      if (!ctl.signal.aborted) events.append(h('li', { class: 'error', text: 'the event stream failed: ' + e.message }));
    }
  }

  // runEvent renders one event of a run's log; null for the ones the pane
  // leaves out (usage is in the summary).
  function runEvent(kind, d, id) {
    switch (kind) {
      case 'started': return h('div', {}, badge('k-up', 'started'), ` flow ${d.name}`);
      case 'speaker_choice':
        return h('div', {}, badge('k-swap', '→ ' + d.speaker), ' ', h('span', { class: 'muted reason', text: d.reason }),
          d.candidates && d.candidates.length > 1 ? h('span', { class: 'muted small', text: ` (of ${d.candidates.join(', ')})` }) : null);
      case 'transition': return h('div', { class: 'muted small', text: `edge ${d.from} → ${d.to}: ${d.condition || ''}` });
      case 'message':
      case 'human_input':
        return h('div', { class: 'msg' }, h('strong', { text: (d.sender || 'human') + ': ' }), h('span', { class: 'content', text: d.content }));
      case 'tool_call': return h('div', { class: 'mono small', text: `${d.participant} calls ${d.tool} ${JSON.stringify(d.arguments || {})}` });
      case 'tool_result':
        return d.error ? h('div', { class: 'error small', text: `${d.error_code}: ${d.error}` }) : null;
      case 'human_input_wait': {
        const input = h('input', { type: 'text', class: 'run-input', placeholder: 'your message', 'aria-label': 'Your message' });
        return h('form', { class: 'search run-say', onsubmit: (e) => { e.preventDefault(); sayRun(id, input.value, e.target); } },
          h('span', { class: 'muted', text: 'waiting for the human ' }), input, h('button', { type: 'submit' }, 'Send'));
      }
      case 'stop': return h('div', { class: 'stop' }, h('strong', { text: 'stopped: ' + d.reason }), d.detail ? h('span', { class: 'muted', text: ' — ' + d.detail }) : null);
    }
    return null;
  }

  async function sayRun(id, text, form) {
    try {
      await api('POST', `/v1/runs/${encodeURIComponent(id)}/input`, { message: text });
      form.replaceWith(h('span', { class: 'muted', text: 'waited for the human, who answered' }));
    } catch (e) {
      notice(`input to run ${id}: ${e.code}: ${e.message}`);
    }
  }

  async function stopRun(id) {
    try {
      await api('POST', `/v1/runs/${encodeURIComponent(id)}/stop`);
    } catch (e) {
      notice(`stop run ${id}: ${e.code}: ${e.message}`);
    }
  }

  // ---- teams -------------------------------------------------------------
  // The list comes from GET /v1/teams (on load, on Refresh, and when a
  // followed team stops). The chosen team's log is followed live; each event
  // refetches the team (debounced), since members, inboxes, tokens and the
  // lead's answer live in the view, not in every event. A dropped stream
  // resumes after the last event seen (Last-Event-ID), so nothing is shown
  // twice or missed.
  const teams = { selected: null, follow: null };

  async function loadTeams() {
    let data;
    try {
      data = await api('GET', '/v1/teams');
    } catch (e) {
      $('team-list').replaceChildren(h('li', { class: 'none error', text: `${e.code}: ${e.message}` }));
      return;
    }
    const items = (data.teams || []).map((t) => h('li', { 'data-team': t.id, 'aria-selected': String(t.id === teams.selected) },
      h('button', { type: 'button', onclick: () => openTeam(t.id) },
        h('div', { class: 'tname' }, t.id + ' ', teamBadge(t)),
        h('div', { class: 'tdesc', text: `lead ${t.lead} · ${t.members.length} members · ${t.tokens_used} tokens` }))));
    if (!items.length) items.push(h('li', { class: 'none', text: 'No teams yet: host team create, or POST /v1/teams.' }));
    $('team-list').replaceChildren(...items);
  }

  const teamBadge = (t) => t.stopped ? badge('s-stopped', 'stopped', t.stop_reason) : badge('s-active', 'running', 'the team runs');
  const memberStatus = { active: 's-active', idle: 's-pinned', plan_mode: 's-starting', stopping: 's-draining', stopped: 's-stopped' };

  function openTeam(id) {
    teams.selected = id;
    for (const li of $('team-list').children) li.setAttribute('aria-selected', String(li.dataset.team === id));
    if (teams.follow) teams.follow.abort();
    const ctl = new AbortController();
    teams.follow = ctl;
    const view = {
      id, ctl,
      status: h('span', { id: 'team-status' }),
      stop: h('button', { type: 'button', class: 'ghost small', id: 'team-stop', onclick: () => stopTeam(id) }, 'Stop'),
      conn: h('span', { class: 'muted small', id: 'team-conn' }),
      members: h('tbody', { id: 'team-members' }),
      answer: h('div', { class: 'team-answer', id: 'team-answer' }),
      tasks: h('ul', { class: 'team-tasks', id: 'team-tasks' }),
      to: h('select', { id: 'team-to', 'aria-label': 'Send to' }),
      text: h('input', { type: 'text', id: 'team-text', placeholder: 'message as the human', 'aria-label': 'Message' }),
      events: h('ol', { class: 'timeline run-events', id: 'team-events', 'aria-live': 'polite' }),
    };
    const say = h('form', { class: 'search run-say', id: 'team-say', onsubmit: (e) => { e.preventDefault(); sayTeam(view); } },
      view.to, view.text, h('button', { type: 'submit' }, 'Send'));
    $('team-detail').replaceChildren(
      h('div', { class: 'card-head' }, h('h3', { text: id }), view.status, view.conn, view.stop),
      h('table', { class: 'team-members' }, h('thead', {}, h('tr', {},
        ['Member', 'Status', 'Inbox', 'Tokens', 'Current task'].map((c) => h('th', { text: c })))), view.members),
      h('h4', { text: "Lead's latest answer" }), view.answer, view.tasks, say, view.events);
    loadTeam(view);
    followTeam(view);
  }

  // loadTeam fetches the team and redraws the members, the lead's answer,
  // the task board and the recipients; what is typed is kept.
  async function loadTeam(view) {
    let t;
    try {
      t = await api('GET', `/v1/teams/${encodeURIComponent(view.id)}`);
    } catch (e) {
      if (!view.ctl.signal.aborted) view.conn.textContent = `${e.code}: ${e.message}`;
      return;
    }
    if (view.ctl.signal.aborted) return;
    view.status.replaceChildren(teamBadge(t));
    view.stop.hidden = !!t.stopped;
    view.members.replaceChildren(...t.members.map((m) => h('tr', { 'data-member': m.name },
      h('td', {}, h('span', { class: 'mono', text: m.name }), m.lead ? [' ', badge('v', 'lead')] : null,
        m.role ? h('div', { class: 'muted small', text: m.role }) : null),
      h('td', {}, badge(memberStatus[m.status] || 's-pinned', m.status.replace(/_/g, ' '), 'status'),
        m.reason ? h('div', { class: 'muted small', text: m.reason + (m.detail ? ': ' + m.detail : '') }) : null),
      h('td', { class: 'num', 'data-col': 'inbox', text: String(m.inbox_depth) }),
      h('td', { class: 'num', 'data-col': 'tokens', text: String(m.tokens_used) }),
      h('td', { class: 'mono small', text: m.current_task || '—' }))));
    view.answer.textContent = t.answer || '(none yet)';
    view.tasks.replaceChildren(...(t.tasks || []).map((k) => h('li', { 'data-task': k.id },
      badge(k.status === 'failed' ? 's-failed' : k.status === 'completed' ? 's-active' : 's-pinned', k.status),
      ` ${k.id}: ${k.title}`, k.owner ? h('span', { class: 'muted', text: ` (${k.owner})` }) : null)));
    const names = t.members.filter((m) => m.status !== 'stopped').map((m) => m.name);
    const want = [...names, ''].join('\n');
    if (view.to.dataset.names !== want) {
      // The lead first and chosen at first; a choice made since is kept.
      const keep = view.to.dataset.names === undefined ? t.lead : view.to.value;
      view.to.replaceChildren(...names.map((n) => h('option', { value: n, text: n })),
        h('option', { value: '', text: 'everyone (broadcast)' }));
      view.to.dataset.names = want;
      if ([...names, ''].includes(keep)) view.to.value = keep;
    }
  }

  // followTeam reads the team log from its first event and, when the
  // stream drops, reconnects with capped backoff from the last seq seen.
  async function followTeam(view) {
    let last = 0;
    let retry = 0;
    for (;;) {
      try {
        const hdr = { Accept: 'text/event-stream' };
        if (last) hdr['Last-Event-ID'] = String(last);
        const res = await fetch(`/v1/teams/${encodeURIComponent(view.id)}/events`, { headers: headers(hdr), cache: 'no-store', signal: view.ctl.signal });
        if (res.status === 404) { view.conn.textContent = 'no such team'; return; }
        if (!res.ok || !res.body) throw new Error('HTTP ' + res.status);
        retry = 0;
        view.conn.textContent = 'live';
        await readSSE(res, (kind, ev) => {
          if (kind === 'error') { view.conn.textContent = 'the team log failed: ' + ev.message; return; }
          if (!(ev.seq > last)) return;
          last = ev.seq;
          view.events.prepend(h('li', { 'data-kind': kind, 'data-seq': ev.seq }, h('time', { text: clock(ev.time) }), teamEvent(kind, ev.data || {})));
          soon(() => loadTeam(view), 'team', 150);
          soon(loadTeams, 'teams', 500); // the list's tokens and status
        });
        throw new Error('the stream ended');
      } catch (e) {
        if (view.ctl.signal.aborted) return;
        const delay = Math.min(15000, 500 * 2 ** retry++);
        view.conn.textContent = `offline (${e.message}); retrying in ${Math.round(delay / 1000)}s`;
        await new Promise((r) => setTimeout(r, delay));
        if (view.ctl.signal.aborted) return;
      }
    }
  }

  // teamEvent renders one event of a team's log (pkg/team's team.* records).
  function teamEvent(kind, d) {
    switch (kind) {
      case 'team.created': return h('div', {}, badge('k-up', 'created'), ` lead ${d.lead && d.lead.name}`, d.budget ? ` · budget ${d.budget} tokens` : '');
      case 'team.spawned': return h('div', {}, badge('k-up', 'spawned'), ` ${d.name}`, d.role ? h('span', { class: 'muted', text: ` (${d.role})` }) : null, ` by ${d.by}`);
      case 'team.status':
        return h('div', {}, h('span', { class: 'mono', text: d.member }), ' → ', badge(memberStatus[d.status] || 's-pinned', d.status.replace(/_/g, ' ')),
          d.reason ? h('span', { class: 'muted', text: ` ${d.reason}${d.detail ? ': ' + d.detail : ''}` }) : null);
      case 'team.request': return h('div', { class: 'small', text: `${d.from} asks ${d.to}: ${d.type.replace(/_/g, ' ')} (${d.id})` });
      case 'team.answered': return h('div', { class: 'small', text: `${d.by} ${d.approve ? 'approves' : 'rejects'} ${d.id}` });
      case 'team.usage': return h('div', { class: 'muted small', text: `${d.member} used ${d.tokens} tokens` });
      case 'team.task_created': return h('div', {}, badge('k-up', 'task'), ` ${d.id}: ${d.title} (by ${d.by})`);
      case 'team.task_claimed': return h('div', { class: 'small', text: `${d.member} claims ${d.id}` + (d.expired ? ` (the lease of ${d.expired} ran out)` : '') });
      case 'team.task_done':
        return d.error ? h('div', { class: 'error small', text: `${d.member} fails ${d.id}: ${d.error}` })
          : h('div', { class: 'small', text: `${d.member} completes ${d.id}` + (d.result ? `: ${d.result}` : '') });
      case 'team.stopped': return h('div', { class: 'stop' }, h('strong', { text: 'stopped: ' + d.reason }));
    }
    return h('div', { class: 'mono small', text: `${kind} ${JSON.stringify(d)}` });
  }

  async function sayTeam(view) {
    const text = view.text.value;
    if (!text) return;
    const body = view.to.value ? { to: view.to.value, text } : { broadcast: true, text };
    try {
      await api('POST', `/v1/teams/${encodeURIComponent(view.id)}/messages`, body);
      view.text.value = '';
      soon(() => loadTeam(view), 'team', 150);
    } catch (e) {
      notice(`message to team ${view.id}: ${e.code}: ${e.message}`);
    }
  }

  async function stopTeam(id) {
    try {
      await api('POST', `/v1/teams/${encodeURIComponent(id)}/stop`, { reason: 'stopped from the console' });
    } catch (e) {
      notice(`stop team ${id}: ${e.code}: ${e.message}`);
    }
  }

  // ---- start -------------------------------------------------------------
  function start() {
    initToken();
    $('rescan').addEventListener('click', rescan);
    $('notice-close').addEventListener('click', () => { $('notice').hidden = true; });
    $('show-registry').addEventListener('change', renderTimeline);
    $('tool-search').addEventListener('submit', (e) => { e.preventDefault(); search(); });
    $('tool-q').addEventListener('input', () => soon(search, 'search', 250));
    $('tool-tags').addEventListener('input', () => soon(search, 'search', 250));
    $('runs-refresh').addEventListener('click', loadRuns);
    $('teams-refresh').addEventListener('click', loadTeams);
    setInterval(tick, 1000);
    renderTimeline();
    connect();
    loadRuns();
    loadTeams();
  }
  start();
})();
