"""The report page's inline style sheet and its one script (no network, no libraries).

The script marks ``#report-status`` ``data-state="ready"`` once it has run and, on any script
error, ``"error"`` with the message in ``#report-errors`` (what the browser tests read); it
opens the element a URL hash names (``report.html#ep-bomb-base-1-0`` opens that episode) and
filters episodes by outcome and turns by role; it steps replayed episodes
(:mod:`jaxcollab.report.replay`): a ``details.replay`` shows the step its slider, its buttons
or the arrow keys choose, built into its ``.view`` from the episode's JSON steps and the page's
one picture store only when shown (lazy: closed episodes parse and lay out nothing);
``report.html#replay-bomb-base-1-0/s3`` opens that episode at step 3.
"""

CSS = """
:root { --fg:#1d232b; --muted:#5f6b7a; --line:#dde3ea; --bg:#f6f8fa; --card:#fff;
        --accent:#2f6fb3; --good:#1f8a4c; --bad:#c0392b; --warn:#b7791f; }
* { box-sizing:border-box; }
body { margin:0; font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
       color:var(--fg); background:var(--bg); }
header { padding:18px 28px 10px; background:var(--card); border-bottom:1px solid var(--line); }
h1 { margin:0; font-size:22px; } h2 { margin:0 0 12px; font-size:18px; }
h3 { font-size:15px; margin:18px 0 8px; color:var(--muted); }
.sub { margin:2px 0; color:var(--muted); }
#report-status { display:none; } #report-errors { color:var(--bad); }
.layout { display:flex; gap:24px; padding:20px 28px; align-items:flex-start; }
nav { position:sticky; top:16px; flex:0 0 190px; font-size:14px; }
nav ul { list-style:none; margin:0; padding:0; }
nav a { display:block; padding:4px 8px; border-radius:6px; color:var(--fg); text-decoration:none; }
nav a:hover { background:#e8eef5; }
main { flex:1; min-width:0; }
section { background:var(--card); border:1px solid var(--line); border-radius:10px;
          padding:16px 20px; margin-bottom:20px; }
.scroll { overflow-x:auto; margin:8px 0 14px; }
table { border-collapse:collapse; font-size:14px; }
caption { text-align:left; color:var(--muted); padding:4px 0; caption-side:top; }
th, td { padding:5px 10px; border-bottom:1px solid var(--line); text-align:left;
         vertical-align:top; }
thead th { background:#eef2f6; font-weight:600; position:sticky; top:0; }
tbody tr:nth-child(even) { background:#fafbfc; }
tbody th { font-weight:500; white-space:nowrap; }
td.num { text-align:right; font-variant-numeric:tabular-nums; white-space:nowrap; }
td.rate { background:linear-gradient(90deg, rgba(47,111,179,.16) calc(var(--p)*100%),
                                     transparent 0); }
.ci { color:var(--muted); font-size:12px; margin-left:6px; }
table.wide .ci { display:block; margin:0; font-size:11px; }
td.json code { font-size:12px; white-space:pre-wrap; word-break:break-word; }
table.kv td { max-width:720px; }
img { max-width:100%; height:auto; border:1px solid var(--line); border-radius:6px; }
figure { margin:10px 0 18px; } figcaption { color:var(--muted); font-size:13px; }
.note { color:var(--muted); font-size:13px; }
.badge { display:inline-block; padding:0 7px; margin:0 3px; border-radius:9px; font-size:12px;
         background:#e8eef5; color:var(--fg); }
.badge.good { background:#dff3e7; color:var(--good); } .badge.bad { background:#fbe3e0;
  color:var(--bad); } .badge.warn { background:#fdf0d8; color:var(--warn); }
details { margin:4px 0; } summary { cursor:pointer; }
details.episode { border:1px solid var(--line); border-radius:8px; padding:6px 12px; }
details.episode[open] { background:#fbfcfd; }
details.episode > summary { font-weight:500; }
.turn { border-left:3px solid var(--line); margin:8px 0 8px 4px; padding:2px 0 2px 12px; }
.turn.failed { border-left-color:var(--bad); }
.turn > summary .who { font-weight:600; }
.turn > summary code.did { font-size:12px; color:var(--muted); }
.field { margin:6px 0; } .field > .label { font-size:12px; text-transform:uppercase;
  letter-spacing:.04em; color:var(--muted); }
pre { margin:2px 0; padding:8px 10px; background:#f3f5f8; border-radius:6px;
      white-space:pre-wrap; word-break:break-word; max-height:420px; overflow:auto;
      font:12.5px/1.45 ui-monospace,Menlo,Consolas,monospace; }
pre.feedback { background:#fdf0d8; } pre.thought { background:#eef4fb; }
.msg-role { font-size:12px; color:var(--muted); }
.controls { margin:6px 0 10px; font-size:14px; } select { font:inherit; }
footer { color:var(--muted); font-size:12px; padding:0 28px 24px; }
details.replay { border:1px solid var(--line); border-radius:8px; padding:6px 12px; }
.pics { display:flex; flex-wrap:wrap; gap:10px; }
.pics figure.pic { margin:4px 0; } .pics svg { max-width:100%; height:auto; }
.replay-turn { border-left:3px solid var(--accent); margin:6px 0; padding:2px 0 2px 10px; }
.replay-turn .who { font-weight:600; } .replay .at { margin-left:8px; color:var(--muted); }
input.step { vertical-align:middle; width:260px; }
"""

SCRIPT = """(function () {
  var status = document.getElementById('report-status');
  window.addEventListener('error', function (e) {
    var box = document.getElementById('report-errors');
    box.textContent += (e.message || String(e)) + '\\n';
    box.hidden = false;
    status.dataset.state = 'error';
  });
  function openHash() {
    var id = decodeURIComponent(location.hash.slice(1));
    var at = /^(replay-.*)\\/s(\\d+)$/.exec(id);  // #replay-<episode>/s<step>: that step
    var el = document.getElementById(at ? at[1] : id);
    if (!el) return;
    for (var p = el; p; p = p.parentElement) if (p.tagName === 'DETAILS') p.open = true;
    if (at) show(el, +at[2]);
    if (!at || el.getBoundingClientRect().top > innerHeight) el.scrollIntoView();
  }
  function filter(select, items, keep) {
    items.forEach(function (x) { x.hidden = select.value !== 'all' && !keep(x); });
  }
  document.addEventListener('change', function (e) {
    var t = e.target;
    if (t.matches('select.role-filter'))
      filter(t, t.closest('.episode').querySelectorAll('.turn'),
             function (x) { return x.dataset.agent === t.value; });
    if (t.matches('select.episode-filter'))
      filter(t, t.closest('.episodes').querySelectorAll('.episode'),
             function (x) { return x.dataset.success === t.value; });
  });
  var store;  // every picture of the page, as its pieces: parsed when a step is first shown
  function picture(i) {
    store = store || JSON.parse(document.getElementById('replay-pictures').textContent);
    return store.pics[i].map(function (j) { return store.parts[j]; }).join('');
  }
  function frame(box, step) {  // a step's markup: its pictures, then its turns and codes
    box.steps = box.steps || JSON.parse(box.querySelector('script.replay-steps').textContent);
    var s = box.steps.steps[step], names = box.steps.views, figs = '';
    for (var k = 0; k < names.length; k++)
      figs += '<figure class="pic" data-view="' + names[k] + '">' + picture(s[0][k]) +
        '<figcaption>' + names[k] + '</figcaption></figure>';
    return '<div class="pics">' + figs + '</div>' + s[1];
  }
  function show(box, step) {
    var slider = box.querySelector('input.step');
    step = Math.max(0, Math.min(+slider.max, step));
    slider.value = step;
    var view = box.querySelector('.view');
    view.innerHTML = frame(box, step);
    view.dataset.step = step;
    box.querySelector('.at').textContent = 'step ' + step + ' / ' + slider.max;
  }
  document.addEventListener('toggle', function (e) {
    var box = e.target;
    if (box.matches && box.matches('details.replay') && box.open &&
        !box.querySelector('.view').dataset.step) show(box, 0);
  }, true);
  document.addEventListener('input', function (e) {
    if (e.target.matches('input.step')) show(e.target.closest('details.replay'), +e.target.value);
  });
  document.addEventListener('click', function (e) {
    var b = e.target.closest && e.target.closest('button[data-go]');
    if (!b) return;
    var box = b.closest('details.replay');
    show(box, +box.querySelector('input.step').value + +b.dataset.go);
  });
  document.addEventListener('keydown', function (e) {
    var box = document.activeElement && document.activeElement.closest &&
      document.activeElement.closest('details.replay');
    if (!box || (e.key !== 'ArrowLeft' && e.key !== 'ArrowRight')) return;
    if (document.activeElement.matches('input.step')) return;  // the slider steps itself
    show(box, +box.querySelector('input.step').value + (e.key === 'ArrowRight' ? 1 : -1));
  });
  window.addEventListener('hashchange', openHash);
  openHash();
  if (status.dataset.state !== 'error') status.dataset.state = 'ready';
  status.textContent = 'report loaded';
})();
"""
