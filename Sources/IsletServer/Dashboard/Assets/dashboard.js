'use strict';
// Islet's dashboard: plain JavaScript, no framework, no build step. Every value from
// the API is put on the page as text (textContent, attributes set one by one), never
// as HTML.
(() => {
  const POLL_MS = 2000;
  const HINT = 'islet-dashboard-signed-in';
  const state = { session: null, documented: new Set(), stops: [], samples: [] };

  // MARK: - DOM

  function el(tag, attributes, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (name === 'class') node.className = value;
      else if (name === 'text') node.textContent = String(value);
      else if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
      else node.setAttribute(name, value === true ? '' : String(value));
    }
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function svg(tag, attributes) {
    const node = document.createElementNS('http://www.w3.org/2000/svg', tag);
    for (const [name, value] of Object.entries(attributes || {})) node.setAttribute(name, String(value));
    return node;
  }

  // Replaces a node's children; arrays are flattened and empty values skipped.
  function fill(node, ...children) {
    node.replaceChildren(...children.flat(Infinity).filter((child) => child !== null && child !== undefined && child !== false)
      .map((child) => (child instanceof Node ? child : document.createTextNode(String(child)))));
  }

  const main = () => document.getElementById('main');

  function flash(message, kind) {
    const box = document.getElementById('flash');
    box.textContent = message || '';
    box.className = kind || '';
    box.hidden = !message;
  }

  function show(page, ...children) {
    document.body.dataset.page = page;
    fill(main(), ...children);
  }

  function when(value) {
    if (!value) return '—';
    const date = new Date(value);
    return isNaN(date) ? String(value) : date.toLocaleString();
  }

  function json(value) {
    return el('pre', { class: 'json', text: JSON.stringify(value, null, 2) });
  }

  // A table in a box of its own that scrolls sideways when the table is wider than
  // the screen (a phone), so that the page itself never does.
  function table(headers, rows, attributes) {
    return el('div', { class: 'scroll' }, el('table', attributes || {},
      el('thead', {}, el('tr', {}, headers.map((header) => el('th', { scope: 'col', text: header })))),
      el('tbody', {}, rows)));
  }

  function link(text, hash, attributes) {
    return el('a', Object.assign({ href: hash, text: text }, attributes || {}));
  }

  const segment = (value) => encodeURIComponent(value);

  // MARK: - API

  class APIError extends Error {
    constructor(status, problem) {
      super((problem && problem.detail) || ('HTTP ' + status));
      this.status = status;
      this.problem = problem;
    }
  }

  // A CSV export of what a view shows: a plain link, which the session's cookie
  // signs like every other read, so the browser streams the file to disk.
  function exportLink(path, text) {
    return el('a', { class: 'export', href: path, download: '', text: text });
  }

  async function api(method, path, body) {
    const headers = { Accept: 'application/json' };
    if (method !== 'GET' && method !== 'HEAD' && state.session) headers['X-CSRF-Token'] = state.session.csrf_token;
    const init = { method: method, headers: headers, credentials: 'same-origin', cache: 'no-store' };
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    const response = await fetch(path, init);
    if (response.status === 204) return null;
    const type = response.headers.get('Content-Type') || '';
    const data = type.includes('json') ? await response.json() : await response.text();
    if (!response.ok) {
      if (response.status === 401 && !path.startsWith('/dashboard/session')) signedOut('Your session has ended; sign in again.');
      throw new APIError(response.status, data);
    }
    return data;
  }

  function failed(error) {
    flash(error && error.message ? error.message : String(error), 'error');
  }

  // MARK: - Live updates

  function stopLive() {
    for (const stop of state.stops.splice(0)) stop();
  }

  function every(milliseconds, action) {
    const timer = setInterval(() => { action().catch(() => {}); }, milliseconds);
    state.stops.push(() => clearInterval(timer));
  }

  // Follows an app's events: the event stream when the server has one and it opens,
  // else (or once it fails) the list fetched again every two seconds.
  const ACTIVITY_EVENTS = ['activity.started', 'activity.updated', 'activity.ended', 'activity.token_registered',
    'activity.start_unconfirmed', 'activity.tapped', 'activity.received'];
  const PUSH_EVENTS = ['push.sent', 'push.failed', 'push.dropped', 'send.completed', 'token.rejected', 'schedule.fired',
    'schedule.dropped'];

  function follow(appID, refresh, types) {
    let polling = false;
    const poll = () => {
      if (polling) return;
      polling = true;
      every(POLL_MS, refresh);
    };
    if (!state.documented.has('/v1/apps/{app_id}/events') || typeof EventSource !== 'function') {
      poll();
      return;
    }
    // Only the events that change the page, each of which arrives as a named event.
    const query = '?types=' + encodeURIComponent(types.join(','));
    const stream = new EventSource('/v1/apps/' + segment(appID) + '/events' + query, { withCredentials: true });
    // Coalesced: one refresh at a time, and one more when events came meanwhile.
    let running = false;
    let again = false;
    const changed = () => {
      if (running) {
        again = true;
        return;
      }
      running = true;
      refresh().catch(() => {}).finally(() => {
        running = false;
        if (again) {
          again = false;
          changed();
        }
      });
    };
    for (const type of types) stream.addEventListener(type, changed);
    stream.onopen = changed;
    stream.onerror = () => {
      stream.close();
      poll();
    };
    state.stops.push(() => stream.close());
  }

  // MARK: - Session

  async function signIn(token) {
    const response = await fetch('/dashboard/session', {
      method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
      body: JSON.stringify({ token: token }), credentials: 'same-origin', cache: 'no-store',
    });
    const data = await response.json();
    if (!response.ok) throw new APIError(response.status, data);
    return data;
  }

  function signedOut(message) {
    state.session = null;
    localStorage.removeItem(HINT);
    stopLive();
    document.getElementById('who').textContent = '';
    document.getElementById('sign-out').hidden = true;
    fill(document.getElementById('nav'), );
    showSignIn(message);
  }

  async function signedIn(session) {
    state.session = session;
    localStorage.setItem(HINT, '1');
    const who = session.scope === 'admin' ? 'admin' : 'app ' + session.app_id;
    document.getElementById('who').textContent = 'Signed in as ' + who + ' until ' + when(session.expires_at);
    document.getElementById('sign-out').hidden = false;
    try {
      const documentation = await api('GET', '/openapi.json');
      state.documented = new Set(Object.keys((documentation && documentation.paths) || {}));
    } catch (error) {
      state.documented = new Set();
    }
    const nav = document.getElementById('nav');
    fill(nav, 
      session.scope === 'admin' ? link('Apps', '#/apps') : link('App', '#/apps/' + segment(session.app_id)),
      link('Delivery', '#/metrics'));
    if (!location.hash || location.hash === '#' || location.hash === '#/') {
      location.hash = session.scope === 'admin' ? '#/apps' : '#/apps/' + segment(session.app_id);
    }
    route();
  }

  function showSignIn(message) {
    const input = el('input', { type: 'password', id: 'token', name: 'token', autocomplete: 'current-password', required: true });
    const error = el('p', { id: 'sign-in-error', class: 'error', role: 'alert', text: message || '' });
    const form = el('form', { id: 'sign-in-form', method: 'post', action: '/dashboard/session' },
      el('h2', { text: 'Sign in' }),
      el('p', { text: 'The admin token shows every app; an app\'s server key shows that app alone.' }),
      el('label', {}, 'Admin token or server key ', input),
      el('button', { type: 'submit', id: 'sign-in-button', text: 'Sign in' }),
      error);
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      error.textContent = '';
      signIn(input.value).then((session) => {
        input.value = '';
        flash('');
        return signedIn(session);
      }).catch((failure) => {
        error.textContent = failure.status === 401 ? 'That token is neither the admin token nor a server key.' : failure.message;
      });
    });
    show('sign-in', form);
    input.focus();
  }

  async function signOut() {
    try {
      await api('DELETE', '/dashboard/session');
    } catch (error) {
      // Signed out on this side whatever the server answered.
    }
    signedOut('Signed out.');
  }

  // MARK: - Routing

  function route() {
    stopLive();
    flash('');
    if (!state.session) {
      showSignIn();
      return;
    }
    const [path, search] = location.hash.replace(/^#\/?/, '').split('?');
    const query = new URLSearchParams(search || '');
    const parts = path.split('/').filter((part) => part.length > 0).map(decodeURIComponent);
    let page;
    if (parts[0] === 'metrics') page = metricsPage();
    else if (parts[0] === 'apps' && parts.length === 1) page = appsPage();
    else if (parts[0] === 'apps' && parts.length === 2) page = appPage(parts[1]);
    else if (parts[0] === 'apps' && parts[2] === 'activities' && parts.length === 4) page = activityPage(parts[1], parts[3]);
    else if (parts[0] === 'apps' && parts[2] === 'overview') page = overviewPage(parts[1], parts[3]);
    else if (parts[0] === 'apps' && parts[2] === 'lookup') page = lookupPage(parts[1], parts.slice(3).join('/'));
    else if (parts[0] === 'apps' && parts[2] === 'devices' && parts.length === 4) page = devicePage(parts[1], parts[3]);
    else if (parts[0] === 'apps' && parts[2] === 'devices') page = devicesPage(parts[1], query.get('after'));
    else if (parts[0] === 'apps' && parts[2] === 'webhooks') page = webhooksPage(parts[1]);
    else if (parts[0] === 'apps' && parts[2] === 'pushes') page = pushesPage(parts[1], query);
    else if (parts[0] === 'apps' && parts[2] === 'send') page = sendPage(parts[1]);
    else page = appsPage();
    page.catch(failed);
  }

  function appNav(appID, current) {
    const base = '#/apps/' + segment(appID);
    const items = [['Activities', base], ['Overview', base + '/overview'], ['Devices', base + '/devices'], ['Webhooks', base + '/webhooks'], ['Send a test', base + '/send']];
    // One box finds an activity, a device, a user's devices, a push or a token.
    const box = el('input', { id: 'lookup-text', type: 'search', placeholder: 'activity, device, user, apns-id or token', 'aria-label': 'Look up' });
    const form = el('form', { id: 'lookup-form', role: 'search', class: 'lookup' }, box, el('button', { type: 'submit', text: 'Look up' }));
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      if (box.value.trim()) location.hash = base + '/lookup/' + encodeURIComponent(box.value.trim());
    });
    return el('nav', { class: 'tabs' }, items.map(([name, hash]) => link(name, hash, { class: name === current ? 'current' : null })), form);
  }

  // MARK: - Apps

  async function appsPage() {
    if (state.session.scope !== 'admin') {
      location.hash = '#/apps/' + segment(state.session.app_id);
      return;
    }
    show('apps', el('h2', { text: 'Apps' }), el('p', { text: 'Loading…' }));
    const answer = await api('GET', '/v1/apps');
    const rows = answer.items.map((app) => el('tr', { 'data-app-id': app.id },
      el('td', {}, link(app.name, '#/apps/' + segment(app.id), { 'data-app-id': app.id })),
      el('td', { class: 'mono', text: app.id }),
      el('td', { text: app.bundle_id }),
      el('td', { text: app.apns ? app.apns.team_id + ' / ' + app.apns.key_id : 'none' }),
      el('td', { text: when(app.created_at) })));
    show('apps', el('h2', { text: 'Apps' }),
      rows.length ? table(['Name', 'Id', 'Bundle id', 'APNs key', 'Created'], rows, { id: 'apps-table' }) : el('p', { text: 'No apps yet.' }));
  }

  // MARK: - One app: its activities

  async function appPage(appID) {
    const status = el('select', { id: 'status-filter' },
      ['', 'started', 'updated', 'ended'].map((value) => el('option', { value: value, text: value || 'any status' })));
    const type = el('input', { id: 'type-filter', type: 'text', placeholder: 'activity type' });
    const body = el('tbody', { id: 'activities' });
    const heading = el('h2', { text: 'App ' + appID });
    const keys = el('div', { id: 'keys' });
    const exported = exportLink('/v1/apps/' + segment(appID) + '/exports/activities.csv', 'Export as CSV');
    const refresh = async () => {
      const query = new URLSearchParams();
      if (status.value) query.set('status', status.value);
      if (type.value.trim()) query.set('activity_type', type.value.trim());
      exported.setAttribute('href', '/v1/apps/' + segment(appID) + '/exports/activities.csv' + (query.toString() ? '?' + query.toString() : ''));
      query.set('limit', '100');
      const answer = await api('GET', '/v1/apps/' + segment(appID) + '/activities?' + query.toString());
      fill(body, ...answer.items.map((activity) => el('tr', { 'data-activity-id': activity.activity_id, class: 'status-' + activity.status },
        el('td', {}, link(activity.activity_id, '#/apps/' + segment(appID) + '/activities/' + segment(activity.activity_id))),
        el('td', { text: activity.activity_type }),
        el('td', { class: 'status', text: activity.status }),
        el('td', { text: when(activity.started_at) }),
        el('td', { text: when(activity.updated_at) }),
        el('td', { text: activity.end_cause || '' }))));
      if (!answer.items.length) fill(body, el('tr', { class: 'empty' }, el('td', { colspan: 6, text: 'No activities match.' })));
    };
    status.addEventListener('change', () => refresh().catch(failed));
    type.addEventListener('change', () => refresh().catch(failed));
    const actions = [];
    if (state.session.scope === 'admin') {
      actions.push(el('button', { id: 'rotate-keys', class: 'danger', text: 'Rotate keys', onclick: () => rotateKeys(appID, keys) }));
      api('GET', '/v1/apps/' + segment(appID)).then((app) => { heading.textContent = app.name + ' (' + app.id + ')'; }).catch(() => {});
    }
    show('app', heading, appNav(appID, 'Activities'), el('div', { class: 'actions' }, actions), keys,
      el('div', { class: 'filters' }, el('label', {}, 'Status ', status), el('label', {}, 'Type ', type), exported),
      el('div', { class: 'scroll' }, el('table', { id: 'activities-table' },
        el('thead', {}, el('tr', {}, ['Activity', 'Type', 'Status', 'Started', 'Updated', 'End cause'].map((name) => el('th', { scope: 'col', text: name })))),
        body)));
    await refresh();
    follow(appID, refresh, ACTIVITY_EVENTS);
  }

  async function rotateKeys(appID, box) {
    try {
      const keys = await api('POST', '/v1/apps/' + segment(appID) + '/keys/rotate', {});
      fill(box, el('div', { class: 'notice' },
        el('p', { text: 'New keys (shown once; the old ones no longer work):' }),
        el('p', {}, 'Server key: ', el('code', { text: keys.server_key })),
        el('p', {}, 'Device key: ', el('code', { text: keys.device_key }))));
    } catch (error) {
      failed(error);
    }
  }

  // MARK: - One activity

  // The silent failures a push (or its device's copy) shows: APNs answered, or
  // nothing failed loudly, yet the device shows nothing new.
  function silentFailures(push, copy) {
    const found = [];
    if (push.status === 'dropped') found.push('dropped' + (push.reason ? ' (' + push.reason + ')' : ''));
    if (push.event === 'start' && push.status === 'sent' && copy && copy.status === 'pending') found.push('start unconfirmed');
    if (push.reason === 'BadDeviceToken' || push.reason === 'Unregistered' || (push.event !== 'start' && copy && copy.end_cause === 'token_rejected' && push.status === 'failed')) found.push('token rejected');
    if (push.environment_switched) found.push('environment switched');
    return found;
  }

  async function activityPage(appID, activityID) {
    const base = '/v1/apps/' + segment(appID);
    const path = base + '/activities/' + segment(activityID);
    const summary = el('section', { id: 'summary' });
    const attributes = el('section', { id: 'attributes' });
    const states = el('section', { id: 'content-states' });
    const devices = el('section', { id: 'devices' });
    const schedules = el('section', { id: 'schedules' });
    const timeline = el('section', { id: 'timeline' });
    const pushes = el('section', { id: 'push-timeline' });
    const sendsSection = el('section', { id: 'sends' });
    const refresh = async () => {
      const [activity, history, planned, entries, timelineSends] = await Promise.all([
        api('GET', path), api('GET', path + '/pushes'),
        api('GET', base + '/schedules?activity_id=' + segment(activityID)), api('GET', path + '/timeline'),
        api('GET', path + '/sends?limit=200')]);
      renderSummary(summary, appID, activity);
      fill(attributes, el('h3', { text: 'Attributes' }), json(activity.attributes));
      fill(states, el('h3', { text: 'Content state' }), json(activity.content_state));
      const sends = history.items.filter((push) => push.event !== 'alert');
      timelineSends.export = path + '/sends.csv';
      renderSends(sendsSection, timelineSends);
      const copies = new Map(activity.devices.map((copy) => [copy.device_id, copy]));
      // On a broadcast channel, each update is one push per channel, whatever the
      // number of devices: the channels come first.
      const channels = (activity.channels || []).length
        ? el('p', { id: 'activity-channels' }, 'Delivery: broadcast channel ',
          activity.channels.map((channel) => el('code', { text: channel.apns_channel_id + ' (' + channel.environment + ')' })))
        : null;
      // An Android copy is reached through its device's FCM token: no update token,
      // no APNs environment.
      fill(devices, el('h3', { text: 'Devices' }), channels, table(['Device', 'Platform', 'Status', 'Environment', 'Update token', 'Registered', 'Shown', 'Ended', 'End cause'],
        activity.devices.map((copy) => el('tr', { 'data-device-id': copy.device_id, 'data-platform': copy.platform || 'ios' },
          el('td', {}, deviceLink(appID, copy.device_id)), el('td', { text: copy.platform || 'ios' }), el('td', { text: copy.status }),
          el('td', { text: copy.environment || '—' }),
          el('td', { class: 'mono', text: copy.update_token_prefix || (copy.has_update_token ? 'held' : (copy.platform === 'android' ? 'FCM token' : '—')) }),
          el('td', { text: when(copy.token_registered_at) }),
          el('td', { class: 'shown', text: copy.last_received_send_id ? 'send ' + copy.last_received_send_id + ', ' + when(copy.last_received_at) : '—' }),
          el('td', { text: when(copy.ended_at) }), el('td', { text: copy.end_cause || '' })))));
      renderSchedules(schedules, base, planned.items, refresh);
      fill(timeline, el('h3', { text: 'Timeline ahead' }),
        el('p', { class: 'hint', text: "The entries of the activity's timeline, each sent at its time by the server." }),
        entries.entries.length
          ? table(['#', 'At', 'Status', 'Sent', 'Reason'], entries.entries.map((entry) => el('tr', {},
            el('td', { text: entry.index }), el('td', { text: when(entry.at) }), el('td', { text: entry.status }),
            el('td', { text: when(entry.sent_at) }), el('td', { text: entry.reason || '' }))))
          : el('p', { text: 'No timeline.' }),
        entries.end_at ? el('p', { text: 'Ends at ' + when(entries.end_at) + (entries.renew ? ', renewed past the update window' : '') }) : null);
      renderPushes(pushes, sends, copies);
    };
    show('activity', el('h2', {}, 'Activity ', el('span', { class: 'mono', text: activityID })), appNav(appID, 'Activities'),
      summary, el('div', { class: 'columns' }, attributes, states), sendsSection, devices, pushes, schedules, timeline);
    await refresh();
    follow(appID, refresh, ACTIVITY_EVENTS.concat(PUSH_EVENTS));
  }

  // Each send of the activity, newest first: the content state it carried with
  // what changed from the one before it (on its platform), and what it came to.
  function renderSends(section, page) {
    const rows = page.items.map((send) => {
      const changed = send.changed || [];
      const state = send.content_state === null ? '—' : JSON.stringify(send.content_state);
      return el('tr', { 'data-event': send.event, 'data-send-id': send.send_id, 'data-platform': send.platform, class: 'status-' + send.status },
        el('td', { class: 'when', text: when(send.created_at) }),
        el('td', {}, el('strong', { text: send.event }), send.token_kind === 'channel' ? ' (broadcast)' : '', send.alert ? el('span', { class: 'label', title: 'It carried an alert', text: 'alert' }) : null),
        el('td', { text: send.platform }), el('td', { text: send.status + (send.drop_reason ? ' (' + send.drop_reason + ')' : '') }),
        el('td', {}, el('code', { class: 'state', text: state }),
          send.changed === null ? null : el('div', { class: 'changed', text: changed.length ? 'changed: ' + changed.join(', ') : 'nothing changed' })),
        el('td', { class: 'num', text: send.targets }), el('td', { class: 'num', text: send.sent }),
        el('td', { class: 'num failed' + (send.failed ? ' bad' : ''), text: send.failed }),
        el('td', { class: 'num shown', text: send.received + ' of ' + send.targets }),
        el('td', { class: 'num', text: send.taps }));
    });
    fill(section, el('h3', { text: 'Sends' }), el('p', { class: 'actions' }, exportLink(page.export, 'Export sends as CSV')),
      el('p', { class: 'hint', text: "Start, updates, broadcasts and end, newest first. Shown: the devices that said they showed it (for a type with receipts)." }),
      rows.length
        ? table(['When', 'Event', 'Platform', 'Status', 'Content state', 'Targets', 'Sent', 'Failed', 'Shown', 'Taps'], rows, { id: 'sends-table' })
        : el('p', { text: 'No sends yet.' }),
      page.next_cursor ? el('p', { class: 'hint', text: 'The newest 200 sends are shown.' }) : null);
  }

  function renderSummary(section, appID, activity) {
    const end = activity.status === 'ended' ? null : el('button', {
      id: 'end-activity', class: 'danger', text: 'End activity',
      onclick: async (event) => {
        event.target.disabled = true;
        try {
          const answer = await api('POST', '/v1/apps/' + segment(appID) + '/activities/' + segment(activity.activity_id) + '/end', {});
          flash('End sent to ' + (answer && answer.targets !== undefined ? answer.targets : 0) + ' device(s).', 'ok');
        } catch (error) {
          failed(error);
          event.target.disabled = false;
        }
      },
    });
    const facts = [
      ['Type', activity.activity_type], ['Origin', activity.origin], ['Started', when(activity.started_at)],
      ['Updated', when(activity.updated_at)], ['Update deadline', when(activity.update_deadline)],
      ['End deadline', when(activity.end_deadline)], ['Ends at', when(activity.end_at)], ['Ended', when(activity.ended_at)],
      ['End cause', activity.end_cause || '—'],
      ['Who may follow', { audience: 'its audience', anyone: 'any device', local: "the app's local_join" }[activity.join] || '—'],
    ];
    if (activity.renewed_to) facts.push(['Renewed to', activity.renewed_to]);
    if (activity.renewed_from) facts.push(['Renewed from', activity.renewed_from]);
    fill(section, 
      el('p', {}, 'Status: ', el('strong', { id: 'activity-status', class: 'status-' + activity.status, text: activity.status }), ' ', end),
      el('dl', {}, facts.map(([name, value]) => [el('dt', { text: name }), el('dd', { text: value })])));
  }

  function renderSchedules(section, base, items, refresh) {
    fill(section, el('h3', { text: 'Schedules' }), items.length
      ? table(['Schedule', 'Kind', 'Send at', 'Status', 'Reason', 'Targets', ''], items.map((item) => el('tr', { 'data-schedule-id': item.schedule_id },
        el('td', { class: 'mono', text: item.schedule_id }), el('td', { text: item.kind + (item.entry_index !== undefined && item.entry_index !== null ? ' #' + item.entry_index : '') }),
        el('td', { text: when(item.send_at) }), el('td', { text: item.status }), el('td', { text: item.reason || '' }),
        el('td', { text: item.targets === null || item.targets === undefined ? '' : item.targets }),
        el('td', {}, item.status === 'scheduled' ? el('button', {
          class: 'cancel-schedule', text: 'Cancel',
          onclick: () => api('DELETE', base + '/schedules/' + segment(item.schedule_id)).then(refresh).catch(failed),
        }) : null))))
      : el('p', { text: 'Nothing scheduled.' }));
  }

  function renderPushes(section, pushes, copies) {
    const byDevice = new Map();
    for (const push of pushes) {
      // A broadcast has a lane of its own: the channel's, reaching every subscriber.
      const lane = push.channel_id ? 'channel ' + push.channel_id : push.device_id;
      if (!byDevice.has(lane)) byDevice.set(lane, []);
      byDevice.get(lane).push(push);
    }
    const lanes = [];
    for (const [deviceID, items] of byDevice) {
      lanes.push(el('div', { class: 'lane', 'data-device-id': deviceID }, el('h4', { class: 'mono', text: deviceID }),
        el('ol', { class: 'pushes' }, items.map((push) => {
          const silent = silentFailures(push, copies.get(deviceID));
          const waiting = push.status === 'queued' || push.status === 'deferred';
          const finished = push.sent_at || (!waiting ? push.updated_at : null);
          const latency = finished ? Math.max(0, new Date(finished) - new Date(push.created_at)) + ' ms' : '…';
          const taps = push.taps || 0;
          return el('li', { class: 'push status-' + push.status + (silent.length ? ' silent-failure' : ''), 'data-event': push.event, 'data-status': push.status, 'data-taps': String(taps) },
            el('span', { class: 'when', text: when(push.created_at) }), ' ',
            el('strong', { text: push.event }), ' → ', el('span', { class: 'status', text: push.status }),
            push.apns_status ? ' ' + push.apns_status : '', push.fcm_status ? ' FCM ' + push.fcm_status : '',
            push.reason ? ' ' + push.reason : '',
            push.platform === 'android'
              ? el('span', { class: 'detail' }, ' FCM ', el('code', { text: push.fcm_message_name || push.apns_id }), ', ' + push.attempts + ' attempt(s), ' + latency + ', android')
              : el('span', { class: 'detail' }, ' apns-id ', el('code', { text: push.apns_id }), ', ' + push.attempts + ' attempt(s), ' + latency + ', ' + push.token_kind + ', ' + push.environment),
            taps ? el('span', { class: 'taps', title: 'first ' + when(push.first_tapped_at), text: ' ' + taps + (taps === 1 ? ' tap' : ' taps') }) : null,
            push.received_at ? el('span', { class: 'label received', title: 'The device said it showed this send', text: 'shown ' + when(push.received_at) }) : null,
            push.priority_downgraded ? el('span', { class: 'label downgraded', title: "The copy's priority-10 budget was spent", text: 'priority 5' }) : null,
            push.deferred_until ? el('span', { class: 'label deferred', title: "The device's starts of the hour were spent", text: 'goes ' + when(push.deferred_until) }) : null,
            silent.map((label) => el('span', { class: 'label', text: label })));
        }))));
    }
    fill(section, el('h3', { text: 'Pushes and answers, by device' }), lanes.length ? lanes : el('p', { text: 'No pushes yet.' }));
  }

  // MARK: - Devices

  function deviceLink(appID, deviceID) {
    return link(deviceID, '#/apps/' + segment(appID) + '/devices/' + segment(deviceID), { class: 'mono', 'data-device-link': deviceID });
  }

  // The app's devices by id (GET …/devices), a page at a time; the cursor is in
  // the URL's query (…/devices?after=ID), so a page can be shared.
  async function devicesPage(appID, after) {
    const base = '/v1/apps/' + segment(appID);
    const page = await api('GET', base + '/devices?limit=100' + (after ? '&cursor=' + encodeURIComponent(after) : ''));
    const rows = page.items.map((device) => el('tr', { 'data-device-id': device.device_id },
      el('td', {}, deviceLink(appID, device.device_id)), el('td', { text: device.platform }), el('td', { text: device.environment || '—' }),
      el('td', { text: device.user_id || '—' }),
      el('td', { class: 'mono', text: device.apns_token_prefix || device.fcm_token_prefix || '—' }),
      el('td', { text: device.reachable ? 'yes' : 'no, since ' + when(device.unreachable_at) }),
      el('td', { text: when(device.updated_at) })));
    const next = page.next_cursor
      ? link('Next page', '#/apps/' + segment(appID) + '/devices?after=' + encodeURIComponent(page.next_cursor), { id: 'devices-next' }) : null;
    show('devices', el('h2', { text: 'Devices' }), appNav(appID, 'Devices'),
      el('p', { class: 'actions' }, exportLink(base + '/devices.csv', 'Export devices as CSV')),
      rows.length ? table(['Device', 'Platform', 'Environment', 'User', 'Token', 'Reachable', 'Updated'], rows, { id: 'devices-table' }) : el('p', { text: 'No devices yet.' }),
      next);
  }

  // One device (GET …/devices/{id}): its registration, tokens shortened, its
  // copies of activities and the pushes of its own rows.
  async function devicePage(appID, deviceID) {
    const base = '/v1/apps/' + segment(appID);
    const device = await api('GET', base + '/devices/' + segment(deviceID));
    const activity = (id) => link(id, '#/apps/' + segment(appID) + '/activities/' + segment(id), { class: 'mono' });
    const facts = [['Platform', device.platform], ['Environment', device.environment || '—'], ['User', device.user_id || '—'],
      ['Tags', (device.tags || []).join(', ') || '—'], ['OS', device.os_version || '—'],
      ['APNs token', device.apns_token_prefix || '—'], ['FCM token', device.fcm_token_prefix || '—'],
      ['Reachable', device.reachable ? 'yes' : 'no, since ' + when(device.unreachable_at)],
      ['Device secret', device.has_secret ? 'set' : 'none'], ['Registered', when(device.created_at)], ['Updated', when(device.updated_at)]];
    show('device', el('h2', {}, 'Device ', el('span', { class: 'mono', text: deviceID })), appNav(appID, 'Devices'),
      el('dl', { id: 'device-facts' }, facts.map(([name, value]) => [el('dt', { text: name }), el('dd', { class: /token/.test(name) ? 'mono' : null, text: value })])),
      el('h3', { text: 'Push-to-start tokens' }),
      device.push_to_start.length
        ? table(['Activity type', 'Token', 'Environment', 'Registered'], device.push_to_start.map((token) => el('tr', { 'data-activity-type': token.activity_type },
          el('td', { text: token.activity_type }), el('td', { class: 'mono', text: token.token_prefix }),
          el('td', { text: token.environment }), el('td', { text: when(token.registered_at) }))), { id: 'device-start-tokens' })
        : el('p', { text: 'None.' }),
      el('h3', { text: 'Activities' }),
      device.copies.length
        ? table(['Activity', 'Type', 'Status', 'Update token', 'Shown', 'Ended', 'End cause'], device.copies.map((copy) => el('tr', { 'data-activity-id': copy.activity_id },
          el('td', {}, activity(copy.activity_id)), el('td', { text: copy.activity_type }), el('td', { text: copy.status }),
          el('td', { class: 'mono', text: copy.update_token_prefix || '—' }),
          el('td', { text: copy.last_received_send_id ? 'send ' + copy.last_received_send_id + ', ' + when(copy.last_received_at) : '—' }),
          el('td', { text: when(copy.ended_at) }), el('td', { text: copy.end_cause || '' }))), { id: 'device-copies' })
        : el('p', { text: 'No activities.' }),
      el('h3', { text: 'Pushes of its own' }),
      el('p', { class: 'hint', text: "Alerts, and the pushes that went otherwise than their send (failures, retries, downgrades, deferred starts); the newest 50." }),
      device.pushes.length
        ? table(['When', 'Event', 'Activity', 'Status', 'Reason', 'apns-id'], device.pushes.map((push) => el('tr', { 'data-event': push.event, 'data-status': push.status },
          el('td', { text: when(push.created_at) }), el('td', { text: push.event }),
          el('td', {}, push.activity_id ? activity(push.activity_id) : '—'), el('td', { text: push.status }),
          el('td', { text: push.reason || '' }), el('td', { class: 'mono', text: push.apns_id }))), { id: 'device-pushes' })
        : el('p', { text: 'None.' }));
  }

  // MARK: - Webhooks

  async function webhooksPage(appID) {
    const base = '/v1/apps/' + segment(appID) + '/webhooks';
    const none = () => show('webhooks', el('h2', { text: 'Webhooks of ' + appID }), appNav(appID, 'Webhooks'), el('p', { id: 'no-webhooks', text: 'No webhooks.' }));
    if (!state.documented.has('/v1/apps/{app_id}/webhooks')) {
      none();
      return;
    }
    let answer;
    try {
      answer = await api('GET', base);
    } catch (error) {
      if (error.status === 404) {
        none();
        return;
      }
      throw error;
    }
    if (!answer.items.length) {
      none();
      return;
    }
    const deliveries = el('section', { id: 'deliveries' });
    const rows = answer.items.map((hook) => el('tr', { 'data-webhook-id': hook.id },
      el('td', { class: 'mono', text: hook.url }), el('td', { text: (hook.events || []).join(', ') }),
      el('td', { text: hook.description || '' }), el('td', { text: hook.enabled ? 'yes' : 'no' }), el('td', { text: when(hook.created_at) }),
      el('td', {},
        el('button', { text: 'Deliveries', onclick: () => showDeliveries(base, hook, deliveries).catch(failed) }),
        el('button', { class: 'danger', text: 'Rotate secret', onclick: () => api('POST', base + '/' + segment(hook.id) + '/rotate-secret', {}).then((rotated) => {
          flash('New secret (shown once): ' + ((rotated && rotated.secret) || 'rotated'), 'ok');
        }).catch(failed) }))));
    show('webhooks', el('h2', { text: 'Webhooks of ' + appID }), appNav(appID, 'Webhooks'),
      table(['URL', 'Events', 'Description', 'Enabled', 'Created', ''], rows, { id: 'webhooks-table' }), deliveries);
  }

  async function showDeliveries(base, hook, section) {
    const path = base + '/' + segment(hook.id) + '/deliveries';
    const answer = await api('GET', path);
    fill(section, el('h3', { text: 'Deliveries to ' + hook.url }), answer.items.length
      ? table(['Event', 'Type', 'Status', 'Response', 'Duration', 'Attempts', 'Next attempt', 'Created', ''], answer.items.map((delivery) => el('tr', { 'data-delivery-id': delivery.id, class: 'status-' + delivery.status },
        el('td', { class: 'mono', text: delivery.event_id }), el('td', { text: delivery.event_type }), el('td', { text: delivery.status }),
        el('td', { text: delivery.response_status === null || delivery.response_status === undefined ? '—' : delivery.response_status }),
        el('td', { text: delivery.duration_ms === null || delivery.duration_ms === undefined ? '—' : delivery.duration_ms + ' ms' }),
        el('td', { text: delivery.attempts }), el('td', { text: when(delivery.next_attempt_at) }), el('td', { text: when(delivery.created_at) }),
        el('td', {}, el('button', { text: 'Retry', onclick: () => api('POST', path + '/' + segment(delivery.id) + '/retry', {}).then(() => showDeliveries(base, hook, section)).catch(failed) })))))
      : el('p', { text: 'No deliveries yet.' }));
  }

  // MARK: - Delivery metrics

  function parseMetrics(text) {
    const series = [];
    for (const line of text.split('\n')) {
      if (!line || line.startsWith('#')) continue;
      const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$/.exec(line);
      if (!match) continue;
      const labels = {};
      const pattern = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
      let label;
      while ((label = pattern.exec(match[2] || '')) !== null) labels[label[1]] = label[2];
      series.push({ name: match[1], labels: labels, value: Number(match[3]) });
    }
    return series;
  }

  // FCM's answers that refuse an app's credentials (and the refusal kept after one).
  const FCM_REFUSALS = ['SENDER_ID_MISMATCH', 'THIRD_PARTY_AUTH_ERROR', 'PERMISSION_DENIED'];

  function sample(series) {
    const sum = (name, test) => series.filter((one) => one.name === name && (!test || test(one.labels))).reduce((total, one) => total + one.value, 0);
    return {
      at: Date.now(),
      queue: sum('islet_push_queue_depth'), inFlight: sum('islet_push_in_flight'),
      sent: sum('islet_pushes_total', (labels) => labels.result === 'sent'),
      failed: sum('islet_pushes_total', (labels) => labels.result !== 'sent'),
      // By transport: APNs's pushes and FCM's (Android devices' data messages).
      sentFCM: sum('islet_pushes_total', (labels) => labels.result === 'sent' && labels.transport === 'fcm'),
      // FCM refused an app's service account: nothing goes with it until it changes.
      fcmRefused: sum('islet_pushes_total', (labels) => labels.transport === 'fcm' && FCM_REFUSALS.includes(labels.reason)),
      latencySum: sum('islet_push_send_seconds_sum'), latencyCount: sum('islet_push_send_seconds_count'),
      scheduled: sum('islet_schedules_pending'),
    };
  }

  function chart(title, unit, points, id) {
    const width = 480;
    const height = 140;
    const max = Math.max(1, ...points.map((point) => point.value));
    const picture = svg('svg', { viewBox: '0 0 ' + width + ' ' + height, width: width, height: height, role: 'img', class: 'chart', id: id });
    picture.append(svg('rect', { x: 0, y: 0, width: width, height: height, class: 'frame' }));
    if (points.length > 1) {
      const first = points[0].at;
      const span = Math.max(1, points[points.length - 1].at - first);
      const coordinates = points.map((point) => ((point.at - first) / span * (width - 10) + 5).toFixed(1) + ',' + (height - 5 - point.value / max * (height - 25)).toFixed(1));
      picture.append(svg('polyline', { points: coordinates.join(' '), class: 'line' }));
    }
    const caption = svg('text', { x: 8, y: 16, class: 'caption' });
    const latest = points.length ? points[points.length - 1].value : 0;
    caption.textContent = title + ': ' + (Math.round(latest * 100) / 100) + ' ' + unit + ' (max ' + (Math.round(max * 100) / 100) + ')';
    picture.append(caption);
    picture.setAttribute('aria-label', caption.textContent);
    return el('figure', {}, picture);
  }

  // MARK: - One app: a lookup

  async function lookupPage(appID, text) {
    const base = '#/apps/' + segment(appID);
    const results = el('section', { id: 'lookup-results' }, el('p', { text: 'Looking…' }));
    show('lookup', el('h2', { text: 'Look up “' + text + '”' }), appNav(appID, null), results);
    const found = await api('GET', '/v1/apps/' + segment(appID) + '/lookup?q=' + encodeURIComponent(text));
    const activity = (id) => link(id, base + '/activities/' + segment(id));
    const sections = [];
    if (found.activities.length) {
      sections.push(el('h3', { text: 'Activities' }), table(['Activity', 'Type', 'Status'], found.activities.map((item) => el('tr', { 'data-activity-id': item.activity_id },
        el('td', {}, activity(item.activity_id)), el('td', { text: item.activity_type }), el('td', { text: item.status }))), { id: 'lookup-activities' }));
    }
    if (found.devices.length) {
      sections.push(el('h3', { text: 'Devices' }), table(['Device', 'Platform', 'User', 'Found by'], found.devices.map((item) => el('tr', { 'data-device-id': item.device_id },
        el('td', {}, deviceLink(appID, item.device_id)), el('td', { text: item.platform }), el('td', { text: item.user_id || '—' }),
        el('td', { text: item.matched.replace(/_/g, ' ') }))), { id: 'lookup-devices' }));
    }
    if (found.copies.length) {
      sections.push(el('h3', { text: 'Copies by update token' }), table(['Activity', 'Device'], found.copies.map((item) => el('tr', {},
        el('td', {}, activity(item.activity_id)), el('td', {}, deviceLink(appID, item.device_id)))), { id: 'lookup-copies' }));
    }
    if (found.pushes.length) {
      sections.push(el('h3', { text: 'Pushes' }), table(['apns-id', 'Activity', 'Device', 'Event', 'Status'], found.pushes.map((item) => el('tr', { 'data-apns-id': item.apns_id },
        el('td', { class: 'mono', text: item.apns_id }), el('td', {}, item.activity_id ? activity(item.activity_id) : '—'),
        el('td', { class: 'mono', text: item.device_id }), el('td', { text: item.event }), el('td', { text: item.status }))), { id: 'lookup-pushes' }));
    }
    fill(results, ...(sections.length ? sections : [el('p', { id: 'lookup-nothing', text: 'Nothing of this app matches.' })]));
  }

  // MARK: - One app: send a test

  // A start, update or end of one activity on one chosen device, from a form the
  // activity type's schema makes (GET …/activity-types): a field per attribute and
  // content-state field, typed as the device's decoder expects. What the API refuses
  // is shown beside the field it names, as the API words it.
  async function sendPage(appID) {
    const base = '/v1/apps/' + segment(appID);
    const [types, devices] = await Promise.all([api('GET', base + '/activity-types'), api('GET', base + '/devices?limit=500')]);
    const form = el('form', { id: 'send-form', class: 'send', novalidate: '' });
    const result = el('div', { id: 'send-result', role: 'status' });
    const typeSelect = el('select', { id: 'send-type', name: 'activity_type' },
      types.items.map((type) => el('option', { value: type.activity_type, text: type.activity_type })));
    const action = el('select', { id: 'send-action', name: 'action' },
      ['start', 'update', 'end'].map((value) => el('option', { value: value, text: value })));
    const activityID = el('input', { id: 'send-activity-id', type: 'text', value: 'test-' + Date.now().toString(36), 'data-field': 'activity_id', autocomplete: 'off' });
    const deviceList = el('datalist', { id: 'send-devices' }, devices.items.map((device) => el('option', { value: device.device_id })));
    const device = el('input', { id: 'send-device', type: 'text', list: 'send-devices', value: devices.items.length ? devices.items[0].device_id : '', 'data-field': 'audience.device_ids', autocomplete: 'off' });
    const fields = el('div', { id: 'send-fields' });
    const alertTitle = el('input', { id: 'send-alert-title', type: 'text', 'data-field': 'alert.title' });
    const alertBody = el('input', { id: 'send-alert-body', type: 'text', 'data-field': 'alert.body' });
    const controls = [];
    const row = (label, input, hint) => {
      const error = el('span', { class: 'field-error error', 'data-for': input.dataset.field || '', role: 'alert' });
      return el('div', { class: 'field' }, el('label', { for: input.id, text: label }), input, hint ? el('span', { class: 'hint', text: ' ' + hint }) : null, error);
    };
    // One input per schema field: a select for an enum or a bool, a number for int
    // and double, JSON text for dates, objects and arrays, text otherwise. An
    // empty input leaves its field out (the API names a required one).
    const input = (path, field) => {
      const id = 'send-' + path.replace(/[^A-Za-z0-9_-]/g, '-');
      let control;
      if (field.enum) {
        control = el('select', { id: id }, el('option', { value: '', text: '—' }), field.enum.map((value) => el('option', { value: JSON.stringify(value), text: String(value) })));
        control.dataset.kind = 'json';
      } else if (field.type === 'bool') {
        control = el('select', { id: id }, ['', 'true', 'false'].map((value) => el('option', { value: value, text: value || '—' })));
        control.dataset.kind = 'json';
      } else if (field.type === 'int' || field.type === 'double') {
        control = el('input', { id: id, type: 'number', step: field.type === 'int' ? '1' : 'any' });
        control.dataset.kind = 'number';
      } else if (['date', 'object', 'array'].includes(field.type)) {
        control = el('input', { id: id, type: 'text', class: 'mono', placeholder: field.type === 'date' ? 'a number, as ' + (field.date_encoding || 'seconds_since_2001') : 'JSON' });
        control.dataset.kind = 'json';
      } else {
        control = el('input', { id: id, type: field.type === 'url' ? 'url' : 'text' });
        control.dataset.kind = 'text';
      }
      control.dataset.field = path;
      controls.push(control);
      return row(path.split('.').pop() + (field.required ? ' (required)' : ''), control, field.type + (field.nullable ? ', may be null' : ''));
    };
    const render = () => {
      controls.length = 0;
      const type = types.items.find((item) => item.activity_type === typeSelect.value);
      const sections = [];
      if (!type) {
        sections.push(el('p', { text: 'Register an activity type (PUT …/activity-types/{name}) to send a test from its form.' }));
      } else {
        if (action.value === 'start') {
          sections.push(el('fieldset', {}, el('legend', { text: 'Attributes' }), Object.keys(type.attributes).sort().map((name) => input('attributes.' + name, type.attributes[name]))));
        }
        sections.push(el('fieldset', {}, el('legend', { text: action.value === 'end' ? 'Final content state (optional)' : 'Content state' }),
          Object.keys(type.content_state).sort().map((name) => input('content_state.' + name, type.content_state[name]))));
      }
      fill(fields, ...sections);
      // The device is a start's; an end carries no alert.
      device.closest('.field').hidden = action.value !== 'start';
      alertTitle.closest('fieldset').hidden = action.value === 'end';
    };
    const value = (control) => {
      const text = control.value.trim();
      if (text === '') return undefined;
      if (control.dataset.kind === 'number') return Number(text);
      if (control.dataset.kind === 'json') {
        try { return JSON.parse(text); } catch (error) { return text; }
      }
      return text;
    };
    const clearErrors = () => { for (const span of form.querySelectorAll('.field-error')) span.textContent = ''; fill(result); };
    const showErrors = (error) => {
      const problem = error.problem || {};
      const unplaced = [];
      for (const item of problem.errors || []) {
        // The input of the field, or of the nearest enclosing one (a message about
        // content_state.driver.name goes beside content_state.driver).
        let path = item.field;
        let span = null;
        while (path && !(span = form.querySelector('.field-error[data-for="' + CSS.escape(path) + '"]'))) path = path.includes('.') ? path.slice(0, path.lastIndexOf('.')) : '';
        if (span) span.textContent = item.message;
        else unplaced.push(item.field + ': ' + item.message);
      }
      fill(result, el('p', { class: 'error', text: error.message }), unplaced.length ? el('ul', {}, unplaced.map((text) => el('li', { text: text }))) : null);
    };
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      clearErrors();
      const body = {};
      for (const control of controls) {
        const [group, ...rest] = control.dataset.field.split('.');
        const v = value(control);
        if (v === undefined) continue;
        body[group] = body[group] || {};
        body[group][rest.join('.')] = v;
      }
      if (action.value !== 'end' && (alertTitle.value.trim() || alertBody.value.trim())) body.alert = { title: alertTitle.value.trim(), body: alertBody.value.trim() };
      if (action.value === 'end' && body.content_state === undefined) delete body.content_state;
      const id = activityID.value.trim();
      let path;
      if (action.value === 'start') {
        Object.assign(body, { activity_id: id, activity_type: typeSelect.value, audience: { device_ids: [device.value.trim()] } });
        body.attributes = body.attributes || {};
        body.content_state = body.content_state || {};
        path = base + '/activities';
      } else {
        if (action.value === 'update') body.content_state = body.content_state || {};
        path = base + '/activities/' + segment(id) + '/' + action.value;
      }
      try {
        const answer = await api('POST', path, body);
        fill(result, el('p', { class: 'ok', id: 'send-ok' }, action.value + ' sent to ' + (answer && answer.targets !== undefined ? answer.targets : 0) + ' device(s): ',
          link(id, '#/apps/' + segment(appID) + '/activities/' + segment(id), { class: 'mono' })));
      } catch (error) {
        if (!(error instanceof APIError)) throw error;
        showErrors(error);
      }
    });
    typeSelect.addEventListener('change', render);
    action.addEventListener('change', render);
    fill(form,
      el('div', { class: 'filters' }, row('Activity type', typeSelect), row('Action', action)),
      row('Activity id', activityID), el('div', {}, row('Device', device, 'a start goes to this device only'), deviceList),
      fields,
      el('fieldset', {}, el('legend', { text: 'Alert (a start needs one)' }), row('Title', alertTitle), row('Body', alertBody),
        el('span', { class: 'field-error error', 'data-for': 'alert', role: 'alert' })),
      el('button', { type: 'submit', id: 'send-submit', text: 'Send' }), result);
    show('send', el('h2', { text: 'Send a test' }), appNav(appID, 'Send a test'),
      el('p', { class: 'hint', text: 'A start goes to the one device named; an update or an end goes to every device holding the activity. The API checks it as it checks any send.' }), form);
    render();
  }

  // MARK: - One app: its pushes by period and reason

  // The pushes with rows of their own (GET …/pushes) over a period, by reason and
  // status: where an overview's failure reason leads. The filters are the URL's
  // query (#/apps/{id}/pushes?period=day&status=failed&reason=…), so a view can be
  // shared, and the export takes the same.
  async function pushesPage(appID, query) {
    const base = '/v1/apps/' + segment(appID);
    const filters = new URLSearchParams();
    for (const name of ['period', 'status', 'reason', 'activity_id']) if (query.get(name)) filters.set(name, query.get(name));
    const page = await api('GET', base + '/pushes?limit=200' + (filters.toString() ? '&' + filters.toString() : ''));
    const activity = (id) => link(id, '#/apps/' + segment(appID) + '/activities/' + segment(id), { class: 'mono' });
    const described = [filters.get('status') === 'failed' ? 'failed' : 'all', 'over the last ' + (filters.get('period') || 'day'),
      filters.get('reason') ? 'with reason ' + filters.get('reason') : null, filters.get('activity_id') ? 'of ' + filters.get('activity_id') : null];
    show('pushes', el('h2', { text: 'Pushes' }), appNav(appID, 'Overview'),
      el('p', { id: 'pushes-filter' }, 'Pushes ' + described.filter(Boolean).join(', ') + '. ',
        exportLink(base + '/exports/pushes.csv' + (filters.toString() ? '?' + filters.toString() : ''), 'Export as CSV')),
      page.items.length
        ? table(['When', 'Activity', 'Device', 'Event', 'Status', 'Reason', 'apns-id', 'Attempts'], page.items.map((push) => el('tr', { 'data-status': push.status, 'data-reason': push.reason || '' },
          el('td', { text: when(push.created_at) }), el('td', {}, push.activity_id ? activity(push.activity_id) : '—'),
          el('td', {}, push.channel_id ? el('span', { class: 'mono', text: 'channel ' + push.channel_id }) : deviceLink(appID, push.device_id)),
          el('td', { text: push.event }), el('td', { text: push.status }), el('td', { class: 'mono', text: push.reason || '' }),
          el('td', { class: 'mono', text: push.apns_id }), el('td', { class: 'num', text: push.attempts }))), { id: 'pushes-table' })
        : el('p', { id: 'no-pushes', text: 'No push matches.' }),
      page.next_cursor ? el('p', { class: 'hint', text: 'The newest 200 are shown; the export holds them all.' }) : null);
  }

  // MARK: - One app: its overview

  // What the app's sends over a period came to (GET …/overview: the sends'
  // counters, across every node), as figures and a chart each; the period is in
  // the URL (#/apps/{id}/overview/{hour|day|week}), so a view can be shared.
  const OVERVIEW_FIGURES = [['sends', 'Sends'], ['pushes', 'Pushes'], ['delivered', 'Delivered'], ['failed', 'Failed'],
    ['received', 'Shown (receipts)'], ['taps', 'Taps'], ['priority_downgraded', 'Priority downgrades'], ['deferred', 'Deferred starts'],
    ['rate_limited', 'Rate-limited requests'], ['dead_tokens', 'Dead tokens acted on']];

  async function overviewPage(appID, chosen) {
    const period = ['hour', 'day', 'week'].includes(chosen) ? chosen : 'day';
    const base = '#/apps/' + segment(appID) + '/overview/';
    const select = el('select', { id: 'overview-period' },
      ['hour', 'day', 'week'].map((value) => el('option', { value: value, text: 'last ' + value, selected: value === period ? 'selected' : null })));
    select.addEventListener('change', () => { location.hash = base + select.value; });
    const heading = el('h2', { text: 'Overview' });
    const figures = el('dl', { id: 'overview-totals', class: 'figures' });
    const charts = el('div', { id: 'overview-charts', class: 'charts' });
    const failures = el('section', { id: 'overview-failures' });
    const limits = el('section', { id: 'overview-limits' });
    show('overview', heading, appNav(appID, 'Overview'), el('div', { class: 'filters' }, el('label', {}, 'Period ', select)),
      figures, charts, failures, limits);
    const refresh = async () => {
      const answer = await api('GET', '/v1/apps/' + segment(appID) + '/overview?period=' + period);
      heading.textContent = answer.name + ': overview';
      const totals = answer.totals;
      fill(figures, ...OVERVIEW_FIGURES.flatMap(([key, name]) => [el('dt', { text: name }), el('dd', { 'data-figure': key, text: String(totals[key]) })]),
        el('dt', { text: 'Shown on' }),
        el('dd', { 'data-figure': 'shown-share', text: totals.pushes ? totals.received + ' of ' + totals.pushes + ' pushes' : '—' }));
      const points = (key) => answer.series.map((bucket) => ({ at: Date.parse(bucket.at), value: bucket[key] }));
      fill(charts, ...OVERVIEW_FIGURES.map(([key, name]) => chart(name, 'per ' + (answer.bucket_seconds / 60) + ' min', points(key), 'overview-' + key)));
      fill(failures, el('h3', { text: 'Failures by reason' }),
        answer.failures.length
          ? table(['Reason', 'Pushes'], answer.failures.map((failure) => el('tr', { 'data-reason': failure.reason },
            el('td', {}, link(failure.reason, '#/apps/' + segment(appID) + '/pushes?status=failed&period=' + period + '&reason=' + encodeURIComponent(failure.reason), { class: 'mono' })),
            el('td', { text: String(failure.count) }))), { id: 'failures-table' })
          : el('p', { id: 'no-failures', text: 'No push failed in this period.' }),
        el('h3', { text: 'Webhooks failing' }),
        answer.webhooks_failing.length
          ? table(['Webhook', 'URL', 'State', 'Failing since'], answer.webhooks_failing.map((hook) => el('tr', { 'data-webhook-id': hook.webhook_id },
            el('td', {}, link(hook.webhook_id, '#/apps/' + segment(appID) + '/webhooks', { class: 'mono' })), el('td', { class: 'mono', text: hook.url }),
            el('td', { text: hook.enabled ? 'retrying' : 'disabled' + (hook.disabled_reason ? ' (' + hook.disabled_reason + ')' : '') }),
            el('td', { text: when(hook.failing_since) }))), { id: 'failing-webhooks' })
          : el('p', { id: 'no-failing-webhooks', text: 'Every webhook delivers.' }));
      const budget = answer.budget || {};
      const rates = answer.rate_limits || {};
      fill(limits, el('h3', { text: 'Figures in force' }),
        table(['Figure', 'Value'], [
          ['Priority-10 updates per hour', budget.priority_10_per_hour],
          ['…with frequent updates', budget.frequent_priority_10_per_hour],
          ['Starts per device per hour', budget.starts_per_device_per_hour],
          ['Sends per second', rates.sends_per_second],
          ['Registrations per second', rates.registrations_per_second],
        ].map(([name, value]) => el('tr', {}, el('td', { text: name }), el('td', { text: value === null || value === undefined ? 'no limit' : String(value) })))));
    };
    await refresh();
    follow(appID, refresh, ACTIVITY_EVENTS.concat(PUSH_EVENTS));
  }

  async function metricsPage() {
    const charts = el('div', { id: 'charts', class: 'charts' });
    show('metrics', el('h2', { text: 'Delivery' }),
      el('p', { class: 'hint', text: 'Sampled from this node\'s /metrics every two seconds while this page is open.' }), charts);
    const refresh = async () => {
      const response = await fetch('/metrics', { cache: 'no-store', credentials: 'same-origin' });
      if (!response.ok) throw new APIError(response.status, null);
      state.samples.push(sample(parseMetrics(await response.text())));
      if (state.samples.length > 90) state.samples.shift();
      const samples = state.samples;
      const rate = (field) => samples.slice(1).map((now, index) => {
        const before = samples[index];
        const seconds = Math.max(0.001, (now.at - before.at) / 1000);
        return { at: now.at, value: Math.max(0, now[field] - before[field]) / seconds };
      });
      const latency = samples.slice(1).map((now, index) => {
        const before = samples[index];
        const count = now.latencyCount - before.latencyCount;
        return { at: now.at, value: count > 0 ? (now.latencySum - before.latencySum) / count * 1000 : 0 };
      });
      // Refusals seen while this page was open (since the server started, on the
      // first sample): once the account is fixed and none come, the notice goes.
      const last = samples[samples.length - 1];
      const refused = last.fcmRefused - (samples.length > 1 ? samples[0].fcmRefused : 0);
      fill(charts,
        refused > 0
          ? el('p', { class: 'label', id: 'fcm-refused', text: refused + ' Android push(es) failed because FCM refused an app\'s service account: replace it (PATCH /v1/apps/{id} with fcm.service_account).' })
          : null,
        chart('Queue depth', 'pushes', samples.map((one) => ({ at: one.at, value: one.queue })), 'chart-queue'),
        chart('In flight', 'pushes', samples.map((one) => ({ at: one.at, value: one.inFlight })), 'chart-in-flight'),
        chart('Send rate', 'pushes/s', rate('sent'), 'chart-send-rate'),
        chart('Error rate', 'pushes/s', rate('failed'), 'chart-error-rate'),
        chart('Android send rate (FCM)', 'pushes/s', rate('sentFCM'), 'chart-fcm-send-rate'),
        chart('Send latency', 'ms', latency, 'chart-latency'),
        chart('Scheduled', 'items', samples.map((one) => ({ at: one.at, value: one.scheduled })), 'chart-scheduled'));
    };
    await refresh();
    every(POLL_MS, refresh);
  }

  // MARK: - Start

  async function start() {
    document.getElementById('sign-out').addEventListener('click', () => { signOut(); });
    window.addEventListener('hashchange', route);
    if (localStorage.getItem(HINT)) {
      try {
        const session = await api('GET', '/dashboard/session');
        await signedIn(session);
        return;
      } catch (error) {
        localStorage.removeItem(HINT);
      }
    }
    showSignIn();
  }

  document.addEventListener('DOMContentLoaded', () => { start().catch(failed); });
})();